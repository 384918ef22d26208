/*
 * vp/iwarp connection management: TCP listeners and the connection
 * requests they hold until the consumer answers (the MPA Request read and
 * checked, one that wants markers refused with a Reject, as siw does),
 * the consumer's connect, accept, reject and disconnect (by TCP FIN),
 * socket handoff, the sockets' options, and deadlines.  Once a QP owns
 * its socket, the handshake on it (the MPA Request/Reply exchange and
 * RFC 6581 enhanced setup) is its connection endpoint's, in iw_cep.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iw.h"

void
iw_sock_tune(int fd)
{
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint32_t ms = iw_config.timeout_ms;
  if (ms == 0)
    return;
  /* The transport timeout (doc/provider-iwarp.md, "Transport timeout").
   * RDMAP has no acknowledgement and no retry of its own (RFC 5040 1.2
   * leaves reliability to the LLP), so the RNIC's counterpart of
   * InfiniBand's retry count and ACK timeout is TCP's: TCP_USER_TIMEOUT
   * (RFC 5482) aborts the connection when sent data, or a zero-window
   * probe, stays unacknowledged for ms; keepalive probes (RFC 1122
   * 4.2.3.6) make an idle connection send something, and with a user
   * timeout set Linux aborts it once ms pass without an answer.  The
   * socket error then ends the stream as a reset does (LLP event,
   * BROKEN, every WR flushed). */
  unsigned int uto = ms;
  int idle = (int) MAX(1u, ms / 2000), intvl = (int) MAX(1u, ms / 4000);
  int cnt = (int) MIN(127u, ms / 1000 / (unsigned) intvl + 1);
  if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) != 0)
    g_warning("socket %d: cannot set the %u ms transport timeout (%s); a dead path is then "
              "seen only when the kernel's TCP gives up; check ITAPI_IWARP_TIMEOUT_MS",
              fd, ms, g_strerror(errno));
}

/* Handshake frames are small and go out on an idle socket: wait briefly
 * for room rather than keep a second transmit state machine. */
int
iw_sock_send_all(int fd, const void *buf, size_t len)
{
  const uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t) n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pfd = { .fd = fd, .events = POLLOUT };
      if (poll(&pfd, 1, 2000) <= 0)
        return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

/* ---- deadlines (dev->ev_lock) ------------------------------------------ */

void
iw_timed_add(iw_qp_t *qp, uint64_t us)
{
  iw_dev_t *dev = qp->dev;
  g_mutex_lock(&dev->ev_lock);
  qp->deadline = rnicpi_deadline(g_get_monotonic_time(), us);
  if (qp->timed_link.data == NULL) {
    qp->timed_link.data = qp;
    g_queue_push_tail_link(&dev->timed, &qp->timed_link);
  }
  g_mutex_unlock(&dev->ev_lock);
}

void
iw_timed_del(iw_qp_t *qp)
{
  iw_dev_t *dev = qp->dev;
  g_mutex_lock(&dev->ev_lock);
  if (qp->timed_link.data != NULL) {
    g_queue_unlink(&dev->timed, &qp->timed_link);
    qp->timed_link.data = NULL;
  }
  g_mutex_unlock(&dev->ev_lock);
}

/* Called by the progress thread, which alone frees QPs: the ones taken
 * off the list stay valid while it runs. */
static void creq_drop(iw_creq_t *c);

void
iw_cm_timeouts(iw_dev_t *dev)
{
  gint64 now = g_get_monotonic_time();
  GList *due = NULL;
  /* Deadlines are coarse (seconds): look at them every 10 ms, not at every
   * wake-up of a busy progress thread. */
  if (now < dev->next_timeout_check)
    return;
  dev->next_timeout_check = now + 10000;
  /* A peer that opens TCP and never completes its MPA Request (or dribbles
   * it) must not hold the socket forever. */
  g_mutex_lock(&dev->lock);
  GHashTableIter it;
  gpointer v;
  /* Listeners that ran out of descriptors watch their socket again. */
  g_hash_table_iter_init(&it, dev->listeners);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    iw_listen_t *l = v;
    if (l->paused_until != 0 && l->paused_until <= now) {
      l->paused_until = 0;
      iw_epoll_set(dev, l->fd, &l->poll, EPOLLIN, TRUE);
    }
  }
  g_hash_table_iter_init(&it, dev->creqs);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    iw_creq_t *c = v;
    if (!c->delivered && c->deadline <= now) {
      g_debug("iwarp0: no complete MPA Request within %" G_GUINT64_FORMAT " ms; closing",
              iw_config.mpa_timeout_us / 1000);
      g_hash_table_iter_steal(&it);
      c->id = 0; /* already out of the table */
      creq_drop(c);
    }
  }
  g_mutex_unlock(&dev->lock);
  g_mutex_lock(&dev->ev_lock);
  for (GList *l = dev->timed.head; l != NULL;) {
    GList *next = l->next;
    iw_qp_t *qp = l->data;
    if (qp->deadline <= now) {
      g_queue_unlink(&dev->timed, l);
      l->data = NULL;
      due = g_list_prepend(due, qp);
    }
    l = next;
  }
  g_mutex_unlock(&dev->ev_lock);
  for (GList *l = due; l != NULL; l = l->next) {
    iw_qp_t *qp = l->data;
    iw_work_t w = { .nnotify = 0 };
    g_mutex_lock(&qp->lock);
    if (!qp->dead && qp->fd >= 0) {
      switch (qp->cs) {
      case IW_CS_TCP_CONNECT:
      case IW_CS_MPA_REP:
      case IW_CS_MPA_REQ:
        iw_cep_unreachable(qp, RNICPI_CM_REASON_TIMEOUT, &w);
        break;
      case IW_CS_RTS:
        /* A close fence still unanswered: the FIN goes anyway. */
        if (iw_tx_fin_cut_short(qp))
          iw_timed_add(qp, 5000000);
        break;
      case IW_CS_CLOSING:
        iw_qp_fail(qp, RNICPI_CM_DISCONNECTED, &w);
        iw_qp_close_fd(qp);
        break;
      case IW_CS_HOLD:
        iw_cep_active_establish(qp, &w);
        break;
      case IW_CS_RTR_WAIT:
        iw_qp_llp_fail(qp, &w); /* no RTR in time */
        iw_qp_close_fd(qp);
        break;
      case IW_CS_DRAIN:
        iw_qp_fail(qp, RNICPI_CM_BROKEN, &w);
        iw_qp_close_fd(qp);
        break;
      default:
        break;
      }
    }
    g_mutex_unlock(&qp->lock);
    iw_work_deliver(&w);
  }
  g_list_free(due);
}

/* ---- listeners and pending requests ---------------------------------- */

static void
creq_drop(iw_creq_t *c)
{
  iw_dev_t *dev = c->dev;
  if (c->id != 0)
    g_hash_table_remove(dev->creqs, &c->id);
  if (c->link.data != NULL)
    g_queue_unlink(&c->listener->reading, &c->link);
  c->link.data = NULL;
  c->listener->held--;
  c->dead = TRUE;
  if (c->fd >= 0) {
    iw_epoll_del(dev, c->fd);
    close(c->fd);
    c->fd = -1;
  }
  iw_dev_bury(dev, c);
}

/* An IPv4 peer reaches a dual-stack listener as ::ffff:a.b.c.d: report it
 * as the IPv4 address it is. */
static void
iw_unmap_v4(struct sockaddr_storage *ss)
{
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *) ss;
  if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
    return;
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = s6->sin6_port };
  memcpy(&sin.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
  memset(ss, 0, sizeof(*ss));
  memcpy(ss, &sin, sizeof(sin));
}

/* A line about a connection @l refuses or cannot take, at most once per
 * IW_LISTEN_REPORT_US, with the number of them since the last line
 * (dev->lock held). */
static void G_GNUC_PRINTF(2, 3)
listen_report(iw_listen_t *l, const char *fmt, ...)
{
  gint64 now = g_get_monotonic_time();
  l->unreported++;
  if (now < l->next_report)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_message("iwarp0: TCP port %u: %s (%u time%s since the last report; reported at most once "
            "a minute)", l->port, what, l->unreported, l->unreported == 1 ? "" : "s");
  l->unreported = 0;
  l->next_report = now + IW_LISTEN_REPORT_US;
}

/* Room for one more request on @l, which holds IW_LISTEN_PENDING_MAX: the
 * oldest still reading its MPA Request is closed (a peer that connects
 * and sends nothing cannot keep out one that speaks at once).  FALSE when
 * every request waits for the consumer (dev->lock held). */
static gboolean
listen_make_room(iw_listen_t *l)
{
  GList *oldest = g_queue_peek_head_link(&l->reading);
  if (oldest == NULL)
    return FALSE;
  creq_drop(oldest->data);
  return TRUE;
}

/* accept() failed for want of descriptors or memory: the connection stays
 * in the kernel's queue and the socket stays readable.  The oldest request
 * still reading is closed to free a descriptor if there is one; otherwise
 * the listener leaves the epoll set for IW_ACCEPT_PAUSE_US
 * (iw_cm_timeouts brings it back) instead of waking the progress thread
 * at once, again and again.  TRUE to try again now (dev->lock held). */
static gboolean
listen_out_of_fds(iw_listen_t *l, int err)
{
  /* Linux takes the descriptor before it looks at the queue: accept()
   * fails so even when no connection waits (then nothing is to be done). */
  struct pollfd p = { .fd = l->fd, .events = POLLIN };
  if (poll(&p, 1, 0) <= 0)
    return FALSE;
  if ((err == EMFILE || err == ENFILE) && listen_make_room(l)) {
    listen_report(l, "out of file descriptors (%s): the oldest connection still reading its "
                  "MPA Request is closed for the next; raise `ulimit -n`", g_strerror(err));
    return TRUE;
  }
  iw_epoll_del(l->dev, l->fd);
  l->paused_until = g_get_monotonic_time() + IW_ACCEPT_PAUSE_US;
  listen_report(l, "cannot accept a connection: %s; accepting again in %d ms (raise `ulimit -n` "
                "if descriptors ran out)", g_strerror(err), IW_ACCEPT_PAUSE_US / 1000);
  return FALSE;
}

void
iw_cm_listen_io(iw_listen_t *l)
{
  iw_dev_t *dev = l->dev;
  g_mutex_lock(&dev->lock);
  while (l->fd >= 0 && l->paused_until == 0) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(l->fd, (struct sockaddr *) &ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      if (e == EINTR || e == ECONNABORTED)
        continue;
      if ((e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) && listen_out_of_fds(l, e))
        continue;
      break; /* EAGAIN: all taken */
    }
    if (l->held >= IW_LISTEN_PENDING_MAX) {
      if (!listen_make_room(l)) {
        close(fd);
        listen_report(l, "%u connection requests wait for the consumer's answer, the most a "
                      "listener holds; new connections are closed", l->held);
        continue;
      }
      listen_report(l, "%u connection requests held, the most a listener keeps; the oldest "
                    "still reading its MPA Request is closed for each new one",
                    IW_LISTEN_PENDING_MAX);
    }
    iw_sock_tune(fd);
    iw_creq_t *c = g_new0(iw_creq_t, 1);
    c->poll.kind = IW_POLL_CREQ;
    c->dev = dev;
    c->listener = l;
    c->id = dev->next_conn_id++;
    c->fd = fd;
    c->peer = ss;
    iw_unmap_v4(&c->peer);
    c->deadline = g_get_monotonic_time() + (gint64) iw_config.mpa_timeout_us;
    g_hash_table_insert(dev->creqs, &c->id, c);
    c->link.data = c;
    g_queue_push_tail_link(&l->reading, &c->link);
    l->held++;
    iw_epoll_set(dev, fd, &c->poll, EPOLLIN | EPOLLRDHUP, TRUE);
  }
  g_mutex_unlock(&dev->lock);
}

void
iw_cm_creq_io(iw_creq_t *c, uint32_t events)
{
  (void) events;
  iw_dev_t *dev = c->dev;
  g_mutex_lock(&dev->lock);
  if (c->dead)
    goto unlock;
  if (c->delivered) {
    /* The initiator sends nothing before our reply: EOF means it gave up,
     * data means it broke the protocol.  Either way the request is gone. */
    uint8_t b;
    ssize_t n = recv(c->fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      goto unlock;
    rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
    ev->type = RNICPI_CM_REQUEST_CANCELLED;
    ev->listen_ctx = c->listener->base.al_ctx;
    ev->conn_id = c->id;
    iw_defer_cm(dev, ev);
    g_free(ev);
    creq_drop(c);
    goto unlock;
  }
  int r = iw_cep_read_frame(c->fd, c->hs, &c->hs_got, false);
  if (r == 0)
    goto unlock;
  if (r < 0 || iw_mpa_parse(c->hs, c->hs_got, false, &c->req) != IW_MPA_OK) {
    g_debug("iwarp0: dropping a connection with a bad MPA request");
    creq_drop(c);
    goto unlock;
  }
  if (c->req.markers) {
    /* RFC 5044 4.3, 7.1.1 (M bit): we do not do markers; refuse like siw. */
    /* RFC 6581 10: an enhanced request's reject is enhanced too. */
    iw_mpa_msg_t rej = { .reply = true, .reject = true, .rev = c->req.rev,
                         .enhanced = c->req.enhanced };
    uint8_t buf[sizeof(iw_mpa_rr_t) + sizeof(iw_mpa_v2_t)];
    iw_sock_send_all(c->fd, buf, iw_mpa_build(&rej, buf));
    creq_drop(c);
    goto unlock;
  }
  c->delivered = TRUE;
  if (c->link.data != NULL)
    g_queue_unlink(&c->listener->reading, &c->link);
  c->link.data = NULL;
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_CONNECT_REQUEST;
  ev->listen_ctx = c->listener->base.al_ctx;
  ev->conn_id = c->id;
  memcpy(&ev->src.sa, &c->peer, sizeof(c->peer));
  ev->port = c->listener->port;
  ev->ird = c->req.ird == IW_MPA_V2_VALUE ? dev->caps.max_ird : c->req.ird;
  ev->ord = c->req.ord == IW_MPA_V2_VALUE ? dev->caps.max_ord : c->req.ord;
  ev->pdata_len = c->req.pdata_len;
  memcpy(ev->pdata, c->req.pdata, c->req.pdata_len);
  iw_defer_cm(dev, ev);
  g_free(ev);
unlock:
  g_mutex_unlock(&dev->lock);
}

/* A socket bound to TCP port @port on every address: IPv6 and IPv4 at once
 * (an IPv6 socket with IPV6_V6ONLY off), or IPv4 alone where the kernel
 * has no IPv6.  -1 with errno set on failure. */
static int
listen_socket(uint32_t port)
{
  int one = 1, off = 0;
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t) port),
                                 .sin6_addr = in6addr_any };
    if (bind(fd, (struct sockaddr *) &sin6, sizeof(sin6)) == 0)
      return fd;
    int e = errno;
    close(fd);
    if (e != EADDRNOTAVAIL && e != EAFNOSUPPORT) {
      errno = e;
      return -1;
    }
  } else if (errno != EAFNOSUPPORT) {
    return -1;
  }
  fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                             .sin_addr.s_addr = htonl(INADDR_ANY) };
  if (bind(fd, (struct sockaddr *) &sin, sizeof(sin)) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static rnicpi_status_t
iw_listen(rnicpi_dev_t *d, uint32_t port, uint64_t ctx, rnicpi_listen_t **out)
{
  iw_dev_t *dev = to_iw_dev(d);
  if (port == 0 || port > 65535)
    return RNICPI_EINVAL;
  g_mutex_lock(&dev->lock);
  rnicpi_status_t st = RNICPI_OK;
  int fd = -1;
  if (g_hash_table_contains(dev->listeners, GUINT_TO_POINTER(port))) {
    st = RNICPI_EEXIST;
    goto unlock;
  }
  fd = listen_socket(port);
  /* The largest backlog (SOMAXCONN; the kernel caps it at net.core.somaxconn): with a short
   * accept queue a burst of connects (iwarp-scale keeps 256 in flight) has
   * SYNs and ACKs dropped and retried seconds later, past the connect
   * timeout of a busy host. */
  if (fd < 0 || listen(fd, SOMAXCONN) != 0) {
    int e = errno;
    g_debug("iwarp0: listening on TCP port %u: %s", port, g_strerror(e));
    st = e == EADDRINUSE ? RNICPI_EEXIST : e == EACCES ? RNICPI_EACCES : RNICPI_EIO;
    if (fd >= 0)
      close(fd);
    goto unlock;
  }
  iw_listen_t *l = g_new0(iw_listen_t, 1);
  l->poll.kind = IW_POLL_LISTEN;
  l->base.dev = d;
  l->base.al_ctx = ctx;
  l->dev = dev;
  l->port = port;
  l->fd = fd;
  g_hash_table_insert(dev->listeners, GUINT_TO_POINTER(port), l);
  iw_epoll_set(dev, fd, &l->poll, EPOLLIN, TRUE);
  *out = &l->base;
unlock:
  g_mutex_unlock(&dev->lock);
  return st;
}

static rnicpi_status_t
iw_unlisten(rnicpi_listen_t *lb)
{
  iw_listen_t *l = to_iw_listen(lb);
  iw_dev_t *dev = l->dev;
  g_mutex_lock(&dev->lock);
  g_hash_table_remove(dev->listeners, GUINT_TO_POINTER(l->port));
  iw_epoll_del(dev, l->fd);
  close(l->fd);
  l->fd = -1;
  /* Requests nobody answered are refused: their initiators see the
   * connection close before a reply, i.e. UNREACHABLE. */
  GList *cs = g_hash_table_get_values(dev->creqs);
  for (GList *i = cs; i != NULL; i = i->next) {
    iw_creq_t *c = i->data;
    if (c->listener == l)
      creq_drop(c);
  }
  g_list_free(cs);
  g_mutex_unlock(&dev->lock);
  iw_dev_bury(dev, l);
  return RNICPI_OK;
}

static rnicpi_status_t
iw_connect(rnicpi_qp_t *q, const rnicpi_addr_t *dst, const rnicpi_conn_param_t *p)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_dev_t *dev = qp->dev;
  iw_work_t w = { .nnotify = 0 };
  if (p->pdata_len > dev->caps.pdata_connect)
    return RNICPI_ELIMIT;
  if (p->ird > dev->caps.max_ird || p->ord > dev->caps.max_ord)
    return RNICPI_ELIMIT;
  socklen_t sl;
  if (dst->sa.ss_family == AF_INET)
    sl = sizeof(struct sockaddr_in);
  else if (dst->sa.ss_family == AF_INET6)
    sl = sizeof(struct sockaddr_in6);
  else
    return RNICPI_EINVAL;
  rnicpi_status_t st = RNICPI_OK;
  g_mutex_lock(&qp->lock);
  if (qp->state != RNICPI_QPS_IDLE || qp->cs != IW_CS_NONE) {
    st = RNICPI_ESTATE;
    goto unlock;
  }
  int fd = socket(dst->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    st = RNICPI_EIO;
    goto unlock;
  }
  iw_sock_tune(fd);
  /* The kernel picks this socket's port from the ephemeral range, where
   * applications also listen (dtestcm's qualifiers start at 45248): with
   * SO_REUSEADDR on both sides, a listener may bind a port this socket
   * holds, even in TIME_WAIT after it closed. */
  int one = 1;
  (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  iw_cep_set_param(qp, p);
  qp->active = TRUE;
  qp->fd = fd;
  qp->final_event = FALSE;
  qp->cs = IW_CS_TCP_CONNECT;
  qp->epmask = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
  iw_timed_add(qp, p->timeout_us != 0 ? p->timeout_us : IW_CONNECT_TIMEOUT_US);
  int r = connect(fd, (const struct sockaddr *) &dst->sa, sl);
  if (r != 0 && errno != EINPROGRESS) {
    iw_cep_unreachable(qp, rnicpi_cm_reason_of_errno(errno), &w);
    goto unlock;
  }
  iw_epoll_set(dev, fd, &qp->poll, qp->epmask, TRUE);
unlock:
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  return st;
}

static rnicpi_status_t
iw_accept(rnicpi_qp_t *q, uint64_t id, const rnicpi_conn_param_t *p)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_dev_t *dev = qp->dev;
  iw_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  g_mutex_lock(&dev->lock);
  iw_creq_t *c = g_hash_table_lookup(dev->creqs, &id);
  if (c == NULL || !c->delivered) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ENOENT;
  }
  if (p->pdata_len > dev->caps.pdata_accept || p->ird > dev->caps.max_ird ||
      p->ord > dev->caps.max_ord) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ELIMIT;
  }
  g_mutex_lock(&qp->lock);
  if (qp->state != RNICPI_QPS_IDLE || qp->cs != IW_CS_NONE) {
    st = RNICPI_ESTATE;
    goto unlock;
  }
  /* The QP takes the socket over. */
  iw_mpa_msg_t req = c->req;
  uint8_t hs[sizeof(c->hs)];
  memcpy(hs, c->hs, sizeof(hs));
  req.pdata = hs + (c->req.pdata - c->hs);
  int fd = c->fd;
  iw_epoll_del(dev, fd);
  c->fd = -1;
  creq_drop(c);
  iw_cep_set_param(qp, p);
  qp->active = FALSE;
  qp->fd = fd;
  qp->final_event = FALSE;
  qp->epmask = EPOLLIN | EPOLLRDHUP;
  iw_epoll_set(dev, fd, &qp->poll, qp->epmask, TRUE);
  st = iw_cep_passive_reply(qp, &req, p, &w);
unlock:
  g_mutex_unlock(&qp->lock);
  g_mutex_unlock(&dev->lock);
  iw_work_deliver(&w);
  return st;
}

static rnicpi_status_t
iw_reject(rnicpi_dev_t *d, uint64_t id, const void *pdata, uint32_t len)
{
  iw_dev_t *dev = to_iw_dev(d);
  if (len > dev->caps.pdata_reject)
    return RNICPI_ELIMIT;
  g_mutex_lock(&dev->lock);
  iw_creq_t *c = g_hash_table_lookup(dev->creqs, &id);
  if (c == NULL || !c->delivered) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ENOENT;
  }
  iw_mpa_msg_t rej = { .reply = true, .reject = true, .rev = c->req.rev,
                       .enhanced = c->req.enhanced, .crc = c->req.crc,
                       .ird = IW_MPA_V2_VALUE, .ord = IW_MPA_V2_VALUE,
                       .pdata = pdata, .pdata_len = len };
  uint8_t buf[sizeof(iw_mpa_rr_t) + IW_MPA_PDATA_MAX];
  iw_sock_send_all(c->fd, buf, iw_mpa_build(&rej, buf));
  shutdown(c->fd, SHUT_WR);
  creq_drop(c);
  g_mutex_unlock(&dev->lock);
  return RNICPI_OK;
}

static rnicpi_status_t
iw_disconnect(rnicpi_qp_t *q, const void *pdata, uint32_t len)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  (void) pdata;
  if (len > 0)
    return RNICPI_ELIMIT; /* a FIN carries no private data */
  g_mutex_lock(&qp->lock);
  switch (qp->cs) {
  case IW_CS_RTS:
    /* FIN once the send queue has drained and a last zero-length Read
     * has come back (iw_tx_progress): the peer answers it only after the
     * message it may still be transmitting, and Linux siw fails that
     * message if our FIN arrives first, although we received all of it
     * (siw_qp_sq_proc_tx checks for a peer close before the last-segment
     * flag).  The fence is a Read: with no room for one (our ORD or the
     * peer's IRD 0, iw_qp_read_room) the FIN goes alone. */
    qp->closing = TRUE;
    qp->fin_fence = iw_qp_read_room(qp) > 0;
    iw_tx_progress(qp, &w);
    break;
  case IW_CS_TCP_CONNECT:
  case IW_CS_MPA_REP:
  case IW_CS_HOLD:
  case IW_CS_MPA_REQ:
  case IW_CS_RTR_WAIT:
    iw_qp_flush(qp, &w);
    iw_qp_cm_event(qp, RNICPI_CM_DISCONNECTED, NULL, 0, RNICPI_CM_REASON_NONE);
    iw_qp_close_fd(qp);
    break;
  default:
    if (qp->state != RNICPI_QPS_ERROR)
      st = RNICPI_ESTATE;
    break;
  }
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  return st;
}

/* rnicpi_sock_ops_t.handoff: MPA on a socket the access layer connected. */
static rnicpi_status_t
iw_handoff(rnicpi_qp_t *q, int fd, bool active, const rnicpi_conn_param_t *p)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_dev_t *dev = qp->dev;
  iw_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  if (fd < 0)
    return RNICPI_EINVAL;
  if (p->pdata_len > (active ? dev->caps.pdata_connect : dev->caps.pdata_accept) ||
      p->ird > dev->caps.max_ird || p->ord > dev->caps.max_ord)
    return RNICPI_ELIMIT;
  int type = 0;
  socklen_t tl = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)
    return RNICPI_EINVAL;
  g_mutex_lock(&qp->lock);
  if (qp->state != RNICPI_QPS_IDLE || qp->cs != IW_CS_NONE) {
    st = RNICPI_ESTATE;
    goto unlock;
  }
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  iw_sock_tune(fd);
  iw_cep_set_param(qp, p);
  qp->active = active;
  qp->handoff = TRUE;
  qp->fd = fd;
  qp->final_event = FALSE;
  qp->epmask = EPOLLIN | EPOLLRDHUP;
  iw_epoll_set(dev, fd, &qp->poll, qp->epmask, TRUE);
  iw_timed_add(qp, p->timeout_us != 0 ? p->timeout_us : IW_CONNECT_TIMEOUT_US);
  if (active) {
    iw_cep_send_request(qp, &w);
  } else {
    qp->cs = IW_CS_MPA_REQ;
  }
unlock:
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  return st;
}

const rnicpi_cm_ops_t iw_cm_ops = {
  .size = sizeof(rnicpi_cm_ops_t),
  .listen = iw_listen,
  .unlisten = iw_unlisten,
  .connect = iw_connect,
  .accept = iw_accept,
  .reject = iw_reject,
  .disconnect = iw_disconnect,
};

const rnicpi_sock_ops_t iw_sock_ops = {
  .size = sizeof(rnicpi_sock_ops_t),
  .handoff = iw_handoff,
};
