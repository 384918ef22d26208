/*
 * vp/iwarp device: configuration knobs, the capability record, protection
 * domains, and the per-device progress thread that owns the epoll set of
 * every socket, delivers CM and async events and frees dead objects.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "iw.h"

iw_config_t iw_config;

static gpointer
config_load(gpointer unused)
{
  (void) unused;
  iw_config.crc = rnicpi_env_int("ITAPI_IWARP_CRC", 0, 0, 1);
  iw_config.mpa_rev = rnicpi_env_int("ITAPI_IWARP_MPA_REV", 2, 1, 2);
  iw_config.pdata_max = (uint32_t) rnicpi_env_int("ITAPI_IWARP_PDATA_MAX", IW_PDATA_INTEROP, 0,
                                           IW_MPA_PDATA_MAX - (int) sizeof(iw_mpa_v2_t));
  iw_config.corrupt_crc = rnicpi_env_int("ITAPI_IWARP_CORRUPT_CRC", 0, 0, G_MAXINT);
  iw_config.mpa_timeout_us =
    (uint64_t) rnicpi_env_int("ITAPI_IWARP_MPA_TIMEOUT_MS", IW_CONNECT_TIMEOUT_US / 1000, 1, 3600000) *
    1000;
  iw_config.poll_progress = rnicpi_env_int("ITAPI_IWARP_POLL_PROGRESS", 1, 0, 1);
  iw_config.write_hold = rnicpi_env_int("ITAPI_IWARP_WRITE_HOLD", 1, 0, 1);
  iw_config.fpdu_max = (uint32_t) rnicpi_env_int("ITAPI_IWARP_FPDU_MAX", IW_FPDU_MAX, IW_FPDU_MIN,
                                          IW_FPDU_MAX);
  iw_config.first_fpdu_delay_us =
    (uint64_t) rnicpi_env_int("ITAPI_IWARP_FIRST_FPDU_DELAY_MS", 0, 0, 10000) * 1000;
  iw_config.timeout_ms = (uint32_t) rnicpi_env_int("ITAPI_IWARP_TIMEOUT_MS", IW_TIMEOUT_MS, 0, 3600000);
  const char *cm = g_getenv("ITAPI_IWARP_COMPLETION");
  iw_config.placed = g_strcmp0(cm, "placed") == 0;
  if (cm != NULL && *cm != '\0' && !iw_config.placed && strcmp(cm, "sent") != 0)
    g_warning("ITAPI_IWARP_COMPLETION=%s is neither \"sent\" nor \"placed\"; using \"sent\"", cm);
  iw_crc_init();
  return NULL;
}

static void
config_init(void)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, config_load, NULL);
}

/* ---- events ---------------------------------------------------------- */

void
iw_dev_wake(iw_dev_t *dev)
{
  uint64_t one = 1;
  ssize_t r = write(dev->wakefd, &one, sizeof(one));
  (void) r; /* a full counter already wakes the thread */
}

static void
push_event(iw_dev_t *dev, iw_event_t *e)
{
  g_mutex_lock(&dev->ev_lock);
  g_queue_push_tail(&dev->events, e);
  g_mutex_unlock(&dev->ev_lock);
  iw_dev_wake(dev);
}

void
iw_defer_cm(iw_dev_t *dev, const rnicpi_cm_event_t *ev)
{
  iw_event_t *e = g_new0(iw_event_t, 1);
  e->is_cm = TRUE;
  e->cm = *ev;
  push_event(dev, e);
}

void
iw_defer_async(iw_dev_t *dev, const rnicpi_async_event_t *ev)
{
  iw_event_t *e = g_new0(iw_event_t, 1);
  e->async = *ev;
  push_event(dev, e);
}

void
iw_dev_bury(iw_dev_t *dev, gpointer obj)
{
  g_mutex_lock(&dev->ev_lock);
  g_ptr_array_add(dev->graveyard, obj);
  g_mutex_unlock(&dev->ev_lock);
  iw_dev_wake(dev);
}

void
iw_epoll_set(iw_dev_t *dev, int fd, iw_pollable_t *p, uint32_t events, gboolean add)
{
  struct epoll_event ev = { .events = events, .data.ptr = p };
  if (epoll_ctl(dev->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0)
    g_warning("epoll_ctl(%s, fd %d): %s", add ? "ADD" : "MOD", fd, g_strerror(errno));
}

void
iw_epoll_del(iw_dev_t *dev, int fd)
{
  epoll_ctl(dev->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void
deliver_events(iw_dev_t *dev)
{
  for (;;) {
    g_mutex_lock(&dev->ev_lock);
    iw_event_t *e = g_queue_pop_head(&dev->events);
    g_mutex_unlock(&dev->ev_lock);
    if (e == NULL)
      return;
    if (e->is_cm)
      dev->up.cm_event(dev->base.al_ctx, &e->cm);
    else
      dev->up.async_event(dev->base.al_ctx, &e->async);
    g_free(e);
  }
}

static void
free_graveyard(iw_dev_t *dev)
{
  g_mutex_lock(&dev->ev_lock);
  GPtrArray *g = dev->graveyard;
  dev->graveyard = g_ptr_array_new();
  g_mutex_unlock(&dev->ev_lock);
  for (guint i = 0; i < g->len; i++) {
    iw_pollable_t *p = g_ptr_array_index(g, i);
    if (p->kind == IW_POLL_QP)
      g_mutex_clear(&((iw_qp_t *) p)->lock);
    g_free(p);
  }
  g_ptr_array_free(g, TRUE);
}

static gpointer
progress_thread(gpointer data)
{
  iw_dev_t *dev = data;
  struct epoll_event evs[64];
  gint64 next_lease = 0;
  while (!g_atomic_int_get(&dev->stop)) {
    free_graveyard(dev);
    /* While pollers drive QPs, come back every millisecond to take over
     * the ones whose pollers stopped; not while every one of them has a
     * thread asleep on its socket (the nap: that thread wakes us when it
     * wakes, iw_cq_wait_end), so that an idle waiter costs no CPU. */
    gboolean leases = g_queue_get_length(&dev->polled) > 0; /* a hint: racy is fine */
    if (leases)
      g_atomic_int_set(&dev->lease_untold, FALSE); /* counted: no wake needed */
    gboolean tick = leases && !g_atomic_int_get(&dev->lease_nap);
    int n = epoll_wait(dev->epfd, evs, G_N_ELEMENTS(evs), tick ? 1 : 100);
    for (int i = 0; i < n; i++) {
      iw_pollable_t *p = evs[i].data.ptr;
      switch (p->kind) {
      case IW_POLL_WAKE: {
        uint64_t v;
        ssize_t r = read(dev->wakefd, &v, sizeof(v));
        (void) r;
        break;
      }
      case IW_POLL_LISTEN:
        iw_cm_listen_io((iw_listen_t *) p);
        break;
      case IW_POLL_CREQ:
        iw_cm_creq_io((iw_creq_t *) p, evs[i].events);
        break;
      case IW_POLL_QP: {
        iw_work_t w = { .nnotify = 0 };
        iw_qp_io((iw_qp_t *) p, evs[i].events, &w);
        iw_work_deliver(&w);
        break;
      }
      }
    }
    gint64 now = g_get_monotonic_time();
    if (leases && (now >= next_lease || !tick)) {
      next_lease = now + 1000;
      iw_dev_poll_leases(dev);
    }
    iw_cm_timeouts(dev);
    deliver_events(dev);
  }
  return NULL;
}

/* ---- capability record ------------------------------------------------ */

static void
fill_addrs(rnicpi_caps_t *c)
{
  struct sockaddr_in *sin = (struct sockaddr_in *) &c->addrs[0];
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->num_addrs = 1;
  struct ifaddrs *ifa = NULL;
  if (getifaddrs(&ifa) != 0)
    return;
  for (struct ifaddrs *i = ifa; i != NULL && c->num_addrs < G_N_ELEMENTS(c->addrs); i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
      continue;
    const struct sockaddr_in *a = (const struct sockaddr_in *) i->ifa_addr;
    if (a->sin_addr.s_addr == htonl(INADDR_LOOPBACK))
      continue;
    memcpy(&c->addrs[c->num_addrs++], a, sizeof(*a));
  }
  /* Then the IPv6 ones (listeners take both): loopback first; link-local
   * addresses need a scope a path cannot carry, so they are left out. */
  for (int pass = 0; pass < 2; pass++) {
    for (struct ifaddrs *i = ifa; i != NULL && c->num_addrs < G_N_ELEMENTS(c->addrs); i = i->ifa_next) {
      if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET6)
        continue;
      const struct sockaddr_in6 *a = (const struct sockaddr_in6 *) i->ifa_addr;
      if (IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr) || IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) != (pass == 0))
        continue;
      memcpy(&c->addrs[c->num_addrs++], a, sizeof(*a));
    }
  }
  freeifaddrs(ifa);
}

static void
fill_caps(rnicpi_caps_t *c, gboolean rfc7306)
{
  memset(c, 0, sizeof(*c));
  c->size = sizeof(*c);
  c->transport = RNICPI_TRANSPORT_IWARP;
  c->path_format = RNICPI_PATH_IP;
  c->features = RNICPI_CAP_RC | RNICPI_CAP_CM_VERBS | RNICPI_CAP_SOCKET_HANDOFF |
                RNICPI_CAP_IRD_ORD_NEGOTIATED | RNICPI_CAP_READ_SINK_REMOTE_WRITE |
                RNICPI_CAP_ZERO_BASED | RNICPI_CAP_FLUSH_ON_ERROR |
                RNICPI_CAP_CQ_OVERFLOW_DETECT | RNICPI_CAP_SRQ |
                /* Data moves through sockets and CPU copies: nothing to pin. */
                RNICPI_CAP_NO_PIN |
                /* The STag model of RFC 5040 2.1 (iw_mem.c). */
                RNICPI_CAP_FAST_REGISTER | RNICPI_CAP_LOCAL_INVALIDATE |
                RNICPI_CAP_REMOTE_INVALIDATE |
                /* RDMAC verbs 7.2.7: the window of an iWARP RNIC, bound to
                 * a queue pair, never to a zero-based region (iw_mw.c). */
                RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_NEEDS_VA_REGION |
                /* RDMA Reads into windows and Read with Invalidate
                 * (RNIC-PI 1.4; the RDMAC verbs' "Read with Invalidate
                 * Local STag"). */
                RNICPI_CAP_READ_SINK_MW;
  /* Sends and Writes complete at transmission, as on siw and iWARP RNICs,
   * unless delivery fences are asked for. */
  if (iw_config.placed)
    c->features |= RNICPI_CAP_PLACED_COMPLETION;
  /* RFC 7306 atomics and immediate data: offered to every peer, used
   * toward one that offers them too (a connection without them refuses
   * them at post). */
  if (rfc7306)
    c->features |= RNICPI_CAP_ATOMICS | RNICPI_CAP_IMMEDIATE;
  c->sw_major = 0;
  c->sw_minor = 1;
  /* MPA allows 512 bytes, of which RFC 6581 takes 4; the default keeps the
   * wire at 256 so siw and cxgb4 accept it (ITAPI_IWARP_PDATA_MAX raises it). */
  c->pdata_connect = c->pdata_accept = c->pdata_reject = iw_config.pdata_max;
  c->pdata_disconnect = 0; /* a TCP FIN carries none */
  c->max_ird = IW_MAX_IRD;
  c->max_ord = IW_MAX_ORD;
  c->max_qp = 1u << 16;
  c->max_qp_wr = 1u << 14;
  c->max_cq = 1u << 16;
  c->max_cqe = 1u << 20;
  c->max_mr = 1u << 24;
  c->max_pd = 1u << 16;
  /* An SRQ holds up to max_qp_wr receives of max_recv_sge entries each. */
  c->max_srq = 1u << 16;
  c->max_send_sge = IW_MAX_SGE;
  c->max_recv_sge = IW_MAX_SGE;
  c->max_rdma_write_sge = IW_MAX_SGE;
  /* RFC 5040 6.1 gives a Read Request one Data Sink STag and TO; a Read
   * into several segments goes out as one wire Read per run of contiguous
   * segments (iw_sq.c, tx_read_part), so the consumer may scatter as far
   * as it may gather. */
  c->max_rdma_read_sge = IW_MAX_SGE;
  c->max_inline = 0;
  c->max_msg_size = UINT32_MAX;
  c->max_mr_size = UINT64_C(1) << 40;
  c->num_ports = 1;
  fill_addrs(c);
}

static rnicpi_status_t
iw_list(char (*names)[RNICPI_DEVICE_NAME_MAX], size_t *count)
{
  if (*count >= 1)
    g_strlcpy(names[0], "iwarp0", RNICPI_DEVICE_NAME_MAX);
  *count = 1;
  return RNICPI_OK;
}

iw_dev_t *
iw_dev_new(const rnicpi_upcalls_t *up, void *ctx)
{
  iw_dev_t *dev = g_new0(iw_dev_t, 1);
  dev->up = *up;
  dev->base.prov = &RNICPI_PROVIDER_SELF(iwarp);
  dev->base.al_ctx = ctx;
  /* Read at every open, not once: the option is per device. */
  dev->rfc7306 = rnicpi_env_int("ITAPI_IWARP_RFC7306", 0, 0, 1) != 0;
  fill_caps(&dev->caps, dev->rfc7306);
  dev->epfd = epoll_create1(EPOLL_CLOEXEC);
  dev->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (dev->epfd < 0 || dev->wakefd < 0) {
    g_warning("iwarp0: cannot create its epoll set or wake-up eventfd: %s (is the process out of "
              "file descriptors? see ulimit -n)", g_strerror(errno));
    if (dev->epfd >= 0)
      close(dev->epfd);
    if (dev->wakefd >= 0)
      close(dev->wakefd);
    g_free(dev);
    return NULL;
  }
  g_mutex_init(&dev->lock);
  g_mutex_init(&dev->ev_lock);
  g_rw_lock_init(&dev->mr_lock);
  dev->listeners = g_hash_table_new(g_direct_hash, g_direct_equal);
  dev->creqs = g_hash_table_new(g_int64_hash, g_int64_equal);
  dev->next_conn_id = 1;
  dev->next_mr_index = 1;
  dev->graveyard = g_ptr_array_new();
  g_queue_init(&dev->events);
  g_queue_init(&dev->timed);
  g_queue_init(&dev->polled);
  return dev;
}

static rnicpi_status_t
iw_open(const char *name, const rnicpi_upcalls_t *up, void *ctx, rnicpi_dev_t **out)
{
  if (g_strcmp0(name, "iwarp0") != 0)
    return RNICPI_ENOENT;
  config_init();
  iw_dev_t *dev = iw_dev_new(up, ctx);
  if (dev == NULL)
    return RNICPI_EIO;
  dev->wake_poll.kind = IW_POLL_WAKE;
  iw_epoll_set(dev, dev->wakefd, &dev->wake_poll, EPOLLIN, TRUE);
  dev->thread = g_thread_new("iwarp0-progress", progress_thread, dev);
  *out = &dev->base;
  return RNICPI_OK;
}

static void
iw_close(rnicpi_dev_t *d)
{
  iw_dev_t *dev = to_iw_dev(d);
  g_atomic_int_set(&dev->stop, TRUE);
  iw_dev_wake(dev);
  g_thread_join(dev->thread);
  rnicpi_notify_quiesce(&dev->notifying);  /* an application thread's */
  free_graveyard(dev);
  g_ptr_array_free(dev->graveyard, TRUE);
  iw_event_t *e;
  while ((e = g_queue_pop_head(&dev->events)) != NULL)
    g_free(e);
  close(dev->epfd);
  close(dev->wakefd);
  g_hash_table_destroy(dev->listeners);
  g_hash_table_destroy(dev->creqs);
  iw_mr_table_free(dev);
  g_mutex_clear(&dev->lock);
  g_mutex_clear(&dev->ev_lock);
  g_rw_lock_clear(&dev->mr_lock);
  g_free(dev);
}

static rnicpi_status_t
iw_query(rnicpi_dev_t *d, rnicpi_caps_t *caps)
{
  *caps = to_iw_dev(d)->caps;
  return RNICPI_OK;
}

static rnicpi_status_t
iw_pd_alloc(rnicpi_dev_t *d, rnicpi_pd_t **out)
{
  iw_dev_t *dev = to_iw_dev(d);
  if (!rnicpi_count_take(&dev->npd, dev->caps.max_pd))
    return RNICPI_ELIMIT;
  iw_pd_t *pd = g_new0(iw_pd_t, 1);
  pd->base.dev = d;
  *out = &pd->base;
  return RNICPI_OK;
}

static rnicpi_status_t
iw_pd_free(rnicpi_pd_t *p)
{
  iw_pd_t *pd = to_iw_pd(p);
  if (g_atomic_int_get(&pd->nobj) != 0)
    return RNICPI_EBUSY;
  rnicpi_count_put(&to_iw_dev(p->dev)->npd);
  g_free(pd);
  return RNICPI_OK;
}

/* RNIC-PI 1.12: this provider's settings that give a capability, for the
 * access layer's messages (it names no provider's variables itself). */
static rnicpi_status_t
iw_cap_advice(rnicpi_dev_t *d, uint64_t cap, char *advice, size_t len)
{
  (void) d;
  switch (cap) {
  case RNICPI_CAP_ATOMICS:
  case RNICPI_CAP_IMMEDIATE:
    /* RFC 7306, offered in the MPA exchange and used when both ends do. */
    g_strlcpy(advice, "the RFC 7306 atomics and immediate data need ITAPI_IWARP_RFC7306=1 in the processes "
              "at both ends before they open the interface", len);
    return RNICPI_OK;
  case RNICPI_CAP_PLACED_COMPLETION:
    g_strlcpy(advice, "set ITAPI_IWARP_COMPLETION=placed before the process first opens an iwarp interface, "
              "toward a peer that offers an IRD above 0", len);
    return RNICPI_OK;
  default:
    return RNICPI_ENOENT;
  }
}

const rnicpi_device_ops_t iw_device_ops = {
  .size = sizeof(rnicpi_device_ops_t),
  .list = iw_list,
  .open = iw_open,
  .close = iw_close,
  .query = iw_query,
  .pd_alloc = iw_pd_alloc,
  .pd_free = iw_pd_free,
  .cap_advice = iw_cap_advice,
};

RNICPI_PROVIDER_DEFINE(iwarp) = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = RNICPI_ABI_MINOR,
  .name = "iwarp",
  .version = "0.1",
  .description = "software iWARP RNIC (RDMAP/DDP/MPA, RFC 5040/5041/5044/6581) over kernel TCP",
  .probe = NULL,
  .device = &iw_device_ops,
  .mem = &iw_mem_ops,
  .queue = &iw_queue_ops,
  .data = &iw_data_ops,
  .cm = &iw_cm_ops,
  .sock = &iw_sock_ops,
  .srq = &iw_srq_ops,
  .mw = &iw_mw_ops,
};
