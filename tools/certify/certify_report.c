/*
 * itapi-certify, the reports: counts per level and area, and the JSON,
 * JUnit, Markdown and HTML files.
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

static const char *const result_name[] = { "pass", "fail", "skipped", "deviation" };

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

guint
report_negatives(GPtrArray *cat)
{
  guint n = 0;
  for (guint i = 0; i < cat->len; i++)
    n += ((test_t *) g_ptr_array_index(cat, i))->negative ? 1 : 0;
  return n;
}

counts_t
report_count(GPtrArray *cat, const char *area)
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

GPtrArray *
report_level_lines(GPtrArray *cat)
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

/* What part of the catalog the run took: "whole", or the level and the
 * --filter and --exclude texts that narrowed it (a report of a narrowed
 * run says so). */
static char *
catalog_scope(void)
{
  GString *s = g_string_new(NULL);
  if (strcmp(opt_level, "all") != 0)
    g_string_append_printf(s, "level %s", opt_level);
  for (char **f = opt_filter; f != NULL && *f != NULL; f++)
    g_string_append_printf(s, "%s%s%s", s->len ? ", " : "", f == opt_filter ? "--filter " : "", *f);
  for (char **f = opt_exclude; f != NULL && *f != NULL; f++)
    g_string_append_printf(s, "%s%s%s", s->len ? ", " : "", f == opt_exclude ? "--exclude " : "", *f);
  if (s->len == 0)
    g_string_append(s, "whole");
  return g_string_free(s, FALSE);
}

void
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
  g_autofree char *scope = catalog_scope();
  g_string_append(o, "]},\n  \"catalog\": ");
  json_str(o, scope);
  g_string_append_printf(o, ",\n  \"repeat\": %d,\n  \"certified_with\": {", opt_repeat);
  const GPtrArray *pv = provenance_items();
  for (guint i = 0; i < pv->len; i++) {
    const provenance_item_t *it = g_ptr_array_index(pv, i);
    g_string_append(o, i ? ",\n    " : "\n    ");
    json_str(o, it->name);
    g_string_append(o, ": ");
    json_str(o, it->value);
  }
  g_string_append(o, "},\n  \"environment\": {");
  const GPtrArray *env = provenance_environment();
  for (guint i = 0; i < env->len; i++) {
    const char *e = g_ptr_array_index(env, i);
    g_autofree char *name = g_strndup(e, strcspn(e, "="));
    g_string_append(o, i ? ", " : "");
    json_str(o, name);
    g_string_append(o, ": ");
    json_str(o, e + strlen(name) + (e[strlen(name)] == '=' ? 1 : 0));
  }
  g_string_append(o, "}");
  g_string_append_printf(o, ",\n  \"strict\": %s,\n  \"summary\": {\"total\": %u, \"pass\": %d, "
                         "\"fail\": %d, \"skipped\": %d, \"deviation\": %d, \"negative\": %u},\n  \"levels\": [",
                         opt_strict ? "true" : "false", cat->len, c.pass, c.fail, c.skip, c.dev, report_negatives(cat));
  g_autoptr(GPtrArray) ll = report_level_lines(cat);
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
    g_string_append(o, ", \"runs\": ");
    json_str(o, t->runs != NULL ? t->runs->str : "");
    if (t->report != NULL) {
      g_string_append(o, ", \"said\": ");
      json_str(o, t->report);
    }
    g_string_append(o, "}");
  }
  g_string_append(o, "\n  ]\n}\n");
  write_file(opt_json, o);
  g_string_free(o, TRUE);
}

void
report_junit(GPtrArray *cat)
{
  GString *o = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  counts_t all = report_count(cat, NULL);
  g_string_append_printf(o, "<testsuites name=\"itapi-certify %s\" tests=\"%u\" failures=\"%d\" skipped=\"%d\">\n",
                         prov->name, cat->len, all.fail + (opt_strict ? all.dev : 0), all.skip);
  g_autoptr(GPtrArray) al = area_list(cat);
  for (guint a = 0; a < al->len; a++) {
    const char *area = g_ptr_array_index(al, a);
    counts_t c = report_count(cat, area);
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
        g_autofree char *rl = catalog_rule_line(t);
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

void
report_markdown(GPtrArray *cat, counts_t c)
{
  GString *o = g_string_new(NULL);
  g_autofree char *scope = catalog_scope();
  g_string_append_printf(o, "# RNIC-PI certification report: %s\n\n", prov->name);
  g_string_append_printf(o, "| | |\n|---|---|\n| provider | %s %s (%s) |\n| origin | %s |\n"
                         "| device | %s |\n| catalog | %s |\n| strict | %s |\n| result | **%s** |\n\n",
                         prov->name, prov->prov->version, prov->prov->description, prov->origin,
                         device, scope, opt_strict ? "yes" : "no", c.fail ? "FAILED" : "PASSED");
  g_string_append_printf(o, "%u tests: %d passed, %d failed, %d skipped, %d known deviations; "
                         "%u check error paths.\n\n", cat->len, c.pass, c.fail, c.skip, c.dev, report_negatives(cat));
  g_autoptr(GPtrArray) ll = report_level_lines(cat);
  for (guint i = 0; i < ll->len; i++)
    g_string_append_printf(o, "- %s\n", (char *) g_ptr_array_index(ll, i));
  g_string_append(o, "\n## Certified with\n\n| | |\n|---|---|\n");
  const GPtrArray *pv = provenance_items();
  for (guint i = 0; i < pv->len; i++) {
    const provenance_item_t *it = g_ptr_array_index(pv, i);
    g_string_append_printf(o, "| %s | ", it->name);
    md_cell(o, it->value);
    g_string_append(o, " |\n");
  }
  g_string_append(o, "\n## Capability record\n\n");
  g_autoptr(GPtrArray) cl = caps_lines();
  for (guint i = 0; i < cl->len; i++)
    g_string_append_printf(o, "- %s\n", (char *) g_ptr_array_index(cl, i));
  g_autoptr(GPtrArray) al = area_list(cat);
  for (guint a = 0; a < al->len; a++) {
    const char *area = g_ptr_array_index(al, a);
    counts_t ac = report_count(cat, area);
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
        if (t->report != NULL)
          g_string_append_printf(o, "What it said before it failed:\n\n```\n%s```\n\n", t->report);
      }
    }
  }
  write_file(opt_markdown, o);
  g_string_free(o, TRUE);
}

void
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
  g_autoptr(GPtrArray) ll = report_level_lines(cat);
  g_string_append(o, "<ul>\n");
  for (guint i = 0; i < ll->len; i++) {
    g_string_append(o, "<li>");
    xml_escape(o, g_ptr_array_index(ll, i));
    g_string_append(o, "</li>\n");
  }
  g_string_append(o, "</ul>\n<h2>Certified with</h2>\n<table>\n");
  const GPtrArray *pv = provenance_items();
  for (guint i = 0; i < pv->len; i++) {
    const provenance_item_t *it = g_ptr_array_index(pv, i);
    g_string_append(o, "<tr><th>");
    xml_escape(o, it->name);
    g_string_append(o, "</th><td><code>");
    xml_escape(o, it->value);
    g_string_append(o, "</code></td></tr>\n");
  }
  g_string_append(o, "</table>\n<h2>Capability record</h2>\n<ul>\n");
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
        g_autofree char *rl = catalog_rule_line(t);
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

