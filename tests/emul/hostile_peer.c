/*
 * A hostile peer process of vp/emul's cross-process transport (issue 56,
 * point 2: a hostile peer process cannot hurt the target).  It speaks the
 * protocol of vp/emul/emul_ring.h itself, linked with no libitapi and no
 * provider (the header is included for its layouts and constants alone),
 * and breaks one rule of it per case.  tests/emul/test_hostile.c is the
 * target, which runs it as
 *
 *   hostile-peer CASE PORT
 *
 * with line pipes on stdin and stdout.  What it says:
 *   "established"           the handshake is over (the target's REP read)
 *   "check NAME=VALUE"      what it saw: the errno of an attack on a
 *                           descriptor, the descriptors it was given, how
 *                           the connection ended ("end=eof"), the BREAK...
 *   a case's own cue        ("half-written", "stalled", ...)
 *   "done"                  the case is over
 * and what it hears: "go ADDR LEN RKEY STALE FOREIGN LOCAL" (the target's
 * regions, once connected: a buffer with remote rights, a key that was
 * deregistered, a key of another protection domain, a region with local
 * rights only), "publish" (a case's next step), "bye" (exit).
 *
 * The peer is always the active side: it creates the connection segment,
 * produces ring[0] and consumes ring[1] (emul_ring.h, x_seg_hdr_t).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

#include "hostile_peer.h"

#define END_MS 10000        /* how long the peer waits for the target to close */
#define ROOM_MS 10000       /* for room in its ring */

void
peer_say(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

void
peer_die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hostile-peer: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(2);
}

/* One line from stdin within @ms, without its newline; NULL at EOF or
 * timeout. */
char *
peer_hear(int ms)
{
  GString *s = g_string_new(NULL);
  gint64 end = g_get_monotonic_time() + (gint64) ms * 1000;
  for (;;) {
    struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
    int left = (int) ((end - g_get_monotonic_time()) / 1000);
    char c;
    if (left <= 0 || poll(&p, 1, left) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
      break;
    if (c == '\n')
      return g_string_free(s, FALSE);
    g_string_append_c(s, c);
  }
  g_string_free(s, TRUE);
  return NULL;
}

void
peer_hear_want(const char *want)
{
  g_autofree char *l = peer_hear(LINE_MS);
  if (g_strcmp0(l, want) != 0)
    peer_die("expected \"%s\" from the target's test, heard \"%s\"", want, l != NULL ? l : "nothing");
}

/* ---- socket messages ---- */

static int
dial(unsigned port)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int k = g_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "itapi-emul/%u", port);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  socklen_t len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) k);
  if (fd < 0 || connect(fd, (struct sockaddr *) &sa, len) != 0)
    peer_die("cannot connect to the target's port %u: %s", port, g_strerror(errno));
  return fd;
}

/* Send @len bytes of @m (magic as given) with @nfds descriptors. */
gboolean
peer_send_raw(peer_t *p, const void *m, size_t len, const int *fds, int nfds)
{
  union {
    char buf[CMSG_SPACE(4 * sizeof(int))];
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
  return sendmsg(p->sock, &mh, MSG_NOSIGNAL) == (ssize_t) len;
}

gboolean
peer_send_msg(peer_t *p, x_msg_t *m, const int *fds, int nfds)
{
  m->magic = X_MAGIC;
  return peer_send_raw(p, m, X_MSG_MIN + m->pdata_len, fds, nfds);
}

void
peer_doorbell(peer_t *p)
{
  x_msg_t m = { .type = X_DOORBELL };
  peer_send_msg(p, &m, NULL, 0);
}

/* The next message within @ms: its size (0: EOF, -1: none in time), its
 * descriptors in @fds (up to 4). */
ssize_t
peer_recv_msg(peer_t *p, x_msg_t *m, int *fds, int *nfds, int ms)
{
  union {
    char buf[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr align;
  } c;
  struct pollfd pf = { p->sock, POLLIN, 0 };
  *nfds = 0;
  if (poll(&pf, 1, ms) <= 0)
    return -1;
  memset(m, 0, sizeof(*m));
  struct iovec iov = { m, sizeof(*m) };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                       .msg_controllen = sizeof(c.buf) };
  ssize_t n = recvmsg(p->sock, &mh, MSG_CMSG_CLOEXEC);
  if (n < 0 && errno == ECONNRESET) {
    /* The target closed with messages of ours unread: Linux reports that
     * once, ahead of what the target sent before closing (its BREAK, as
     * vp/emul reads it too, x_conn_read); EOF comes after them. */
    mh.msg_controllen = sizeof(c.buf);
    n = recvmsg(p->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  }
  if (n < 0)
    return errno == ECONNRESET || errno == EAGAIN ? 0 : -1;
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL; h = CMSG_NXTHDR(&mh, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
      continue;
    int k = (int) ((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k && *nfds < 4; i++)
      memcpy(&fds[(*nfds)++], CMSG_DATA(h) + (size_t) i * sizeof(int), sizeof(int));
  }
  return n;
}

/* The next message of @type, skipping doorbells; FALSE (said as a check)
 * when the target closed or sent something else. */
gboolean
peer_expect_msg(peer_t *p, uint32_t type, x_msg_t *m, int *fds, int *nfds)
{
  for (;;) {
    ssize_t n = peer_recv_msg(p, m, fds, nfds, LINE_MS);
    if (n > 0 && (m->type == X_DOORBELL || m->type == X_SPACE))
      continue;
    if (n >= (ssize_t) X_MSG_MIN && m->magic == X_MAGIC && m->type == type)
      return TRUE;
    peer_say("check wanted-%u=%s", type, n == 0 ? "eof" : n < 0 ? "timeout" : "other");
    return FALSE;
  }
}

/* Read what the target sends until it closes the socket; says how it
 * ended ("end=eof" or "end=open") and a BREAK's request. */
void
peer_wait_end(peer_t *p)
{
  gint64 end = g_get_monotonic_time() + (gint64) END_MS * 1000;
  for (;;) {
    x_msg_t m;
    int fds[4], nfds = 0;
    int left = (int) ((end - g_get_monotonic_time()) / 1000);
    ssize_t n = left > 0 ? peer_recv_msg(p, &m, fds, &nfds, left) : -1;
    for (int i = 0; i < nfds; i++)
      close(fds[i]);
    if (n == 0 || n < 0) {
      peer_say("check end=%s", n == 0 ? "eof" : "open");
      break;
    }
    if (n >= (ssize_t) X_MSG_MIN && m.type == X_BREAK) {
      p->broke = TRUE;
      p->break_status = m.status;
      p->break_seq = m.seq;
    }
  }
  if (p->broke)
    peer_say("check break-status=%s", p->break_status != 0 ? "nonzero" : "zero");
}

/* A message the protocol does not have: the target breaks the connection
 * for it and says so (the cases whose own move breaks nothing end so). */
void
peer_finish(peer_t *p)
{
  x_msg_t m = { .type = FINISH_TYPE };
  peer_send_msg(p, &m, NULL, 0);
  peer_wait_end(p);
}

/* ---- the connection segment and the handshake ---- */

static uint64_t
random_key(void)
{
  return ((uint64_t) g_random_int() << 32 | g_random_int()) | UINT64_C(1) << 63;
}

/* A memfd of @size bytes with @seals added (0: none, sealable later),
 * mapped and laid out as the active side lays it out
 * (emul_ring_connect). */
void
peer_seg_new(peer_t *p, uint64_t size, unsigned flags, int seals)
{
  p->seg_fd = memfd_create("hostile-seg", MFD_CLOEXEC | flags);
  if (p->seg_fd < 0 || ftruncate(p->seg_fd, (off_t) size) != 0)
    peer_die("memfd of %" G_GUINT64_FORMAT " bytes: %s", size, g_strerror(errno));
  if (seals != 0 && fcntl(p->seg_fd, F_ADD_SEALS, seals) != 0)
    peer_die("sealing the segment: %s", g_strerror(errno));
  void *m = mmap(NULL, MAX(size, (uint64_t) X_SEG_SIZE), PROT_READ | PROT_WRITE, MAP_SHARED, p->seg_fd, 0);
  if (m == MAP_FAILED)
    peer_die("mapping the segment: %s", g_strerror(errno));
  p->seg = m;
  p->out = (uint8_t *) m + X_HDR_SIZE;
  p->in = (const uint8_t *) m + X_HDR_SIZE + X_RING_SIZE;
  if (size < sizeof(x_seg_hdr_t))
    return;
  p->seg->magic = X_MAGIC;
  p->seg->ring_size = X_RING_SIZE;
  p->seg->ring[0].armed = p->seg->ring[1].armed = X_ARM_THREAD;
  p->seg->access[0] = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE;
  p->seg->ird[0] = 4;
  p->key_out = p->seg->key[0] = random_key();
  p->key_in = p->seg->key[1] = random_key();
}

/* A REQ as the library's (emul_ring_connect) with @fds. */
gboolean
peer_send_req(peer_t *p, uint32_t mask, const int *fds, int nfds)
{
  x_msg_t m = {
    .type = X_REQ, .qpn = 4242, .ird = 4, .ord = 4, .pd_id = 1,
    .pers = peer_the_case->iwarp ? EMUL_PERS_IWARP : EMUL_PERS_IB,
    .probe_addr = (uint64_t) (uintptr_t) &p->nonce, .fds = mask,
  };
  return peer_send_msg(p, &m, fds, nfds);
}

/* What the target's nonce reads by attach (0: nothing), as a peer of its
 * user proves it may attach (emul_ring_cm.c, Trust). */
static uint64_t
read_nonce(peer_t *p, uint64_t addr)
{
  uint64_t v = 0;
  struct iovec l = { &v, sizeof(v) }, r = { (void *) (uintptr_t) addr, sizeof(v) };
  return process_vm_readv(p->target, &l, 1, &r, 1, 0) == (ssize_t) sizeof(v) ? v : 0;
}

gboolean
peer_wait_probe(peer_t *p)
{
  int fds[4], nfds;
  if (!peer_expect_msg(p, X_PROBE, &p->probe, fds, &nfds))
    return FALSE;
  for (int i = 0; i < nfds; i++)
    close(fds[i]);
  peer_say("check target-proof=%s", p->probe.proof == p->nonce ? "ok" : "wrong");
  return TRUE;
}

gboolean
peer_send_attach(peer_t *p, gboolean prove, uint32_t mask, const int *fds, int nfds)
{
  x_msg_t a = { .type = X_ATTACH, .proof = prove ? read_nonce(p, p->probe.probe_addr) : 0,
                .fds = mask };
  return peer_send_msg(p, &a, fds, nfds);
}

/* The target's REP; says which descriptors came with it. */
gboolean
peer_wait_rep(peer_t *p)
{
  x_msg_t m;
  if (!peer_expect_msg(p, X_REP, &m, p->rep_fds, &p->rep_nfds))
    return FALSE;
  p->rep_mask = m.fds;
  peer_say("check rep-fds=%u/%d", m.fds, p->rep_nfds);
  return TRUE;
}

/* The go line: the target's regions. */
static void
hear_go(peer_t *p)
{
  g_autofree char *l = peer_hear(LINE_MS);
  guint64 v[6];
  if (l == NULL || sscanf(l, "go %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %"
                          G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
                          &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
    peer_die("expected the go line, heard \"%s\"", l != NULL ? l : "nothing");
  p->addr = v[0];
  p->len = v[1];
  p->rkey = v[2];
  p->stale = v[3];
  p->foreign = v[4];
  p->local = v[5];
}

/* A whole handshake as the library's active side makes it, in a segment
 * it may seal later (@seals 0) or sealed as the library seals it; @prove:
 * the ATTACH carries the target's nonce read by attach (a trusted peer),
 * else 0.  Then the go line. */
gboolean
peer_connect(peer_t *p, gboolean prove, int seals)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, seals);
  if (!peer_send_req(p, X_FD_SEG, &p->seg_fd, 1) || !peer_wait_probe(p) ||
      !peer_send_attach(p, prove, 0, NULL, 0) || !peer_wait_rep(p))
    return FALSE;
  peer_say("established");
  hear_go(p);
  return TRUE;
}

/* ---- ring[0], produced here ---- */

void
peer_ring_write(peer_t *p, uint64_t pos, const void *src, uint64_t n)
{
  uint64_t at = pos & (X_RING_SIZE - 1);
  uint64_t first = MIN(n, X_RING_SIZE - at);
  memcpy(p->out + at, src, first);
  memcpy(p->out, (const uint8_t *) src + first, n - first);
}

/* Room for @need bytes at the tail, as the target releases its head (in
 * quarters of the ring); FALSE when the target stops taking frames. */
static gboolean
room(peer_t *p, uint64_t need)
{
  gint64 end = g_get_monotonic_time() + (gint64) ROOM_MS * 1000;
  x_ring_ctl_t *r = &p->seg->ring[0];
  while (X_RING_SIZE - (p->tail - __atomic_load_n(&r->head, __ATOMIC_SEQ_CST)) < need) {
    if (g_get_monotonic_time() > end)
      return FALSE;
    __atomic_store_n(&r->want_space, 1, __ATOMIC_SEQ_CST);
    peer_doorbell(p);
    struct pollfd pf = { p->sock, POLLIN, 0 };
    if (poll(&pf, 1, 1) > 0) {
      x_msg_t m;
      int fds[4], nfds;
      ssize_t n = peer_recv_msg(p, &m, fds, &nfds, 0);
      for (int i = 0; i < nfds; i++)
        close(fds[i]);
      if (n == 0)
        return FALSE;  /* the target closed the connection */
    }
  }
  return TRUE;
}

void
peer_mark_store(peer_t *p, uint64_t pos, uint64_t mark)
{
  __atomic_store_n((uint64_t *) (p->out + (pos & (X_RING_SIZE - 1))), mark, __ATOMIC_SEQ_CST);
}

/* Frame @f with @payload (f->frag_len bytes) at the tail, published
 * (@publish) or written but for its mark; its position.  G_MAXUINT64 when
 * the ring has no room. */
uint64_t
peer_frame_put(peer_t *p, const x_frame_t *f, const void *payload, gboolean publish)
{
  uint64_t need = ROUND_LINE(sizeof(*f) + f->frag_len);
  if (!room(p, need))
    return G_MAXUINT64;
  uint64_t pos = p->tail;
  peer_ring_write(p, pos + 8, (const uint8_t *) f + 8, sizeof(*f) - 8);
  if (f->frag_len > 0 && payload != NULL)
    peer_ring_write(p, pos + sizeof(*f), payload, f->frag_len);
  if (publish)
    peer_mark_store(p, pos, pos ^ p->key_out);
  p->tail += need;
  return pos;
}

/* A whole Send of @len bytes with the short header. */
uint64_t
peer_short_put(peer_t *p, uint64_t seq, const void *payload, uint32_t len, gboolean publish)
{
  uint64_t need = ROUND_LINE(sizeof(x_short_t) + len);
  if (!room(p, need))
    return G_MAXUINT64;
  uint64_t pos = p->tail;
  x_short_t h = { .op = X_OP_SEND_SHORT, .len = len, .seq = seq };
  peer_ring_write(p, pos + 8, (const uint8_t *) &h + 8, sizeof(h) - 8);
  if (len > 0 && payload != NULL)
    peer_ring_write(p, pos + sizeof(h), payload, len);
  if (publish)
    peer_mark_store(p, pos, pos ^ p->key_out);
  p->tail += need;
  return pos;
}

/* A one-frame request (or answer) with no payload bytes of its own. */
void
peer_frame_ring(peer_t *p, const x_frame_t *f, const void *payload)
{
  peer_frame_put(p, f, payload, TRUE);
  peer_doorbell(p);
}

/* ---- ring[1], the target's ---- */

/* The target's next frame within @ms, copied (header in @f; a short
 * one as the Send it is); FALSE if none came. */
gboolean
peer_frame_next(peer_t *p, x_frame_t *f, int ms)
{
  gint64 end = g_get_monotonic_time() + (gint64) ms * 1000;
  uint64_t at = p->in_head & (X_RING_SIZE - 1);
  while (__atomic_load_n((const uint64_t *) (p->in + at), __ATOMIC_ACQUIRE) != (p->in_head ^ p->key_in)) {
    if (g_get_monotonic_time() > end)
      return FALSE;
    g_usleep(200);
  }
  const x_short_t *sh = (const x_short_t *) (p->in + at);
  if (sh->op == X_OP_SEND_SHORT) {
    *f = (x_frame_t) { .op = X_OP_SEND, .frag_len = sh->len, .seq = sh->seq };
    p->in_head += ROUND_LINE(sizeof(*sh) + sh->len);
  } else {
    memcpy(f, p->in + at, MIN(sizeof(*f), X_RING_SIZE - at));
    p->in_head += ROUND_LINE(sizeof(*f) + f->frag_len);
  }
  /* Taken, as the library says it (emul_ring.h, "Timeout"). */
  __atomic_store_n(&p->seg->ring[1].taken, p->in_head, __ATOMIC_RELAXED);
  return TRUE;
}

/* The harness's own read (peer_recv_msg) of a socket whose other end
 * closed with a message of ours unread: the message it sent before closing
 * comes first, then EOF.  Exit 0 when so. */
static int
check_reset(void)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    peer_die("socketpair: %s", g_strerror(errno));
  x_msg_t m = { .magic = X_MAGIC, .type = X_BREAK, .status = 7 };
  if (send(sv[0], &m, sizeof(m), 0) != (ssize_t) sizeof(m) ||  /* the target's BREAK */
      send(sv[1], &m, sizeof(m), 0) != (ssize_t) sizeof(m))    /* ours, never read */
    peer_die("send: %s", g_strerror(errno));
  close(sv[0]);
  peer_t p = { .sock = sv[1], .seg_fd = -1 };
  x_msg_t got;
  int fds[4], nfds;
  ssize_t n = peer_recv_msg(&p, &got, fds, &nfds, LINE_MS);
  gboolean took = n == (ssize_t) sizeof(m) && got.type == X_BREAK && got.status == 7;
  ssize_t end = peer_recv_msg(&p, &got, fds, &nfds, LINE_MS);
  printf("message before reset: %s (%zd bytes), then %s\n", took ? "taken" : "lost", n,
         end == 0 ? "EOF" : "no EOF");
  return took && end == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "--check-reset") == 0)
    return check_reset();
  if (argc != 3) {
    fprintf(stderr, "usage: hostile-peer CASE PORT\n");
    return 2;
  }
  for (size_t i = 0; i < peer_ncases && peer_the_case == NULL; i++)
    if (strcmp(peer_cases[i].name, argv[1]) == 0)
      peer_the_case = &peer_cases[i];
  if (peer_the_case == NULL)
    peer_die("no case %s", argv[1]);
  peer_t p = { .seg_fd = -1 };
  p.nonce = random_key();
  p.sock = dial((unsigned) atoi(argv[2]));
  struct ucred cr;
  socklen_t len = sizeof(cr);
  if (getsockopt(p.sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
    peer_die("SO_PEERCRED: %s", g_strerror(errno));
  p.target = cr.pid;
  peer_the_case->run(&p);
  peer_say("done");
  g_free(peer_hear(LINE_MS * 4));  /* "bye", or the target gone */
  return 0;
}
