/*
 * touch_v20.c - <it_api.h> with ITAPI_ENABLE_V20_BINDINGS.
 *
 * The generic names must map to the 2.0 variants: it_lmr_create to
 * it_lmr_create20 (with addr_mode), it_rmr_create to it_rmr_create20 (with
 * rmr_type) and it_rmr_bind to it_rmr_link (with addr_mode);
 * it_rmr_param_t has the field `linked`. The calls in v20_usage() are
 * compiled to check the 2.0 call syntax but never executed; at run time
 * the program only prints and exits 0.
 */
#define ITAPI_ENABLE_V20_BINDINGS
#include <it_api.h>

#include <stdio.h>
#include <string.h>

#ifdef ITAPI_ENABLE_V10_BINDINGS
#error "ITAPI_ENABLE_V10_BINDINGS must be undefined with ITAPI_ENABLE_V20_BINDINGS"
#endif

static unsigned long touched;

typedef void (*any_fn_t)(void);

/* Exact 2.0 prototypes of the generic names. */
static it_status_t (*const p_lmr_create)(it_pz_handle_t, void *, it_length_t,
                                         it_addr_mode_t, it_mem_priv_t,
                                         it_lmr_flag_t, uint32_t,
                                         it_lmr_handle_t *,
                                         it_rmr_context_t *) = it_lmr_create;
static it_status_t (*const p_rmr_create)(it_pz_handle_t, it_rmr_type_t,
                                         it_rmr_handle_t *) = it_rmr_create;
static it_status_t (*const p_rmr_bind)(it_rmr_handle_t, it_lmr_handle_t,
                                       void *, it_length_t, it_addr_mode_t,
                                       it_mem_priv_t, it_ep_handle_t,
                                       it_dto_cookie_t, it_dto_flags_t,
                                       it_rmr_context_t *) = it_rmr_bind;

/* Typical 2.0 application code; compiled, never run. */
static it_status_t v20_usage(it_pz_handle_t pz, it_ep_handle_t ep)
{
    static char buffer[64];
    it_lmr_handle_t lmr;
    it_rmr_handle_t rmr;
    it_rmr_context_t lmr_ctx = 0, rmr_ctx = 0;
    it_rmr_param_t rp;
    it_status_t st;

    st = it_lmr_create(pz, buffer, sizeof buffer, IT_ADDR_MODE_ABSOLUTE,
                       IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr, &lmr_ctx);
    if (st != IT_SUCCESS)
        return st;
    st = it_rmr_create(pz, IT_RMR_TYPE_NARROW, &rmr);
    if (st != IT_SUCCESS)
        return st;
    st = it_rmr_bind(rmr, lmr, buffer, sizeof buffer, IT_ADDR_MODE_ABSOLUTE,
                     IT_PRIV_REMOTE_READ, ep, 1, IT_COMPLETION_FLAG, &rmr_ctx);
    if (st != IT_SUCCESS)
        return st;
    st = it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &rp);
    if (st != IT_SUCCESS || !rp.linked)
        return st;
    return it_rmr_unlink(rmr, ep, 2, IT_COMPLETION_FLAG);
}

int main(void)
{
    any_fn_t fns[4];
    it_status_t (*volatile usage)(it_pz_handle_t, it_ep_handle_t) = v20_usage;
    it_rmr_param_t rp;
    size_t i, present = 0;

    fns[0] = (any_fn_t) p_lmr_create;
    fns[1] = (any_fn_t) p_rmr_create;
    fns[2] = (any_fn_t) p_rmr_bind;
    fns[3] = (any_fn_t) usage;
    for (i = 0; i < 4; i++)
        if (fns[i] != (any_fn_t) 0)
            present++;
    touched += 3;

    memset(&rp, 0, sizeof rp);
    rp.linked = IT_TRUE;
    touched++;

    if (present != 4 || rp.linked != IT_TRUE ||
        p_lmr_create != it_lmr_create20 || p_rmr_create != it_rmr_create20 ||
        p_rmr_bind != it_rmr_link) {
        printf("2.0 bindings are wrong\n");
        return 1;
    }
    printf("it_api.h (C, 2.0 bindings): touched %lu names\n", touched);
    return 0;
}
