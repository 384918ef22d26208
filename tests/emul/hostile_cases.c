/*
 * The hostile peer's cases (tests/emul/hostile_peer.h): each breaks one
 * rule of vp/emul's cross-process protocol, and says what it saw for the
 * target's test to check (tests/emul/test_hostile.c, whose table says
 * what each case shows).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile_peer.h"

/* ---- the handshake ---- */

/* The handshake: a REQ whose segment the target must refuse; the request
 * never reaches the target's application. */
static void
req_then_end(peer_t *p, uint32_t mask, const int *fds, int nfds)
{
  if (!peer_send_req(p, mask, fds, nfds))
    peer_say("check req=unsent");
  peer_wait_end(p);
}

static void
case_seg_short(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE / 2, MFD_ALLOW_SEALING, SEALED);
  req_then_end(p, X_FD_SEG, &p->seg_fd, 1);
}

/* Not sealed against shrinking, and sealed against sealing: the target
 * cannot seal it, and a file that can shrink under its mapping would
 * SIGBUS it. */
static void
case_seg_unsealable(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, 0, 0);  /* without MFD_ALLOW_SEALING: F_SEAL_SEAL */
  peer_say("check seals=%d", fcntl(p->seg_fd, F_GET_SEALS));
  req_then_end(p, X_FD_SEG, &p->seg_fd, 1);
}

static void
case_seg_file(peer_t *p)
{
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("hostile-seg-XXXXXX", &path, NULL);
  if (fd < 0 || ftruncate(fd, X_SEG_SIZE) != 0)
    peer_die("a temporary file of the segment's size: %s", g_strerror(errno));
  unlink(path);
  req_then_end(p, X_FD_SEG, &fd, 1);
}

static void
case_seg_pipe(peer_t *p)
{
  int pv[2];
  if (pipe(pv) != 0)
    peer_die("pipe: %s", g_strerror(errno));
  req_then_end(p, X_FD_SEG, &pv[0], 1);
}

static void
case_seg_layout(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  p->seg->magic = X_MAGIC ^ 1;
  req_then_end(p, X_FD_SEG, &p->seg_fd, 1);
}

static void
case_fds_none(peer_t *p)
{
  req_then_end(p, X_FD_SEG, NULL, 0);
}

static void
case_fds_extra(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  int fds[2] = { p->seg_fd, p->seg_fd };
  req_then_end(p, X_FD_SEG, fds, 2);
}

static void
case_fds_undeclared(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  req_then_end(p, 0, &p->seg_fd, 1);
}

/* ATTACH with a "bell" that is a pipe. */
static void
case_attach_bell(peer_t *p)
{
  int pv[2];
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  if (pipe(pv) != 0 || !peer_send_req(p, X_FD_SEG, &p->seg_fd, 1) || !peer_wait_probe(p))
    peer_die("the handshake's first half");
  peer_send_attach(p, TRUE, X_FD_BELL, &pv[1], 1);
  peer_wait_end(p);
}

/* ATTACH with a "region table" of one page. */
static void
case_attach_table(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  int t = memfd_create("hostile-table", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (t < 0 || ftruncate(t, 4096) != 0 || !peer_send_req(p, X_FD_SEG, &p->seg_fd, 1) || !peer_wait_probe(p))
    peer_die("the handshake's first half");
  peer_send_attach(p, TRUE, X_FD_TABLE, &t, 1);
  peer_wait_end(p);
}

/* ATTACH saying it carries a table, with none. */
static void
case_attach_fds(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  if (!peer_send_req(p, X_FD_SEG, &p->seg_fd, 1) || !peer_wait_probe(p))
    peer_die("the handshake's first half");
  peer_send_attach(p, TRUE, X_FD_TABLE, NULL, 0);
  peer_wait_end(p);
}

/* REQ, then silence: no ATTACH.  The socket stays open until "bye". */
static void
case_stall_attach(peer_t *p)
{
  peer_seg_new(p, X_SEG_SIZE, MFD_ALLOW_SEALING, SEALED);
  if (!peer_send_req(p, X_FD_SEG, &p->seg_fd, 1) || !peer_wait_probe(p))
    peer_die("the handshake's first half");
  peer_say("stalled");
}

/* A whole handshake, then silence: neither the socket nor the ring is
 * read, and the socket stays open until "bye" (then the process exits:
 * an EOF). */
static void
case_stall_established(peer_t *p)
{
  if (peer_connect(p, FALSE, SEALED))
    peer_say("stalled");
}

/* Takes the target's first frame, as a live peer does, then nothing
 * more, while it lives: the target's timeout breaks the connection. */
static void
case_stall_midway(peer_t *p)
{
  x_frame_t f;
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_say("check took-first=%s", peer_frame_next(p, &f, LINE_MS) ? "yes" : "no");
  peer_say("stalled");
  peer_wait_end(p);
}

/* ---- trust ---- */

static const char *
errno_name(int e)
{
  switch (e) {
  case 0: return "ok";
  case EPERM: return "EPERM";
  case EACCES: return "EACCES";
  case EBUSY: return "EBUSY";
  case EINVAL: return "EINVAL";
  case EBADF: return "EBADF";
  default: return g_strerror(e);
  }
}

/* The error of a call returning @r (-1 and errno) as a word. */
#define CALL_ERRNO(r) ((r) == -1 ? errno_name(errno) : "ok")

/* The segment: the target sealed it against shrinking as it mapped it. */
static void
attack_segment(peer_t *p)
{
  int r = ftruncate(p->seg_fd, X_SEG_SIZE / 2);
  peer_say("check seg-ftruncate=%s", CALL_ERRNO(r));
}

/* The region table a trusted peer is given: readable, and nothing else. */
static void
attack_table(peer_t *p, int fd)
{
  size_t size = X_MR_CAP * sizeof(x_mr_entry_t);
  void *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  peer_say("check table-mmap-write=%s", w == MAP_FAILED ? errno_name(errno) : "ok");
  if (w != MAP_FAILED)
    munmap(w, size);
  x_mr_entry_t junk;
  memset(&junk, 0xee, sizeof(junk));
  ssize_t n = pwrite(fd, &junk, sizeof(junk), sizeof(junk));
  peer_say("check table-write=%s", n < 0 ? errno_name(errno) : "ok");
  int r = ftruncate(fd, 0);
  peer_say("check table-ftruncate=%s", CALL_ERRNO(r));
  const x_mr_entry_t *t = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (t == MAP_FAILED) {
    peer_say("check table-mmap-read=%s", errno_name(errno));
    return;
  }
  r = mprotect((void *) t, size, PROT_READ | PROT_WRITE);
  peer_say("check table-mprotect=%s", CALL_ERRNO(r));
  /* The entry of the target's buffer says what the go line said. */
  const x_mr_entry_t *e = &t[KEY_INDEX(p->rkey)];
  peer_say("check table-entry=%s", e->valid && e->key == KEY_TAG(p->rkey) && e->addr == p->addr &&
                              e->length == p->len ? "ok" : "wrong");
  munmap((void *) t, size);
}

/* A trusted peer: REP brings the target's region table and bell. */
static void
case_trust_sealed(peer_t *p)
{
  if (!peer_connect(p, TRUE, 0))
    return;
  attack_segment(p);
  if (p->rep_mask & X_FD_TABLE)
    attack_table(p, p->rep_fds[0]);
  peer_finish(p);
}

/* Asks to map the target's regions: @keys of them. */
static void
map_ask(peer_t *p, const uint64_t *keys, int n)
{
  for (int i = 0; i < n; i++) {
    x_msg_t m = { .type = X_MAP_REQ, .mr_index = KEY_INDEX(keys[i]), .mr_key = KEY_TAG(keys[i]) };
    peer_send_msg(p, &m, NULL, 0);
  }
}

/* An untrusted peer (its proof 0, or a target that trusts nobody): no
 * descriptor with REP, and a mapping request of keys it guessed breaks
 * the connection. */
static void
case_trust_untrusted(peer_t *p, gboolean prove)
{
  if (!peer_connect(p, prove, 0))
    return;
  attack_segment(p);
  uint64_t guessed[] = { p->rkey, KEY_MAKE(1, 7) };
  map_ask(p, guessed, G_N_ELEMENTS(guessed));
  peer_wait_end(p);
}

static void
case_trust_proof_zero(peer_t *p)
{
  case_trust_untrusted(p, FALSE);
}

static void
case_trust_off(peer_t *p)
{
  case_trust_untrusted(p, TRUE);
}

/* A trusted peer asks to map a region with local rights only, one with
 * remote rights in the heap (not a memfd) and one that does not exist:
 * each is answered, with no descriptor. */
static void
case_map_refused(peer_t *p)
{
  if (!peer_connect(p, TRUE, SEALED))
    return;
  static const char *const what[] = { "local", "heap", "none" };
  uint64_t keys[] = { p->local, p->rkey, KEY_MAKE(0xfffffu, 3) };
  map_ask(p, keys, 3);
  for (int i = 0; i < 3; i++) {
    x_msg_t m;
    int fds[4], nfds;
    if (!peer_expect_msg(p, X_MAP_REP, &m, fds, &nfds))
      break;
    const char *w = m.mr_index == KEY_INDEX(keys[0]) ? what[0] : m.mr_index == KEY_INDEX(keys[1]) ? what[1] :
                    m.mr_index == KEY_INDEX(keys[2]) ? what[2] : "other";
    peer_say("check map-%s=%d", w, nfds);
    for (int j = 0; j < nfds; j++)
      close(fds[j]);
  }
  peer_finish(p);
}

/* ---- socket messages of a connected peer ---- */

static void
case_msg_short(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  uint64_t magic = X_MAGIC;
  peer_send_raw(p, &magic, sizeof(magic), NULL, 0);
  peer_wait_end(p);
}

static void
case_msg_magic(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_msg_t m = { .magic = X_MAGIC ^ 0x01000000u, .type = X_DOORBELL };
  peer_send_raw(p, &m, X_MSG_MIN, NULL, 0);
  peer_wait_end(p);
}

/* pdata_len says more than the message holds. */
static void
case_msg_pdata(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_msg_t m = { .magic = X_MAGIC, .type = X_DISC, .pdata_len = 200 };
  peer_send_raw(p, &m, X_MSG_MIN + 10, NULL, 0);
  peer_wait_end(p);
}

static void
case_msg_type(peer_t *p)
{
  if (peer_connect(p, FALSE, SEALED))
    peer_finish(p);
}

static void
case_msg_rep(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_msg_t m = { .type = X_REP, .qpn = 1 };
  peer_send_msg(p, &m, NULL, 0);
  peer_wait_end(p);
}

/* A second REQ, with a segment, on the established connection. */
static void
case_msg_req(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  int fd = p->seg_fd;
  peer_send_req(p, X_FD_SEG, &fd, 1);
  peer_wait_end(p);
}

/* A UD service request on an established connection (a listener's first
 * message only). */
static void
case_msg_sidr(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_msg_t m = { .type = X_SIDR_REQ, .pers = EMUL_PERS_IB };
  peer_send_msg(p, &m, NULL, 0);
  peer_wait_end(p);
}

/* The peer process exits while a child it forked keeps the connection's
 * socket (and reads it to its end): the target must end the connection
 * at the exit, not at the socket's EOF, which never comes. */
static void
case_exit_forked(peer_t *p)
{
  if (!peer_connect(p, TRUE, 0))
    return;
  fflush(stdout);
  pid_t c = fork();
  if (c < 0)
    peer_die("fork: %s", g_strerror(errno));
  if (c > 0)
    _exit(0);
  peer_wait_end(p);
}

/* The handshake's messages again, once established. */
static void
case_msg_attach(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_send_attach(p, FALSE, 0, NULL, 0);
  peer_wait_end(p);
}

static void
case_msg_probe(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_msg_t m = { .type = X_PROBE };
  peer_send_msg(p, &m, NULL, 0);
  peer_wait_end(p);
}

static void
case_msg_rtu(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_msg_t m = { .type = X_RTU };
  peer_send_msg(p, &m, NULL, 0);
  peer_wait_end(p);
}

/* ---- malformed frames ---- */

static void
bad_frame(peer_t *p, const x_frame_t *f)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, f, NULL);
  peer_wait_end(p);
}

static void
case_frame_frag(peer_t *p)
{
  bad_frame(p, &(x_frame_t) { .op = X_OP_SEND, .frag_len = X_FRAG_MAX + X_LINE,
                              .byte_len = X_FRAG_MAX + X_LINE, .total = X_FRAG_MAX + X_LINE });
}

static void
case_frame_short_frag(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  /* The header alone: the target must refuse the length before it reads. */
  x_short_t h = { .op = X_OP_SEND_SHORT, .len = X_FRAG_MAX + 1 };
  peer_ring_write(p, p->tail + 8, (const uint8_t *) &h + 8, sizeof(h) - 8);
  peer_mark_store(p, p->tail, p->tail ^ p->key_out);
  p->tail += X_LINE;
  peer_doorbell(p);
  peer_wait_end(p);
}

static void
case_frame_op(peer_t *p)
{
  bad_frame(p, &(x_frame_t) { .op = 42 });
}

static void
case_frame_cont(peer_t *p)
{
  uint8_t junk[16] = { 0 };
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_CONT, .frag_len = sizeof(junk) }, junk);
  peer_wait_end(p);
}

static void
case_frame_total(peer_t *p)
{
  static uint8_t junk[4096];
  if (!peer_connect(p, FALSE, SEALED))
    return;
  uint64_t total = (UINT64_C(1) << 30) + 4096 + 1;  /* the longest message, and a byte */
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_SEND, .frag_len = sizeof(junk), .byte_len = (uint32_t) total,
                                 .total = total }, junk);
  peer_wait_end(p);
}

/* A continuation longer than what is left of its message. */
static void
case_frame_overrun(peer_t *p)
{
  static uint8_t junk[8192];
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_frame_t first = { .op = X_OP_SEND, .frag_len = 4096, .byte_len = 8192, .total = 8192 };
  peer_frame_put(p, &first, junk, TRUE);
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_CONT, .frag_len = 8192 }, junk);
  peer_wait_end(p);
}

/* A new message before the one being assembled is whole. */
static void
case_frame_interleave(peer_t *p)
{
  static uint8_t junk[4096];
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_frame_t first = { .op = X_OP_SEND, .frag_len = 4096, .byte_len = 8192, .total = 8192 };
  peer_frame_put(p, &first, junk, TRUE);
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_SEND, .seq = 1, .frag_len = 64, .byte_len = 64, .total = 64 },
                  junk);
  peer_wait_end(p);
}

/* A Send whose message length (byte_len) is not what it carries. */
static void
case_frame_length(peer_t *p)
{
  uint8_t junk[64] = { 0 };
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_SEND, .frag_len = 64, .byte_len = 128, .total = 64 }, junk);
  peer_wait_end(p);
}

/* Immediate data (X_F_IMM) as a well-formed peer never sends it: with a
 * payload, with a Send's other flags, on a Read, or wider than the
 * InfiniBand personality's 32 bits. */
static void
case_imm_payload(peer_t *p)
{
  uint8_t junk[64] = { 0 };
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_SEND, .flags = X_F_IMM, .frag_len = 64, .byte_len = 64,
                                 .total = 64, .cmp = 7 }, junk);
  peer_wait_end(p);
}

static void
case_imm_inv(peer_t *p)
{
  bad_frame(p, &(x_frame_t) { .op = X_OP_SEND, .flags = X_F_IMM | X_F_INV, .rkey = p->rkey, .cmp = 7 });
}

static void
case_imm_read(peer_t *p)
{
  bad_frame(p, &(x_frame_t) { .op = X_OP_READ, .flags = X_F_IMM, .byte_len = 64, .raddr = p->addr,
                              .rkey = p->rkey, .cmp = 7 });
}

static void
case_imm_wide(peer_t *p)
{
  bad_frame(p, &(x_frame_t) { .op = X_OP_SEND, .flags = X_F_IMM, .cmp = UINT64_C(1) << 32 });
}

static void
case_imm_write_wide(peer_t *p)
{
  uint8_t junk[64];
  memset(junk, 0xee, sizeof(junk));  /* the target's buffer must not hold it */
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_WRITE, .flags = X_F_IMM, .frag_len = 64, .total = 64,
                                 .raddr = p->addr, .rkey = p->rkey, .cmp = UINT64_MAX }, junk);
  peer_wait_end(p);
}

/* Well-formed immediate data (seq 0) to an iWARP target with no receive
 * posted: a Terminate (RFC 5041 7.2), a BREAK naming it; a Write's bytes
 * (0xee) land nowhere, its receive being checked first. */
static void
imm_no_recv(peer_t *p, gboolean write)
{
  uint8_t junk[64];
  memset(junk, 0xee, sizeof(junk));
  if (!peer_connect(p, FALSE, SEALED))
    return;
  x_frame_t f = { .op = X_OP_SEND, .flags = X_F_IMM, .cmp = UINT64_MAX };
  if (write)
    f = (x_frame_t) { .op = X_OP_WRITE, .flags = X_F_IMM, .frag_len = 64, .total = 64, .raddr = p->addr,
                      .rkey = p->rkey, .cmp = UINT64_MAX };
  peer_frame_ring(p, &f, write ? junk : NULL);
  peer_wait_end(p);
  if (p->broke)
    peer_say("check break-seq=%s", p->break_seq == 0 ? "match" : "other");
}

static void
case_imm_no_recv(peer_t *p)
{
  imm_no_recv(p, FALSE);
}

static void
case_imm_write_no_recv(peer_t *p)
{
  imm_no_recv(p, TRUE);
}

/* ---- answers to requests the target never issued, or not so ---- */

static void
case_answer_ack(peer_t *p)
{
  bad_frame(p, &(x_frame_t) { .op = X_OP_ACK, .seq = 1000, .byte_len = 8 });
}

static void
case_answer_read_resp(peer_t *p)
{
  uint8_t junk[64];
  memset(junk, 0xee, sizeof(junk));
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_READ_RESP, .seq = 1000, .frag_len = 64, .byte_len = 64,
                                 .total = 64 }, junk);
  peer_wait_end(p);
}

/* The target's RDMA Read (the first frame it puts in its ring): its
 * sequence number; says "read=none" when it did not come. */
static gboolean
target_read(peer_t *p, x_frame_t *f)
{
  while (peer_frame_next(p, f, LINE_MS))
    if (f->op == X_OP_READ)
      return TRUE;
  peer_say("check read=none");
  return FALSE;
}

/* A Read Response longer than the Read asked for (byte_len and total
 * agree, as a well-formed frame's do): the bytes past the sink must land
 * nowhere, and the Read must not complete with more than it asked. */
static void
case_answer_long(peer_t *p)
{
  static uint8_t junk[4096];
  memset(junk, 0xee, sizeof(junk));
  x_frame_t r;
  if (!peer_connect(p, FALSE, SEALED) || !target_read(p, &r))
    return;
  peer_say("check read-len=%u", r.byte_len);
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_READ_RESP, .seq = r.seq, .frag_len = sizeof(junk),
                                 .byte_len = sizeof(junk), .total = sizeof(junk) }, junk);
  g_free(peer_hear(LINE_MS));  /* "publish": the target looked at its Read */
  peer_finish(p);
}

/* An ACK frame (no bytes) answering the target's RDMA Read. */
static void
case_answer_ack_read(peer_t *p)
{
  x_frame_t r;
  if (!peer_connect(p, FALSE, SEALED) || !target_read(p, &r))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_ACK, .seq = r.seq, .byte_len = r.byte_len }, NULL);
  g_free(peer_hear(LINE_MS));
  peer_finish(p);
}

/* ---- bounce-mode RDMA with keys and addresses the target must refuse ---- */

static void aim(peer_t *p, x_frame_t *f);

/* One good RDMA Write of 64 bytes (0x5c) at the buffer's start, acknowledged
 * by the target's ACK word; then the case's request (seq 1: an RDMA Write
 * of its length, in frames of X_FRAG_MAX, or an RDMA Read), its key and
 * address aimed by the case (aim).  The target refuses it: a BREAK naming
 * it, and nothing lands outside its regions. */
static void
case_rdma(peer_t *p)
{
  uint8_t good[64];
  memset(good, 0x5c, sizeof(good));
  if (!peer_connect(p, FALSE, SEALED))
    return;
  peer_frame_ring(p, &(x_frame_t) { .op = X_OP_WRITE, .seq = 0, .frag_len = 64, .total = 64, .raddr = p->addr,
                                 .rkey = p->rkey }, good);
  gint64 end = g_get_monotonic_time() + (gint64) LINE_MS * 1000;
  while (__atomic_load_n(&p->seg->ring[1].acked, __ATOMIC_ACQUIRE) < 1 && g_get_monotonic_time() < end)
    g_usleep(200);
  peer_say("check good-write=%s", p->seg->ring[1].acked >= 1 ? "acked" : "not-acked");
  x_frame_t bad = { .op = X_OP_WRITE, .seq = 1 };
  uint64_t payload = 0;
  if (peer_the_case->read) {
    bad.op = X_OP_READ;
    bad.byte_len = (uint32_t) peer_the_case->len;
  } else {
    payload = peer_the_case->len;
    bad.total = payload;
    bad.frag_len = (uint32_t) MIN(payload, (uint64_t) X_FRAG_MAX);
  }
  aim(p, &bad);
  uint8_t *junk = payload > 0 ? g_malloc(payload) : NULL;
  if (junk != NULL)
    memset(junk, 0xee, payload);
  peer_frame_put(p, &bad, junk, TRUE);
  for (uint64_t done = bad.frag_len; done < payload;) {
    uint32_t n = (uint32_t) MIN(payload - done, (uint64_t) X_FRAG_MAX);
    peer_frame_put(p, &(x_frame_t) { .op = X_OP_CONT, .frag_len = n }, junk + done, TRUE);
    done += n;
  }
  peer_doorbell(p);
  g_free(junk);
  peer_wait_end(p);
  if (p->broke)
    peer_say("check break-seq=%s", p->break_seq == 1 ? "match" : "other");
}

/* ---- floods ---- */

/* Sends of @len bytes, one after another, with no receive posted at the
 * target, until it closes the connection (or @max of them). */
static void
flood_sends(peer_t *p, uint32_t len, unsigned max)
{
  uint8_t *junk = g_malloc0(MAX(len, 1u));
  unsigned sent = 0;
  if (!peer_connect(p, FALSE, SEALED))
    return;
  for (; sent < max; sent++) {
    x_frame_t f = { .op = X_OP_SEND, .seq = sent, .frag_len = len, .byte_len = len, .total = len };
    uint64_t at = len <= X_FRAG_MAX / 2 ? peer_short_put(p, sent, junk, len, TRUE) :
                  peer_frame_put(p, &f, junk, TRUE);
    if (at == G_MAXUINT64)
      break;  /* no room: the target stopped taking frames */
    if (sent % 64 == 63)
      peer_doorbell(p);
  }
  peer_doorbell(p);
  g_free(junk);
  peer_say("check flood-stopped=%s", sent < max ? "yes" : "no");
  peer_wait_end(p);
}

static void
case_flood_sends(peer_t *p)
{
  flood_sends(p, X_FRAG_MAX, 4096);  /* 256 MiB */
}

static void
case_flood_tiny(peer_t *p)
{
  flood_sends(p, 8, EMUL_MAX_QP_WR + 64);
}

/* One Send of @total bytes in frames of X_FRAG_MAX, no receive posted:
 * the target holds what it assembled until the last frame. */
static void
case_flood_long(peer_t *p)
{
  uint64_t total = UINT64_C(128) << 20;
  static uint8_t junk[X_FRAG_MAX];
  if (!peer_connect(p, FALSE, SEALED))
    return;
  uint64_t done = 0;
  x_frame_t first = { .op = X_OP_SEND, .frag_len = X_FRAG_MAX, .byte_len = (uint32_t) total, .total = total };
  uint64_t at = peer_frame_put(p, &first, junk, TRUE);
  for (done = X_FRAG_MAX; at != G_MAXUINT64 && done < total; done += X_FRAG_MAX) {
    at = peer_frame_put(p, &(x_frame_t) { .op = X_OP_CONT, .frag_len = X_FRAG_MAX }, junk, TRUE);
    if ((done / X_FRAG_MAX) % 8 == 0)
      peer_doorbell(p);
  }
  peer_doorbell(p);
  peer_say("check flood-stopped=%s", done < total ? "yes" : "no");
  peer_wait_end(p);
}

/* RDMA Reads of the target's whole buffer, far past any IRD, with the
 * target's ring never read (its answers have nowhere to go). */
static void
case_flood_reads(peer_t *p)
{
  if (!peer_connect(p, FALSE, SEALED))
    return;
  unsigned sent = 0;
  for (; sent < 2048; sent++) {
    x_frame_t f = { .op = X_OP_READ, .seq = sent, .byte_len = (uint32_t) p->len, .raddr = p->addr,
                    .rkey = p->rkey };
    if (peer_frame_put(p, &f, NULL, TRUE) == G_MAXUINT64)
      break;
    if (sent % 64 == 63)
      peer_doorbell(p);
  }
  peer_doorbell(p);
  peer_say("check flood-stopped=%s", sent < 2048 ? "yes" : "no");
  peer_wait_end(p);
}

/* ---- the ring's own rules ---- */

#define RW_SENDS 16
#define RW_LEN 64

/* RW_SENDS Sends of RW_LEN bytes, published, while a thread rewrites each
 * one's header (length, op) over and over for 300 ms. */
typedef struct {
  peer_t *p;
  uint64_t first, last;
  gint stop;
} rewriter_t;

static gpointer
rewrite_run(gpointer data)
{
  rewriter_t *r = data;
  uint32_t k = 1;
  while (!g_atomic_int_get(&r->stop)) {
    for (uint64_t pos = r->first; pos < r->last; pos += ROUND_LINE(sizeof(x_short_t) + RW_LEN)) {
      x_short_t *h = (x_short_t *) (r->p->out + (pos & (X_RING_SIZE - 1)));
      k = k * 1103515245u + 12345u;
      __atomic_store_n(&h->len, (k >> 8) % 3 == 0 ? RW_LEN : (k >> 8) % 3 == 1 ? X_FRAG_MAX : 40000u,
                       __ATOMIC_RELAXED);
      __atomic_store_n(&h->op, (k >> 20) % 4 == 0 ? 42u : X_OP_SEND_SHORT, __ATOMIC_RELAXED);
    }
  }
  return NULL;
}

static void
case_ring_rewrite(peer_t *p)
{
  uint8_t data[RW_LEN];
  if (!peer_connect(p, FALSE, SEALED))
    return;
  rewriter_t r = { .p = p, .first = p->tail };
  GThread *t = NULL;
  for (unsigned k = 0; k < RW_SENDS; k++) {
    memset(data, 0x30 + k, sizeof(data));
    peer_short_put(p, k, data, RW_LEN, FALSE);
  }
  r.last = p->tail;
  t = g_thread_new("rewrite", rewrite_run, &r);
  for (uint64_t pos = r.first; pos < r.last; pos += ROUND_LINE(sizeof(x_short_t) + RW_LEN)) {
    peer_mark_store(p, pos, pos ^ p->key_out);
    peer_doorbell(p);
    g_usleep(5000);
  }
  g_usleep(300000);
  g_atomic_int_set(&r.stop, 1);
  g_thread_join(t);
  peer_finish(p);
}

/* A Send written but for its mark: the target waits; then the mark. */
static void
case_ring_half(peer_t *p)
{
  uint8_t data[RW_LEN];
  memset(data, 0x61, sizeof(data));
  if (!peer_connect(p, FALSE, SEALED))
    return;
  uint64_t pos = peer_short_put(p, 0, data, RW_LEN, FALSE);
  peer_doorbell(p);
  peer_say("half-written");
  peer_hear_want("publish");
  peer_mark_store(p, pos, pos ^ p->key_out);
  peer_doorbell(p);
  peer_say("published");
  peer_hear_want("publish");
  peer_finish(p);
}

/* Two Sends, the second published and the first marked for a later lap
 * of the ring (its position + X_RING_SIZE): the target waits for the
 * first; then its right mark, and both land, in order. */
static void
case_ring_order(peer_t *p)
{
  uint8_t a[RW_LEN], b[RW_LEN];
  memset(a, 0x41, sizeof(a));
  memset(b, 0x42, sizeof(b));
  if (!peer_connect(p, FALSE, SEALED))
    return;
  uint64_t pa = peer_short_put(p, 0, a, RW_LEN, FALSE);
  peer_short_put(p, 1, b, RW_LEN, TRUE);
  peer_mark_store(p, pa, (pa + X_RING_SIZE) ^ p->key_out);
  peer_doorbell(p);
  peer_say("out-of-order");
  peer_hear_want("publish");
  peer_mark_store(p, pa, pa ^ p->key_out);
  peer_doorbell(p);
  peer_say("published");
  peer_hear_want("publish");
  peer_finish(p);
}

const peer_case_t peer_cases[] = {
  { .name = "segment-short", .run = case_seg_short },
  { .name = "segment-unsealable", .run = case_seg_unsealable },
  { .name = "segment-file", .run = case_seg_file },
  { .name = "segment-pipe", .run = case_seg_pipe },
  { .name = "segment-layout", .run = case_seg_layout },
  { .name = "fds-none", .run = case_fds_none },
  { .name = "fds-extra", .run = case_fds_extra },
  { .name = "fds-undeclared", .run = case_fds_undeclared },
  { .name = "attach-bell", .run = case_attach_bell },
  { .name = "attach-table", .run = case_attach_table },
  { .name = "attach-fds", .run = case_attach_fds },
  { .name = "stall-attach", .run = case_stall_attach },
  { .name = "stall-established", .run = case_stall_established },
  { .name = "stall-established-iwarp", .run = case_stall_established, .iwarp = TRUE },
  { .name = "stall-midway", .run = case_stall_midway },
  { .name = "trust-sealed", .run = case_trust_sealed },
  { .name = "trust-proof-zero", .run = case_trust_proof_zero },
  { .name = "trust-off", .run = case_trust_off },
  { .name = "map-refused", .run = case_map_refused },
  { .name = "msg-short", .run = case_msg_short },
  { .name = "msg-magic", .run = case_msg_magic },
  { .name = "msg-pdata", .run = case_msg_pdata },
  { .name = "msg-type", .run = case_msg_type },
  { .name = "msg-rep", .run = case_msg_rep },
  { .name = "msg-req", .run = case_msg_req },
  { .name = "msg-rtu", .run = case_msg_rtu },
  { .name = "msg-sidr", .run = case_msg_sidr },
  { .name = "exit-forked", .run = case_exit_forked },
  { .name = "msg-attach", .run = case_msg_attach },
  { .name = "msg-probe", .run = case_msg_probe },
  { .name = "frame-frag", .run = case_frame_frag },
  { .name = "frame-short-frag", .run = case_frame_short_frag },
  { .name = "frame-op", .run = case_frame_op },
  { .name = "frame-cont", .run = case_frame_cont },
  { .name = "frame-total", .run = case_frame_total },
  { .name = "frame-overrun", .run = case_frame_overrun },
  { .name = "frame-interleave", .run = case_frame_interleave },
  { .name = "frame-length", .run = case_frame_length },
  { .name = "imm-payload", .run = case_imm_payload },
  { .name = "imm-inv", .run = case_imm_inv },
  { .name = "imm-read", .run = case_imm_read },
  { .name = "imm-wide", .run = case_imm_wide },
  { .name = "imm-write-wide", .run = case_imm_write_wide },
  { .name = "imm-no-recv-iwarp", .run = case_imm_no_recv, .iwarp = TRUE },
  { .name = "imm-write-no-recv-iwarp", .run = case_imm_write_no_recv, .iwarp = TRUE },
  { .name = "answer-ack", .run = case_answer_ack },
  { .name = "answer-read-resp", .run = case_answer_read_resp },
  { .name = "answer-long", .run = case_answer_long },
  { .name = "answer-ack-read", .run = case_answer_ack_read },
  { .name = "write-index", .run = case_rdma, .len = 64, .key = 1 },
  { .name = "write-stale", .run = case_rdma, .len = 64, .key = 2 },
  { .name = "write-foreign", .run = case_rdma, .len = 64, .key = 3 },
  { .name = "write-past-end", .run = case_rdma, .len = 64, .where = 1 },
  { .name = "write-before", .run = case_rdma, .len = 64, .where = 2 },
  { .name = "write-long", .run = case_rdma, .len = 2 * X_FRAG_MAX + 100 },
  { .name = "read-index", .run = case_rdma, .read = TRUE, .len = 64, .key = 1 },
  { .name = "read-stale", .run = case_rdma, .read = TRUE, .len = 64, .key = 2 },
  { .name = "read-foreign", .run = case_rdma, .read = TRUE, .len = 64, .key = 3 },
  { .name = "read-past-end", .run = case_rdma, .read = TRUE, .len = 64, .where = 1 },
  { .name = "read-wrap", .run = case_rdma, .read = TRUE, .len = 64, .where = 3 },
  { .name = "read-huge", .run = case_rdma, .read = TRUE, .len = 0xffffffffu },
  { .name = "flood-sends", .run = case_flood_sends },
  { .name = "flood-tiny", .run = case_flood_tiny },
  { .name = "flood-long", .run = case_flood_long },
  { .name = "flood-reads", .run = case_flood_reads },
  { .name = "ring-rewrite", .run = case_ring_rewrite },
  { .name = "ring-half", .run = case_ring_half },
  { .name = "ring-order", .run = case_ring_order },
};

const size_t peer_ncases = G_N_ELEMENTS(peer_cases);
const peer_case_t *peer_the_case;

/* The key and address the case's refused request names (case_rdma). */
static void
aim(peer_t *p, x_frame_t *f)
{
  uint64_t far = KEY_MAKE(0xffffffu, KEY_TAG(p->rkey));  /* the key's tag, an index past X_MR_CAP */
  const uint64_t keys[] = { p->rkey, far, p->stale, p->foreign };
  uint64_t n = f->op == X_OP_READ ? f->byte_len : f->total;
  f->rkey = keys[peer_the_case->key];
  switch (peer_the_case->where) {
  case 1: f->raddr = p->addr + p->len - n / 2; break;
  case 2: f->raddr = p->addr - 64; break;
  case 3: f->raddr = G_MAXUINT64 - 31; break;
  default: f->raddr = p->addr; break;
  }
}
