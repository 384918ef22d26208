/*
 * Handles: validated, generation-checked.
 *
 * A handle is not a pointer.  Its value packs the object type (8 bits), a
 * generation (24 bits) and a slot index (32 bits).  A lookup (inline, in
 * ual.h) checks the type, that the slot exists and holds an object whose
 * own handle (type and generation included) is the value, so a freed,
 * foreign or garbage value is refused without being dereferenced.  Slots
 * live in fixed chunks that never move, so a lookup takes no lock.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>

#include "ual.h"

#define GEN_MASK 0xffffffu

ual_slot_t *ual_slot_chunks[UAL_MAX_CHUNKS];
static GMutex handle_lock;
static GArray *free_slots; /* uint32_t */
static uint32_t next_slot = 1; /* slot 0 never used */

GRecMutex ual_lock;

static ual_slot_t *
slot_of(uint32_t idx)
{
  uint32_t c = idx >> UAL_CHUNK_BITS;
  if (c >= UAL_MAX_CHUNKS)
    return NULL;
  ual_slot_t *chunk = g_atomic_pointer_get(&ual_slot_chunks[c]);
  return chunk == NULL ? NULL : &chunk[idx & (UAL_CHUNK_SLOTS - 1)];
}

void
ual_handle_alloc(ual_obj_t *obj, it_handle_type_enum_t type, ual_ia_t *ia)
{
  uint32_t idx;
  g_mutex_lock(&handle_lock);
  if (free_slots == NULL)
    free_slots = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  if (free_slots->len > 0) {
    idx = g_array_index(free_slots, uint32_t, free_slots->len - 1);
    g_array_set_size(free_slots, free_slots->len - 1);
  } else {
    idx = next_slot++;
    uint32_t c = idx >> UAL_CHUNK_BITS;
    g_assert(c < UAL_MAX_CHUNKS); /* 4 million live objects */
    if (ual_slot_chunks[c] == NULL)
      g_atomic_pointer_set(&ual_slot_chunks[c], g_new0(ual_slot_t, UAL_CHUNK_SLOTS));
  }
  ual_slot_t *s = slot_of(idx);
  if (s->gen == 0)
    s->gen = 1;
  obj->type = type;
  obj->ia = ia;
  obj->handle = ((uint64_t) (type + 1) << 56) | ((uint64_t) s->gen << 32) | idx;
  g_atomic_pointer_set(&s->obj, obj);
  g_mutex_unlock(&handle_lock);
}

void
ual_handle_release(ual_obj_t *obj)
{
  uint32_t idx = (uint32_t) obj->handle;
  g_mutex_lock(&handle_lock);
  ual_slot_t *s = slot_of(idx);
  g_atomic_pointer_set(&s->obj, NULL);
  s->gen = (s->gen + 1) & GEN_MASK;
  if (s->gen == 0)
    s->gen = 1;
  g_array_append_val(free_slots, idx);
  g_mutex_unlock(&handle_lock);
  obj->handle = 0;
}

it_status_t
ual_child_free(const void *h, it_handle_type_enum_t type, it_status_t bad, const char *what)
{
  g_rec_mutex_lock(&ual_lock);
  ual_obj_t *o = ual_handle_get(h, type);
  if (o == NULL) {
    g_rec_mutex_unlock(&ual_lock);
    return ual_fail(bad, "freeing %p: not a live %s handle", h, what);
  }
  o->ia->children = g_list_remove(o->ia->children, o);
  ual_obj_destroy(o);
  g_rec_mutex_unlock(&ual_lock);
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

void
ual_pz_child_add(ual_obj_t *obj, it_handle_type_enum_t type, ual_pz_t *pz)
{
  ual_ia_t *ia = pz->obj.ia;
  ual_handle_alloc(obj, type, ia);
  pz->nref++;
  ia->children = g_list_prepend(ia->children, obj);
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
  ual_obj_t *o = ual_handle_any(handle);
  if (o == NULL)
    return ual_fail(IT_ERR_INVALID_HANDLE, "it_get_handle_type: %p is not a live handle", handle);
  if (type_of_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_get_handle_type: type_of_handle is NULL");
  *type_of_handle = o->type;
  return IT_SUCCESS;
}
