/*
 * A GSource's destroy notify, run on another thread than its last
 * dispatch, is ordered after that dispatch.
 *
 * The providers' progress thread dispatches descriptor watches whose
 * callback data is a reference to a connection; the watch is destroyed
 * from any thread, and the notify that drops the reference may run there.
 * GLib orders the two by a reference count inside libglib.  In a
 * -Db_sanitize=thread build, tests/sanitizers/tsan-glib.h keeps that count
 * where TSan sees it: without it, the free below, after a destroy that ran
 * the notify on this thread, is reported as racing the callback's write on
 * the dispatching thread (TSan exits 66).  In any build the test checks
 * the order GLib promises: one dispatch, one notify, on this thread, after
 * the dispatch ended.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <glib-unix.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct {
  guint64 hits;     /* plain: written by the callback alone */
  int fd;
} obj_t;

typedef struct {
  GMainContext *ctx;
  gint stop;
  gint dispatched;  /* relaxed: no ordering TSan would see */
  gint notified;
  GThread *notify_thread;
} run_t;

static run_t run;

static gboolean
on_ready(gint fd, GIOCondition cond, gpointer data)
{
  obj_t *o = data;
  uint64_t v;
  (void) cond;
  g_assert_cmpint(read(fd, &v, sizeof(v)), ==, (int) sizeof(v));
  o->hits += v;
  __atomic_store_n(&run.dispatched, 1, __ATOMIC_RELAXED);
  return G_SOURCE_CONTINUE;
}

static void
on_gone(gpointer data)
{
  (void) data;
  run.notify_thread = g_thread_self();
  g_atomic_int_set(&run.notified, 1);
}

static gpointer
loop(gpointer unused)
{
  (void) unused;
  while (!g_atomic_int_get(&run.stop))
    g_main_context_iteration(run.ctx, TRUE);
  return NULL;
}

static void
test_notify_after_dispatch(void)
{
  run.ctx = g_main_context_new();
  obj_t *o = g_new0(obj_t, 1);
  o->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  g_assert_cmpint(o->fd, >=, 0);
  GSource *src = g_unix_fd_source_new(o->fd, G_IO_IN);
  g_source_set_callback(src, (GSourceFunc) (void (*)(void)) on_ready, o, on_gone);
  g_source_attach(src, run.ctx);
  GThread *t = g_thread_new("dispatch", loop, NULL);

  uint64_t one = 1;
  g_assert_cmpint(write(o->fd, &one, sizeof(one)), ==, (int) sizeof(one));
  while (!__atomic_load_n(&run.dispatched, __ATOMIC_RELAXED))
    g_usleep(1000);
  /* The dispatch ends soon after its callback: then the destroy below
   * drops the last reference to the callback data, here. */
  g_usleep(100 * 1000);
  g_source_destroy(src);
  g_source_unref(src);
  while (!g_atomic_int_get(&run.notified))
    g_usleep(1000);
  gboolean here = run.notify_thread == g_thread_self();
  g_assert_cmpuint(o->hits, ==, 1);
  close(o->fd);
  g_free(o);  /* the dispatching thread wrote it: ordered by the notify */

  g_atomic_int_set(&run.stop, 1);
  g_main_context_wakeup(run.ctx);
  g_thread_join(t);
  g_main_context_unref(run.ctx);
  if (!here)
    g_test_skip("the dispatch was still running 100 ms after its callback (a loaded machine): "
                "the notify ran on the dispatching thread, not after it here");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/glib/source/notify-after-dispatch", test_notify_after_dispatch);
  return g_test_run();
}
