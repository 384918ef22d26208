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
