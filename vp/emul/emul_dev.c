/*
 * vp/emul device: fabric, devices, protection domains, the personalities
 * and the capability record built from them, and the thread that delivers
 * deferred upcalls.
 *
 * Devices: emul0 (InfiniBand personality, or the one ITAPI_EMUL_PERSONALITY
 * names: ib or iwarp, read at each open), emul-ib0 (always InfiniBand) and
 * emul-iw0 (always iWARP).  All share one fabric and one port space.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "emul.h"

emul_fabric_t emul_fabric;
__thread gboolean emul_fabric_mine __attribute__((tls_model("initial-exec")));

__thread emul_xconn_t *emul_events_after __attribute__((tls_model("initial-exec")));

struct emul_upcall {
  emul_dev_t *dev;
  gboolean is_cm;
  rnicpi_async_event_t async;
  rnicpi_cm_event_t cm;
};

static gpointer
emul_event_thread(gpointer unused)
{
  (void) unused;
  for (;;) {
    /* The thread also ends the connects whose timeout passed. */
    gint64 wait = emul_cm_expire();
    emul_upcall_t *u = wait < 0 ? g_async_queue_pop(emul_fabric.events)
                                : g_async_queue_timeout_pop(emul_fabric.events, (guint64) wait);
    if (u == NULL || u->dev == NULL) { /* a deadline, or emul_events_wake */
      g_free(u);
      continue;
    }
    g_mutex_lock(&emul_fabric.deliver_lock);
    if (!u->dev->closed) {
      if (u->is_cm)
        u->dev->up.cm_event(u->dev->base.al_ctx, &u->cm);
      else
        u->dev->up.async_event(u->dev->base.al_ctx, &u->async);
    }
    g_mutex_unlock(&emul_fabric.deliver_lock);
    emul_dev_unref(u->dev);
    g_free(u);
  }
  return NULL;
}

static gpointer
emul_fabric_do_init(gpointer unused)
{
  (void) unused;
  g_mutex_init(&emul_fabric.deliver_lock);
  emul_fabric.mr_len = 1;  /* slot 0 names no region */
  /* Reserved, not committed: a page of slots is memory once a slot in it
   * is used.  Where the address space is limited (ulimit -v), fewer slots:
   * registrations past them are refused (RNICPI_ELIMIT). */
  for (uint32_t cap = EMUL_MR_MAX; cap >= 4096 && emul_fabric.mr_tab == NULL; cap /= 2) {
    void *t = mmap(NULL, (size_t) cap * sizeof(emul_mr_t *), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t != MAP_FAILED) {
      emul_fabric.mr_tab = t;
      emul_fabric.mr_cap = cap;
    }
  }
  if (emul_fabric.mr_tab == NULL)
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING,
          "emul: no address space for the region table (mmap of 32 KiB failed: %s): every "
          "registration will be refused; raise the process's address-space limit (ulimit -v)",
          g_strerror(errno));
  emul_fabric.links = g_ptr_array_new();
  emul_fabric.cqs = g_ptr_array_new();
  emul_fabric.mr_gen = 1;
  emul_fabric.free_mr = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  emul_fabric.slot_tag = g_array_new(FALSE, TRUE, sizeof(emul_slot_tag_t));
  emul_fabric.listeners = g_hash_table_new(g_direct_hash, g_direct_equal);
  emul_fabric.conns = g_hash_table_new(g_int64_hash, g_int64_equal);
  emul_fabric.next_conn_id = 1;
  emul_fabric.next_qpn = 1;
  emul_fabric.events = g_async_queue_new();
  emul_fabric.ud_qps = g_hash_table_new(g_direct_hash, g_direct_equal);
  emul_fabric.ud_svc = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
  pthread_atfork(NULL, NULL, emul_random_forget);
  GThread *t = g_thread_new("emul-events", emul_event_thread, NULL);
  g_thread_unref(t);
  return NULL;
}

void
emul_fabric_init(void)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, emul_fabric_do_init, NULL);
}

void
emul_dev_ref(emul_dev_t *dev)
{
  g_atomic_int_inc(&dev->ref);
}

void
emul_dev_unref(emul_dev_t *dev)
{
  if (g_atomic_int_dec_and_test(&dev->ref))
    g_free(dev);
}

void
emul_events_raise(emul_upcall_t *u)
{
  g_async_queue_push(emul_fabric.events, u);
}

static void
defer(emul_upcall_t *u)
{
  if (emul_events_after == NULL || !emul_ring_msgs_then(emul_events_after, u))
    emul_events_raise(u);
}

void
emul_defer_cm(emul_dev_t *dev, const rnicpi_cm_event_t *ev)
{
  emul_upcall_t *u = g_new0(emul_upcall_t, 1);
  emul_dev_ref(dev);
  u->dev = dev;
  u->is_cm = TRUE;
  u->cm = *ev;
  defer(u);
}

void
emul_events_wake(void)
{
  g_async_queue_push(emul_fabric.events, g_new0(emul_upcall_t, 1));
}

void
emul_defer_async(emul_dev_t *dev, rnicpi_async_type_t type, uint64_t ctx,
                 rnicpi_async_cause_t cause)
{
  emul_upcall_t *u = g_new0(emul_upcall_t, 1);
  emul_dev_ref(dev);
  u->dev = dev;
  u->async = rnicpi_async_event(type, ctx, cause);
  defer(u);
}

void
emul_qp_async(emul_qp_t *qp, rnicpi_async_cause_t cause)
{
  emul_defer_async(emul_qp_dev(qp), rnicpi_async_type_of(cause), qp->base.al_ctx, cause);
}

/*
 * The personalities: everything that differs between an InfiniBand HCA and
 * an iWARP RNIC as far as IT-API can see it (reference/rnicpi.md part B).
 *
 * InfiniBand: IBTA CM private data (REQ 92, REP 196, REJ 148, DREQ 220,
 * SIDR REQ 216, SIDR REP 136 bytes), REQ/REP/RTU, atomics, a read sink
 * needs local write only, multi-SGE read sinks, 32-bit keys as an R_Key
 * (24-bit index, 8-bit key, below), a Send with no receive waits (RNR
 * retry without limit), disconnect (DREQ) flushes what is outstanding.
 *
 * iWARP, as vp/iwarp and siw (RFC 5040/5041/5044/6581): MPA private data
 * 512 bytes minus the RFC 6581 IRD/ORD word on connect, accept and reject
 * and none on disconnect (a TCP FIN), two-way only, no atomics or UD
 * (unless ITAPI_EMUL_RFC7306 turns on the RFC 7306 atomics, used where
 * both ends have it), the Read Response is a tagged
 * write into the sink (RFC 5040 4.4: the sink region needs remote write),
 * one sink SGE per Read, 32-bit STags (24-bit index, 8-bit key), a Send
 * with no receive posted ends the stream with a Terminate (RFC 5041 7.2),
 * and disconnect is graceful: the FIN follows the outstanding requests.
 *
 * UD (IBTA 9.8, 10.2.4, 12.11 SIDR) on the InfiniBand personality only, in
 * one process (emul_ud.c): RDMAC verbs and RFC 5040 define no datagram
 * service, so the iWARP personality leaves RNICPI_CAP_UD clear.
 *
 * Immediate data (RNIC-PI 1.5) on both: InfiniBand's 32 bits (the ImmDt
 * header), in the completion alone; iWARP's 8 bytes (RFC 7306 6.3: always
 * on here, as every emul peer has it), also placed in a receive buffer
 * that holds them.
 *
 * Common to both: RC, CM verbs, IRD/ORD negotiated and enforced (ORD 0
 * refuses Reads and atomics at post, IRD 0 at the responder fails them
 * remotely), zero-based and VA-based regions, flush on error, CQ overflow
 * detection, SRQ (RNIC-PI 1.1), local and remote invalidation of
 * memory windows (RNIC-PI 1.2), fast registration, local invalidation of
 * fast-registered regions, RDMA Reads into windows and Read with Local
 * Invalidate (RNIC-PI 1.4; in-process only, like windows); no pinning
 * (RNIC-PI 1.8): data moves by CPU copies and cross-memory attach, so a
 * region's pages may be paged like any other.  Real
 * InfiniBand has no Read with Invalidate (an iWARP verb); the emulated
 * HCA offers it so that both personalities run the same IT-API calls.  Windows: InfiniBand has both types (type
 * 2 narrow, type 1 wide); iWARP only the QP-bound window of the RDMAC verbs
 * (narrow), never on a zero-based region (RDMAC verbs 7.2.7;
 * RNICPI_CAP_MW_NEEDS_VA_REGION, which the bind below reads too).
 */
#define EMUL_COMMON_CAPS (RNICPI_CAP_RC | RNICPI_CAP_SRQ | RNICPI_CAP_CM_VERBS | RNICPI_CAP_IRD_ORD_NEGOTIATED | \
                          RNICPI_CAP_ZERO_BASED | RNICPI_CAP_FLUSH_ON_ERROR |              \
                          RNICPI_CAP_CQ_OVERFLOW_DETECT | RNICPI_CAP_MW_NARROW |          \
                          RNICPI_CAP_LOCAL_INVALIDATE | RNICPI_CAP_REMOTE_INVALIDATE |    \
                          RNICPI_CAP_FAST_REGISTER | RNICPI_CAP_READ_SINK_MW |           \
                          RNICPI_CAP_PLACED_COMPLETION | RNICPI_CAP_NO_PIN |             \
                          RNICPI_CAP_IMMEDIATE)

/* A key layout: the index field @ibits wide at @ishift, the tag @tbits
 * wide at @tshift (each at most 32 bits).
 *
 * Both personalities' keys are 32 bits, as an R_Key (IBTA) and an STag
 * (RFC 5040) are, and as DAT's DAT_RMR_CONTEXT must hold: a
 * 24-bit index above an 8-bit key, the layout of rxe (index << 8 | key)
 * and of the RDMAC verbs' STag.  The index field must reach every slot of
 * the region table, which regions and windows share across the process's
 * devices (EMUL_MR_MAX, 2^24 slots, the max_mr the record advertises):
 * 24 bits, which leaves 8 for the part a peer cannot derive from the
 * index.  A narrower index would buy random bits only by advertising, and
 * reserving, fewer regions than a large HCA offers (mlx5: 2^24).  What
 * tags a slot's keys take: emul_slot_new_tag. */
#define EMUL_FIELD_MASK32(bits) ((uint32_t) ((UINT64_C(1) << (bits)) - 1))
#define EMUL_KEY_LAYOUT(ishift, ibits, tshift, tbits)                                     \
  .index_shift = (ishift), .tag_shift = (tshift),                                         \
  .index_mask = EMUL_FIELD_MASK32(ibits), .tag_mask = EMUL_FIELD_MASK32(tbits),           \
  .key_bits = ((uint64_t) EMUL_FIELD_MASK32(ibits) << (ishift)) |                         \
              ((uint64_t) EMUL_FIELD_MASK32(tbits) << (tshift))

const emul_pers_t emul_pers[EMUL_PERS_COUNT] = {
  [EMUL_PERS_IB] = {
    .id = EMUL_PERS_IB, .name = "ib", .device = "emul-ib0", .what = "InfiniBand",
    .transport = RNICPI_TRANSPORT_IB, .path_format = RNICPI_PATH_GID,
    .features = EMUL_COMMON_CAPS | RNICPI_CAP_THREE_WAY | RNICPI_CAP_ATOMICS | RNICPI_CAP_MW_WIDE |
                RNICPI_CAP_UD,
    .pdata_connect = 92, .pdata_accept = 196, .pdata_reject = 148, .pdata_disconnect = 220,
    .pdata_ud_req = 216, .pdata_ud_rep = 136,
    .max_rdma_read_sge = 32,
    EMUL_KEY_LAYOUT(8, 24, 0, 8), .tag_step_random = TRUE,
    .read_sink_need = RNICPI_ACCESS_LOCAL_WRITE,
    .rnr_wait = TRUE,
    .imm_mask = UINT32_MAX, .imm_placed = FALSE,
    .drain_on_disconnect = FALSE,
  },
  [EMUL_PERS_IWARP] = {
    .id = EMUL_PERS_IWARP, .name = "iwarp", .device = "emul-iw0", .what = "iWARP",
    .transport = RNICPI_TRANSPORT_IWARP, .path_format = RNICPI_PATH_IP,
    .features = EMUL_COMMON_CAPS | RNICPI_CAP_READ_SINK_REMOTE_WRITE | RNICPI_CAP_MW_NEEDS_VA_REGION,
    .pdata_connect = RNICPI_MAX_PDATA - 4, .pdata_accept = RNICPI_MAX_PDATA - 4,
    .pdata_reject = RNICPI_MAX_PDATA - 4, .pdata_disconnect = 0,
    .pdata_ud_req = 0, .pdata_ud_rep = 0,
    /* One sink STag and TO per wire Read (RFC 5040 6.1); the Read is
     * scattered here as an RNIC-PI provider splits it over wire Reads:
     * each segment needs read_sink_need, each run of contiguous segments
     * counts against the ORD (read_sink_per_run).  32, as the send
     * limit and the InfiniBand row. */
    .max_rdma_read_sge = 32,
    EMUL_KEY_LAYOUT(8, 24, 0, 8), .tag_step_random = FALSE,
    .read_sink_need = RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE,
    .read_sink_per_run = TRUE,
    .rnr_wait = FALSE,
    .imm_mask = UINT64_MAX, .imm_placed = TRUE,
    .drain_on_disconnect = TRUE,
  },
};

/* Rights the local gather/scatter list of @op needs. */
uint32_t
emul_pers_local_need(const emul_pers_t *p, rnicpi_wr_opcode_t op)
{
  switch (op) {
  case RNICPI_WR_RDMA_READ:
  case RNICPI_WR_RDMA_READ_INV:
    return p->read_sink_need;
  case RNICPI_WR_ATOMIC_CMP_SWP:
  case RNICPI_WR_ATOMIC_FETCH_ADD:
    return RNICPI_ACCESS_LOCAL_WRITE;
  default:
    return RNICPI_ACCESS_LOCAL_READ;
  }
}

static void
emul_fill_caps(rnicpi_caps_t *c, const emul_pers_t *p)
{
  memset(c, 0, sizeof(*c));
  c->size = sizeof(*c);
  c->transport = p->transport;
  c->path_format = p->path_format;
  c->features = p->features;
  c->sw_major = 0;
  c->sw_minor = 1;
  c->pdata_connect = p->pdata_connect;
  c->pdata_accept = p->pdata_accept;
  c->pdata_reject = p->pdata_reject;
  c->pdata_disconnect = p->pdata_disconnect;
  c->pdata_ud_req = p->pdata_ud_req;
  c->pdata_ud_rep = p->pdata_ud_rep;
  /* Reads in flight cost a work request each at the requester and an
   * answer at the responder (bounded in bytes: emul_ring_exec_in); rxe
   * offers 128, and applications written for large HCAs ask up to 256. */
  c->max_ird = 256;
  c->max_ord = 256;
  c->max_qp = 1u << 16;
  c->max_qp_wr = EMUL_MAX_QP_WR;
  c->max_cq = 1u << 16;
  c->max_cqe = 1u << 20;
  c->max_mr = MIN(1u << 24, p->index_mask);
  c->max_pd = 1u << 16;
  c->max_srq = 1u << 16;
  c->max_send_sge = 32;
  c->max_recv_sge = 32;
  c->max_rdma_write_sge = 32;
  c->max_rdma_read_sge = p->max_rdma_read_sge;
  c->max_inline = 0;
  c->max_msg_size = 1u << 30;
  c->max_mr_size = UINT64_C(1) << 40;
  c->num_ports = 1;
  c->ud_mtu = (p->features & RNICPI_CAP_UD) ? EMUL_UD_MTU : 0;
  /* The loopback addresses it answers on (emul_addr_is_ours). */
  c->num_addrs = 2;
  emul_cm_loopback(&c->addrs[0], FALSE);
  emul_cm_loopback(&c->addrs[1], TRUE);
}

/* ITAPI_EMUL_RFC7306=1: devices of the iWARP personality opened from now
 * on offer the RFC 7306 atomics (Atomic Request and Response; its
 * Immediate Data is always offered).  A connection uses them
 * only when both ends offer them, as an RNIC negotiates the option with
 * its peer; toward one that does not, an atomic is refused at post. */
static gboolean
emul_rfc7306_on(void)
{
  const char *env = g_getenv("ITAPI_EMUL_RFC7306");
  return env != NULL && g_strcmp0(env, "0") != 0 && *env != '\0';
}

/* emul0's personality: ITAPI_EMUL_PERSONALITY, InfiniBand by default. */
static const emul_pers_t *
emul0_pers(void)
{
  const char *env = g_getenv("ITAPI_EMUL_PERSONALITY");
  if (env == NULL || *env == '\0')
    return &emul_pers[EMUL_PERS_IB];
  for (int i = 0; i < EMUL_PERS_COUNT; i++)
    if (g_ascii_strcasecmp(env, emul_pers[i].name) == 0)
      return &emul_pers[i];
  static gsize warned;
  if (g_once_init_enter(&warned)) {
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING,
          "ITAPI_EMUL_PERSONALITY=%s is neither 'ib' nor 'iwarp'; emul0 stays InfiniBand", env);
    g_once_init_leave(&warned, 1);
  }
  return &emul_pers[EMUL_PERS_IB];
}

static rnicpi_status_t
emul_list(char (*names)[64], size_t *count)
{
  const char *all[] = { "emul0", emul_pers[EMUL_PERS_IB].device, emul_pers[EMUL_PERS_IWARP].device };
  for (size_t i = 0; i < G_N_ELEMENTS(all) && i < *count; i++)
    g_strlcpy(names[i], all[i], 64);
  *count = G_N_ELEMENTS(all);
  return RNICPI_OK;
}

static rnicpi_status_t
emul_open(const char *name, const rnicpi_upcalls_t *up, void *ctx, rnicpi_dev_t **out)
{
  const emul_pers_t *pers = NULL;
  if (g_strcmp0(name, "emul0") == 0)
    pers = emul0_pers();
  for (int i = 0; i < EMUL_PERS_COUNT && pers == NULL; i++)
    if (g_strcmp0(name, emul_pers[i].device) == 0)
      pers = &emul_pers[i];
  if (pers == NULL)
    return RNICPI_ENOENT;
  emul_fabric_init();
  emul_dev_t *dev = g_new0(emul_dev_t, 1);
  dev->ref = 1;
  dev->up = *up;
  dev->base.prov = &RNICPI_PROVIDER_SELF(emul);
  dev->base.al_ctx = ctx;
  dev->pers = pers;
  emul_fill_caps(&dev->caps, pers);
  if (pers->id == EMUL_PERS_IWARP && emul_rfc7306_on())
    dev->caps.features |= RNICPI_CAP_ATOMICS;
  *out = &dev->base;
  return RNICPI_OK;
}

static void
emul_close(rnicpi_dev_t *d)
{
  emul_dev_t *dev = to_emul_dev(d);
  /* Wait for upcalls in progress, then let none through. */
  rnicpi_notify_quiesce(&dev->notifying);
  g_mutex_lock(&emul_fabric.deliver_lock);
  dev->closed = TRUE;
  g_mutex_unlock(&emul_fabric.deliver_lock);
  emul_dev_unref(dev);
}

static rnicpi_status_t
emul_query(rnicpi_dev_t *d, rnicpi_caps_t *caps)
{
  *caps = to_emul_dev(d)->caps;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_pd_alloc(rnicpi_dev_t *d, rnicpi_pd_t **out)
{
  emul_dev_t *dev = to_emul_dev(d);
  if (!rnicpi_count_take(&dev->npd, dev->caps.max_pd))
    return RNICPI_ELIMIT;
  emul_pd_t *pd = g_new0(emul_pd_t, 1);
  pd->base.dev = d;
  emul_fabric_lock();
  pd->id = ++emul_fabric.next_pd_id;
  emul_fabric_unlock();
  *out = &pd->base;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_pd_free(rnicpi_pd_t *p)
{
  emul_pd_t *pd = to_emul_pd(p);
  if (g_atomic_int_get(&pd->nobj) != 0)
    return RNICPI_EBUSY;
  rnicpi_count_put(&to_emul_dev(p->dev)->npd);
  g_free(pd);
  return RNICPI_OK;
}

/* RNIC-PI 1.12: this provider's settings that give a capability, for the
 * access layer's messages (it names no provider's variables itself). */
static rnicpi_status_t
emul_cap_advice(rnicpi_dev_t *d, uint64_t cap, char *advice, size_t len)
{
  const emul_pers_t *p = to_emul_dev(d)->pers;
  if (p->id == EMUL_PERS_IWARP && cap == RNICPI_CAP_ATOMICS) {
    /* emul_rfc7306_on(): read at each open, used where both ends have it. */
    g_strlcpy(advice, "the RFC 7306 atomics of emul's iWARP personality need ITAPI_EMUL_RFC7306=1 in the "
              "processes at both ends before they open the interface", len);
    return RNICPI_OK;
  }
  return RNICPI_ENOENT;
}

const rnicpi_device_ops_t emul_device_ops = {
  .size = sizeof(rnicpi_device_ops_t),
  .list = emul_list,
  .open = emul_open,
  .close = emul_close,
  .query = emul_query,
  .pd_alloc = emul_pd_alloc,
  .pd_free = emul_pd_free,
  .cap_advice = emul_cap_advice,
};

RNICPI_PROVIDER_DEFINE(emul) = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = RNICPI_ABI_MINOR,
  .name = "emul",
  .version = "0.1",
  .description = "software RNIC over memory (InfiniBand and iWARP personalities)",
  .probe = NULL,
  .device = &emul_device_ops,
  .mem = &emul_mem_ops,
  .queue = &emul_queue_ops,
  .data = &emul_data_ops,
  .cm = &emul_cm_ops,
  .sock = NULL,
  .srq = &emul_srq_ops,
  .mw = &emul_mw_ops,
  .ud = &emul_ud_ops,
};
