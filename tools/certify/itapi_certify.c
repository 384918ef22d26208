/*
 * itapi-certify: certify an RNIC-PI provider against the conformance catalog.
 *
 *   itapi-certify (--provider NAME | --provider-module PATH) [--strict]
 *                 [--level rnicpi|itapi|interop|all] [--filter SUBSTRING...] [--timeout SEC]
 *                 [--deviations FILE] [--tap] [--junit FILE] [--json FILE]
 *                 [--markdown FILE] [--html FILE] [--list]
 *
 * The catalog is the set of test programs of the suite: cert-rnicpi drives the
 * provider's verbs directly (RNIC-PI level), the conf-* programs drive the
 * whole stack over it (IT-API level), and cert-interop puts the provider's
 * wire against a reference peer (vp/iwarp in another process) and golden
 * frames from the RFCs (Interop level).  Every test runs in its own process
 * with a timeout, so a crash or a hang is a failure of that test only.  Each
 * test ends as pass, fail, skipped (naming the capability the provider's
 * record lacks) or known deviation (listed with a reason in the provider's
 * deviation file; --strict makes those failures).  Nothing is silently not
 * run: a test that produced no result is a failure.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rnicpi_loader.h"

typedef enum { R_PASS, R_FAIL, R_SKIP, R_DEVIATION } result_t;

static const char *const result_name[] = { "pass", "fail", "skipped", "deviation" };

typedef struct {
  char *id;          /* the GTest path, e.g. /conformance/cm/reject-pdata */
  char **argv;       /* a tool test's command line (NULL: a GTest path) */
  gboolean negative; /* checks an error path */
  char *program;     /* the program that holds it */
  const char *level; /* "RNIC-PI", "IT-API" or "Interop" */
  const char *area;  /* spec area */
  char *summary;     /* one line, from the test's g_test_summary() */
  char *needs;       /* capabilities it uses, comma separated ("" for none) */
  result_t result;
  char *message;     /* why it failed, was skipped, or deviates */
  double ms;
  const char *rule_where; /* where the rule it checks is written (rules.txt) */
  const char *rule;       /* that rule, one sentence */
} test_t;

/* Spec areas by path prefix; the first match wins. */
static const struct { const char *prefix, *level, *area; } areas[] = {
  { "/rnicpi/device", "RNIC-PI", "RNIC-PI device and capability record" },
  { "/rnicpi/pd", "RNIC-PI", "RNIC-PI protection domains" },
  { "/rnicpi/mr", "RNIC-PI", "RNIC-PI memory registration" },
  { "/rnicpi/cq-overflow", "RNIC-PI", "RNIC-PI completion queues" },
  { "/rnicpi/cq", "RNIC-PI", "RNIC-PI completion queues" },
  { "/rnicpi/qp", "RNIC-PI", "RNIC-PI queue pairs and state machine" },
  { "/rnicpi/cm", "RNIC-PI", "RNIC-PI connection management verbs" },
  { "/rnicpi/data", "RNIC-PI", "RNIC-PI data path" },
  { "/rnicpi/errors", "RNIC-PI", "RNIC-PI error paths" },
  { "/rnicpi/mw", "RNIC-PI", "RNIC-PI memory windows" },
  { "/rnicpi/srq", "RNIC-PI", "RNIC-PI shared receive queues" },
  { "/rnicpi/ud", "RNIC-PI", "RNIC-PI unreliable datagrams" },
  { "/rnicpi/protect-local", "RNIC-PI", "RNIC-PI local protection" },
  { "/rnicpi/bounds", "RNIC-PI", "RNIC-PI region bounds" },
  { "/rnicpi/handoff", "RNIC-PI", "RNIC-PI socket handoff" },
  { "/rnicpi/flush", "RNIC-PI", "RNIC-PI completions at the end: flush, unsignaled failures, transfers in flight" },
  { "/rnicpi/protect", "RNIC-PI", "RNIC-PI protection: every part of a key, protection domains, IRD/ORD" },
  { "/rnicpi/xproc", "RNIC-PI", "RNIC-PI with the peer in another process" },
  { "/rnicpi/", "RNIC-PI", "RNIC-PI other" },
  { "/interop/golden", "Interop", "Interop: known answers from golden frames (RFC 5040/5041/5044/6581)" },
  { "/interop/peer", "Interop", "Interop: against the reference peer (vp/iwarp in another process)" },
  { "/interop/", "Interop", "Interop other" },
  { "/conformance/ia", "IT-API", "IT-API 2.1/2.2/2.13 interface adapters, PZ, handles, utilities" },
  { "/conformance/cm", "IT-API", "IT-API 2.5 connection management" },
  { "/conformance/dto", "IT-API", "IT-API 2.10 data transfer operations" },
  { "/conformance/evd", "IT-API", "IT-API 2.3 event dispatchers" },
  { "/conformance/lmr", "IT-API", "IT-API 2.8 local memory regions" },
  { "/conformance/neg", "IT-API", "IT-API 2.8/2.10 protection and error paths" },
  { "/conformance/stress", "IT-API", "IT-API transactions under load" },
  { "/conformance/xproc", "IT-API", "IT-API across processes: transfers, protection, process death" },
  { "/conformance/srq", "IT-API", "IT-API 2.7 shared receive queues" },
  { "/conformance/sc", "IT-API", "IT-API 2.6 socket conversion" },
  { "/conformance/scale", "IT-API", "IT-API at scale: many endpoints in one and two processes" },
  { "/conformance/ud", "IT-API", "IT-API 2.4/2.10-2.12 datagrams, address handles, UD service resolution" },
  { "/conformance/rmr", "IT-API", "IT-API 2.9 remote memory regions (memory windows)" },
  { "/conformance/race", "IT-API", "IT-API under concurrency: frees racing use, stale handles, object limits" },
  { "/", "IT-API", "IT-API other" },
};

/* Tests run by a tool rather than a GTest program: the transaction test in
 * the spirit of dapltest -T T -V, and its fault variant. */
static const struct { const char *id, *tool, *summary, *args; } tool_tests[] = {
  { "/conformance/stress/transactions", "itapi-test",
    "2 threads x 4 endpoint pairs issue mixed send/recv, RDMA Write, RDMA Read (and atomics when "
    "offered) for 3 s with every transfer validated and every completion matched once",
    "-T 2 -E 4 -D 3" },
  { "/conformance/stress/fault", "itapi-test",
    "an endpoint freed mid-transfer: its peer gets BROKEN and every outstanding work request on "
    "both ends completes exactly once while the other pairs carry on",
    "-T 2 -E 4 -D 3 --fault" },
};

/* Error-path tests, by the words their ids use. */
static const char *const negative_words[] = {
  "/neg/", "/errors/", "/bad", "invalid", "limit", "busy", "stale", "garbage", "reject",
  "unreachable", "overflow", "full", "broken", "withdrawn", "mismatch", "wrong", "past-end",
  "too-small", "flush", "unsignaled-error", "fault", "-idle", "create-errors", "unsupported", "refuse", "no-key-reuse",
  "waiter", "empty", "unconnected", "twice", "memlock", "not-software", "rules", "reuse",
  "-vs-", "-limit", "/protect/key-", "/protect/window/", "/protect/pz/", "/xproc/pz-", "/key-field/", "/rmr/pz-",
  /* cert_mw.c, cert_srq.c, cert_ud.c, cert_more.c */
  "past-window", "before-window", "before-first", "one-past", "-rights", "exceed", "no-mw-bind",
  "past-region", "old-key", "dealloc-bound", "other-qp", "-valid", "revoke", "no-local-write",
  "unaligned", "modify-rts-access", "in-error", "too-big", "error-keeps",
};

static const char *const programs[] = {
  "cert-rnicpi", "conf-ia", "conf-cm", "conf-dto", "conf-flush", "conf-evd", "conf-lmr", "conf-neg", "conf-xproc", "conf-srq", "conf-rmr", "conf-sc",
  "conf-scale", "conf-ud", "conf-race", "conf-evloop", "cert-interop",
};

/* The --level a program's tests belong to. */
static const char *
program_level(const char *prog)
{
  if (strcmp(prog, "cert-rnicpi") == 0)
    return "rnicpi";
  if (strcmp(prog, "cert-interop") == 0)
    return "interop";
  return "itapi";
}

static char *opt_provider, *opt_module, *opt_level = "all", *opt_deviations;
static char **opt_filter; /* --filter, repeated: a test runs if its id contains any */
static char *opt_rules;
static char *opt_junit, *opt_json, *opt_markdown, *opt_html, *opt_tests_dir, *opt_device;
static gboolean opt_strict, opt_tap, opt_list, opt_quiet, opt_skip_deviations;
static int opt_timeout = 60;

/* The provider under test. */
static const rnicpi_entry_t *prov;
static char device[64];
static rnicpi_caps_t caps;
static gboolean have_caps;

static void
area_of(test_t *t)
{
  for (size_t i = 0; i < G_N_ELEMENTS(negative_words) && !t->negative; i++)
    t->negative = strstr(t->id, negative_words[i]) != NULL;
  for (size_t i = 0; i < G_N_ELEMENTS(areas); i++)
    if (g_str_has_prefix(t->id, areas[i].prefix)) {
      t->level = areas[i].level;
      t->area = areas[i].area;
      return;
    }
}

static char *
tests_dir(void)
{
  if (opt_tests_dir != NULL)
    return g_strdup(opt_tests_dir);
  const char *env = g_getenv("ITAPI_CERT_DIR");
  if (env != NULL)
    return g_strdup(env);
  g_autofree char *probe = g_build_filename(CERT_BUILD_DIR, "conformance", "conf-ia", NULL);
  if (g_file_test(probe, G_FILE_TEST_IS_EXECUTABLE))
    return g_strdup(CERT_BUILD_DIR);
  return g_strdup(CERT_INSTALL_DIR);
}

static char *
program_path(const char *dir, const char *prog)
{
  /* Build tree: conformance/ and conformance/rnicpi/; install: one folder. */
  const char *subs[] = { "", "conformance", "conformance/rnicpi", "conformance/interop" };
  for (size_t i = 0; i < G_N_ELEMENTS(subs); i++) {
    char *p = g_build_filename(dir, subs[i], prog, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
      return p;
    g_free(p);
  }
  return NULL;
}

/* Environment every test process gets: it selects the provider. */
static char **
test_env(void)
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

/* Run argv with env; output to a temp file; kill the process group after
 * the timeout.  Returns the wait status, or -1 on timeout. */
static int
run_captured(char **argv, char **env, int timeout_s, char **output, double *ms)
{
  char *tmpl = NULL;
  int fd = g_file_open_tmp("itapi-certify-XXXXXX", &tmpl, NULL);
  if (fd < 0) {
    *output = g_strdup("cannot create a temporary file for the test's output");
    return 0x7f00;
  }
  gint64 t0 = g_get_monotonic_time();
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
  int status = 0;
  gboolean timed_out = FALSE;
  if (pid < 0) {
    status = 0x7f00;
  } else {
    gint64 deadline = t0 + (gint64) timeout_s * G_USEC_PER_SEC;
    for (;;) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid)
        break;
      if (r < 0 && errno != EINTR) {
        status = 0x7f00;
        break;
      }
      if (g_get_monotonic_time() > deadline) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        timed_out = TRUE;
        break;
      }
      g_usleep(2000);
    }
    /* Reap anything the test forked and left behind. */
    kill(-pid, SIGKILL);
  }
  *ms = (g_get_monotonic_time() - t0) / 1000.0;
  if (!g_file_get_contents(tmpl, output, NULL, NULL))
    *output = g_strdup("");
  g_unlink(tmpl);
  g_free(tmpl);
  return timed_out ? -1 : status;
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
judge(test_t *t, int status, const char *out)
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
    t->message = g_strdup_printf("timed out after %d s and was killed%s%s", opt_timeout,
                                 *why ? ": " : "", why);
  } else if (ok && !not_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    t->result = R_PASS;
  } else {
    t->result = R_FAIL;
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

/* Deviation file: "<test id> <reason>" per line; '#' starts a comment. */
static void
read_deviations(GHashTable *dev, const char *path)
{
  g_autofree char *text = NULL;
  GError *err = NULL;
  if (!g_file_get_contents(path, &text, NULL, &err)) {
    fprintf(stderr, "itapi-certify: cannot read the deviation file %s: %s\n", path, err->message);
    exit(2);
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l != NULL; l++) {
    char *s = g_strstrip(*l);
    if (*s == '\0' || *s == '#')
      continue;
    char *sp = strpbrk(s, " \t");
    if (sp == NULL || *g_strstrip(sp + 1) == '\0') {
      fprintf(stderr, "itapi-certify: %s: '%s' names a test but gives no reason; "
              "write '<test id> <reason>'\n", path, s);
      exit(2);
    }
    *sp = '\0';
    g_hash_table_replace(dev, g_strdup(s), g_strdup(g_strstrip(sp + 1)));
  }
}

/* Deviation files: "<test id> <reason>" per line; '#' starts a comment.
 * The provider's (<provider>.txt) and, for a device with semantics of its
 * own, the device's (<device>.txt), or the one --deviations names. */
static GHashTable *
load_deviations(void)
{
  GHashTable *dev = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (opt_deviations != NULL) {
    read_deviations(dev, opt_deviations);
    return dev;
  }
  const char *stems[] = { prov->name, device };
  for (size_t k = 0; k < G_N_ELEMENTS(stems); k++) {
    g_autofree char *name = g_strdup_printf("%s.txt", stems[k]);
    const char *dirs[] = { CERT_DEVIATIONS_SRC, CERT_DEVIATIONS_INSTALL };
    for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
      g_autofree char *p = g_build_filename(dirs[i], name, NULL);
      if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
        read_deviations(dev, p);
        break;
      }
    }
  }
  return dev;
}

/* The rule each test checks: conformance/rules.txt, "<id> TAB <where> TAB
 * <rule>" per line, '#' starting a comment; from the source tree or the
 * installed data directory, or the file --rules names.  The table maps an
 * id to "<where>\t<rule>". */
static GHashTable *
load_rules(void)
{
  GHashTable *rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  const char *paths[] = { opt_rules, CERT_RULES_SRC, CERT_RULES_INSTALL };
  for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
    g_autofree char *text = NULL;
    GError *err = NULL;
    if (paths[i] == NULL)
      continue;
    if (!g_file_get_contents(paths[i], &text, NULL, &err)) {
      if (paths[i] == opt_rules) {
        fprintf(stderr, "itapi-certify: cannot read the rules file %s: %s\n", paths[i], err->message);
        exit(2);
      }
      g_error_free(err);
      continue;
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL; l++) {
      if (**l == '#' || **l == '\0')
        continue;
      g_auto(GStrv) f = g_strsplit(*l, "\t", 3);
      if (g_strv_length(f) != 3 || *f[1] == '\0' || *f[2] == '\0') {
        fprintf(stderr, "itapi-certify: %s: '%s' is not '<test id> TAB <where> TAB <rule>'\n",
                paths[i], *l);
        exit(2);
      }
      g_hash_table_replace(rules, g_strdup(f[0]), g_strdup_printf("%s\t%s", f[1], f[2]));
    }
    break;
  }
  return rules;
}

/* Give each test its rule; a test the file does not name keeps its area
 * and its summary (check_rules.py keeps the file complete). */
static void
attach_rules(GPtrArray *cat, GHashTable *rules)
{
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    char *r = g_hash_table_lookup(rules, t->id);
    char *tab = r != NULL ? strchr(r, '\t') : NULL;
    if (tab != NULL) {
      t->rule_where = r;
      *tab = '\0';
      t->rule = tab + 1;
    }
  }
}

/* "<where>: <rule>" of @t, or its area and summary when no rule names it. */
static char *
rule_line(const test_t *t)
{
  if (t->rule != NULL)
    return g_strdup_printf("%s: %s", t->rule_where, t->rule);
  return g_strdup_printf("%s: %s (no rule listed for this test)", t->area,
                         t->summary != NULL && *t->summary ? t->summary : t->id);
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
  char names[8][64];
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

static char *
tool_path(const char *dir, const char *tool)
{
  const char *cands[] = { "tools/stress", "tools/perf", "tools" };
  for (size_t i = 0; i < G_N_ELEMENTS(cands); i++) {
    char *p = g_build_filename(dir, cands[i], tool, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
      return p;
    g_free(p);
  }
  char *p = g_build_filename(CERT_BINDIR, tool, NULL);
  if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
    return p;
  g_free(p);
  return NULL;
}

/* A tool test passes when the tool exits 0; its last lines say why not. */
static void
judge_tool(test_t *t, int status, const char *out)
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
    t->message = g_strdup_printf("timed out after %d s and was killed: %s", opt_timeout, tail->str);
  else if (WIFSIGNALED(status))
    t->message = g_strdup_printf("crashed: killed by signal %d: %s", WTERMSIG(status), tail->str);
  else
    t->message = g_strdup_printf("exit status %d: %s", WEXITSTATUS(status), tail->str);
  g_string_free(tail, TRUE);
}

static void
test_free(gpointer p)
{
  test_t *t = p;
  g_free(t->id);
  g_strfreev(t->argv);
  g_free(t->program);
  g_free(t->summary);
  g_free(t->needs);
  g_free(t->message);
  g_free(t);
}

/* Whether --filter lets test @id run (no --filter: every test does). */
static gboolean
filtered_in(const char *id)
{
  if (opt_filter == NULL)
    return TRUE;
  for (char **f = opt_filter; *f != NULL; f++)
    if (strstr(id, *f) != NULL)
      return TRUE;
  return FALSE;
}

static GPtrArray *
build_catalog(const char *dir)
{
  GPtrArray *cat = g_ptr_array_new_with_free_func(test_free);
  char **env = test_env();
  for (size_t p = 0; p < G_N_ELEMENTS(programs); p++) {
    g_autofree char *path = program_path(dir, programs[p]);
    if (strcmp(opt_level, "all") != 0 && strcmp(opt_level, program_level(programs[p])) != 0)
      continue;
    if (path == NULL) {
      /* A missing program is a failure, never a silent gap. */
      test_t *t = g_new0(test_t, 1);
      t->id = g_strdup_printf("/%s", programs[p]);
      t->program = g_strdup(programs[p]);
      area_of(t);
      t->result = R_FAIL;
      t->message = g_strdup_printf("test program %s not found under %s; build it, or point "
                                   "--tests-dir at it", programs[p], dir);
      t->summary = g_strdup("the test program exists");
      g_ptr_array_add(cat, t);
      continue;
    }
    char *argv[] = { path, "-l", NULL };
    char *out = NULL;
    double ms;
    int st = run_captured(argv, env, 30, &out, &ms);
    if (st != 0) {
      test_t *t = g_new0(test_t, 1);
      t->id = g_strdup_printf("/%s", programs[p]);
      t->program = g_strdup(path);
      area_of(t);
      t->result = R_FAIL;
      t->message = g_strdup_printf("listing the tests of %s failed: %s", path, out);
      t->summary = g_strdup("the test program lists its tests");
      g_ptr_array_add(cat, t);
      g_free(out);
      continue;
    }
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l != NULL; l++) {
      if (**l != '/')
        continue;
      if (!filtered_in(*l))
        continue;
      test_t *t = g_new0(test_t, 1);
      t->id = g_strdup(*l);
      t->program = g_strdup(path);
      t->summary = g_strdup("");
      area_of(t);
      g_ptr_array_add(cat, t);
    }
    g_free(out);
  }
  if (strcmp(opt_level, "all") == 0 || strcmp(opt_level, "itapi") == 0) {
    for (size_t i = 0; i < G_N_ELEMENTS(tool_tests); i++) {
      if (!filtered_in(tool_tests[i].id))
        continue;
      test_t *t = g_new0(test_t, 1);
      t->id = g_strdup(tool_tests[i].id);
      t->summary = g_strdup(tool_tests[i].summary);
      area_of(t);
      g_autofree char *tool = tool_path(dir, tool_tests[i].tool);
      if (tool == NULL) {
        t->program = g_strdup(tool_tests[i].tool);
        t->result = R_FAIL;
        t->message = g_strdup_printf("tool %s not found in the build tree or %s", tool_tests[i].tool,
                                     CERT_BINDIR);
      } else {
        t->program = g_strdup(tool);
        g_autofree char *cmd = g_strdup_printf("%s -i %s %s", tool, device, tool_tests[i].args);
        t->argv = g_strsplit(cmd, " ", -1);
      }
      g_ptr_array_add(cat, t);
    }
  }
  g_strfreev(env);
  return cat;
}

/* Reports. */

static void
xml_escape(GString *o, const char *s)
{
  g_autofree char *e = g_markup_escape_text(s ? s : "", -1);
  g_string_append(o, e);
}

static void
json_str(GString *o, const char *s)
{
  g_string_append_c(o, '"');
  for (s = s ? s : ""; *s; s++) {
    unsigned char c = (unsigned char) *s;
    if (c == '"' || c == '\\')
      g_string_append_printf(o, "\\%c", c);
    else if (c < 0x20)
      g_string_append_printf(o, "\\u%04x", c);
    else
      g_string_append_c(o, (char) c);
  }
  g_string_append_c(o, '"');
}

static void
write_file(const char *path, GString *o)
{
  GError *err = NULL;
  if (!g_file_set_contents(path, o->str, (gssize) o->len, &err)) {
    fprintf(stderr, "itapi-certify: cannot write %s: %s\n", path, err->message);
    exit(2);
  }
}

typedef struct { int pass, fail, skip, dev; } counts_t;

static guint
negatives(GPtrArray *cat)
{
  guint n = 0;
  for (guint i = 0; i < cat->len; i++)
    n += ((test_t *) g_ptr_array_index(cat, i))->negative ? 1 : 0;
  return n;
}

static counts_t
count(GPtrArray *cat, const char *area)
{
  counts_t c = { 0, 0, 0, 0 };
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    if (area != NULL && strcmp(t->area, area) != 0)
      continue;
    switch (t->result) {
    case R_PASS: c.pass++; break;
    case R_FAIL: c.fail++; break;
    case R_SKIP: c.skip++; break;
    case R_DEVIATION: c.dev++; break;
    }
  }
  return c;
}

static GPtrArray *
area_list(GPtrArray *cat)
{
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    gboolean seen = FALSE;
    for (guint k = 0; k < a->len && !seen; k++)
      seen = strcmp(g_ptr_array_index(a, k), t->area) == 0;
    if (!seen)
      g_ptr_array_add(a, (gpointer) t->area);
  }
  return a;
}

/* The levels of the catalog, in report order, and one line of counts for
 * each level the run holds (a vendor reads the interop level apart: it is
 * the provider's wire against others, not against itself). */
static const char *const level_names[] = { "RNIC-PI", "IT-API", "Interop" };

static GPtrArray *
level_lines(GPtrArray *cat)
{
  GPtrArray *l = g_ptr_array_new_with_free_func(g_free);
  for (size_t k = 0; k < G_N_ELEMENTS(level_names); k++) {
    counts_t c = { 0, 0, 0, 0 };
    guint n = 0;
    for (guint i = 0; i < cat->len; i++) {
      test_t *t = g_ptr_array_index(cat, i);
      if (t->level == NULL || strcmp(t->level, level_names[k]) != 0)
        continue;
      n++;
      c.pass += t->result == R_PASS;
      c.fail += t->result == R_FAIL;
      c.skip += t->result == R_SKIP;
      c.dev += t->result == R_DEVIATION;
    }
    if (n > 0)
      g_ptr_array_add(l, g_strdup_printf("%s level: %u tests, %d passed, %d failed, %d skipped, "
                                         "%d known deviations", level_names[k], n, c.pass, c.fail,
                                         c.skip, c.dev));
  }
  return l;
}

/* The capability record as name/value lines, for the reports. */
static GPtrArray *
caps_lines(void)
{
  GPtrArray *l = g_ptr_array_new_with_free_func(g_free);
  if (!have_caps) {
    g_ptr_array_add(l, g_strdup("capability record: the device could not be queried"));
    return l;
  }
  g_ptr_array_add(l, g_strdup_printf("transport: %s", caps.transport == RNICPI_TRANSPORT_IWARP ? "iWARP" : "InfiniBand"));
  GString *f = g_string_new("features:");
  for (int b = 0; b < 64; b++)
    if (caps.features & (1ull << b))
      g_string_append_printf(f, " %s", rnicpi_cap_name(1ull << b));
  g_ptr_array_add(l, g_string_free(f, FALSE));
  /* Both levels connect to the first address (doc/certification.md). */
  GString *a = g_string_new("addresses (the catalog connects to the first):");
  for (uint32_t i = 0; i < caps.num_addrs && i < G_N_ELEMENTS(caps.addrs); i++) {
    char text[INET6_ADDRSTRLEN] = "?";
    const struct sockaddr_storage *ss = &caps.addrs[i];
    if (ss->ss_family == AF_INET)
      inet_ntop(AF_INET, &((const struct sockaddr_in *) ss)->sin_addr, text, sizeof(text));
    else if (ss->ss_family == AF_INET6)
      inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) ss)->sin6_addr, text, sizeof(text));
    g_string_append_printf(a, " %s", text);
  }
  if (caps.num_addrs == 0)
    g_string_append(a, " none listed; 127.0.0.1");
  g_ptr_array_add(l, g_string_free(a, FALSE));
#define LIM(x) g_ptr_array_add(l, g_strdup_printf(#x ": %" G_GUINT64_FORMAT, (guint64) caps.x))
  LIM(pdata_connect); LIM(pdata_accept); LIM(pdata_reject); LIM(pdata_disconnect);
  LIM(max_ird); LIM(max_ord); LIM(max_qp); LIM(max_qp_wr); LIM(max_cqe); LIM(max_mr);
  LIM(max_send_sge); LIM(max_recv_sge); LIM(max_rdma_write_sge); LIM(max_rdma_read_sge);
  LIM(max_inline); LIM(max_msg_size); LIM(max_mr_size); LIM(num_ports);
#undef LIM
  return l;
}

static void
report_json(GPtrArray *cat, counts_t c)
{
  GString *o = g_string_new("{\n  \"provider\": {\"name\": ");
  json_str(o, prov->name);
  g_string_append(o, ", \"origin\": ");
  json_str(o, prov->origin);
  g_string_append(o, ", \"version\": ");
  json_str(o, prov->prov->version);
  g_string_append(o, ", \"description\": ");
  json_str(o, prov->prov->description);
  g_string_append(o, ", \"device\": ");
  json_str(o, device);
  g_string_append(o, ", \"capabilities\": [");
  g_autoptr(GPtrArray) cl = caps_lines();
  for (guint i = 0; i < cl->len; i++) {
    g_string_append(o, i ? ", " : "");
    json_str(o, g_ptr_array_index(cl, i));
  }
  g_string_append_printf(o, "]},\n  \"strict\": %s,\n  \"summary\": {\"total\": %u, \"pass\": %d, "
                         "\"fail\": %d, \"skipped\": %d, \"deviation\": %d, \"negative\": %u},\n  \"levels\": [",
                         opt_strict ? "true" : "false", cat->len, c.pass, c.fail, c.skip, c.dev, negatives(cat));
  g_autoptr(GPtrArray) ll = level_lines(cat);
  for (guint i = 0; i < ll->len; i++) {
    g_string_append(o, i ? ", " : "");
    json_str(o, g_ptr_array_index(ll, i));
  }
  g_string_append(o, "],\n  \"tests\": [");
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    g_string_append(o, i ? ",\n    {\"id\": " : "\n    {\"id\": ");
    json_str(o, t->id);
    g_string_append(o, ", \"level\": ");
    json_str(o, t->level);
    g_string_append(o, ", \"area\": ");
    json_str(o, t->area);
    g_string_append(o, ", \"summary\": ");
    json_str(o, t->summary);
    g_string_append(o, ", \"needs\": [");
    if (t->needs != NULL && *t->needs) {
      g_auto(GStrv) needs = g_strsplit(t->needs, ", ", -1);
      for (char **n = needs; *n; n++) {
        g_string_append(o, n == needs ? "" : ", ");
        json_str(o, *n);
      }
    }
    g_string_append(o, "]");
    g_string_append(o, ", \"rule\": {\"where\": ");
    json_str(o, t->rule_where != NULL ? t->rule_where : t->area);
    g_string_append(o, ", \"text\": ");
    if (t->rule != NULL)
      json_str(o, t->rule);
    else
      g_string_append(o, "null");
    g_string_append(o, "}");
    g_string_append_printf(o, ", \"negative\": %s, \"result\": \"%s\", \"ms\": %.1f, \"message\": ",
                           t->negative ? "true" : "false", result_name[t->result], t->ms);
    json_str(o, t->message);
    g_string_append(o, "}");
  }
  g_string_append(o, "\n  ]\n}\n");
  write_file(opt_json, o);
  g_string_free(o, TRUE);
}

static void
report_junit(GPtrArray *cat)
{
  GString *o = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  counts_t all = count(cat, NULL);
  g_string_append_printf(o, "<testsuites name=\"itapi-certify %s\" tests=\"%u\" failures=\"%d\" skipped=\"%d\">\n",
                         prov->name, cat->len, all.fail + (opt_strict ? all.dev : 0), all.skip);
  g_autoptr(GPtrArray) al = area_list(cat);
  for (guint a = 0; a < al->len; a++) {
    const char *area = g_ptr_array_index(al, a);
    counts_t c = count(cat, area);
    g_string_append(o, "  <testsuite name=\"");
    xml_escape(o, area);
    g_string_append_printf(o, "\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n",
                           c.pass + c.fail + c.skip + c.dev, c.fail, c.skip + c.dev);
    for (guint i = 0; i < cat->len; i++) {
      test_t *t = g_ptr_array_index(cat, i);
      if (strcmp(t->area, area) != 0)
        continue;
      g_string_append(o, "    <testcase classname=\"");
      xml_escape(o, t->level);
      g_string_append(o, "\" name=\"");
      xml_escape(o, t->id);
      g_string_append_printf(o, "\" time=\"%.3f\">", t->ms / 1000.0);
      if (t->result == R_FAIL) {
        g_autofree char *rl = rule_line(t);
        g_string_append(o, "<failure message=\"");
        xml_escape(o, t->message);
        g_string_append(o, "\">rule broken: ");
        xml_escape(o, rl);
        g_string_append(o, "</failure>");
      } else if (t->result == R_SKIP || t->result == R_DEVIATION) {
        g_string_append(o, "<skipped message=\"");
        if (t->result == R_DEVIATION)
          g_string_append(o, "known deviation: ");
        xml_escape(o, t->message);
        g_string_append(o, "\"/>");
      }
      g_string_append(o, "</testcase>\n");
    }
    g_string_append(o, "  </testsuite>\n");
  }
  g_string_append(o, "</testsuites>\n");
  write_file(opt_junit, o);
  g_string_free(o, TRUE);
}

static void
md_cell(GString *o, const char *s)
{
  for (s = s ? s : ""; *s; s++) {
    if (*s == '|')
      g_string_append(o, "\\|");
    else if (*s == '\n')
      g_string_append_c(o, ' ');
    else
      g_string_append_c(o, *s);
  }
}

static void
report_markdown(GPtrArray *cat, counts_t c)
{
  GString *o = g_string_new(NULL);
  g_string_append_printf(o, "# RNIC-PI certification report: %s\n\n", prov->name);
  g_string_append_printf(o, "| | |\n|---|---|\n| provider | %s %s (%s) |\n| origin | %s |\n"
                         "| device | %s |\n| strict | %s |\n| result | **%s** |\n\n",
                         prov->name, prov->prov->version, prov->prov->description, prov->origin,
                         device, opt_strict ? "yes" : "no", c.fail ? "FAILED" : "PASSED");
  g_string_append_printf(o, "%u tests: %d passed, %d failed, %d skipped, %d known deviations; "
                         "%u check error paths.\n\n", cat->len, c.pass, c.fail, c.skip, c.dev, negatives(cat));
  g_autoptr(GPtrArray) ll = level_lines(cat);
  for (guint i = 0; i < ll->len; i++)
    g_string_append_printf(o, "- %s\n", (char *) g_ptr_array_index(ll, i));
  g_string_append(o, "\n## Capability record\n\n");
  g_autoptr(GPtrArray) cl = caps_lines();
  for (guint i = 0; i < cl->len; i++)
    g_string_append_printf(o, "- %s\n", (char *) g_ptr_array_index(cl, i));
  g_autoptr(GPtrArray) al = area_list(cat);
  for (guint a = 0; a < al->len; a++) {
    const char *area = g_ptr_array_index(al, a);
    counts_t ac = count(cat, area);
    g_string_append_printf(o, "\n## %s\n\n%d passed, %d failed, %d skipped, %d deviations\n\n"
                           "| test | result | checks | needs | note |\n|---|---|---|---|---|\n",
                           area, ac.pass, ac.fail, ac.skip, ac.dev);
    for (guint i = 0; i < cat->len; i++) {
      test_t *t = g_ptr_array_index(cat, i);
      if (strcmp(t->area, area) != 0)
        continue;
      g_string_append_printf(o, "| `%s` | %s | ", t->id, result_name[t->result]);
      md_cell(o, t->summary);
      g_string_append(o, " | ");
      md_cell(o, t->needs);
      g_string_append(o, " | ");
      md_cell(o, t->result == R_FAIL ? "see Failures" : t->message);
      g_string_append(o, " |\n");
    }
  }
  if (c.fail > 0) {
    g_string_append(o, "\n## Failures\n\n");
    for (guint i = 0; i < cat->len; i++) {
      test_t *t = g_ptr_array_index(cat, i);
      if (t->result == R_FAIL) {
        g_string_append_printf(o, "### `%s`\n\n**Rule broken** (%s): ", t->id,
                               t->rule_where != NULL ? t->rule_where : t->area);
        md_cell(o, t->rule != NULL ? t->rule : "no rule listed for this test");
        g_string_append_printf(o, "\n\nThe test checks: %s\n\n```\n%s\n```\n\n", t->summary, t->message);
      }
    }
  }
  write_file(opt_markdown, o);
  g_string_free(o, TRUE);
}

static void
report_html(GPtrArray *cat, counts_t c)
{
  GString *o = g_string_new("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
  g_string_append_printf(o, "RNIC-PI certification: %s</title>\n<style>"
                         "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
                         "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
                         ".pass{background:#dfd}.fail{background:#fcc}.skipped{background:#eee}"
                         ".deviation{background:#ffd}pre{white-space:pre-wrap}</style></head><body>\n",
                         prov->name);
  g_string_append(o, "<h1>RNIC-PI certification report: ");
  xml_escape(o, prov->name);
  g_string_append_printf(o, " &mdash; <span class=\"%s\">%s</span></h1>\n<p>",
                         c.fail ? "fail" : "pass", c.fail ? "FAILED" : "PASSED");
  xml_escape(o, prov->prov->description);
  g_string_append(o, ", version ");
  xml_escape(o, prov->prov->version);
  g_string_append(o, ", from ");
  xml_escape(o, prov->origin);
  g_string_append(o, ", device ");
  xml_escape(o, device);
  g_string_append_printf(o, "</p>\n<p>%u tests: %d passed, %d failed, %d skipped, %d known deviations%s.</p>\n",
                         cat->len, c.pass, c.fail, c.skip, c.dev, opt_strict ? " (strict)" : "");
  g_autoptr(GPtrArray) ll = level_lines(cat);
  g_string_append(o, "<ul>\n");
  for (guint i = 0; i < ll->len; i++) {
    g_string_append(o, "<li>");
    xml_escape(o, g_ptr_array_index(ll, i));
    g_string_append(o, "</li>\n");
  }
  g_string_append(o, "</ul>\n<h2>Capability record</h2>\n<ul>\n");
  g_autoptr(GPtrArray) cl = caps_lines();
  for (guint i = 0; i < cl->len; i++) {
    g_string_append(o, "<li>");
    xml_escape(o, g_ptr_array_index(cl, i));
    g_string_append(o, "</li>\n");
  }
  g_string_append(o, "</ul>\n");
  g_autoptr(GPtrArray) al = area_list(cat);
  for (guint a = 0; a < al->len; a++) {
    const char *area = g_ptr_array_index(al, a);
    g_string_append(o, "<h2>");
    xml_escape(o, area);
    g_string_append(o, "</h2>\n<table><tr><th>test</th><th>result</th><th>checks</th><th>needs</th><th>note</th></tr>\n");
    for (guint i = 0; i < cat->len; i++) {
      test_t *t = g_ptr_array_index(cat, i);
      if (strcmp(t->area, area) != 0)
        continue;
      g_string_append(o, "<tr><td><code>");
      xml_escape(o, t->id);
      g_string_append_printf(o, "</code></td><td class=\"%s\">%s</td><td>", result_name[t->result],
                             result_name[t->result]);
      xml_escape(o, t->summary);
      g_string_append(o, "</td><td>");
      xml_escape(o, t->needs);
      g_string_append(o, "</td><td>");
      if (t->result == R_FAIL) {
        g_autofree char *rl = rule_line(t);
        g_string_append(o, "<p><b>Rule broken</b>: ");
        xml_escape(o, rl);
        g_string_append(o, "</p>");
      }
      g_string_append(o, "<pre>");
      xml_escape(o, t->message);
      g_string_append(o, "</pre></td></tr>\n");
    }
    g_string_append(o, "</table>\n");
  }
  g_string_append(o, "</body></html>\n");
  write_file(opt_html, o);
  g_string_free(o, TRUE);
}

int
main(int argc, char **argv)
{
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
    { "timeout", 0, 0, G_OPTION_ARG_INT, &opt_timeout, "seconds each test may take (default 60)", "SEC" },
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
  if ((opt_provider == NULL) == (opt_module == NULL)) {
    fprintf(stderr, "itapi-certify: give exactly one of --provider NAME or --provider-module PATH\n");
    return 2;
  }
  if (strcmp(opt_level, "all") != 0 && strcmp(opt_level, "rnicpi") != 0 &&
      strcmp(opt_level, "itapi") != 0 && strcmp(opt_level, "interop") != 0) {
    fprintf(stderr, "itapi-certify: --level must be rnicpi, itapi, interop or all, not '%s'\n", opt_level);
    return 2;
  }
  if (!select_provider())
    return 2;

  g_autofree char *dir = tests_dir();
  GPtrArray *cat = build_catalog(dir);
  GHashTable *dev = load_deviations();
  GHashTable *rules = load_rules();
  attach_rules(cat, rules);
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
    printf("1..%u\n", cat->len);
  fprintf(console, "certifying provider '%s' (%s), device %s: %u tests\n", prov->name, prov->origin,
          device, cat->len);
  char **env = test_env();
  for (guint i = 0; i < cat->len; i++) {
    test_t *t = g_ptr_array_index(cat, i);
    const char *reason = g_hash_table_lookup(dev, t->id);
    if (reason != NULL && opt_skip_deviations && !opt_strict && t->result == R_PASS &&
        t->message == NULL) {
      /* Listed, so any failure of it would be reported as this deviation:
       * running it can only show that it now passes. */
      t->result = R_DEVIATION;
      t->message = g_strdup_printf("%s (not run: --skip-deviations)", reason);
    } else if (t->result == R_PASS && t->message == NULL) {
      char *targv[] = { t->program, "-p", t->id, "--tap", NULL };
      char *out = NULL;
      int st = run_captured(t->argv != NULL ? t->argv : targv, env, opt_timeout, &out, &t->ms);
      if (t->argv != NULL)
        judge_tool(t, st, out);
      else
        judge(t, st, out);
      g_free(out);
    }
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
        g_autofree char *rl = rule_line(t);
        printf("not ok %u %s\n# %s\n# rule broken: %s\n", i + 1, t->id, t->message, rl);
      }
      else if (t->result == R_SKIP)
        printf("ok %u %s # SKIP %s\n", i + 1, t->id, t->message);
      else if (t->result == R_DEVIATION)
        printf("not ok %u %s # TODO known deviation: %s\n", i + 1, t->id, t->message);
      else
        printf("ok %u %s\n", i + 1, t->id);
      fflush(stdout);
    }
    if (!opt_quiet || t->result == R_FAIL)
      fprintf(console, "%-9s %s (%.0f ms)%s%s\n", t->result == R_PASS ? "PASS" : t->result == R_FAIL ? "FAIL" :
              t->result == R_SKIP ? "SKIP" : "DEVIATION", t->id, t->ms,
              t->message ? ": " : "", t->message ? t->message : "");
    if (t->result == R_FAIL) {
      g_autofree char *rl = rule_line(t);
      fprintf(console, "          rule broken: %s\n", rl);
    }
  }
  g_strfreev(env);

  counts_t c = count(cat, NULL);
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
  g_autoptr(GPtrArray) ll = level_lines(cat);
  for (guint i = 0; i < ll->len; i++)
    fprintf(console, "%s%s\n", i ? "" : "\n", (char *) g_ptr_array_index(ll, i));
  fprintf(console, "\n%s: %d passed, %d failed, %d skipped, %d known deviations (of %u tests; "
          "%u of them, %.0f%%, check error paths)\n", c.fail ? "NOT CERTIFIED" : "CERTIFIED",
          c.pass, c.fail, c.skip, c.dev, cat->len, negatives(cat),
          cat->len ? 100.0 * negatives(cat) / cat->len : 0.0);
  g_hash_table_unref(dev);
  g_hash_table_unref(rules);
  g_ptr_array_unref(cat);
  return c.fail ? 1 : 0;
}
