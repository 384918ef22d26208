/*
 * The table of IT-API entry points and whether this build implements each
 * (itapi-info prints it).  Calls marked FALSE return IT_ERR_OP_NOT_SUPPORTED.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>

#include "itx.h"

#define Y IT_TRUE
#define N IT_FALSE

static const itx_call_info_t calls[] = {
  { "it_interface_list", Y, "IA" }, { "it_ia_create", Y, "IA" }, { "it_ia_free", Y, "IA" },
  { "it_ia_query", Y, "IA" }, { "it_ia_info_free", Y, "IA" },
  { "it_pz_create", Y, "PZ" }, { "it_pz_free", Y, "PZ" }, { "it_pz_query", Y, "PZ" },
  { "it_evd_create", Y, "EVD" }, { "it_evd_free", Y, "EVD" }, { "it_evd_modify", Y, "EVD" },
  { "it_evd_query", Y, "EVD" }, { "it_evd_dequeue", Y, "EVD" }, { "it_evd_wait", Y, "EVD" },
  { "it_evd_post_se", Y, "EVD" }, { "it_evd_callback_attach", Y, "EVD" },
  { "it_evd_callback_detach", Y, "EVD" },
  { "it_ep_rc_create", Y, "EP" }, { "it_ep_ud_create", Y, "EP" }, { "it_ep_modify", Y, "EP" },
  { "it_ep_query", Y, "EP" }, { "it_ep_reset", Y, "EP" }, { "it_ep_free", Y, "EP" },
  { "it_listen_create", Y, "CM" }, { "it_listen_free", Y, "CM" }, { "it_listen_query", Y, "CM" },
  { "it_ep_connect", Y, "CM" }, { "it_ep_accept", Y, "CM" }, { "it_reject", Y, "CM" },
  { "it_handoff", Y, "CM" }, { "it_ep_disconnect", Y, "CM" }, { "it_get_pathinfo", Y, "CM" },
  { "it_socket_convert", Y, "CM" },
  { "it_srq_create", Y, "SRQ" }, { "it_srq_free", Y, "SRQ" }, { "it_srq_modify", Y, "SRQ" },
  { "it_srq_query", Y, "SRQ" },
  { "it_lmr_create10", Y, "LMR" }, { "it_lmr_create20", Y, "LMR" }, { "it_lmr_create21", Y, "LMR" },
  { "it_lmr_create_unlinked", Y, "LMR" }, { "it_lmr_link", Y, "LMR" }, { "it_lmr_unlink", Y, "LMR" },
  { "it_lmr_free", Y, "LMR" }, { "it_lmr_modify", Y, "LMR" }, { "it_lmr_query", Y, "LMR" },
  { "it_lmr_flush_to_mem", Y, "LMR" }, { "it_lmr_refresh_from_mem", Y, "LMR" },
  { "it_mem_map", Y, "LMR" }, { "it_mem_unmap", Y, "LMR" },
  { "it_rmr_create10", Y, "RMR" }, { "it_rmr_create20", Y, "RMR" }, { "it_rmr_free", Y, "RMR" },
  { "it_rmr_query", Y, "RMR" }, { "it_rmr_bind10", Y, "RMR" }, { "it_rmr_link", Y, "RMR" },
  { "it_rmr_unlink", Y, "RMR" },
  { "it_make_rdma_addr_absolute", Y, "RMR" }, { "it_make_rdma_addr_relative", Y, "RMR" },
  { "it_post_send", Y, "DTO" }, { "it_post_send_and_unlink", Y, "DTO" }, { "it_post_recv", Y, "DTO" },
  { "it_post_rdma_read", Y, "DTO" }, { "it_post_rdma_read_to_rmr", Y, "DTO" },
  { "it_post_rdma_write", Y, "DTO" }, { "it_post_atomic", Y, "DTO" },
  { "it_post_sendto", Y, "DTO" }, { "it_post_recvfrom", Y, "DTO" },
  { "it_address_handle_create", Y, "UD" }, { "it_address_handle_free", Y, "UD" },
  { "it_address_handle_modify", Y, "UD" }, { "it_address_handle_query", Y, "UD" },
  { "it_ud_service_request_handle_create", Y, "UD" }, { "it_ud_service_request_handle_free", Y, "UD" },
  { "it_ud_service_request_handle_query", Y, "UD" }, { "it_ud_service_request", Y, "UD" },
  { "it_ud_service_reply", Y, "UD" },
  { "it_set_consumer_context", Y, "util" }, { "it_get_consumer_context", Y, "util" },
  { "it_get_handle_type", Y, "util" }, { "it_convert_net_addr", Y, "util" },
  { "it_hton64", Y, "util" }, { "it_ntoh64", Y, "util" },
};

size_t
itx_call_count(void)
{
  return sizeof(calls) / sizeof(calls[0]);
}

const itx_call_info_t *
itx_call_get(size_t i)
{
  return i < itx_call_count() ? &calls[i] : NULL;
}
