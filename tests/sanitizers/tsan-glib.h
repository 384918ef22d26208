/*
 * GLib's synchronisation made visible to ThreadSanitizer.
 *
 * Debian's GLib is not built with -fsanitize=thread, and on Linux GMutex,
 * GCond, GOnce and GAsyncQueue are built on futexes and atomics inside
 * libglib, where TSan's interceptors do not see them (GRecMutex, GRWLock
 * and GThread use pthreads, which TSan intercepts, and need nothing once
 * they exist).
 * Without this header every access that a GMutex orders is reported as a
 * race.  meson.build force-includes it (-include) into every C file of a
 * -Db_sanitize=thread build; it wraps each call our code makes with TSan's
 * annotations (sanitizer/tsan_interface.h):
 *
 *   GMutex       __tsan_mutex_create/destroy/pre_lock/post_lock/pre_unlock/
 *                post_unlock: TSan then checks it as a mutex (lock order
 *                included), exactly as a pthread mutex;
 *   GCond        a wait unlocks its GMutex before the call and locks it
 *                after, as GLib does inside it;
 *   GAsyncQueue  a push releases the queue, a pop acquires it: what the
 *                queue's internal mutex guarantees; the list node GLib
 *                allocates in push and frees in pop is not checked;
 *   GSource      attach, destroy and unref from any thread: what GLib
 *                allocates and frees inside them is not checked (the
 *                main context's GMutex orders it); a callback's data is
 *                counted here, not in GLib, so that its destroy notify
 *                is ordered after every dispatch of the callback;
 *   GOnce        g_once_init_leave releases the location, and a
 *                g_once_init_enter that finds it initialised acquires it:
 *                what GLib's release store and acquire load guarantee;
 *                g_once releases the GOnce when its function returns and
 *                acquires it in every caller (itapi-first-calls found the
 *                unannotated g_once in kal_init).
 *
 * A GRecMutex makes its pthread mutex on first use and publishes it inside
 * GLib: libitapi initialises its one (ual_lock) when it is loaded instead.
 *
 * A file compiled without GLib's include path gets nothing.  Only calls
 * compiled in our sources are annotated; a lock taken inside
 * GLib on our behalf stays invisible.  See doc/sanitizers.md.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITAPI_TSAN_GLIB_H
#define ITAPI_TSAN_GLIB_H

/* A file built without GLib (e.g. a test provider) takes no GLib lock. */
#if __has_include(<glib.h>)

#include <glib.h>
#include <sanitizer/tsan_interface.h>

/* TSan's dynamic annotations (tsan_interface_ann.cpp; no public header). */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
void AnnotateBenignRaceSized(const char *file, int line, const volatile void *mem, size_t size,
                             const char *desc);

/* For the test programs (#ifdef ITAPI_TSAN_GLIB_H): @size bytes at @mem
 * that a provider places into or reads as a NIC would by DMA, in an order
 * TSan cannot follow (through another process, or none: a buffer polled
 * while it lands); their accesses are a benign race (doc/sanitizers.md). */
#define ITAPI_TSAN_DMA_TARGET(mem, size, desc)                                 \
  AnnotateBenignRaceSized(__FILE__, __LINE__, (mem), (size), (desc))

/* Inside GAsyncQueue, GLib allocates a list node in the pushing thread and
 * frees it in the popping one, both under the queue's invisible GMutex: the
 * thread ignores memory accesses (malloc and free included) for the call. */
#define ITAPI_TSAN_GLIB_BEGIN()                                                \
  (AnnotateIgnoreReadsBegin(__FILE__, __LINE__),                               \
   AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define ITAPI_TSAN_GLIB_END()                                                  \
  (AnnotateIgnoreWritesEnd(__FILE__, __LINE__),                                \
   AnnotateIgnoreReadsEnd(__FILE__, __LINE__))

static inline void
itapi_tsan_mutex_init(GMutex *m)
{
  g_mutex_init(m);
  __tsan_mutex_create(m, 0);
}

static inline void
itapi_tsan_mutex_clear(GMutex *m)
{
  __tsan_mutex_destroy(m, 0);
  g_mutex_clear(m);
}

static inline void
itapi_tsan_mutex_lock(GMutex *m)
{
  __tsan_mutex_pre_lock(m, 0);
  g_mutex_lock(m);
  __tsan_mutex_post_lock(m, 0, 0);
}

static inline gboolean
itapi_tsan_mutex_trylock(GMutex *m)
{
  __tsan_mutex_pre_lock(m, __tsan_mutex_try_lock);
  gboolean locked = g_mutex_trylock(m);
  __tsan_mutex_post_lock(m, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

static inline void
itapi_tsan_mutex_unlock(GMutex *m)
{
  __tsan_mutex_pre_unlock(m, 0);
  g_mutex_unlock(m);
  __tsan_mutex_post_unlock(m, 0);
}

/* A GCond wait lets the GMutex go and takes it back inside GLib: told to
 * TSan as an unlock before the call and a lock after it, else the waiter
 * holds the mutex all along in TSan's eyes, and the thread that signals it
 * "locks it twice". */
static inline void
itapi_tsan_cond_wait(GCond *c, GMutex *m)
{
  __tsan_mutex_pre_unlock(m, 0);
  __tsan_mutex_post_unlock(m, 0);
  g_cond_wait(c, m);
  __tsan_mutex_pre_lock(m, 0);
  __tsan_mutex_post_lock(m, 0, 0);
}

static inline gboolean
itapi_tsan_cond_wait_until(GCond *c, GMutex *m, gint64 end_time)
{
  __tsan_mutex_pre_unlock(m, 0);
  __tsan_mutex_post_unlock(m, 0);
  gboolean signalled = g_cond_wait_until(c, m, end_time);
  __tsan_mutex_pre_lock(m, 0);
  __tsan_mutex_post_lock(m, 0, 0);
  return signalled;
}

static inline void
itapi_tsan_async_queue_push(GAsyncQueue *q, gpointer data)
{
  __tsan_release(q);
  ITAPI_TSAN_GLIB_BEGIN();
  g_async_queue_push(q, data);
  ITAPI_TSAN_GLIB_END();
}

static inline gpointer
itapi_tsan_async_queue_pop(GAsyncQueue *q)
{
  ITAPI_TSAN_GLIB_BEGIN();
  gpointer data = g_async_queue_pop(q);
  ITAPI_TSAN_GLIB_END();
  __tsan_acquire(q);
  return data;
}

static inline gpointer
itapi_tsan_async_queue_try_pop(GAsyncQueue *q)
{
  ITAPI_TSAN_GLIB_BEGIN();
  gpointer data = g_async_queue_try_pop(q);
  ITAPI_TSAN_GLIB_END();
  if (data != NULL)
    __tsan_acquire(q);
  return data;
}

static inline gpointer
itapi_tsan_async_queue_timeout_pop(GAsyncQueue *q, guint64 timeout)
{
  ITAPI_TSAN_GLIB_BEGIN();
  gpointer data = g_async_queue_timeout_pop(q, timeout);
  ITAPI_TSAN_GLIB_END();
  if (data != NULL)
    __tsan_acquire(q);
  return data;
}

/* A GSource attached, destroyed or unreferenced from any thread: GLib
 * allocates and frees the main context's records under the context's
 * invisible GMutex. */
static inline guint
itapi_tsan_source_attach(GSource *source, GMainContext *context)
{
  ITAPI_TSAN_GLIB_BEGIN();
  guint id = g_source_attach(source, context);
  ITAPI_TSAN_GLIB_END();
  return id;
}

static inline void
itapi_tsan_source_destroy(GSource *source)
{
  ITAPI_TSAN_GLIB_BEGIN();
  g_source_destroy(source);
  ITAPI_TSAN_GLIB_END();
}

static inline void
itapi_tsan_source_unref(GSource *source)
{
  ITAPI_TSAN_GLIB_BEGIN();
  g_source_unref(source);
  ITAPI_TSAN_GLIB_END();
}

/* A source's callback data: GLib counts references to it (GSourceCallback)
 * inside libglib, one for the source and one for each dispatch in flight,
 * and calls its destroy notify on whichever thread lets the last one go.
 * A dispatch that ended on the progress thread, then a destroy on another
 * that runs the notify (which may free what the callback used), are
 * ordered by that count alone.  The same count kept here, with atomics
 * TSan sees, through GLib's public g_source_set_callback_indirect. */
typedef struct {
  gint ref;
  GSourceFunc func;
  gpointer data;
  GDestroyNotify notify;
} itapi_tsan_callback_t;

static void
itapi_tsan_callback_ref(gpointer p)
{
  g_atomic_int_inc(&((itapi_tsan_callback_t *) p)->ref);
}

static void
itapi_tsan_callback_unref(gpointer p)
{
  itapi_tsan_callback_t *c = p;
  if (!g_atomic_int_dec_and_test(&c->ref))
    return;
  if (c->notify != NULL)
    c->notify(c->data);
  g_free(c);
}

static void
itapi_tsan_callback_get(gpointer p, GSource *source, GSourceFunc *func, gpointer *data)
{
  itapi_tsan_callback_t *c = p;
  (void) source;
  *func = c->func;
  *data = c->data;
}

static inline void
itapi_tsan_source_set_callback(GSource *source, GSourceFunc func, gpointer data,
                               GDestroyNotify notify)
{
  static GSourceCallbackFuncs funcs = {
    itapi_tsan_callback_ref, itapi_tsan_callback_unref, itapi_tsan_callback_get,
  };
  itapi_tsan_callback_t *c = g_new(itapi_tsan_callback_t, 1);
  c->ref = 1;
  c->func = func;
  c->data = data;
  c->notify = notify;
  g_source_set_callback_indirect(source, c, &funcs);
}

#define g_mutex_init itapi_tsan_mutex_init
#define g_mutex_clear itapi_tsan_mutex_clear
#define g_mutex_lock itapi_tsan_mutex_lock
#define g_mutex_trylock itapi_tsan_mutex_trylock
#define g_mutex_unlock itapi_tsan_mutex_unlock
#define g_cond_wait itapi_tsan_cond_wait
#define g_cond_wait_until itapi_tsan_cond_wait_until
#define g_async_queue_push itapi_tsan_async_queue_push
#define g_async_queue_pop itapi_tsan_async_queue_pop
#define g_async_queue_try_pop itapi_tsan_async_queue_try_pop
#define g_async_queue_timeout_pop itapi_tsan_async_queue_timeout_pop
#define g_source_attach itapi_tsan_source_attach
#define g_source_destroy itapi_tsan_source_destroy
#define g_source_unref itapi_tsan_source_unref
#define g_source_set_callback itapi_tsan_source_set_callback

#undef g_once_init_enter
#define g_once_init_enter(location)                                            \
  (__extension__({                                                             \
    gboolean itapi_tsan_first_ =                                               \
        !g_atomic_pointer_get(location) && (g_once_init_enter)(location);      \
    if (!itapi_tsan_first_)                                                    \
      __tsan_acquire((void *) (location));                                     \
    itapi_tsan_first_;                                                         \
  }))
#undef g_once_init_leave
#define g_once_init_leave(location, result)                                    \
  (__extension__({                                                             \
    __tsan_release((void *) (location));                                       \
    (g_once_init_leave)((location), (gsize) (result));                         \
  }))

/* g_once: the function runs inside GLib (g_once_impl), which marks the
 * GOnce ready with a store TSan cannot see; the wrapper releases the GOnce
 * when the function returns, every caller acquires it. */
typedef struct {
  GThreadFunc func;
  gpointer arg;
  GOnce *once;
} itapi_tsan_once_call_t;

static gpointer
itapi_tsan_once_run(gpointer data)
{
  itapi_tsan_once_call_t *c = data;
  gpointer r = c->func(c->arg);
  __tsan_release(c->once);
  return r;
}

static inline gpointer
itapi_tsan_once(GOnce *once, GThreadFunc func, gpointer arg)
{
  if (__atomic_load_n(&once->status, __ATOMIC_ACQUIRE) != G_ONCE_STATUS_READY) {
    itapi_tsan_once_call_t c = { func, arg, once };
    g_once_impl(once, itapi_tsan_once_run, &c);
  }
  __tsan_acquire(once);
  return once->retval;
}
#undef g_once
#define g_once(once, func, arg) itapi_tsan_once((once), (GThreadFunc) (func), (arg))

#endif /* __has_include(<glib.h>) */

/* Sockets (every file, GLib or not).  send(2) and sendmsg(2) read the
 * caller's bytes during the call, but TSan's interceptors record that read
 * after the call returns.  By then a peer in this process may have taken
 * the bytes (over loopback the kernel delivers them inside the call),
 * completed its request and let the application write that memory again.
 * That order runs through the kernel, which TSan does not see, so it
 * reported a race that cannot happen: itapi-test-threads-iwarp0, 2 runs
 * in 337, an RDMA Read's response sent by vp/iwarp from a slot that the
 * requester rewrote once its Read had completed.  scripts/sanitize.sh
 * turns the interceptors' late check off (TSAN_OPTIONS intercept_send=0;
 * they still order the descriptor), and our calls record the read before
 * the call instead, when the bytes are still the caller's to guard. */
#include <stddef.h>
#include <sys/socket.h>

void __tsan_read_range(void *addr, unsigned long size);

static inline ssize_t
itapi_tsan_send(int fd, const void *buf, size_t len, int flags)
{
  __tsan_read_range((void *) buf, len);
  return send(fd, buf, len, flags);
}

static inline ssize_t
itapi_tsan_sendmsg(int fd, const struct msghdr *m, int flags)
{
  for (size_t i = 0; i < (size_t) m->msg_iovlen; i++)
    __tsan_read_range(m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
  return sendmsg(fd, m, flags);
}
#define send(fd, buf, len, flags) itapi_tsan_send((fd), (buf), (len), (flags))
#define sendmsg(fd, m, flags) itapi_tsan_sendmsg((fd), (m), (flags))

#endif /* ITAPI_TSAN_GLIB_H */
