/*
 * kAL pinned-memory accounting, and the check every registration passes.
 *
 * The check.  Before a range is registered, every page of it must be
 * mapped and readable, and writable when the registration grants a write
 * right: what the kernel's get_user_pages() requires when an RDMA driver
 * pins a region (FOLL_WRITE fails on a read-only mapping, an unmapped or
 * PROT_NONE page is EFAULT).  Without it a read-only region registered with
 * remote write lets a peer's RDMA Write fault the process (emul copies into
 * it) or vanish (vp/iwarp).  The protections are read from /proc/self/maps,
 * one pass over the mappings per registration, whatever the range's size;
 * mincore() and madvise() do not report protections, and a write probe
 * would have to write.
 *
 * The accounting, only for a provider whose device reaches memory by DMA
 * and needs it locked (no RNICPI_CAP_NO_PIN).  Each such registration is
 * accounted in whole pages against one per-process limit (like the
 * kernel's ib_umem, overlapping registrations are counted twice), and its
 * pages locked with mlock(); on release, only the pages that no other live
 * registration covers are unlocked, since mlock does not nest.  The limit
 * follows the kernel's rule (mm/mlock.c can_do_mlock(), ib_umem_get()): none
 * for a process with CAP_IPC_LOCK in its effective set, else the soft
 * RLIMIT_MEMLOCK; ITAPI_MEMLOCK_LIMIT, when set, replaces it (it may lower
 * it, or raise it for a process the kernel lets lock more).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glib.h>

#include "kal.h"
#include "rnicpi_util.h"

#define KAL_LOG "itapi-kal"
#define MEMLOCK_ENV "ITAPI_MEMLOCK_LIMIT"

static GMutex pin_lock;
static uint64_t pinned_bytes;
static GList *pins; /* of kal_pin_t*, live registrations that locked their pages */

static char *
human(uint64_t bytes)
{
  return g_format_size_full(bytes, G_FORMAT_SIZE_IEC_UNITS);
}

rnicpi_status_t
kal_memlock_parse(const char *text, uint64_t *bytes, char **why)
{
  static const char units[] = "KMGT";
  if (text != NULL && g_ascii_strcasecmp(text, "unlimited") == 0) {
    *bytes = UINT64_MAX;
    return RNICPI_OK;
  }
  const char *p = text != NULL ? text : "";
  uint64_t v = 0;
  gboolean digits = FALSE, overflow = FALSE;
  for (; g_ascii_isdigit(*p); p++) {
    digits = TRUE;
    unsigned d = (unsigned) (*p - '0');
    if (v > (UINT64_MAX - d) / 10)
      overflow = TRUE;
    else
      v = v * 10 + d;
  }
  if (digits && *p != '\0' && p[1] == '\0') {
    const char *u = strchr(units, g_ascii_toupper(*p));
    if (u != NULL) {
      unsigned shift = 10u * (unsigned) (u - units + 1);
      if (v > (UINT64_MAX >> shift))
        overflow = TRUE;
      else
        v <<= shift;
      p++;
    }
  }
  if (!digits || *p != '\0' || overflow) {
    if (why != NULL)
      *why = g_strdup_printf("%s='%s' is not a size%s: give bytes as a whole number with an optional "
                             "unit K, M, G or T (powers of 1024; e.g. 65536, 64M, 1g), or 'unlimited'",
                             MEMLOCK_ENV, text != NULL ? text : "", overflow ? " (it overflows 64 bits)" : "");
    return RNICPI_EINVAL;
  }
  *bytes = v;
  return RNICPI_OK;
}

bool
kal_cap_ipc_lock(void)
{
  return rnicpi_cap_effective(CAP_IPC_LOCK);
}

/* The limit in force and where it comes from (for messages); RNICPI_EINVAL
 * with *why when ITAPI_MEMLOCK_LIMIT does not parse. */
static rnicpi_status_t
pin_limit(uint64_t *limit, const char **source, char **why)
{
  const char *env = g_getenv(MEMLOCK_ENV);
  if (env != NULL) {
    *source = MEMLOCK_ENV;
    return kal_memlock_parse(env, limit, why);
  }
  *limit = UINT64_MAX;
  *source = "CAP_IPC_LOCK";
  if (kal_cap_ipc_lock())
    return RNICPI_OK;
  struct rlimit rl;
  *source = "RLIMIT_MEMLOCK";
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    *limit = rl.rlim_cur;
  return RNICPI_OK;
}

void
kal_pin_check_env(void)
{
  const char *env = g_getenv(MEMLOCK_ENV);
  uint64_t v;
  g_autofree char *why = NULL;
  if (env != NULL && kal_memlock_parse(env, &v, &why) != RNICPI_OK)
    g_log(KAL_LOG, G_LOG_LEVEL_MESSAGE, "%s; until it is fixed, every registration that pins memory "
          "is refused", why);
}

rnicpi_status_t
kal_mem_check(const void *addr, uint64_t length, bool write, char **why)
{
  uintptr_t cur = (uintptr_t) addr, end = (uintptr_t) addr + length;
  FILE *f = fopen("/proc/self/maps", "re");
  if (f == NULL) {
    /* No /proc (a bare chroot): nothing to check against; a later fault
     * is then the provider's to catch, as before this check existed. */
    g_log(KAL_LOG, G_LOG_LEVEL_DEBUG, "cannot read /proc/self/maps (%s): the protections of %" G_GUINT64_FORMAT
          " bytes at %p are not checked", g_strerror(errno), (guint64) length, addr);
    return RNICPI_OK;
  }
  char *line = NULL;
  size_t cap = 0;
  rnicpi_status_t st = RNICPI_OK;
  /* The lines are sorted by address and do not overlap. */
  while (cur < end && getline(&line, &cap, f) > 0) {
    unsigned long lo, hi;
    char perms[5] = "";
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || hi <= cur)
      continue;
    if (lo > cur)
      break;
    if (perms[0] != 'r' || (write && perms[1] != 'w')) {
      if (why != NULL) {
        g_autofree char *m = g_strstrip(g_strdup(line));
        *why = g_strdup_printf("the page at %p (byte %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
                               "-byte range at %p) is mapped %s (/proc/self/maps: %s)",
                               (void *) (cur & ~(uintptr_t) (sysconf(_SC_PAGESIZE) - 1)),
                               (guint64) (cur - (uintptr_t) addr), (guint64) length, addr,
                               perms[0] != 'r' ? "without read permission" : "read-only", m);
      }
      st = RNICPI_EACCES;
      break;
    }
    cur = hi;
  }
  free(line);
  fclose(f);
  if (st == RNICPI_OK && cur < end) {
    if (why != NULL)
      *why = g_strdup_printf("the page at %p (byte %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
                             "-byte range at %p) is not mapped", (void *) cur,
                             (guint64) (cur - (uintptr_t) addr), (guint64) length, addr);
    st = RNICPI_ERANGE;
  }
  return st;
}

rnicpi_status_t
kal_pin(void *addr, uint64_t length, uint32_t flags, kal_pin_t **pin, char **why)
{
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t) addr & ~(uintptr_t) (page - 1);
  uintptr_t end = ((uintptr_t) addr + length + page - 1) & ~(uintptr_t) (page - 1);
  uint64_t bytes = end - first;

  rnicpi_status_t st = kal_mem_check(addr, length, (flags & KAL_PIN_WRITE) != 0, why);
  if (st != RNICPI_OK)
    return st;

  kal_pin_t *p = g_new0(kal_pin_t, 1);
  p->first_page = first;
  p->num_pages = bytes / page;
  p->page_size = page;
  p->bytes = bytes;
  if (!(flags & KAL_PIN_LOCK)) {
    *pin = p;
    return RNICPI_OK;
  }

  uint64_t limit;
  const char *source;
  if ((st = pin_limit(&limit, &source, why)) != RNICPI_OK) {
    g_free(p);
    return st;
  }
  g_mutex_lock(&pin_lock);
  if (limit != UINT64_MAX && (bytes > limit || pinned_bytes > limit - bytes)) {
    g_autofree char *b = human(bytes), *u = human(pinned_bytes), *l = human(limit);
    gboolean env = strcmp(source, MEMLOCK_ENV) == 0;
    *why = g_strdup_printf("pinning %s (%" G_GUINT64_FORMAT " bytes) with %s already pinned exceeds the %s "
                           "memlock limit of uid %u (%" G_GUINT64_FORMAT " bytes, from %s); %s, or register "
                           "less memory", b, bytes, u, l, (unsigned) getuid(), limit, source,
                           env ? "raise " MEMLOCK_ENV : "raise `ulimit -l`, run with CAP_IPC_LOCK");
    g_mutex_unlock(&pin_lock);
    g_free(p);
    return RNICPI_ELIMIT;
  }
  if (mlock((void *) first, bytes) != 0) {
    int err = errno;
    g_autofree char *b = human(bytes);
    *why = g_strdup_printf("mlock of %s (%" G_GUINT64_FORMAT " bytes) at %p failed: %s; the kernel holds a "
                           "process without CAP_IPC_LOCK to RLIMIT_MEMLOCK: raise `ulimit -l`, run with "
                           "CAP_IPC_LOCK, or register less memory", b, bytes, (void *) first, g_strerror(err));
    g_mutex_unlock(&pin_lock);
    g_free(p);
    return err == ENOMEM || err == EPERM || err == EAGAIN ? RNICPI_ELIMIT : RNICPI_EIO;
  }
  p->locked = true;
  pinned_bytes += bytes;
  pins = g_list_prepend(pins, p);
  g_mutex_unlock(&pin_lock);
  *pin = p;
  return RNICPI_OK;
}

static gint
cmp_first(gconstpointer a, gconstpointer b)
{
  const kal_pin_t *x = a, *y = b;
  return x->first_page < y->first_page ? -1 : x->first_page > y->first_page;
}

void
kal_unpin(kal_pin_t *pin)
{
  if (pin == NULL)
    return;
  if (!pin->locked) {
    g_free(pin);
    return;
  }
  g_mutex_lock(&pin_lock);
  pins = g_list_remove(pins, pin);
  pinned_bytes -= pin->bytes;

  /* Unlock [a, b) minus the ranges other registrations still hold. */
  uintptr_t a = pin->first_page, b = a + pin->bytes;
  GList *over = NULL;
  for (GList *l = pins; l != NULL; l = l->next) {
    kal_pin_t *o = l->data;
    if (o->first_page < b && o->first_page + o->bytes > a)
      over = g_list_prepend(over, o);
  }
  over = g_list_sort(over, cmp_first);
  uintptr_t cur = a;
  for (GList *l = over; l != NULL; l = l->next) {
    kal_pin_t *o = l->data;
    if (o->first_page > cur)
      munlock((void *) cur, MIN(o->first_page, b) - cur);
    cur = MAX(cur, o->first_page + o->bytes);
  }
  if (cur < b)
    munlock((void *) cur, b - cur);
  g_list_free(over);
  g_mutex_unlock(&pin_lock);
  g_free(pin);
}

void
kal_pin_usage(uint64_t *pinned, uint64_t *limit)
{
  g_mutex_lock(&pin_lock);
  *pinned = pinned_bytes;
  g_mutex_unlock(&pin_lock);
  const char *source;
  if (pin_limit(limit, &source, NULL) != RNICPI_OK)
    *limit = 0;
}
