/*
 * itapi-perf -T N --ud: the datagram rate of N threads of one process,
 * each with two unreliable-datagram endpoints of its own on one interface
 * (ud_bw): what the stack's locking lets threads do at once when they send
 * datagrams.  Each thread sends to its own receiving endpoint through an
 * address handle for the interface's own address, keeps its receives two
 * windows ahead of what it took (a datagram that finds none is dropped,
 * and so never counted) and reaps both EVDs, busy-polling.  The rate is
 * the datagrams received by all threads over the longest thread's time;
 * the last one of each run is checked byte by byte.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include "../tool_addr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UD_GRH 40          /* every datagram receive starts with the 40-byte GRH */
#define UD_QKEY 0x1dab0001u
#define UD_WARMUP_MSGS 2000

typedef struct {
  const config_t *cfg;
  it_ia_handle_t ia;
  unsigned index;
  pthread_barrier_t *barrier;
  char role[32];
  it_pz_handle_t pz;
  it_evd_handle_t evd;           /* both endpoints' completions */
  it_ep_handle_t tx, rx;
  it_addr_handle_t ah;
  it_dg_remote_ep_addr_t dst;    /* the receiving endpoint */
  unsigned char *mem;            /* the source, then 2 * window receive slots */
  size_t slot;                   /* UD_GRH + the largest size */
  it_lmr_handle_t lmr;
  uint64_t sent, sent_done, recv_posted, recvd;
  uint64_t last_cookie;          /* the receive slot of the last datagram taken */
  uint64_t msgs[MAX_SIZES], ns[MAX_SIZES];
} ud_thread_t;

static uint32_t
ud_slots(const ud_thread_t *u)
{
  return 2 * u->cfg->window;
}

static void
ud_open(ud_thread_t *u, size_t max_size)
{
  const config_t *cfg = u->cfg;
  IT(it_pz_create, u->ia, &u->pz);
  uint32_t depth = 4 * cfg->window + 16;
  IT(it_evd_create, u->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, depth, 1, IT_NULL_HANDLE,
     &u->evd, NULL);
  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  a.max_dto_payload_size = max_size;
  a.max_request_dtos = cfg->window;
  a.max_recv_dtos = ud_slots(u);
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  a.srv.ud.ep_info.ud_ep_key = UD_QKEY;
  IT(it_ep_ud_create, u->pz, u->evd, u->evd, &a, 0, &u->tx);
  IT(it_ep_ud_create, u->pz, u->evd, u->evd, &a, 0, &u->rx);
  it_ep_param_t p;
  IT(it_ep_query, u->rx, IT_EP_PARAM_ALL, &p);

  it_net_addr_t self;
  IT(tool_self_addr, u->ia, &self);
  it_path_t path;
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, u->ia, 0, &self, &npaths, &total, &path);
  if (npaths < 1)
    die("%s: the interface has no path to its own address", u->role);
  IT(it_address_handle_create, u->pz, &path, 0, &u->ah);
  u->dst = (it_dg_remote_ep_addr_t) { .type = IT_DG_TYPE_IB_UD };
  u->dst.addr.ud.addr = u->ah;
  u->dst.addr.ud.ep_info.ud_ep_id = p.attr.srv.ud.ep_info.ud_ep_id;
  u->dst.addr.ud.ep_info.ud_ep_key = UD_QKEY;

  u->slot = UD_GRH + max_size;
  size_t len = u->slot * (1 + ud_slots(u));  /* the source in slot 0 */
  u->mem = aligned_alloc(4096, (len + 4095) & ~(size_t) 4095);
  if (u->mem == NULL)
    die("%s: out of memory for %zu bytes of buffers", u->role, len);
  memset(u->mem, 0, len);
  it_rmr_context_t ctx;
  IT(it_lmr_create, u->pz, u->mem, NULL, len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
     IT_LMR_FLAG_NONE, 0, &u->lmr, &ctx);
}

static void
ud_close(ud_thread_t *u)
{
  IT(it_ep_free, u->tx);
  IT(it_ep_free, u->rx);
  IT(it_address_handle_free, u->ah);
  IT(it_lmr_free, u->lmr);
  IT(it_evd_free, u->evd);
  IT(it_pz_free, u->pz);
  free(u->mem);
}

/* Receive n goes to slot n % slots; its cookie is n (sends' are ~0). */
static void
ud_post_recv(ud_thread_t *u)
{
  uint64_t n = u->recv_posted++;
  unsigned char *p = u->mem + u->slot * (1 + n % ud_slots(u));  /* slot 0 is the source */
  it_lmr_triplet_t t = { .lmr = u->lmr, .addr.abs = p, .length = u->slot };  /* any size of the run */
  IT(it_post_recvfrom, u->rx, &t, 1, n, IT_COMPLETION_FLAG);
}

static void
ud_reap(ud_thread_t *u, size_t size)
{
  it_event_t ev;
  it_status_t st;
  while ((st = it_evd_dequeue(u->evd, &ev)) == IT_SUCCESS) {
    if (ev.event_number != IT_DTO_SEND_CMPL_EVENT && ev.event_number != IT_DTO_UD_RECV_CMPL_EVENT)
      die("%s: unexpected %s on the DTO EVD", u->role, itx_event_name(ev.event_number));
    if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
      die("%s: %s completed with %s", u->role, itx_event_name(ev.event_number),
          itx_dto_status_name(ev.dto_cmpl.dto_status));
    if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
      u->sent_done = ev.dto_cmpl.cookie;  /* the count of sends up to this signaled one */
    } else {
      if (ev.all_dto_cmpl.transferred_length != UD_GRH + size)
        die("%s: a datagram of %zu bytes arrived as %zu (with its %d-byte GRH)", u->role, size,
            (size_t) ev.all_dto_cmpl.transferred_length, UD_GRH);
      u->recvd++;
      u->last_cookie = ev.dto_cmpl.cookie;
    }
  }
  if (st != IT_ERR_QUEUE_EMPTY)
    it_die("it_evd_dequeue", st);
  while (u->recv_posted < u->recvd + ud_slots(u))
    ud_post_recv(u);
}

/* Send @n datagrams (0: until @end), a window in flight and never more
 * than the receives posted; wait until each one arrived. */
static uint64_t
ud_burst(ud_thread_t *u, size_t size, uint64_t n, uint64_t end)
{
  uint32_t window = u->cfg->window, every = u->cfg->signal_every;
  uint64_t posted = 0, recvd0 = u->recvd;
  it_lmr_triplet_t src = { .lmr = u->lmr, .addr.abs = u->mem, .length = size };
  ud_reap(u, size);
  for (;;) {
    bool last = n != 0 ? posted + 1 == n : (posted & 255) == 255 && now_ns() >= end;
    while (u->sent - u->sent_done >= window || u->sent >= u->recv_posted)
      ud_reap(u, size);
    bool sig = last || (posted + 1) % every == 0;
    u->sent++;
    IT(it_post_sendto, u->tx, &src, 1, u->sent, sig ? IT_COMPLETION_FLAG : 0, &u->dst);
    posted++;
    if (last)
      break;
  }
  while (u->sent_done < u->sent || u->recvd < recvd0 + posted)
    ud_reap(u, size);
  return posted;
}

static void *
ud_thread(void *arg)
{
  ud_thread_t *u = arg;
  const config_t *cfg = u->cfg;
  size_t max_size = max_size_of(cfg);
  snprintf(u->role, sizeof(u->role), "thread %u", u->index);
  ud_open(u, max_size);
  for (size_t si = 0; si < cfg->nsizes; si++) {
    size_t size = cfg->sizes[si];
    for (size_t i = 0; i < size; i++)
      u->mem[i] = (unsigned char) (i * 7 + si + u->index);
    uint64_t warm = cfg->warmup >= 0 ? (uint64_t) cfg->warmup : UD_WARMUP_MSGS;
    if (warm > 0)
      ud_burst(u, size, warm, 0);
    pthread_barrier_wait(u->barrier);
    uint64_t t0 = now_ns();
    uint64_t end = t0 + (uint64_t) ((cfg->duration > 0 ? cfg->duration : 1.0) * 1e9);
    u->msgs[si] = ud_burst(u, size, cfg->duration > 0 ? 0 : cfg->iters, end);
    u->ns[si] = now_ns() - t0;
    /* Every datagram carried the same bytes: the last one landed whole. */
    const unsigned char *got = u->mem + u->slot * (1 + u->last_cookie % ud_slots(u)) + UD_GRH;
    if (memcmp(got, u->mem, size) != 0)
      die("%s: the last datagram of %zu bytes did not arrive as it was sent", u->role, size);
    pthread_barrier_wait(u->barrier);
  }
  ud_close(u);
  return NULL;
}

int
ud_rate_run(const config_t *cfg)
{
  unsigned nt = cfg->threads;
  it_ia_handle_t ia;
  IT(it_ia_create, cfg->ia_name, 2, 1, &ia);
  it_ia_info_t *info;
  IT(it_ia_query, ia, &info);
  if (!(info->supported_service_types & IT_UD_SERVICE))
    die("interface %s offers no unreliable-datagram service: --ud needs one (emul0, emul-ib0; "
        "see itapi-info)", info->ia_name);
  size_t mtu = info->spigot_info[0].max_ud_send_len;
  if (max_size_of(cfg) > mtu)
    die("--ud: interface %s carries datagrams of at most %zu bytes (one packet), not %zu; give -S "
        "sizes up to %zu", info->ia_name, mtu, max_size_of(cfg), mtu);
  rmr_beside_t beside;
  rmr_beside_open(cfg, ia, &beside);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, nt);
  ud_thread_t *us = calloc(nt, sizeof(*us));
  pthread_t *tids = calloc(nt, sizeof(*tids));
  if (us == NULL || tids == NULL)
    die("out of memory for %u threads", nt);
  for (unsigned i = 0; i < nt; i++)
    us[i] = (ud_thread_t) { .cfg = cfg, .ia = ia, .index = i, .barrier = &barrier };
  for (unsigned i = 0; i < nt; i++)
    if (pthread_create(&tids[i], NULL, ud_thread, &us[i]) != 0)
      die("cannot start thread %u of %u", i, nt);
  for (unsigned i = 0; i < nt; i++)
    pthread_join(tids[i], NULL);

  rate_head(cfg, info->ia_name, "two datagram endpoints of its own");
  uint64_t *msgs = calloc(nt, sizeof(*msgs)), *ns = calloc(nt, sizeof(*ns));
  if (msgs == NULL || ns == NULL)
    die("out of memory for %u threads", nt);
  for (size_t si = 0; si < cfg->nsizes; si++) {
    for (unsigned i = 0; i < nt; i++) {
      msgs[i] = us[i].msgs[si];
      ns[i] = us[i].ns[si];
    }
    rate_row(cfg, "ud_bw", cfg->sizes[si], msgs, ns, si == 0);
  }
  rate_tail(cfg);
  free(msgs);
  free(ns);
  pthread_barrier_destroy(&barrier);
  free(us);
  free(tids);
  rmr_beside_close(&beside);
  it_ia_info_free(info);
  IT(it_ia_free, ia);
  return 0;
}
