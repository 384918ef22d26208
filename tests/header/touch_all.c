/*
 * touch_all.c - compile-time completeness test of <it_api.h> (2.1 bindings).
 *
 * References every function (through a pointer of the exact prototype
 * type, so any prototype mismatch fails to compile), declares a variable of
 * every type, assigns every structure field (nested unions included) and
 * uses every enumerator and constant. At run time it only prints how many
 * names it touched and exits 0; no library function is called.
 *
 * The body is written in the common subset of C11 and C++ so that
 * touch_all.cc can compile the very same checks as C++ (it includes this
 * file with TOUCH_ALL_NO_MAIN defined and adds C++-only checks).
 */
#ifndef ITAPI_ENABLE_V21_BINDINGS
#define ITAPI_ENABLE_V21_BINDINGS
#endif
#include <it_api.h>

#include <stdio.h>
#include <string.h>

#ifdef ITAPI_ENABLE_V10_BINDINGS
#error "ITAPI_ENABLE_V10_BINDINGS must be undefined with ITAPI_ENABLE_V21_BINDINGS"
#endif

/* ------------------------------------------------------------------------ */
/* Bookkeeping                                                              */
/* ------------------------------------------------------------------------ */

static unsigned long touched;          /* number of names touched */
static unsigned long long checksum;    /* folds in every value and object */

static void touch_bytes(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *) p;
    size_t i;

    for (i = 0; i < n; i++)
        checksum = checksum * 31u + b[i];
}

/* An integer constant or enumerator that is not checked against a type. */
#define TOUCH_VALUE(v) \
    do { checksum += (unsigned long long) (v); touched++; } while (0)

/* An enumerator that must be assignable to the given enumeration type. */
#define TOUCH_ENUM(type, e) \
    do { type e_ = e; touch_bytes(&e_, sizeof e_); touched++; } while (0)

/* A type: declare a zeroed variable of it. */
#define TOUCH_TYPE(type) \
    do { type t_; memset(&t_, 0, sizeof t_); touch_bytes(&t_, sizeof t_); \
         touched++; } while (0)

/* A structure field: assign it. */
#define SET(lvalue, value) do { (lvalue) = (value); touched++; } while (0)

/* Zero an object before its fields are assigned. */
#define ZERO(obj) memset(&(obj), 0, sizeof(obj))

/* Fold a whole object into the checksum once all its fields are set. */
#define FOLD(obj) touch_bytes(&(obj), sizeof(obj))

/* Distinct fake handle values (never dereferenced). */
static char fake_objects[16];
#define FAKE(type, i) ((type) (void *) &fake_objects[i])

/* A function: store a pointer of the exact prototype type. */
typedef void (*any_fn_t)(void);
static any_fn_t functions[128];
static size_t num_functions;
#define TOUCH_FN(fn, ret, params) \
    do { ret (*fp_) params = fn; \
         functions[num_functions++] = (any_fn_t) fp_; touched++; } while (0)

/* IN and OUT must be usable as parameter annotations. */
static int touch_in_out(IN int in, OUT int *out, IN OUT int *inout)
{
    *out = in;
    *inout += in;
    return *out + *inout;
}

/* Matches it_evd_callback_rtn_t. */
static void touch_callback(IN it_evd_handle_t evd, IN void *arg)
{
    touch_bytes(&evd, sizeof evd);
    touch_bytes(&arg, sizeof arg);
}

/* ------------------------------------------------------------------------ */
/* Functions                                                                */
/* ------------------------------------------------------------------------ */

static void touch_functions(void)
{
    /* 2.1 Interface adapters */
    TOUCH_FN(it_interface_list, void, (it_interface_t *, size_t *, size_t *));
    TOUCH_FN(it_ia_create, it_status_t,
             (const char *, uint32_t, uint32_t, it_ia_handle_t *));
    TOUCH_FN(it_ia_free, it_status_t, (it_ia_handle_t));
    TOUCH_FN(it_ia_query, it_status_t, (it_ia_handle_t, it_ia_info_t **));
    TOUCH_FN(it_ia_info_free, void, (it_ia_info_t *));

    /* 2.2 Protection zones */
    TOUCH_FN(it_pz_create, it_status_t, (it_ia_handle_t, it_pz_handle_t *));
    TOUCH_FN(it_pz_free, it_status_t, (it_pz_handle_t));
    TOUCH_FN(it_pz_query, it_status_t,
             (it_pz_handle_t, it_pz_param_mask_t, it_pz_param_t *));

    /* 2.3 Event dispatchers */
    TOUCH_FN(it_evd_create, it_status_t,
             (it_ia_handle_t, it_event_type_t, it_evd_flags_t, size_t, size_t,
              it_evd_handle_t, it_evd_handle_t *, int *));
    TOUCH_FN(it_evd_free, it_status_t, (it_evd_handle_t));
    TOUCH_FN(it_evd_modify, it_status_t,
             (it_evd_handle_t, it_evd_param_mask_t, const it_evd_param_t *));
    TOUCH_FN(it_evd_query, it_status_t,
             (it_evd_handle_t, it_evd_param_mask_t, it_evd_param_t *));
    TOUCH_FN(it_evd_dequeue, it_status_t, (it_evd_handle_t, it_event_t *));
    TOUCH_FN(it_evd_wait, it_status_t,
             (it_evd_handle_t, uint64_t, it_event_t *, size_t *));
    TOUCH_FN(it_evd_post_se, it_status_t, (it_evd_handle_t, const void *));
    TOUCH_FN(it_evd_callback_attach, it_status_t,
             (it_evd_handle_t, it_evd_callback_rtn_t, void *));
    TOUCH_FN(it_evd_callback_detach, it_status_t, (it_evd_handle_t));

    /* 2.4 Endpoints */
    TOUCH_FN(it_ep_rc_create, it_status_t,
             (it_pz_handle_t, it_evd_handle_t, it_evd_handle_t,
              it_evd_handle_t, it_ep_rc_creation_flags_t,
              const it_ep_attributes_t *, it_ep_handle_t *));
    TOUCH_FN(it_ep_ud_create, it_status_t,
             (it_pz_handle_t, it_evd_handle_t, it_evd_handle_t,
              const it_ep_attributes_t *, size_t, it_ep_handle_t *));
    TOUCH_FN(it_ep_modify, it_status_t,
             (it_ep_handle_t, it_ep_param_mask_t, const it_ep_attributes_t *));
    TOUCH_FN(it_ep_query, it_status_t,
             (it_ep_handle_t, it_ep_param_mask_t, it_ep_param_t *));
    TOUCH_FN(it_ep_reset, it_status_t, (it_ep_handle_t));
    TOUCH_FN(it_ep_free, it_status_t, (it_ep_handle_t));

    /* 2.5 Connection management */
    TOUCH_FN(it_listen_create, it_status_t,
             (it_ia_handle_t, size_t, it_evd_handle_t, it_listen_flags_t,
              it_conn_qual_t *, it_listen_handle_t *));
    TOUCH_FN(it_listen_free, it_status_t, (it_listen_handle_t));
    TOUCH_FN(it_listen_query, it_status_t,
             (it_listen_handle_t, it_listen_param_mask_t, it_listen_param_t *));
    TOUCH_FN(it_ep_connect, it_status_t,
             (it_ep_handle_t, const it_path_t *, const it_conn_attributes_t *,
              const it_conn_qual_t *, it_cn_est_flags_t, const unsigned char *,
              size_t));
    TOUCH_FN(it_ep_accept, it_status_t,
             (it_ep_handle_t, it_cn_est_identifier_t, const unsigned char *,
              size_t));
    TOUCH_FN(it_reject, it_status_t,
             (it_cn_est_identifier_t, const unsigned char *, size_t));
    TOUCH_FN(it_handoff, it_status_t,
             (const it_conn_qual_t *, size_t, it_cn_est_identifier_t));
    TOUCH_FN(it_ep_disconnect, it_status_t,
             (it_ep_handle_t, const unsigned char *, size_t));
    TOUCH_FN(it_get_pathinfo, it_status_t,
             (it_ia_handle_t, size_t, const it_net_addr_t *, size_t *,
              size_t *, it_path_t *));

    /* 2.6 Socket conversion */
    TOUCH_FN(it_socket_convert, it_status_t,
             (int, it_ep_handle_t, it_sc_flags_t, const unsigned char *,
              size_t));

    /* 2.7 Shared receive queues */
    TOUCH_FN(it_srq_create, it_status_t,
             (it_pz_handle_t, size_t, size_t, it_srq_handle_t *));
    TOUCH_FN(it_srq_free, it_status_t, (it_srq_handle_t));
    TOUCH_FN(it_srq_modify, it_status_t,
             (it_srq_handle_t, it_srq_param_mask_t, const it_srq_param_t *));
    TOUCH_FN(it_srq_query, it_status_t,
             (it_srq_handle_t, it_srq_param_mask_t, it_srq_param_t *));

    /* 2.8 Local memory regions */
    TOUCH_FN(it_lmr_create10, it_status_t,
             (it_pz_handle_t, void *, it_length_t, it_mem_priv_t,
              it_lmr_flag_t, uint32_t, it_lmr_handle_t *, it_rmr_context_t *));
    TOUCH_FN(it_lmr_create20, it_status_t,
             (it_pz_handle_t, void *, it_length_t, it_addr_mode_t,
              it_mem_priv_t, it_lmr_flag_t, uint32_t, it_lmr_handle_t *,
              it_rmr_context_t *));
    TOUCH_FN(it_lmr_create21, it_status_t,
             (it_pz_handle_t, void *, it_iobl_t *, it_length_t, it_addr_mode_t,
              it_mem_priv_t, it_lmr_flag_t, uint32_t, it_lmr_handle_t *,
              it_rmr_context_t *));
    TOUCH_FN(it_lmr_create_unlinked, it_status_t,
             (it_pz_handle_t, size_t, it_lmr_flag_t, uint32_t,
              it_lmr_handle_t *));
    TOUCH_FN(it_lmr_link, it_status_t,
             (it_lmr_handle_t, const void *, const it_iobl_t *, it_length_t,
              it_addr_mode_t, it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
              it_dto_flags_t, it_rmr_context_t *));
    TOUCH_FN(it_lmr_unlink, it_status_t,
             (it_lmr_handle_t, it_ep_handle_t, it_dto_cookie_t,
              it_dto_flags_t));
    TOUCH_FN(it_lmr_free, it_status_t, (it_lmr_handle_t));
    TOUCH_FN(it_lmr_modify, it_status_t,
             (it_lmr_handle_t, it_lmr_param_mask_t, const it_lmr_param_t *));
    TOUCH_FN(it_lmr_query, it_status_t,
             (it_lmr_handle_t, it_lmr_param_mask_t, it_lmr_param_t *));
    TOUCH_FN(it_lmr_flush_to_mem, it_status_t,
             (const it_lmr_triplet_t *, size_t));
    TOUCH_FN(it_lmr_refresh_from_mem, it_status_t,
             (const it_lmr_triplet_t *, size_t));
    TOUCH_FN(it_mem_map, it_status_t,
             (it_ia_handle_t, void *, uint64_t, size_t, it_io_addr_t *,
              size_t *));
    TOUCH_FN(it_mem_unmap, it_status_t, (it_ia_handle_t, it_io_addr_t, size_t));

    /* 2.9 Remote memory regions */
    TOUCH_FN(it_rmr_create10, it_status_t, (it_pz_handle_t, it_rmr_handle_t *));
    TOUCH_FN(it_rmr_create20, it_status_t,
             (it_pz_handle_t, it_rmr_type_t, it_rmr_handle_t *));
    TOUCH_FN(it_rmr_free, it_status_t, (it_rmr_handle_t));
    TOUCH_FN(it_rmr_query, it_status_t,
             (it_rmr_handle_t, it_rmr_param_mask_t, it_rmr_param_t *));
    TOUCH_FN(it_rmr_bind10, it_status_t,
             (it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
              it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t, it_dto_flags_t,
              it_rmr_context_t *));
    TOUCH_FN(it_rmr_link, it_status_t,
             (it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
              it_addr_mode_t, it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
              it_dto_flags_t, it_rmr_context_t *));
    TOUCH_FN(it_rmr_unlink, it_status_t,
             (it_rmr_handle_t, it_ep_handle_t, it_dto_cookie_t,
              it_dto_flags_t));
    TOUCH_FN(it_make_rdma_addr_absolute, it_rdma_addr_t, (void *));
    TOUCH_FN(it_make_rdma_addr_relative, it_rdma_addr_t, (it_length_t));

    /* 2.10 Data transfer operations */
    TOUCH_FN(it_post_send, it_status_t,
             (it_ep_handle_t, const it_lmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t));
    TOUCH_FN(it_post_send_and_unlink, it_status_t,
             (it_ep_handle_t, const it_lmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t, it_rmr_context_t));
    TOUCH_FN(it_post_recv, it_status_t,
             (it_handle_t, const it_lmr_triplet_t *, size_t, it_dto_cookie_t,
              it_dto_flags_t));
    TOUCH_FN(it_post_rdma_read, it_status_t,
             (it_ep_handle_t, const it_lmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
              it_rmr_context_t));
    TOUCH_FN(it_post_rdma_read_to_rmr, it_status_t,
             (it_ep_handle_t, const it_rmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
              it_rmr_context_t));
    TOUCH_FN(it_post_rdma_write, it_status_t,
             (it_ep_handle_t, const it_lmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
              it_rmr_context_t));
    TOUCH_FN(it_post_atomic, it_status_t,
             (it_ep_handle_t, it_atomic_op_t, uint64_t, uint64_t,
              const it_lmr_triplet_t *, it_dto_cookie_t, it_dto_flags_t,
              it_rdma_addr_t, it_rmr_context_t));
    TOUCH_FN(it_post_sendto, it_status_t,
             (it_ep_handle_t, const it_lmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t,
              const it_dg_remote_ep_addr_t *));
    TOUCH_FN(it_post_recvfrom, it_status_t,
             (it_ep_handle_t, const it_lmr_triplet_t *, size_t,
              it_dto_cookie_t, it_dto_flags_t));

    /* 2.11 Address handles */
    TOUCH_FN(it_address_handle_create, it_status_t,
             (it_pz_handle_t, const it_path_t *, it_ah_flags_t,
              it_addr_handle_t *));
    TOUCH_FN(it_address_handle_free, it_status_t, (it_addr_handle_t));
    TOUCH_FN(it_address_handle_modify, it_status_t,
             (it_addr_handle_t, it_addr_param_mask_t, const it_addr_param_t *));
    TOUCH_FN(it_address_handle_query, it_status_t,
             (it_addr_handle_t, it_addr_param_mask_t, it_addr_param_t *));

    /* 2.12 Datagram service resolution */
    TOUCH_FN(it_ud_service_request_handle_create, it_status_t,
             (const it_conn_qual_t *, it_evd_handle_t, const it_path_t *,
              const unsigned char *, size_t, it_ud_svc_req_handle_t *));
    TOUCH_FN(it_ud_service_request_handle_free, it_status_t,
             (it_ud_svc_req_handle_t));
    TOUCH_FN(it_ud_service_request_handle_query, it_status_t,
             (it_ud_svc_req_handle_t, it_ud_svc_req_param_mask_t,
              it_ud_svc_req_param_t *));
    TOUCH_FN(it_ud_service_request, it_status_t, (it_ud_svc_req_handle_t));
    TOUCH_FN(it_ud_service_reply, it_status_t,
             (it_ud_svc_req_identifier_t, it_ud_svc_req_status_t,
              it_remote_ep_info_t, const unsigned char *, size_t));

    /* 2.13 Utilities */
    TOUCH_FN(it_set_consumer_context, it_status_t, (it_handle_t, it_context_t));
    TOUCH_FN(it_get_consumer_context, it_status_t,
             (it_handle_t, it_context_t *));
    TOUCH_FN(it_get_handle_type, it_status_t,
             (it_handle_t, it_handle_type_enum_t *));
    TOUCH_FN(it_convert_net_addr, it_status_t,
             (const it_net_addr_t *, it_net_addr_type_t, it_net_addr_t *));
    TOUCH_FN(it_hton64, uint64_t, (uint64_t));
    TOUCH_FN(it_ntoh64, uint64_t, (uint64_t));

    /* Generic names mapped by the 2.1 binding. */
    TOUCH_FN(it_lmr_create, it_status_t,
             (it_pz_handle_t, void *, it_iobl_t *, it_length_t, it_addr_mode_t,
              it_mem_priv_t, it_lmr_flag_t, uint32_t, it_lmr_handle_t *,
              it_rmr_context_t *));
    TOUCH_FN(it_rmr_create, it_status_t,
             (it_pz_handle_t, it_rmr_type_t, it_rmr_handle_t *));
    TOUCH_FN(it_rmr_bind, it_status_t,
             (it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
              it_addr_mode_t, it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
              it_dto_flags_t, it_rmr_context_t *));

    /* 1.0 names, mapped in every binding. */
    TOUCH_FN(it_make_rdma_addr, it_rdma_addr_t, (void *));
    TOUCH_FN(it_lmr_sync_rdma_read, it_status_t,
             (const it_lmr_triplet_t *, size_t));
    TOUCH_FN(it_lmr_sync_rdma_write, it_status_t,
             (const it_lmr_triplet_t *, size_t));
    TOUCH_FN(it_rmr_unbind, it_status_t,
             (it_rmr_handle_t, it_ep_handle_t, it_dto_cookie_t,
              it_dto_flags_t));
}

/* ------------------------------------------------------------------------ */
/* Constants and enumerators                                                */
/* ------------------------------------------------------------------------ */

#define TOUCH_STATUS_(name, message) \
    do { it_status_t s_ = name; const char *m_ = message; \
         touch_bytes(&s_, sizeof s_); touch_bytes(m_, strlen(m_)); \
         touched++; } while (0);

static void touch_constants(void)
{
    it_handle_t null_handle = IT_NULL_HANDLE;
    int in_out_a = 0, in_out_b = 1;

    TOUCH_VALUE(IT_MAX_VIA_DISC_LEN);
    TOUCH_VALUE(IT_MAX_VIA_ADDR_LEN);
    TOUCH_VALUE(IT_MAX_PRIV_DATA);
    TOUCH_VALUE(IT_INTERFACE_NAME_SIZE);
    TOUCH_VALUE(IT_HARD_HI_WATERMARK_DISABLE);
    TOUCH_VALUE(IT_EVENT_STREAM_MASK);
    TOUCH_VALUE(IT_TIMEOUT_INFINITE);
    TOUCH_VALUE(IT_THRESHOLD_DISABLE);
    touch_bytes(&null_handle, sizeof null_handle);
    touched++;
    TOUCH_VALUE(touch_in_out(3, &in_out_a, &in_out_b));   /* IN, OUT */
    touched += 2;

    /* it_status_t: every entry of the X-macro list. */
    IT_STATUS_LIST(TOUCH_STATUS_)
    touched++;   /* IT_STATUS_LIST itself */

    TOUCH_ENUM(it_boolean_t, IT_FALSE);
    TOUCH_ENUM(it_boolean_t, IT_TRUE);

    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_NONE);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_LOCAL_READ);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_LOCAL_WRITE);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_LOCAL);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_DEFAULT);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_REMOTE_READ);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_REMOTE_WRITE);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_REMOTE);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_ATOMIC);
    TOUCH_ENUM(it_mem_priv_t, IT_PRIV_ALL);

    TOUCH_ENUM(it_lmr_flag_t, IT_LMR_FLAG_NONE);
    TOUCH_ENUM(it_lmr_flag_t, IT_LMR_FLAG_SHARED);
    TOUCH_ENUM(it_lmr_flag_t, IT_LMR_FLAG_NONCOHERENT);
    TOUCH_ENUM(it_lmr_flag_t, IT_LMR_FLAG_NON_SHAREABLE);

    TOUCH_ENUM(it_rmr_type_t, IT_RMR_TYPE_DEFAULT);
    TOUCH_ENUM(it_rmr_type_t, IT_RMR_TYPE_NARROW);
    TOUCH_ENUM(it_rmr_type_t, IT_RMR_TYPE_WIDE);

    TOUCH_ENUM(it_addr_mode_t, IT_ADDR_MODE_ABSOLUTE);
    TOUCH_ENUM(it_addr_mode_t, IT_ADDR_MODE_RELATIVE);

    TOUCH_ENUM(it_iobl_type_t, IT_IOBL_PAGE_LIST);
    TOUCH_ENUM(it_iobl_type_t, IT_IOBL_BLOCK_LIST);
    TOUCH_ENUM(it_iobl_type_t, IT_IOBL_VE_PAGE_LIST);

    TOUCH_ENUM(it_dto_status_t, IT_DTO_SUCCESS);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_LOCAL_LENGTH);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_LOCAL_EP);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_LOCAL_PROTECTION);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_FLUSHED);
    TOUCH_ENUM(it_dto_status_t, IT_RMR_OPERATION_FAILED);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_BAD_RESPONSE);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_REMOTE_ACCESS);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_REMOTE_RESPONDER);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_TRANSPORT);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_RECEIVER_NOT_READY);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_PARTIAL_PACKET);
    TOUCH_ENUM(it_dto_status_t, IT_DTO_ERR_LOCAL_MM_OPERATION);

    TOUCH_ENUM(it_dto_flags_t, IT_COMPLETION_FLAG);
    TOUCH_ENUM(it_dto_flags_t, IT_NOTIFY_FLAG);
    TOUCH_ENUM(it_dto_flags_t, IT_SOLICITED_WAIT_FLAG);
    TOUCH_ENUM(it_dto_flags_t, IT_BARRIER_FENCE_FLAG);
    TOUCH_ENUM(it_dto_flags_t, IT_UNLINK_FENCE_FLAG);
    TOUCH_ENUM(it_dto_flags_t, IT_UNLINK_LOCAL_SINK);
    TOUCH_ENUM(it_dto_flags_t, IT_COALESCE_WR_FLAG);

    TOUCH_ENUM(it_atomic_op_t, IT_COMPARE_AND_SWAP);
    TOUCH_ENUM(it_atomic_op_t, IT_FETCH_AND_ADD);

    TOUCH_ENUM(it_dto_ud_flags_t, IT_UD_IB_GRH_PRESENT);

    TOUCH_ENUM(it_conn_qual_type_t, IT_IANA_PORT);
    TOUCH_ENUM(it_conn_qual_type_t, IT_IB_SERVICEID);
    TOUCH_ENUM(it_conn_qual_type_t, IT_VIA_DISCRIMINATOR);
    TOUCH_ENUM(it_conn_qual_type_t, IT_IANA_LR_PORT);

    TOUCH_ENUM(it_net_addr_type_t, IT_IPV4);
    TOUCH_ENUM(it_net_addr_type_t, IT_IPV6);
    TOUCH_ENUM(it_net_addr_type_t, IT_IB_GID);
    TOUCH_ENUM(it_net_addr_type_t, IT_VIA_HOSTADDR);

    TOUCH_ENUM(it_transport_type_t, IT_IB_TRANSPORT);
    TOUCH_ENUM(it_transport_type_t, IT_VIA_IP_TRANSPORT);
    TOUCH_ENUM(it_transport_type_t, IT_VIA_FC_TRANSPORT);
    TOUCH_ENUM(it_transport_type_t, IT_IWARP_TCP_TRANSPORT);
    TOUCH_ENUM(it_transport_type_t, IT_VENDOR_TRANSPORT);

    TOUCH_ENUM(it_transport_service_type_t, IT_RC_SERVICE);
    TOUCH_ENUM(it_transport_service_type_t, IT_UD_SERVICE);

    TOUCH_ENUM(it_ip_vers_t, IT_IP_VERS_IPV4);
    TOUCH_ENUM(it_ip_vers_t, IT_IP_VERS_IPV6);

    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_UNCONNECTED);
    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_ACTIVE1_CONNECTION_PENDING);
    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_ACTIVE2_CONNECTION_PENDING);
    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_PASSIVE_CONNECTION_PENDING);
    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_CONNECTED);
    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_NONOPERATIONAL);
    TOUCH_ENUM(it_ep_state_rc_t, IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ);

    TOUCH_ENUM(it_ep_state_ud_t, IT_EP_STATE_UD_NONOPERATIONAL);
    TOUCH_ENUM(it_ep_state_ud_t, IT_EP_STATE_UD_OPERATIONAL);

    TOUCH_ENUM(it_ep_rc_creation_flags_t, IT_EP_NO_FLAG);
    TOUCH_ENUM(it_ep_rc_creation_flags_t, IT_EP_REUSEADDR);
    TOUCH_ENUM(it_ep_rc_creation_flags_t, IT_EP_SRQ);

    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_ALL);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_IA);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_SPIGOT);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_STATE);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_SERV_TYPE);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_PATH);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_PZ);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_REQ_SEVD);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_RECV_SEVD);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_CONN_SEVD);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_RDMA_RD_ENABLE);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_RDMA_WR_ENABLE);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_RDMA_READ_SEG);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_RDMA_WRITE_SEG);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_IRD);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_ORD);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_EP_ID);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_EP_KEY);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_PAYLOAD);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_REQ_DTO);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_RECV_DTO);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_SEND_SEG);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_MAX_RECV_SEG);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_SRQ);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_SOFT_HI_WATERMARK);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_HARD_HI_WATERMARK);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_ATOMICS_ENABLE);
    TOUCH_ENUM(it_ep_param_mask_t, IT_EP_PARAM_PRIV_OPS_ENABLE);

    TOUCH_ENUM(it_cn_est_flags_t, IT_CONNECT_FLAG_TWO_WAY);
    TOUCH_ENUM(it_cn_est_flags_t, IT_CONNECT_FLAG_THREE_WAY);
    TOUCH_ENUM(it_cn_est_flags_t, IT_CONNECT_SUPPRESS_IRD_ORD);

    TOUCH_ENUM(it_listen_flags_t, IT_LISTEN_NO_FLAG);
    TOUCH_ENUM(it_listen_flags_t, IT_LISTEN_CONN_QUAL_INPUT);
    TOUCH_ENUM(it_listen_flags_t, IT_LISTEN_SUPPRESS_IRD_ORD);

    TOUCH_ENUM(it_listen_param_mask_t, IT_LISTEN_PARAM_ALL);
    TOUCH_ENUM(it_listen_param_mask_t, IT_LISTEN_PARAM_IA_HANDLE);
    TOUCH_ENUM(it_listen_param_mask_t, IT_LISTEN_PARAM_SPIGOT_ID);
    TOUCH_ENUM(it_listen_param_mask_t, IT_LISTEN_PARAM_CONNECT_EVD);
    TOUCH_ENUM(it_listen_param_mask_t, IT_LISTEN_PARAM_CONN_QUAL);

    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_OTHER);
    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_TIMEOUT);
    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_BAD_PATH);
    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_STALE_CONN);
    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_BAD_ORD);
    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_RESOURCES);
    TOUCH_ENUM(it_conn_reject_code_t, IT_CN_REJ_BAD_CONN_PARMS);

    TOUCH_ENUM(it_sc_flags_t, IT_SC_DEFAULT);
    TOUCH_ENUM(it_sc_flags_t, IT_SC_NO_REQ_REP);

    TOUCH_ENUM(it_dg_type_t, IT_DG_TYPE_IB_UD);

    TOUCH_ENUM(it_ah_flags_t, IT_AH_PATH_COMPLETE);

    TOUCH_ENUM(it_addr_param_mask_t, IT_ADDR_PARAM_ALL);
    TOUCH_ENUM(it_addr_param_mask_t, IT_ADDR_PARAM_IA);
    TOUCH_ENUM(it_addr_param_mask_t, IT_ADDR_PARAM_PZ);
    TOUCH_ENUM(it_addr_param_mask_t, IT_ADDR_PARAM_PATH);

    TOUCH_ENUM(it_ud_svc_req_status_t, IT_UD_SVC_EP_INFO_VALID);
    TOUCH_ENUM(it_ud_svc_req_status_t, IT_UD_SVC_ID_NOT_SUPPORTED);
    TOUCH_ENUM(it_ud_svc_req_status_t, IT_UD_SVC_REQ_REJECTED);
    TOUCH_ENUM(it_ud_svc_req_status_t, IT_UD_NO_EP_AVAILABLE);
    TOUCH_ENUM(it_ud_svc_req_status_t, IT_UD_REQ_REDIRECTED);

    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_ALL);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_IA_HANDLE);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_REQ_ID);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_REPLY_EVD);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_CONN_QUAL);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_DEST_PATH);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_PRIV_DATA);
    TOUCH_ENUM(it_ud_svc_req_param_mask_t, IT_UD_PARAM_PRIV_DATA_LENGTH);

    TOUCH_ENUM(it_pz_param_mask_t, IT_PZ_PARAM_ALL);
    TOUCH_ENUM(it_pz_param_mask_t, IT_PZ_PARAM_IA);

    TOUCH_ENUM(it_event_type_t, IT_DTO_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_DTO_SEND_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_DTO_RC_RECV_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_DTO_UD_RECV_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_DTO_RDMA_WRITE_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_DTO_RDMA_READ_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_RMR_LINK_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_RMR_BIND_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_DTO_FETCH_ADD_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_DTO_CMP_SWAP_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_LMR_LINK_CMPL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_REQ_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_CM_REQ_CONN_REQUEST_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_CONN_DISCONNECT_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_CONN_BROKEN_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_FAILURE);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_REQ_DROPPED);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_L_IRRQ_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_L_LLP_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_R_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_SRQ_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_SRQ_LOW_WATERMARK);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_SRQ_CATASTROPHIC);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_SEVD_FULL_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_SEVD_OP_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_AFF_EP_SEVD_FULL_ERROR);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_UNAFF_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_UNAFF_SPIGOT_ONLINE);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_UNAFF_SPIGOT_OFFLINE);
    TOUCH_ENUM(it_event_type_t, IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE);
    TOUCH_ENUM(it_event_type_t, IT_SOFTWARE_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_SOFTWARE_EVENT);
    TOUCH_ENUM(it_event_type_t, IT_AEVD_NOTIFICATION_EVENT_STREAM);
    TOUCH_ENUM(it_event_type_t, IT_AEVD_NOTIFICATION_EVENT);

    TOUCH_ENUM(it_evd_flags_t, IT_EVD_DEQUEUE_NOTIFICATIONS);
    TOUCH_ENUM(it_evd_flags_t, IT_EVD_CREATE_FD);
    TOUCH_ENUM(it_evd_flags_t, IT_EVD_OVERFLOW_DEFAULT);
    TOUCH_ENUM(it_evd_flags_t, IT_EVD_OVERFLOW_NOTIFY);
    TOUCH_ENUM(it_evd_flags_t, IT_EVD_OVERFLOW_AUTO_RESET);

    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_ALL);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_IA);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_EVENT_NUMBER);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_FLAG);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_QUEUE_SIZE);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_THRESHOLD);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_AEVD_HANDLE);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_FD);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_BOUND);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_ENABLED);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_OVERFLOWED);
    TOUCH_ENUM(it_evd_param_mask_t, IT_EVD_PARAM_CALLBACK);

    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_ALL);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_IA);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_PZ);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_ADDR);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_LENGTH);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_MEM_PRIV);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_FLAG);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_SHARED_ID);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_RMR_CONTEXT);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_ACTUAL_ADDR);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_ACTUAL_LENGTH);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_ADDR_MODE);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_LINKED);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_IOBL_NUM_ELTS);
    TOUCH_ENUM(it_lmr_param_mask_t, IT_LMR_PARAM_IOBL_TYPE);

    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_ALL);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_IA);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_PZ);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_LINKED);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_BOUND);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_LMR);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_ADDR);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_LENGTH);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_MEM_PRIV);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_RMR_CONTEXT);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_TYPE);
    TOUCH_ENUM(it_rmr_param_mask_t, IT_RMR_PARAM_ADDR_MODE);

    TOUCH_ENUM(it_srq_param_mask_t, IT_SRQ_PARAM_ALL);
    TOUCH_ENUM(it_srq_param_mask_t, IT_SRQ_PARAM_IA);
    TOUCH_ENUM(it_srq_param_mask_t, IT_SRQ_PARAM_PZ);
    TOUCH_ENUM(it_srq_param_mask_t, IT_SRQ_PARAM_MAX_RECV_DTO);
    TOUCH_ENUM(it_srq_param_mask_t, IT_SRQ_PARAM_MAX_RECV_SEG);
    TOUCH_ENUM(it_srq_param_mask_t, IT_SRQ_PARAM_LOW_WATERMARK);

    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_ADDR);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_EP);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_EVD);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_IA);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_LISTEN);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_LMR);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_PZ);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_RMR);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_UD_SVC_REQ);
    TOUCH_ENUM(it_handle_type_enum_t, IT_HANDLE_TYPE_SRQ);
}

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

static void touch_types(void)
{
    TOUCH_TYPE(it_status_t);
    TOUCH_TYPE(it_rmr_context_t);
    TOUCH_TYPE(it_length_t);
    TOUCH_TYPE(it_rdma_addr_t);
    TOUCH_TYPE(it_ud_svc_req_identifier_t);
    TOUCH_TYPE(it_cn_est_identifier_t);
    TOUCH_TYPE(it_ib_serviceid_t);
    TOUCH_TYPE(it_ud_ep_id_t);
    TOUCH_TYPE(it_ud_ep_key_t);
    TOUCH_TYPE(it_ib_gid_t);
    TOUCH_TYPE(it_dto_cookie_t);
    TOUCH_TYPE(it_handle_t);
    TOUCH_TYPE(it_addr_handle_t);
    TOUCH_TYPE(it_ep_handle_t);
    TOUCH_TYPE(it_evd_handle_t);
    TOUCH_TYPE(it_ia_handle_t);
    TOUCH_TYPE(it_listen_handle_t);
    TOUCH_TYPE(it_lmr_handle_t);
    TOUCH_TYPE(it_pz_handle_t);
    TOUCH_TYPE(it_rmr_handle_t);
    TOUCH_TYPE(it_ud_svc_req_handle_t);
    TOUCH_TYPE(it_srq_handle_t);
    TOUCH_TYPE(it_io_addr_t);
    TOUCH_TYPE(it_context_t);
    TOUCH_TYPE(it_boolean_t);
    TOUCH_TYPE(it_mem_priv_t);
    TOUCH_TYPE(it_lmr_flag_t);
    TOUCH_TYPE(it_addr_mode_t);
    TOUCH_TYPE(it_iobl_type_t);
    TOUCH_TYPE(it_rmr_type_t);
    TOUCH_TYPE(it_dto_status_t);
    TOUCH_TYPE(it_dto_flags_t);
    TOUCH_TYPE(it_atomic_op_t);
    TOUCH_TYPE(it_dto_ud_flags_t);
    TOUCH_TYPE(it_conn_qual_type_t);
    TOUCH_TYPE(it_via_discriminator_t);
    TOUCH_TYPE(it_iana_lr_port_t);
    TOUCH_TYPE(it_conn_qual_t);
    TOUCH_TYPE(it_net_addr_type_t);
    TOUCH_TYPE(it_via_net_addr_t);
    TOUCH_TYPE(it_net_addr_t);
    TOUCH_TYPE(it_transport_type_t);
    TOUCH_TYPE(it_transport_service_type_t);
    TOUCH_TYPE(it_ip_vers_t);
    TOUCH_TYPE(it_ib_net_endpoint_t);
    TOUCH_TYPE(it_via_net_endpoint_t);
    TOUCH_TYPE(it_iwarp_net_endpoint_t);
    TOUCH_TYPE(itx_path_remote_t);
    TOUCH_TYPE(it_path_t);
    TOUCH_TYPE(it_spigot_info_t);
    TOUCH_TYPE(it_vendor_ib_t);
    TOUCH_TYPE(it_vendor_via_t);
    TOUCH_TYPE(it_vendor_iwarp_tcp_t);
    TOUCH_TYPE(it_ia_info_t);
    TOUCH_TYPE(it_interface_t);
    TOUCH_TYPE(it_lmr_triplet_t);
    TOUCH_TYPE(it_rmr_triplet_t);
    TOUCH_TYPE(it_iobl_ve_elt_t);
    TOUCH_TYPE(it_iobl_t);
    TOUCH_TYPE(it_rc_only_attributes_t);
    TOUCH_TYPE(it_remote_ep_info_t);
    TOUCH_TYPE(it_ud_only_attributes_t);
    TOUCH_TYPE(it_service_attributes_t);
    TOUCH_TYPE(it_ep_attributes_t);
    TOUCH_TYPE(it_ep_state_rc_t);
    TOUCH_TYPE(it_ep_state_ud_t);
    TOUCH_TYPE(it_ep_state_t);
    TOUCH_TYPE(it_ep_param_t);
    TOUCH_TYPE(it_ep_rc_creation_flags_t);
    TOUCH_TYPE(it_ep_param_mask_t);
    TOUCH_TYPE(it_ib_conn_attributes_t);
    TOUCH_TYPE(it_via_conn_attributes_t);
    TOUCH_TYPE(it_iwarp_conn_attributes_t);
    TOUCH_TYPE(it_conn_attributes_t);
    TOUCH_TYPE(it_cn_est_flags_t);
    TOUCH_TYPE(it_listen_flags_t);
    TOUCH_TYPE(it_listen_param_mask_t);
    TOUCH_TYPE(it_listen_param_t);
    TOUCH_TYPE(it_conn_reject_code_t);
    TOUCH_TYPE(it_sc_flags_t);
    TOUCH_TYPE(it_ib_ud_addr_t);
    TOUCH_TYPE(it_dg_type_t);
    TOUCH_TYPE(it_dg_remote_ep_addr_t);
    TOUCH_TYPE(it_ah_flags_t);
    TOUCH_TYPE(it_addr_param_mask_t);
    TOUCH_TYPE(it_addr_param_t);
    TOUCH_TYPE(it_ud_svc_req_status_t);
    TOUCH_TYPE(it_ud_svc_req_param_mask_t);
    TOUCH_TYPE(it_ud_svc_req_param_t);
    TOUCH_TYPE(it_pz_param_mask_t);
    TOUCH_TYPE(it_pz_param_t);
    TOUCH_TYPE(it_event_type_t);
    TOUCH_TYPE(it_evd_flags_t);
    TOUCH_TYPE(it_evd_param_mask_t);
    TOUCH_TYPE(it_evd_param_t);
    TOUCH_TYPE(it_lmr_param_mask_t);
    TOUCH_TYPE(it_lmr_param_t);
    TOUCH_TYPE(it_rmr_param_mask_t);
    TOUCH_TYPE(it_rmr_param_t);
    TOUCH_TYPE(it_srq_param_mask_t);
    TOUCH_TYPE(it_srq_param_t);
    TOUCH_TYPE(it_handle_type_enum_t);
    TOUCH_TYPE(it_any_event_t);
    TOUCH_TYPE(it_dto_cmpl_event_t);
    TOUCH_TYPE(it_all_dto_cmpl_event_t);
    TOUCH_TYPE(it_conn_request_event_t);
    TOUCH_TYPE(it_ud_svc_request_event_t);
    TOUCH_TYPE(it_connection_event_t);
    TOUCH_TYPE(it_ud_svc_reply_event_t);
    TOUCH_TYPE(it_affiliated_event_t);
    TOUCH_TYPE(it_unaffiliated_event_t);
    TOUCH_TYPE(it_software_event_t);
    TOUCH_TYPE(it_aevd_notification_event_t);
    TOUCH_TYPE(it_event_t);
    TOUCH_TYPE(it_evd_callback_rtn_t);
}

/* ------------------------------------------------------------------------ */
/* Structure fields                                                         */
/* ------------------------------------------------------------------------ */

static void touch_fields(void)
{
    static char name_buffer[] = "ia0";
    static it_net_addr_t addr_array[1];
    static it_spigot_info_t spigot_array[1];
    static it_io_addr_t io_array[1];
    static it_iobl_ve_elt_t ve_array[1];
    static int user_data;

    /* Scalars, handles and context. */
    it_context_t ctx;
    it_via_discriminator_t disc;
    it_iana_lr_port_t lr;
    it_conn_qual_t cq;
    it_via_net_addr_t vna;
    it_net_addr_t na;
    it_ib_net_endpoint_t ibep;
    it_via_net_endpoint_t viaep;
    it_iwarp_net_endpoint_t iwep;
    itx_path_remote_t rem;
    it_path_t path;
    it_spigot_info_t spigot;
    it_vendor_ib_t vib;
    it_vendor_via_t vvia;
    it_vendor_iwarp_tcp_t viw;
    it_ia_info_t info;
    it_interface_t itf;
    it_lmr_triplet_t lt;
    it_rmr_triplet_t rt;
    it_iobl_ve_elt_t ve;
    it_iobl_t iobl;
    it_rc_only_attributes_t rc;
    it_remote_ep_info_t epi;
    it_ud_only_attributes_t ud;
    it_service_attributes_t srv;
    it_ep_attributes_t attr;
    it_ep_state_t st;
    it_ep_param_t epp;
    it_ib_conn_attributes_t ibca;
    it_via_conn_attributes_t viaca;
    it_iwarp_conn_attributes_t iwca;
    it_conn_attributes_t ca;
    it_listen_param_t lp;
    it_ib_ud_addr_t uda;
    it_dg_remote_ep_addr_t dga;
    it_addr_param_t ap;
    it_ud_svc_req_param_t usp;
    it_pz_param_t pzp;
    it_evd_param_t evp;
    it_lmr_param_t lmp;
    it_rmr_param_t rmp;
    it_srq_param_t srp;
    it_event_t ev;
    it_evd_callback_rtn_t cb;

    ZERO(ctx);
    SET(ctx.ptr, (void *) &user_data);
    SET(ctx.index, 42u);
    FOLD(ctx);

    ZERO(disc);
    SET(disc.len, 1);
    SET(disc.discriminator[0], 0xd1);
    FOLD(disc);

    ZERO(lr);
    SET(lr.local, htons(4000));
    SET(lr.remote, htons(5000));
    FOLD(lr);

    ZERO(cq);
    SET(cq.type, IT_IANA_LR_PORT);
    SET(cq.conn_qual.port, htons(80));
    SET(cq.conn_qual.serviceid, 0x1234u);
    SET(cq.conn_qual.discriminator, disc);
    SET(cq.conn_qual.discriminator.len, 2);
    SET(cq.conn_qual.discriminator.discriminator[1], 0xd2);
    SET(cq.conn_qual.lr_port, lr);
    SET(cq.conn_qual.lr_port.local, 0);
    SET(cq.conn_qual.lr_port.remote, htons(6000));
    FOLD(cq);

    ZERO(vna);
    SET(vna.len, 4);
    SET(vna.hostaddr[3], 7);
    FOLD(vna);

    ZERO(na);
    SET(na.addr_type, IT_IPV4);
    SET(na.addr.ipv4.s_addr, htonl(0x7f000001u));
    SET(na.addr.ipv6.s6_addr[15], 1);
    SET(na.addr.gid.s6_addr[0], 0xfe);
    SET(na.addr.via, vna);
    SET(na.addr.via.len, 3);
    SET(na.addr.via.hostaddr[0], 9);
    FOLD(na);

    ZERO(ibep);
    SET(ibep.partition_key, 0xffff);
    SET(ibep.path_mtu, 5);
    SET(ibep.packet_lifetime, 18);
    SET(ibep.local_port_lid, 1);
    SET(ibep.remote_port_lid, 2);
    SET(ibep.local_port_gid.s6_addr[0], 0xfe);
    SET(ibep.remote_port_gid.s6_addr[1], 0x80);
    SET(ibep.packet_rate, 3);
    SET(ibep.sl, 15);
    SET(ibep.subnet_local, 1);
    SET(ibep.flow_label, 0xfffff);
    SET(ibep.traffic_class, 4);
    SET(ibep.hop_limit, 64);
    FOLD(ibep);

    ZERO(viaep);
    SET(viaep.len, 1);
    SET(viaep.hostaddr[0], 1);
    FOLD(viaep);

    ZERO(iwep);
    SET(iwep.ip_vers, IT_IP_VERS_IPV4);
    SET(iwep.laddr.ipv4.s_addr, htonl(0x0a000001u));
    SET(iwep.laddr.ipv6.s6_addr[0], 0x20);
    SET(iwep.raddr.ipv4.s_addr, htonl(0x0a000002u));
    SET(iwep.raddr.ipv6.s6_addr[0], 0x20);
    FOLD(iwep);

    ZERO(rem);
    SET(rem.ib, ibep);
    SET(rem.via, viaep);
    SET(rem.iwarp, iwep);
    FOLD(rem);

    ZERO(path);
    SET(path.spigot_id, 0);
    SET(path.timeout, 1000000u);
    SET(path.remote, rem);
    SET(path.remote.ib.partition_key, 0x7fff);
    SET(path.remote.ib.path_mtu, 4);
    SET(path.remote.ib.packet_lifetime, 1);
    SET(path.remote.ib.local_port_lid, 3);
    SET(path.remote.ib.remote_port_lid, 4);
    SET(path.remote.ib.local_port_gid.s6_addr[2], 1);
    SET(path.remote.ib.remote_port_gid.s6_addr[3], 2);
    SET(path.remote.ib.packet_rate, 2);
    SET(path.remote.ib.sl, 0);
    SET(path.remote.ib.subnet_local, 0);
    SET(path.remote.ib.flow_label, 5);
    SET(path.remote.ib.traffic_class, 6);
    SET(path.remote.ib.hop_limit, 7);
    SET(path.remote.via.len, 1);
    SET(path.remote.via.hostaddr[0], 2);
    SET(path.remote.iwarp.ip_vers, IT_IP_VERS_IPV6);
    SET(path.remote.iwarp.laddr.ipv4.s_addr, htonl(0x0a000003u));
    SET(path.remote.iwarp.laddr.ipv6.s6_addr[15], 3);
    SET(path.remote.iwarp.raddr.ipv4.s_addr, htonl(0x0a000004u));
    SET(path.remote.iwarp.raddr.ipv6.s6_addr[15], 4);
    /* Project extension: the SKV spelling of the same union. */
    SET(path.u.iwarp.raddr.ipv4.s_addr, htonl(0x0a000005u));
    SET(path.u.ib.sl, 1);
    FOLD(path);

    ZERO(spigot);
    SET(spigot.spigot_id, 1);
    SET(spigot.max_rc_send_len, 1u << 20);
    SET(spigot.max_rc_rdma_len, 1u << 30);
    SET(spigot.max_ud_send_len, 4096);
    SET(spigot.spigot_online, IT_TRUE);
    SET(spigot.active_side_conn_qual, IT_IANA_LR_PORT);
    SET(spigot.passive_side_conn_qual, IT_IANA_PORT);
    SET(spigot.num_net_addr, 1);
    SET(spigot.net_addr, addr_array);
    FOLD(spigot);

    ZERO(vib);
    SET(vib.vendor, 0x02c9);
    SET(vib.device, 0x1003);
    SET(vib.revision, 1);
    FOLD(vib);

    ZERO(vvia);
    SET(vvia.name[0], 'v');
    SET(vvia.hardware, 1ul);
    SET(vvia.provider, 2ul);
    FOLD(vvia);

    ZERO(viw);
    SET(viw.valid_vid, IT_TRUE);
    SET(viw.vid[0], 0x11);
    FOLD(viw);

    ZERO(info);
    SET(info.ia_name, name_buffer);
    SET(info.api_major_version, 2);
    SET(info.api_minor_version, 1);
    SET(info.sw_major_version, 0);
    SET(info.sw_minor_version, 1);
    SET(info.vendor.ib, vib);
    SET(info.vendor.ib.vendor, 0x1234);
    SET(info.vendor.ib.device, 2);
    SET(info.vendor.ib.revision, 3);
    SET(info.vendor.via, vvia);
    SET(info.vendor.via.name[1], 'i');
    SET(info.vendor.via.hardware, 3ul);
    SET(info.vendor.via.provider, 4ul);
    SET(info.vendor.iwarp, viw);
    SET(info.vendor.iwarp.valid_vid, IT_FALSE);
    SET(info.vendor.iwarp.vid[1], 0x22);
    SET(info.dto_alignment_hint, 64);
    SET(info.transport_type, IT_IWARP_TCP_TRANSPORT);
    SET(info.supported_service_types, IT_RC_SERVICE);
    SET(info.ep_work_queues_resizable, IT_FALSE);
    SET(info.three_way_handshake_support, IT_FALSE);
    SET(info.private_data_support, IT_TRUE);
    SET(info.max_message_size_support, IT_FALSE);
    SET(info.ird_ord_ia_support, IT_TRUE);
    SET(info.ird_ord_suppressible, IT_FALSE);
    SET(info.spigot_online_support, IT_TRUE);
    SET(info.spigot_offline_support, IT_TRUE);
    SET(info.connect_private_data_len, 512);
    SET(info.accept_private_data_len, 512);
    SET(info.reject_private_data_len, 512);
    SET(info.disconnect_private_data_len, 0);
    SET(info.ud_req_private_data_len, 0);
    SET(info.ud_rep_private_data_len, 0);
    SET(info.num_spigots, 1);
    SET(info.spigot_info, spigot_array);
    SET(info.affiliated_err_evd, FAKE(it_evd_handle_t, 0));
    SET(info.unaffiliated_err_evd, FAKE(it_evd_handle_t, 1));
    SET(info.srq_support, IT_TRUE);
    SET(info.hard_hi_watermark_support, IT_TRUE);
    SET(info.soft_hi_watermark_support, IT_TRUE);
    SET(info.srq_resizable, IT_FALSE);
    SET(info.extended_iwarp_qp_states, IT_FALSE);
    SET(info.socket_conversion_support, IT_TRUE);
    SET(info.rdma_read_ord_increasable, IT_FALSE);
    SET(info.rdma_read_ird_modifiable, IT_FALSE);
    SET(info.rmr_types_supported, IT_RMR_TYPE_NARROW);
    SET(info.addr_mode_relative_support, IT_TRUE);
    SET(info.rdma_read_requires_remote_write, IT_TRUE);
    SET(info.ep_rdma_enables_modifiable, IT_TRUE);
    SET(info.rdma_read_local_extensions, IT_TRUE);
    SET(info.dto_evd_overflow_detection, IT_TRUE);
    SET(info.atomic_support, IT_FALSE);
    SET(info.lmr_link_support, IT_TRUE);
    SET(info.direct_lmr_handle_support, IT_FALSE);
    SET(info.direct_lmr_handle, FAKE(it_lmr_handle_t, 2));
    SET(info.post_send_unlink_remote_support, IT_TRUE);
    SET(info.narrow_rmr_unlink_support, IT_TRUE);
    SET(info.wide_rmr_unlink_support, IT_FALSE);
    SET(info.unlink_fence_support, IT_TRUE);
    SET(info.iobl_types_supported, IT_IOBL_PAGE_LIST);
    /* 1.0 field names. */
    SET(info.ird_support, IT_TRUE);
    SET(info.ord_support, IT_TRUE);
    FOLD(info);

    ZERO(itf);
    SET(itf.major_version, 2);
    SET(itf.minor_version, 1);
    SET(itf.transport_type, IT_IB_TRANSPORT);
    SET(itf.name[IT_INTERFACE_NAME_SIZE - 1], '\0');
    FOLD(itf);

    ZERO(lt);
    SET(lt.lmr, FAKE(it_lmr_handle_t, 3));
    SET(lt.addr.abs, (void *) name_buffer);
    SET(lt.addr.rel, 16u);
    SET(lt.addr.io, FAKE(it_io_addr_t, 4));
    SET(lt.length, 4u);
    FOLD(lt);

    ZERO(rt);
    SET(rt.rmr, FAKE(it_rmr_handle_t, 5));
    SET(rt.addr.abs, (void *) name_buffer);
    SET(rt.addr.rel, 8u);
    SET(rt.length, 4u);
    FOLD(rt);

    ZERO(ve);
    SET(ve.io_addr, FAKE(it_io_addr_t, 6));
    SET(ve.elt_len, 4096u);
    FOLD(ve);

    ZERO(iobl);
    SET(iobl.iobl_type, IT_IOBL_VE_PAGE_LIST);
    SET(iobl.list.ce_list.list_elt, io_array);
    SET(iobl.list.ce_list.elt_len, 4096u);
    SET(iobl.list.ve_list.list_elt, ve_array);
    SET(iobl.num_elts, 1);
    SET(iobl.fbo, 0u);
    FOLD(iobl);

    ZERO(rc);
    SET(rc.rdma_read_enable, IT_TRUE);
    SET(rc.rdma_write_enable, IT_TRUE);
    SET(rc.max_rdma_read_segments, 1);
    SET(rc.max_rdma_write_segments, 4);
    SET(rc.rdma_read_ird, 8);
    SET(rc.rdma_read_ord, 8);
    SET(rc.srq, FAKE(it_srq_handle_t, 7));
    SET(rc.soft_hi_watermark, 100);
    SET(rc.hard_hi_watermark, IT_HARD_HI_WATERMARK_DISABLE);
    SET(rc.atomics_enable, IT_FALSE);
    /* 1.0 field names. */
    SET(rc.rdma_read_inflight_incoming, 4);
    SET(rc.rdma_read_inflight_outgoing, 4);
    FOLD(rc);

    ZERO(epi);
    SET(epi.ud_ep_id, 0x55);
    SET(epi.ud_ep_key, 0x11111111u);
    FOLD(epi);

    ZERO(ud);
    SET(ud.ep_info, epi);
    SET(ud.ep_info.ud_ep_id, 0x56);
    SET(ud.ep_info.ud_ep_key, 0x22222222u);
    FOLD(ud);

    ZERO(srv);
    SET(srv.rc, rc);
    SET(srv.ud, ud);
    FOLD(srv);

    ZERO(attr);
    SET(attr.max_dto_payload_size, 1u << 16);
    SET(attr.max_request_dtos, 64);
    SET(attr.max_recv_dtos, 64);
    SET(attr.max_send_segments, 4);
    SET(attr.max_recv_segments, 4);
    SET(attr.srv, srv);
    SET(attr.srv.rc.rdma_read_enable, IT_FALSE);
    SET(attr.srv.rc.rdma_write_enable, IT_FALSE);
    SET(attr.srv.rc.max_rdma_read_segments, 2);
    SET(attr.srv.rc.max_rdma_write_segments, 2);
    SET(attr.srv.rc.rdma_read_ird, 2);
    SET(attr.srv.rc.rdma_read_ord, 2);
    SET(attr.srv.rc.srq, FAKE(it_srq_handle_t, 8));
    SET(attr.srv.rc.soft_hi_watermark, 1);
    SET(attr.srv.rc.hard_hi_watermark, 2);
    SET(attr.srv.rc.atomics_enable, IT_TRUE);
    SET(attr.srv.ud.ep_info.ud_ep_id, 1);
    SET(attr.srv.ud.ep_info.ud_ep_key, 2);
    SET(attr.priv_ops_enable, IT_FALSE);
    FOLD(attr);

    ZERO(st);
    SET(st.rc, IT_EP_STATE_CONNECTED);
    SET(st.ud, IT_EP_STATE_UD_OPERATIONAL);
    FOLD(st);

    ZERO(epp);
    SET(epp.ia, FAKE(it_ia_handle_t, 9));
    SET(epp.spigot_id, 1);
    SET(epp.ep_state, st);
    SET(epp.ep_state.rc, IT_EP_STATE_UNCONNECTED);
    SET(epp.ep_state.ud, IT_EP_STATE_UD_NONOPERATIONAL);
    SET(epp.service_type, IT_RC_SERVICE);
    SET(epp.dst_path, path);
    SET(epp.dst_path.remote.iwarp.raddr.ipv4.s_addr, htonl(0x0a000006u));
    SET(epp.pz, FAKE(it_pz_handle_t, 10));
    SET(epp.request_sevd, FAKE(it_evd_handle_t, 11));
    SET(epp.recv_sevd, FAKE(it_evd_handle_t, 11));
    SET(epp.connect_sevd, FAKE(it_evd_handle_t, 12));
    SET(epp.attr, attr);
    SET(epp.attr.max_dto_payload_size, 1024);
    FOLD(epp);

    ZERO(ibca);
    SET(ibca.remote_cm_timeout, 20);
    SET(ibca.local_cm_timeout, 20);
    SET(ibca.retry_count, 7);
    SET(ibca.rnr_retry_count, 7);
    SET(ibca.max_cm_retries, 15);
    SET(ibca.local_ack_timeout, 14);
    FOLD(ibca);

    ZERO(viaca);
    SET(viaca.unused, (void *) 0);
    FOLD(viaca);

    ZERO(iwca);
    SET(iwca.unused, (void *) 0);
    FOLD(iwca);

    ZERO(ca);
    SET(ca.ib, ibca);
    SET(ca.ib.retry_count, 6);
    SET(ca.via, viaca);
    SET(ca.iwarp, iwca);
    FOLD(ca);

    ZERO(lp);
    SET(lp.ia_handle, FAKE(it_ia_handle_t, 9));
    SET(lp.spigot_id, 0);
    SET(lp.connect_evd, FAKE(it_evd_handle_t, 13));
    SET(lp.connect_qual, cq);
    SET(lp.connect_qual.conn_qual.port, htons(7000));
    FOLD(lp);

    ZERO(uda);
    SET(uda.addr, FAKE(it_addr_handle_t, 14));
    SET(uda.ep_info, epi);
    FOLD(uda);

    ZERO(dga);
    SET(dga.type, IT_DG_TYPE_IB_UD);
    SET(dga.addr.ud, uda);
    SET(dga.addr.ud.addr, FAKE(it_addr_handle_t, 15));
    SET(dga.addr.ud.ep_info.ud_ep_id, 3);
    FOLD(dga);

    ZERO(ap);
    SET(ap.ia, FAKE(it_ia_handle_t, 9));
    SET(ap.pz, FAKE(it_pz_handle_t, 10));
    SET(ap.path, path);
    FOLD(ap);

    ZERO(usp);
    SET(usp.ia, FAKE(it_ia_handle_t, 9));
    SET(usp.request_id, 1);
    SET(usp.reply_evd, FAKE(it_evd_handle_t, 12));
    SET(usp.conn_qual, cq);
    SET(usp.destination_path, path);
    SET(usp.private_data[IT_MAX_PRIV_DATA - 1], 0xee);
    SET(usp.private_data_length, IT_MAX_PRIV_DATA);
    FOLD(usp);

    ZERO(pzp);
    SET(pzp.ia, FAKE(it_ia_handle_t, 9));
    FOLD(pzp);

    ZERO(evp);
    SET(evp.ia, FAKE(it_ia_handle_t, 9));
    SET(evp.event_number, IT_DTO_EVENT_STREAM);
    SET(evp.evd_flag, IT_EVD_CREATE_FD);
    SET(evp.sevd_queue_size, 128);
    SET(evp.sevd_threshold, IT_THRESHOLD_DISABLE);
    SET(evp.aevd, FAKE(it_evd_handle_t, 0));
    SET(evp.fd, -1);
    SET(evp.evd_bound, IT_FALSE);
    SET(evp.evd_enabled, IT_TRUE);
    SET(evp.evd_overflowed, IT_FALSE);
    SET(evp.evd_callback, IT_FALSE);
    FOLD(evp);

    ZERO(lmp);
    SET(lmp.ia, FAKE(it_ia_handle_t, 9));
    SET(lmp.pz, FAKE(it_pz_handle_t, 10));
    SET(lmp.addr, (void *) name_buffer);
    SET(lmp.length, sizeof name_buffer);
    SET(lmp.privs, IT_PRIV_ALL);
    SET(lmp.flags, IT_LMR_FLAG_NONE);
    SET(lmp.shared_id, 0);
    SET(lmp.rmr_context, 0x1234u);
    SET(lmp.actual_addr, (void *) name_buffer);
    SET(lmp.actual_length, 4096u);
    SET(lmp.addr_mode, IT_ADDR_MODE_ABSOLUTE);
    SET(lmp.linked, IT_TRUE);
    SET(lmp.iobl_num_elts, 0);
    SET(lmp.iobl_type, IT_IOBL_BLOCK_LIST);
    FOLD(lmp);

    ZERO(rmp);
    SET(rmp.ia, FAKE(it_ia_handle_t, 9));
    SET(rmp.pz, FAKE(it_pz_handle_t, 10));
    SET(rmp.linked, IT_TRUE);
    SET(rmp.lmr, FAKE(it_lmr_handle_t, 3));
    SET(rmp.addr, (void *) name_buffer);
    SET(rmp.length, 2u);
    SET(rmp.privs, IT_PRIV_REMOTE);
    SET(rmp.rmr_context, 0x5678u);
    SET(rmp.type, IT_RMR_TYPE_WIDE);
    SET(rmp.addr_mode, IT_ADDR_MODE_RELATIVE);
    FOLD(rmp);

    ZERO(srp);
    SET(srp.ia, FAKE(it_ia_handle_t, 9));
    SET(srp.pz, FAKE(it_pz_handle_t, 10));
    SET(srp.max_recv_dtos, 256);
    SET(srp.max_recv_segs, 4);
    SET(srp.low_watermark, 16);
    FOLD(srp);

    /* Events: every member of every event structure. */
    ZERO(ev);
    SET(ev.event_number, IT_SOFTWARE_EVENT);

    SET(ev.any.event_number, IT_SOFTWARE_EVENT);
    SET(ev.any.evd, FAKE(it_evd_handle_t, 0));

    SET(ev.dto_cmpl.event_number, IT_DTO_SEND_CMPL_EVENT);
    SET(ev.dto_cmpl.evd, FAKE(it_evd_handle_t, 11));
    SET(ev.dto_cmpl.ep, FAKE(it_ep_handle_t, 1));
    SET(ev.dto_cmpl.cookie, 0xc00c1e);
    SET(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
    SET(ev.dto_cmpl.transferred_length, 100);
    SET(ev.dto_cmpl.unlinked_mr_handle, IT_NULL_HANDLE);

    SET(ev.all_dto_cmpl.event_number, IT_DTO_UD_RECV_CMPL_EVENT);
    SET(ev.all_dto_cmpl.evd, FAKE(it_evd_handle_t, 11));
    SET(ev.all_dto_cmpl.ep, FAKE(it_ep_handle_t, 1));
    SET(ev.all_dto_cmpl.cookie, 7);
    SET(ev.all_dto_cmpl.dto_status, IT_DTO_ERR_FLUSHED);
    SET(ev.all_dto_cmpl.transferred_length, 40);
    SET(ev.all_dto_cmpl.unlinked_mr_handle, (it_handle_t) FAKE(it_lmr_handle_t, 3));
    SET(ev.all_dto_cmpl.flags, IT_UD_IB_GRH_PRESENT);
    SET(ev.all_dto_cmpl.ud_ep_id, 0x99);
    SET(ev.all_dto_cmpl.src_path, path);
    SET(ev.all_dto_cmpl.src_path.remote.ib.remote_port_lid, 9);

    SET(ev.conn_req.event_number, IT_CM_REQ_CONN_REQUEST_EVENT);
    SET(ev.conn_req.evd, FAKE(it_evd_handle_t, 13));
    SET(ev.conn_req.cn_est_id, 77);
    SET(ev.conn_req.conn_qual, cq);
    SET(ev.conn_req.source_addr, na);
    SET(ev.conn_req.source_addr.addr.ipv4.s_addr, htonl(0x0a000007u));
    SET(ev.conn_req.spigot_id, 0);
    SET(ev.conn_req.max_message_size, 1u << 20);
    SET(ev.conn_req.rdma_read_ird, 4);
    SET(ev.conn_req.rdma_read_ord, 4);
    SET(ev.conn_req.private_data[0], 'p');
    SET(ev.conn_req.private_data_present, IT_TRUE);

    SET(ev.ud_svc_request.event_number, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
    SET(ev.ud_svc_request.evd, FAKE(it_evd_handle_t, 13));
    SET(ev.ud_svc_request.ud_svc_req_id, 78);
    SET(ev.ud_svc_request.conn_qual, cq);
    SET(ev.ud_svc_request.source_addr, na);
    SET(ev.ud_svc_request.spigot_id, 0);
    SET(ev.ud_svc_request.private_data[1], 'q');
    SET(ev.ud_svc_request.private_data_present, IT_FALSE);

    SET(ev.conn.event_number, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
    SET(ev.conn.evd, FAKE(it_evd_handle_t, 12));
    SET(ev.conn.cn_est_id, 79);
    SET(ev.conn.ep, FAKE(it_ep_handle_t, 1));
    SET(ev.conn.rdma_read_ird, 2);
    SET(ev.conn.rdma_read_ord, 2);
    SET(ev.conn.dst_path, path);
    SET(ev.conn.reject_reason_code, IT_CN_REJ_TIMEOUT);
    SET(ev.conn.private_data[2], 'r');
    SET(ev.conn.private_data_present, IT_TRUE);

    SET(ev.ud_svc_reply.event_number, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
    SET(ev.ud_svc_reply.evd, FAKE(it_evd_handle_t, 12));
    SET(ev.ud_svc_reply.ud_svc, FAKE(it_ud_svc_req_handle_t, 2));
    SET(ev.ud_svc_reply.status, IT_UD_SVC_EP_INFO_VALID);
    SET(ev.ud_svc_reply.ep_info, epi);
    SET(ev.ud_svc_reply.dst_path, path);
    SET(ev.ud_svc_reply.private_data[3], 's');
    SET(ev.ud_svc_reply.private_data_present, IT_TRUE);

    SET(ev.aff_async.event_number, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE);
    SET(ev.aff_async.evd, FAKE(it_evd_handle_t, 0));
    SET(ev.aff_async.cause.sevd, FAKE(it_evd_handle_t, 11));
    SET(ev.aff_async.cause.ep, FAKE(it_ep_handle_t, 1));
    SET(ev.aff_async.cause.srq, FAKE(it_srq_handle_t, 7));

    SET(ev.unaff_async.event_number, IT_ASYNC_UNAFF_SPIGOT_ONLINE);
    SET(ev.unaff_async.evd, FAKE(it_evd_handle_t, 1));
    SET(ev.unaff_async.ia, FAKE(it_ia_handle_t, 9));
    SET(ev.unaff_async.spigot_id, 0);

    SET(ev.sw.event_number, IT_SOFTWARE_EVENT);
    SET(ev.sw.evd, FAKE(it_evd_handle_t, 2));
    SET(ev.sw.data, (void *) &user_data);

    SET(ev.aevd_notify.event_number, IT_AEVD_NOTIFICATION_EVENT);
    SET(ev.aevd_notify.aevd, FAKE(it_evd_handle_t, 3));
    SET(ev.aevd_notify.sevd, FAKE(it_evd_handle_t, 4));
    FOLD(ev);

    cb = touch_callback;
    cb(FAKE(it_evd_handle_t, 5), (void *) &user_data);
    touched++;
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                   */
/* ------------------------------------------------------------------------ */

static unsigned long touch_all(void)
{
    size_t i, present = 0;

    touch_functions();
    touch_constants();
    touch_types();
    touch_fields();

    for (i = 0; i < num_functions; i++)
        if (functions[i] != (any_fn_t) 0)
            present++;
    if (present != num_functions)
        return 0;
    return touched;
}

#ifndef TOUCH_ALL_NO_MAIN
int main(void)
{
    unsigned long n = touch_all();

    printf("it_api.h (C, 2.1 bindings): touched %lu names "
           "(%lu functions), checksum %llx\n",
           n, (unsigned long) num_functions, checksum);
    return n != 0 ? 0 : 1;
}
#endif
