/*
 * Project extension to IT-API: an event dispatcher as a GLib main-loop
 * source.  Apart from itx.h because it needs GLib's headers:
 *
 *   cc app.c $(pkg-config --cflags --libs itapi glib-2.0)
 *
 * SPDX-License-Identifier: MIT
 */

/**
 * @file itx_glib.h
 * @brief Extension: an EVD's events dispatched by a GLib main loop
 *        (itx_evd_source_new(), itx_evd_add()).
 */
#ifndef ITX_GLIB_H
#define ITX_GLIB_H

#include <glib.h>
#include <itx.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libitapi is built with -fvisibility=hidden: what this header declares is
 * its exported interface (itapi/itapi.map, doc/architecture.md). */
#pragma GCC visibility push(default)

/** @defgroup itx_glib GLib main loop (itx_glib.h)
 *  @ingroup itx
 *  @brief An event dispatcher's events delivered by a GMainLoop.
 *
 *  A source made by itx_evd_source_new() polls the EVD's file descriptor
 *  (the EVD must be created with #IT_EVD_CREATE_FD) and, when the EVD is
 *  at its threshold, takes its events with it_evd_dequeue() and calls the
 *  callback once per event, oldest first:
 *
 *  - At most 64 events per dispatch; when more are queued the source is
 *    ready again at the next iteration of the loop, so one busy EVD never
 *    starves the loop's other sources, and nothing is left behind when the
 *    EVD's threshold is above 1.
 *  - The callback returns @c G_SOURCE_CONTINUE to go on, or @c G_SOURCE_REMOVE
 *    to destroy the source; events not yet taken stay in the EVD.
 *  - The callback may free the EVD, its IA or anything else, and may
 *    destroy the source.
 *  - The source keeps no reference to the EVD: it_evd_free() and
 *    it_ia_free() need not wait for it.  When the EVD is freed, its
 *    descriptor wakes the source once more; the source then finds the
 *    handle stale (it_evd_dequeue() refuses it), destroys itself without
 *    calling the callback again, and the callback's destroy notify runs.
 *    The source polls a duplicate of the descriptor, so it never polls a
 *    closed descriptor, nor one that a later open() reused.
 *  - The source takes every event the EVD delivers: do not also dequeue
 *    or wait on the same EVD elsewhere.  An SEVD that feeds an AEVD is
 *    dispatched through a source of the AEVD, which returns the SEVDs'
 *    events (or, with #IT_EVD_DEQUEUE_NOTIFICATIONS, notifications).
 *
 *  The callback runs in the thread that runs the source's GMainContext.
 *  @{ */

/**
 * @brief The callback of an EVD source, called once per event taken.
 * @param evd_handle the EVD the event was taken from.
 * @param event the event, valid only during the call.
 * @param user_data the data given to g_source_set_callback() or
 *        itx_evd_add().
 * @return @c G_SOURCE_CONTINUE to keep the source, @c G_SOURCE_REMOVE to
 *         destroy it (events not taken yet stay in the EVD).
 */
typedef gboolean (*itx_evd_source_func_t)(it_evd_handle_t evd_handle, const it_event_t *event,
                                          gpointer user_data);

/**
 * @brief A new GSource that delivers the events of an EVD (see the
 *        contract of @ref itx_glib).
 *
 * Give it its callback with
 * `g_source_set_callback(source, G_SOURCE_FUNC(func), user_data, notify)`,
 * where @c func is an ::itx_evd_source_func_t, then g_source_attach() it
 * to a GMainContext and g_source_unref() it; a source without a callback
 * destroys itself at its first dispatch, with a warning.
 *
 * @param evd_handle an SEVD or AEVD created with #IT_EVD_CREATE_FD.
 * @param source set to the new source, only on success; the caller owns
 *        its one reference (g_source_unref() it once attached).
 * @retval IT_SUCCESS @p source is set.
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live EVD.
 * @retval IT_ERR_MISMATCH_FD the EVD was created without #IT_EVD_CREATE_FD
 *         and has no descriptor to poll.
 * @retval IT_ERR_EVD_WAIT the SEVD feeds an AEVD: make a source of the
 *         AEVD instead.
 * @retval IT_ERR_RESOURCES the descriptor could not be duplicated (the
 *         process's descriptor limit, `ulimit -n`).
 * @retval IT_ERR_FAULT @p source is NULL.
 */
it_status_t itx_evd_source_new(it_evd_handle_t evd_handle, GSource **source);

/**
 * @brief Dispatch an EVD's events to @p func in the default main context,
 *        as g_unix_fd_add() does for a descriptor.
 *
 * The same as itx_evd_source_new(), g_source_set_callback() with no
 * destroy notify, g_source_attach() to the default GMainContext (NULL) at
 * @c G_PRIORITY_DEFAULT, and g_source_unref().  Remove it with
 * g_source_remove(@p *id), or by returning @c G_SOURCE_REMOVE from
 * @p func; it also goes when the EVD is freed.
 *
 * @param evd_handle an SEVD or AEVD created with #IT_EVD_CREATE_FD.
 * @param func called once per event.
 * @param user_data passed to @p func.
 * @param id set to the source's ID in the default context, only on
 *        success; may be NULL.
 * @retval IT_SUCCESS the source is attached.
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live EVD.
 * @retval IT_ERR_MISMATCH_FD the EVD has no descriptor (#IT_EVD_CREATE_FD).
 * @retval IT_ERR_EVD_WAIT the SEVD feeds an AEVD.
 * @retval IT_ERR_RESOURCES the descriptor could not be duplicated.
 * @retval IT_ERR_FAULT @p func is NULL.
 */
it_status_t itx_evd_add(it_evd_handle_t evd_handle, itx_evd_source_func_t func, gpointer user_data,
                        guint *id);

/** @} */

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* ITX_GLIB_H */
