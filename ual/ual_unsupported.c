/*
 * IT-API calls this build does not implement yet.  Each returns
 * IT_ERR_OP_NOT_SUPPORTED with a sentence in itx_error_detail(), touches
 * nothing, and is listed as not supported by itx_call_get() / itapi-info.
 *
 * SPDX-License-Identifier: MIT
 */
#include "ual.h"

/* Parameters are part of the standard signatures; none is used yet. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define NOT_BUILT(fn, what) \
  ual_fail(IT_ERR_OP_NOT_SUPPORTED, fn ": " what " are not built in this release of the stack")

/* UD endpoints, address handles and UD service resolution */

it_status_t
it_ep_ud_create(it_pz_handle_t pz_handle, it_evd_handle_t request_sevd_handle, it_evd_handle_t recv_sevd_handle, const it_ep_attributes_t *ep_attr, size_t spigot_id, it_ep_handle_t *ep_handle)
{
  return NOT_BUILT("it_ep_ud_create", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_post_sendto(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags, const it_dg_remote_ep_addr_t *remote_ep_addr)
{
  return NOT_BUILT("it_post_sendto", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_post_recvfrom(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
  return NOT_BUILT("it_post_recvfrom", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_address_handle_create(it_pz_handle_t pz_handle, const it_path_t *destination_path, it_ah_flags_t ah_flags, it_addr_handle_t *addr_handle)
{
  return NOT_BUILT("it_address_handle_create", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_address_handle_free(it_addr_handle_t addr_handle)
{
  return NOT_BUILT("it_address_handle_free", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_address_handle_modify(it_addr_handle_t addr_handle, it_addr_param_mask_t mask, const it_addr_param_t *params)
{
  return NOT_BUILT("it_address_handle_modify", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_address_handle_query(it_addr_handle_t addr_handle, it_addr_param_mask_t mask, it_addr_param_t *params)
{
  return NOT_BUILT("it_address_handle_query", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_ud_service_request_handle_create(const it_conn_qual_t *conn_qual, it_evd_handle_t reply_evd, const it_path_t *destination_path, const unsigned char *private_data, size_t private_data_length, it_ud_svc_req_handle_t *ud_svc_handle)
{
  return NOT_BUILT("it_ud_service_request_handle_create", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_ud_service_request_handle_free(it_ud_svc_req_handle_t ud_svc_handle)
{
  return NOT_BUILT("it_ud_service_request_handle_free", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_ud_service_request_handle_query(it_ud_svc_req_handle_t ud_svc_handle, it_ud_svc_req_param_mask_t mask, it_ud_svc_req_param_t *ud_svc_handle_info)
{
  return NOT_BUILT("it_ud_service_request_handle_query", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_ud_service_request(it_ud_svc_req_handle_t ud_svc_handle)
{
  return NOT_BUILT("it_ud_service_request", "UD endpoints, address handles and UD service resolution");
}

it_status_t
it_ud_service_reply(it_ud_svc_req_identifier_t ud_svc_req_id, it_ud_svc_req_status_t status, it_remote_ep_info_t ep_info, const unsigned char *private_data, size_t private_data_length)
{
  return NOT_BUILT("it_ud_service_reply", "UD endpoints, address handles and UD service resolution");
}

/* unlinked LMRs and I/O address mapping (privileged) */

it_status_t
it_lmr_create_unlinked(it_pz_handle_t pz_handle, size_t iobl_num_elts, it_lmr_flag_t flags, uint32_t shared_id, it_lmr_handle_t *lmr_handle)
{
  return NOT_BUILT("it_lmr_create_unlinked", "unlinked LMRs and I/O address mapping (privileged)");
}

it_status_t
it_lmr_link(it_lmr_handle_t lmr_handle, const void *addr, const it_iobl_t *iobl, it_length_t length, it_addr_mode_t addr_mode, it_mem_priv_t privs, it_ep_handle_t ep_handle, it_dto_cookie_t cookie, it_dto_flags_t dto_flags, it_rmr_context_t *rmr_context)
{
  return NOT_BUILT("it_lmr_link", "unlinked LMRs and I/O address mapping (privileged)");
}

it_status_t
it_lmr_unlink(it_lmr_handle_t lmr_handle, it_ep_handle_t ep_handle, it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
  return NOT_BUILT("it_lmr_unlink", "unlinked LMRs and I/O address mapping (privileged)");
}

it_status_t
it_mem_map(it_ia_handle_t ia_handle, void *vaddr, uint64_t aspace_id, size_t len, it_io_addr_t *io_addr, size_t *mapped_len)
{
  return NOT_BUILT("it_mem_map", "unlinked LMRs and I/O address mapping (privileged)");
}

it_status_t
it_mem_unmap(it_ia_handle_t ia_handle, it_io_addr_t io_addr, size_t mapped_len)
{
  return NOT_BUILT("it_mem_unmap", "unlinked LMRs and I/O address mapping (privileged)");
}

/* RDMA Read into a remote memory region (rdma_read_local_extensions) */

it_status_t
it_post_rdma_read_to_rmr(it_ep_handle_t ep_handle, const it_rmr_triplet_t *local_segments, size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr, it_rmr_context_t rmr_context)
{
  return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "it_post_rdma_read_to_rmr: RDMA Read into an RMR sink (and "
                  "IT_UNLINK_LOCAL_SINK) is not built; it_ia_info_t.rdma_read_local_extensions is IT_FALSE");
}
