/*
 * itx_mem_alloc() and itx_mem_free() over $ITAPI_CONF_IA.
 *
 * /itx/mem/xproc moves data between two processes through memory of the
 * allocator on both sides: the program runs itself again with
 * "--role target" for the second process, which says its port, its
 * buffer's address, context and what backs it on stdout and takes
 * commands on stdin.  With --expect memfd (vp/emul) each side's memory
 * must be a sealed memfd and the parent must end up with the target's
 * memfd mapped (vp/emul's one-sided path by memcpy, emul_mapped.c); with
 * --expect anon (vp/iwarp, vp/ib) ordinary anonymous memory.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"

#define XLEN (4 * 1024 * 1024 + 100)   /* not a whole number of pages */
#define ROUNDS 8
#define LINE_TIMEOUT_MS 10000

static const char *self_exe;
static const char *expect = "";        /* "memfd", "anon" or "" (no check) */

/* ---- what backs an address ---- */

typedef struct backing {
  gboolean found, shared;
  unsigned long long inode;
  char path[256];                      /* "" for anonymous memory */
} backing_t;

/* The mapping of this process that holds @addr (/proc/self/maps). */
static backing_t
backing_of(const void *addr)
{
  backing_t b = { 0 };
  FILE *f = fopen("/proc/self/maps", "re");
  g_assert_nonnull(f);
  char line[512];
  uintptr_t a = (uintptr_t) addr;
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end, off, inode;
    unsigned maj, mnr;
    char perms[8];
    int pos = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &mnr,
               &inode, &pos) < 7 || a < start || a >= end)
      continue;
    b.found = TRUE;
    b.shared = perms[3] == 's';
    b.inode = inode;
    g_strlcpy(b.path, line + pos, sizeof(b.path));
    g_strchomp(b.path);
    break;
  }
  fclose(f);
  return b;
}

/* Whether this process maps memfd inode @inode anywhere. */
static gboolean
maps_inode(unsigned long long inode)
{
  g_autofree char *maps = NULL;
  g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(maps, "\n", -1);
  for (char **l = lines; *l != NULL; l++) {
    unsigned long long start, end, off, ino;
    unsigned maj, mnr;
    char perms[8];
    int pos = 0;
    if (sscanf(*l, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &mnr, &ino,
               &pos) >= 7 && ino == inode && strstr(*l + pos, "/memfd:") != NULL)
      return TRUE;
  }
  return FALSE;
}

/* A descriptor of this process open on inode @inode, or -1. */
static int
fd_of_inode(unsigned long long inode)
{
  int fd = -1;
  g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
  const char *n;
  while (d != NULL && fd < 0 && (n = g_dir_read_name(d)) != NULL) {
    g_autofree char *path = g_strdup_printf("/proc/self/fd/%s", n);
    struct stat st;
    if (stat(path, &st) == 0 && (unsigned long long) st.st_ino == inode)
      fd = atoi(n);
  }
  return fd;
}

/* The memory of itx_mem_alloc is what the provider wants (--expect). */
static void
check_backing(const void *p, const char *who)
{
  backing_t b = backing_of(p);
  g_assert_true(b.found);
  if (g_test_initialized()) /* the target's stdout is its answers */
    g_test_message("%s: memory at %p is %s%s (inode %llu)", who, p, b.shared ? "shared " : "",
                   b.path[0] ? b.path : "anonymous", b.inode);
  if (strcmp(expect, "memfd") == 0) {
    if (!b.shared || !g_str_has_prefix(b.path, "/memfd:"))
      g_error("%s: memory of itx_mem_alloc at %p is '%s' (%s), expected a shared memfd mapping", who,
              p, b.path, b.shared ? "shared" : "private");
    /* Sealed against shrinking, as vp/emul's exporter requires. */
    int fd = fd_of_inode(b.inode);
    int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
    if (seals < 0 || !(seals & F_SEAL_SHRINK))
      g_error("%s: the memfd under %p is not open in this process sealed against shrinking", who, p);
  } else if (strcmp(expect, "anon") == 0) {
    if (b.shared || b.path[0] != '\0')
      g_error("%s: memory of itx_mem_alloc at %p is '%s' (%s), expected private anonymous memory",
              who, p, b.path, b.shared ? "shared" : "private");
  }
}

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char) (i * 31 + seed * 7 + 1 + (i >> 12));
}

/* Offset of the first byte of @p that is not the pattern, or -1. */
static gssize
first_bad(const unsigned char *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char) (i * 31 + seed * 7 + 1 + (i >> 12)))
      return (gssize) i;
  return -1;
}

/* ---- in one process ---- */

static void
test_alloc(void)
{
  g_test_summary("Memory of itx_mem_alloc is page-aligned, zero-filled, writable over its "
                 "rounded length, of the kind the provider wants, registers with remote rights, "
                 "and frees once; itx_mem_free refuses an address it did not give.");
  conf_side_t s;
  conf_side_open(&s, NULL);
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  const size_t sizes[] = { 1, page, 3 * page + 1, 1 << 20 };
  for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
    unsigned char *p = NULL;
    conf_ok(itx_mem_alloc(s.ia, sizes[k], (void **) &p));
    g_assert_nonnull(p);
    g_assert_cmpuint((uintptr_t) p % page, ==, 0);
    size_t rounded = (sizes[k] + page - 1) / page * page;
    for (size_t i = 0; i < rounded; i++)
      if (p[i] != 0)
        g_error("byte %zu of a fresh %zu-byte allocation is 0x%02x", i, sizes[k], p[i]);
    memset(p, 0x5a, rounded);
    check_backing(p, "alloc");
    it_lmr_handle_t lmr;
    it_rmr_context_t ctx;
    conf_ok(it_lmr_create(s.pz, p, NULL, sizes[k], IT_ADDR_MODE_ABSOLUTE,
                          IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE, 0, &lmr, &ctx));
    conf_ok(it_lmr_free(lmr));
    conf_ok(itx_mem_free(p));
    conf_assert_status(itx_mem_free(p), IT_ERR_INVALID_ADDRESS);
    g_assert_nonnull(strstr(itx_error_detail(), "itx_mem_free"));
  }
  char local[64];
  void *heap = g_malloc(64);
  conf_assert_status(itx_mem_free(local), IT_ERR_INVALID_ADDRESS);
  conf_assert_status(itx_mem_free(heap), IT_ERR_INVALID_ADDRESS);
  g_free(heap);
  conf_ok(itx_mem_free(NULL));
  conf_side_close(&s);
}

static void
test_refused(void)
{
  g_test_summary("itx_mem_alloc returns a status, sets nothing and aborts nothing for a zero "
                 "length, a length no process can map, one the system cannot give, a stale IA "
                 "and a NULL output.");
  conf_side_t s;
  conf_side_open(&s, NULL);
  void *p = &p; /* a sentinel: it must stay */
  void *const sentinel = p;
  conf_assert_status(itx_mem_alloc(s.ia, 0, &p), IT_ERR_INVALID_LENGTH);
  g_assert_true(p == sentinel);
  /* 1 EiB: past any address space, refused by the system (mmap ENOMEM). */
  conf_assert_status(itx_mem_alloc(s.ia, (size_t) 1 << 60, &p), IT_ERR_RESOURCES);
  g_assert_true(p == sentinel);
  g_test_message("1 EiB: %s", itx_error_detail());
  g_assert_nonnull(strstr(itx_error_detail(), "1.0 EiB"));
  conf_assert_status(itx_mem_alloc(s.ia, SIZE_MAX, &p), IT_ERR_RESOURCES);
  g_assert_true(p == sentinel);
  conf_assert_status(itx_mem_alloc(s.ia, 4096, NULL), IT_ERR_FAULT);
  it_ia_handle_t stale = s.ia;
  conf_side_close(&s);
  conf_assert_status(itx_mem_alloc(stale, 4096, &p), IT_ERR_INVALID_IA);
  g_assert_true(p == sentinel);
  conf_assert_status(itx_mem_alloc(IT_NULL_HANDLE, 4096, &p), IT_ERR_INVALID_IA);
}

static void
test_outlives_ia(void)
{
  g_test_summary("Memory of itx_mem_alloc stays valid after its IA is freed, until "
                 "itx_mem_free.");
  conf_side_t s;
  conf_side_open(&s, NULL);
  unsigned char *p = NULL;
  conf_ok(itx_mem_alloc(s.ia, 65536, (void **) &p));
  fill(p, 65536, 3);
  conf_side_close(&s);
  g_assert_cmpint(first_bad(p, 65536, 3), ==, -1);
  fill(p, 65536, 4);
  g_assert_cmpint(first_bad(p, 65536, 4), ==, -1);
  conf_ok(itx_mem_free(p));
}

/* ---- across two processes ---- */

typedef conf_child_t child_t;

/* This program again as the target process. */
static child_t
spawn(void)
{
  const char *args[] = { "--role", "target", "--expect", expect[0] ? expect : "none", NULL };
  return conf_child_spawn(self_exe, args, "itx-mem", NULL, NULL);
}

static void
child_failed(child_t *c, const char *what)
{
  g_autofree char *err = NULL;
  g_file_get_contents(c->err, &err, NULL, NULL);
  g_error("%s; the target's stderr:\n%s", what, err ? err : "");
}

static char *
hear_ok(child_t *c)
{
  char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
  if (l == NULL)
    child_failed(c, "the target said nothing within 10 s");
  return l;
}

/* The target: memory of itx_mem_alloc, registered; listen, say where, take
 * commands: "fill SEED", "check SEED", then the disconnect. */
static int
role_target(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  unsigned char *mem = NULL;
  conf_ok(itx_mem_alloc(s.ia, XLEN, (void **) &mem));
  check_backing(mem, "target");
  backing_t b = backing_of(mem);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_ok(it_lmr_create(s.pz, mem, NULL, XLEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL | IT_PRIV_REMOTE,
                        IT_LMR_FLAG_NONE, 0, &lmr, &ctx));
  it_listen_handle_t lh;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(s.ia, 0, s.req, IT_LISTEN_NO_FLAG, &q, &lh));
  printf("port %u addr %" G_GUINT64_FORMAT " ctx %" G_GUINT64_FORMAT " inode %llu\n",
         (unsigned) ntohs(q.conn_qual.port), (guint64) it_make_rdma_addr_absolute(mem), (guint64) ctx,
         g_str_has_prefix(b.path, "/memfd:") ? b.inode : 0ull);
  fflush(stdout);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  for (;;) {
    g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS);
    unsigned seed;
    if (l == NULL || strcmp(l, "done") == 0)
      break;
    if (sscanf(l, "fill %u", &seed) == 1) {
      fill(mem, XLEN, seed);
      printf("ok\n");
    } else if (sscanf(l, "check %u", &seed) == 1) {
      gssize bad = first_bad(mem, XLEN, seed);
      if (bad < 0)
        printf("ok\n");
      else
        printf("byte %zd is 0x%02x\n", bad, mem[bad]);
    } else {
      printf("unknown command '%s'\n", l);
    }
    fflush(stdout);
  }
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_ok(it_listen_free(lh));
  conf_ok(it_lmr_free(lmr));
  conf_ok(itx_mem_free(mem));
  /* Freed for good: neither the allocator's descriptor nor the one vp/emul
   * kept to export it to the peer is left. */
  if (b.inode != 0 && fd_of_inode(b.inode) >= 0)
    g_error("target: descriptor %d still holds the memfd (inode %llu) after itx_mem_free",
            fd_of_inode(b.inode), b.inode);
  conf_side_close(&s);
  return 0;
}

static void
test_xproc(void)
{
  g_test_summary("Memory of itx_mem_alloc on both sides of a connection between two processes: "
                 "RDMA Writes of 4 MiB into the target's, checked there, and RDMA Reads of it, "
                 "checked here; over vp/emul the target's memfd ends up mapped here.");
  child_t c = spawn();
  g_autofree char *l = hear_ok(&c);
  unsigned port = 0;
  guint64 raddr = 0, rctx = 0;
  unsigned long long rinode = 0;
  if (sscanf(l, "port %u addr %" G_GUINT64_FORMAT " ctx %" G_GUINT64_FORMAT " inode %llu", &port,
             &raddr, &rctx, &rinode) != 4)
  {
    g_autofree char *what = g_strdup_printf("the target's first line is '%s', not 'port P addr A "
                                            "ctx C inode I'", l);
    child_failed(&c, what);
  }

  conf_side_t s;
  conf_side_open(&s, NULL);
  unsigned char *mem = NULL;
  conf_ok(itx_mem_alloc(s.ia, XLEN, (void **) &mem));
  check_backing(mem, "requester");
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_ok(it_lmr_create(s.pz, mem, NULL, XLEN, IT_ADDR_MODE_ABSOLUTE, conf_sink_privs(&s),
                        IT_LMR_FLAG_NONE, 0, &lmr, &ctx));
  it_path_t path;
  it_conn_attributes_t ca;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  memset(&ca, 0, sizeof(ca));
  conf_path(&s, &path);
  conf_ok(it_ep_connect(s.ep, &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);

  it_lmr_triplet_t t = { .lmr = lmr, .addr.abs = mem, .length = XLEN };
  for (unsigned r = 0; r < ROUNDS; r++) {
    /* Write: ours lands in the target's, checked there. */
    fill(mem, XLEN, 100 + r);
    conf_ok(it_post_rdma_write(s.ep, &t, 1, r, IT_COMPLETION_FLAG, raddr, rctx));
    conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, r);
    conf_placed(&s, raddr, rctx);
    conf_say(c.to, "check %u\n", 100 + r);
    g_autofree char *ok = hear_ok(&c);
    if (strcmp(ok, "ok") != 0)
      g_error("round %u: the RDMA Write's data at the target: %s", r, ok);
    /* Read: the target's, filled there, checked here. */
    conf_say(c.to, "fill %u\n", 200 + r);
    g_autofree char *ok2 = hear_ok(&c);
    g_assert_cmpstr(ok2, ==, "ok");
    memset(mem, 0, XLEN);
    conf_ok(it_post_rdma_read(s.ep, &t, 1, r, IT_COMPLETION_FLAG, raddr, rctx));
    conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, r);
    gssize bad = first_bad(mem, XLEN, 200 + r);
    if (bad >= 0)
      g_error("round %u: byte %zd read from the target is 0x%02x", r, bad, mem[bad]);
  }

  if (strcmp(expect, "memfd") == 0) {
    /* vp/emul maps the target's region on its first access, asynchronously
     * (the first requests take cross-memory attach or the ring meanwhile):
     * a few more Writes give it the time. */
    g_assert_cmpuint(rinode, !=, 0);
    gboolean mapped = maps_inode(rinode);
    for (unsigned r = 0; !mapped && r < 200; r++) {
      conf_ok(it_post_rdma_write(s.ep, &t, 1, 1000 + r, IT_COMPLETION_FLAG, raddr, rctx));
      conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1000 + r);
      g_usleep(10000);
      mapped = maps_inode(rinode);
    }
    if (!mapped)
      g_error("the target's memfd (inode %llu) is not mapped in this process after 200 more RDMA "
              "Writes: vp/emul's one-sided path by memcpy did not take memory of itx_mem_alloc",
              rinode);
    /* And the data still lands through the mapping. */
    fill(mem, XLEN, 42);
    conf_ok(it_post_rdma_write(s.ep, &t, 1, 7777, IT_COMPLETION_FLAG, raddr, rctx));
    conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 7777);
    conf_say(c.to, "check 42\n");
    g_autofree char *ok = hear_ok(&c);
    if (strcmp(ok, "ok") != 0)
      g_error("an RDMA Write through the mapping: %s", ok);
  }

  conf_say(c.to, "done\n");
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  int st = 0;
  for (int i = 0; i < 2000 && waitpid(c.pid, &st, WNOHANG) != c.pid; i++)
    g_usleep(10000);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    kill(c.pid, SIGKILL);
    waitpid(c.pid, &st, 0);
    child_failed(&c, "the target did not exit cleanly");
  }
  close(c.to);
  close(c.from);
  unlink(c.err);
  conf_ok(it_lmr_free(lmr));
  conf_ok(itx_mem_free(mem));
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  self_exe = argv[0];
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--expect") == 0)
      expect = strcmp(argv[i + 1], "none") == 0 ? "" : argv[i + 1];
  if (argc >= 3 && strcmp(argv[1], "--role") == 0 && strcmp(argv[2], "target") == 0)
    return role_target();
  /* g_test_init refuses options it does not know. */
  int n = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
      i++;
      continue;
    }
    argv[n++] = argv[i];
  }
  argc = n;
  argv[argc] = NULL;
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/itx/mem/alloc", test_alloc);
  g_test_add_func("/itx/mem/refused", test_refused);
  g_test_add_func("/itx/mem/outlives-ia", test_outlives_ia);
  g_test_add_func("/itx/mem/xproc", test_xproc);
  return g_test_run();
}
