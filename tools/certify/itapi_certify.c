/*
 * itapi-certify: certify an RNIC-PI provider against the conformance catalog.
 *
 *   itapi-certify (--provider NAME | --provider-module PATH) [--strict]
 *                 [--level rnicpi|itapi|interop|all] [--filter SUBSTRING...]
 *                 [--exclude SUBSTRING...] [--timeout SEC] [--wait-grace SEC]
 *                 [--jobs N] [--deviations FILE] [--tap] [--junit FILE] [--json FILE]
 *                 [--markdown FILE] [--html FILE] [--list] [--repeat N]
 *   itapi-certify --compare OLD.json NEW.json
 *
 * The catalog is the set of test programs of the suite: cert-rnicpi drives the
 * provider's verbs directly (RNIC-PI level), the conf-* programs drive the
 * whole stack over it (IT-API level), and cert-interop puts the provider's
 * wire against a reference peer (vp/iwarp in another process) and golden
 * frames from the RFCs (Interop level).  Every test runs in its own process,
 * so a crash or a hang is a failure of that test only; a hang is found from
 * the limits of what the test waits for (certify_run.c).  Each
 * test ends as pass, fail, skipped (naming the capability the provider's
 * record lacks) or known deviation (listed with a reason in the provider's
 * deviation file; --strict makes those failures).  Nothing is silently not
 * run: a test that produced no result is a failure.  --repeat N runs the
 * catalog N times and fails every test whose verdict changed between runs
 * (a flaky test is no evidence either way).
 *
 * The runner (this file), one test's process (certify_run.c), the catalog
 * (certify_catalog.c) and the report writers (certify_report.c) share
 * certify.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "certify.h"

char *opt_provider, *opt_module, *opt_level = "all", *opt_deviations;
char **opt_filter; /* --filter, repeated: a test runs if its id contains any */
char **opt_exclude; /* --exclude, repeated: ... and none of these */
char *opt_rules;
char *opt_junit, *opt_json, *opt_markdown, *opt_html, *opt_tests_dir, *opt_device;
gboolean opt_strict, opt_tap, opt_list, opt_quiet, opt_skip_deviations;
int opt_timeout = 60;
int opt_wait_grace = 5;
int opt_repeat = 1;
static gboolean opt_compare;
int opt_jobs = INT_MIN; /* not given: ITAPI_CERTIFY_JOBS, else 1 */

/* The provider under test. */
const rnicpi_entry_t *prov;
char device[64];
rnicpi_caps_t caps;
gboolean have_caps;

/* Environment every test process gets: it selects the provider. */
char **
run_env(void)
{
  char **env = g_get_environ();
  if (opt_module != NULL) {
    env = g_environ_setenv(env, "ITAPI_PROVIDER_PATH", opt_module, TRUE);
    env = g_environ_setenv(env, "RNICPI_CERT_MODULE", opt_module, TRUE);
  } else {
    env = g_environ_unsetenv(env, "RNICPI_CERT_MODULE");
  }
  env = g_environ_setenv(env, "ITAPI_PROVIDER", prov->name, TRUE);
  env = g_environ_setenv(env, "RNICPI_CERT_PROVIDER", prov->name, TRUE);
  env = g_environ_setenv(env, "ITAPI_CONF_IA", device, TRUE);
  env = g_environ_setenv(env, "RNICPI_CERT_DEVICE", device, TRUE);
  env = g_environ_setenv(env, "G_DEBUG", "fatal-criticals", TRUE);
  return env;
}

/* The lines that say why a GTest program failed. */
static char *
failure_lines(const char *out)
{
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  GString *msg = g_string_new(NULL);
  for (char **l = lines; *l != NULL; l++) {
    const char *s = *l;
    if (g_str_has_prefix(s, "Bail out! "))
      s += strlen("Bail out! ");
    if (strstr(s, "ERROR:") != NULL || strstr(s, "CRITICAL") != NULL ||
        strstr(s, "WARNING") != NULL) {
      g_autofree char *line = g_strstrip(g_strdup(s));
      if (strstr(msg->str, line) == NULL) {
        if (msg->len)
          g_string_append(msg, "; ");
        g_string_append(msg, line);
      }
    }
  }
  return g_string_free(msg, FALSE);
}

/* The first sanitizer report in a test's output (ASan, UBSan, TSan, LSan:
 * from its "==...Sanitizer" or "WARNING: ThreadSanitizer" line to its
 * SUMMARY line, at most 80 lines), or NULL: the console shows its stacks
 * under the failure, which the one-line reason cannot hold. */
static char *
sanitizer_report(const char *out)
{
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  GString *r = NULL;
  guint n = 0;
  for (char **l = lines; *l != NULL && n < 80; l++) {
    if (r == NULL && strstr(*l, "Sanitizer") != NULL &&
        (strstr(*l, "WARNING:") != NULL || strstr(*l, "ERROR:") != NULL))
      r = g_string_new(NULL);
    if (r == NULL)
      continue;
    g_string_append_printf(r, "%s\n", *l);
    n++;
    if (g_str_has_prefix(*l, "SUMMARY:"))
      break;
  }
  return r != NULL ? g_string_free(r, FALSE) : NULL;
}

/* Whether TAP line @l is one a test said for itself (g_test_message) or a
 * log message above debug level, not GLib's framing, the test's summary
 * or its needs. */
static gboolean
said_line(const char *l, const char *summary_tag)
{
  return g_str_has_prefix(l, "# ") && !g_str_has_prefix(l, "# Start of ") && !g_str_has_prefix(l, "# End of ") &&
         !g_str_has_prefix(l, "# random seed") && !g_str_has_prefix(l, "# needs capability: ") &&
         !g_str_has_prefix(l, summary_tag) && strstr(l, "-DEBUG: ") == NULL;
}

/* The last lines a failed test said for itself, or NULL: what a wait saw
 * instead, which the one-line reason does not carry. */
#define SAID_LINES 24
static char *
test_said(const char *out, const char *summary_tag)
{
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  guint n = g_strv_length(lines), first = n, kept = 0;
  while (first > 0 && kept < SAID_LINES)
    if (said_line(lines[--first], summary_tag))
      kept++;
  if (kept == 0)
    return NULL;
  GString *r = g_string_new(NULL);
  for (guint i = first; i < n; i++)
    if (said_line(lines[i], summary_tag))
      g_string_append_printf(r, "%s\n", lines[i] + 2);
  return g_string_free(r, FALSE);
}

static void
add_need(test_t *t, const char *cap)
{
  g_autofree char *c = g_strstrip(g_strdup(cap));
  if (t->needs == NULL || *t->needs == '\0') {
    g_free(t->needs);
    t->needs = g_strdup(c);
    return;
  }
  g_auto(GStrv) have = g_strsplit(t->needs, ", ", -1);
  if (g_strv_contains((const char *const *) have, c))
    return;
  char *n = g_strdup_printf("%s, %s", t->needs, c);
  g_free(t->needs);
  t->needs = n;
}

static void
judge(test_t *t, int status, const char *out, const char *killed)
{
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  g_autofree char *summary_tag = g_strdup_printf("# %s summary: ", t->id);
  gboolean ok = FALSE, not_ok = FALSE;
  for (char **l = lines; *l != NULL; l++) {
    if (g_str_has_prefix(*l, summary_tag)) {
      g_free(t->summary);
      t->summary = g_strdup(*l + strlen(summary_tag));
    } else if (g_str_has_prefix(*l, "# needs capability: ")) {
      add_need(t, *l + strlen("# needs capability: "));
    } else if (g_str_has_prefix(*l, "not ok ")) {
      not_ok = TRUE;
    } else if (g_str_has_prefix(*l, "ok ")) {
      const char *skip = strstr(*l, "# SKIP");
      if (skip != NULL) {
        t->result = R_SKIP;
        skip += strlen("# SKIP");
        while (*skip == ' ')
          skip++;
        if (g_str_has_prefix(skip, "needs capability: "))
          add_need(t, skip + strlen("needs capability: "));
        t->message = g_strdup(*skip ? skip : "skipped without a reason");
        return;
      }
      ok = TRUE;
    }
  }
  if (status == -1) {
    t->result = R_FAIL;
    g_autofree char *why = failure_lines(out);
    t->message = g_strdup_printf("%s%s%s", killed, *why ? "; it said: " : "", why);
    t->report = test_said(out, summary_tag);
  } else if (ok && !not_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    t->result = R_PASS;
  } else {
    t->result = R_FAIL;
    t->report = sanitizer_report(out);
    if (t->report == NULL)
      t->report = test_said(out, summary_tag);
    g_autofree char *why = failure_lines(out);
    if (WIFSIGNALED(status) && !*why)
      t->message = g_strdup_printf("crashed: killed by signal %d (%s)", WTERMSIG(status),
                                   g_strsignal(WTERMSIG(status)));
    else if (*why)
      t->message = g_strdup(why);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      t->message = g_strdup_printf("could not execute %s", t->program);
    else
      t->message = g_strdup_printf("no result reported (exit status %d)",
                                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
}

/* What the child of probe_device() finds. */
typedef struct {
  char device[64];
  gboolean have_caps;
  rnicpi_caps_t caps;
} probe_t;

/* In the child: the device to certify (the one asked for, else the
 * first the provider lists) and its capability record. */
static gboolean
probe_in_child(probe_t *out)
{
  char names[8][RNICPI_DEVICE_NAME_MAX];
  size_t n = G_N_ELEMENTS(names);
  rnicpi_status_t st = prov->prov->device->list(names, &n);
  if (st != RNICPI_OK || n == 0) {
    fprintf(stderr, "itapi-certify: provider '%s' lists no device (%s)\n", prov->name,
            rnicpi_status_message(st));
    return FALSE;
  }
  size_t pick = 0;
  if (opt_device != NULL) {
    pick = n;
    for (size_t i = 0; i < MIN(n, G_N_ELEMENTS(names)); i++)
      if (strcmp(names[i], opt_device) == 0)
        pick = i;
    if (pick == n) {
      fprintf(stderr, "itapi-certify: provider '%s' has no device '%s'; itapi-info lists them\n",
              prov->name, opt_device);
      return FALSE;
    }
  }
  g_strlcpy(out->device, names[pick], sizeof(out->device));
  static const rnicpi_upcalls_t none;
  rnicpi_dev_t *dev = NULL;
  if (prov->prov->device->open(out->device, &none, NULL, &dev) == RNICPI_OK) {
    out->have_caps = prov->prov->device->query(dev, &out->caps) == RNICPI_OK;
    prov->prov->device->close(dev);
    if (out->have_caps)
      rnicpi_caps_complete(prov->prov, &out->caps);  /* as the access layer and cert-rnicpi read it */
  }
  return TRUE;
}

/* The device and its capability record, found in a child process: a
 * provider may keep what it opened for the life of the process (vp/ib's
 * librdmacm keeps a context of every device once it looked for their
 * addresses), and this process must hold no device while the tests run
 * (a removal test needs every holder gone). */
static gboolean
probe_device(void)
{
  int fd[2];
  if (pipe(fd) != 0) {
    fprintf(stderr, "itapi-certify: cannot create a pipe: %s\n", g_strerror(errno));
    return FALSE;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    probe_t p;
    memset(&p, 0, sizeof(p));
    close(fd[0]);
    gboolean ok = probe_in_child(&p) && write(fd[1], &p, sizeof(p)) == (ssize_t) sizeof(p);
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  probe_t p;
  size_t got = 0;
  while (pid > 0 && got < sizeof(p)) {
    ssize_t r = read(fd[0], (char *) &p + got, sizeof(p) - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t) r;
  }
  close(fd[0]);
  int status = 0;
  if (pid < 0)
    fprintf(stderr, "itapi-certify: cannot fork to probe provider '%s': %s\n", prov->name,
            g_strerror(errno));
  else
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  if (got != sizeof(p)) {
    if (pid > 0 && WIFSIGNALED(status))
      fprintf(stderr, "itapi-certify: the probe of provider '%s' (a child process) was killed by "
              "signal %d before it named a device; run itapi-info to see whether the provider "
              "opens\n", prov->name, WTERMSIG(status));
    return FALSE;
  }
  g_strlcpy(device, p.device, sizeof(device));
  have_caps = p.have_caps;
  caps = p.caps;
  return TRUE;
}

static gboolean
select_provider(void)
{
  rnicpi_registry_load();
  if (opt_module != NULL) {
    const rnicpi_entry_t *e = NULL;
    g_autofree char *abs = g_canonicalize_filename(opt_module, NULL);
    g_free(opt_module);
    opt_module = g_strdup(abs);
    if (rnicpi_registry_add_module(opt_module, &e) != RNICPI_OK) {
      fprintf(stderr, "itapi-certify: provider module %s refused: %s\n", opt_module, e->reason);
      return FALSE;
    }
    prov = e;
  } else {
    for (size_t i = 0; i < rnicpi_registry_count(); i++) {
      const rnicpi_entry_t *e = rnicpi_registry_get(i);
      if (strcmp(e->name, opt_provider) == 0 && (prov == NULL || !e->refused))
        prov = e;
    }
    if (prov == NULL) {
      fprintf(stderr, "itapi-certify: no provider named '%s'; itapi-info lists them\n", opt_provider);
      return FALSE;
    }
    if (prov->refused) {
      fprintf(stderr, "itapi-certify: provider '%s' is refused: %s\n", prov->name, prov->reason);
      return FALSE;
    }
  }
  return probe_device();
}

/* A tool test passes when the tool exits 0; its last lines say why not. */
static void
judge_tool(test_t *t, int status, const char *out, const char *killed)
{
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    t->result = R_PASS;
    return;
  }
  t->result = R_FAIL;
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  guint n = g_strv_length(lines);
  GString *tail = g_string_new(NULL);
  for (guint i = n > 6 ? n - 6 : 0; i < n; i++)
    if (*lines[i] != '\0')
      g_string_append_printf(tail, "%s%s", tail->len ? "; " : "", lines[i]);
  if (status == -1)
    t->message = g_strdup_printf("%s: %s", killed, tail->str);
  else if (WIFSIGNALED(status))
    t->message = g_strdup_printf("crashed: killed by signal %d: %s", WTERMSIG(status), tail->str);
  else
    t->message = g_strdup_printf("exit status %d: %s", WEXITSTATUS(status), tail->str);
  g_string_free(tail, TRUE);
}

/* Tests that run by themselves under --jobs: they look at what the whole
 * host has (segments in /dev/shm, the device list, a memory cap), load it
 * on purpose, or time what a loaded host would slow. */
static const char *const alone_prefixes[] = {
  "/rnicpi/device/", "/conformance/ia/", "/conformance/xproc/no-leak", "/conformance/stress/",
  "/conformance/scale/", "/conformance/race/pz-limit", "/conformance/evd/fd/",
  "/conformance/xproc/aevd-server", "/conformance/xproc/stream", "/rnicpi/cm/unanswered-timeout",
};

static gboolean
test_alone(const test_t *t)
{
  if (t->argv != NULL)
    return TRUE;  /* a tool test: a peer process of its own */
  for (size_t i = 0; i < G_N_ELEMENTS(alone_prefixes); i++)
    if (g_str_has_prefix(t->id, alone_prefixes[i]))
      return TRUE;
  return FALSE;
}

/* Whether @t is to run (a test listed as a deviation is not, under
 * --skip-deviations: its result is set here). */
static gboolean
test_prepare(test_t *t, const char *reason)
{
  if (reason != NULL && opt_skip_deviations && !opt_strict && t->result == R_PASS &&
      t->message == NULL) {
    /* Listed, so any failure of it would be reported as this deviation:
     * running it can only show that it now passes. */
    t->result = R_DEVIATION;
    t->message = g_strdup_printf("%s (not run: --skip-deviations)", reason);
    return FALSE;
  }
  return t->result == R_PASS && t->message == NULL;
}

/* The end of @t (number @i, from 1), which ran or did not: its deviation,
 * its TAP line and its console line. */
static void
test_report(test_t *t, guint i, const char *reason, FILE *console)
{
  if (reason != NULL && t->result == R_FAIL) {
    if (opt_strict) {
      g_autofree char *m = t->message;
      t->message = g_strdup_printf("%s (listed as a known deviation: %s; --strict)", m, reason);
    } else {
      g_free(t->message);
      t->result = R_DEVIATION;
      t->message = g_strdup(reason);
    }
  } else if (reason != NULL && t->result == R_PASS) {
    t->message = g_strdup_printf("passes although listed as a deviation (%s): remove it from the file", reason);
  }
  if (opt_tap) {
    if (t->result == R_FAIL) {
      g_autofree char *rl = catalog_rule_line(t);
      printf("not ok %u %s\n# %s\n# rule broken: %s\n", i, t->id, t->message, rl);
    }
    else if (t->result == R_SKIP)
      printf("ok %u %s # SKIP %s\n", i, t->id, t->message);
    else if (t->result == R_DEVIATION)
      printf("not ok %u %s # TODO known deviation: %s\n", i, t->id, t->message);
    else
      printf("ok %u %s\n", i, t->id);
    fflush(stdout);
  }
  if (!opt_quiet || t->result == R_FAIL)
    fprintf(console, "%-9s %s (%.0f ms)%s%s\n", t->result == R_PASS ? "PASS" : t->result == R_FAIL ? "FAIL" :
            t->result == R_SKIP ? "SKIP" : "DEVIATION", t->id, t->ms,
            t->message ? ": " : "", t->message ? t->message : "");
  if (t->result == R_FAIL) {
    g_autofree char *rl = catalog_rule_line(t);
    fprintf(console, "          rule broken: %s\n", rl);
    if (t->report != NULL) {
      g_auto(GStrv) lines = g_strsplit(t->report, "\n", -1);
      for (char **l = lines; *l != NULL; l++) {
        if (**l != '\0')
          fprintf(console, "          | %s\n", *l);
      }
    }
  }
}

/* Run the catalog @cat, --jobs tests at a time (test_alone ones by
 * themselves), and report each in catalog order as soon as it and those
 * before it have ended. */
static void
run_pool(GPtrArray *cat, GHashTable *dev, char **env, guint tap_base)
{
  FILE *console = opt_tap ? stderr : stdout;
  guint n = cat->len, next_start = 0, next_report = 0, running = 0;
  gboolean alone_running = FALSE;
  run_t *runs = g_new0(run_t, MAX(n, 1));
  guint8 *state = g_new0(guint8, MAX(n, 1));  /* 0 waits, 1 runs, 2 ended */
  while (next_report < n) {
    while (next_start < n && running < (guint) opt_jobs && !alone_running) {
      test_t *t = g_ptr_array_index(cat, next_start);
      if (!test_prepare(t, g_hash_table_lookup(dev, t->id))) {
        state[next_start++] = 2;
        continue;
      }
      gboolean alone = opt_jobs > 1 && test_alone(t);
      if (alone && running > 0)
        break;  /* it starts once the others have ended */
      char *targv[] = { t->program, "-p", t->id, "--tap", NULL };
      run_start(&runs[next_start], t->argv != NULL ? t->argv : targv, env, opt_timeout);
      state[next_start++] = 1;
      running++;
      alone_running = alone;
    }
    gboolean moved = FALSE;
    for (guint i = next_report; i < next_start; i++) {
      if (state[i] != 1 || !run_poll(&runs[i]))
        continue;
      test_t *t = g_ptr_array_index(cat, i);
      char *out = NULL, *killed = NULL;
      int st = run_finish(&runs[i], &out, &t->ms, &killed);
      if (t->argv != NULL)
        judge_tool(t, st, out, killed);
      else
        judge(t, st, out, killed);
      g_free(out);
      g_free(killed);
      state[i] = 2;
      running--;
      alone_running = FALSE;
      moved = TRUE;
    }
    while (next_report < next_start && state[next_report] == 2) {
      test_t *t = g_ptr_array_index(cat, next_report);
      test_report(t, tap_base + next_report + 1, g_hash_table_lookup(dev, t->id), console);
      next_report++;
      moved = TRUE;
    }
    if (!moved && running > 0) {
      run_t *live[64];
      guint k = 0;
      for (guint i = next_report; i < next_start && k < G_N_ELEMENTS(live); i++)
        if (state[i] == 1)
          live[k++] = &runs[i];
      run_sleep(live, k, 2);
    }
  }
  g_free(runs);
  g_free(state);
}

static const char verdict_char[] = { [R_PASS] = 'P', [R_FAIL] = 'F', [R_SKIP] = 'S',
                                      [R_DEVIATION] = 'D' };

/* Before run @round (from 0): each test back to what the catalog set, and
 * the verdicts of the runs before it kept. */
static void
round_reset(GPtrArray *cat, int round)
{
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    if (round == 0) {
      t->runs = g_string_new(NULL);
      t->start_result = t->result;
      t->start_message = g_strdup(t->message);
      continue;
    }
    t->result = t->start_result;
    g_free(t->message);
    t->message = g_strdup(t->start_message);
    g_clear_pointer(&t->report, g_free);
    t->ms = 0;
  }
}

/* After a run: its verdict of each test noted, with the first failure. */
static void
round_note(GPtrArray *cat)
{
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    g_string_append_c(t->runs, verdict_char[t->result]);
    if (t->result == R_FAIL && t->fail_message == NULL) {
      t->fail_message = g_strdup(t->message);
      t->fail_report = g_strdup(t->report);
    }
  }
}

/* After every run: a test whose verdict changed fails, naming its runs;
 * returns how many did. */
static guint
rounds_judge(GPtrArray *cat, FILE *console)
{
  guint changed = 0;
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    const char *r = t->runs->str;
    if (strspn(r, (const char[]) { r[0], '\0' }) == t->runs->len)
      continue;  /* one verdict throughout */
    if (changed++ == 0)
      fprintf(console, "\nverdicts that changed between the %d runs (P pass, F fail, S skipped, "
              "D deviation):\n", opt_repeat);
    fprintf(console, "  %s %s%s%s\n", r, t->id, t->fail_message ? ": " : "",
            t->fail_message ? t->fail_message : "");
    g_free(t->message);
    t->message = g_strdup_printf("verdict changed over %d runs (%s: P pass, F fail, S skipped, "
                                 "D deviation)%s%s", opt_repeat, r,
                                 t->fail_message ? "; the first failure: " : "",
                                 t->fail_message ? t->fail_message : "");
    g_free(t->report);
    t->report = g_strdup(t->fail_report);
    t->result = R_FAIL;
  }
  if (opt_repeat > 1)
    fprintf(console, "\n%u of %u tests changed verdict over %d runs\n", changed, cat->len, opt_repeat);
  return changed;
}

int
main(int argc, char **argv)
{
  provenance_start(argc, argv);
  GOptionEntry entries[] = {
    { "provider", 'p', 0, G_OPTION_ARG_STRING, &opt_provider, "certify the registered provider NAME", "NAME" },
    { "provider-module", 'm', 0, G_OPTION_ARG_FILENAME, &opt_module, "certify the provider module at PATH", "PATH" },
    { "device", 'd', 0, G_OPTION_ARG_STRING, &opt_device, "certify this device of the provider (default: its first)", "NAME" },
    { "strict", 0, 0, G_OPTION_ARG_NONE, &opt_strict, "count known deviations as failures", NULL },
    { "skip-deviations", 0, 0, G_OPTION_ARG_NONE, &opt_skip_deviations,
      "do not run the tests the deviation file lists (a quicker run; it cannot see one pass)", NULL },
    { "level", 0, 0, G_OPTION_ARG_STRING, &opt_level, "rnicpi, itapi, interop or all (default)", "LEVEL" },
    { "filter", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_filter,
      "run only tests whose id contains TEXT (repeated: any of them)", "TEXT" },
    { "exclude", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_exclude,
      "leave out the tests whose id contains TEXT (repeated: any of them); the report says so", "TEXT" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &opt_timeout,
      "the ceiling: seconds each test may take in all (default 60); a test is killed sooner when "
      "one of its waits outlasts its own limit plus --wait-grace", "SEC" },
    { "wait-grace", 0, 0, G_OPTION_ARG_INT, &opt_wait_grace,
      "seconds a test's wait may outlast its own limit before the test is killed (default 5)", "SEC" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &opt_jobs,
      "tests run at once (default: ITAPI_CERTIFY_JOBS, else 1; those that look at or load the whole host run alone)", "N" },
    { "deviations", 0, 0, G_OPTION_ARG_FILENAME, &opt_deviations, "deviation file (default: the provider's)", "FILE" },
    { "tests-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_tests_dir, "where the test programs are", "DIR" },
    { "tap", 0, 0, G_OPTION_ARG_NONE, &opt_tap, "print TAP on standard output", NULL },
    { "junit", 0, 0, G_OPTION_ARG_FILENAME, &opt_junit, "write a JUnit XML report", "FILE" },
    { "json", 0, 0, G_OPTION_ARG_FILENAME, &opt_json, "write a JSON report", "FILE" },
    { "markdown", 0, 0, G_OPTION_ARG_FILENAME, &opt_markdown, "write a Markdown report", "FILE" },
    { "html", 0, 0, G_OPTION_ARG_FILENAME, &opt_html, "write an HTML report", "FILE" },
    { "list", 'l', 0, G_OPTION_ARG_NONE, &opt_list, "list the catalog and exit", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &opt_quiet, "print only failures and the summary", NULL },
    { "rules", 0, 0, G_OPTION_ARG_FILENAME, &opt_rules, "the rules file (default: the catalog's rules.txt)", "FILE" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &opt_repeat,
      "run the catalog N times; a test whose verdict changes between runs fails (default 1)", "N" },
    { "compare", 0, 0, G_OPTION_ARG_NONE, &opt_compare,
      "compare two JSON reports given as OLD NEW: new failures, fixed tests, changed deviations, "
      "tests added or removed, and what they certified with", NULL },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
  };
  GError *err = NULL;
  GOptionContext *ctx = g_option_context_new("- certify an RNIC-PI provider");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(ctx,
    "Exit status: 0 when no test failed, 1 when any did, 2 on a usage or set-up error.\n"
    "Deviation file: one line per known deviation, '<test id> <reason>'.");
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "itapi-certify: %s\n", err->message);
    return 2;
  }
  g_option_context_free(ctx);
  if (opt_compare) {
    if (argc != 3) {
      fprintf(stderr, "itapi-certify: --compare takes two JSON reports (--json FILE): OLD NEW\n");
      return 2;
    }
    return compare_reports(argv[1], argv[2]);
  }
  if (argc > 1) {
    fprintf(stderr, "itapi-certify: '%s' is not an option; --help lists them\n", argv[1]);
    return 2;
  }
  if (opt_repeat < 1 || opt_repeat > 1000) {
    fprintf(stderr, "itapi-certify: --repeat must be 1 to 1000, not %d\n", opt_repeat);
    return 2;
  }
  if (opt_timeout < 1 || opt_wait_grace < 0 || opt_wait_grace > 3600) {
    fprintf(stderr, "itapi-certify: --timeout must be at least 1 and --wait-grace 0 to 3600, "
            "not %d and %d\n", opt_timeout, opt_wait_grace);
    return 2;
  }
  if ((opt_provider == NULL) == (opt_module == NULL)) {
    fprintf(stderr, "itapi-certify: give exactly one of --provider NAME or --provider-module PATH\n");
    return 2;
  }
  const char *jobs_env = g_getenv("ITAPI_CERTIFY_JOBS");
  if (opt_jobs == INT_MIN && jobs_env != NULL && *jobs_env != '\0') {
    char *end;
    long j = strtol(jobs_env, &end, 10);
    if (*end != '\0' || j < 1 || j > 64) {
      fprintf(stderr, "itapi-certify: ITAPI_CERTIFY_JOBS must be a number from 1 to 64, not '%s'\n", jobs_env);
      return 2;
    }
    opt_jobs = (int) j;
  } else if (opt_jobs == INT_MIN) {
    opt_jobs = 1;
  }
  if (opt_jobs < 1 || opt_jobs > 64) {
    fprintf(stderr, "itapi-certify: --jobs must be 1 to 64, not %d\n", opt_jobs);
    return 2;
  }
  if (strcmp(opt_level, "all") != 0 && strcmp(opt_level, "rnicpi") != 0 &&
      strcmp(opt_level, "itapi") != 0 && strcmp(opt_level, "interop") != 0) {
    fprintf(stderr, "itapi-certify: --level must be rnicpi, itapi, interop or all, not '%s'\n", opt_level);
    return 2;
  }
  if (!select_provider())
    return 2;

  g_autofree char *dir = catalog_tests_dir();
  GPtrArray *cat = catalog_build(dir);
  GHashTable *dev = catalog_load_deviations();
  GHashTable *rules = catalog_load_rules();
  catalog_attach_rules(cat, rules);
  if (opt_list) {
    for (guint i = 0; i < cat->len; i++) {
      test_t *t = g_ptr_array_index(cat, i);
      printf("%-8s %-60s %s\n", t->level, t->id, t->area);
    }
    g_hash_table_unref(dev);
    g_hash_table_unref(rules);
    g_ptr_array_unref(cat);
    return 0;
  }

  FILE *console = opt_tap ? stderr : stdout;
  if (opt_tap)
    printf("1..%u\n", cat->len * (guint) opt_repeat);
  fprintf(console, "certifying provider '%s' (%s), device %s: %u tests\n", prov->name, prov->origin,
          device, cat->len);
  char **env = run_env();
  for (int r = 0; r < opt_repeat; r++) {
    round_reset(cat, r);
    if (opt_repeat > 1)
      fprintf(console, "%srun %d of %d\n", r ? "\n" : "", r + 1, opt_repeat);
    run_pool(cat, dev, env, cat->len * (guint) r);
    round_note(cat);
  }
  rounds_judge(cat, console);
  g_strfreev(env);

  counts_t c = report_count(cat, NULL);
  if (opt_strict) {
    c.fail += c.dev;
    c.dev = 0;
  }
  if (opt_json)
    report_json(cat, c);
  if (opt_junit)
    report_junit(cat);
  if (opt_markdown)
    report_markdown(cat, c);
  if (opt_html)
    report_html(cat, c);
  g_autoptr(GPtrArray) ll = report_level_lines(cat);
  for (guint i = 0; i < ll->len; i++)
    fprintf(console, "%s%s\n", i ? "" : "\n", (char *) g_ptr_array_index(ll, i));
  fprintf(console, "\n%s: %d passed, %d failed, %d skipped, %d known deviations (of %u tests; "
          "%u of them, %.0f%%, check error paths)\n", c.fail ? "NOT CERTIFIED" : "CERTIFIED",
          c.pass, c.fail, c.skip, c.dev, cat->len, report_negatives(cat),
          cat->len ? 100.0 * report_negatives(cat) / cat->len : 0.0);
  g_hash_table_unref(dev);
  g_hash_table_unref(rules);
  g_ptr_array_unref(cat);
  return c.fail ? 1 : 0;
}

