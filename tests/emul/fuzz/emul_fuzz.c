/*
 * libFuzzer target over what vp/emul takes from a peer process: the
 * socket messages of a cross-process connection (x_msg_t, and the
 * descriptors they carry) and the frames of the peer's ring in the
 * connection segment (vp/emul/emul_ring.h).  One input is one connection:
 * the harness is the peer, the active side, speaking the protocol itself
 * over the real socket and segment (as tests/emul/hostile_peer.c does);
 * the target is this process's emul0 device, driven through its RNIC-PI
 * operations with no access layer: a listener, and per input a QP that
 * accepts the request.  The progress thread reads the messages and drains
 * the ring as it does for any peer; nothing of vp/emul is called but its
 * RNIC-PI operations.
 *
 * Byte 0 chooses the set-up, the rest is a sequence of records:
 *   bit 0  trusted: ATTACH carries the target's nonce read by attach
 *   bit 1  raw handshake: no REQ nor ATTACH of the harness's own, the
 *          records send them (a request the target raises is accepted)
 *   bit 2  once connected the target posts a Send (64 B) and an RDMA Read
 *          (100 B into the last bytes of a page followed by PROT_NONE)
 *   bit 3  receives posted (64 B, 4 KiB, 64 KiB, 256 KiB and one of three
 *          SGEs), each ending where a PROT_NONE page starts
 *   bit 4  the segment is not sealed (the target seals it)
 * A record is [kind u8][length u32 LE][bytes]; kind & 7:
 *   0  a socket message: the bytes are the start of an x_msg_t, sent as
 *      they are (shorter than X_MSG_MIN too), its magic set unless kind
 *      has bit 7; its fds field attaches the segment (X_FD_SEG), an empty
 *      sealed region table (X_FD_TABLE) and an eventfd (X_FD_BELL);
 *      probe_addr 1 becomes the address of the harness's nonce, proof 1
 *      the target's nonce read at its last PROBE's probe_addr
 *   1  a frame at the ring's tail: the bytes but their first 8 (the
 *      mark's place) written, then the mark (position XOR key, or XOR the
 *      bytes' first 8 too when kind has bit 7); the tail moves by the
 *      bytes' length rounded up to a line.  A full header's rkey
 *      EMUL_FUZZ_RKEY_RW or _RO becomes the key of the target's
 *      read-write or read-only region, a raddr whose top 32 bits are
 *      EMUL_FUZZ_ADDR_RW or _RO that region's address plus the low 32
 *   2  the ACK word of the harness's ring (8 bytes LE)
 *   3  a doorbell
 *   4  the harness consumes the target's ring (its head moves on)
 *   5  a pause of 100 us
 * At the end the harness closes the socket: the target drains what is
 * published, breaks the connection and flushes; the QP is destroyed.
 *
 * The target's regions lie between PROT_NONE pages, the read-only one
 * mapped PROT_READ: a placement outside a region, or into one without
 * remote write, faults.  Seeds come from real runs (emul_fuzz_record.c);
 * built with -fsanitize=fuzzer when meson's option fuzz is on, and
 * without it, with EMUL_FUZZ_MAIN, as a replay of inputs.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "emul_fuzz.h"
#include "emul_ring.h"

extern const rnicpi_provider_t RNICPI_PROVIDER_SELF(emul);
#define PROV (&RNICPI_PROVIDER_SELF(emul))

#define ROUND_LINE(n) (((uint64_t) (n) + X_LINE - 1) & ~(uint64_t) (X_LINE - 1))
#define LISTEN_CTX 0x1157
#define QP_CTX 0x9900000
#define WAIT_US 2000000    /* for the target's answer to a step of the handshake, or its end */

static const uint32_t recv_len[] = { 64, 4096, 65536, 262144 };

static struct {
  rnicpi_dev_t *dev;
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq;
  rnicpi_listen_t *lst;
  uint32_t port;
  uint8_t *rw, *ro, *recv, *sink, *send;
  rnicpi_mr_t *rw_mr, *ro_mr, *recv_mr, *sink_mr, *send_mr;
  size_t recv_pages;
  int table_fd, bell_fd;  /* what ATTACH may carry */
  GAsyncQueue *cm;        /* rnicpi_cm_event_t copies */
  uint64_t qp_ctx;        /* the current input's QP */
} fz;

/* The peer's side of one input. */
typedef struct {
  int sock;
  int seg_fd;
  x_seg_hdr_t *seg;
  uint8_t *out;
  const uint8_t *in;
  uint64_t tail, in_head;
  volatile uint64_t nonce;
  uint64_t probe_addr;    /* the target's nonce, from its PROBE */
  gboolean eof, replied;
} peer_t;

static void
up_cm(void *c, const rnicpi_cm_event_t *e)
{
  (void) c;
  g_async_queue_push(fz.cm, g_memdup2(e, sizeof(*e)));
}
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
  if (p == MAP_FAILED || mprotect(p + pg, pages * pg, PROT_READ | PROT_WRITE) != 0)
    abort();
  memset(p + pg, 0x5a, pages * pg);
  if (prot != (PROT_READ | PROT_WRITE) && mprotect(p + pg, pages * pg, prot) != 0)
    abort();
  return p + pg;
}

static rnicpi_mr_t *
reg(uint8_t *addr, uint64_t len, uint32_t access)
{
  rnicpi_mr_attr_t a = { .addr = addr, .length = len, .iova = (uint64_t) (uintptr_t) addr, .access = access };
  rnicpi_mr_t *m;
  if (PROV->mem->mr_reg(fz.pd, &a, &m) != RNICPI_OK)
    abort();
  return m;
}

static void
setup(void)
{
  /* Protocol violations are logged by design: keep the fuzzer's output clean. */
  if (g_getenv("EMUL_FUZZ_VERBOSE") == NULL)
    g_log_set_handler("itapi-vp-emul", G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG, quiet,
                      NULL);
  /* Read once per process: a flood of the peer's requests stops early. */
  g_setenv("ITAPI_EMUL_INBOUND_MB", "4", FALSE);
  fz.cm = g_async_queue_new_full(g_free);
  rnicpi_upcalls_t up = { up_cm, up_cq, up_async };
  if (PROV->device->open("emul0", &up, NULL, &fz.dev) != RNICPI_OK ||
      PROV->device->pd_alloc(fz.dev, &fz.pd) != RNICPI_OK ||
      PROV->queue->cq_create(fz.dev, 1024, 1, &fz.scq) != RNICPI_OK ||
      PROV->queue->cq_create(fz.dev, 1024, 2, &fz.rcq) != RNICPI_OK)
    abort();
  uint32_t local = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  uint32_t all = local | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC;
  fz.rw = guarded(EMUL_FUZZ_RW_LEN / 4096, PROT_READ | PROT_WRITE);
  fz.ro = guarded(EMUL_FUZZ_RO_LEN / 4096, PROT_READ);
  fz.rw_mr = reg(fz.rw, EMUL_FUZZ_RW_LEN, all);
  fz.ro_mr = reg(fz.ro, EMUL_FUZZ_RO_LEN, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_REMOTE_READ);
  /* One region for the receives, each of which ends where a PROT_NONE
   * page starts (post_recvs): the region's own pages between them, and
   * the guard after the last. */
  fz.recv_pages = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(recv_len); i++)
    fz.recv_pages += (recv_len[i] + 4095) / 4096 + 1;
  fz.recv_pages += 1;  /* the three-SGE receive */
  fz.recv = guarded(fz.recv_pages, PROT_READ | PROT_WRITE);
  fz.recv_mr = reg(fz.recv, fz.recv_pages * 4096, local);
  uint8_t *at = fz.recv;
  for (size_t i = 0; i < G_N_ELEMENTS(recv_len); i++) {
    at += (recv_len[i] + 4095) / 4096 * 4096;
    if (mprotect(at, 4096, PROT_NONE) != 0)
      abort();
    at += 4096;
  }
  fz.sink = guarded(1, PROT_READ | PROT_WRITE);
  fz.sink_mr = reg(fz.sink, 4096, local | RNICPI_ACCESS_REMOTE_WRITE);
  fz.send = guarded(1, PROT_READ | PROT_WRITE);
  fz.send_mr = reg(fz.send, 4096, local);
  /* An empty region table, sealed as the library seals its own: what a
   * trusted ATTACH may carry without naming any memory of this process
   * (the target would attach to "the peer", which is this process). */
  fz.table_fd = memfd_create("emul-fuzz-table", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fz.table_fd < 0 || ftruncate(fz.table_fd, (off_t) X_MR_CAP * sizeof(x_mr_entry_t)) != 0 ||
      fcntl(fz.table_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    abort();
  fz.bell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  for (int tries = 0; fz.lst == NULL; tries++) {
    fz.port = 40000u + (uint32_t) (getpid() + tries) % 20000u;
    if (PROV->cm->listen(fz.dev, fz.port, LISTEN_CTX, &fz.lst) != RNICPI_OK && tries > 100)
      abort();
  }
}

/* ---- the peer's plumbing ---- */

static int
dial(uint32_t port)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int k = g_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "itapi-emul/%u", port);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  socklen_t len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) k);
  if (fd < 0 || connect(fd, (struct sockaddr *) &sa, len) != 0)
    abort();
  return fd;
}

static void
send_bytes(peer_t *p, const void *m, size_t len, const int *fds, int nfds)
{
  union {
    char buf[CMSG_SPACE(3 * sizeof(int))];
    struct cmsghdr align;
  } c;
  struct iovec iov = { (void *) m, len };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  if (nfds > 0) {
    memset(&c, 0, sizeof(c));
    mh.msg_control = c.buf;
    mh.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
    memcpy(CMSG_DATA(h), fds, (size_t) nfds * sizeof(int));
  }
  ssize_t n = sendmsg(p->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void) n;  /* a target that closed, or reads nothing: its end is the input's */
}

static void
doorbell(peer_t *p)
{
  x_msg_t m = { .magic = X_MAGIC, .type = X_DOORBELL };
  send_bytes(p, &m, X_MSG_MIN, NULL, 0);
}

/* What the target's nonce reads by attach (0: nothing). */
static uint64_t
read_nonce(uint64_t addr)
{
  uint64_t v = 0;
  struct iovec l = { &v, sizeof(v) }, r = { (void *) (uintptr_t) addr, sizeof(v) };
  return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t) sizeof(v) ? v : 0;
}

/* Read what the target sent, waiting up to @us for a message of @type
 * (0: none waited for): a PROBE's nonce address, a REP, its EOF.  TRUE
 * when @type came. */
static gboolean
pump(peer_t *p, uint32_t type, gint64 us)
{
  gint64 end = g_get_monotonic_time() + us;
  while (!p->eof) {
    int left = (int) MAX((end - g_get_monotonic_time()) / 1000, 0);
    struct pollfd pf = { p->sock, POLLIN, 0 };
    if (poll(&pf, 1, type != 0 ? MAX(left, 1) : 0) <= 0) {
      if (type == 0 || g_get_monotonic_time() >= end)
        return FALSE;
      continue;
    }
    union {
      char buf[CMSG_SPACE(4 * sizeof(int))];
      struct cmsghdr align;
    } c;
    x_msg_t m = { 0 };
    struct iovec iov = { &m, sizeof(m) };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                         .msg_controllen = sizeof(c.buf) };
    ssize_t n = recvmsg(p->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0) {
      p->eof = n == 0 || errno != EAGAIN;
      continue;
    }
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL; h = CMSG_NXTHDR(&mh, h)) {
      int k = (int) ((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; h->cmsg_type == SCM_RIGHTS && i < k; i++) {
        int fd;
        memcpy(&fd, CMSG_DATA(h) + (size_t) i * sizeof(int), sizeof(int));
        close(fd);
      }
    }
    if (m.type == X_PROBE)
      p->probe_addr = m.probe_addr;
    if (m.type == X_REP)
      p->replied = TRUE;
    if (type != 0 && m.type == type)
      return TRUE;
  }
  return FALSE;
}

static void
seg_new(peer_t *p, gboolean sealed)
{
  p->seg_fd = memfd_create("emul-fuzz-seg", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (p->seg_fd < 0 || ftruncate(p->seg_fd, X_SEG_SIZE) != 0 ||
      (sealed && fcntl(p->seg_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0))
    abort();
  p->seg = mmap(NULL, X_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, p->seg_fd, 0);
  if (p->seg == MAP_FAILED)
    abort();
  p->out = (uint8_t *) p->seg + X_HDR_SIZE;
  p->in = (const uint8_t *) p->seg + X_HDR_SIZE + X_RING_SIZE;
  p->seg->magic = X_MAGIC;
  p->seg->ring_size = X_RING_SIZE;
  p->seg->ring[0].armed = p->seg->ring[1].armed = X_ARM_THREAD;
  p->seg->access[0] = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE;
  p->seg->ird[0] = 4;
  p->seg->key[0] = EMUL_FUZZ_KEY0;
  p->seg->key[1] = EMUL_FUZZ_KEY1;
}

/* The request raised, if one comes within @us while @p's socket is open:
 * accepted by @qp. */
static gboolean
accept_request(peer_t *p, rnicpi_qp_t *qp, gint64 us)
{
  gint64 end = g_get_monotonic_time() + us;
  rnicpi_cm_event_t *e = NULL;
  while (e == NULL && !p->eof && g_get_monotonic_time() < end) {
    e = g_async_queue_timeout_pop(fz.cm, 1000);
    pump(p, 0, 0);
  }
  gboolean ok = FALSE;
  if (e != NULL && e->type == RNICPI_CM_CONNECT_REQUEST) {
    rnicpi_conn_param_t cp = { .ird = 4, .ord = 4 };
    ok = PROV->cm->accept(qp, e->conn_id, &cp) == RNICPI_OK;
  }
  g_free(e);
  return ok;
}

/* ---- the records ---- */

static void
relocate(x_frame_t *f)
{
  if (f->rkey == EMUL_FUZZ_RKEY_RW)
    f->rkey = fz.rw_mr->rkey;
  else if (f->rkey == EMUL_FUZZ_RKEY_RO)
    f->rkey = fz.ro_mr->rkey;
  uint64_t low = f->raddr & 0xffffffffu;
  if (f->raddr >> 32 == EMUL_FUZZ_ADDR_RW)
    f->raddr = (uint64_t) (uintptr_t) fz.rw + low;
  else if (f->raddr >> 32 == EMUL_FUZZ_ADDR_RO)
    f->raddr = (uint64_t) (uintptr_t) fz.ro + low;
}

static void
ring_write(peer_t *p, uint64_t pos, const uint8_t *src, uint64_t n)
{
  uint64_t at = pos & (X_RING_SIZE - 1);
  uint64_t first = MIN(n, X_RING_SIZE - at);
  memcpy(p->out + at, src, first);
  memcpy(p->out, src + first, n - first);
}

/* Room for @need bytes, as the target releases its head; FALSE when it
 * does not within a while (it stopped taking frames). */
static gboolean
room(peer_t *p, uint64_t need)
{
  x_ring_ctl_t *r = &p->seg->ring[0];
  for (int i = 0; i < 200 && !p->eof; i++) {
    if (X_RING_SIZE - (p->tail - __atomic_load_n(&r->head, __ATOMIC_SEQ_CST)) >= need)
      return TRUE;
    __atomic_store_n(&r->want_space, 1, __ATOMIC_SEQ_CST);
    doorbell(p);
    pump(p, X_SPACE, 1000);
  }
  return FALSE;
}

static void
put_frame(peer_t *p, const uint8_t *b, size_t len, gboolean raw_mark)
{
  uint64_t need = ROUND_LINE(MAX(len, (size_t) 8));
  if (need > X_RING_SIZE / 2 || !room(p, need))
    return;
  uint8_t *copy = g_malloc0(MAX(len, (size_t) 8));
  memcpy(copy, b, len);
  if (len >= sizeof(x_frame_t) && ((const x_short_t *) copy)->op != X_OP_SEND_SHORT)
    relocate((x_frame_t *) copy);
  if (len > 8)
    ring_write(p, p->tail + 8, copy + 8, len - 8);
  uint64_t mark = p->tail ^ EMUL_FUZZ_KEY0;
  if (raw_mark) {
    uint64_t x;
    memcpy(&x, copy, 8);
    mark ^= x;
  }
  __atomic_store_n((uint64_t *) (p->out + (p->tail & (X_RING_SIZE - 1))), mark, __ATOMIC_SEQ_CST);
  p->tail += need;
  g_free(copy);
}

static void
put_msg(peer_t *p, const uint8_t *b, size_t len, gboolean raw_magic, rnicpi_qp_t *qp, gboolean *accepted)
{
  x_msg_t m = { 0 };
  len = MIN(len, sizeof(m));
  memcpy(&m, b, len);
  if (!raw_magic)
    m.magic = X_MAGIC;
  if (m.probe_addr == 1)
    m.probe_addr = (uint64_t) (uintptr_t) &p->nonce;
  if (m.proof == 1)
    m.proof = p->probe_addr != 0 ? read_nonce(p->probe_addr) : 0;
  int fds[3], n = 0;
  if (m.fds & X_FD_SEG)
    fds[n++] = p->seg_fd;
  if (m.fds & X_FD_TABLE)
    fds[n++] = fz.table_fd;
  if (m.fds & X_FD_BELL)
    fds[n++] = fz.bell_fd;
  send_bytes(p, &m, len, fds, n);
  /* A raw handshake: the request raised after an ATTACH is accepted. */
  if (m.type == X_REQ)
    pump(p, X_PROBE, WAIT_US / 20);
  if (m.type == X_ATTACH && !*accepted && accept_request(p, qp, WAIT_US / 20)) {
    *accepted = TRUE;
    pump(p, X_REP, WAIT_US);
  }
}

/* The target's ring consumed: its head moves past what it published. */
static void
consume(peer_t *p)
{
  for (;;) {
    uint64_t at = p->in_head & (X_RING_SIZE - 1);
    if (__atomic_load_n((const uint64_t *) (p->in + at), __ATOMIC_ACQUIRE) != (p->in_head ^ EMUL_FUZZ_KEY1))
      break;
    const x_short_t *sh = (const x_short_t *) (p->in + at);
    x_frame_t f;
    uint64_t hdr = sizeof(x_short_t), len = sh->len;
    if (sh->op != X_OP_SEND_SHORT) {
      memcpy(&f, p->in + at, MIN(sizeof(f), X_RING_SIZE - at));
      hdr = sizeof(f);
      len = f.frag_len;
    }
    p->in_head += ROUND_LINE(hdr + len);
  }
  __atomic_store_n(&p->seg->ring[1].head, p->in_head, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->seg->ring[1].want_space, __ATOMIC_SEQ_CST)) {
    __atomic_store_n(&p->seg->ring[1].want_space, 0, __ATOMIC_SEQ_CST);
    x_msg_t m = { .magic = X_MAGIC, .type = X_SPACE };
    send_bytes(p, &m, X_MSG_MIN, NULL, 0);
  }
}

/* ---- the target's side ---- */

static void
post_recvs(rnicpi_qp_t *q)
{
  uint8_t *at = fz.recv;
  uint64_t key = fz.recv_mr->lkey;
  for (size_t i = 0; i < G_N_ELEMENTS(recv_len); i++) {
    size_t pages = (recv_len[i] + 4095) / 4096;
    rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) (at + pages * 4096 - recv_len[i]),
                       .length = recv_len[i], .lkey = key };
    rnicpi_recv_wr_t w = { .wr_id = i, .sg_list = &s, .num_sge = 1 };
    PROV->data->post_recv(q, &w);
    at += (pages + 1) * 4096;  /* past its guard page */
  }
  rnicpi_sge_t three[3] = {
    { .addr = (uint64_t) (uintptr_t) at, .length = 10, .lkey = key },
    { .addr = (uint64_t) (uintptr_t) (at + 100), .length = 0, .lkey = key },
    { .addr = (uint64_t) (uintptr_t) (at + 4096 - 30), .length = 30, .lkey = key },
  };
  rnicpi_recv_wr_t w = { .wr_id = 9, .sg_list = three, .num_sge = 3 };
  PROV->data->post_recv(q, &w);
}

static void
post_requests(rnicpi_qp_t *q)
{
  rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) fz.send, .length = 64, .lkey = fz.send_mr->lkey };
  rnicpi_send_wr_t send = { .wr_id = 20, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED, .sg_list = &s,
                            .num_sge = 1 };
  PROV->data->post_send(q, &send);
  /* The sink is the page's last 100 bytes: a Read Response past it faults. */
  rnicpi_sge_t k = { .addr = (uint64_t) (uintptr_t) (fz.sink + 4096 - 100), .length = 100,
                     .lkey = fz.sink_mr->lkey };
  rnicpi_send_wr_t read = { .wr_id = 21, .opcode = RNICPI_WR_RDMA_READ, .flags = RNICPI_WR_SIGNALED,
                            .sg_list = &k, .num_sge = 1, .remote_addr = 0x10000, .rkey = 0x4242 };
  PROV->data->post_send(q, &read);
}

/* The connection's end (BROKEN, DISCONNECTED...) for the current QP, and
 * the requests no QP took (refused). */
static void
settle(gboolean accepted)
{
  gint64 end = g_get_monotonic_time() + WAIT_US;
  rnicpi_cm_event_t *e;
  while ((e = g_async_queue_timeout_pop(fz.cm, accepted ? 1000 : 0)) != NULL || accepted) {
    if (e != NULL && e->type == RNICPI_CM_CONNECT_REQUEST)
      PROV->cm->reject(fz.dev, e->conn_id, NULL, 0);
    gboolean ended = e != NULL && e->qp_ctx == fz.qp_ctx && e->type != RNICPI_CM_ESTABLISHED &&
                     e->type != RNICPI_CM_CONNECT_REQUEST;
    g_free(e);
    if (ended || g_get_monotonic_time() > end)
      break;
  }
  rnicpi_wc_t wc[32];
  while (PROV->data->poll_cq(fz.scq, wc, 32) > 0)
    ;
  while (PROV->data->poll_cq(fz.rcq, wc, 32) > 0)
    ;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (fz.dev == NULL)
    setup();
  if (size < 1)
    return 0;
  uint8_t mode = data[0];
  data++;
  size--;

  rnicpi_qp_attr_t a = { .send_cq = fz.scq, .recv_cq = fz.rcq, .max_send_wr = 64, .max_recv_wr = 64,
                         .max_send_sge = 4, .max_recv_sge = 4, .max_rdma_write_sge = 4,
                         .max_rdma_read_sge = 4, .ird = 4, .ord = 4,
                         .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
                                   RNICPI_ACCESS_ATOMIC };
  rnicpi_qp_t *qp;
  static uint64_t serial;
  fz.qp_ctx = QP_CTX + ++serial;  /* its events are told from an earlier input's */
  if (PROV->queue->qp_create(fz.pd, &a, fz.qp_ctx, &qp) != RNICPI_OK)
    abort();
  if (mode & EMUL_FUZZ_RECVS)
    post_recvs(qp);

  peer_t p = { .sock = dial(fz.port), .nonce = EMUL_FUZZ_NONCE };
  seg_new(&p, !(mode & EMUL_FUZZ_UNSEALED));
  gboolean accepted = FALSE;
  if (!(mode & EMUL_FUZZ_RAW)) {
    x_msg_t req = { .magic = X_MAGIC, .type = X_REQ, .qpn = 77, .ird = 4, .ord = 4, .pd_id = 1,
                    .pers = EMUL_PERS_IB,
                    .probe_addr = (uint64_t) (uintptr_t) &p.nonce, .fds = X_FD_SEG };
    send_bytes(&p, &req, X_MSG_MIN, &p.seg_fd, 1);
    if (pump(&p, X_PROBE, WAIT_US)) {
      x_msg_t att = { .magic = X_MAGIC, .type = X_ATTACH,
                      .proof = (mode & EMUL_FUZZ_TRUSTED) ? read_nonce(p.probe_addr) : 0 };
      send_bytes(&p, &att, X_MSG_MIN, NULL, 0);
      accepted = accept_request(&p, qp, WAIT_US) && pump(&p, X_REP, WAIT_US);
    }
  }
  if (accepted && (mode & EMUL_FUZZ_POSTS))
    post_requests(qp);

  while (size >= 5 && !p.eof) {
    uint8_t kind = data[0];
    uint32_t want;
    memcpy(&want, data + 1, 4);
    size_t len = MIN((size_t) GUINT32_FROM_LE(want), size - 5);
    const uint8_t *b = data + 5;
    data += 5 + len;
    size -= 5 + len;
    switch (kind & 7) {
    case 0:
      put_msg(&p, b, len, (kind & 0x80) != 0, qp, &accepted);
      if (accepted && p.replied && (mode & EMUL_FUZZ_POSTS) && (mode & EMUL_FUZZ_RAW)) {
        post_requests(qp);
        mode &= (uint8_t) ~EMUL_FUZZ_POSTS;
      }
      break;
    case 1:
      put_frame(&p, b, len, (kind & 0x80) != 0);
      break;
    case 2: {
      uint64_t v = 0;
      memcpy(&v, b, MIN(len, sizeof(v)));
      __atomic_store_n(&p.seg->ring[0].acked, v, __ATOMIC_SEQ_CST);
      break;
    }
    case 3:
      doorbell(&p);
      break;
    case 4:
      consume(&p);
      break;
    case 5:
      g_usleep(100);
      break;
    default:
      break;
    }
    pump(&p, 0, 0);
  }
  doorbell(&p);
  close(p.sock);
  settle(accepted);
  PROV->queue->qp_destroy(qp);
  munmap(p.seg, X_SEG_SIZE);
  close(p.seg_fd);
  settle(FALSE);
  return 0;
}

#ifdef EMUL_FUZZ_MAIN
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
        gchar *path = g_build_filename(argv[i], name, NULL);
        bad += run_file(path);
        n++;
        g_free(path);
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
