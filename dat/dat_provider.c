/*
 * dat/: registration with libdat2 and the DAT_PROVIDER function table.
 *
 * libdat2 reads dat.conf and, for each line naming this library, calls
 * dat_provider_init() with the line's IA name and its ia_params ("emul0 0":
 * the first word is the IT-API interface; without it the IA name is).  Each
 * line gets a DAT_PROVIDER of its own, registered under the IA name.  The
 * providers are never freed, not even by dat_provider_fini(): a stale handle
 * still names its provider, and libdat2 reads that pointer before we can
 * refuse the handle.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"
#include "dat_itapi.h"

#include <string.h>

static GMutex providers_lock;
static datx_provider_t *providers;

datx_provider_t *
datx_provider_find(const char *ia_name)
{
  g_mutex_lock(&providers_lock);
  datx_provider_t *p = providers;
  while (p != NULL && strcmp(p->info.ia_name, ia_name) != 0)
    p = p->next;
  g_mutex_unlock(&providers_lock);
  return p;
}

void
datx_provider_fill(DAT_PROVIDER *p)
{
  p->ia_open_func = datx_ia_open;
  p->ia_query_func = datx_ia_query;
  p->ia_close_func = datx_ia_close;
  p->set_consumer_context_func = datx_set_consumer_context;
  p->get_consumer_context_func = datx_get_consumer_context;
  p->get_handle_type_func = datx_get_handle_type;
  p->cno_create_func = datx_cno_create;
  p->cno_modify_agent_func = datx_cno_modify_agent;
  p->cno_query_func = datx_cno_query;
  p->cno_free_func = datx_cno_free;
  p->cno_wait_func = datx_cno_wait;
  p->cr_query_func = datx_cr_query;
  p->cr_accept_func = datx_cr_accept;
  p->cr_reject_func = datx_cr_reject;
  p->cr_handoff_func = datx_cr_handoff;
  p->evd_create_func = datx_evd_create;
  p->evd_query_func = datx_evd_query;
  p->evd_modify_cno_func = datx_evd_modify_cno;
  p->evd_enable_func = datx_evd_enable;
  p->evd_disable_func = datx_evd_disable;
  p->evd_wait_func = datx_evd_wait;
  p->evd_resize_func = datx_evd_resize;
  p->evd_post_se_func = datx_evd_post_se;
  p->evd_dequeue_func = datx_evd_dequeue;
  p->evd_free_func = datx_evd_free;
  p->ep_create_func = datx_ep_create;
  p->ep_query_func = datx_ep_query;
  p->ep_modify_func = datx_ep_modify;
  p->ep_connect_func = datx_ep_connect;
  p->ep_dup_connect_func = datx_ep_dup_connect;
  p->ep_disconnect_func = datx_ep_disconnect;
  p->ep_post_send_func = datx_ep_post_send;
  p->ep_post_recv_func = datx_ep_post_recv;
  p->ep_post_rdma_read_func = datx_ep_post_rdma_read;
  p->ep_post_rdma_write_func = datx_ep_post_rdma_write;
  p->ep_get_status_func = datx_ep_get_status;
  p->ep_free_func = datx_ep_free;
  p->lmr_create_func = datx_lmr_create;
  p->lmr_query_func = datx_lmr_query;
  p->lmr_free_func = datx_lmr_free;
  p->rmr_create_func = datx_rmr_create;
  p->rmr_query_func = datx_rmr_query;
  p->rmr_bind_func = datx_rmr_bind;
  p->rmr_free_func = datx_rmr_free;
  p->psp_create_func = datx_psp_create;
  p->psp_query_func = datx_psp_query;
  p->psp_free_func = datx_psp_free;
  p->rsp_create_func = datx_rsp_create;
  p->rsp_query_func = datx_rsp_query;
  p->rsp_free_func = datx_rsp_free;
  p->pz_create_func = datx_pz_create;
  p->pz_query_func = datx_pz_query;
  p->pz_free_func = datx_pz_free;
  p->psp_create_any_func = datx_psp_create_any;
  p->ep_reset_func = datx_ep_reset;
  p->evd_set_unwaitable_func = datx_evd_set_unwaitable;
  p->evd_clear_unwaitable_func = datx_evd_clear_unwaitable;
  p->lmr_sync_rdma_read_func = datx_lmr_sync_rdma_read;
  p->lmr_sync_rdma_write_func = datx_lmr_sync_rdma_write;
  p->ep_create_with_srq_func = datx_ep_create_with_srq;
  p->ep_recv_query_func = datx_ep_recv_query;
  p->ep_set_watermark_func = datx_ep_set_watermark;
  p->srq_create_func = datx_srq_create;
  p->srq_free_func = datx_srq_free;
  p->srq_post_recv_func = datx_srq_post_recv;
  p->srq_query_func = datx_srq_query;
  p->srq_resize_func = datx_srq_resize;
  p->srq_set_lw_func = datx_srq_set_lw;
  p->csp_create_func = datx_csp_create;
  p->csp_query_func = datx_csp_query;
  p->csp_free_func = datx_csp_free;
  p->ep_common_connect_func = datx_ep_common_connect;
  p->rmr_create_for_ep_func = datx_rmr_create_for_ep;
  p->ep_post_send_with_invalidate_func = datx_ep_post_send_with_invalidate;
  p->ep_post_rdma_read_to_rmr_func = datx_ep_post_rdma_read_to_rmr;
  p->cno_fd_create_func = datx_cno_fd_create;
  p->cno_trigger_func = datx_cno_trigger;
  p->ia_ha_related_func = datx_ia_ha_related;
  p->handle_extendedop_func = datx_handle_extendedop;
}

/* The IT-API interface of a dat.conf line: the first word of its ia_params,
 * quotes stripped, or else its IA name. */
static void
it_name_of(const char *ia_name, const char *params, char *out, size_t size)
{
  const char *s = params != NULL ? params : "";
  while (*s == ' ' || *s == '\t' || *s == '"')
    s++;
  size_t n = strcspn(s, " \t\"");
  if (n == 0) {
    g_strlcpy(out, ia_name, size);
    return;
  }
  if (n >= size)
    n = size - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

__attribute__((visibility("default"))) void
dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data)
{
  if (info == NULL)
    return;
  /* libdat2 calls fini when its last IA of the provider closes and init
   * again at the next open: the provider kept from before is registered
   * again. */
  datx_provider_t *p = datx_provider_find(info->ia_name);
  if (p != NULL) {
    DAT_RETURN st = dat_registry_add_provider(&p->dat, &p->info);
    if (st != DAT_SUCCESS && DAT_GET_TYPE(st) != DAT_PROVIDER_ALREADY_REGISTERED)
      g_warning("libdat2 refused to register DAT provider %s again: status 0x%x; "
                "dat_ia_open of %s will fail until the process restarts", info->ia_name,
                (unsigned) st, info->ia_name);
    return;
  }
  p = g_new0(datx_provider_t, 1);
  p->info = *info;
  it_name_of(info->ia_name, instance_data, p->it_name, sizeof(p->it_name));
  p->dat.device_name = p->info.ia_name;
  p->dat.extension = p;
  datx_provider_fill(&p->dat);
  DAT_RETURN st = dat_registry_add_provider(&p->dat, &p->info);
  if (st != DAT_SUCCESS) {
    g_warning("libdat2 refused to register DAT provider %s (IT-API interface %s): status 0x%x; "
              "check that the dat.conf in use (DAT_OVERRIDE, /etc/dat.conf) names it once",
              info->ia_name, p->it_name, (unsigned) st);
    g_free(p);
    return;
  }
  g_mutex_lock(&providers_lock);
  p->next = providers;
  providers = p;
  g_mutex_unlock(&providers_lock);
  g_debug("DAT provider %s registered over IT-API interface %s", info->ia_name, p->it_name);
}

__attribute__((visibility("default"))) void
dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
  if (info == NULL)
    return;
  datx_provider_t *p = datx_provider_find(info->ia_name);
  if (p != NULL)
    dat_registry_remove_provider(&p->dat, &p->info);
}
