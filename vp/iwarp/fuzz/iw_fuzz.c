/*
 * libFuzzer target over vp/iwarp's receive path: the bytes are what the
 * peer's TCP stream carries, fed through a socketpair into one QP.
 *
 * Byte 0 chooses the set-up, the rest is the stream:
 *   mode 0  QP in RTS (full operation), FPDUs from the first byte
 *   mode 1  passive QP in RTR_WAIT: the first FPDU must be the RTR
 *   mode 2  active handoff: the stream starts with the MPA Reply
 *   mode 3  passive handoff: the stream starts with the MPA Request
 *   mode 4  listener: a pending request parsed, accepted, then FPDUs
 *   mode 5  as mode 0 on a connection that negotiated RFC 7306 atomics;
 *           bit 4 posts a Fetch and Add instead of the Read
 *   bit 3   CRC on          bit 4  an RDMA Read outstanding (modes 0, 1)
 *   bit 5   receives posted  bit 6  peer IRD 0 (no delivery fences)
 * The device offers RFC 7306 in its MPA frames (flag 0x04), so modes 2-4
 * negotiate atomics when the fuzzed peer's frame has the flag too.
 *
 * Every region the peer can name lies between PROT_NONE pages, and the
 * read-only one is mapped PROT_READ: a placement outside a region, or into
 * one without remote write, faults.  The device is built without its
 * progress thread, so a run is deterministic: one thread drives the QP the
 * way the progress thread would (iw_qp_io).
 *
 * Built with -fsanitize=fuzzer when meson's option fuzz is on; without
 * clang the same file with IW_FUZZ_MAIN replays inputs (iwarp-fuzz-replay).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iw.h"
#include "iw_fuzz.h"

static iw_dev_t *dev;
static rnicpi_pd_t *pd;
static rnicpi_cq_t *scq, *rcq;
static uint8_t *rw_region, *ro_region;
static iw_mr_t *rw_mr, *ro_mr;

static void up_cm(void *c, const rnicpi_cm_event_t *e) { (void) c; (void) e; }
static void up_cq(void *c, uint64_t q) { (void) c; (void) q; }
static void up_async(void *c, const rnicpi_async_event_t *e) { (void) c; (void) e; }
static void quiet(const gchar *d, GLogLevelFlags l, const gchar *m, gpointer u)
{
  (void) d; (void) l; (void) m; (void) u;
}

/* @pages of memory between two PROT_NONE guard pages. */
static uint8_t *
guarded(size_t pages, int prot)
{
  size_t pg = (size_t) sysconf(_SC_PAGESIZE);
  uint8_t *p = mmap(NULL, (pages + 2) * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    abort();
  if (mprotect(p + pg, pages * pg, PROT_READ | PROT_WRITE) != 0)
    abort();
  memset(p + pg, 0x5a, pages * pg);
  if (prot != (PROT_READ | PROT_WRITE) && mprotect(p + pg, pages * pg, prot) != 0)
    abort();
  return p + pg;
}

/* Register with a fixed STag so that seeds can name it. */
static iw_mr_t *
reg_fixed(uint8_t *addr, uint64_t len, uint64_t iova, uint32_t access, uint32_t stag)
{
  rnicpi_mr_attr_t a = { .addr = addr, .length = len, .iova = iova, .access = access };
  rnicpi_mr_t *m;
  if (iw_mem_ops.mr_reg(pd, &a, &m) != RNICPI_OK)
    abort();
  iw_mr_t *mr = to_iw_mr(m);
  if (!iw_mr_set_stag(dev, mr, stag))
    abort();
  return mr;
}

static void
setup(void)
{
  /* Protocol errors are logged by design: keep the fuzzer's output clean. */
  if (g_getenv("IW_FUZZ_VERBOSE") == NULL)
    g_log_set_handler(IW_LOG, G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG, quiet,
                      NULL);
  iw_config.crc = 0;
  iw_config.mpa_rev = 2;
  iw_config.pdata_max = IW_PDATA_INTEROP;
  iw_config.mpa_timeout_us = IW_CONNECT_TIMEOUT_US;
  iw_crc_init();
  dev = iw_dev_new(&(rnicpi_upcalls_t) { up_cm, up_cq, up_async }, NULL);
  if (dev == NULL)
    abort();
  dev->rfc7306 = TRUE;
  if (iw_device_ops.pd_alloc(&dev->base, &pd) != RNICPI_OK ||
      iw_queue_ops.cq_create(&dev->base, 256, 1, &scq) != RNICPI_OK ||
      iw_queue_ops.cq_create(&dev->base, 256, 2, &rcq) != RNICPI_OK)
    abort();
  rw_region = guarded(IW_FUZZ_RW_LEN / 4096, PROT_READ | PROT_WRITE);
  ro_region = guarded(IW_FUZZ_RO_LEN / 4096, PROT_READ);
  uint32_t all = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                 RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC;
  rw_mr = reg_fixed(rw_region, IW_FUZZ_RW_LEN, IW_FUZZ_RW_IOVA, all, IW_FUZZ_RW_STAG);
  ro_mr = reg_fixed(ro_region, IW_FUZZ_RO_LEN, IW_FUZZ_RO_IOVA,
                    RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_REMOTE_READ, IW_FUZZ_RO_STAG);
}

/* What the progress thread does between batches, without the thread. */
static void
housekeeping(void)
{
  iw_event_t *e;
  while ((e = g_queue_pop_head(&dev->events)) != NULL)
    g_free(e);
  GList *l;
  while ((l = dev->timed.head) != NULL) {
    g_queue_unlink(&dev->timed, l);
    l->data = NULL;
  }
  for (guint i = 0; i < dev->graveyard->len; i++) {
    iw_pollable_t *p = g_ptr_array_index(dev->graveyard, i);
    if (p->kind == IW_POLL_QP)
      g_mutex_clear(&((iw_qp_t *) p)->lock);
    g_free(p);
  }
  g_ptr_array_set_size(dev->graveyard, 0);
  rnicpi_wc_t wc[32];
  while (iw_data_ops.poll_cq(scq, wc, 32) > 0)
    ;
  while (iw_data_ops.poll_cq(rcq, wc, 32) > 0)
    ;
  uint64_t v;
  ssize_t r = read(dev->wakefd, &v, sizeof(v));
  (void) r;
}

/* Read and discard what the QP sent; TRUE if there was something. */
static gboolean
drain(int fd)
{
  uint8_t junk[65536];
  gboolean any = FALSE;
  for (;;) {
    ssize_t n = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
    if (n <= 0)
      return any;
    any = TRUE;
  }
}

static void
post_recvs(rnicpi_qp_t *q)
{
  /* One small, one spread over three elements, one large. */
  rnicpi_sge_t a = { .addr = (uint64_t) (uintptr_t) rw_region, .length = 64, .lkey = rw_mr->stag };
  rnicpi_sge_t b[3] = {
    { .addr = (uint64_t) (uintptr_t) (rw_region + 100), .length = 10, .lkey = rw_mr->stag },
    { .addr = (uint64_t) (uintptr_t) (rw_region + 200), .length = 0, .lkey = rw_mr->stag },
    { .addr = (uint64_t) (uintptr_t) (rw_region + IW_FUZZ_RW_LEN - 30), .length = 30, .lkey = rw_mr->stag },
  };
  rnicpi_sge_t c = { .addr = (uint64_t) (uintptr_t) (rw_region + 4096), .length = 8192, .lkey = rw_mr->stag };
  rnicpi_recv_wr_t w1 = { .wr_id = 1, .sg_list = &a, .num_sge = 1 };
  rnicpi_recv_wr_t w2 = { .wr_id = 2, .sg_list = b, .num_sge = 3 };
  rnicpi_recv_wr_t w3 = { .wr_id = 3, .sg_list = &c, .num_sge = 1 };
  iw_data_ops.post_recv(q, &w1);
  iw_data_ops.post_recv(q, &w2);
  iw_data_ops.post_recv(q, &w3);
}

static void
post_read(rnicpi_qp_t *q)
{
  /* The sink is the tail of the region: a Read Response past it faults. */
  rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) (rw_region + IW_FUZZ_RW_LEN - 300), .length = 300, .lkey = rw_mr->stag };
  rnicpi_send_wr_t wr = { .wr_id = 9, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &s, .num_sge = 1,
                          .remote_addr = 0x1000, .rkey = 0x4242 };
  iw_data_ops.post_send(q, &wr);
}

static void
post_atomic(rnicpi_qp_t *q)
{
  /* The result goes to the region's last word. */
  rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) (rw_region + IW_FUZZ_RW_LEN - 8), .length = 8, .lkey = rw_mr->stag };
  rnicpi_send_wr_t wr = { .wr_id = 10, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &s, .num_sge = 1,
                          .remote_addr = 0x2000, .rkey = 0x4242, .compare_add = 1 };
  iw_data_ops.post_send(q, &wr);
}

/* Put a QP straight into full operation (modes 0, 1 and 5). */
static void
stream_qp(iw_qp_t *qp, int fd, uint8_t mode)
{
  g_mutex_lock(&qp->lock);
  qp->fd = fd;
  qp->crc = (mode & IW_FUZZ_CRC) != 0;
  qp->rev = 2;
  qp->ird = qp->ord = 2;
  qp->peer_ird = (mode & IW_FUZZ_NO_FENCE) ? 0 : 4;
  qp->rfc7306 = (mode & 7) == 5; /* the RFC 7306 stream: atomics, immediate data */
  qp->epmask = EPOLLIN | EPOLLRDHUP;
  iw_epoll_set(dev, fd, &qp->poll, qp->epmask, TRUE);
  iw_qp_init_stream(qp);
  if ((mode & 7) == 1) {
    qp->rtr = (mode & 0x80) ? IW_RTR_READ : IW_RTR_WRITE;
    iw_cep_get(qp); /* the responder's endpoint, as iw_accept leaves it */
    qp->cs = IW_CS_RTR_WAIT;
  } else {
    iw_qp_go_rts(qp);
  }
  g_mutex_unlock(&qp->lock);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (dev == NULL)
    setup();
  if (size < 1)
    return 0;
  uint8_t mode = data[0];
  data++;
  size--;
  iw_config.crc = (mode & IW_FUZZ_CRC) != 0;

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    abort();
  rnicpi_qp_attr_t a = { .send_cq = scq, .recv_cq = rcq, .max_send_wr = 16, .max_recv_wr = 16,
                         .max_send_sge = IW_MAX_SGE, .max_recv_sge = IW_MAX_SGE,
                         .max_rdma_write_sge = IW_MAX_SGE, .max_rdma_read_sge = 1, .ird = 2,
                         .ord = 2, .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
                                             RNICPI_ACCESS_ATOMIC };
  rnicpi_qp_t *q;
  if (iw_queue_ops.qp_create(pd, &a, 0x99, &q) != RNICPI_OK)
    abort();
  iw_qp_t *qp = to_iw_qp(q);
  if (mode & IW_FUZZ_RECVS)
    post_recvs(q);

  rnicpi_conn_param_t cp = { .pdata = "fuzz", .pdata_len = 4, .ird = 2, .ord = 2 };
  iw_listen_t *l = NULL;
  iw_creq_t *c = NULL;
  switch ((mode & 7) == 5 ? 5 : (mode & 7) % 5) {
  case 0:
  case 1:
  case 5:
    stream_qp(qp, sv[0], mode);
    if ((mode & IW_FUZZ_READ) && (mode & 7) == 5)
      post_atomic(q);
    else if (mode & IW_FUZZ_READ)
      post_read(q);
    break;
  case 2:
  case 3:
    iw_sock_ops.handoff(q, sv[0], (mode & 7) == 2, &cp);
    break;
  case 4:
    l = g_new0(iw_listen_t, 1);
    l->poll.kind = IW_POLL_LISTEN;
    l->dev = dev;
    l->port = 1;
    l->fd = -1;
    g_hash_table_insert(dev->listeners, GUINT_TO_POINTER(1), l);
    c = g_new0(iw_creq_t, 1);
    c->poll.kind = IW_POLL_CREQ;
    c->dev = dev;
    c->listener = l;
    c->id = dev->next_conn_id++;
    c->fd = sv[0];
    g_hash_table_insert(dev->creqs, &c->id, c);
    c->link.data = c; /* as iw_cm_listen_io holds it */
    g_queue_push_tail_link(&l->reading, &c->link);
    l->held++;
    iw_epoll_set(dev, sv[0], &c->poll, EPOLLIN | EPOLLRDHUP, TRUE);
    break;
  }

  /* Feed the stream as the socket takes it; the QP runs after each piece. */
  size_t off = 0;
  gboolean eof = FALSE, accepted = FALSE;
  for (int idle = 0; idle < 3;) {
    gboolean moved = FALSE;
    if (off < size) {
      ssize_t n = send(sv[1], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        off += (size_t) n;
        moved = TRUE;
      } else if (n < 0 && errno != EAGAIN) {
        off = size; /* the QP closed its end */
      }
    } else if (!eof) {
      shutdown(sv[1], SHUT_WR);
      eof = moved = TRUE;
    }
    if (c != NULL && !accepted) {
      iw_cm_creq_io(c, EPOLLIN);
      if (c->delivered) {
        /* Accept: the QP takes the socket and answers the request. */
        accepted = TRUE;
        iw_cm_ops.accept(q, c->id, &cp);
        moved = TRUE;
      }
    } else {
      iw_work_t w = { .nnotify = 0 };
      iw_qp_io(qp, EPOLLIN | EPOLLOUT | (eof ? EPOLLRDHUP : 0), &w);
      iw_work_deliver(&w);
    }
    moved |= drain(sv[1]);
    idle = moved ? 0 : idle + 1;
  }
  iw_queue_ops.qp_destroy(q);
  if (l != NULL)
    iw_cm_ops.unlisten(&l->base);
  close(sv[1]);
  housekeeping();
  return 0;
}

#ifdef IW_FUZZ_MAIN
/* Replay without libFuzzer: every file named on the command line (or every
 * file of a directory) is one input. */
static int
run_file(const char *path)
{
  gchar *buf;
  gsize len;
  GError *err = NULL;
  if (!g_file_get_contents(path, &buf, &len, &err)) {
    fprintf(stderr, "%s: %s\n", path, err->message);
    g_error_free(err);
    return 1;
  }
  LLVMFuzzerTestOneInput((const uint8_t *) buf, len);
  g_free(buf);
  return 0;
}

int
main(int argc, char **argv)
{
  int n = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    if (g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
      GDir *d = g_dir_open(argv[i], 0, NULL);
      const char *name;
      while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
        gchar *p = g_build_filename(argv[i], name, NULL);
        bad += run_file(p);
        n++;
        g_free(p);
      }
      if (d != NULL)
        g_dir_close(d);
    } else {
      bad += run_file(argv[i]);
      n++;
    }
  }
  printf("replayed %d inputs%s\n", n, bad ? " (some unreadable)" : "");
  return bad != 0 || n == 0;
}
#endif
