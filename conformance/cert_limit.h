/*
 * The waits of a conformance test, told to itapi-certify as they begin and
 * end, so that a test's time limit comes from what it waits for.
 *
 * itapi-certify gives each test process a socket (SOCK_SEQPACKET) and names
 * it in CERT_LIMIT_ENV as "FD:INODE".  A process that finds that socket
 * open under that number sends one record per event:
 *
 *   B PID ID START_US LIMIT_US WHAT    a wait began (START_US on the
 *                                      monotonic clock) and may last LIMIT_US
 *   E PID ID                           that wait ended
 *
 * The harness kills a test whose open wait, in the test's process or any
 * process it started, has lasted past its limit plus a grace: the test's
 * own timeout did not end it.  Waits may nest (a loop with a limit whose
 * rounds wait) and run in several threads at once: an overrun wait counts
 * only while its process has no newer wait still in time.  A process where the variable is unset (a
 * test run by hand or by meson) or whose socket is not open under that
 * number (a child that closed it) sends nothing; the calls cost one test.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef CERT_LIMIT_H
#define CERT_LIMIT_H

#include <glib.h>

/** The environment variable naming the harness's socket ("FD:INODE"). */
#define CERT_LIMIT_ENV "ITAPI_CERTIFY_WAITS"
/** The longest WHAT a record carries; a longer one is cut. */
#define CERT_LIMIT_WHAT_MAX 200

/** One wait: when it must end and its number in this process (0: untold). */
typedef struct {
  gint64 end;
  guint64 id;
} cert_limit_t;

/**
 * @brief Begin a wait of at most @p limit_us for @p what, told to the harness.
 * @param w      The wait, set here.
 * @param what   What the test waits for, as the harness's message names it.
 * @param limit_us How long the test waits before it gives up (more than 0).
 */
void cert_limit_begin(cert_limit_t *w, const char *what, gint64 limit_us);

/**
 * @brief Begin a wait as cert_limit_begin() does, @p what a printf format.
 * @param w        The wait, set here.
 * @param limit_us How long the test waits before it gives up.
 * @param fmt      What the test waits for (printf format).
 */
void cert_limit_beginf(cert_limit_t *w, gint64 limit_us, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/**
 * @brief Whether the wait @p w has reached its limit.
 * @param w The wait.
 * @retval TRUE  Its limit has passed: the test gives up.
 * @retval FALSE Time is left.
 */
gboolean cert_limit_over(const cert_limit_t *w);

/**
 * @brief The microseconds left of @p w's limit (0 once it has passed).
 * @param w The wait.
 * @return The time left, in microseconds.
 */
gint64 cert_limit_left(const cert_limit_t *w);

/**
 * @brief The harness's socket in this process, or -1 where there is none.
 *
 * A spawner that closes the descriptors a child would inherit
 * (g_spawn_async_with_pipes) passes this one on under the same number
 * (g_spawn_async_with_pipes_and_fds), so that the child's waits count too.
 * @return The descriptor, or -1.
 */
int cert_limit_channel(void);

/**
 * @brief End the wait @p w, telling the harness; @p w may be ended again.
 * @param w The wait.
 */
void cert_limit_end(cert_limit_t *w);

#endif
