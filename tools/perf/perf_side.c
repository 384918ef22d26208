/*
 * itapi-perf: one side of a connection: errors, data patterns, the
 * accounting of completions, set-up and tear-down.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *const mem_kind_names[3] = { [MEM_ITX] = "itx", [MEM_SHARED] = "shared",
                                        [MEM_PRIVATE] = "private" };

const test_desc_t tests[NTESTS] = {
  { "send_lat", OP_SEND, false },  { "write_lat", OP_WRITE, false },
  { "read_lat", OP_READ, false },  { "send_bw", OP_SEND, true },
  { "write_bw", OP_WRITE, true },  { "read_bw", OP_READ, true },
};

void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs(progress_drawn ? "\r\033[K" PROG ": " : PROG ": ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

/* Byte j is b + 7 j.  Filled and checked 16 bytes at a time (GCC and
 * Clang vector extensions): the peer waits while we do it, so at 1 MiB a
 * byte loop would show in the latency of the next iteration. */
typedef unsigned char v16_t __attribute__((vector_size(16)));

static v16_t
v16_start(unsigned char b)
{
  v16_t v;
  for (int i = 0; i < 16; i++)
    v[i] = (unsigned char) (b + i * 7);
  return v;
}

void
fill(unsigned char *p, size_t n, uint64_t it, unsigned who)
{
  unsigned char b = (unsigned char) (it * 13 + who * 101);
  v16_t v = v16_start(b), step = v16_start(0) * 0 + 16 * 7;
  size_t j = 0;
  for (; j + 16 <= n; j += 16, v += step)
    memcpy(p + j, &v, 16);
  for (; j < n; j++)
    p[j] = (unsigned char) (b + j * 7);
  p[n - 1] = tag_of(it);
}

/* Index of the first byte that is not the pattern, or n. */
static size_t
first_bad(const unsigned char *p, size_t n, uint64_t it, unsigned who)
{
  unsigned char b = (unsigned char) (it * 13 + who * 101), acc = 0;
  v16_t v = v16_start(b), step = v16_start(0) * 0 + 16 * 7, vacc = v16_start(0) * 0;
  size_t j = 0;
  for (; j + 16 < n; j += 16, v += step) { /* stops short of the tag byte */
    v16_t x;
    memcpy(&x, p + j, 16);
    vacc |= x ^ v;
  }
  for (int i = 0; i < 16; i++)
    acc |= vacc[i];
  for (; j + 1 < n; j++)
    acc |= p[j] ^ (unsigned char) (b + j * 7);
  acc |= p[n - 1] ^ tag_of(it);
  if (acc == 0)
    return n;
  for (j = 0; j + 1 < n && p[j] == (unsigned char) (b + j * 7); j++)
    ;
  return j;
}

/* `it` selects the pattern; `shown` is the iteration the message names. */
void
verify(const unsigned char *p, size_t n, uint64_t it, unsigned who, const char *test,
       const char *role, uint64_t shown, bool settle)
{
  size_t j = first_bad(p, n, it, who);
  /* Nothing orders the placement of an RDMA Write's bytes (perftest's
   * last-byte poll only assumes it): give a write still landing 100 ms to
   * settle before calling its data wrong. */
  for (uint64_t until = settle ? now_ns() + 100000000u : 0; j < n && now_ns() < until;) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    j = first_bad(p, n, it, who);
  }
  if (j == n)
    return;
  unsigned char want = j + 1 == n ? tag_of(it) : (unsigned char) (it * 13 + who * 101 + j * 7);
  die("data verification failed (%s): %s, %zu bytes, iteration %llu: byte %zu is 0x%02x, "
      "expected 0x%02x", role, test, n, (unsigned long long) shown, j, p[j], want);
}

void
check_deadline(side_t *s, uint64_t deadline, const char *what)
{
  if (deadline != 0 && now_ns() > deadline)
    die("%s: timed out after %g s waiting for %s (see --timeout)", s->role,
        s->timeout_ns / 1e9, what);
}

/* A connection that breaks mid-test flushes our WRs, but a side that only
 * polls memory (write_lat) would never see that: look at the CM stream. */
void
check_connection(side_t *s)
{
  it_event_t ev;
  if (!s->connected)
    return;
  it_status_t st = it_evd_dequeue(s->cm_evd, &ev);
  if (st == IT_ERR_QUEUE_EMPTY)
    return;
  if (st != IT_SUCCESS)
    it_die("it_evd_dequeue", st);
  die("%s: connection lost during the run: %s", s->role, itx_event_name(ev.event_number));
}

void
spin_check(side_t *s, unsigned spin, uint64_t *deadline, const char *what)
{
  if (spin % 4096 != 0)
    return;
  check_connection(s);
  if (deadline == NULL)
    return;
  if (*deadline == 0 && s->timeout_ns)
    *deadline = now_ns() + s->timeout_ns;
  check_deadline(s, *deadline, what);
}

void
account_event(side_t *s, const it_event_t *ev)
{
  const it_dto_cmpl_event_t *d = &ev->dto_cmpl;
  uint64_t kind = d->cookie >> 56, seq = d->cookie & CK_SEQ_MASK;
  if (d->dto_status != IT_DTO_SUCCESS)
    die("%s: %s (cookie kind %llu, #%llu) completed with %s", s->role,
        itx_event_name(ev->event_number), (unsigned long long) kind, (unsigned long long) seq,
        itx_dto_status_name(d->dto_status));
  switch (ev->event_number) {
  case IT_DTO_SEND_CMPL_EVENT:
  case IT_DTO_RDMA_WRITE_CMPL_EVENT:
  case IT_DTO_RDMA_READ_CMPL_EVENT:
    if (kind != CK_SQ || seq < s->sq_done || seq >= s->sq_posted)
      die("%s: send-queue completion #%llu out of order (done %llu, posted %llu)", s->role,
          (unsigned long long) seq, (unsigned long long) s->sq_done,
          (unsigned long long) s->sq_posted);
    s->sq_done = seq + 1;
    break;
  case IT_DTO_RC_RECV_CMPL_EVENT:
    if (kind == CK_CTRL_RECV) {
      ctrl_msg_t m;
      memcpy(&m, s->mem + OFF_CTRL_RECV + seq * CTRL_SLOT, sizeof(m));
      if (d->transferred_length != sizeof(m) || ntohl(m.magic) != WIRE_MAGIC)
        die("%s: malformed control message (%u bytes)", s->role, d->transferred_length);
      ctrl_msg_t *q = &s->ctrl_q[(s->ctrl_head + s->ctrl_count++) % NCTRL_RECV];
      q->type = ntohl(m.type);
      q->test = ntohl(m.test);
      q->flags = ntohl(m.flags);
      q->size = it_ntoh64(m.size);
      q->iters = it_ntoh64(m.iters);
      q->base = it_ntoh64(m.base);
    } else if (kind == CK_DATA_RECV && seq == s->data_recvd) {
      if (s->expect_len != SIZE_MAX && d->transferred_length != s->expect_len)
        die("%s: receive #%llu got %u bytes, expected %zu", s->role, (unsigned long long) seq,
            d->transferred_length, s->expect_len);
      s->data_recvd++;
    } else {
      die("%s: unexpected receive completion (kind %llu, #%llu)", s->role,
          (unsigned long long) kind, (unsigned long long) seq);
    }
    break;
  default:
    die("%s: unexpected event %s on the DTO EVD", s->role, itx_event_name(ev->event_number));
  }
}

/* Take one completion and account for it.  Returns false only when
 * !block and none is queued.  `how` says whether a blocking wait sleeps
 * and whether --timeout bounds it (wait_t); it does not matter unless
 * `block`. */
bool
pump(side_t *s, bool block, wait_t how, const char *what)
{
  it_event_t ev;
  /* The deadline is taken when a wait turns out long (a blocking wait's
   * first slice, a busy poll's 4096th empty look), not on entry: a clock
   * read inside every sample is the cost of a system call where the
   * clocksource has no vDSO path (hpet, as in the lab VM: ~1 us). */
  uint64_t deadline = 0;
  bool due = how == WAIT_DUE;
  if (block && (s->event_mode || how == WAIT_IDLE)) {
    for (;;) {
      size_t more;
      it_status_t st = it_evd_wait(s->dto_evd, WAIT_SLICE_US, &ev, &more);
      if (st == IT_SUCCESS)
        break;
      if (st != IT_ERR_TIMEOUT_EXPIRED)
        it_die("it_evd_wait", st);
      check_connection(s);
      if (deadline == 0 && s->timeout_ns)
        deadline = now_ns() + s->timeout_ns;
      if (due)
        check_deadline(s, deadline, what);
    }
  } else {
    for (unsigned spin = 1;; spin++) {
      it_status_t st = it_evd_dequeue(s->dto_evd, &ev);
      if (st == IT_SUCCESS)
        break;
      if (st != IT_ERR_QUEUE_EMPTY)
        it_die("it_evd_dequeue", st);
      if (!block)
        return false;
      spin_check(s, spin, due ? &deadline : NULL, what);
    }
  }
  account_event(s, &ev);
  return true;
}

void
sq_wait(side_t *s, uint64_t count, const char *what)
{
  if (count > s->sq_signaled)
    die("internal error: waiting for send-queue WR %llu, but the last signaled one is %llu",
        (unsigned long long) count, (unsigned long long) s->sq_signaled);
  while (s->sq_done < count)
    pump(s, true, WAIT_DUE, what);
}

/* Post one send-queue WR; returns its sequence number + 1, the count that
 * sq_wait() needs to know it is done. */
uint64_t
sq_post(side_t *s, op_t op, size_t local_off, size_t len, uint64_t remote_addr, bool signaled)
{
  while (s->sq_posted - s->sq_done >= s->sq_depth)
    sq_wait(s, s->sq_done + 1, "room in the send queue");
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = s->mem + local_off, .length = len };
  it_dto_cookie_t ck = COOKIE(CK_SQ, s->sq_posted);
  it_dto_flags_t fl = signaled ? IT_COMPLETION_FLAG : 0;
  switch (op) {
  case OP_SEND: IT(it_post_send, s->ep, &t, 1, ck, fl); break;
  case OP_WRITE: IT(it_post_rdma_write, s->ep, &t, 1, ck, fl, remote_addr, s->peer_context); break;
  case OP_READ: IT(it_post_rdma_read, s->ep, &t, 1, ck, fl, remote_addr, s->peer_context); break;
  }
  s->sq_posted++;
  if (signaled)
    s->sq_signaled = s->sq_posted;
  return s->sq_posted;
}

/* Send with credits (iWARP has no receiver-not-ready retry: a send that
 * finds no receive breaks the connection).  The credit is the number of
 * data receives the receiving side has posted, RDMA-written into the
 * sender's credit word; a sender sends message k only once the credit
 * exceeds k. */
void
publish_credit(side_t *s)
{
  unsigned k = s->credit_next++ % NCREDIT_SRC;
  sq_wait(s, s->credit_src_seq[k], "a credit write");
  uint64_t v = it_hton64(s->data_recv_posted);
  memcpy(s->mem + OFF_CREDIT_SRC + 8 * k, &v, 8);
  s->credit_src_seq[k] = sq_post(s, OP_WRITE, OFF_CREDIT_SRC + 8 * k, 8,
                                 s->peer_addr + OFF_CREDIT, true);
}

uint64_t
read_credit(side_t *s)
{
  uint64_t v;
  __atomic_load((uint64_t *) (void *) (s->mem + OFF_CREDIT), &v, __ATOMIC_ACQUIRE);
  return it_ntoh64(v);
}

/* Where @s's receives go: its SRQ, or its EP. */
static it_handle_t
recv_handle(const side_t *s)
{
  return s->srq != IT_NULL_HANDLE ? (it_handle_t) s->srq : (it_handle_t) s->ep;
}

void
post_data_recv(side_t *s, int k, size_t len)
{
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = target(s, k), .length = len };
  IT(it_post_recv, recv_handle(s), &t, 1, COOKIE(CK_DATA_RECV, s->data_recv_posted), IT_COMPLETION_FLAG);
  s->data_recv_posted++;
}

void
post_ctrl_recv(side_t *s)
{
  unsigned slot = s->ctrl_recv_next++ % NCTRL_RECV;
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = s->mem + OFF_CTRL_RECV + slot * CTRL_SLOT,
                         .length = CTRL_SLOT };
  IT(it_post_recv, recv_handle(s), &t, 1, COOKIE(CK_CTRL_RECV, slot), IT_COMPLETION_FLAG);
}

void
send_ctrl(side_t *s, msg_type_t type, unsigned test, unsigned flags, uint64_t size,
          uint64_t iters, uint64_t base)
{
  unsigned slot = s->ctrl_send_next++ % 2;
  sq_wait(s, s->ctrl_send_seq[slot], "a control send");
  ctrl_msg_t m = { htonl(WIRE_MAGIC), htonl(type), htonl(test), htonl(flags),
                   it_hton64(size), it_hton64(iters), it_hton64(base) };
  memcpy(s->mem + OFF_CTRL_SEND + slot * CTRL_SLOT, &m, sizeof(m));
  s->ctrl_send_seq[slot] = sq_post(s, OP_SEND, OFF_CTRL_SEND + slot * CTRL_SLOT, sizeof(m), 0, true);
}

ctrl_msg_t
wait_ctrl(side_t *s, wait_t how, const char *what)
{
  while (s->ctrl_count == 0)
    pump(s, true, how, what);
  ctrl_msg_t m = s->ctrl_q[s->ctrl_head];
  s->ctrl_head = (s->ctrl_head + 1) % NCTRL_RECV;
  s->ctrl_count--;
  return m;
}

it_event_t
wait_cm(side_t *s, it_evd_handle_t evd, it_event_type_t want, bool forever, const char *what)
{
  it_event_t ev;
  size_t more;
  IT(it_evd_wait, evd, forever ? IT_TIMEOUT_INFINITE : s->timeout_ns / 1000, &ev, &more);
  if (ev.event_number == want)
    return ev;
  if (ev.event_number == IT_CM_MSG_CONN_PEER_REJECT_EVENT)
    die("%s: the server rejected the connection%s%.*s", s->role,
        ev.conn.private_data_present ? ": " : "", IT_MAX_PRIV_DATA,
        ev.conn.private_data_present ? (const char *) ev.conn.private_data : "");
  if (ev.event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT) {
    die("%s: the connection was refused (reject reason: %s): no server listens at that address "
        "and port, or the interface cannot reach it (an in-process interface such as emul "
        "reaches only its own process: use loopback mode)", s->role,
        tool_reject_reason(ev.conn.reject_reason_code));
  }
  die("%s: expected %s while %s, got %s", s->role, itx_event_name(want), what,
      itx_event_name(ev.event_number));
}

void
open_ia(side_t *s, const char *ia_name, it_ia_info_t **info)
{
  IT(it_ia_create, ia_name, 2, 1, &s->ia);
  IT(it_pz_create, s->ia, &s->pz);
  IT(it_evd_create, s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
     &s->cm_evd, NULL);
  IT(it_ia_query, s->ia, info);
}

static size_t
round_up(size_t n, size_t to)
{
  return (n + to - 1) / to * to;
}

/* Buffer, LMR, DTO EVD and EP, sized for `window` WRs of up to `max_size`. */
void
open_ep(side_t *s, size_t max_size, uint32_t window)
{
  s->slot = round_up(max_size, 4096);
  s->mem_len = OFF_DATA + 3 * s->slot;
  s->mem_fd = -1;
  switch (s->mem_kind) {
  case MEM_ITX: {
    /* What the provider reaches fastest: on vp/emul a sealed memfd it maps
     * into the peer process (one-sided RDMA by memcpy). */
    void *p = NULL;
    it_status_t st = itx_mem_alloc(s->ia, s->mem_len, &p);
    if (st != IT_SUCCESS)
      die("%s: itx_mem_alloc of %zu bytes for the buffers: %s (%s); try --mem private", s->role,
          s->mem_len, itx_status_name(st), itx_error_detail());
    s->mem = p;
    break;
  }
  case MEM_SHARED:
    /* A memfd that may be sealed, made here: what itx_mem_alloc gives on
     * vp/emul, whatever the provider (doc/provider-emul.md). */
    s->mem_fd = memfd_create("itapi-perf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (s->mem_fd < 0 || ftruncate(s->mem_fd, (off_t) s->mem_len) != 0)
      die("%s: no memfd of %zu bytes for the buffers (%s); try --mem private", s->role, s->mem_len,
          strerror(errno));
    s->mem = mmap(NULL, s->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->mem_fd, 0);
    if (s->mem == MAP_FAILED)
      die("%s: cannot map %zu bytes of buffers (%s); try --mem private", s->role, s->mem_len,
          strerror(errno));
    break;
  case MEM_PRIVATE:
    s->mem = aligned_alloc(4096, s->mem_len);
    if (s->mem == NULL)
      die("%s: out of memory for %zu bytes of buffers", s->role, s->mem_len);
    break;
  }
  memset(s->mem, 0, s->mem_len);
  IT(it_lmr_create, s->pz, s->mem, NULL, s->mem_len, IT_ADDR_MODE_ABSOLUTE,
     IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE, 0, &s->lmr, &s->context);

  /* Room for the window plus control sends and credit writes; the server
   * keeps two windows of receives posted so a sender never waits for one. */
  s->sq_depth = window + 16;
  s->rq_depth = 2 * (size_t) window + NCTRL_RECV + 4;
  IT(it_evd_create, s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT,
     s->sq_depth + s->rq_depth + 16, 1, IT_NULL_HANDLE, &s->dto_evd, NULL);

  it_ep_attributes_t a;
  tool_rc_attr(&a, max_size, s->sq_depth, s->rq_depth);
  it_ep_rc_creation_flags_t flags = IT_EP_NO_FLAG;
  if (s->use_srq) {
    it_status_t st = it_srq_create(s->pz, 1, s->rq_depth, &s->srq);
    if (st != IT_SUCCESS)
      die("%s: it_srq_create of %zu receives returned %s (%s): --srq needs an interface with "
          "shared receive queues (itapi-info: srq_support)", s->role, s->rq_depth,
          itx_status_name(st), itx_error_detail());
    a.srv.rc.srq = s->srq;
    flags = IT_EP_SRQ;
  }
  /* No attribute publishes the adapter's maximum read depth: start at 16
   * (what RNICs commonly allow) and halve until the adapter accepts. */
  for (uint32_t depth = 16;; depth /= 2) {
    a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = depth;
    it_status_t st = it_ep_rc_create(s->pz, s->dto_evd, s->dto_evd, s->cm_evd, flags, &a, &s->ep);
    if (st == IT_SUCCESS)
      break;
    if (depth == 1 || (st != IT_ERR_RESOURCE_IRD && st != IT_ERR_RESOURCE_ORD))
      it_die("it_ep_rc_create", st);
  }
}

void
free_buffers(side_t *s)
{
  if (s->mem == NULL)
    return;
  switch (s->mem_kind) {
  case MEM_ITX:
    IT(itx_mem_free, s->mem);
    break;
  case MEM_SHARED:
    munmap(s->mem, s->mem_len);
    close(s->mem_fd);
    break;
  case MEM_PRIVATE:
    free(s->mem);
    break;
  }
  s->mem = NULL;
}

void
close_side(side_t *s)
{
  if (s->ep != IT_NULL_HANDLE)
    IT(it_ep_free, s->ep);
  if (s->lmr != IT_NULL_HANDLE)
    IT(it_lmr_free, s->lmr);
  if (s->listener != IT_NULL_HANDLE)
    IT(it_listen_free, s->listener);
  IT(it_ia_free, s->ia); /* frees the EVDs and the PZ with it */
  free_buffers(s);
}

void
check_size_limits(const it_ia_info_t *info, size_t max_size, const char *who)
{
  if (info->num_spigots == 0)
    die("%s: interface %s has no spigot", who, info->ia_name);
  const it_spigot_info_t *sp = &info->spigot_info[0];
  size_t lim = sp->max_rc_send_len < sp->max_rc_rdma_len ? sp->max_rc_send_len : sp->max_rc_rdma_len;
  if (max_size > lim)
    die("%s: %zu-byte messages exceed interface %s's limit of %zu bytes "
        "(max_rc_send_len/max_rc_rdma_len)", who, max_size, info->ia_name, lim);
}
