/*
 * touch_v10.c - <it_api.h> with the default (IT-API 1.0) bindings.
 *
 * No binding macro is defined, so the header must select the 1.0
 * signatures: it_lmr_create, it_rmr_create and it_rmr_bind take their 1.0
 * argument lists, it_rmr_param_t has the field `bound`, and the 1.0 names
 * of renamed functions, fields and enumerators are available. The calls in
 * v10_usage() are compiled to check the 1.0 call syntax but never executed;
 * at run time the program only prints and exits 0.
 */
#include <it_api.h>

#include <stdio.h>
#include <string.h>

#ifndef ITAPI_ENABLE_V10_BINDINGS
#error "ITAPI_ENABLE_V10_BINDINGS must be defined when no binding macro is"
#endif

static unsigned long touched;

typedef void (*any_fn_t)(void);

/* Exact 1.0 prototypes of the generic and 1.0-only names. */
static it_status_t (*const p_lmr_create)(it_pz_handle_t, void *, it_length_t,
                                         it_mem_priv_t, it_lmr_flag_t,
                                         uint32_t, it_lmr_handle_t *,
                                         it_rmr_context_t *) = it_lmr_create;
static it_status_t (*const p_rmr_create)(it_pz_handle_t, it_rmr_handle_t *)
    = it_rmr_create;
static it_status_t (*const p_rmr_bind)(it_rmr_handle_t, it_lmr_handle_t,
                                       void *, it_length_t, it_mem_priv_t,
                                       it_ep_handle_t, it_dto_cookie_t,
                                       it_dto_flags_t, it_rmr_context_t *)
    = it_rmr_bind;
static it_status_t (*const p_rmr_unbind)(it_rmr_handle_t, it_ep_handle_t,
                                         it_dto_cookie_t, it_dto_flags_t)
    = it_rmr_unbind;
static it_rdma_addr_t (*const p_make_rdma_addr)(void *) = it_make_rdma_addr;
static it_status_t (*const p_sync_rdma_read)(const it_lmr_triplet_t *, size_t)
    = it_lmr_sync_rdma_read;
static it_status_t (*const p_sync_rdma_write)(const it_lmr_triplet_t *, size_t)
    = it_lmr_sync_rdma_write;

/* Typical 1.0 application code; compiled, never run. */
static it_status_t v10_usage(it_pz_handle_t pz, it_ep_handle_t ep)
{
    static char buffer[64];
    it_lmr_handle_t lmr;
    it_rmr_handle_t rmr;
    it_rmr_context_t lmr_ctx = 0, rmr_ctx = 0;
    it_lmr_triplet_t seg;
    it_rmr_param_t rp;
    it_rdma_addr_t raddr;
    it_status_t st;

    st = it_lmr_create(pz, buffer, sizeof buffer, IT_PRIV_DEFAULT,
                       IT_LMR_FLAG_NONE, 0, &lmr, &lmr_ctx);
    if (st != IT_SUCCESS)
        return st;
    st = it_rmr_create(pz, &rmr);
    if (st != IT_SUCCESS)
        return st;
    st = it_rmr_bind(rmr, lmr, buffer, sizeof buffer, IT_PRIV_REMOTE, ep,
                     1, IT_COMPLETION_FLAG, &rmr_ctx);
    if (st != IT_SUCCESS)
        return st;
    st = it_rmr_query(rmr, IT_RMR_PARAM_BOUND, &rp);
    if (st != IT_SUCCESS || !rp.bound)
        return st;
    raddr = it_make_rdma_addr(buffer);
    seg.lmr = lmr;
    seg.addr.abs = buffer;
    seg.length = sizeof buffer;
    st = it_lmr_sync_rdma_read(&seg, 1);
    if (st == IT_SUCCESS)
        st = it_lmr_sync_rdma_write(&seg, 1);
    if (st == IT_SUCCESS)
        st = it_post_rdma_write(ep, &seg, 1, 2, IT_COMPLETION_FLAG, raddr,
                                rmr_ctx);
    if (st == IT_SUCCESS)
        st = it_rmr_unbind(rmr, ep, 3, IT_COMPLETION_FLAG);
    return st;
}

int main(void)
{
    any_fn_t fns[8];
    it_status_t (*volatile usage)(it_pz_handle_t, it_ep_handle_t) = v10_usage;
    it_rc_only_attributes_t rc;
    it_ia_info_t info;
    it_rmr_param_t rp;
    it_mem_priv_t privs[2];
    it_event_type_t ev;
    it_rmr_param_mask_t mask;
    size_t i, present = 0;

    fns[0] = (any_fn_t) p_lmr_create;
    fns[1] = (any_fn_t) p_rmr_create;
    fns[2] = (any_fn_t) p_rmr_bind;
    fns[3] = (any_fn_t) p_rmr_unbind;
    fns[4] = (any_fn_t) p_make_rdma_addr;
    fns[5] = (any_fn_t) p_sync_rdma_read;
    fns[6] = (any_fn_t) p_sync_rdma_write;
    fns[7] = (any_fn_t) usage;
    for (i = 0; i < 8; i++)
        if (fns[i] != (any_fn_t) 0)
            present++;
    touched += 7;

    memset(&rc, 0, sizeof rc);
    rc.rdma_read_inflight_incoming = 4;
    rc.rdma_read_inflight_outgoing = 8;
    touched += 2;

    memset(&info, 0, sizeof info);
    info.ird_support = IT_TRUE;
    info.ord_support = IT_TRUE;
    touched += 2;

    memset(&rp, 0, sizeof rp);
    rp.bound = IT_TRUE;
    touched++;

    privs[0] = IT_PRIV_NONE;
    privs[1] = IT_PRIV_DEFAULT;
    ev = IT_RMR_BIND_CMPL_EVENT;
    mask = IT_RMR_PARAM_BOUND;
    touched += 4;

    if (present != 8 || rc.rdma_read_ird != 4 || rc.rdma_read_ord != 8 ||
        info.ird_ord_ia_support != IT_TRUE || rp.bound != IT_TRUE ||
        privs[0] != 0 || privs[1] != IT_PRIV_LOCAL ||
        ev != IT_RMR_LINK_CMPL_EVENT || mask != IT_RMR_PARAM_LINKED) {
        printf("1.0 compatibility names are wrong\n");
        return 1;
    }
    printf("it_api.h (C, 1.0 bindings): touched %lu names\n", touched);
    return 0;
}
