/*
 * Not-supported stubs for absent provider operations, and the completion
 * of a provider's operations tables (RNIC-PI v1: tables are size-prefixed,
 * so a provider built against an older minor has shorter tables).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "rnicpi_registry.h"
#include "rnicpi_private.h"

const char *
rnicpi_status_name(rnicpi_status_t status)
{
  switch (status) {
#define NAME(n, m) case n: return #n;
    RNICPI_STATUS_LIST(NAME)
#undef NAME
  default:
    return "RNICPI_UNKNOWN";
  }
}

const char *
rnicpi_status_message(rnicpi_status_t status)
{
  switch (status) {
#define MSG(n, m) case n: return m;
    RNICPI_STATUS_LIST(MSG)
#undef MSG
  default:
    return "unknown status";
  }
}

const char *
rnicpi_cap_name(uint64_t cap)
{
#define CAPNAME(n, b, s) if (cap == (uint64_t) n) return s;
  RNICPI_CAP_LIST(CAPNAME)
#undef CAPNAME
  return "unknown";
}

void
rnicpi_caps_complete(const rnicpi_provider_t *prov, rnicpi_caps_t *caps)
{
  /* Until 1.12 the rule of RDMAC verbs 7.2.7 (no window on a zero-based
   * region) was stated for iWARP devices, with no bit to say it. */
  if (prov->abi_minor < 12 && caps->transport == RNICPI_TRANSPORT_IWARP)
    caps->features |= RNICPI_CAP_MW_NEEDS_VA_REGION;
}

/* Stubs, one per operation signature. */
static rnicpi_status_t st_list(char (*n)[RNICPI_DEVICE_NAME_MAX], size_t *c) { (void) n; *c = 0; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_open(const char *n, const rnicpi_upcalls_t *u, void *x, rnicpi_dev_t **d)
{ (void) n; (void) u; (void) x; (void) d; return RNICPI_ENOTSUP; }
static void st_close(rnicpi_dev_t *d) { (void) d; }
static rnicpi_status_t st_query(rnicpi_dev_t *d, rnicpi_caps_t *c) { (void) d; (void) c; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_pd_alloc(rnicpi_dev_t *d, rnicpi_pd_t **p) { (void) d; (void) p; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_pd_free(rnicpi_pd_t *p) { (void) p; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_list_refused(char (*n)[RNICPI_DEVICE_NAME_MAX], char (*r)[RNICPI_REASON_MAX], size_t *c)
{ (void) n; (void) r; *c = 0; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_cap_advice(rnicpi_dev_t *d, uint64_t c, char *a, size_t n)
{ (void) d; (void) c; (void) a; (void) n; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_mr_reg(rnicpi_pd_t *p, const rnicpi_mr_attr_t *a, rnicpi_mr_t **m)
{ (void) p; (void) a; (void) m; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_mr_modify(rnicpi_mr_t *m, uint32_t a) { (void) m; (void) a; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_mr_dereg(rnicpi_mr_t *m) { (void) m; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_mr_alloc(rnicpi_pd_t *p, uint32_t n, rnicpi_mr_t **m)
{ (void) p; (void) n; (void) m; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_mem_alloc(rnicpi_dev_t *d, size_t n, void **a, uint64_t *c)
{ (void) d; (void) n; (void) a; (void) c; return RNICPI_ENOTSUP; }
static void st_mem_free(void *a, size_t n, uint64_t c) { (void) a; (void) n; (void) c; }
static rnicpi_status_t st_cq_create(rnicpi_dev_t *d, uint32_t n, uint64_t c, rnicpi_cq_t **q)
{ (void) d; (void) n; (void) c; (void) q; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_cq_destroy(rnicpi_cq_t *q) { (void) q; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_qp_create(rnicpi_pd_t *p, const rnicpi_qp_attr_t *a, uint64_t c, rnicpi_qp_t **q)
{ (void) p; (void) a; (void) c; (void) q; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_qp_modify(rnicpi_qp_t *q, const rnicpi_qp_attr_t *a) { (void) q; (void) a; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_qp_op(rnicpi_qp_t *q) { (void) q; return RNICPI_ENOTSUP; }
static rnicpi_qp_state_t st_qp_state(rnicpi_qp_t *q) { (void) q; return RNICPI_QPS_ERROR; }
static rnicpi_status_t st_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *w) { (void) q; (void) w; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *w) { (void) q; (void) w; return RNICPI_ENOTSUP; }
static int st_poll_cq(rnicpi_cq_t *q, rnicpi_wc_t *w, int n) { (void) q; (void) w; (void) n; return 0; }
static uint32_t st_cq_count(rnicpi_cq_t *q) { (void) q; return 0; }
static rnicpi_status_t st_arm_cq(rnicpi_cq_t *q) { (void) q; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_cq_wait_begin(rnicpi_cq_t *q, struct pollfd *f, uint32_t *n)
{ (void) q; (void) f; *n = 0; return RNICPI_ENOTSUP; }
static void st_cq_wait_end(rnicpi_cq_t *q, const struct pollfd *f, uint32_t n) { (void) q; (void) f; (void) n; }
static rnicpi_status_t st_listen(rnicpi_dev_t *d, uint32_t p, uint64_t c, rnicpi_listen_t **l)
{ (void) d; (void) p; (void) c; (void) l; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_unlisten(rnicpi_listen_t *l) { (void) l; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_connect(rnicpi_qp_t *q, const rnicpi_addr_t *a, const rnicpi_conn_param_t *p)
{ (void) q; (void) a; (void) p; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_accept(rnicpi_qp_t *q, uint64_t i, const rnicpi_conn_param_t *p)
{ (void) q; (void) i; (void) p; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_reject(rnicpi_dev_t *d, uint64_t i, const void *p, uint32_t l)
{ (void) d; (void) i; (void) p; (void) l; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_disconnect(rnicpi_qp_t *q, const void *p, uint32_t l)
{ (void) q; (void) p; (void) l; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_srq_create(rnicpi_pd_t *p, uint32_t w, uint32_t s, uint64_t c, rnicpi_srq_t **q)
{ (void) p; (void) w; (void) s; (void) c; (void) q; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_srq_modify(rnicpi_srq_t *q, uint32_t w, uint32_t l) { (void) q; (void) w; (void) l; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_srq_destroy(rnicpi_srq_t *q) { (void) q; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_post_srq_recv(rnicpi_srq_t *q, const rnicpi_recv_wr_t *w) { (void) q; (void) w; return RNICPI_ENOTSUP; }
static uint32_t st_srq_count(rnicpi_srq_t *q) { (void) q; return 0; }
static rnicpi_status_t st_mw_alloc(rnicpi_pd_t *p, rnicpi_mw_type_t t, rnicpi_mw_t **m)
{ (void) p; (void) t; (void) m; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_mw_dealloc(rnicpi_mw_t *m) { (void) m; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_ud_svc_request(rnicpi_dev_t *d, const rnicpi_addr_t *a, const void *p, uint32_t l,
                                         uint64_t c)
{ (void) d; (void) a; (void) p; (void) l; (void) c; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_ud_svc_reply(rnicpi_dev_t *d, uint64_t i, rnicpi_ud_svc_status_t s, uint32_t q,
                                       uint32_t k, const void *p, uint32_t l)
{ (void) d; (void) i; (void) s; (void) q; (void) k; (void) p; (void) l; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_ah_create(rnicpi_pd_t *p, const rnicpi_ah_attr_t *a, rnicpi_ah_t **h)
{ (void) p; (void) a; (void) h; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_ah_destroy(rnicpi_ah_t *h) { (void) h; return RNICPI_ENOTSUP; }
static rnicpi_status_t st_handoff(rnicpi_qp_t *q, int fd, bool a, const rnicpi_conn_param_t *p)
{ (void) q; (void) fd; (void) a; (void) p; return RNICPI_ENOTSUP; }

/* Copy what the provider gave (at most its declared size), then plug holes. */
#define TAKE(dst, src)                                                  \
  do {                                                                  \
    memset(&(dst), 0, sizeof(dst));                                     \
    if ((src) != NULL) {                                                \
      size_t n_ = MIN((src)->size, sizeof(dst));                        \
      memcpy(&(dst), (src), n_);                                        \
    }                                                                   \
    (dst).size = sizeof(dst);                                           \
  } while (0)
#define FILL(tbl, op, stub) if ((tbl).op == NULL) (tbl).op = (stub)

void
rnicpi_complete_tables(const rnicpi_provider_t *in, rnicpi_full_t *out)
{
  /* A descriptor of an older minor is shorter: copy only what it has. */
  memset(&out->desc, 0, sizeof(out->desc));
  memcpy(&out->desc, in, offsetof(rnicpi_provider_t, srq));

  TAKE(out->device, in->device);
  FILL(out->device, list, st_list);
  FILL(out->device, open, st_open);
  FILL(out->device, close, st_close);
  FILL(out->device, query, st_query);
  FILL(out->device, pd_alloc, st_pd_alloc);
  FILL(out->device, pd_free, st_pd_free);
  FILL(out->device, list_refused, st_list_refused);
  /* ABI 1.12: without advice the access layer's messages give none. */
  FILL(out->device, cap_advice, st_cap_advice);

  TAKE(out->mem, in->mem);
  FILL(out->mem, mr_reg, st_mr_reg);
  FILL(out->mem, mr_modify, st_mr_modify);
  FILL(out->mem, mr_dereg, st_mr_dereg);
  /* ABI 1.4: a table built against an older minor ends before mr_alloc
   * (TAKE copied only its size), so the stub fills it. */
  FILL(out->mem, mr_alloc, st_mr_alloc);
  /* ABI 1.10: without mem_alloc the access layer maps ordinary memory. */
  FILL(out->mem, mem_alloc, st_mem_alloc);
  FILL(out->mem, mem_free, st_mem_free);

  TAKE(out->queue, in->queue);
  FILL(out->queue, cq_create, st_cq_create);
  FILL(out->queue, cq_destroy, st_cq_destroy);
  FILL(out->queue, qp_create, st_qp_create);
  FILL(out->queue, qp_modify, st_qp_modify);
  FILL(out->queue, qp_to_error, st_qp_op);
  FILL(out->queue, qp_reset, st_qp_op);
  FILL(out->queue, qp_state, st_qp_state);
  FILL(out->queue, qp_destroy, st_qp_op);

  TAKE(out->data, in->data);
  FILL(out->data, post_send, st_post_send);
  FILL(out->data, post_recv, st_post_recv);
  FILL(out->data, poll_cq, st_poll_cq);
  FILL(out->data, cq_count, st_cq_count);
  FILL(out->data, arm_cq, st_arm_cq);
  /* ABI 1.11: the two go together; a provider that sets only one gets
   * neither, so a begin that said RNICPI_OK always has its end. */
  if (out->data.cq_wait_begin == NULL || out->data.cq_wait_end == NULL) {
    out->data.cq_wait_begin = st_cq_wait_begin;
    out->data.cq_wait_end = st_cq_wait_end;
  }

  TAKE(out->cm, in->cm);
  FILL(out->cm, listen, st_listen);
  FILL(out->cm, unlisten, st_unlisten);
  FILL(out->cm, connect, st_connect);
  FILL(out->cm, accept, st_accept);
  FILL(out->cm, reject, st_reject);
  FILL(out->cm, disconnect, st_disconnect);
  FILL(out->cm, ud_svc_request, st_ud_svc_request);
  FILL(out->cm, ud_svc_reply, st_ud_svc_reply);

  TAKE(out->sock, in->sock);
  FILL(out->sock, handoff, st_handoff);

  /* The srq table is ABI 1.1: a 1.0 descriptor ends before the pointer. */
  const rnicpi_srq_ops_t *srq_in = NULL;
  if (in->abi_minor >= 1)
    srq_in = in->srq;
  TAKE(out->srq, srq_in);
  FILL(out->srq, srq_create, st_srq_create);
  FILL(out->srq, srq_modify, st_srq_modify);
  FILL(out->srq, srq_destroy, st_srq_destroy);
  FILL(out->srq, post_srq_recv, st_post_srq_recv);
  FILL(out->srq, srq_count, st_srq_count);

  /* The mw table is ABI 1.2: a 1.0 or 1.1 descriptor ends before the pointer. */
  const rnicpi_mw_ops_t *mw_in = NULL;
  if (in->abi_minor >= 2)
    mw_in = in->mw;
  TAKE(out->mw, mw_in);
  FILL(out->mw, mw_alloc, st_mw_alloc);
  FILL(out->mw, mw_dealloc, st_mw_dealloc);

  /* The ud table is ABI 1.3: an older descriptor ends before the pointer. */
  const rnicpi_ud_ops_t *ud_in = NULL;
  if (in->abi_minor >= 3)
    ud_in = in->ud;
  TAKE(out->ud, ud_in);
  FILL(out->ud, ah_create, st_ah_create);
  FILL(out->ud, ah_destroy, st_ah_destroy);

  out->desc.device = &out->device;
  out->desc.mem = &out->mem;
  out->desc.queue = &out->queue;
  out->desc.data = &out->data;
  out->desc.cm = &out->cm;
  out->desc.sock = &out->sock;
  out->desc.srq = &out->srq;
  out->desc.mw = &out->mw;
  out->desc.ud = &out->ud;
}
