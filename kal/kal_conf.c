/*
 * kAL: the stack's configuration file, itapi.conf(5).
 *
 * The syntax is the part of GKeyFile's (the .desktop file syntax) the
 * stack needs, read here rather than by GKeyFile so that every error names
 * its line:
 *
 *     # comment
 *     [itapi]
 *     provider = emul, iwarp
 *     cm = auto
 *
 *     [interface vp_softrdma]
 *     device = emul0
 *
 * A file is taken whole or not at all: one wrong line refuses it, so a
 * typo never opens a device the file did not mean.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>

#include <glib.h>

#include "kal.h"

/* One key of a section: its name, where it is stored, and the check of
 * its value (NULL when the value is accepted; else why not). */
typedef struct {
  const char *name;
  size_t offset; /* of the kal_conf_value_t in kal_conf_t or kal_conf_iface_t */
  char *(*check)(const char *value);
} conf_key_t;

static gboolean
name_char(char c)
{
  return g_ascii_isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':';
}

/* An interface or device name: what it_ia_create() is given. */
static char *
check_name(const char *v)
{
  size_t len = strlen(v);
  if (len >= KAL_IFACE_NAME_MAX)
    return g_strdup_printf("'%s' is %zu characters long; a name has at most %d", v, len,
                           KAL_IFACE_NAME_MAX - 1);
  for (const char *c = v; *c != '\0'; c++)
    if (!name_char(*c))
      return g_strdup_printf("'%s' holds '%c'; a name is made of letters, digits and _ - . :", v, *c);
  return NULL;
}

/* One provider's name, as ITAPI_PROVIDER gives names. */
static char *
check_provider(const char *v)
{
  for (const char *c = v; *c != '\0'; c++)
    if (!g_ascii_isalnum(*c) && *c != '_' && *c != '-')
      return g_strdup_printf("'%s' is not a provider name (letters, digits, _ and -); "
                             "itapi-info lists the providers", v);
  return NULL;
}

/* Provider names separated by commas, as ITAPI_PROVIDER takes them. */
static char *
check_providers(const char *v)
{
  g_auto(GStrv) names = g_strsplit(v, ",", -1);
  for (char **n = names; *n != NULL; n++) {
    if (*g_strstrip(*n) == '\0')
      return g_strdup_printf("'%s' has an empty name between commas", v);
    char *why = check_provider(*n);
    if (why != NULL)
      return why;
  }
  return NULL;
}

/* The paths ITAPI_CM chooses between. */
static char *
check_cm(const char *v)
{
  if (strcmp(v, "auto") == 0 || strcmp(v, "host") == 0 || strcmp(v, "provider") == 0)
    return NULL;
  return g_strdup_printf("'%s' is not auto, host or provider", v);
}

static const conf_key_t stack_keys[] = {
  { "provider", offsetof(kal_conf_t, provider), check_providers },
  { "cm", offsetof(kal_conf_t, cm), check_cm },
  { NULL, 0, NULL },
};

static const conf_key_t iface_keys[] = {
  { "device", offsetof(kal_conf_iface_t, device), check_name },
  { "provider", offsetof(kal_conf_iface_t, provider), check_provider },
  { "cm", offsetof(kal_conf_iface_t, cm), check_cm },
  { NULL, 0, NULL },
};

static char *
known_keys(const conf_key_t *keys)
{
  GString *s = g_string_new(NULL);
  for (const conf_key_t *k = keys; k->name != NULL; k++)
    g_string_append_printf(s, "%s%s", s->len ? ", " : "", k->name);
  return g_string_free(s, FALSE);
}

/* Where a [section] line puts the keys that follow; NULL with @why set
 * when it is neither [itapi] nor [interface NAME]. */
static void *
open_section(kal_conf_t *c, char *head, unsigned line, GArray *ifaces, const conf_key_t **keys,
             gboolean *seen_stack, char **why)
{
  g_auto(GStrv) w = g_strsplit_set(g_strstrip(head), " \t", -1);
  char *word[3] = { NULL, NULL, NULL };
  int n = 0;
  for (char **x = w; *x != NULL; x++)
    if (**x != '\0') {
      if (n == 2) {
        *why = g_strdup_printf("[%s] has more than two words; it is [itapi] or [interface NAME]", head);
        return NULL;
      }
      word[n++] = *x;
    }
  if (n == 1 && strcmp(word[0], "itapi") == 0) {
    if (*seen_stack) {
      *why = g_strdup("[itapi] appears a second time; put its keys in the first one");
      return NULL;
    }
    *seen_stack = TRUE;
    *keys = stack_keys;
    return c;
  }
  if (n != 2 || strcmp(word[0], "interface") != 0) {
    *why = g_strdup_printf("[%s] is neither [itapi] nor [interface NAME]", head);
    return NULL;
  }
  if ((*why = check_name(word[1])) != NULL)
    return NULL;
  for (guint i = 0; i < ifaces->len; i++) {
    const kal_conf_iface_t *f = &g_array_index(ifaces, kal_conf_iface_t, i);
    if (strcmp(f->name, word[1]) == 0) {
      *why = g_strdup_printf("interface '%s' is already defined on line %u; one section per name",
                             word[1], f->line);
      return NULL;
    }
  }
  kal_conf_iface_t f = { .name = g_strdup(word[1]), .line = line };
  g_array_append_val(ifaces, f);
  *keys = iface_keys;
  return &g_array_index(ifaces, kal_conf_iface_t, ifaces->len - 1);
}

/* A key = value line into the section at @base; FALSE with @why set when
 * the key is not one of @keys, is set already, or its value is wrong. */
static gboolean
set_key(void *base, const conf_key_t *keys, const char *section, char *key, char *value, unsigned line,
        char **why)
{
  const conf_key_t *k = keys;
  while (k->name != NULL && strcmp(k->name, key) != 0)
    k++;
  if (k->name == NULL) {
    g_autofree char *known = known_keys(keys);
    *why = g_strdup_printf("'%s' is not a key of %s (its keys: %s)", key, section, known);
    return FALSE;
  }
  kal_conf_value_t *v = (kal_conf_value_t *) ((char *) base + k->offset);
  if (v->line != 0) {
    *why = g_strdup_printf("'%s' is already set on line %u; set it once", key, v->line);
    return FALSE;
  }
  if (*value == '\0') {
    *why = g_strdup_printf("'%s' has no value; remove the line to leave it unset", key);
    return FALSE;
  }
  g_autofree char *bad = k->check(value);
  if (bad != NULL) {
    *why = g_strdup_printf("%s: %s", key, bad);
    return FALSE;
  }
  v->text = g_strdup(value);
  v->line = line;
  return TRUE;
}

/* Every line of @text into @c; FALSE with @why ("line N: ...") at the
 * first that is wrong. */
static gboolean
parse_lines(kal_conf_t *c, const char *text, GArray *ifaces, char **why)
{
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  void *base = NULL;           /* the section keys go to, NULL before any */
  const conf_key_t *keys = NULL;
  g_autofree char *section = NULL;
  gboolean seen_stack = FALSE;
  for (unsigned i = 0; lines[i] != NULL; i++) {
    unsigned line = i + 1;
    char *s = g_strstrip(lines[i]);
    g_autofree char *bad = NULL;
    if (*s == '\0' || *s == '#')
      continue;
    if (*s == '[') {
      size_t len = strlen(s);
      if (s[len - 1] != ']') {
        bad = g_strdup_printf("'%s' opens a section without closing it with ']'", s);
      } else {
        s[len - 1] = '\0';
        g_free(section);
        section = g_strdup_printf("[%s]", g_strstrip(s + 1));
        base = open_section(c, s + 1, line, ifaces, &keys, &seen_stack, &bad);
      }
    } else {
      char *eq = strchr(s, '=');
      if (eq == NULL) {
        bad = g_strdup_printf("'%s' is neither a [section], a key = value nor a # comment", s);
      } else {
        *eq = '\0';
        char *key = g_strstrip(s), *value = g_strstrip(eq + 1);
        if (*key == '\0')
          bad = g_strdup_printf("'= %s' has no key before the '='", value);
        else if (base == NULL)
          bad = g_strdup_printf("'%s' comes before any section; put it under [itapi] or "
                                "[interface NAME]", key);
        else
          set_key(base, keys, section, key, value, line, &bad);
      }
    }
    if (bad != NULL) {
      *why = g_strdup_printf("line %u: %s", line, bad);
      return FALSE;
    }
  }
  return TRUE;
}

rnicpi_status_t
kal_conf_parse(const char *text, const char *origin, kal_conf_t **conf, char **why)
{
  kal_conf_t *c = g_new0(kal_conf_t, 1);
  c->origin = g_strdup(origin != NULL ? origin : "(text)");
  GArray *ifaces = g_array_new(FALSE, TRUE, sizeof(kal_conf_iface_t));
  g_autofree char *bad = NULL;
  gboolean ok = parse_lines(c, text != NULL ? text : "", ifaces, &bad);
  c->n_ifaces = ifaces->len;
  c->ifaces = (kal_conf_iface_t *) (void *) g_array_free(ifaces, FALSE);
  if (!ok) {
    if (why != NULL)
      *why = g_strdup_printf("configuration file %s, %s", c->origin, bad);
    kal_conf_free(c);
    return RNICPI_EINVAL;
  }
  *conf = c;
  return RNICPI_OK;
}

static void
value_clear(kal_conf_value_t *v)
{
  g_free(v->text);
}

void
kal_conf_free(kal_conf_t *conf)
{
  if (conf == NULL)
    return;
  for (size_t i = 0; i < conf->n_ifaces; i++) {
    kal_conf_iface_t *f = &conf->ifaces[i];
    g_free(f->name);
    value_clear(&f->device);
    value_clear(&f->provider);
    value_clear(&f->cm);
  }
  g_free(conf->ifaces);
  value_clear(&conf->provider);
  value_clear(&conf->cm);
  g_free(conf->origin);
  g_free(conf);
}

const kal_conf_iface_t *
kal_conf_iface(const kal_conf_t *conf, const char *name)
{
  for (size_t i = 0; conf != NULL && i < conf->n_ifaces; i++)
    if (strcmp(conf->ifaces[i].name, name) == 0)
      return &conf->ifaces[i];
  return NULL;
}

rnicpi_status_t
kal_conf_read(kal_conf_t **conf, char **path, char **why)
{
  const char *env = getauxval(AT_SECURE) == 0 ? g_getenv("ITAPI_CONF") : NULL;
  *conf = NULL;
  *why = NULL;
  /* Set but empty, or /dev/null: the user asks for no file at all. */
  if (env != NULL && (*env == '\0' || strcmp(env, "/dev/null") == 0)) {
    *path = NULL;
    return RNICPI_OK;
  }
  *path = g_strdup(env != NULL ? env : KAL_CONF_DEFAULT_FILE);
  g_autofree char *text = NULL, *bad = NULL, *fix = NULL;
  rnicpi_status_t st = kal_file_read_private(*path, &text, &bad, &fix);
  if (st == RNICPI_ENOENT && env == NULL) {
    g_clear_pointer(path, g_free);
    return RNICPI_OK;
  }
  if (st == RNICPI_EACCES) {
    *why = g_strdup_printf("configuration file %s is refused: %s, so another user could rewrite its "
                           "settings; mend it (`%s`), or set ITAPI_CONF to another file "
                           "(ITAPI_CONF= for none)", *path, bad, fix);
    return st;
  }
  if (st != RNICPI_OK) {
    *why = g_strdup_printf("configuration file %s %s; set ITAPI_CONF to a file that can be "
                           "(ITAPI_CONF= for none)", *path, bad);
    return st;
  }
  st = kal_conf_parse(text, *path, conf, &bad);
  if (st != RNICPI_OK)
    *why = g_strdup_printf("%s; fix that line (itapi.conf(5)), or set ITAPI_CONF to another file "
                           "(ITAPI_CONF= for none)", bad);
  return st;
}
