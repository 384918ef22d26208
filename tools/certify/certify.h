/*
 * itapi-certify: what its parts share.
 *
 *   itapi_certify.c     the runner: options, the provider and its device,
 *                       the pool of tests, the verdict of each
 *   certify_run.c       one test process, killed when a wait it told of
 *                       outlasts its limit, or past the ceiling
 *   certify_catalog.c   the catalog: the test programs and their tests,
 *                       spec areas, deviation files, rules
 *   certify_report.c    the reports: counts, JSON, JUnit, Markdown, HTML
 *   certify_provenance.c
 *                       what a report certified and with what: command,
 *                       digests of the catalog, module and deviation
 *                       files, kernel, rdma-core, configuration, environment
 *   certify_compare.c   --compare: what changed between two JSON reports
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef CERTIFY_H
#define CERTIFY_H

#include <glib.h>
#include <sys/types.h>

#include <rnicpi_registry.h>

typedef enum { R_PASS, R_FAIL, R_SKIP, R_DEVIATION } result_t;

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
  char *report;      /* a failure's sanitizer report, its stacks, else the
                      * last lines the test said (g_test_message) before it
                      * failed (or NULL) */
  double ms;
  const char *rule_where; /* where the rule it checks is written (rules.txt) */
  const char *rule;       /* that rule, one sentence */
  /* --repeat: the verdict of each run ('P', 'F', 'S', 'D'), the first
   * failure's message, and what the catalog set before any run */
  GString *runs;
  char *fail_message;
  char *fail_report;
  result_t start_result;
  char *start_message;
} test_t;

/* Spec areas by path prefix; the first match wins. */

typedef struct { int pass, fail, skip, dev; } counts_t;

/* The options (itapi_certify.c). */
extern char *opt_provider, *opt_module, *opt_level, *opt_deviations;
extern char **opt_filter; /* --filter, repeated: a test runs if its id contains any */
extern char **opt_exclude; /* --exclude, repeated: ... and none of these */
extern char *opt_rules;
extern char *opt_junit, *opt_json, *opt_markdown, *opt_html, *opt_tests_dir, *opt_device;
extern gboolean opt_strict, opt_tap, opt_list, opt_quiet, opt_skip_deviations;
extern int opt_timeout;    /* --timeout: the ceiling on one test, in seconds */
extern int opt_wait_grace; /* --wait-grace: how long a wait may outlast its limit */
extern int opt_repeat; /* --repeat: runs of each test (1: no repetition) */

/* The provider under test, its device and that device's capability record. */
extern const rnicpi_entry_t *prov;
extern char device[64];
extern rnicpi_caps_t caps;
extern gboolean have_caps;

/* The runner (itapi_certify.c). */
char **run_env(void);

/* A test process running (certify_run.c: run_start .. run_finish). */
typedef struct {
  pid_t pid;          /* -1: it could not be started */
  char *tmpl;         /* the file holding its output (NULL: none) */
  gint64 t0, deadline;
  int status;         /* its wait status once it ended */
  gboolean ended;
  int sock;           /* where its processes tell their waits (-1: none) */
  GHashTable *waits;  /* "PID ID" -> the waits open now */
  GHashTable *last_ended; /* PID -> the last of its waits to end (certify_run.c) */
  char *last_what;    /* what the last wait to end waited for */
  gint64 last_end;
  char *killed;       /* why it was killed (NULL: it ended) */
} run_t;

/* Start @argv with @env, its output to a temporary file, its waits told
 * on a socket, under the ceiling @timeout_s. */
void run_start(run_t *r, char **argv, char **env, int timeout_s);
/* Whether @r has ended: killed once a wait has overrun its limit plus
 * --wait-grace, or past the ceiling; never blocks. */
gboolean run_poll(run_t *r);
/* The output and time of @r, which ended, and why it was killed (NULL: it
 * was not; the caller frees it); the wait status, or -1 when killed. */
int run_finish(run_t *r, char **output, double *ms, char **killed);
/* Sleep @ms, or less once a record comes from one of the @n @runs: a test
 * telling many waits is never held up by a full socket. */
void run_sleep(run_t *const *runs, guint n, int ms);
/* run_start, run_poll until it ends, run_finish. */
int run_captured(char **argv, char **env, int timeout_s, char **output, double *ms);

/* The catalog (certify_catalog.c). */
gboolean catalog_in_build_tree(void);
char *catalog_tests_dir(void);
GHashTable *catalog_load_deviations(void);
const char *catalog_rules_file(void);
GHashTable *catalog_load_rules(void);
void catalog_attach_rules(GPtrArray *cat, GHashTable *rules);
char *catalog_rule_line(const test_t *t);
GPtrArray *catalog_build(const char *dir);

/* Provenance (certify_provenance.c): started before the options are
 * parsed, fed as the catalog is read, and listed once the run is over. */
typedef struct {
  const char *name; /* "command", "catalog digest", "kernel", ... */
  char *value;
} provenance_item_t;
void provenance_start(int argc, char **argv);
void provenance_deviation_file(const char *path);
void provenance_program(const char *name, const char *path);
const GPtrArray *provenance_items(void);
const GPtrArray *provenance_environment(void);

/* --compare OLD NEW (certify_compare.c): prints what changed; 0 when no
 * test newly fails, 1 when one does, 2 when a report cannot be read. */
int compare_reports(const char *old_path, const char *new_path);

/* The reports (certify_report.c). */
guint report_negatives(GPtrArray *cat);
counts_t report_count(GPtrArray *cat, const char *area);
GPtrArray *report_level_lines(GPtrArray *cat);
void report_json(GPtrArray *cat, counts_t c);
void report_junit(GPtrArray *cat);
void report_markdown(GPtrArray *cat, counts_t c);
void report_html(GPtrArray *cat, counts_t c);

#endif
