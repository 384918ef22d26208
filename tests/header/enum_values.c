/*
 * enum_values.c - checks every enumerator and integer constant of
 * <it_api.h> against values written down by hand from the IT-API 2.1
 * reference (shared/reference/itapi.md, sections 3.2-3.13).
 *
 * One GTest path per table. Each entry pairs the name (as a string, for the
 * failure message), the value the header gives it and the expected value.
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

#include <glib.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const char *name;       /* spelling of the enumerator or constant */
    long long value;        /* value from the header */
    long long expected;     /* value from the reference */
} value_case_t;

#define V(name, expected) { #name, (long long) (name), (expected) }

static void check_table(const value_case_t *table, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (table[i].value != table[i].expected)
            g_test_message("%s is %lld, expected %lld", table[i].name,
                           table[i].value, table[i].expected);
        g_assert_cmpint(table[i].value, ==, table[i].expected);
    }
}

#define CHECK_TABLE(table) check_table((table), G_N_ELEMENTS(table))

/* ------------------------------------------------------------------------ */
/* 3.3 it_status_t                                                          */
/* ------------------------------------------------------------------------ */

static const value_case_t status_values[] = {
    V(IT_SUCCESS, 0),
    V(IT_ERR_ABORT, 1),
    V(IT_ERR_ACCESS, 2),
    V(IT_ERR_ADDRESS, 3),
    V(IT_ERR_AEVD_NOT_ALLOWED, 4),
    V(IT_ERR_ASYNC_AFF_EVD_EXISTS, 5),
    V(IT_ERR_ASYNC_UNAFF_EVD_EXISTS, 6),
    V(IT_ERR_CALLBACK_EXISTS, 7),
    V(IT_ERR_CANNOT_RESET, 8),
    V(IT_ERR_CONN_QUAL_BUSY, 9),
    V(IT_ERR_EP_BUSY, 10),
    V(IT_ERR_EP_TIMEWAIT, 11),
    V(IT_ERR_EVD_BUSY, 12),
    V(IT_ERR_EVD_WAIT, 13),
    V(IT_ERR_EVD_QUEUE_FULL, 14),
    V(IT_ERR_FAULT, 15),
    V(IT_ERR_HARD_HI_WATERMARK, 16),
    V(IT_ERR_IA_CATASTROPHE, 17),
    V(IT_ERR_INTERRUPT, 18),
    V(IT_ERR_INVALID_ADDR_MODE, 19),
    V(IT_ERR_INVALID_ADDRESS, 20),
    V(IT_ERR_INVALID_AEVD, 21),
    V(IT_ERR_INVALID_AH, 22),
    V(IT_ERR_INVALID_ATIMEOUT, 23),
    V(IT_ERR_INVALID_ATOMIC_OP, 24),
    V(IT_ERR_INVALID_CM_RETRY, 25),
    V(IT_ERR_INVALID_CN_EST_FLAGS, 26),
    V(IT_ERR_INVALID_CN_EST_ID, 27),
    V(IT_ERR_INVALID_CONN_EVD, 28),
    V(IT_ERR_INVALID_CONN_QUAL, 29),
    V(IT_ERR_INVALID_CONVERSION, 30),
    V(IT_ERR_INVALID_DTO_FLAGS, 31),
    V(IT_ERR_INVALID_EP, 32),
    V(IT_ERR_INVALID_EP_ATTR, 33),
    V(IT_ERR_INVALID_EP_KEY, 34),
    V(IT_ERR_INVALID_EP_STATE, 35),
    V(IT_ERR_INVALID_EP_TYPE, 36),
    V(IT_ERR_INVALID_EVD, 37),
    V(IT_ERR_INVALID_EVD_STATE, 38),
    V(IT_ERR_INVALID_EVD_TYPE, 39),
    V(IT_ERR_INVALID_FLAGS, 40),
    V(IT_ERR_INVALID_HANDLE, 41),
    V(IT_ERR_INVALID_IA, 42),
    V(IT_ERR_INVALID_IOBL, 43),
    V(IT_ERR_INVALID_LENGTH, 44),
    V(IT_ERR_INVALID_LISTEN, 45),
    V(IT_ERR_INVALID_LMR, 46),
    V(IT_ERR_INVALID_LTIMEOUT, 47),
    V(IT_ERR_INVALID_MAJOR_VERSION, 48),
    V(IT_ERR_INVALID_MASK, 49),
    V(IT_ERR_INVALID_MINOR_VERSION, 50),
    V(IT_ERR_INVALID_NAME, 51),
    V(IT_ERR_INVALID_NETADDR, 52),
    V(IT_ERR_INVALID_NUM_SEGMENTS, 53),
    V(IT_ERR_INVALID_PDATA_LENGTH, 54),
    V(IT_ERR_INVALID_PRIVS, 55),
    V(IT_ERR_INVALID_PZ, 56),
    V(IT_ERR_INVALID_QUEUE_SIZE, 57),
    V(IT_ERR_INVALID_RECV_DTO, 58),
    V(IT_ERR_INVALID_RECV_EVD, 59),
    V(IT_ERR_INVALID_RECV_EVD_STATE, 60),
    V(IT_ERR_INVALID_REQ_EVD, 61),
    V(IT_ERR_INVALID_REQ_EVD_STATE, 62),
    V(IT_ERR_INVALID_RETRY, 63),
    V(IT_ERR_INVALID_RMR, 64),
    V(IT_ERR_INVALID_RNR_RETRY, 65),
    V(IT_ERR_INVALID_RMR_TYPE, 66),
    V(IT_ERR_INVALID_RTIMEOUT, 67),
    V(IT_ERR_INVALID_SOFT_EVD, 68),
    V(IT_ERR_INVALID_SOURCE_PATH, 69),
    V(IT_ERR_INVALID_SPIGOT, 70),
    V(IT_ERR_INVALID_SRQ, 71),
    V(IT_ERR_INVALID_SRQ_SIZE, 72),
    V(IT_ERR_INVALID_THRESHOLD, 73),
    V(IT_ERR_INVALID_UD_STATUS, 74),
    V(IT_ERR_INVALID_UD_SVC, 75),
    V(IT_ERR_INVALID_UD_SVC_REQ_ID, 76),
    V(IT_ERR_INVALID_WATERMARK, 77),
    V(IT_ERR_LMR_BUSY, 78),
    V(IT_ERR_MISMATCH_FD, 79),
    V(IT_ERR_NO_CONTEXT, 80),
    V(IT_ERR_NO_PERMISSION, 81),
    V(IT_ERR_OP_NOT_SUPPORTED, 82),
    V(IT_ERR_PAYLOAD_SIZE, 83),
    V(IT_ERR_PDATA_NOT_SUPPORTED, 84),
    V(IT_ERR_PRIV_OPS_UNAVAILABLE, 85),
    V(IT_ERR_PZ_BUSY, 86),
    V(IT_ERR_QUEUE_EMPTY, 87),
    V(IT_ERR_RANGE, 88),
    V(IT_ERR_RESOURCES, 89),
    V(IT_ERR_RESOURCE_IRD, 90),
    V(IT_ERR_RESOURCE_LMR_LENGTH, 91),
    V(IT_ERR_RESOURCE_ORD, 92),
    V(IT_ERR_RESOURCE_QUEUE_SIZE, 93),
    V(IT_ERR_RESOURCE_RECV_DTO, 94),
    V(IT_ERR_RESOURCE_REQ_DTO, 95),
    V(IT_ERR_RESOURCE_RRSEG, 96),
    V(IT_ERR_RESOURCE_RSEG, 97),
    V(IT_ERR_RESOURCE_RWSEG, 98),
    V(IT_ERR_RESOURCE_SSEG, 99),
    V(IT_ERR_SOFT_HI_WATERMARK, 100),
    V(IT_ERR_SRQ_BUSY, 101),
    V(IT_ERR_SRQ_LOW_WATERMARK, 102),
    V(IT_ERR_SRQ_NOT_SUPPORTED, 103),
    V(IT_ERR_TIMEOUT_EXPIRED, 104),
    V(IT_ERR_TOO_MANY_POSTS, 105),
    V(IT_ERR_WAITER_LIMIT, 106),
};

/* The names and messages of the X-macro list, in list order. */
#define STATUS_LIST_NAME_(name, message) #name,
static const char *const status_list_names[] = {
    IT_STATUS_LIST(STATUS_LIST_NAME_)
};
#define STATUS_LIST_MESSAGE_(name, message) message,
static const char *const status_list_messages[] = {
    IT_STATUS_LIST(STATUS_LIST_MESSAGE_)
};

static void test_status(void)
{
    size_t i;

    g_test_summary("Every it_status_t enumerator has its IT-API 2.1 value "
                   "(0..106, list order) and the X-macro list has exactly "
                   "these 107 entries, each with a non-empty message.");

    CHECK_TABLE(status_values);
    g_assert_cmpuint(G_N_ELEMENTS(status_values), ==, 107);
    g_assert_cmpint(IT_ERR_WAITER_LIMIT, ==, 106);
    g_assert_cmpuint(G_N_ELEMENTS(status_list_names), ==,
                     G_N_ELEMENTS(status_values));
    g_assert_cmpuint(G_N_ELEMENTS(status_list_messages), ==,
                     G_N_ELEMENTS(status_values));
    for (i = 0; i < G_N_ELEMENTS(status_values); i++) {
        g_assert_cmpstr(status_list_names[i], ==, status_values[i].name);
        g_assert_cmpint(status_values[i].value, ==, (long long) i);
        g_assert_nonnull(status_list_messages[i]);
        g_assert_cmpuint(strlen(status_list_messages[i]), >, 0);
    }
}

/* ------------------------------------------------------------------------ */
/* 3.2 constants                                                            */
/* ------------------------------------------------------------------------ */

static const value_case_t constant_values[] = {
    V(IT_MAX_VIA_DISC_LEN, 64),
    V(IT_MAX_VIA_ADDR_LEN, 64),
    V(IT_MAX_PRIV_DATA, 512),
    V(IT_INTERFACE_NAME_SIZE, 128),
    V(IT_EVENT_STREAM_MASK, 0xff000),
    V(IT_THRESHOLD_DISABLE, 0),
};

static void test_constants(void)
{
    g_test_summary("The integer constants of section 3.2 have their "
                   "documented values; the 'disable' and 'infinite' "
                   "sentinels are all-ones; IT_NULL_HANDLE is NULL.");

    CHECK_TABLE(constant_values);
    g_assert_cmpuint(IT_HARD_HI_WATERMARK_DISABLE, ==, SIZE_MAX);
    g_assert_cmpuint(sizeof(IT_HARD_HI_WATERMARK_DISABLE), ==, sizeof(size_t));
    g_assert_cmpuint(IT_TIMEOUT_INFINITE, ==, UINT64_MAX);
    g_assert_cmpuint(sizeof(IT_TIMEOUT_INFINITE), ==, sizeof(uint64_t));
    g_assert_null(IT_NULL_HANDLE);
}

/* ------------------------------------------------------------------------ */
/* 3.13 events                                                              */
/* ------------------------------------------------------------------------ */

static const value_case_t event_values[] = {
    V(IT_DTO_EVENT_STREAM, 0x00000),
    V(IT_DTO_SEND_CMPL_EVENT, 0x1),
    V(IT_DTO_RC_RECV_CMPL_EVENT, 0x2),
    V(IT_DTO_UD_RECV_CMPL_EVENT, 0x3),
    V(IT_DTO_RDMA_WRITE_CMPL_EVENT, 0x4),
    V(IT_DTO_RDMA_READ_CMPL_EVENT, 0x5),
    V(IT_RMR_LINK_CMPL_EVENT, 0x6),
    V(IT_RMR_BIND_CMPL_EVENT, 0x6),
    V(IT_DTO_FETCH_ADD_CMPL_EVENT, 0x7),
    V(IT_DTO_CMP_SWAP_CMPL_EVENT, 0x8),
    V(IT_LMR_LINK_CMPL_EVENT, 0x9),
    V(IT_CM_REQ_EVENT_STREAM, 0x01000),
    V(IT_CM_REQ_CONN_REQUEST_EVENT, 0x1001),
    V(IT_CM_REQ_UD_SERVICE_REQUEST_EVENT, 0x1002),
    V(IT_CM_MSG_EVENT_STREAM, 0x02000),
    V(IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT, 0x2001),
    V(IT_CM_MSG_CONN_ESTABLISHED_EVENT, 0x2002),
    V(IT_CM_MSG_CONN_DISCONNECT_EVENT, 0x2003),
    V(IT_CM_MSG_CONN_PEER_REJECT_EVENT, 0x2004),
    V(IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, 0x2005),
    V(IT_CM_MSG_CONN_BROKEN_EVENT, 0x2006),
    V(IT_CM_MSG_UD_SERVICE_REPLY_EVENT, 0x2007),
    V(IT_ASYNC_AFF_EVENT_STREAM, 0x04000),
    V(IT_ASYNC_UNAFF_EVENT_STREAM, 0x08000),
    V(IT_SOFTWARE_EVENT_STREAM, 0x10000),
    V(IT_SOFTWARE_EVENT, 0x10001),
    V(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0x20000),
    V(IT_AEVD_NOTIFICATION_EVENT, 0x20001),
};

static void test_events(void)
{
    g_test_summary("Event stream and event numbers of section 3.13 "
                   "(DTO, CM request, CM message, software, AEVD).");
    CHECK_TABLE(event_values);
}

static const value_case_t async_event_values[] = {
    V(IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE, 0x4001),
    V(IT_ASYNC_AFF_EP_FAILURE, 0x4002),
    V(IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE, 0x4003),
    V(IT_ASYNC_AFF_EP_REQ_DROPPED, 0x4005),
    V(IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, 0x4006),
    V(IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA, 0x4007),
    V(IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, 0x4008),
    V(IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION, 0x4020),
    V(IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION, 0x4020),
    V(IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION, 0x4021),
    V(IT_ASYNC_AFF_EP_L_IRRQ_ACCESS_VIOLATION, 0x4022),
    V(IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR, 0x4023),
    V(IT_ASYNC_AFF_EP_L_LLP_ERROR, 0x4024),
    V(IT_ASYNC_AFF_EP_R_ERROR, 0x4040),
    V(IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, 0x4041),
    V(IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION, 0x4042),
    V(IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR, 0x4043),
    V(IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK, 0x4060),
    V(IT_ASYNC_AFF_EP_SRQ_ERROR, 0x4061),
    V(IT_ASYNC_AFF_SRQ_LOW_WATERMARK, 0x4100),
    V(IT_ASYNC_UNAFF_SPIGOT_ONLINE, 0x8002),
    V(IT_ASYNC_UNAFF_SPIGOT_OFFLINE, 0x8003),
    V(IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE, 0x8004),
    /* Project extensions (IBM OpenRDMA "NFD" additions). */
    V(IT_ASYNC_AFF_SRQ_CATASTROPHIC, 0x4101),
    V(IT_ASYNC_AFF_SEVD_FULL_ERROR, 0x4200),
    V(IT_ASYNC_AFF_SEVD_OP_ERROR, 0x4201),
    V(IT_ASYNC_AFF_EP_SEVD_FULL_ERROR, 0x4001),
};

static void test_async_events(void)
{
    g_test_summary("Affiliated and unaffiliated asynchronous event numbers, "
                   "under their original IT-API names, plus the documented "
                   "project extensions.");
    CHECK_TABLE(async_event_values);
}

/* ------------------------------------------------------------------------ */
/* 3.4 memory, addressing and DTO enumerations                              */
/* ------------------------------------------------------------------------ */

static const value_case_t boolean_values[] = {
    V(IT_FALSE, 0),
    V(IT_TRUE, 1),
};

static const value_case_t mem_priv_values[] = {
    V(IT_PRIV_NONE, 0x0000),
    V(IT_PRIV_LOCAL_READ, 0x0001),
    V(IT_PRIV_LOCAL_WRITE, 0x0002),
    V(IT_PRIV_LOCAL, 0x0003),
    V(IT_PRIV_DEFAULT, 0x0003),
    V(IT_PRIV_REMOTE_READ, 0x0004),
    V(IT_PRIV_REMOTE_WRITE, 0x0008),
    V(IT_PRIV_REMOTE, 0x000c),
    V(IT_PRIV_ATOMIC, 0x0010),
    V(IT_PRIV_ALL, 0x001f),
};

static const value_case_t lmr_flag_values[] = {
    V(IT_LMR_FLAG_NONE, 0x0001),
    V(IT_LMR_FLAG_SHARED, 0x0002),
    V(IT_LMR_FLAG_NONCOHERENT, 0x0004),
    V(IT_LMR_FLAG_NON_SHAREABLE, 0x0008),
};

static const value_case_t rmr_type_values[] = {
    V(IT_RMR_TYPE_DEFAULT, 0),
    V(IT_RMR_TYPE_NARROW, 1),
    V(IT_RMR_TYPE_WIDE, 2),
};

static const value_case_t addr_mode_values[] = {
    V(IT_ADDR_MODE_ABSOLUTE, 0),
    V(IT_ADDR_MODE_RELATIVE, 1),
};

static const value_case_t iobl_type_values[] = {
    V(IT_IOBL_PAGE_LIST, 0x0001),
    V(IT_IOBL_BLOCK_LIST, 0x0002),
    V(IT_IOBL_VE_PAGE_LIST, 0x0004),
};

static const value_case_t dto_status_values[] = {
    V(IT_DTO_SUCCESS, 0),
    V(IT_DTO_ERR_LOCAL_LENGTH, 1),
    V(IT_DTO_ERR_LOCAL_EP, 2),
    V(IT_DTO_ERR_LOCAL_PROTECTION, 3),
    V(IT_DTO_ERR_FLUSHED, 4),
    V(IT_RMR_OPERATION_FAILED, 5),
    V(IT_DTO_ERR_BAD_RESPONSE, 6),
    V(IT_DTO_ERR_REMOTE_ACCESS, 7),
    V(IT_DTO_ERR_REMOTE_RESPONDER, 8),
    V(IT_DTO_ERR_TRANSPORT, 9),
    V(IT_DTO_ERR_RECEIVER_NOT_READY, 10),
    V(IT_DTO_ERR_PARTIAL_PACKET, 11),
    V(IT_DTO_ERR_LOCAL_MM_OPERATION, 12),
};

static const value_case_t dto_flag_values[] = {
    V(IT_COMPLETION_FLAG, 0x01),
    V(IT_NOTIFY_FLAG, 0x02),
    V(IT_SOLICITED_WAIT_FLAG, 0x04),
    V(IT_BARRIER_FENCE_FLAG, 0x08),
    V(IT_UNLINK_FENCE_FLAG, 0x10),
    V(IT_UNLINK_LOCAL_SINK, 0x20),
    V(IT_COALESCE_WR_FLAG, 0x40),
};

static const value_case_t atomic_op_values[] = {
    V(IT_COMPARE_AND_SWAP, 0),
    V(IT_FETCH_AND_ADD, 1),
};

static const value_case_t dto_ud_flag_values[] = {
    V(IT_UD_IB_GRH_PRESENT, 0x01),
};

static void test_boolean(void)
{
    g_test_summary("it_boolean_t values.");
    CHECK_TABLE(boolean_values);
}

static void test_mem_priv(void)
{
    g_test_summary("it_mem_priv_t bits, including the 1.0 aliases "
                   "IT_PRIV_NONE and IT_PRIV_DEFAULT.");
    CHECK_TABLE(mem_priv_values);
}

static void test_lmr_flags(void)
{
    g_test_summary("it_lmr_flag_t values (IT_LMR_FLAG_NONE is 1).");
    CHECK_TABLE(lmr_flag_values);
}

static void test_rmr_type(void)
{
    g_test_summary("it_rmr_type_t values.");
    CHECK_TABLE(rmr_type_values);
}

static void test_addr_mode(void)
{
    g_test_summary("it_addr_mode_t values.");
    CHECK_TABLE(addr_mode_values);
}

static void test_iobl_type(void)
{
    g_test_summary("it_iobl_type_t values.");
    CHECK_TABLE(iobl_type_values);
}

static void test_dto_status(void)
{
    g_test_summary("it_dto_status_t values 0..12.");
    CHECK_TABLE(dto_status_values);
}

static void test_dto_flags(void)
{
    g_test_summary("it_dto_flags_t bits.");
    CHECK_TABLE(dto_flag_values);
}

static void test_atomic_op(void)
{
    g_test_summary("it_atomic_op_t values.");
    CHECK_TABLE(atomic_op_values);
}

static void test_dto_ud_flags(void)
{
    g_test_summary("it_dto_ud_flags_t values.");
    CHECK_TABLE(dto_ud_flag_values);
}

/* ------------------------------------------------------------------------ */
/* 3.5 addresses, qualifiers and transports                                 */
/* ------------------------------------------------------------------------ */

static const value_case_t conn_qual_type_values[] = {
    V(IT_IANA_PORT, 0x01),
    V(IT_IB_SERVICEID, 0x02),
    V(IT_VIA_DISCRIMINATOR, 0x04),
    V(IT_IANA_LR_PORT, 0x08),
};

static const value_case_t net_addr_type_values[] = {
    V(IT_IPV4, 0x1),
    V(IT_IPV6, 0x2),
    V(IT_IB_GID, 0x3),
    V(IT_VIA_HOSTADDR, 0x4),
};

static const value_case_t transport_values[] = {
    V(IT_IB_TRANSPORT, 1),
    V(IT_VIA_IP_TRANSPORT, 2),
    V(IT_VIA_FC_TRANSPORT, 3),
    V(IT_IWARP_TCP_TRANSPORT, 4),
    V(IT_VENDOR_TRANSPORT, 1000),
};

static const value_case_t service_type_values[] = {
    V(IT_RC_SERVICE, 0x1),
    V(IT_UD_SERVICE, 0x2),
};

static const value_case_t ip_vers_values[] = {
    V(IT_IP_VERS_IPV4, 0x1),
    V(IT_IP_VERS_IPV6, 0x2),
};

static void test_conn_qual_type(void)
{
    g_test_summary("it_conn_qual_type_t bits.");
    CHECK_TABLE(conn_qual_type_values);
}

static void test_net_addr_type(void)
{
    g_test_summary("it_net_addr_type_t values.");
    CHECK_TABLE(net_addr_type_values);
}

static void test_transport(void)
{
    g_test_summary("it_transport_type_t values.");
    CHECK_TABLE(transport_values);
}

static void test_service_type(void)
{
    g_test_summary("it_transport_service_type_t bits.");
    CHECK_TABLE(service_type_values);
}

static void test_ip_vers(void)
{
    g_test_summary("it_ip_vers_t values.");
    CHECK_TABLE(ip_vers_values);
}

/* ------------------------------------------------------------------------ */
/* 3.9 endpoints                                                            */
/* ------------------------------------------------------------------------ */

static const value_case_t ep_state_values[] = {
    V(IT_EP_STATE_UNCONNECTED, 0),
    V(IT_EP_STATE_ACTIVE1_CONNECTION_PENDING, 1),
    V(IT_EP_STATE_ACTIVE2_CONNECTION_PENDING, 2),
    V(IT_EP_STATE_PASSIVE_CONNECTION_PENDING, 3),
    V(IT_EP_STATE_CONNECTED, 4),
    V(IT_EP_STATE_NONOPERATIONAL, 5),
    V(IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ, 6),
    /* Original IT-API values (the SKV copy swapped them). */
    V(IT_EP_STATE_UD_NONOPERATIONAL, 0),
    V(IT_EP_STATE_UD_OPERATIONAL, 1),
};

static const value_case_t ep_flag_values[] = {
    V(IT_EP_NO_FLAG, 0x00),
    V(IT_EP_REUSEADDR, 0x01),
    V(IT_EP_SRQ, 0x02),
};

static const value_case_t ep_param_mask_values[] = {
    V(IT_EP_PARAM_ALL, 0x1),
    V(IT_EP_PARAM_IA, 0x2),
    V(IT_EP_PARAM_SPIGOT, 0x4),
    V(IT_EP_PARAM_STATE, 0x8),
    V(IT_EP_PARAM_SERV_TYPE, 0x10),
    V(IT_EP_PARAM_PATH, 0x20),
    V(IT_EP_PARAM_PZ, 0x40),
    V(IT_EP_PARAM_REQ_SEVD, 0x80),
    V(IT_EP_PARAM_RECV_SEVD, 0x100),
    V(IT_EP_PARAM_CONN_SEVD, 0x200),
    V(IT_EP_PARAM_RDMA_RD_ENABLE, 0x400),
    V(IT_EP_PARAM_RDMA_WR_ENABLE, 0x800),
    V(IT_EP_PARAM_MAX_RDMA_READ_SEG, 0x1000),
    V(IT_EP_PARAM_MAX_RDMA_WRITE_SEG, 0x2000),
    V(IT_EP_PARAM_MAX_IRD, 0x4000),
    V(IT_EP_PARAM_MAX_ORD, 0x8000),
    V(IT_EP_PARAM_EP_ID, 0x10000),
    V(IT_EP_PARAM_EP_KEY, 0x20000),
    V(IT_EP_PARAM_MAX_PAYLOAD, 0x40000),
    V(IT_EP_PARAM_MAX_REQ_DTO, 0x80000),
    V(IT_EP_PARAM_MAX_RECV_DTO, 0x100000),
    V(IT_EP_PARAM_MAX_SEND_SEG, 0x200000),
    V(IT_EP_PARAM_MAX_RECV_SEG, 0x400000),
    V(IT_EP_PARAM_SRQ, 0x800000),
    V(IT_EP_PARAM_SOFT_HI_WATERMARK, 0x1000000),
    V(IT_EP_PARAM_HARD_HI_WATERMARK, 0x2000000),
    V(IT_EP_PARAM_ATOMICS_ENABLE, 0x4000000),
    V(IT_EP_PARAM_PRIV_OPS_ENABLE, 0x8000000),
};

static void test_ep_state(void)
{
    g_test_summary("Reliable-connected and datagram endpoint states "
                   "(original UD values).");
    CHECK_TABLE(ep_state_values);
}

static void test_ep_flags(void)
{
    g_test_summary("it_ep_rc_creation_flags_t bits.");
    CHECK_TABLE(ep_flag_values);
}

static void test_ep_param_mask(void)
{
    g_test_summary("it_ep_param_mask_t bits 0x1..0x8000000.");
    CHECK_TABLE(ep_param_mask_values);
}

/* ------------------------------------------------------------------------ */
/* 3.10 connection establishment                                            */
/* ------------------------------------------------------------------------ */

static const value_case_t cn_est_flag_values[] = {
    V(IT_CONNECT_FLAG_TWO_WAY, 0x0001),
    V(IT_CONNECT_FLAG_THREE_WAY, 0x0002),
    V(IT_CONNECT_SUPPRESS_IRD_ORD, 0x0004),
};

static const value_case_t listen_values[] = {
    V(IT_LISTEN_NO_FLAG, 0x0000),
    V(IT_LISTEN_CONN_QUAL_INPUT, 0x0001),
    V(IT_LISTEN_SUPPRESS_IRD_ORD, 0x0002),
    V(IT_LISTEN_PARAM_ALL, 0x0001),
    V(IT_LISTEN_PARAM_IA_HANDLE, 0x0002),
    V(IT_LISTEN_PARAM_SPIGOT_ID, 0x0004),
    V(IT_LISTEN_PARAM_CONNECT_EVD, 0x0008),
    V(IT_LISTEN_PARAM_CONN_QUAL, 0x0010),
};

static const value_case_t reject_code_values[] = {
    V(IT_CN_REJ_OTHER, 0),
    V(IT_CN_REJ_TIMEOUT, 1),
    V(IT_CN_REJ_BAD_PATH, 2),
    V(IT_CN_REJ_STALE_CONN, 3),
    V(IT_CN_REJ_BAD_ORD, 4),
    V(IT_CN_REJ_RESOURCES, 5),
    V(IT_CN_REJ_BAD_CONN_PARMS, 6),
};

static const value_case_t sc_flag_values[] = {
    V(IT_SC_DEFAULT, 0x0000),
    V(IT_SC_NO_REQ_REP, 0x0001),
};

static void test_cn_est_flags(void)
{
    g_test_summary("it_cn_est_flags_t bits.");
    CHECK_TABLE(cn_est_flag_values);
}

static void test_listen(void)
{
    g_test_summary("it_listen_flags_t and it_listen_param_mask_t values.");
    CHECK_TABLE(listen_values);
}

static void test_reject_codes(void)
{
    g_test_summary("it_conn_reject_code_t values.");
    CHECK_TABLE(reject_code_values);
}

static void test_sc_flags(void)
{
    g_test_summary("it_sc_flags_t values.");
    CHECK_TABLE(sc_flag_values);
}

/* ------------------------------------------------------------------------ */
/* 3.11 datagrams                                                           */
/* ------------------------------------------------------------------------ */

static const value_case_t ud_values[] = {
    V(IT_DG_TYPE_IB_UD, 0),
    V(IT_AH_PATH_COMPLETE, 0x1),
    V(IT_ADDR_PARAM_ALL, 0x0001),
    V(IT_ADDR_PARAM_IA, 0x0002),
    V(IT_ADDR_PARAM_PZ, 0x0004),
    V(IT_ADDR_PARAM_PATH, 0x0008),
};

static const value_case_t ud_svc_values[] = {
    V(IT_UD_SVC_EP_INFO_VALID, 0),
    V(IT_UD_SVC_ID_NOT_SUPPORTED, 1),
    V(IT_UD_SVC_REQ_REJECTED, 2),
    V(IT_UD_NO_EP_AVAILABLE, 3),
    V(IT_UD_REQ_REDIRECTED, 4),
    V(IT_UD_PARAM_ALL, 0x01),
    V(IT_UD_PARAM_IA_HANDLE, 0x02),
    V(IT_UD_PARAM_REQ_ID, 0x04),
    V(IT_UD_PARAM_REPLY_EVD, 0x08),
    V(IT_UD_PARAM_CONN_QUAL, 0x10),
    V(IT_UD_PARAM_DEST_PATH, 0x20),
    V(IT_UD_PARAM_PRIV_DATA, 0x40),
    V(IT_UD_PARAM_PRIV_DATA_LENGTH, 0x80),
};

static void test_ud(void)
{
    g_test_summary("Datagram destination type, address handle flags and "
                   "address handle parameter mask.");
    CHECK_TABLE(ud_values);
}

static void test_ud_svc(void)
{
    g_test_summary("Datagram service reply status and request parameter "
                   "mask.");
    CHECK_TABLE(ud_svc_values);
}

/* ------------------------------------------------------------------------ */
/* 3.12 query/modify masks and flags                                        */
/* ------------------------------------------------------------------------ */

static const value_case_t pz_param_mask_values[] = {
    V(IT_PZ_PARAM_ALL, 0x01),
    V(IT_PZ_PARAM_IA, 0x02),
};

static const value_case_t evd_flag_values[] = {
    V(IT_EVD_DEQUEUE_NOTIFICATIONS, 0x01),
    V(IT_EVD_CREATE_FD, 0x02),
    V(IT_EVD_OVERFLOW_DEFAULT, 0x04),
    V(IT_EVD_OVERFLOW_NOTIFY, 0x08),
    V(IT_EVD_OVERFLOW_AUTO_RESET, 0x10),
};

static const value_case_t evd_param_mask_values[] = {
    V(IT_EVD_PARAM_ALL, 0x1),
    V(IT_EVD_PARAM_IA, 0x2),
    V(IT_EVD_PARAM_EVENT_NUMBER, 0x4),
    V(IT_EVD_PARAM_FLAG, 0x8),
    V(IT_EVD_PARAM_QUEUE_SIZE, 0x10),
    V(IT_EVD_PARAM_THRESHOLD, 0x20),
    V(IT_EVD_PARAM_AEVD_HANDLE, 0x40),
    V(IT_EVD_PARAM_FD, 0x80),
    V(IT_EVD_PARAM_BOUND, 0x100),
    V(IT_EVD_PARAM_ENABLED, 0x200),
    V(IT_EVD_PARAM_OVERFLOWED, 0x400),
    V(IT_EVD_PARAM_CALLBACK, 0x800),
};

static const value_case_t lmr_param_mask_values[] = {
    V(IT_LMR_PARAM_ALL, 0x1),
    V(IT_LMR_PARAM_IA, 0x2),
    V(IT_LMR_PARAM_PZ, 0x4),
    V(IT_LMR_PARAM_ADDR, 0x8),
    V(IT_LMR_PARAM_LENGTH, 0x10),
    V(IT_LMR_PARAM_MEM_PRIV, 0x20),
    V(IT_LMR_PARAM_FLAG, 0x40),
    V(IT_LMR_PARAM_SHARED_ID, 0x80),
    V(IT_LMR_PARAM_RMR_CONTEXT, 0x100),
    V(IT_LMR_PARAM_ACTUAL_ADDR, 0x200),
    V(IT_LMR_PARAM_ACTUAL_LENGTH, 0x400),
    V(IT_LMR_PARAM_ADDR_MODE, 0x800),
    V(IT_LMR_PARAM_LINKED, 0x1000),
    V(IT_LMR_PARAM_IOBL_NUM_ELTS, 0x2000),
    V(IT_LMR_PARAM_IOBL_TYPE, 0x4000),
};

static const value_case_t rmr_param_mask_values[] = {
    V(IT_RMR_PARAM_ALL, 0x1),
    V(IT_RMR_PARAM_IA, 0x2),
    V(IT_RMR_PARAM_PZ, 0x4),
    V(IT_RMR_PARAM_LINKED, 0x8),
    V(IT_RMR_PARAM_BOUND, 0x8),
    V(IT_RMR_PARAM_LMR, 0x10),
    V(IT_RMR_PARAM_ADDR, 0x20),
    V(IT_RMR_PARAM_LENGTH, 0x40),
    V(IT_RMR_PARAM_MEM_PRIV, 0x80),
    V(IT_RMR_PARAM_RMR_CONTEXT, 0x100),
    V(IT_RMR_PARAM_TYPE, 0x200),
    V(IT_RMR_PARAM_ADDR_MODE, 0x400),
};

static const value_case_t srq_param_mask_values[] = {
    V(IT_SRQ_PARAM_ALL, 0x1),
    V(IT_SRQ_PARAM_IA, 0x2),
    V(IT_SRQ_PARAM_PZ, 0x4),
    V(IT_SRQ_PARAM_MAX_RECV_DTO, 0x8),
    V(IT_SRQ_PARAM_MAX_RECV_SEG, 0x10),
    V(IT_SRQ_PARAM_LOW_WATERMARK, 0x20),
};

static const value_case_t handle_type_values[] = {
    V(IT_HANDLE_TYPE_ADDR, 0),
    V(IT_HANDLE_TYPE_EP, 1),
    V(IT_HANDLE_TYPE_EVD, 2),
    V(IT_HANDLE_TYPE_IA, 3),
    V(IT_HANDLE_TYPE_LISTEN, 4),
    V(IT_HANDLE_TYPE_LMR, 5),
    V(IT_HANDLE_TYPE_PZ, 6),
    V(IT_HANDLE_TYPE_RMR, 7),
    V(IT_HANDLE_TYPE_UD_SVC_REQ, 8),
    V(IT_HANDLE_TYPE_SRQ, 9),
};

static void test_pz_param_mask(void)
{
    g_test_summary("it_pz_param_mask_t bits.");
    CHECK_TABLE(pz_param_mask_values);
}

static void test_evd_flags(void)
{
    g_test_summary("it_evd_flags_t bits.");
    CHECK_TABLE(evd_flag_values);
}

static void test_evd_param_mask(void)
{
    g_test_summary("it_evd_param_mask_t bits.");
    CHECK_TABLE(evd_param_mask_values);
}

static void test_lmr_param_mask(void)
{
    g_test_summary("it_lmr_param_mask_t bits.");
    CHECK_TABLE(lmr_param_mask_values);
}

static void test_rmr_param_mask(void)
{
    g_test_summary("it_rmr_param_mask_t bits, including the 1.0 alias "
                   "IT_RMR_PARAM_BOUND.");
    CHECK_TABLE(rmr_param_mask_values);
}

static void test_srq_param_mask(void)
{
    g_test_summary("it_srq_param_mask_t bits.");
    CHECK_TABLE(srq_param_mask_values);
}

static void test_handle_types(void)
{
    g_test_summary("it_handle_type_enum_t values 0..9.");
    CHECK_TABLE(handle_type_values);
}

/* ------------------------------------------------------------------------ */
/* Sizes and event streams                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    long long event;
    long long stream;
} stream_case_t;

#define S(event, stream) { #event, (long long) (event), (long long) (stream) }

static const stream_case_t event_streams[] = {
    S(IT_DTO_SEND_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_DTO_UD_RECV_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_RMR_LINK_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_RMR_BIND_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_DTO_FETCH_ADD_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_DTO_CMP_SWAP_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_LMR_LINK_CMPL_EVENT, IT_DTO_EVENT_STREAM),
    S(IT_CM_REQ_CONN_REQUEST_EVENT, IT_CM_REQ_EVENT_STREAM),
    S(IT_CM_REQ_UD_SERVICE_REQUEST_EVENT, IT_CM_REQ_EVENT_STREAM),
    S(IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_CM_MSG_CONN_ESTABLISHED_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_CM_MSG_CONN_DISCONNECT_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_CM_MSG_CONN_PEER_REJECT_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_CM_MSG_CONN_BROKEN_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_CM_MSG_UD_SERVICE_REPLY_EVENT, IT_CM_MSG_EVENT_STREAM),
    S(IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_FAILURE, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_REQ_DROPPED, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_L_IRRQ_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_L_LLP_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_R_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_SRQ_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_SRQ_LOW_WATERMARK, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_SRQ_CATASTROPHIC, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_SEVD_FULL_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_SEVD_OP_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_AFF_EP_SEVD_FULL_ERROR, IT_ASYNC_AFF_EVENT_STREAM),
    S(IT_ASYNC_UNAFF_SPIGOT_ONLINE, IT_ASYNC_UNAFF_EVENT_STREAM),
    S(IT_ASYNC_UNAFF_SPIGOT_OFFLINE, IT_ASYNC_UNAFF_EVENT_STREAM),
    S(IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE, IT_ASYNC_UNAFF_EVENT_STREAM),
    S(IT_SOFTWARE_EVENT, IT_SOFTWARE_EVENT_STREAM),
    S(IT_AEVD_NOTIFICATION_EVENT, IT_AEVD_NOTIFICATION_EVENT_STREAM),
};

static void test_sizes(void)
{
    size_t i;

    g_test_summary("it_dto_cookie_t is 64 bits, IT_MAX_PRIV_DATA holds an "
                   "iWARP MPA private data block, the private data arrays "
                   "have that size, and masking any event number with "
                   "IT_EVENT_STREAM_MASK yields its stream.");

    g_assert_cmpuint(sizeof(it_dto_cookie_t), ==, 8);
    g_assert_cmpint(IT_MAX_PRIV_DATA, >=, 512);
    g_assert_cmpuint(sizeof(((it_conn_request_event_t *) 0)->private_data),
                     ==, IT_MAX_PRIV_DATA);
    g_assert_cmpuint(sizeof(((it_connection_event_t *) 0)->private_data),
                     ==, IT_MAX_PRIV_DATA);
    g_assert_cmpuint(sizeof(((it_interface_t *) 0)->name),
                     ==, IT_INTERFACE_NAME_SIZE);
    g_assert_cmpuint(sizeof(it_rmr_context_t), ==, 8);
    g_assert_cmpuint(sizeof(it_length_t), ==, 8);
    g_assert_cmpuint(sizeof(it_rdma_addr_t), ==, 8);
    g_assert_cmpuint(sizeof(it_ib_gid_t), ==, 16);

    for (i = 0; i < G_N_ELEMENTS(event_streams); i++) {
        long long stream = event_streams[i].event & IT_EVENT_STREAM_MASK;

        if (stream != event_streams[i].stream)
            g_test_message("%s is in stream 0x%llx, expected 0x%llx",
                           event_streams[i].name, stream,
                           event_streams[i].stream);
        g_assert_cmpint(stream, ==, event_streams[i].stream);
        /* No event number equals its stream number. */
        g_assert_cmpint(event_streams[i].event, !=, event_streams[i].stream);
    }
}

int main(int argc, char *argv[])
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/header/values/status", test_status);
    g_test_add_func("/header/values/constants", test_constants);
    g_test_add_func("/header/values/events", test_events);
    g_test_add_func("/header/values/async-events", test_async_events);
    g_test_add_func("/header/values/boolean", test_boolean);
    g_test_add_func("/header/values/mem-priv", test_mem_priv);
    g_test_add_func("/header/values/lmr-flags", test_lmr_flags);
    g_test_add_func("/header/values/rmr-type", test_rmr_type);
    g_test_add_func("/header/values/addr-mode", test_addr_mode);
    g_test_add_func("/header/values/iobl-type", test_iobl_type);
    g_test_add_func("/header/values/dto-status", test_dto_status);
    g_test_add_func("/header/values/dto-flags", test_dto_flags);
    g_test_add_func("/header/values/atomic-op", test_atomic_op);
    g_test_add_func("/header/values/dto-ud-flags", test_dto_ud_flags);
    g_test_add_func("/header/values/conn-qual-type", test_conn_qual_type);
    g_test_add_func("/header/values/net-addr-type", test_net_addr_type);
    g_test_add_func("/header/values/transport", test_transport);
    g_test_add_func("/header/values/service-type", test_service_type);
    g_test_add_func("/header/values/ip-vers", test_ip_vers);
    g_test_add_func("/header/values/ep-state", test_ep_state);
    g_test_add_func("/header/values/ep-flags", test_ep_flags);
    g_test_add_func("/header/values/ep-param-mask", test_ep_param_mask);
    g_test_add_func("/header/values/cn-est-flags", test_cn_est_flags);
    g_test_add_func("/header/values/listen", test_listen);
    g_test_add_func("/header/values/reject-codes", test_reject_codes);
    g_test_add_func("/header/values/sc-flags", test_sc_flags);
    g_test_add_func("/header/values/ud", test_ud);
    g_test_add_func("/header/values/ud-svc", test_ud_svc);
    g_test_add_func("/header/values/pz-param-mask", test_pz_param_mask);
    g_test_add_func("/header/values/evd-flags", test_evd_flags);
    g_test_add_func("/header/values/evd-param-mask", test_evd_param_mask);
    g_test_add_func("/header/values/lmr-param-mask", test_lmr_param_mask);
    g_test_add_func("/header/values/rmr-param-mask", test_rmr_param_mask);
    g_test_add_func("/header/values/srq-param-mask", test_srq_param_mask);
    g_test_add_func("/header/values/handle-types", test_handle_types);
    g_test_add_func("/header/values/sizes", test_sizes);

    return g_test_run();
}
