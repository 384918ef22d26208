/*
 * kAL host connection policy: allow/deny rules on the connections the
 * access layer makes and the requests its listeners are shown.
 *
 * The rules come from a text file, one per line, first match wins, and a
 * connection no rule matches is allowed:
 *
 *     # comment
 *     deny  accept  10.0.0.0/8
 *     allow connect 127.0.0.1      port 4000-4099
 *     deny  any     any            port 22
 *
 * A file that cannot be parsed refuses every connection (fail closed) and
 * says where it is wrong, so a typo never opens what the file meant to shut.
 *
 * Rules another user could rewrite are no rules: the file is read with
 * kal_file_read_private() (sshd's StrictModes), and one that fails its
 * checks refuses every connection too, naming the file, its owner and mode.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include <glib.h>

#include "kal.h"

#define KAL_POLICY_DEFAULT_FILE "/etc/itapi/policy"

typedef struct {
  gboolean allow;
  unsigned dirs;           /* KAL_POLICY_CONNECT | KAL_POLICY_ACCEPT */
  int family;              /* AF_INET, AF_INET6, or 0 for any address */
  uint8_t addr[16];        /* network, in network byte order */
  unsigned prefix;         /* bits of addr that must match */
  uint32_t port_lo, port_hi;
  unsigned line;
  char *text;              /* the rule as written, for messages */
} rule_t;

typedef struct {
  GMutex lock;
  char *origin;            /* file the rules came from, or NULL when none */
  GArray *rules;           /* rule_t; NULL until the first load */
  char *broken;            /* why the file was refused, or NULL */
} policy_t;

static policy_t policy;

static void
rule_clear(gpointer p)
{
  g_free(((rule_t *) p)->text);
}

static gboolean
parse_port(const char *s, uint32_t *out)
{
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno != 0 || end == s || (*end != '\0' && *end != '-') || v < 1 || v > 65535)
    return FALSE;
  *out = (uint32_t) v;
  return TRUE;
}

static gboolean
parse_ports(const char *s, rule_t *r)
{
  const char *dash = strchr(s, '-');
  if (!parse_port(s, &r->port_lo))
    return FALSE;
  r->port_hi = r->port_lo;
  if (dash != NULL && (!parse_port(dash + 1, &r->port_hi) || strchr(dash + 1, '-') != NULL ||
                       r->port_hi < r->port_lo))
    return FALSE;
  return TRUE;
}

static gboolean
parse_addr(const char *s, rule_t *r)
{
  if (strcmp(s, "any") == 0) {
    r->family = 0;
    return TRUE;
  }
  g_autofree char *host = g_strdup(s);
  char *slash = strchr(host, '/');
  if (slash != NULL)
    *slash++ = '\0';
  if (inet_pton(AF_INET, host, r->addr) == 1) {
    r->family = AF_INET;
    r->prefix = 32;
  } else if (inet_pton(AF_INET6, host, r->addr) == 1) {
    r->family = AF_INET6;
    r->prefix = 128;
  } else {
    return FALSE;
  }
  if (slash != NULL) {
    char *end;
    errno = 0;
    unsigned long bits = strtoul(slash, &end, 10);
    if (errno != 0 || end == slash || *end != '\0' || bits > r->prefix)
      return FALSE;
    r->prefix = (unsigned) bits;
  }
  return TRUE;
}

/* One line into @r; FALSE with @why set when it is not a rule. */
static gboolean
parse_line(char **w, int n, rule_t *r, char **why)
{
  if (strcmp(w[0], "allow") == 0) {
    r->allow = TRUE;
  } else if (strcmp(w[0], "deny") == 0) {
    r->allow = FALSE;
  } else {
    *why = g_strdup_printf("'%s' is neither allow nor deny", w[0]);
    return FALSE;
  }
  if (n < 3) {
    *why = g_strdup("a rule needs a verdict, a direction and an address");
    return FALSE;
  }
  if (strcmp(w[1], "connect") == 0) {
    r->dirs = KAL_POLICY_CONNECT;
  } else if (strcmp(w[1], "accept") == 0) {
    r->dirs = KAL_POLICY_ACCEPT;
  } else if (strcmp(w[1], "any") == 0) {
    r->dirs = KAL_POLICY_CONNECT | KAL_POLICY_ACCEPT;
  } else {
    *why = g_strdup_printf("direction '%s' is not connect, accept or any", w[1]);
    return FALSE;
  }
  if (!parse_addr(w[2], r)) {
    *why = g_strdup_printf("'%s' is not an address, ADDRESS/PREFIX or any", w[2]);
    return FALSE;
  }
  r->port_lo = 1;
  r->port_hi = 65535;
  if (n == 5 && strcmp(w[3], "port") == 0) {
    if (!parse_ports(w[4], r)) {
      *why = g_strdup_printf("'%s' is not a port (1-65535) or a range LOW-HIGH", w[4]);
      return FALSE;
    }
  } else if (n != 3) {
    *why = g_strdup_printf("'%s' follows the address; only 'port N' or 'port N-M' may", w[3]);
    return FALSE;
  }
  return TRUE;
}

/* Replace the rules; the caller holds policy.lock. */
static rnicpi_status_t
load_locked(const char *text, const char *origin, char **why)
{
  if (policy.rules != NULL)
    g_array_unref(policy.rules);
  g_clear_pointer(&policy.origin, g_free);
  g_clear_pointer(&policy.broken, g_free);
  policy.rules = g_array_new(FALSE, TRUE, sizeof(rule_t));
  g_array_set_clear_func(policy.rules, rule_clear);
  policy.origin = g_strdup(origin);
  if (text == NULL)
    return RNICPI_OK;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (unsigned i = 0; lines[i] != NULL; i++) {
    char *hash = strchr(lines[i], '#');
    if (hash != NULL)
      *hash = '\0';
    g_auto(GStrv) all = g_strsplit_set(g_strstrip(lines[i]), " \t", -1);
    char *w[6]; /* the words of a rule (at most 5), NULL-terminated */
    int n = 0, words = 0;
    for (char **x = all; *x != NULL; x++)
      if (**x != '\0' && words++ < 5)
        w[n++] = *x;
    w[n] = NULL;
    if (words == 0)
      continue;
    rule_t r = { .line = i + 1 };
    g_autofree char *bad = NULL;
    if (words > 5)
      bad = g_strdup("too many words (at most: VERDICT DIRECTION ADDRESS port N-M)");
    else
      parse_line(w, n, &r, &bad);
    if (bad != NULL) {
      policy.broken = g_strdup_printf("host policy %s, line %u: %s; every connection is refused "
                                      "until the file is fixed", origin, i + 1, bad);
      if (why != NULL)
        *why = g_strdup(policy.broken);
      return RNICPI_EINVAL;
    }
    r.text = g_strjoinv(" ", w);
    g_array_append_val(policy.rules, r);
  }
  return RNICPI_OK;
}

rnicpi_status_t
kal_policy_load(const char *text, const char *origin, char **why)
{
  g_mutex_lock(&policy.lock);
  rnicpi_status_t st = load_locked(text, origin != NULL ? origin : "(text)", why);
  g_mutex_unlock(&policy.lock);
  return st;
}

/* The file named by ITAPI_POLICY (ignored in a setuid process), else the
 * host's default file when it exists; the caller holds policy.lock. */
static void
load_default_locked(void)
{
  const char *path = getauxval(AT_SECURE) == 0 ? g_getenv("ITAPI_POLICY") : NULL;
  gboolean named = path != NULL && *path != '\0';
  if (!named)
    path = KAL_POLICY_DEFAULT_FILE;
  g_autofree char *text = NULL, *bad = NULL, *fix = NULL;
  rnicpi_status_t st = kal_file_read_private(path, &text, &bad, &fix);
  if (st == RNICPI_ENOENT && !named) {
    load_locked(NULL, NULL, NULL);
    return;
  }
  if (st != RNICPI_OK) {
    load_locked(NULL, path, NULL);
    if (st == RNICPI_EACCES)
      policy.broken = g_strdup_printf("host policy %s is refused: %s, so another user could rewrite its "
                                      "rules; every connection is refused until it is mended (`%s`), or "
                                      "ITAPI_POLICY names another file", path, bad, fix);
    else
      policy.broken = g_strdup_printf("host policy %s %s; every connection is refused until it can be, "
                                      "or ITAPI_POLICY names another file", path, bad);
    return;
  }
  load_locked(text, path, NULL);
}

static gboolean
rule_matches(const rule_t *r, kal_policy_dir_t dir, int family, const uint8_t *addr, uint32_t port)
{
  if (!(r->dirs & dir) || port < r->port_lo || port > r->port_hi)
    return FALSE;
  if (r->family == 0)
    return TRUE;
  if (r->family != family)
    return FALSE;
  unsigned whole = r->prefix / 8, rest = r->prefix % 8;
  if (memcmp(r->addr, addr, whole) != 0)
    return FALSE;
  if (rest == 0)
    return TRUE;
  uint8_t mask = (uint8_t) (0xff << (8 - rest));
  return (r->addr[whole] & mask) == (addr[whole] & mask);
}

/* "a connection to ADDRESS port N" or "a request from ADDRESS listener
 * port N", for a refusal's message only. */
static char *
describe(kal_policy_dir_t dir, int family, const uint8_t *addr, uint32_t port)
{
  char shown[INET6_ADDRSTRLEN] = "?";
  inet_ntop(family, addr, shown, sizeof(shown));
  return g_strdup_printf("%s %s %s %u", dir == KAL_POLICY_CONNECT ? "a connection to" : "a request from",
                         shown, dir == KAL_POLICY_CONNECT ? "port" : "listener port", port);
}

rnicpi_status_t
kal_policy_check(kal_policy_dir_t dir, const struct sockaddr *peer, uint32_t port, char **why)
{
  int family = peer->sa_family;
  uint8_t addr[16] = { 0 };
  if (family == AF_INET) {
    memcpy(addr, &((const struct sockaddr_in *) peer)->sin_addr, 4);
  } else if (family == AF_INET6) {
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *) peer)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a6)) {
      family = AF_INET; /* an IPv4 peer on a dual-stack socket meets the IPv4 rules */
      memcpy(addr, &a6->s6_addr[12], 4);
    } else {
      memcpy(addr, a6, 16);
    }
  } else {
    if (why != NULL)
      *why = g_strdup_printf("host policy: address family %d is neither IPv4 nor IPv6", family);
    return RNICPI_EINVAL;
  }

  rnicpi_status_t st = RNICPI_OK;
  g_mutex_lock(&policy.lock);
  if (policy.rules == NULL)
    load_default_locked();
  if (policy.broken != NULL) {
    st = RNICPI_EACCES;
    if (why != NULL) {
      g_autofree char *what = describe(dir, family, addr, port);
      *why = g_strdup_printf("%s (refused: %s)", policy.broken, what);
    }
    goto unlock;
  }
  for (guint i = 0; i < policy.rules->len; i++) {
    const rule_t *r = &g_array_index(policy.rules, rule_t, i);
    if (!rule_matches(r, dir, family, addr, port))
      continue;
    if (!r->allow) {
      st = RNICPI_EACCES;
      if (why != NULL) {
        g_autofree char *what = describe(dir, family, addr, port);
        *why = g_strdup_printf("host policy %s, line %u ('%s'), refuses %s; change that rule to let "
                               "it through", policy.origin, r->line, r->text, what);
      }
    }
    break;
  }
unlock:
  g_mutex_unlock(&policy.lock);
  return st;
}
