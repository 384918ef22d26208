/*
 * dat/: consumer notification objects.  A CNO is the set of EVDs created
 * with it; each such EVD's IT-API dispatcher (the aggregate, or the one
 * SEVD) is made with a descriptor (IT_EVD_CREATE_FD), readable exactly
 * while it has events.  The CNO watches them edge-triggered (an epoll set):
 * dat_cno_wait names an EVD that went from empty to having events since
 * the last wait, as DAT 2.0 6.3.1 has a CNO triggered by an EVD's
 * notification rather than by events the consumer left queued (a level
 * would wake a waiter for one EVD again and again on another's leftovers).
 * As DAT allows, a wakeup whose event another thread took finds the EVD
 * empty.  When the last EVD of a CNO is freed (or moved to another CNO)
 * while threads wait on it, they return with no EVD, as DAT 2.0 6.3.2.3
 * has them unblocked.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* What the gone descriptor's epoll event carries: no EVD's cell. */
static const char gone_tag;

static DAT_RETURN
cno_create_on_held(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno_handle)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (cno_handle == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  datx_cno_t *cno = g_new0(datx_cno_t, 1);
  cno->ia = ia;
  cno->agent = agent;
  g_mutex_init(&cno->lock);
  cno->evds = g_ptr_array_new();
  cno->epfd = epoll_create1(EPOLL_CLOEXEC);
  cno->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  cno->gone = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  /* The wake descriptor names no EVD (data.ptr NULL); closing an epoll
   * set does not wake epoll_wait, so an abrupt close writes it instead.
   * The gone descriptor says the last EVD left while threads waited. */
  struct epoll_event wev = { .events = EPOLLIN, .data.ptr = NULL };
  struct epoll_event gev = { .events = EPOLLIN, .data.ptr = (void *) &gone_tag };
  if (cno->epfd < 0 || cno->wake < 0 || cno->gone < 0 ||
      epoll_ctl(cno->epfd, EPOLL_CTL_ADD, cno->wake, &wev) != 0 ||
      epoll_ctl(cno->epfd, EPOLL_CTL_ADD, cno->gone, &gev) != 0) {
    g_message("DAT CNO on %s: making its epoll set and wake descriptor failed: %s (the "
              "process's descriptor limit, ulimit -n, may be reached)",
              ia->provider->it_name, g_strerror(errno));
    goto err_close;
  }
  cno->cell = datx_cell_new(&ia->provider->dat, DATX_CNO, cno, ia);
  if (cno->cell == NULL)
    goto err_close;
  *cno_handle = cno->cell;
  return DAT_SUCCESS;

err_close:
  if (cno->gone >= 0)
    close(cno->gone);
  if (cno->wake >= 0)
    close(cno->wake);
  if (cno->epfd >= 0)
    close(cno->epfd);
  g_ptr_array_free(cno->evds, TRUE);
  g_free(cno);
  return DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
}

DAT_RETURN
datx_cno_create(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA, cno_create_on_held(ia_handle, agent, cno_handle));
}

static DAT_RETURN
cno_modify_agent_on_held(DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent)
{
  datx_cno_t *cno = datx_cell_get(cno_handle, DATX_CNO);
  if (cno == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  cno->agent = agent;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_cno_modify_agent(DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent)
{
  DATX_RETURN_HELD(cno_handle, DATX_CNO, cno_modify_agent_on_held(cno_handle, agent));
}

static DAT_RETURN
cno_query_on_held(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param)
{
  datx_cno_t *cno = datx_cell_get(cno_handle, DATX_CNO);
  if (cno == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  (void) mask; /* every field is cheap: all are filled */
  param->ia_handle = cno->ia->cell;
  param->proxy_type = DAT_PROXY_TYPE_AGENT;
  param->proxy.agent = cno->agent;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_cno_query(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param)
{
  DATX_RETURN_HELD(cno_handle, DATX_CNO, cno_query_on_held(cno_handle, mask, param));
}

DAT_RETURN
datx_cno_free(DAT_CNO_HANDLE cno_handle)
{
  datx_cell_t *cell = datx_cell_hold(cno_handle, DATX_CNO);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  datx_cno_t *cno = cell->object;
  datx_cell_put(cell);
  /* The EVDs attached use the CNO (datx_cno_attach()); a thread in
   * dat_cno_wait holds it, and closing the epoll set would not wake it:
   * the free is refused (DAT 2.0 6.3.1.4, in use). */
  switch (datx_cell_retire(cell)) {
  case DATX_BUSY:
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
  case DATX_GONE:
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  case DATX_RETIRED:
    break;
  }
  datx_cell_kill(cno->cell, cno->ia);
  datx_cno_destroy(cno);
  return DAT_SUCCESS;
}

void
datx_cno_destroy(datx_cno_t *cno)
{
  close(cno->gone);
  close(cno->wake);
  close(cno->epfd);
  g_ptr_array_free(cno->evds, TRUE);
  g_mutex_clear(&cno->lock);
  g_free(cno);
}

void
datx_cno_wake_dead(datx_cno_t *cno)
{
  uint64_t one = 1;
  if (write(cno->wake, &one, sizeof(one)) != (ssize_t) sizeof(one))
    g_warning("DAT CNO %u: waking its waiters failed: %s; they return only when their "
              "timeout expires", cno->cell->id, g_strerror(errno));
}

void
datx_cno_attach(datx_evd_t *evd, datx_cno_t *cno)
{
  /* Two dat_evd_modify_cno calls on one EVD may race: one at a time.  The
   * descriptor is read once, atomically: a racing call on an EVD made
   * without a CNO sets it (to the same descriptor) outside this lock. */
  g_mutex_lock(&evd->cno_lock);
  int fd = g_atomic_int_get(&evd->fd);
  datx_cno_t *old = evd->cno;
  if (old != NULL) {
    g_mutex_lock(&old->lock);
    g_ptr_array_remove(old->evds, evd);
    epoll_ctl(old->epfd, EPOLL_CTL_DEL, fd, NULL);
    /* Its waiters have nothing left to wait for. */
    uint64_t one = 1;
    if (old->evds->len == 0 && g_atomic_int_get(&old->waiters) > 0 &&
        write(old->gone, &one, sizeof(one)) != (ssize_t) sizeof(one))
      g_warning("DAT CNO %u: waking its waiters as its last EVD left failed: %s; they return "
                "only when their timeout expires", old->cell->id, g_strerror(errno));
    g_mutex_unlock(&old->lock);
    datx_cell_unuse(old->cell);
  }
  evd->cno = cno;
  if (cno != NULL) {
    /* The event names the EVD's cell, which outlives the EVD. */
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = evd->cell };
    g_mutex_lock(&cno->lock);
    /* An EVD again: a wake for the last one's leaving is past. */
    uint64_t n;
    if (cno->evds->len == 0 && read(cno->gone, &n, sizeof(n)) < 0 && errno != EAGAIN)
      g_debug("DAT CNO %u: reading its gone descriptor: %s", cno->cell->id, g_strerror(errno));
    g_ptr_array_add(cno->evds, evd);
    if (epoll_ctl(cno->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
      g_warning("DAT CNO %u: watching EVD %u (IT-API descriptor %d) failed: %s; dat_cno_wait "
                "will not wake for that EVD's events: wait on the EVD itself (dat_evd_wait)",
                cno->cell->id, evd->cell->id, fd, g_strerror(errno));
    g_mutex_unlock(&cno->lock);
  }
  g_mutex_unlock(&evd->cno_lock);
}

/* Milliseconds for epoll_wait, rounded up, from microseconds. */
static int
ms_of_us(uint64_t us)
{
  return (int) MIN((us + 999) / 1000, (uint64_t) G_MAXINT);
}

static DAT_RETURN
cno_wait_counted(datx_cno_t *cno, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_handle)
{
  if (evd_handle == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  g_mutex_lock(&cno->lock);
  for (guint i = 0; i < cno->evds->len; i++) {
    datx_evd_t *evd = g_ptr_array_index(cno->evds, i);
    if (datx_evd_has_held(evd)) {
      *evd_handle = evd->cell;
      g_mutex_unlock(&cno->lock);
      return DAT_SUCCESS;
    }
  }
  g_mutex_unlock(&cno->lock);
  int ms = timeout == DAT_TIMEOUT_INFINITE ? -1 : ms_of_us(timeout);
  gint64 deadline = ms < 0 ? -1 : g_get_monotonic_time() + (gint64) timeout;
  for (;;) {
    struct epoll_event ev;
    int r = epoll_wait(cno->epfd, &ev, 1, ms);
    if (r < 0)
      return errno == EINTR ? DATX_ERR(DAT_INTERRUPTED_CALL, DAT_SUB_INTERRUPTED)
                            : DATX_ERR(DAT_INTERNAL_ERROR, 0);
    if (r == 0) {
      *evd_handle = DAT_HANDLE_NULL;
      return DATX_ERR(DAT_TIMEOUT_EXPIRED, 0);
    }
    if (ev.data.ptr == NULL) {
      /* The IA is closing abruptly (datx_cno_wake_dead). */
      *evd_handle = DAT_HANDLE_NULL;
      return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_DEAD);
    }
    if (ev.data.ptr == &gone_tag) {
      *evd_handle = DAT_HANDLE_NULL;
      return DAT_SUCCESS;
    }
    /* An EVD freed since its edge: wait on for the time left. */
    if (datx_cell_get(ev.data.ptr, DATX_EVD) != NULL) {
      *evd_handle = ev.data.ptr;
      return DAT_SUCCESS;
    }
    if (deadline >= 0) {
      gint64 left = deadline - g_get_monotonic_time();
      ms = left <= 0 ? 0 : ms_of_us((uint64_t) left);
    }
  }
}

/* A wait, counted: the last waiter out takes back the wake for a last
 * EVD's leaving, so that it wakes only the threads that waited then. */
static DAT_RETURN
cno_wait(datx_cno_t *cno, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_handle)
{
  g_atomic_int_inc(&cno->waiters);
  DAT_RETURN ret = cno_wait_counted(cno, timeout, evd_handle);
  if (g_atomic_int_dec_and_test(&cno->waiters)) {
    uint64_t n;
    if (read(cno->gone, &n, sizeof(n)) < 0 && errno != EAGAIN)
      g_debug("DAT CNO %u: reading its gone descriptor: %s", cno->cell->id, g_strerror(errno));
  }
  return ret;
}

DAT_RETURN
datx_cno_wait(DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_handle)
{
  datx_cell_t *cell = datx_cell_hold(cno_handle, DATX_CNO);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  DAT_RETURN ret = cno_wait(cell->object, timeout, evd_handle);
  datx_cell_put(cell);
  return ret;
}

/* DAT 2.0 dat_cno_fd_create: a CNO whose descriptor becomes readable when
 * it is triggered.  The CNO's epoll set is that descriptor: an epoll set
 * polls readable while an EVD's edge (or the abrupt close's wake) waits in
 * it, and dat_cno_trigger takes the edge. */
static DAT_RETURN
cno_fd_create_on_held(DAT_IA_HANDLE ia_handle, DAT_FD *fd, DAT_CNO_HANDLE *cno_handle)
{
  if (fd == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  DAT_OS_WAIT_PROXY_AGENT none = DAT_OS_WAIT_PROXY_AGENT_NULL;
  DAT_RETURN ret = cno_create_on_held(ia_handle, none, cno_handle);
  if (ret != DAT_SUCCESS)
    return ret;
  *fd = ((datx_cno_t *) ((datx_cell_t *) *cno_handle)->object)->epfd;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_cno_fd_create(DAT_IA_HANDLE ia_handle, DAT_FD *fd, DAT_CNO_HANDLE *cno_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA, cno_fd_create_on_held(ia_handle, fd, cno_handle));
}

DAT_RETURN
datx_cno_trigger(DAT_CNO_HANDLE cno_handle, DAT_EVD_HANDLE *evd_handle)
{
  datx_cell_t *cell = datx_cell_hold(cno_handle, DATX_CNO);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  /* The wait of no time: the EVD that triggered the CNO, or none. */
  DAT_RETURN ret = cno_wait(cell->object, 0, evd_handle);
  if (DAT_GET_TYPE(ret) == DAT_TIMEOUT_EXPIRED)
    ret = DAT_SUCCESS;
  datx_cell_put(cell);
  return ret;
}
