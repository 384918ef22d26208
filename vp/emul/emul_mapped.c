/*
 * vp/emul cross-process mapped regions, the exporter's side: a peer's
 * one-sided RDMA by plain loads and stores into our region mapped there
 * (design: emul_ring.h, "Mapped regions"; the requester's side:
 * emul_ring_copy.c).
 *
 * Exporter.  A trusted peer (emul_ring_cm.c, Trust: of our user, and
 * able to attach to us) asks for region (index, key) once (X_MAP_REQ); a
 * region that grants remote rights in the domain of the connection's QP
 * is looked up in /proc/self/maps.  It answers with a file
 * descriptor only when the whole region lies in one MAP_SHARED mapping of
 * a memfd that is (or can be made) sealed against shrinking: then the peer
 * can map the same pages and can never fault on them (a memfd that could
 * shrink could SIGBUS the peer).  Anything else (private memory, a file on
 * disk, /dev/shm, a memfd without MFD_ALLOW_SEALING) is answered "no" and
 * the peer keeps using cross-memory attach or the ring.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "emul_ring.h"

gboolean emul_ring_map_on = TRUE;  /* ITAPI_EMUL_MAP (read by emul_ring_init) */

/* ---- exporter ---- */

/* Memfds this process has exported, by inode: each is an fd of our own
 * (the application may close its one), kept for the process's life, or
 * until memory of itx_mem_alloc is freed (emul_ring_share_forget). */
typedef struct x_share {
  dev_t dev;
  ino_t ino;
  int fd;
} x_share_t;

static GArray *x_shares; /* x_share_t (x_shares_lock) */
/* Held while a share is looked for, opened or forgotten: the answers are
 * made by the progress thread with the fabric lock let go, the forgetting
 * by the application's thread. */
static GMutex x_shares_lock;

static int x_share_open_locked(dev_t dev, ino_t ino);

/* A descriptor for the memfd (dev, ino) the application has open, or -1:
 * a duplicate of our own one, for an answer to take (ours may be closed
 * meanwhile, emul_ring_share_forget). */
static int
x_share_open(dev_t dev, ino_t ino)
{
  g_mutex_lock(&x_shares_lock);
  int fd = x_share_open_locked(dev, ino);
  int dup = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
  g_mutex_unlock(&x_shares_lock);
  return dup;
}

/* An fd of our own for the memfd (dev, ino) the application has open, or
 * -1.  The mapping's path names a memfd; the application's descriptor is
 * found by its inode among /proc/self/fd. */
static int
x_share_open_locked(dev_t dev, ino_t ino)
{
  if (x_shares == NULL)
    x_shares = g_array_new(FALSE, FALSE, sizeof(x_share_t));
  for (guint i = 0; i < x_shares->len; i++) {
    x_share_t *s = &g_array_index(x_shares, x_share_t, i);
    if (s->dev == dev && s->ino == ino)
      return s->fd;
  }
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  int fd = -1;
  struct dirent *de;
  while (fd < 0 && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char path[64];
    g_snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_dev != dev || st.st_ino != ino)
      continue;
    fd = open(path, O_RDWR | O_CLOEXEC);
  }
  closedir(d);
  if (fd < 0)
    return -1;
  /* The peer maps these pages: the file must never shrink under it. */
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (!(seals & F_SEAL_SHRINK) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)) {
    close(fd);
    return -1;
  }
  x_share_t s = { dev, ino, fd };
  g_array_append_val(x_shares, s);
  return fd;
}

void
emul_ring_share_forget(int fd)
{
  struct stat st;
  if (fstat(fd, &st) != 0)
    return;
  int mine = -1;
  g_mutex_lock(&x_shares_lock);
  for (guint i = 0; x_shares != NULL && i < x_shares->len; i++) {
    x_share_t *s = &g_array_index(x_shares, x_share_t, i);
    if (s->dev == st.st_dev && s->ino == st.st_ino) {
      mine = s->fd;
      g_array_remove_index_fast(x_shares, i);
      break;
    }
  }
  g_mutex_unlock(&x_shares_lock);
  if (mine >= 0)
    close(mine);
}

/* The memfd and file offset of [addr, addr + len), or -1 with the reason. */
static int
x_share_find(uint64_t addr, uint64_t len, uint64_t *file_off, const char **why)
{
  FILE *f = fopen("/proc/self/maps", "re");
  if (f == NULL) {
    *why = "/proc/self/maps is not readable";
    return -1;
  }
  char line[512];
  int fd = -1;
  *why = "not in a mapping of this process";
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end, off, inode;
    unsigned maj, mnr;
    char perms[8];
    int pos = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &mnr,
               &inode, &pos) < 7)
      continue;
    if (addr < start || addr >= end)
      continue;
    if (addr + len > end) {
      *why = "it spans more than one mapping";
    } else if (perms[3] != 's' || inode == 0) {
      *why = "it is private memory";
    } else if (strncmp(line + pos, "/memfd:", 7) != 0) {
      *why = "its mapping is not a memfd";
    } else {
      fd = x_share_open(makedev(maj, mnr), (ino_t) inode);
      *why = "the memfd is not open in this process, or cannot be sealed against shrinking "
             "(create it with MFD_ALLOW_SEALING)";
      *file_off = off + (addr - start);
    }
    break;
  }
  fclose(f);
  return fd;
}

/* A trusted peer asks for region m->mr_index: what the answer needs of
 * it.  Only a region that grants remote rights, in the domain of the
 * peer's QP's partner here, is offered. */
void
emul_ring_on_map_req(emul_xconn_t *x, const x_msg_t *q, emul_map_io_t *io)
{
  *io = (emul_map_io_t) { .type = X_MAP_REQ, .index = q->mr_index, .key = q->mr_key, .fd = -1,
                          .why = "it is not registered" };
  emul_mr_t *mr = q->mr_index > 0 ? emul_mr_slot(q->mr_index) : NULL;
  const uint32_t remote = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC;
  if (mr == NULL || mr->key != q->mr_key) {
    /* not registered (any more) */
  } else if (mr->mw != NULL || mr->fr) {
    io->why = "windows and fast-registered regions are reached by cross-memory attach";
  } else if (!(mr->access & remote)) {
    io->why = "it grants no remote rights";
  } else if (x->qp == NULL || mr->pd != x->qp->pd) {
    io->why = "it is not in the domain of the connection's queue pair";
  } else {
    io->addr = (uint64_t) (uintptr_t) mr->addr;
    io->len = mr->length;
  }
}

/* Answer with the memfd or refuse (no lock held).  A region deregistered
 * since the question is the peer's to notice: it maps only what its copy
 * of our region table still names, and checks that table before every
 * access. */
static void
x_map_answer(emul_xconn_t *x, emul_map_io_t *io)
{
  x_sockmsg_t e = { .nfds = 0 };
  e.m.type = X_MAP_REP;
  e.m.pdata_len = 0;
  e.m.mr_index = io->index;
  e.m.mr_key = io->key;
  int fd = -1;
  if (io->addr != 0) {
    e.m.mr_addr = io->addr;
    e.m.mr_len = io->len;
    fd = x_share_find(io->addr, io->len, &e.m.file_off, &io->why);
  }
  if (fd < 0) {
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: region %u stays unmapped for process %d: %s",
          io->index, (int) x->peer_pid, io->why);
  } else {
    e.fds[0] = fd;
    e.nfds = 1;
    e.given = 1u;
  }
  emul_ring_msgs_flush(x, &e);
}

void
emul_ring_map_io(emul_xconn_t *x, emul_map_io_t *io)
{
  if (io->type == X_MAP_REQ)
    x_map_answer(x, io);
  else
    emul_ring_map_take(x, io);
}
