/*
 * Conformance across processes, the harness: spawn this program again as a
 * child in a role, reap it within a bound, connect to it, hear its lines.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf_xproc.h"

const char *xproc_self_exe;
const unsigned char xproc_cpd[sizeof XPROC_CPD_TEXT] = XPROC_CPD_TEXT;
const unsigned char xproc_apd[sizeof XPROC_APD_TEXT] = XPROC_APD_TEXT;

/* A child's region that the parent reads and writes with one-sided RDMA
 * while the child's application thread waits for the parent's next line.
 * The order is real (the child's provider places the data before the
 * parent's operation completes, and only then does the parent write the
 * line the child reads), but it runs through the other process, where
 * ThreadSanitizer cannot follow it: under TSan the region's bytes are
 * declared a benign race, as a DMA target is (doc/sanitizers.md). */
void
xproc_peer_accessed(const conf_buf_t *b)
{
#ifdef ITAPI_TSAN_GLIB_H
  ITAPI_TSAN_DMA_TARGET(b->data, b->len, "a region the parent process accesses with one-sided RDMA");
#else
  (void) b;
#endif
}

/* This program again as @role, in this process's environment: the child
 * moves data the way the row's settings choose. */
child_t
xproc_spawn(const char *role)
{
  g_autofree char *name = g_strdup_printf("conf-xproc-%s", role);
  const char *args[] = { "--xproc-role", role, NULL };
  return conf_child_spawn(xproc_self_exe, args, name, NULL, NULL);
}


/* What each thread of a child that did not exit was doing, as /proc shows
 * it (name, state, kernel wait channel, system call number and arguments),
 * appended to the child's stderr file, which the parent's error shows. */
static void
note_threads(child_t *c)
{
  g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int) c->pid);
  GDir *d = g_dir_open(dir, 0, NULL);
  FILE *f = fopen(c->err, "a");
  if (d == NULL || f == NULL) {
    if (d != NULL)
      g_dir_close(d);
    if (f != NULL)
      fclose(f);
    return;
  }
  fprintf(f, "[the parent: the child did not exit in time; its threads, from %s:]\n", dir);
  const char *tid;
  while ((tid = g_dir_read_name(d)) != NULL) {
    static const char *const what[] = { "comm", "wchan", "syscall" };
    fprintf(f, "  thread %s:", tid);
    for (size_t i = 0; i < G_N_ELEMENTS(what); i++) {
      g_autofree char *path = g_strdup_printf("%s/%s/%s", dir, tid, what[i]);
      g_autofree char *text = NULL;
      if (g_file_get_contents(path, &text, NULL, NULL))
        fprintf(f, " %s %s;", what[i], g_strstrip(text));
    }
    fputc('\n', f);
  }
  g_dir_close(d);
  fflush(f);
  conf_gdb_stacks(c->pid, fileno(f));
  fclose(f);
}

/* Wait for the child's exit within @ms; kill it past that.  Its status. */
int
xproc_reap(child_t *c, int ms)
{
  int st = 0;
  cert_limit_t w;
  cert_limit_beginf(&w, (gint64) ms * 1000, "child %d to exit", (int) c->pid);
  for (int i = 0; i < ms / 10; i++) {
    if (conf_child_wait(c, FALSE, &st)) {
      cert_limit_end(&w);
      goto done;
    }
    g_usleep(10000);
  }
  cert_limit_end(&w);
  note_threads(c);
  conf_child_kill(c->pid, SIGKILL);
  conf_child_wait(c, TRUE, &st);
  g_printerr("child %d did not exit in time\n", (int) c->pid);
  st = -1;
done:
  close(c->to);
  close(c->from);
  return st;
}

char *
xproc_wait_status_text(int st)
{
  if (st == -1)
    return g_strdup("did not exit in time and was killed");
  if (WIFEXITED(st))
    return g_strdup_printf("exited with status %d", WEXITSTATUS(st));
  if (WIFSIGNALED(st))
    return g_strdup_printf("was killed by signal %d (%s)%s", WTERMSIG(st), g_strsignal(WTERMSIG(st)),
                           WCOREDUMP(st) ? ", core dumped" : "");
  return g_strdup_printf("ended with wait status 0x%x", st);
}

char *
xproc_child_stderr_line(const child_t *c, size_t max)
{
  g_autofree char *err = NULL;
  g_file_get_contents(c->err, &err, NULL, NULL);
  size_t len = err != NULL ? strlen(g_strchomp(err)) : 0;
  if (len == 0)
    return g_strdup("(empty)");
  g_auto(GStrv) lines = g_strsplit(err + (len > max ? len - max : 0), "\n", -1);
  return g_strjoinv(" | ", lines);
}

void
xproc_reap_ok(child_t *c)
{
  /* 60 s: a child under ThreadSanitizer, niced beside the other suites,
   * once took more than 20 s to exit (stop 45). */
  int st = xproc_reap(c, 60000);
  if (!(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    g_autofree char *err = xproc_child_stderr_line(c, 4000);
    g_autofree char *ended = xproc_wait_status_text(st);
    g_error("child failed: it %s (within 60 s); its stderr (%s), last part: %s", ended, c->err, err);
  }
}

void
xproc_connect(conf_side_t *s, uint16_t port)
{
  it_path_t path;
  it_conn_attributes_t ca;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(port);
  memset(&ca, 0, sizeof(ca));
  conf_path(s, &path);
  conf_ok(it_ep_connect(s->ep, &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, xproc_cpd, sizeof(xproc_cpd)));
  it_event_t ev = conf_wait(s->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.private_data_present);
  g_assert_cmpmem(ev.conn.private_data, sizeof(xproc_apd), xproc_apd, sizeof(xproc_apd));
}

uint16_t
xproc_hear_port(child_t *c)
{
  g_autofree char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_nonnull(l);
  unsigned port = 0;
  g_assert_cmpint(sscanf(l, "port %u", &port), ==, 1);
  return (uint16_t) port;
}

