/*
 * itapi-certify: one test process, run under the limits of what it waits
 * for.
 *
 * Each test process gets a socket on which it and every process it starts
 * tell each wait as it begins, with its limit, and as it ends
 * (conformance/cert_limit.h).  A test is killed when one of its waits has
 * lasted past its own limit plus --wait-grace: its own timeout should have
 * ended that wait, so the test hangs where the wait is, and the message
 * names the wait.  A wait whose process has ended, or has a newer wait
 * still in time (nested in it, or in another thread), does not count.
 * --timeout stays as the ceiling on the whole test, for a hang outside
 * any wait (a call that never returns).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cert_limit.h"
#include "certify.h"

/* A wait a test process told of. */
typedef struct {
  int pid;
  gint64 start, limit; /* us, on the monotonic clock */
  char *what;
} wait_t;

/* The last wait of a process to end: when it began and when its end was
 * read (us, on the monotonic clock). */
typedef struct {
  gint64 start, end;
} ended_t;

static void
wait_free(gpointer p)
{
  wait_t *w = p;
  g_free(w->what);
  g_free(w);
}

/* Start argv with env, its output into a temporary file, in a process
 * group of its own, with a socket to tell its waits on. */
void
run_start(run_t *r, char **argv, char **env, int timeout_s)
{
  memset(r, 0, sizeof(*r));
  r->pid = -1;
  r->sock = -1;
  r->waits = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, wait_free);
  r->last_ended = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  int fd = g_file_open_tmp("itapi-certify-XXXXXX", &r->tmpl, NULL);
  r->t0 = g_get_monotonic_time();
  r->deadline = r->t0 + (gint64) timeout_s * G_USEC_PER_SEC;
  if (fd < 0) {
    g_clear_pointer(&r->tmpl, g_free);
    r->status = 0x7f00;
    r->ended = TRUE;
    return;
  }
  int sv[2] = { -1, -1 };
  g_auto(GStrv) tenv = g_strdupv(env);
  struct stat st;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0 && fstat(sv[1], &st) == 0) {
    g_autofree char *v = g_strdup_printf("%d:%llu", sv[1], (unsigned long long) st.st_ino);
    tenv = g_environ_setenv(tenv, CERT_LIMIT_ENV, v, TRUE);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
  } else {
    /* No socket: the test runs under --timeout alone, as it says. */
    fprintf(stderr, "itapi-certify: no socket for %s's waits (%s): --timeout alone limits it\n",
            argv[0], g_strerror(errno));
    tenv = g_environ_unsetenv(tenv, CERT_LIMIT_ENV);
  }
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0)
      dup2(nul, 0);
    if (sv[1] > 2)
      fcntl(sv[1], F_SETFD, 0);  /* the test and what it starts inherit it */
    execve(argv[0], argv, tenv);
    _exit(127);
  }
  close(fd);
  if (sv[1] >= 0)
    close(sv[1]);
  r->sock = sv[0];
  r->pid = pid;
  if (pid < 0) {
    r->status = 0x7f00;
    r->ended = TRUE;
  }
}

/* The longest limit a wait may tell: a day. */
#define WAIT_LIMIT_MAX_US ((gint64) 86400 * G_USEC_PER_SEC)

/* Take what the test's processes told of their waits. */
static void
waits_read(run_t *r)
{
  char rec[CERT_LIMIT_WHAT_MAX + 128];
  for (;;) {
    ssize_t n = r->sock >= 0 ? recv(r->sock, rec, sizeof rec - 1, 0) : -1;
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0) {
      /* Every process that held it has closed it: no more records, and
       * no end-of-file to wake run_sleep for ever. */
      close(r->sock);
      r->sock = -1;
    }
    if (n <= 0)
      return;
    rec[n] = '\0';
    int pid = 0, off = 0;
    guint64 id = 0;
    gint64 start = 0, limit = 0;
    if (sscanf(rec, "B %d %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %n", &pid,
               &id, &start, &limit, &off) == 4 && off > 0) {
      /* A record is the test process's word, read once: a start or limit
       * outside a day's reach would overflow the sums below, and such a
       * wait is left to --timeout. */
      if (start < 0 || start > G_MAXINT64 / 4 || limit < 0 || limit > WAIT_LIMIT_MAX_US)
        continue;
      wait_t *w = g_new0(wait_t, 1);
      w->pid = pid;
      w->start = start;
      w->limit = limit;
      w->what = g_strdup(rec + off);
      g_hash_table_replace(r->waits, g_strdup_printf("%d %" G_GUINT64_FORMAT, pid, id), w);
    } else if (sscanf(rec, "E %d %" G_GUINT64_FORMAT, &pid, &id) == 2) {
      g_autofree char *key = g_strdup_printf("%d %" G_GUINT64_FORMAT, pid, id);
      wait_t *w = g_hash_table_lookup(r->waits, key);
      if (w != NULL) {
        g_free(r->last_what);
        r->last_what = g_strdup(w->what);
        r->last_end = g_get_monotonic_time();
        ended_t *e = g_new(ended_t, 1);
        *e = (ended_t) { w->start, r->last_end };
        g_hash_table_replace(r->last_ended, GINT_TO_POINTER(pid), e);
        g_hash_table_remove(r->waits, key);
      }
    }
  }
}

/* Whether process @pid still runs: a process that ended in a wait (a child
 * the test killed on purpose, one that failed) leaves it open for ever. */
static gboolean
process_alive(int pid)
{
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return FALSE;
  g_autofree char *path = g_strdup_printf("/proc/%d/stat", pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents(path, &stat, NULL, NULL))
    return TRUE;  /* no /proc: kill() said it is there */
  const char *paren = strrchr(stat, ')');
  return paren == NULL || paren[1] != ' ' || (paren[2] != 'Z' && paren[2] != 'X');
}

/* Whether process @w->pid has a wait begun after @w that is still within
 * its limit plus the grace, or that ended less than the grace ago: a wait
 * nested in @w (a loop whose every round waits; between two rounds none
 * is open, for as long as the process is kept from its next one) or one
 * beside it in another thread.  The process moves, and @w counts once
 * that stops. */
static gboolean
waits_newer_in_time(run_t *r, const wait_t *w, gint64 now)
{
  gint64 grace = (gint64) opt_wait_grace * G_USEC_PER_SEC;
  const ended_t *e = g_hash_table_lookup(r->last_ended, GINT_TO_POINTER(w->pid));
  if (e != NULL && e->start > w->start && now <= e->end + grace)
    return TRUE;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, r->waits);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    const wait_t *o = v;
    if (o->pid == w->pid && o->start > w->start &&
        now <= o->start + o->limit + (gint64) opt_wait_grace * G_USEC_PER_SEC)
      return TRUE;
  }
  return FALSE;
}

/* The open wait of a live process that has overrun its limit plus the
 * grace by the most, with nothing newer in time in its process, or NULL. */
static wait_t *
waits_overrun(run_t *r, gint64 now)
{
  wait_t *worst = NULL;
  gint64 worst_by = 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, r->waits);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    wait_t *w = v;
    gint64 by = now - (w->start + w->limit + (gint64) opt_wait_grace * G_USEC_PER_SEC);
    if (by <= worst_by)
      continue;
    if (!process_alive(w->pid)) {
      g_hash_table_iter_remove(&it);
      continue;
    }
    if (waits_newer_in_time(r, w, now))
      continue;
    worst = w;
    worst_by = by;
  }
  return worst;
}

/* "process 1234, the test" or "process 1235, started by the test". */
static char *
who(const run_t *r, int pid)
{
  return g_strdup_printf("process %d, %s", pid, pid == r->pid ? "the test" : "started by the test");
}

/* Why a test reached the ceiling: the waits then open, or the last one. */
static char *
ceiling_reason(run_t *r, gint64 now)
{
  GString *s = g_string_new(NULL);
  g_string_printf(s, "ran past the ceiling of %d s (--timeout) and was killed", opt_timeout);
  GHashTableIter it;
  gpointer k, v;
  guint open = 0;
  g_hash_table_iter_init(&it, r->waits);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    wait_t *w = v;
    g_autofree char *p = who(r, w->pid);
    g_string_append_printf(s, "%s waiting for %s (%s) for %.1f s of its %.1f s", open++ ? "," : ";",
                           w->what, p, (now - w->start) / 1e6, w->limit / 1e6);
  }
  if (open == 0 && r->last_what != NULL)
    g_string_append_printf(s, "; in no wait, its last (for %s) ended %.1f s before", r->last_what,
                           (now - r->last_end) / 1e6);
  else if (open == 0)
    g_string_append(s, "; it told of no wait");
  return g_string_free(s, FALSE);
}

static void
run_kill(run_t *r, char *why)
{
  kill(-r->pid, SIGKILL);
  kill(r->pid, SIGKILL);
  while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR) {
  }
  r->killed = why;
  r->ended = TRUE;
}

/* Whether @r has ended (killed, with its group, once a wait overran or
 * past the ceiling); never blocks. */
gboolean
run_poll(run_t *r)
{
  if (r->ended)
    return TRUE;
  waits_read(r);
  pid_t w = waitpid(r->pid, &r->status, WNOHANG);
  gint64 now = g_get_monotonic_time();
  wait_t *over = NULL;
  if (w == r->pid || (w < 0 && errno != EINTR)) {
    if (w < 0)
      r->status = 0x7f00;
    r->ended = TRUE;
  } else if ((over = waits_overrun(r, now)) != NULL) {
    g_autofree char *p = who(r, over->pid);
    run_kill(r, g_strdup_printf("killed: waited for %s (%s) for %.1f s, past its limit of %.1f s "
                                "and a grace of %d s (--wait-grace)", over->what, p,
                                (now - over->start) / 1e6, over->limit / 1e6, opt_wait_grace));
  } else if (now > r->deadline) {
    run_kill(r, ceiling_reason(r, now));
  }
  if (r->ended && r->pid > 0)
    kill(-r->pid, SIGKILL);  /* reap anything the test forked and left behind */
  return r->ended;
}

int
run_finish(run_t *r, char **output, double *ms, char **killed)
{
  *ms = (g_get_monotonic_time() - r->t0) / 1000.0;
  *killed = r->killed;
  r->killed = NULL;
  g_clear_pointer(&r->waits, g_hash_table_unref);
  g_clear_pointer(&r->last_ended, g_hash_table_unref);
  g_clear_pointer(&r->last_what, g_free);
  if (r->sock >= 0)
    close(r->sock);
  r->sock = -1;
  if (r->tmpl == NULL) {
    *output = g_strdup("cannot create a temporary file for the test's output");
    return r->status;
  }
  if (!g_file_get_contents(r->tmpl, output, NULL, NULL))
    *output = g_strdup("");
  g_unlink(r->tmpl);
  g_clear_pointer(&r->tmpl, g_free);
  return *killed != NULL ? -1 : r->status;
}

void
run_sleep(run_t *const *runs, guint n, int ms)
{
  struct pollfd fds[64];
  nfds_t k = 0;
  for (guint i = 0; i < n && k < G_N_ELEMENTS(fds); i++)
    if (!runs[i]->ended && runs[i]->sock >= 0)
      fds[k++] = (struct pollfd) { .fd = runs[i]->sock, .events = POLLIN };
  if (k == 0 || poll(fds, k, ms) < 0)
    g_usleep((gulong) ms * 1000);
}

int
run_captured(char **argv, char **env, int timeout_s, char **output, double *ms)
{
  run_t r, *rp = &r;
  run_start(&r, argv, env, timeout_s);
  while (!run_poll(&r))
    run_sleep(&rp, 1, 2);
  g_autofree char *killed = NULL;
  return run_finish(&r, output, ms, &killed);
}
