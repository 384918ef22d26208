/*
 * itapi-certify, the catalog: the test programs of the suite and the tests
 * each lists, the tool tests, the spec area and level of each test, and
 * the deviation files and rules that go with them.
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


#include "certify.h"

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

/* Whether this is the itapi-certify of a build tree (meson test, a hand run
 * of build/tools/certify/itapi-certify): Meson gives the real path of its
 * build directory, as /proc/self/exe does.  Only that binary takes its test
 * programs from the build tree and its deviation files and rules from the
 * source tree; any other copy, installed or staged under a DESTDIR, takes
 * them from the install prefix alone and never looks into either tree. */
gboolean
catalog_in_build_tree(void)
{
  static gsize in_tree; /* 0: not known yet, 1: no, 2: yes */
  if (g_once_init_enter(&in_tree)) {
    g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
    g_once_init_leave(&in_tree, self != NULL && strcmp(self, CERT_BUILD_EXE) == 0 ? 2 : 1);
  }
  return in_tree == 2;
}

char *
catalog_tests_dir(void)
{
  if (opt_tests_dir != NULL)
    return g_strdup(opt_tests_dir);
  const char *env = g_getenv("ITAPI_CERT_DIR");
  if (env != NULL)
    return g_strdup(env);
  return g_strdup(catalog_in_build_tree() ? CERT_BUILD_DIR : CERT_INSTALL_DIR);
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
  provenance_deviation_file(path);
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
 * own, the device's (<device>.txt), from the source tree for the build
 * tree's itapi-certify, the installed data directory for any other; or the
 * one --deviations names. */
GHashTable *
catalog_load_deviations(void)
{
  GHashTable *dev = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (opt_deviations != NULL) {
    read_deviations(dev, opt_deviations);
    return dev;
  }
  const char *dir = catalog_in_build_tree() ? CERT_DEVIATIONS_SRC : CERT_DEVIATIONS_INSTALL;
  const char *stems[] = { prov->name, device };
  for (size_t k = 0; k < G_N_ELEMENTS(stems); k++) {
    g_autofree char *name = g_strdup_printf("%s.txt", stems[k]);
    g_autofree char *p = g_build_filename(dir, name, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR))
      read_deviations(dev, p);
  }
  return dev;
}

/* The rules file: the one --rules names, else the source tree's
 * conformance/rules.txt for the build tree's itapi-certify, the installed
 * data directory's for any other. */
const char *
catalog_rules_file(void)
{
  if (opt_rules != NULL)
    return opt_rules;
  return catalog_in_build_tree() ? CERT_RULES_SRC : CERT_RULES_INSTALL;
}

/* The rule each test checks: "<id> TAB <where> TAB <rule>" per line, '#'
 * starting a comment.  The table maps an id to "<where>\t<rule>"; it is
 * empty when the default file is missing, and a --rules file that cannot
 * be read is an error. */
GHashTable *
catalog_load_rules(void)
{
  GHashTable *rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  const char *path = catalog_rules_file();
  g_autofree char *text = NULL;
  GError *err = NULL;
  if (!g_file_get_contents(path, &text, NULL, &err)) {
    if (opt_rules != NULL) {
      fprintf(stderr, "itapi-certify: cannot read the rules file %s: %s\n", path, err->message);
      exit(2);
    }
    g_error_free(err);
    return rules;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l != NULL; l++) {
    if (**l == '#' || **l == '\0')
      continue;
    g_auto(GStrv) f = g_strsplit(*l, "\t", 3);
    if (g_strv_length(f) != 3 || *f[1] == '\0' || *f[2] == '\0') {
      fprintf(stderr, "itapi-certify: %s: '%s' is not '<test id> TAB <where> TAB <rule>'\n",
              path, *l);
      exit(2);
    }
    g_hash_table_replace(rules, g_strdup(f[0]), g_strdup_printf("%s\t%s", f[1], f[2]));
  }
  return rules;
}

/* Give each test its rule; a test the file does not name keeps its area
 * and its summary (check_rules.py keeps the file complete). */
void
catalog_attach_rules(GPtrArray *cat, GHashTable *rules)
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
char *
catalog_rule_line(const test_t *t)
{
  if (t->rule != NULL)
    return g_strdup_printf("%s: %s", t->rule_where, t->rule);
  return g_strdup_printf("%s: %s (no rule listed for this test)", t->area,
                         t->summary != NULL && *t->summary ? t->summary : t->id);
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
  g_free(t->report);
  if (t->runs != NULL)
    g_string_free(t->runs, TRUE);
  g_free(t->fail_message);
  g_free(t->fail_report);
  g_free(t->start_message);
  g_free(t);
}

/* Whether test @id contains any of @texts (NULL: none given). */
static gboolean
id_contains_any(const char *id, char **texts)
{
  for (char **f = texts; f != NULL && *f != NULL; f++)
    if (strstr(id, *f) != NULL)
      return TRUE;
  return FALSE;
}

/* Whether --filter and --exclude let test @id run (neither given: every
 * test does). */
static gboolean
filtered_in(const char *id)
{
  if (opt_filter != NULL && !id_contains_any(id, opt_filter))
    return FALSE;
  return !id_contains_any(id, opt_exclude);
}

GPtrArray *
catalog_build(const char *dir)
{
  GPtrArray *cat = g_ptr_array_new_with_free_func(test_free);
  char **env = run_env();
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
    provenance_program(programs[p], path);
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
        t->message = g_strdup_printf("tool %s not found under %s or in %s", tool_tests[i].tool,
                                     dir, CERT_BINDIR);
      } else {
        t->program = g_strdup(tool);
        provenance_program(tool_tests[i].tool, tool);
        g_autofree char *cmd = g_strdup_printf("%s -i %s %s", tool, device, tool_tests[i].args);
        t->argv = g_strsplit(cmd, " ", -1);
      }
      g_ptr_array_add(cat, t);
    }
  }
  g_strfreev(env);
  return cat;
}

