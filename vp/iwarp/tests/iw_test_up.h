/*
 * vp/iwarp tests: the upcalls of a test program that drives the provider
 * directly (no access layer).  CM events are queued on cmq for the test to
 * pop (each a g_memdup2 copy to g_free); completions are polled, so
 * notifications are ignored; asynchronous events are printed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_TEST_UP_H
#define IW_TEST_UP_H

#include <glib.h>

#include "rnicpi.h"

static GAsyncQueue *cmq;

static void
up_cm(void *ctx, const rnicpi_cm_event_t *ev)
{
  (void) ctx;
  g_async_queue_push(cmq, g_memdup2(ev, sizeof(*ev)));
}

static void
up_cq(void *ctx, uint64_t c)
{
  (void) ctx;
  (void) c;
}

static void
up_async(void *ctx, const rnicpi_async_event_t *ev)
{
  (void) ctx;
  g_printerr("async event %d ctx 0x%" G_GINT64_MODIFIER "x\n", ev->type, ev->ctx);
}

static const rnicpi_upcalls_t ups = { up_cm, up_cq, up_async };

#endif
