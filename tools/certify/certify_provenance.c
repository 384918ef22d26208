/*
 * itapi-certify, provenance: what a report certified and with what, so
 * that a vendor can run the same certification again and tell two reports
 * apart.  Each item is a name and a text: the command line, the catalog
 * (its test programs and rules, each by SHA-256 digest), the provider's
 * module with its digest, the deviation files with theirs, the host's
 * kernel and rdma-core, the configuration file and every environment
 * variable that changes how the stack or a provider behaves.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "certify.h"

static GPtrArray *items;     /* provenance_item_t, in the order reports show them */
static char *command_line;   /* as given, before the options were parsed */
static GPtrArray *env_seen;  /* "NAME=value" of the variables that matter */
static GPtrArray *dev_files; /* deviation files read */
static GPtrArray *programs;  /* "name\tpath" of the catalog's programs found */

/* Variables that change what the stack, a provider, rdma-core or the
 * tests do.  The ones itapi-certify sets itself for each test are left
 * out: they name the provider and device, which the report shows. */
static const char *const env_prefixes[] = {
  "ITAPI_", "RNICPI_", "IBV_", "RDMAV_", "MLX4_", "MLX5_", "RXE_", "ASAN_OPTIONS", "UBSAN_OPTIONS",
  "TSAN_OPTIONS", "LSAN_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH",
};
static const char *const env_set_here[] = {
  "ITAPI_PROVIDER", "ITAPI_PROVIDER_PATH", "ITAPI_CONF_IA", "RNICPI_CERT_PROVIDER",
  "RNICPI_CERT_MODULE", "RNICPI_CERT_DEVICE",
};

/* g_ptr_array_sort's order of two strings (it passes their addresses). */
static gint
by_text(gconstpointer a, gconstpointer b)
{
  return strcmp(*(char *const *) a, *(char *const *) b);
}

void
provenance_start(int argc, char **argv)
{
  GString *c = g_string_new(NULL);
  for (int i = 0; i < argc; i++) {
    g_autofree char *q = g_shell_quote(argv[i]);
    const char *plain = strpbrk(argv[i], " \t\n'\"\\$`*?[]{}()<>|&;#~") == NULL && *argv[i] ? argv[i] : q;
    g_string_append_printf(c, "%s%s", i ? " " : "", plain);
  }
  command_line = g_string_free(c, FALSE);
  env_seen = g_ptr_array_new_with_free_func(g_free);
  g_auto(GStrv) env = g_get_environ();
  for (char **e = env; *e != NULL; e++) {
    g_autofree char *name = g_strndup(*e, strcspn(*e, "="));
    gboolean wanted = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(env_prefixes) && !wanted; i++)
      wanted = g_str_has_prefix(name, env_prefixes[i]);
    for (size_t i = 0; i < G_N_ELEMENTS(env_set_here) && wanted; i++)
      wanted = strcmp(name, env_set_here[i]) != 0;
    if (wanted)
      g_ptr_array_add(env_seen, g_strdup(*e));
  }
  g_ptr_array_sort(env_seen, by_text);
  dev_files = g_ptr_array_new_with_free_func(g_free);
  programs = g_ptr_array_new_with_free_func(g_free);
}

void
provenance_deviation_file(const char *path)
{
  g_ptr_array_add(dev_files, g_canonicalize_filename(path, NULL));
}

void
provenance_program(const char *name, const char *path)
{
  g_ptr_array_add(programs, g_strdup_printf("%s\t%s", name, path));
}

/* "sha256:HEX" of the file at @path, or NULL when it cannot be read. */
static char *
file_digest(const char *path)
{
  GMappedFile *m = g_mapped_file_new(path, FALSE, NULL);
  if (m == NULL)
    return NULL;
  g_autofree char *hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256,
                                                     (const guchar *) g_mapped_file_get_contents(m),
                                                     g_mapped_file_get_length(m));
  g_mapped_file_unref(m);
  return g_strdup_printf("sha256:%s", hex);
}

/* "PATH (sha256:HEX)", or "PATH (unreadable)". */
static char *
file_and_digest(const char *path)
{
  g_autofree char *d = file_digest(path);
  return g_strdup_printf("%s (%s)", path, d != NULL ? d : "unreadable");
}

static void
add(const char *name, char *value)
{
  provenance_item_t *it = g_new0(provenance_item_t, 1);
  it->name = name;
  it->value = value;
  g_ptr_array_add(items, it);
}

/* The file that holds the built-in providers: the stack's library, which
 * the test programs load as this program does (the file itself, not the
 * soname's link to it). */
static char *
builtin_object(void)
{
  Dl_info info;
  if (dladdr((const void *) rnicpi_registry_load, &info) != 0 && info.dli_fname != NULL &&
      *info.dli_fname != '\0') {
    char *real = realpath(info.dli_fname, NULL);
    if (real != NULL) {
      char *copy = g_strdup(real);
      free(real);
      return copy;
    }
  }
  return g_file_read_link("/proc/self/exe", NULL);
}

/* libibverbs' file version, which carries rdma-core's release
 * (libibverbs.so.1.14.44.0 is rdma-core 44), or NULL without it. */
static char *
rdma_core_version(void)
{
  static const char *const libs[] = {
    "/usr/lib/x86_64-linux-gnu/libibverbs.so.1", "/usr/lib/aarch64-linux-gnu/libibverbs.so.1",
    "/usr/lib64/libibverbs.so.1", "/usr/lib/libibverbs.so.1",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(libs); i++) {
    g_autofree char *real = g_file_read_link(libs[i], NULL);
    if (real == NULL)
      continue;
    g_autofree char *base = g_path_get_basename(real);
    const char *v = g_str_has_prefix(base, "libibverbs.so.") ? base + strlen("libibverbs.so.") : base;
    g_auto(GStrv) parts = g_strsplit(v, ".", -1);
    if (g_strv_length(parts) >= 3)
      return g_strdup_printf("rdma-core %s (%s)", parts[2], real);
    return g_strdup(real);
  }
  return NULL;
}

/* The configuration file the stack reads (itapi.conf(5)), or NULL. */
static const char *
config_path(void)
{
  const char *c = g_getenv("ITAPI_CONF");
  if (c != NULL)
    return *c != '\0' && strcmp(c, "/dev/null") != 0 ? c : NULL;
  return g_file_test("/etc/itapi.conf", G_FILE_TEST_EXISTS) ? "/etc/itapi.conf" : NULL;
}

const GPtrArray *
provenance_items(void)
{
  if (items != NULL)
    return items;
  items = g_ptr_array_new();
  add("command", g_strdup(command_line));
  add("itapi-certify", g_strdup(CERT_VERSION));

  /* The catalog: one digest over every program's name and digest, so two
   * reports of the same catalog show the same text. */
  GChecksum *all = g_checksum_new(G_CHECKSUM_SHA256);
  GString *each = g_string_new(NULL);
  for (guint i = 0; i < programs->len; i++) {
    g_auto(GStrv) np = g_strsplit(g_ptr_array_index(programs, i), "\t", 2);
    g_autofree char *d = file_digest(np[1]);
    g_autofree char *line = g_strdup_printf("%s %s\n", np[0], d != NULL ? d : "unreadable");
    g_checksum_update(all, (const guchar *) line, (gssize) strlen(line));
    g_string_append_printf(each, "%s%s %s", i ? ", " : "", np[0], d != NULL ? d : "unreadable");
  }
  add("catalog digest", g_strdup_printf("sha256:%s (%u programs)", g_checksum_get_string(all),
                                        programs->len));
  g_checksum_free(all);
  add("catalog programs", g_string_free(each, FALSE));
  add("rules", file_and_digest(catalog_rules_file()));

  if (opt_module != NULL) {
    add("provider module", file_and_digest(opt_module));
  } else {
    g_autofree char *obj = strcmp(prov->origin, "built-in") == 0 ? builtin_object()
                                                                 : g_strdup(prov->origin);
    g_autofree char *fd = obj != NULL ? file_and_digest(obj) : g_strdup("unknown");
    add("provider module", g_strdup_printf("%s: %s", prov->origin, fd));
  }
  add("provider version", g_strdup(prov->prov->version));

  GString *dv = g_string_new(NULL);
  for (guint i = 0; i < dev_files->len; i++) {
    g_autofree char *fd = file_and_digest(g_ptr_array_index(dev_files, i));
    g_string_append_printf(dv, "%s%s", i ? ", " : "", fd);
  }
  if (dv->len == 0)
    g_string_append(dv, "none");
  add("deviation files", g_string_free(dv, FALSE));

  struct utsname u;
  if (uname(&u) == 0)
    add("kernel", g_strdup_printf("%s %s %s %s", u.sysname, u.release, u.version, u.machine));
  char *rc = rdma_core_version();
  add("rdma-core", rc != NULL ? rc : g_strdup("none"));
  const char *conf = config_path();
  add("configuration", conf != NULL ? file_and_digest(conf) : g_strdup("none"));
  GString *ev = g_string_new(NULL);
  for (guint i = 0; i < env_seen->len; i++)
    g_string_append_printf(ev, "%s%s", i ? " " : "", (char *) g_ptr_array_index(env_seen, i));
  if (ev->len == 0)
    g_string_append(ev, "nothing that changes behaviour");
  add("environment", g_string_free(ev, FALSE));
  return items;
}

const GPtrArray *
provenance_environment(void)
{
  return env_seen;
}
