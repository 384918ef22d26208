/*
 * vp/ib devices: which rdma-core devices are interfaces (those whose
 * netdev has an IP address rdma_cm binds to them), the capability record
 * from ibv_query_device_ex and ibv_query_port, the device's removal,
 * opening and closing a device (which starts and stops its progress
 * thread, ib_progress.c), and protection domains.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ib.h"

ib_config_t ib_config;
guint64 ib_mr_gen;

static gpointer
config_load(gpointer unused)
{
  (void) unused;
  ib_config.resolve_ms = rnicpi_env_int("ITAPI_IB_RESOLVE_MS", 2000, 10, 600000);
  ib_config.sweep_ms = rnicpi_env_int("ITAPI_IB_FLUSH_MS", 50, 1, 60000);
  ib_config.cq_min = rnicpi_env_int("ITAPI_IB_CQ_MIN", 256, 1, 1 << 22);
  return NULL;
}

static void
config_init(void)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, config_load, NULL);
}

rnicpi_status_t
ib_status_of_errno(int err)
{
  switch (err) {
  case 0:
    return RNICPI_OK;
  case ENOMEM:
  case ENOSPC:
    return RNICPI_ENOMEM;
  case EINVAL:
    return RNICPI_EINVAL;
  case EOPNOTSUPP:
  case ENOSYS:
    return RNICPI_ENOTSUP;
  case EBUSY:
    return RNICPI_EBUSY;
  case EACCES:
  case EPERM:
    return RNICPI_EACCES;
  case EADDRINUSE:
    return RNICPI_EEXIST;
  case ENOENT:
  case ENODEV:
  case ENXIO:
    return RNICPI_ENOENT;
  case EAGAIN:
    return RNICPI_EFULL;
  default:
    return RNICPI_EIO;
  }
}

uint32_t
ib_access_granted(uint32_t access)
{
  /* Verbs refuses remote write and atomic rights without local write
   * (IBTA 10.6.3.1 C10-61): they are granted together. */
  if (access & (RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC))
    access |= RNICPI_ACCESS_LOCAL_WRITE;
  return access;
}

int
ib_access_to_verbs(uint32_t access)
{
  access = ib_access_granted(access);
  int a = 0;
  if (access & RNICPI_ACCESS_LOCAL_WRITE)
    a |= IBV_ACCESS_LOCAL_WRITE;
  if (access & RNICPI_ACCESS_REMOTE_READ)
    a |= IBV_ACCESS_REMOTE_READ;
  if (access & RNICPI_ACCESS_REMOTE_WRITE)
    a |= IBV_ACCESS_REMOTE_WRITE;
  if (access & RNICPI_ACCESS_ATOMIC)
    a |= IBV_ACCESS_REMOTE_ATOMIC;
  if (access & RNICPI_ACCESS_MW_BIND)
    a |= IBV_ACCESS_MW_BIND;
  return a;
}

/* ---- addresses -------------------------------------------------------- */

/* The name of the device rdma_cm binds @a to, in @name; FALSE when none
 * (rdma_cm answers from the kernel's own table: the netdev that holds the
 * address and the RDMA device bound to that netdev). */
static gboolean
device_of_addr(const struct sockaddr *a, char name[64])
{
  struct rdma_cm_id *id = NULL;
  if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0)
    return FALSE;
  gboolean ok = rdma_bind_addr(id, (struct sockaddr *) a) == 0 && id->verbs != NULL;
  if (ok)
    g_strlcpy(name, ibv_get_device_name(id->verbs->device), 64);
  rdma_destroy_id(id);
  return ok;
}

/* Fill caps->addrs with the addresses rdma_cm binds to device @name: IPv4
 * first, then IPv6.  Link-local ones need a scope no IT-API path carries.
 * Loopback ones are never the device's: rdma_cm cannot reach 127.0.0.1
 * through rxe or siw, so a loopback destination goes to the first address
 * listed here instead (peer_addr in ib_cm.c; ual_ia_map_loopback). */
static void
device_addrs(const char *name, rnicpi_caps_t *caps)
{
  struct ifaddrs *ifa = NULL;
  caps->num_addrs = 0;
  if (getifaddrs(&ifa) != 0)
    return;
  for (int fam = 0; fam < 2; fam++) {
    for (struct ifaddrs *i = ifa; i != NULL && caps->num_addrs < G_N_ELEMENTS(caps->addrs);
         i = i->ifa_next) {
      if (i->ifa_addr == NULL || (i->ifa_flags & IFF_LOOPBACK))
        continue;
      if (i->ifa_addr->sa_family != (fam == 0 ? AF_INET : AF_INET6))
        continue;
      if (fam == 1 && IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr))
        continue;
      char dev[64];
      if (!device_of_addr(i->ifa_addr, dev) || strcmp(dev, name) != 0)
        continue;
      size_t len = fam == 0 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
      memset(&caps->addrs[caps->num_addrs], 0, sizeof(caps->addrs[0]));
      memcpy(&caps->addrs[caps->num_addrs++], i->ifa_addr, len);
    }
  }
  freeifaddrs(ifa);
}

/* ---- the capability record ---------------------------------------------- */

static rnicpi_status_t
fill_caps(struct ibv_context *ctx, rnicpi_caps_t *c, uint8_t *port_out, gboolean *iwarp)
{
  struct ibv_device_attr_ex ax;
  memset(&ax, 0, sizeof(ax));
  if (ibv_query_device_ex(ctx, NULL, &ax) != 0)
    return ib_status_of_errno(errno);
  const struct ibv_device_attr *a = &ax.orig_attr;
  struct ibv_port_attr pa;
  uint8_t port = 1;
  if (ibv_query_port(ctx, port, &pa) != 0)
    return ib_status_of_errno(errno);
  *port_out = port;
  *iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;

  memset(c, 0, sizeof(*c));
  c->size = sizeof(*c);
  c->transport = *iwarp ? RNICPI_TRANSPORT_IWARP : RNICPI_TRANSPORT_IB;
  /* rdma_cm finds the path from IP addresses on every transport; RoCE and
   * InfiniBand describe it with GIDs (IPv4-mapped on RoCE). */
  c->path_format = *iwarp ? RNICPI_PATH_IP : RNICPI_PATH_GID;
  c->features = RNICPI_CAP_RC | RNICPI_CAP_CM_VERBS | RNICPI_CAP_IRD_ORD_NEGOTIATED |
                RNICPI_CAP_FLUSH_ON_ERROR | RNICPI_CAP_CQ_OVERFLOW_DETECT;
  /* A zero-based region answers to the iova ibv_reg_mr_iova2 gives it.
   * siw takes the iova and ignores it (siw_reg_user_mr: "rnic_va: not
   * used by siw"; siw_mr_add_mem keeps the start address, against which
   * siw_check_mem checks local segments and incoming tagged offsets), so
   * on siw a zero-based region refuses every offset. */
  if (a->vendor_id != IB_SIW_VENDOR_ID)
    c->features |= RNICPI_CAP_ZERO_BASED;
  /* No RNICPI_CAP_NO_PIN: the kernel's ib_umem pins registered pages
   * (faulting them in) and counts them against RLIMIT_MEMLOCK, so the
   * access layer applies the same rule before it asks. */
  if (*iwarp) {
    /* RFC 5040: an RDMA Read's sink is named by an STag the responder
     * writes to, so iWARP RNICs (and the kernel's rdma_rw for them) want
     * remote write on it. */
    c->features |= RNICPI_CAP_READ_SINK_REMOTE_WRITE;
    /* RDMAC verbs 7.2.7: an iWARP RNIC binds no window to a zero-based
     * region. */
    c->features |= RNICPI_CAP_MW_NEEDS_VA_REGION;
    /* RFC 5040 6.10: a Send with Invalidate names the peer's STag.  On
     * InfiniBand it stays off (ib_mw.c: rxe oopses on the invalidation of
     * a window that is not bound); an iWARP peer answers a key it cannot
     * invalidate with a Terminate (siw_invalidate_stag, siw_mem.c). */
    c->features |= RNICPI_CAP_REMOTE_INVALIDATE;
  } else {
    /* IB RC: REQ/REP/RTU, and a Send or Write completes after its ACK. */
    c->features |= RNICPI_CAP_THREE_WAY | RNICPI_CAP_PLACED_COMPLETION | RNICPI_CAP_IMMEDIATE;
  }
  if (a->atomic_cap != IBV_ATOMIC_NONE)
    c->features |= RNICPI_CAP_ATOMICS;
  if (a->max_srq > 0)
    c->features |= RNICPI_CAP_SRQ;
  c->features |= ib_mw_caps(&ax);
  /* Datagrams: InfiniBand and RoCE devices with address handles (iWARP
   * has none, RFC 5040). */
  if (!*iwarp && a->max_ah > 0) {
    c->features |= RNICPI_CAP_UD;
    /* The path MTU of the port is the largest datagram. */
    c->ud_mtu = pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096
                  ? 128u << pa.active_mtu : 256;
    c->pdata_ud_req = IB_UD_PDATA_REQ;
    c->pdata_ud_rep = IB_UD_PDATA_REP;
  }
  c->vendor_id = a->vendor_id;
  c->hw_version = a->hw_ver;
  c->sw_major = 0;
  c->sw_minor = 1;
  if (*iwarp) {
    /* librdmacm's length is a byte, and the MPA frame's private data,
     * the RFC 6581 word (4 bytes) included, must fit one too: siw's
     * siw_send_mpareqrep() (siw_cm.c) adds the word to a u8 length, so
     * 252 bytes go out as a frame saying 0 (its peer refuses it). */
    c->pdata_connect = c->pdata_accept = c->pdata_reject = IB_IWARP_PDATA_MAX;
  } else {
    /* IB CM REQ/REP/REJ private data less rdma_cm's own header. */
    c->pdata_connect = 56;
    c->pdata_accept = 196;
    c->pdata_reject = 148;
  }
  c->pdata_disconnect = 0; /* rdma_disconnect carries none */
  c->max_ird = (uint32_t) a->max_qp_rd_atom;
  c->max_ord = (uint32_t) a->max_qp_init_rd_atom;
  c->max_qp = (uint32_t) a->max_qp;
  c->max_qp_wr = (uint32_t) a->max_qp_wr;
  c->max_cq = (uint32_t) a->max_cq;
  c->max_cqe = (uint32_t) a->max_cqe;
  c->max_mr = (uint32_t) a->max_mr;
  c->max_pd = (uint32_t) a->max_pd;
  c->max_srq = (uint32_t) a->max_srq;
  c->max_send_sge = c->max_recv_sge = c->max_rdma_write_sge = (uint32_t) a->max_sge;
  if (c->features & RNICPI_CAP_SRQ) {
    /* The record has one receive limit for a queue pair and an SRQ
     * (srq_create takes up to max_qp_wr receives of max_recv_sge each):
     * the lesser of the device's two (rxe: 27 segments per SRQ receive,
     * 32 per queue pair's). */
    c->max_qp_wr = MIN(c->max_qp_wr, (uint32_t) a->max_srq_wr);
    c->max_recv_sge = MIN(c->max_recv_sge, (uint32_t) a->max_srq_sge);
  }
  c->max_rdma_read_sge = (uint32_t) (a->max_sge_rd > 0 ? a->max_sge_rd : a->max_sge);
  c->max_inline = 0;
  c->max_msg_size = pa.max_msg_sz;
  c->max_mr_size = a->max_mr_size;
  c->num_ports = 1;
  return RNICPI_OK;
}

/* Inline data a queue pair of the device takes, which no verbs attribute
 * says: asked of a small queue pair from IB_INLINE_WANT down (0: none).
 * A short Send or Write posted inline is copied into the work request at
 * the post, which spares the device a look-up of the region; the adapter
 * has checked the segments itself by then (map_sges). */
#define IB_INLINE_WANT 256u

static uint32_t
probe_inline(struct ibv_context *ctx)
{
  uint32_t got = 0;
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = pd != NULL ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
  for (uint32_t want = IB_INLINE_WANT; cq != NULL && want >= 32 && got == 0; want /= 2) {
    struct ibv_qp_init_attr a = {
      .send_cq = cq,
      .recv_cq = cq,
      .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
               .max_inline_data = want },
      .qp_type = IBV_QPT_RC,
    };
    struct ibv_qp *qp = ibv_create_qp(pd, &a);
    if (qp != NULL) {
      got = want;
      ibv_destroy_qp(qp);
    }
  }
  if (cq != NULL)
    ibv_destroy_cq(cq);
  if (pd != NULL)
    ibv_dealloc_pd(pd);
  return got;
}

/* ---- discovery ---------------------------------------------------------- */

/* Each device, and whether it has an address (why not, in @why). */
typedef struct {
  char name[RNICPI_DEVICE_NAME_MAX];
  char why[RNICPI_REASON_MAX];
  gboolean usable;
} ib_found_t;

static GArray *
discover(void)
{
  GArray *out = g_array_new(FALSE, TRUE, sizeof(ib_found_t));
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  for (int i = 0; list != NULL && i < n; i++) {
    ib_found_t f = { .usable = FALSE };
    g_strlcpy(f.name, ibv_get_device_name(list[i]), sizeof(f.name));
    rnicpi_caps_t caps;
    memset(&caps, 0, sizeof(caps));
    device_addrs(f.name, &caps);
    if (caps.num_addrs > 0)
      f.usable = TRUE;
    else
      g_snprintf(f.why, sizeof(f.why), "rdma_cm binds no IP address to it: give its netdev an "
                 "address (rdma link show %s names the netdev; ip addr add ADDR dev NETDEV)",
                 f.name);
    g_array_append_val(out, f);
  }
  if (list != NULL)
    ibv_free_device_list(list);
  return out;
}

static rnicpi_status_t
ib_list(char (*names)[RNICPI_DEVICE_NAME_MAX], size_t *count)
{
  GArray *found = discover();
  size_t k = 0;
  for (guint i = 0; i < found->len; i++) {
    ib_found_t *f = &g_array_index(found, ib_found_t, i);
    if (!f->usable)
      continue;
    if (k < *count)
      g_strlcpy(names[k], f->name, RNICPI_DEVICE_NAME_MAX);
    k++;
  }
  g_array_free(found, TRUE);
  *count = k;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_list_refused(char (*names)[RNICPI_DEVICE_NAME_MAX], char (*reasons)[RNICPI_REASON_MAX],
                size_t *count)
{
  GArray *found = discover();
  size_t k = 0;
  gboolean any = found->len > 0;
  for (guint i = 0; i < found->len; i++) {
    ib_found_t *f = &g_array_index(found, ib_found_t, i);
    if (f->usable)
      continue;
    if (k < *count) {
      g_strlcpy(names[k], f->name, RNICPI_DEVICE_NAME_MAX);
      g_strlcpy(reasons[k], f->why, RNICPI_REASON_MAX);
    }
    k++;
  }
  if (!any) {
    if (k < *count) {
      g_strlcpy(names[k], "(none)", RNICPI_DEVICE_NAME_MAX);
      g_strlcpy(reasons[k], "libibverbs finds no RDMA device on this host: load a NIC's driver, "
                "or add a soft one (rdma link add rxe0 type rxe netdev eth0; siw likewise)",
                RNICPI_REASON_MAX);
    }
    k++;
  }
  g_array_free(found, TRUE);
  *count = k;
  return RNICPI_OK;
}

/* ---- serials and the queue pair table ---------------------------------- */

uint32_t
ib_dev_serial(ib_dev_t *dev)
{
  return (uint32_t) g_atomic_int_add((gint *) &dev->next_serial, 1) & 0xffffff;
}

ib_qp_t *
ib_qp_lookup(ib_dev_t *dev, uint32_t qp_num)
{
  rnicpi_spin_lock(&dev->qp_lock);
  ib_qp_t *qp = g_hash_table_lookup(dev->qps, GUINT_TO_POINTER(qp_num));
  rnicpi_spin_unlock(&dev->qp_lock);
  return qp;
}

/* ---- removal ----------------------------------------------------------------- */

/* The device is gone (rdma_cm's DEVICE_REMOVAL on one of its identifiers,
 * or a fatal error of the device), once: every queue pair goes to ERROR,
 * its requests complete flushed (by the device, else by the sweep), and
 * the consumer hears of it through an unaffiliated event (the port is
 * down).  Each connection breaks through its own identifier's event.
 * From the progress thread, with no lock held. */
void
ib_dev_removed(ib_dev_t *dev)
{
  if (!g_atomic_int_compare_and_exchange(&dev->removed, FALSE, TRUE))
    return;
  g_message("%s: the device was removed or failed: its connections break and its work requests "
            "complete flushed; free the IA (the kernel ends the removal once no process holds "
            "the device)", dev->name);
  /* Under dev->lock no queue pair found here is freed: a destroy marks it
   * dying under that lock first, and none found here is dying.  Under
   * qp_lock its verbs QP is the current one: an iWARP reset swaps it
   * under that lock and destroys the old one after. */
  g_mutex_lock(&dev->lock);
  GPtrArray *all = g_ptr_array_new();
  rnicpi_spin_lock(&dev->qp_lock);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, dev->qps);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    ib_qp_t *qp = v;
    if (qp->dying)
      continue;
    ib_qp_modify_verbs(qp, IBV_QPS_ERR); /* may fail: the sweep completes the rest */
    g_ptr_array_add(all, qp);
  }
  rnicpi_spin_unlock(&dev->qp_lock);
  for (guint i = 0; i < all->len; i++) {
    ib_qp_t *qp = g_ptr_array_index(all, i);
    ib_qp_set_error(qp);
    ib_sweep_add_locked(qp);
  }
  g_mutex_unlock(&dev->lock);
  g_ptr_array_free(all, TRUE);
  rnicpi_async_event_t ev = rnicpi_async_event(RNICPI_ASYNC_PORT_DOWN, 0, RNICPI_AE_UNSPECIFIED);
  dev->up.async_event(dev->base.al_ctx, &ev);
}

/* Whether the kernel has begun to remove @dev's device.  It stops listing
 * a device (in the netlink enumeration ibv_get_device_list() reads) before
 * it tells any of its users, and a process holding the device keeps it
 * until the IA is freed.  So a connection whose peer went because the
 * removal reached the peer first (both ends on this device, each told on
 * its own rdma_cm channel) still learns that it broke.  FALSE when it
 * cannot tell.  A netlink dump: asked only where a connection ended
 * without a fault of its own. */
gboolean
ib_dev_unlisted(ib_dev_t *dev)
{
  if (g_atomic_int_get(&dev->removed))
    return TRUE;
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (list == NULL)
    return FALSE;
  const char *name = ibv_get_device_name(dev->ctx->device);
  gboolean listed = FALSE;
  for (int i = 0; i < n && !listed; i++)
    listed = strcmp(ibv_get_device_name(list[i]), name) == 0;
  ibv_free_device_list(list);
  return !listed;
}

/* ---- open and close ------------------------------------------------------ */

static gboolean
set_nonblock(int fd)
{
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

static gboolean
epoll_add(ib_dev_t *dev, int fd, uint32_t tag)
{
  return set_nonblock(fd) && ib_dev_watch(dev, fd, tag) == 0;
}

/* Events never delivered (the device closes): a notification queued for
 * delivery stops counting in the device's inflight count. */
static void
drop_events(ib_dev_t *dev)
{
  ib_event_t *e;
  while ((e = g_queue_pop_head(&dev->events)) != NULL) {
    if (e->kind == IB_EV_NOTIFY && e->notify.inflight != NULL)
      g_atomic_int_add(e->notify.inflight, -1);
    g_free(e);
  }
}

static void
dev_free(ib_dev_t *dev)
{
  if (dev->epfd >= 0)
    close(dev->epfd);
  if (dev->wakefd >= 0)
    close(dev->wakefd);
  if (dev->cm != NULL)
    rdma_destroy_event_channel(dev->cm);
  if (dev->comp != NULL)
    ibv_destroy_comp_channel(dev->comp);
  if (dev->quirked)
    ib_quirk_close(dev->ctx);
  if (dev->ctx_list != NULL)
    rdma_free_devices(dev->ctx_list);
  if (g_atomic_int_get(&dev->removed)) {
    /* librdmacm closes a removed device's context when it next looks at
     * the device list and nothing holds the device: the kernel ends the
     * removal then (rxe and siw cannot take a device from a process). */
    struct ibv_context **again = rdma_get_devices(NULL);
    if (again != NULL)
      rdma_free_devices(again);
  }
  if (dev->conns != NULL)
    g_hash_table_destroy(dev->conns);
  if (dev->qps != NULL)
    g_hash_table_destroy(dev->qps);
  if (dev->mrs != NULL)
    g_hash_table_destroy(dev->mrs);
  /* A device opened later at the same address is not this one. */
  ib_mr_changed();
  g_rw_lock_clear(&dev->mr_lock);
  drop_events(dev);
  if (dev->mws != NULL)
    g_hash_table_destroy(dev->mws);
  g_mutex_clear(&dev->lock);
  g_mutex_clear(&dev->ev_lock);
  g_free(dev);
}

static rnicpi_status_t
ib_open(const char *name, const rnicpi_upcalls_t *up, void *al_ctx, rnicpi_dev_t **out)
{
  config_init();
  ib_dev_t *dev = g_new0(ib_dev_t, 1);
  dev->base.prov = &RNICPI_PROVIDER_SELF(ib);
  dev->base.al_ctx = al_ctx;
  dev->up = *up;
  dev->epfd = dev->wakefd = -1;
  g_mutex_init(&dev->lock);
  g_mutex_init(&dev->ev_lock);
  g_queue_init(&dev->events);
  g_strlcpy(dev->name, name, sizeof(dev->name));
  dev->conns = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_queue_init(&dev->timed);
  dev->timed_next = G_MAXINT64;
  dev->rearm_at = G_MAXINT64;
  dev->qps = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_rw_lock_init(&dev->mr_lock);
  dev->mrs = g_hash_table_new(g_direct_hash, g_direct_equal);
  dev->mws = g_hash_table_new(g_direct_hash, g_direct_equal);
  dev->next_conn_id = 1;
  dev->next_serial = 1;

  /* rdma_cm's own contexts: an identifier bound to the device's address
   * carries one of these, and a QP must live on the same context. */
  int n = 0;
  dev->ctx_list = rdma_get_devices(&n);
  for (int i = 0; dev->ctx_list != NULL && i < n; i++)
    if (strcmp(ibv_get_device_name(dev->ctx_list[i]->device), name) == 0)
      dev->ctx = dev->ctx_list[i];
  if (dev->ctx == NULL) {
    dev_free(dev);
    return RNICPI_ENOENT;
  }
  rnicpi_status_t st = fill_caps(dev->ctx, &dev->caps, &dev->port, &dev->iwarp);
  if (st != RNICPI_OK) {
    g_warning("%s: cannot query the device (ibv_query_device_ex or ibv_query_port: %s); "
              "ibv_devinfo -d %s shows whether its driver answers", name, g_strerror(errno), name);
    dev_free(dev);
    return st;
  }
  device_addrs(name, &dev->caps);
  if (dev->caps.num_addrs == 0) {
    dev_free(dev);
    return RNICPI_ENOENT;
  }
  /* First, while nothing of this process is mapped on the context: the
   * probes below map queues of their own, and a concurrent open's would
   * move what the cover expects (ib_quirk.c). */
  ib_quirk_open(dev->ctx, dev->caps.vendor_id, name);
  dev->quirked = TRUE;
  /* siw (its vendor id spells "bmt"): a short request across a page
   * boundary is posted in two parts (ib_post.c), so a queue pair gets twice
   * the verbs requests it promises, and offers half the device's. */
  dev->verbs_max_qp_wr = dev->caps.max_qp_wr;
  if (dev->caps.vendor_id == IB_SIW_VENDOR_ID) {
    dev->short_split = TRUE;
    dev->caps.max_qp_wr /= 2;
  }
  /* Applications written for InfiniBand scatter a Read over several
   * segments (IBM's SKV: 8); a device that takes fewer per verbs Read
   * (siw: 1) gets them as one Read per run of contiguous segments. */
  dev->read_sge_dev = MAX(dev->caps.max_rdma_read_sge, 1u);
  dev->caps.max_rdma_read_sge = MAX(dev->caps.max_rdma_read_sge, IB_READ_SPLIT_SGE);
  dev->inline_max = dev->caps.max_inline = probe_inline(dev->ctx);
  /* siw answers a zero-length RDMA Read that waited behind its transmit
   * (an iWARP peer's fence or RTR) with the first element of the request
   * before it (siw_activate_tx leaves it, siw_qp_sq_proc_tx sends one)
   * and checks that element's key: an inline request's has none, and the
   * Read Response fails with a Terminate that ends the connection.  Posted
   * from a region, the element is one the peer drops (doc/provider-ib.md). */
  if (dev->caps.vendor_id == IB_SIW_VENDOR_ID)
    dev->inline_max = dev->caps.max_inline = 0;
  /* Whether its CQs can grow (siw's cannot): a CQ then starts large
   * enough for many queue pairs (ib_cq.c). */
  struct ibv_cq *probe = ibv_create_cq(dev->ctx, 1, NULL, NULL, 0);
  dev->cq_fixed = probe == NULL || ibv_resize_cq(probe, 64) != 0;
  if (probe != NULL)
    ibv_destroy_cq(probe);
  if (dev->caps.features & RNICPI_CAP_UD)
    ib_ud_find_gids(dev);
  dev->comp = ibv_create_comp_channel(dev->ctx);
  dev->cm = rdma_create_event_channel();
  dev->epfd = epoll_create1(EPOLL_CLOEXEC);
  dev->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (dev->comp == NULL || dev->cm == NULL || dev->epfd < 0 || dev->wakefd < 0 ||
      !epoll_add(dev, dev->wakefd, POLL_WAKE) || !epoll_add(dev, dev->cm->fd, POLL_CM) ||
      !epoll_add(dev, dev->comp->fd, POLL_COMP) || !epoll_add(dev, dev->ctx->async_fd, POLL_ASYNC)) {
    g_warning("%s: cannot set up its event channels (%s): is the process out of file "
              "descriptors (ulimit -n), or is /dev/infiniband/rdma_cm missing (modprobe rdma_ucm)?",
              name, g_strerror(errno));
    dev_free(dev);
    return RNICPI_EIO;
  }
  char tname[16];
  g_snprintf(tname, sizeof(tname), "%.8s-progress", name);
  dev->thread = g_thread_new(tname, progress_thread, dev);
  g_mutex_lock(&open_lock);
  open_devs = g_list_prepend(open_devs, dev);
  g_mutex_unlock(&open_lock);
  *out = &dev->base;
  return RNICPI_OK;
}

static void
ib_close(rnicpi_dev_t *d)
{
  ib_dev_t *dev = to_ib_dev(d);
  g_mutex_lock(&open_lock);
  open_devs = g_list_remove(open_devs, dev);
  g_mutex_unlock(&open_lock);
  ib_cm_close_dev(dev);
  g_atomic_int_set(&dev->stop, TRUE);
  ib_dev_wake(dev);
  if (dev->thread != g_thread_self())
    g_thread_join(dev->thread);
  else
    g_thread_unref(dev->thread);
  drop_events(dev);
  rnicpi_notify_quiesce(&dev->inflight);
  g_list_free(dev->sweep);
  dev_free(dev);
}

static rnicpi_status_t
ib_query(rnicpi_dev_t *d, rnicpi_caps_t *caps)
{
  *caps = to_ib_dev(d)->caps;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_pd_alloc(rnicpi_dev_t *d, rnicpi_pd_t **out)
{
  ib_dev_t *dev = to_ib_dev(d);
  struct ibv_pd *vpd = ibv_alloc_pd(dev->ctx);
  if (vpd == NULL)
    return ib_status_of_errno(errno);
  ib_pd_t *pd = g_new0(ib_pd_t, 1);
  pd->base.dev = d;
  pd->pd = vpd;
  *out = &pd->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_pd_free(rnicpi_pd_t *p)
{
  ib_pd_t *pd = to_ib_pd(p);
  int err = ibv_dealloc_pd(pd->pd);
  if (err != 0)
    return err == EBUSY ? RNICPI_EBUSY : ib_status_of_errno(err);
  g_free(pd);
  return RNICPI_OK;
}

static rnicpi_status_t
ib_probe(void)
{
  /* Loading libibverbs is all a probe needs: a host without devices has
   * the provider with no interface, and list_refused says why. */
  return RNICPI_OK;
}

const rnicpi_device_ops_t ib_device_ops = {
  .size = sizeof(rnicpi_device_ops_t),
  .list = ib_list,
  .open = ib_open,
  .close = ib_close,
  .query = ib_query,
  .pd_alloc = ib_pd_alloc,
  .pd_free = ib_pd_free,
  .list_refused = ib_list_refused,
};

RNICPI_PROVIDER_DEFINE(ib) = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = RNICPI_ABI_MINOR,
  .name = "ib",
  .version = "0.1",
  .description = "rdma-core devices (libibverbs, librdmacm): InfiniBand, RoCE, iWARP, rxe, siw",
  .probe = ib_probe,
  .device = &ib_device_ops,
  .mem = &ib_mem_ops,
  .queue = &ib_queue_ops,
  .data = &ib_data_ops,
  .cm = &ib_cm_ops,
  .sock = NULL,
  .srq = &ib_srq_ops,
  .mw = &ib_mw_ops,
  .ud = &ib_ud_ops,
};
