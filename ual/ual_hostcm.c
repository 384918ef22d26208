/*
 * The access layer's host-stack connection path: it_ep_connect opens the
 * TCP connection through the host's own stack, then hands the connected
 * socket to the provider with the same verb as it_socket_convert
 * (rnicpi_sock_ops_t.handoff), which runs the transport's setup (MPA) on it.
 *
 * A provider that offers socket handoff but no connection-management verbs
 * gets IP connections this way; ITAPI_CM=host sends every connect of a
 * handoff-capable IA this way (host routing, source address and socket
 * options apply), ITAPI_CM=provider never.  Listeners stay the provider's.
 *
 * One thread waits for the connects in flight (poll), each with the path's
 * timeout, and finishes them under the access layer's lock.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnicpi_util.h"
#include "ual.h"

typedef struct {
  uint64_t ep;                 /* the EP's handle value */
  int fd;
  gint64 deadline;             /* monotonic µs, or 0 for the kernel's own timeout */
  int err;                     /* how it ended: 0 connected, else an errno */
  rnicpi_conn_param_t param;
  unsigned char pdata[IT_MAX_PRIV_DATA];
} hc_conn_t;

static GMutex hc_lock;         /* nests inside ual_lock */
static GPtrArray *hc_pending;  /* hc_conn_t* */
static int hc_wake = -1;       /* eventfd: the pending set changed */

gboolean
ual_hostcm_wanted(const ual_ia_t *ia)
{
  if (!(ia->caps.features & RNICPI_CAP_SOCKET_HANDOFF))
    return FALSE;
  /* ITAPI_CM overrides the configuration file, whose values were
   * checked when it was read. */
  const char *mode = g_getenv("ITAPI_CM");
  if (mode == NULL || *mode == '\0')
    mode = ia->iface->cm;
  if (mode != NULL && strcmp(mode, "host") == 0)
    return TRUE;
  if (mode != NULL && strcmp(mode, "provider") == 0)
    return FALSE;
  if (mode != NULL && *mode != '\0' && strcmp(mode, "auto") != 0)
    g_warning("ITAPI_CM=%s is not auto, host or provider; IA '%s' uses auto (set one of the three, "
              "or unset it)", mode, ia->iface->name);
  return !(ia->caps.features & RNICPI_CAP_CM_VERBS);
}

/* End a connect: hand the socket over, or report why it failed (ual_lock held). */
static void
finish(hc_conn_t *c, int err)
{
  ual_ep_t *ep = ual_ep_get((it_ep_handle_t) (uintptr_t) c->ep);
  if (ep == NULL || g_atomic_int_get(&ep->state) != IT_EP_STATE_ACTIVE1_CONNECTION_PENDING) {
    close(c->fd);
    return;
  }
  ual_ia_t *ia = ep->obj.ia;
  if (err == 0) {
    if (c->deadline != 0) {
      gint64 left = c->deadline - g_get_monotonic_time();
      c->param.timeout_us = (uint64_t) MAX(left, (gint64) 1000);
    }
    c->param.pdata = c->pdata;
    rnicpi_status_t rs = ia->prov->sock->handoff(ep->qp, c->fd, TRUE, &c->param);
    if (rs == RNICPI_OK)
      return; /* the provider reports the outcome of its setup */
    g_message("IA '%s': provider '%s' refused the socket of EP %p's host-stack connect: %s; "
              "the connect ends in a non-peer reject (ITAPI_CM=provider uses the provider's own "
              "connect instead)", ia->iface->name, ia->prov->name,
              (void *) (uintptr_t) c->ep, rnicpi_status_message(rs));
    close(c->fd);
    ual_cm_fail(ep, RNICPI_CM_UNREACHABLE, RNICPI_CM_REASON_RESOURCES);
    return;
  }
  close(c->fd);
  ual_cm_fail(ep, RNICPI_CM_UNREACHABLE, rnicpi_cm_reason_of_errno(err));
}

/* Where a connect stands: 0 connected, an errno when it failed, -1 still going. */
static int
connect_state(int fd)
{
  int err = 0;
  socklen_t l = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
    return errno;
  if (err != 0)
    return err;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  return getpeername(fd, (struct sockaddr *) &ss, &sl) == 0 ? 0 : -1;
}

static gpointer
hc_thread(gpointer data)
{
  (void) data;
  GArray *fds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
  for (;;) {
    g_array_set_size(fds, 0);
    struct pollfd w = { .fd = hc_wake, .events = POLLIN };
    g_array_append_val(fds, w);
    gint64 now = g_get_monotonic_time(), next = 0;
    g_mutex_lock(&hc_lock);
    for (guint i = 0; i < hc_pending->len; i++) {
      hc_conn_t *c = g_ptr_array_index(hc_pending, i);
      struct pollfd p = { .fd = c->fd, .events = POLLOUT };
      g_array_append_val(fds, p);
      if (c->deadline != 0 && (next == 0 || c->deadline < next))
        next = c->deadline;
    }
    g_mutex_unlock(&hc_lock);
    int timeout = next == 0 ? -1 : (int) MAX((next - now + 999) / 1000, 0);
    if (poll((struct pollfd *) fds->data, fds->len, timeout) < 0 && errno != EINTR)
      g_error("host-stack connect thread: poll failed: %s", g_strerror(errno));
    if (g_array_index(fds, struct pollfd, 0).revents & POLLIN) {
      uint64_t v;
      if (read(hc_wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
        g_error("host-stack connect thread: reading its wake-up eventfd failed: %s", g_strerror(errno));
    }
    now = g_get_monotonic_time();
    /* Finish whatever completed or ran out of time.  A descriptor polled
     * above may since have been cancelled and reused, so each entry's state
     * is read from its socket, not from revents. */
    ual_lock_take();
    g_mutex_lock(&hc_lock);
    GPtrArray *done = g_ptr_array_new();
    for (guint i = 0; i < hc_pending->len;) {
      hc_conn_t *c = g_ptr_array_index(hc_pending, i);
      c->err = connect_state(c->fd);
      if (c->err < 0 && c->deadline != 0 && now >= c->deadline)
        c->err = ETIMEDOUT;
      if (c->err < 0) {
        i++;
        continue;
      }
      g_ptr_array_add(done, g_ptr_array_steal_index_fast(hc_pending, i));
    }
    g_mutex_unlock(&hc_lock);
    for (guint i = 0; i < done->len; i++) {
      hc_conn_t *c = g_ptr_array_index(done, i);
      finish(c, c->err);
      g_free(c);
    }
    ual_lock_drop();
    g_ptr_array_unref(done);
  }
  return NULL;
}

static void
wake(void)
{
  uint64_t one = 1;
  if (write(hc_wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
    g_warning("host-stack connect thread: waking it failed: %s", g_strerror(errno));
}

static void
start_once(void)
{
  static gsize started = 0;
  if (g_once_init_enter(&started)) {
    hc_pending = g_ptr_array_new();
    hc_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (hc_wake < 0)
      g_error("host-stack connect path: eventfd failed: %s", g_strerror(errno));
    g_thread_unref(g_thread_new("itapi-hostcm", hc_thread, NULL));
    g_once_init_leave(&started, 1);
  }
}

it_status_t
ual_hostcm_connect(ual_ep_t *ep, const rnicpi_addr_t *dst, const rnicpi_conn_param_t *p)
{
  start_once();
  ual_ia_t *ia = ep->obj.ia;
  int family = dst->sa.ss_family;
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int e = errno;
    return ual_fail(e == EAFNOSUPPORT ? IT_ERR_INVALID_SOURCE_PATH : IT_ERR_RESOURCES,
                    "IA '%s': no TCP socket (address family %d) for EP %p's host-stack connect: %s; %s",
                    ia->iface->name, family, (void *) (uintptr_t) ep->obj.handle, g_strerror(e),
                    e == EAFNOSUPPORT ? "use a path of the other IP version, or ITAPI_CM=provider"
                                      : "close unused endpoints or raise the open-file limit");
  }
  socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  int err = connect(fd, (const struct sockaddr *) &dst->sa, len) == 0 ? 0 : errno;
  hc_conn_t *c = g_new0(hc_conn_t, 1);
  c->ep = ep->obj.handle;
  c->fd = fd;
  c->param = *p;
  c->param.pdata = NULL;
  if (p->pdata_len > 0)
    memcpy(c->pdata, p->pdata, MIN((size_t) p->pdata_len, sizeof(c->pdata)));
  c->deadline = p->timeout_us != 0 ? rnicpi_deadline(g_get_monotonic_time(), p->timeout_us) : 0;
  if (c->deadline == G_MAXINT64)
    c->deadline = 0; /* never (IT_TIMEOUT_INFINITE): the provider is told so at handoff */
  if (err == 0 || err == EINPROGRESS) {
    g_mutex_lock(&hc_lock);
    g_ptr_array_add(hc_pending, c);
    g_mutex_unlock(&hc_lock);
    wake();
    return IT_SUCCESS;
  }
  /* Refused at once (no route, no address): the same event a late failure gives. */
  finish(c, err);
  g_free(c);
  return IT_SUCCESS;
}

gboolean
ual_hostcm_cancel(ual_ep_t *ep)
{
  if (hc_pending == NULL)
    return FALSE;
  hc_conn_t *found = NULL;
  g_mutex_lock(&hc_lock);
  for (guint i = 0; i < hc_pending->len; i++) {
    hc_conn_t *c = g_ptr_array_index(hc_pending, i);
    if (c->ep == ep->obj.handle) {
      found = g_ptr_array_steal_index_fast(hc_pending, i);
      break;
    }
  }
  g_mutex_unlock(&hc_lock);
  if (found == NULL)
    return FALSE;
  close(found->fd);
  g_free(found);
  wake();
  return TRUE;
}
