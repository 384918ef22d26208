/*
 * An EVD's descriptor for an event loop: given to an EVD made without one
 * (itx_evd_fd_enable, itx.h), and an EVD as a GLib main-loop source
 * (itx_glib.h has the contract).
 *
 * The source holds the EVD's handle value, never a pointer to it, and a
 * duplicate of its eventfd: the EVD's own descriptor is closed when it is
 * freed, and its number may then be reused by anything; the duplicate
 * keeps the eventfd itself open, which a freed EVD leaves readable
 * (ual_evd_unpublish), so the source wakes, finds the handle stale through
 * it_evd_dequeue() and goes.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "itx_glib.h"
#include "ual.h"

/* Events per dispatch before the loop's other sources get a turn. */
#define EVD_SOURCE_BATCH 64

typedef struct evd_source {
  GSource base;
  it_evd_handle_t evd;
  int fd;                     /* our duplicate of the EVD's eventfd */
} evd_source_t;

static gboolean
evd_source_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
  evd_source_t *s = (evd_source_t *) source;
  itx_evd_source_func_t func = (itx_evd_source_func_t) (void (*)(void)) callback;
  g_source_set_ready_time(source, -1);
  if (func == NULL) {
    g_log(UAL_LOG, G_LOG_LEVEL_WARNING,
          "the GSource of EVD %p was dispatched without a callback, and is removed; give it one "
          "with g_source_set_callback() before attaching it", (void *) s->evd);
    return G_SOURCE_REMOVE;
  }
  for (int n = 0; n < EVD_SOURCE_BATCH; n++) {
    it_event_t ev;
    it_status_t st = it_evd_dequeue(s->evd, &ev);
    if (st == IT_ERR_QUEUE_EMPTY)
      return G_SOURCE_CONTINUE;
    if (st != IT_SUCCESS) {
      /* Only a stale handle gets here (ev is ours): the EVD was freed. */
      g_log(UAL_LOG, G_LOG_LEVEL_DEBUG, "the GSource of EVD %p removes itself: %s (%s)",
            (void *) s->evd, itx_status_name(st), itx_error_detail());
      return G_SOURCE_REMOVE;
    }
    if (!func(s->evd, &ev, user_data) || g_source_is_destroyed(source))
      return G_SOURCE_REMOVE;
  }
  /* More may be queued, possibly fewer than the threshold, which would
   * leave the descriptor quiet: come back at the next iteration. */
  g_source_set_ready_time(source, 0);
  return G_SOURCE_CONTINUE;
}

static void
evd_source_finalize(GSource *source)
{
  evd_source_t *s = (evd_source_t *) source;
  if (s->fd >= 0)
    close(s->fd);
}

static GSourceFuncs evd_source_funcs = {
  .prepare = NULL,
  .check = NULL,              /* ready when the descriptor polls readable */
  .dispatch = evd_source_dispatch,
  .finalize = evd_source_finalize,
};

it_status_t
itx_evd_fd_enable(it_evd_handle_t evd_handle, int *fd)
{
  if (fd == NULL)
    return ual_fail(IT_ERR_FAULT, "itx_evd_fd_enable: fd is NULL; pass an int * to receive the "
                    "descriptor");
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL)
    return ual_fail(IT_ERR_INVALID_EVD, "itx_evd_fd_enable: %p is not a live EVD handle",
                    (void *) evd_handle);
  /* Set before the update's locked section: a take that empties the
   * dispatcher after it sees the flag and lowers the level itself, one
   * before it is seen by the update. */
  g_atomic_int_set(&e->fd_on, TRUE);
  ual_evd_update(e);
  *fd = e->fd;
  return IT_SUCCESS;
}

it_status_t
itx_evd_source_new(it_evd_handle_t evd_handle, GSource **source)
{
  if (source == NULL)
    return ual_fail(IT_ERR_FAULT, "itx_evd_source_new: source is NULL; pass a GSource ** for the "
                    "new source");
  int fd;
  {
    /* The EVD's descriptor is closed only after the grace period of a
     * free: inside this section it is still the EVD's. */
    RSEC_SCOPE();
    ual_evd_t *e = ual_evd_get(evd_handle);
    if (e == NULL)
      return ual_fail(IT_ERR_INVALID_EVD, "itx_evd_source_new: %p is not a live EVD handle",
                      (void *) evd_handle);
    if (!g_atomic_int_get(&e->fd_on))
      return ual_fail(IT_ERR_MISMATCH_FD, "itx_evd_source_new: EVD %p was created without "
                      "IT_EVD_CREATE_FD and has no descriptor to poll; create it with the flag or "
                      "give it one with itx_evd_fd_enable()",
                      (void *) evd_handle);
    if (e->aevd != NULL)
      return ual_fail(IT_ERR_EVD_WAIT, "itx_evd_source_new: EVD %p feeds AEVD %p; make a source "
                      "of the AEVD instead", (void *) evd_handle,
                      (void *) (uintptr_t) e->aevd->obj.handle);
    fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
      return ual_fail(IT_ERR_RESOURCES, "itx_evd_source_new: duplicating descriptor %d of EVD %p "
                      "failed: %s; raise the process's descriptor limit (ulimit -n)", e->fd,
                      (void *) evd_handle, g_strerror(errno));
  }
  GSource *g = g_source_new(&evd_source_funcs, sizeof(evd_source_t));
  evd_source_t *s = (evd_source_t *) g;
  s->evd = evd_handle;
  s->fd = fd;
  g_source_set_static_name(g, "itx_evd_source");
  g_source_add_unix_fd(g, fd, G_IO_IN);
  *source = g;
  return IT_SUCCESS;
}

it_status_t
itx_evd_add(it_evd_handle_t evd_handle, itx_evd_source_func_t func, gpointer user_data, guint *id)
{
  if (func == NULL)
    return ual_fail(IT_ERR_FAULT, "itx_evd_add: func is NULL; pass the itx_evd_source_func_t to "
                    "call with each event");
  GSource *g;
  it_status_t st = itx_evd_source_new(evd_handle, &g);
  if (st != IT_SUCCESS)
    return st;
  g_source_set_callback(g, (GSourceFunc) (void (*)(void)) func, user_data, NULL);
  guint tag = g_source_attach(g, NULL);
  g_source_unref(g);
  if (id != NULL)
    *id = tag;
  return IT_SUCCESS;
}
