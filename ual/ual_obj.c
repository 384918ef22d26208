/*
 * Object lifetimes: the object lock, freeing an object once no thread can
 * still be using it, and what every object carries (consumer context,
 * handle type, the sentence of the last error).
 *
 * Freeing runs in three steps.  Under the object lock the object is
 * unpublished: its handle finds nothing and it leaves every list a lookup
 * could reach it from.  Without the lock, the grace period (rsec_sync)
 * waits for the read sections that may still hold it: a post or a dequeue
 * that looked it up a moment before.  Under the lock again it is
 * destroyed.  The lock is dropped for the wait because a section may need
 * it (a provider's upcall made inside a post).  A thread that cannot wait
 * (it is inside a section itself, or holds the lock from an outer frame:
 * an EVD callback that frees) hands the object to the reclaimer thread,
 * which waits and destroys it on its behalf.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>

#include "ual.h"

GRecMutex ual_lock;
__thread int ual_lock_depth;

/* A GRecMutex that was never initialised makes its pthread mutex on first
 * use, published by a compare-and-swap inside GLib: two threads taking it
 * first at the same moment are right, but the thread sanitizer cannot see
 * that publication (GLib is not instrumented) and reports a race.  The
 * library makes it when it is loaded, before any thread can call in. */
__attribute__((constructor)) static void
ual_lock_setup(void)
{
  g_rec_mutex_init(&ual_lock);
}

static GAsyncQueue *reclaim_queue; /* ual_obj_t* whose grace period is owed */

static gpointer
reclaimer(gpointer data)
{
  (void) data;
  for (;;) {
    ual_obj_t *o = g_async_queue_pop(reclaim_queue);
    if (o->type == IT_HANDLE_TYPE_IA) {
      ual_ia_teardown((ual_ia_t *) o);
      continue;
    }
    rsec_sync();
    ual_lock_take();
    ual_ia_t *ia = o->ia;
    ual_obj_destroy(o);
    ia->dying--;
    ual_lock_drop();
  }
  return NULL;
}

void
ual_reclaim_later(ual_obj_t *o)
{
  static gsize started;
  if (g_once_init_enter(&started)) {
    reclaim_queue = g_async_queue_new();
    g_thread_unref(g_thread_new("itapi-reclaim", reclaimer, NULL));
    g_once_init_leave(&started, 1);
  }
  g_async_queue_push(reclaim_queue, o);
}

gboolean
ual_can_sync(void)
{
  return ual_lock_depth <= 1 && !rsec_in_section();
}

void
ual_obj_unpublish(ual_obj_t *o)
{
  ual_handle_kill(o);
  if (o->type == IT_HANDLE_TYPE_EVD)
    ual_evd_unpublish((ual_evd_t *) o);
}

void
ual_obj_retire(ual_obj_t *o)
{
  ual_ia_t *ia = o->ia;
  ual_obj_unpublish(o);
  ia->dying++;
  if (!ual_can_sync()) {
    g_log(UAL_LOG, G_LOG_LEVEL_DEBUG, "object %p of IA '%s' is freed from a callback or a read section: "
          "the reclaimer destroys it once no thread can use it", (void *) (uintptr_t) o->handle,
          ia->iface->name);
    ual_reclaim_later(o);
    return;
  }
  ual_lock_drop();
  rsec_sync();
  ual_lock_take();
  ual_obj_destroy(o);
  ia->dying--;
}

void
ual_ia_child_add(ual_ia_t *ia, ual_obj_t *obj)
{
  obj->sib = (GList) { .data = obj };
  ia->children = g_list_insert_before_link(ia->children, ia->children, &obj->sib);
  ia->nchildren++;
}

void
ual_ia_child_remove(ual_ia_t *ia, ual_obj_t *obj)
{
  ia->children = g_list_remove_link(ia->children, &obj->sib);
  ia->nchildren--;
}

it_status_t
ual_child_free(const void *h, it_handle_type_enum_t type, it_status_t bad, const char *what)
{
  ual_lock_take();
  ual_obj_t *o = ual_handle_get(h, type);
  if (o == NULL) {
    ual_lock_drop();
    return ual_fail(bad, "freeing %p: not a live %s handle", h, what);
  }
  ual_ia_child_remove(o->ia, o);
  ual_obj_retire(o);
  ual_lock_drop();
  return IT_SUCCESS;
}

static GPrivate detail_key = G_PRIVATE_INIT(g_free);

it_status_t
ual_fail(it_status_t st, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_log(UAL_LOG, G_LOG_LEVEL_DEBUG, "%s: %s", itx_status_name(st), msg);
  g_private_replace(&detail_key, msg);
  return st;
}

it_status_t
ual_prov_refused(const ual_ia_t *ia, rnicpi_status_t rs, it_status_t nosup, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (rs == RNICPI_ENOTSUP)
    return ual_fail(nosup, "provider '%s' could not %s: IA '%s' does not offer it (itapi-info -v lists "
                    "what it does)", ia->prov->name, what, ia->iface->name);
  return ual_fail(IT_ERR_RESOURCES, "provider '%s' could not %s: %s; free objects of IA '%s' or ask for "
                  "less", ia->prov->name, what, rnicpi_status_message(rs), ia->iface->name);
}

/* The device's limit on live objects of @type (0: none stated). */
static uint32_t
limit_of(const ual_ia_t *ia, it_handle_type_enum_t type, const char **what)
{
  switch (type) {
  case IT_HANDLE_TYPE_PZ: *what = "protection zones (max_pd)"; return ia->caps.max_pd;
  case IT_HANDLE_TYPE_EP: *what = "endpoints (max_qp)"; return ia->caps.max_qp;
  case IT_HANDLE_TYPE_LMR: *what = "memory regions (max_mr)"; return ia->caps.max_mr;
  case IT_HANDLE_TYPE_SRQ: *what = "shared receive queues (max_srq)"; return ia->caps.max_srq;
  default: *what = "objects"; return 0;
  }
}

it_status_t
ual_handle_new(ual_obj_t *obj, it_handle_type_enum_t type, ual_ia_t *ia)
{
  const char *what;
  uint32_t limit = type == IT_HANDLE_TYPE_IA ? 0 : limit_of(ia, type, &what);
  /* The access layer holds every provider to the limits it states, so
   * running out is a status on any provider. */
  if (limit != 0 && ia->nobj[type] >= limit)
    return ual_fail(IT_ERR_RESOURCES, "IA '%s' holds %u %s, the most provider '%s' states for it; free some first",
                    ia->iface->name, ia->nobj[type], what, ia->prov->name);
  if (G_UNLIKELY(!ual_handle_alloc(obj, type, ia)))
    return ual_fail(IT_ERR_RESOURCES, "no handle left for a new object of IA '%s': the %u handles of the "
                    "process are in use or retired; free objects you no longer need",
                    ia->iface->name, UAL_MAX_CHUNKS * UAL_CHUNK_SLOTS - 1);
  return IT_SUCCESS;
}

it_status_t
ual_pz_child_add(ual_obj_t *obj, it_handle_type_enum_t type, ual_pz_t *pz)
{
  ual_ia_t *ia = pz->obj.ia;
  it_status_t st = ual_handle_new(obj, type, ia);
  if (st != IT_SUCCESS)
    return st;
  pz->nref++;
  ual_ia_child_add(ia, obj);
  return IT_SUCCESS;
}

const char *
itx_error_detail(void)
{
  const char *d = g_private_get(&detail_key);
  return d != NULL ? d : "";
}

it_status_t
ual_map_status(rnicpi_status_t st)
{
  switch (st) {
  case RNICPI_OK: return IT_SUCCESS;
  case RNICPI_ENOTSUP: return IT_ERR_OP_NOT_SUPPORTED;
  case RNICPI_EINVAL: return IT_ERR_INVALID_EP_ATTR;
  case RNICPI_ENOMEM: return IT_ERR_RESOURCES;
  case RNICPI_EBUSY: return IT_ERR_EP_BUSY;
  case RNICPI_ESTATE: return IT_ERR_INVALID_EP_STATE;
  case RNICPI_EFULL: return IT_ERR_TOO_MANY_POSTS;
  case RNICPI_EACCES: return IT_ERR_ACCESS;
  case RNICPI_ERANGE: return IT_ERR_RANGE;
  case RNICPI_ENOENT: return IT_ERR_INVALID_CN_EST_ID;
  case RNICPI_EEXIST: return IT_ERR_CONN_QUAL_BUSY;
  case RNICPI_ELIMIT: return IT_ERR_RESOURCES;
  case RNICPI_EIO: return IT_ERR_IA_CATASTROPHE;
  default: return IT_ERR_FAULT;
  }
}

/* Consumer context and handle type: any object. */

it_status_t
it_set_consumer_context(it_handle_t handle, it_context_t context)
{
  RSEC_SCOPE();
  ual_obj_t *o = ual_handle_any(handle);
  if (o == NULL)
    return ual_fail(IT_ERR_INVALID_HANDLE, "it_set_consumer_context: %p is not a live handle", handle);
  o->context = context;
  o->has_context = TRUE;
  return IT_SUCCESS;
}

it_status_t
it_get_consumer_context(it_handle_t handle, it_context_t *context)
{
  RSEC_SCOPE();
  ual_obj_t *o = ual_handle_any(handle);
  if (o == NULL)
    return ual_fail(IT_ERR_INVALID_HANDLE, "it_get_consumer_context: %p is not a live handle", handle);
  if (context == NULL)
    return ual_fail(IT_ERR_FAULT, "it_get_consumer_context: context is NULL");
  if (!o->has_context)
    return ual_fail(IT_ERR_NO_CONTEXT, "handle %p carries no consumer context; set one with it_set_consumer_context", handle);
  *context = o->context;
  return IT_SUCCESS;
}

it_status_t
it_get_handle_type(it_handle_t handle, it_handle_type_enum_t *type_of_handle)
{
  RSEC_SCOPE();
  ual_obj_t *o = ual_handle_any(handle);
  if (o == NULL)
    return ual_fail(IT_ERR_INVALID_HANDLE, "it_get_handle_type: %p is not a live handle", handle);
  if (type_of_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_get_handle_type: type_of_handle is NULL");
  *type_of_handle = o->type;
  return IT_SUCCESS;
}
