/*
 * kAL pinned-memory accounting.
 *
 * Each registration is accounted in whole pages against one per-process
 * limit (like the kernel's ib_umem, overlapping registrations are counted
 * twice).  Pages are locked with mlock(); on release, only the pages that no
 * other live registration covers are unlocked, since mlock does not nest.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glib.h>

#include "kal.h"

static GMutex pin_lock;
static uint64_t pinned_bytes;
static GList *pins; /* of kal_pin_t*, live registrations */

static uint64_t
pin_limit(void)
{
  struct rlimit rl;
  uint64_t limit = UINT64_MAX;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    limit = rl.rlim_cur;
  const char *env = g_getenv("ITAPI_MEMLOCK_LIMIT");
  if (env != NULL) {
    guint64 v = g_ascii_strtoull(env, NULL, 10);
    if (v < limit)
      limit = v;
  }
  return limit;
}

static char *
human(uint64_t bytes)
{
  return g_format_size_full(bytes, G_FORMAT_SIZE_IEC_UNITS);
}

rnicpi_status_t
kal_pin(void *addr, uint64_t length, kal_pin_t **pin, char **why)
{
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t) addr & ~(uintptr_t) (page - 1);
  uintptr_t end = ((uintptr_t) addr + length + page - 1) & ~(uintptr_t) (page - 1);
  uint64_t bytes = end - first;
  uint64_t limit = pin_limit();

  g_mutex_lock(&pin_lock);
  if (limit != UINT64_MAX && pinned_bytes + bytes > limit) {
    g_autofree char *b = human(bytes), *p = human(pinned_bytes), *l = human(limit);
    *why = g_strdup_printf("pinning %s (%" G_GUINT64_FORMAT " bytes) with %s already "
                           "pinned exceeds the %s memlock limit of uid %u "
                           "(%" G_GUINT64_FORMAT " bytes); raise `ulimit -l` or "
                           "register less memory", b, bytes, p, l, (unsigned) getuid(), limit);
    g_mutex_unlock(&pin_lock);
    return RNICPI_ELIMIT;
  }
  if (mlock((void *) first, bytes) != 0) {
    int err = errno;
    g_autofree char *b = human(bytes);
    *why = g_strdup_printf("mlock of %s at %p failed: %s; raise `ulimit -l` or "
                           "check that the range is mapped", b, (void *) first,
                           g_strerror(err));
    g_mutex_unlock(&pin_lock);
    return err == ENOMEM || err == EPERM || err == EAGAIN ? RNICPI_ELIMIT : RNICPI_EIO;
  }
  kal_pin_t *p = g_new0(kal_pin_t, 1);
  p->first_page = first;
  p->num_pages = bytes / page;
  p->page_size = page;
  p->bytes = bytes;
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
  *limit = pin_limit();
}
