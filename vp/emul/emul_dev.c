/*
 * vp/emul device: fabric, devices, protection domains, capability record,
 * and the thread that delivers deferred upcalls.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "emul.h"

emul_fabric_t emul_fabric;

extern const rnicpi_provider_t RNICPI_PROVIDER_SELF(emul);

typedef struct emul_upcall {
  emul_dev_t *dev;
  gboolean is_cm;
  rnicpi_async_event_t async;
  rnicpi_cm_event_t cm;
} emul_upcall_t;

static gpointer
emul_event_thread(gpointer unused)
{
  (void) unused;
  for (;;) {
    emul_upcall_t *u = g_async_queue_pop(emul_fabric.events);
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
  g_mutex_init(&emul_fabric.lock);
  g_mutex_init(&emul_fabric.deliver_lock);
  emul_fabric.mrs = g_ptr_array_new();
  g_ptr_array_add(emul_fabric.mrs, NULL);
  emul_fabric.free_mr = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  emul_fabric.listeners = g_hash_table_new(g_direct_hash, g_direct_equal);
  emul_fabric.conns = g_hash_table_new(g_int64_hash, g_int64_equal);
  emul_fabric.next_conn_id = 1;
  emul_fabric.next_qpn = 1;
  emul_fabric.events = g_async_queue_new();
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
emul_defer_cm(emul_dev_t *dev, const rnicpi_cm_event_t *ev)
{
  emul_upcall_t *u = g_new0(emul_upcall_t, 1);
  emul_dev_ref(dev);
  u->dev = dev;
  u->is_cm = TRUE;
  u->cm = *ev;
  g_async_queue_push(emul_fabric.events, u);
}

void
emul_defer_async(emul_dev_t *dev, rnicpi_async_type_t type, uint64_t ctx)
{
  emul_upcall_t *u = g_new0(emul_upcall_t, 1);
  emul_dev_ref(dev);
  u->dev = dev;
  u->async.type = type;
  u->async.ctx = ctx;
  g_async_queue_push(emul_fabric.events, u);
}

static void
emul_fill_caps(rnicpi_caps_t *c)
{
  memset(c, 0, sizeof(*c));
  c->size = sizeof(*c);
  /* Default personality: an InfiniBand HCA's semantics and CM limits
   * (IBTA CM private data: REQ 92, REP 196, REJ 148, DREQ 220,
   * SIDR REQ 216, SIDR REP 136 bytes). */
  c->transport = RNICPI_TRANSPORT_IB;
  c->path_format = RNICPI_PATH_GID;
  c->features = RNICPI_CAP_RC | RNICPI_CAP_CM_VERBS | RNICPI_CAP_THREE_WAY |
                RNICPI_CAP_IRD_ORD_NEGOTIATED | RNICPI_CAP_ZERO_BASED |
                RNICPI_CAP_ATOMICS | RNICPI_CAP_FLUSH_ON_ERROR |
                RNICPI_CAP_CQ_OVERFLOW_DETECT;
  c->sw_major = 0;
  c->sw_minor = 1;
  c->pdata_connect = 92;
  c->pdata_accept = 196;
  c->pdata_reject = 148;
  c->pdata_disconnect = 220;
  c->pdata_ud_req = 216;
  c->pdata_ud_rep = 136;
  c->max_ird = 16;
  c->max_ord = 16;
  c->max_qp = 1u << 16;
  c->max_qp_wr = 1u << 14;
  c->max_cq = 1u << 16;
  c->max_cqe = 1u << 20;
  c->max_mr = 1u << 24;
  c->max_pd = 1u << 16;
  c->max_srq = 0;
  c->max_send_sge = 32;
  c->max_recv_sge = 32;
  c->max_rdma_write_sge = 32;
  c->max_rdma_read_sge = 32;
  c->max_inline = 0;
  c->max_msg_size = 1u << 30;
  c->max_mr_size = UINT64_C(1) << 40;
  c->num_ports = 1;
  c->num_addrs = 1;
  struct sockaddr_in *sin = (struct sockaddr_in *) &c->addrs[0];
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static rnicpi_status_t
emul_list(char (*names)[64], size_t *count)
{
  if (*count >= 1)
    g_strlcpy(names[0], "emul0", 64);
  *count = 1;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_open(const char *name, const rnicpi_upcalls_t *up, void *ctx, rnicpi_dev_t **out)
{
  if (g_strcmp0(name, "emul0") != 0)
    return RNICPI_ENOENT;
  emul_fabric_init();
  emul_dev_t *dev = g_new0(emul_dev_t, 1);
  dev->ref = 1;
  dev->up = *up;
  dev->base.prov = &RNICPI_PROVIDER_SELF(emul);
  dev->base.al_ctx = ctx;
  emul_fill_caps(&dev->caps);
  *out = &dev->base;
  return RNICPI_OK;
}

static void
emul_close(rnicpi_dev_t *d)
{
  emul_dev_t *dev = to_emul_dev(d);
  /* Wait for an upcall in progress, then let none through. */
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
  emul_pd_t *pd = g_new0(emul_pd_t, 1);
  pd->base.dev = d;
  g_mutex_lock(&emul_fabric.lock);
  pd->id = ++emul_fabric.next_pd_id;
  g_mutex_unlock(&emul_fabric.lock);
  *out = &pd->base;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_pd_free(rnicpi_pd_t *p)
{
  emul_pd_t *pd = to_emul_pd(p);
  if (g_atomic_int_get(&pd->nobj) != 0)
    return RNICPI_EBUSY;
  g_free(pd);
  return RNICPI_OK;
}

const rnicpi_device_ops_t emul_device_ops = {
  .size = sizeof(rnicpi_device_ops_t),
  .list = emul_list,
  .open = emul_open,
  .close = emul_close,
  .query = emul_query,
  .pd_alloc = emul_pd_alloc,
  .pd_free = emul_pd_free,
};

RNICPI_PROVIDER_DEFINE(emul) = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = RNICPI_ABI_MINOR,
  .name = "emul",
  .version = "0.1",
  .description = "software RNIC over memory (InfiniBand personality)",
  .probe = NULL,
  .device = &emul_device_ops,
  .mem = &emul_mem_ops,
  .queue = &emul_queue_ops,
  .data = &emul_data_ops,
  .cm = &emul_cm_ops,
  .sock = NULL,
};
