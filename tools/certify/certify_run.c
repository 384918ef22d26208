/*
 * itapi-certify: one test process, run with its output captured and killed
 * with its process group past its timeout.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "certify.h"

/* Start argv with env, its output into a temporary file, in a process
 * group of its own. */
void
run_start(run_t *r, char **argv, char **env, int timeout_s)
{
  memset(r, 0, sizeof(*r));
  r->pid = -1;
  int fd = g_file_open_tmp("itapi-certify-XXXXXX", &r->tmpl, NULL);
  r->t0 = g_get_monotonic_time();
  r->deadline = r->t0 + (gint64) timeout_s * G_USEC_PER_SEC;
  if (fd < 0) {
    g_clear_pointer(&r->tmpl, g_free);
    r->status = 0x7f00;
    r->ended = TRUE;
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0)
      dup2(nul, 0);
    execve(argv[0], argv, env);
    _exit(127);
  }
  close(fd);
  r->pid = pid;
  if (pid < 0) {
    r->status = 0x7f00;
    r->ended = TRUE;
  }
}

/* Whether @r has ended (killed, with its group, once past its deadline);
 * never blocks. */
gboolean
run_poll(run_t *r)
{
  if (r->ended)
    return TRUE;
  pid_t w = waitpid(r->pid, &r->status, WNOHANG);
  if (w == r->pid || (w < 0 && errno != EINTR)) {
    if (w < 0)
      r->status = 0x7f00;
    r->ended = TRUE;
  } else if (g_get_monotonic_time() > r->deadline) {
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
    while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR) {
    }
    r->timed_out = TRUE;
    r->ended = TRUE;
  }
  if (r->ended && r->pid > 0)
    kill(-r->pid, SIGKILL);  /* reap anything the test forked and left behind */
  return r->ended;
}

/* The output and time of @r, which ended; the wait status, or -1 on timeout. */
int
run_finish(run_t *r, char **output, double *ms)
{
  *ms = (g_get_monotonic_time() - r->t0) / 1000.0;
  if (r->tmpl == NULL) {
    *output = g_strdup("cannot create a temporary file for the test's output");
    return r->status;
  }
  if (!g_file_get_contents(r->tmpl, output, NULL, NULL))
    *output = g_strdup("");
  g_unlink(r->tmpl);
  g_clear_pointer(&r->tmpl, g_free);
  return r->timed_out ? -1 : r->status;
}

/* Run argv with env; output to a temp file; kill the process group after
 * the timeout.  Returns the wait status, or -1 on timeout. */
int
run_captured(char **argv, char **env, int timeout_s, char **output, double *ms)
{
  run_t r;
  run_start(&r, argv, env, timeout_s);
  while (!run_poll(&r))
    g_usleep(2000);
  return run_finish(&r, output, ms);
}
