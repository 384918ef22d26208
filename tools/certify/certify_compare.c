/*
 * itapi-certify --compare OLD.json NEW.json: what changed between two
 * certification reports (--json), so that a vendor sees a regression
 * between two driver versions at a glance.  Printed in this order: what
 * each report certified, what they certified with that differs (catalog,
 * module, deviation files, kernel, rdma-core, configuration,
 * environment), then the tests that newly fail, those fixed, the known
 * deviations that changed, other changes of verdict, and the tests added
 * and removed.
 *
 * The reports are read with a small JSON reader of its own: the format is
 * the one report_json() writes, and the stack depends on GLib alone.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certify.h"

/* A JSON value. */
typedef struct jv {
  enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } type;
  gboolean b;
  double num;
  char *str;
  GPtrArray *items; /* J_ARR: jv_t*; J_OBJ: the values, keys[] beside them */
  GPtrArray *keys;  /* J_OBJ: char* */
} jv_t;

static void
jv_free(gpointer p)
{
  jv_t *v = p;
  if (v == NULL)
    return;
  g_free(v->str);
  if (v->items != NULL)
    g_ptr_array_unref(v->items);
  if (v->keys != NULL)
    g_ptr_array_unref(v->keys);
  g_free(v);
}

typedef struct {
  const char *p, *start;
  char *err; /* the first error, with its offset */
} jparse_t;

static void
jfail(jparse_t *j, const char *what)
{
  if (j->err == NULL)
    j->err = g_strdup_printf("%s at byte %td", what, j->p - j->start);
}

static void
jspace(jparse_t *j)
{
  while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')
    j->p++;
}

static char *
jstring(jparse_t *j)
{
  if (*j->p != '"') {
    jfail(j, "a string was expected");
    return NULL;
  }
  j->p++;
  GString *s = g_string_new(NULL);
  while (*j->p != '"') {
    if (*j->p == '\0') {
      jfail(j, "a string does not end");
      return g_string_free(s, TRUE);
    }
    if (*j->p != '\\') {
      g_string_append_c(s, *j->p++);
      continue;
    }
    j->p++;
    char c = *j->p++;
    switch (c) {
    case 'n': g_string_append_c(s, '\n'); break;
    case 't': g_string_append_c(s, '\t'); break;
    case 'r': g_string_append_c(s, '\r'); break;
    case 'b': g_string_append_c(s, '\b'); break;
    case 'f': g_string_append_c(s, '\f'); break;
    case 'u': {
      char hex[5] = { 0 };
      for (int i = 0; i < 4; i++) {
        if (!g_ascii_isxdigit(*j->p)) {
          jfail(j, "a \\u escape needs four hex digits");
          return g_string_free(s, TRUE);
        }
        hex[i] = *j->p++;
      }
      g_string_append_unichar(s, (gunichar) strtoul(hex, NULL, 16));
      break;
    }
    case '"': case '\\': case '/': g_string_append_c(s, c); break;
    default:
      jfail(j, "an unknown escape");
      return g_string_free(s, TRUE);
    }
  }
  j->p++;
  return g_string_free(s, FALSE);
}

static jv_t *jvalue(jparse_t *j, int depth);

static jv_t *
jlist(jparse_t *j, int depth, gboolean object)
{
  jv_t *v = g_new0(jv_t, 1);
  v->type = object ? J_OBJ : J_ARR;
  v->items = g_ptr_array_new_with_free_func(jv_free);
  if (object)
    v->keys = g_ptr_array_new_with_free_func(g_free);
  char end = object ? '}' : ']';
  j->p++;
  jspace(j);
  if (*j->p == end) {
    j->p++;
    return v;
  }
  for (;;) {
    jspace(j);
    if (object) {
      char *k = jstring(j);
      if (k == NULL)
        break;
      g_ptr_array_add(v->keys, k);
      jspace(j);
      if (*j->p++ != ':') {
        jfail(j, "':' was expected after a key");
        break;
      }
    }
    jv_t *item = jvalue(j, depth + 1);
    if (item == NULL)
      break;
    g_ptr_array_add(v->items, item);
    jspace(j);
    if (*j->p == ',') {
      j->p++;
      continue;
    }
    if (*j->p == end) {
      j->p++;
      return v;
    }
    jfail(j, object ? "',' or '}' was expected" : "',' or ']' was expected");
    break;
  }
  jv_free(v);
  return NULL;
}

static jv_t *
jvalue(jparse_t *j, int depth)
{
  jspace(j);
  if (depth > 32) {
    jfail(j, "nested too deep");
    return NULL;
  }
  if (*j->p == '{' || *j->p == '[')
    return jlist(j, depth, *j->p == '{');
  jv_t *v = g_new0(jv_t, 1);
  if (*j->p == '"') {
    v->type = J_STR;
    v->str = jstring(j);
    if (v->str == NULL || j->err != NULL)
      g_clear_pointer(&v, jv_free);
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
    v->type = J_BOOL;
    v->b = *j->p == 't';
    j->p += v->b ? 4 : 5;
  } else if (strncmp(j->p, "null", 4) == 0) {
    v->type = J_NULL;
    j->p += 4;
  } else {
    char *end;
    v->type = J_NUM;
    v->num = g_ascii_strtod(j->p, &end);
    if (end == j->p) {
      jfail(j, "a value was expected");
      g_clear_pointer(&v, jv_free);
    } else {
      j->p = end;
    }
  }
  return v;
}

/* The member @key of object @o, or NULL. */
static const jv_t *
jget(const jv_t *o, const char *key)
{
  if (o == NULL || o->type != J_OBJ)
    return NULL;
  for (guint i = 0; i < o->keys->len; i++)
    if (strcmp(g_ptr_array_index(o->keys, i), key) == 0)
      return g_ptr_array_index(o->items, i);
  return NULL;
}

/* The string member @key of @o, or @dflt. */
static const char *
jstr(const jv_t *o, const char *key, const char *dflt)
{
  const jv_t *v = jget(o, key);
  return v != NULL && v->type == J_STR ? v->str : dflt;
}

/* One report: its document and its tests by id. */
typedef struct {
  const char *path;
  jv_t *doc;
  GHashTable *by_id; /* id -> const jv_t* (not owned) */
  GPtrArray *order;  /* ids in report order (not owned) */
} report_t;

static gboolean
report_read(report_t *r, const char *path)
{
  memset(r, 0, sizeof(*r));
  r->path = path;
  g_autofree char *text = NULL;
  GError *err = NULL;
  if (!g_file_get_contents(path, &text, NULL, &err)) {
    fprintf(stderr, "itapi-certify: cannot read the report %s: %s\n", path, err->message);
    g_error_free(err);
    return FALSE;
  }
  jparse_t j = { .p = text, .start = text };
  r->doc = jvalue(&j, 0);
  jspace(&j);
  if (r->doc != NULL && j.err == NULL && *j.p != '\0')
    jfail(&j, "text follows the report");
  const jv_t *tests = jget(r->doc, "tests");
  if (j.err == NULL && (r->doc == NULL || r->doc->type != J_OBJ || tests == NULL ||
                        tests->type != J_ARR))
    jfail(&j, "no \"tests\" list: not a report of itapi-certify --json");
  if (j.err != NULL) {
    fprintf(stderr, "itapi-certify: %s is not a JSON report of itapi-certify: %s\n", path, j.err);
    g_free(j.err);
    jv_free(r->doc);
    r->doc = NULL;
    return FALSE;
  }
  r->by_id = g_hash_table_new(g_str_hash, g_str_equal);
  r->order = g_ptr_array_new();
  for (guint i = 0; i < tests->items->len; i++) {
    const jv_t *t = g_ptr_array_index(tests->items, i);
    const char *id = jstr(t, "id", NULL);
    if (id == NULL || g_hash_table_contains(r->by_id, id))
      continue;
    g_hash_table_insert(r->by_id, (gpointer) id, (gpointer) t);
    g_ptr_array_add(r->order, (gpointer) id);
  }
  return TRUE;
}

static void
report_free(report_t *r)
{
  if (r->by_id != NULL)
    g_hash_table_unref(r->by_id);
  if (r->order != NULL)
    g_ptr_array_unref(r->order);
  jv_free(r->doc);
}

/* "provider emul 0.1.0, device emul0: 12 tests, 10 pass, ..." */
static void
print_head(const char *which, const report_t *r)
{
  const jv_t *p = jget(r->doc, "provider"), *s = jget(r->doc, "summary");
  const jv_t *n[5] = { jget(s, "total"), jget(s, "pass"), jget(s, "fail"), jget(s, "skipped"),
                       jget(s, "deviation") };
  double c[5];
  for (int i = 0; i < 5; i++)
    c[i] = n[i] != NULL && n[i]->type == J_NUM ? n[i]->num : 0;
  printf("%s: %s\n  provider %s %s, device %s, catalog %s: %.0f tests, %.0f passed, %.0f failed, "
         "%.0f skipped, %.0f known deviations\n", which, r->path, jstr(p, "name", "?"),
         jstr(p, "version", "?"), jstr(p, "device", "?"), jstr(r->doc, "catalog", "?"), c[0], c[1],
         c[2], c[3], c[4]);
}

/* The members of "certified_with" that differ (or that one report has). */
static guint
print_provenance(const report_t *o, const report_t *n)
{
  const jv_t *a = jget(o->doc, "certified_with"), *b = jget(n->doc, "certified_with");
  guint changed = 0;
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  const jv_t *both[2] = { a, b };
  for (int k = 0; k < 2; k++)
    for (guint i = 0; both[k] != NULL && both[k]->type == J_OBJ && i < both[k]->keys->len; i++) {
      const char *name = g_ptr_array_index(both[k]->keys, i);
      if (!g_ptr_array_find_with_equal_func(names, name, g_str_equal, NULL))
        g_ptr_array_add(names, (gpointer) name);
    }
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    if (strcmp(name, "command") == 0)
      continue;  /* differs at least by its --json file: not a change of what was certified */
    const char *va = jstr(a, name, "(not recorded)"), *vb = jstr(b, name, "(not recorded)");
    if (strcmp(va, vb) == 0)
      continue;
    if (changed++ == 0)
      printf("\ncertified with, changed:\n");
    printf("  %s:\n    old %s\n    new %s\n", name, va, vb);
  }
  if (a == NULL || b == NULL)
    printf("\n(%s records nothing of what it certified with: written before itapi-certify kept "
           "it)\n", a == NULL ? "the old report" : "the new report");
  return changed;
}

/* A test's result and, where it has one, its message. */
static char *
verdict_text(const jv_t *t)
{
  const char *res = jstr(t, "result", "?"), *msg = jstr(t, "message", "");
  return *msg ? g_strdup_printf("%s (%s)", res, msg) : g_strdup(res);
}

typedef enum { C_NEW_FAIL, C_FIXED, C_DEVIATION, C_OTHER, C_ADDED, C_REMOVED, C_KINDS } change_t;

static const char *const change_title[] = {
  [C_NEW_FAIL] = "new failures", [C_FIXED] = "fixed (failed before, pass now)",
  [C_DEVIATION] = "known deviations changed", [C_OTHER] = "other changes of verdict",
  [C_ADDED] = "tests added", [C_REMOVED] = "tests removed",
};

int
compare_reports(const char *old_path, const char *new_path)
{
  report_t o, n;
  if (!report_read(&o, old_path))
    return 2;
  if (!report_read(&n, new_path)) {
    report_free(&o);
    return 2;
  }
  print_head("old", &o);
  print_head("new", &n);
  guint prov_changed = print_provenance(&o, &n);

  GPtrArray *lines[C_KINDS];
  for (int k = 0; k < C_KINDS; k++)
    lines[k] = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n.order->len; i++) {
    const char *id = g_ptr_array_index(n.order, i);
    const jv_t *tn = g_hash_table_lookup(n.by_id, id), *to = g_hash_table_lookup(o.by_id, id);
    const char *rn = jstr(tn, "result", "?");
    g_autofree char *vn = verdict_text(tn);
    if (to == NULL) {
      g_ptr_array_add(lines[C_ADDED], g_strdup_printf("%s: %s", id, vn));
      if (strcmp(rn, "fail") == 0)
        g_ptr_array_add(lines[C_NEW_FAIL], g_strdup_printf("%s (a new test): %s", id, vn));
      continue;
    }
    const char *ro = jstr(to, "result", "?");
    g_autofree char *vo = verdict_text(to);
    gboolean dev_o = strcmp(ro, "deviation") == 0, dev_n = strcmp(rn, "deviation") == 0;
    if (strcmp(rn, "fail") == 0 && strcmp(ro, "fail") != 0)
      g_ptr_array_add(lines[C_NEW_FAIL], g_strdup_printf("%s: was %s, now %s", id, vo, vn));
    else if (strcmp(ro, "fail") == 0 && strcmp(rn, "pass") == 0)
      g_ptr_array_add(lines[C_FIXED], g_strdup_printf("%s: was %s", id, vo));
    else if ((dev_o || dev_n) && strcmp(vo, vn) != 0)
      g_ptr_array_add(lines[C_DEVIATION], g_strdup_printf("%s: was %s, now %s", id, vo, vn));
    else if (strcmp(ro, rn) != 0)
      g_ptr_array_add(lines[C_OTHER], g_strdup_printf("%s: was %s, now %s", id, vo, vn));
  }
  for (guint i = 0; i < o.order->len; i++) {
    const char *id = g_ptr_array_index(o.order, i);
    if (!g_hash_table_contains(n.by_id, id)) {
      g_autofree char *vo = verdict_text(g_hash_table_lookup(o.by_id, id));
      g_ptr_array_add(lines[C_REMOVED], g_strdup_printf("%s: was %s", id, vo));
    }
  }
  for (int k = 0; k < C_KINDS; k++) {
    if (lines[k]->len == 0)
      continue;
    printf("\n%s (%u):\n", change_title[k], lines[k]->len);
    for (guint i = 0; i < lines[k]->len; i++)
      printf("  %s\n", (char *) g_ptr_array_index(lines[k], i));
  }
  guint new_fail = lines[C_NEW_FAIL]->len;
  printf("\n%u new failures, %u fixed, %u deviations changed, %u other changes, %u tests added, "
         "%u removed; %u of what they certified with changed\n", new_fail, lines[C_FIXED]->len,
         lines[C_DEVIATION]->len, lines[C_OTHER]->len, lines[C_ADDED]->len, lines[C_REMOVED]->len,
         prov_changed);
  for (int k = 0; k < C_KINDS; k++)
    g_ptr_array_unref(lines[k]);
  report_free(&o);
  report_free(&n);
  return new_fail > 0 ? 1 : 0;
}
