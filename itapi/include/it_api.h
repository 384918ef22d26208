/**
 * @file it_api.h
 * @brief Public interface of the Interconnect Transport API (IT-API) 2.1.
 *
 * This header declares the application interface defined by the Open Group
 * ICSC "Interconnect Transport API (IT-API)" version 2.1: every entry point,
 * type, structure, enumeration and constant, under the names, parameter
 * orders and values of the 2.1 header. Programs written against IT-API are
 * meant to compile against it unchanged (source portability); binary
 * compatibility with other vendors' libraries is not a goal.
 *
 * @par Binding selection
 * The signatures of a few functions changed between versions of the
 * specification. The application selects the binding by defining at most
 * one of these macros before it includes this header:
 *  - no macro: 1.0 bindings; the header defines `ITAPI_ENABLE_V10_BINDINGS`;
 *  - `ITAPI_ENABLE_V20_BINDINGS`: 2.0 bindings;
 *  - `ITAPI_ENABLE_V21_BINDINGS`: 2.1 bindings (takes precedence if both
 *    2.0 and 2.1 are requested).
 *
 * With 2.0 or 2.1 bindings `ITAPI_ENABLE_V10_BINDINGS` is left undefined.
 * All versioned functions are always declared under their explicit names
 * (it_lmr_create10(), it_lmr_create20(), it_lmr_create21(),
 * it_rmr_create10(), it_rmr_create20(), it_rmr_bind10(), it_rmr_link());
 * the generic names `it_lmr_create`, `it_rmr_create` and `it_rmr_bind` are
 * macros that map to the variant of the selected binding:
 *
 * | Generic name    | 1.0 binding     | 2.0 binding     | 2.1 binding     |
 * |-----------------|-----------------|-----------------|-----------------|
 * | it_lmr_create   | it_lmr_create10 | it_lmr_create20 | it_lmr_create21 |
 * | it_rmr_create   | it_rmr_create10 | it_rmr_create20 | it_rmr_create20 |
 * | it_rmr_bind     | it_rmr_bind10   | it_rmr_link     | it_rmr_link     |
 *
 * The 1.0 spellings of renamed functions and structure fields are provided
 * as macros in every binding (see the @ref util group).
 *
 * @par Status codes
 * Every ::it_status_t enumerator is generated from the single list in
 * it_status_list.h. Statuses are only meaningful by name: their numeric
 * values follow the order of the 2.1 list, which changed between versions
 * of the specification, so applications must never store, compare or
 * transmit them as numbers.
 *
 * @par Units and conventions
 *  - Timeouts (it_evd_wait(), it_path_t::timeout) are in microseconds;
 *    ::IT_TIMEOUT_INFINITE waits forever.
 *  - Port numbers and InfiniBand service IDs in connection qualifiers are
 *    in network byte order.
 *  - `IN` and `OUT` are empty annotation macros marking the direction of
 *    each parameter.
 *
 * @par Project extensions
 * A few names that are not part of IT-API 2.1 are provided for source
 * compatibility with code written against the IBM OpenRDMA/SKV header; each
 * of them is documented as a project extension. The standard `it_`
 * namespace otherwise contains exactly the names of the specification.
 */
#ifndef IT_API_H
#define IT_API_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "it_status_list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* libitapi is built with -fvisibility=hidden: what this header declares is
 * its exported interface (itapi/itapi.map, doc/architecture.md). */
#pragma GCC visibility push(default)

/* ------------------------------------------------------------------------ */
/* Groups                                                                    */
/* ------------------------------------------------------------------------ */

/** @defgroup ia Interface adapters
 *  @brief Discovering, opening, querying and closing interface adapters. */
/** @defgroup pz Protection zones
 *  @brief Protection zones, the protection domains that group objects. */
/** @defgroup evd Event dispatchers
 *  @brief Simple and aggregate event dispatchers and the events they carry. */
/** @defgroup ep Endpoints
 *  @brief Reliable-connected and unreliable-datagram endpoints. */
/** @defgroup cm Connection management
 *  @brief Listening, connecting, accepting, rejecting, disconnecting and
 *  socket conversion. */
/** @defgroup lmr Local memory regions
 *  @brief Registration of local memory and I/O address mapping. */
/** @defgroup rmr Remote memory regions
 *  @brief Memory windows exposed to remote peers. */
/** @defgroup dto Data transfer operations
 *  @brief Posting sends, receives, RDMA and atomic operations. */
/** @defgroup srq Shared receive queues
 *  @brief Receive queues shared by several endpoints. */
/** @defgroup ud Unreliable datagram service
 *  @brief Address handles and datagram service resolution. */
/** @defgroup util Utilities and compatibility names
 *  @brief Consumer contexts, handle types, address conversion, byte order
 *  and the 1.0 compatibility names. */
/** @defgroup types Common types and constants
 *  @brief Scalar types, handles, addresses and constants shared by all
 *  objects. */
/** @defgroup status Status codes
 *  @brief The ::it_status_t values returned by IT-API functions. */

/* ------------------------------------------------------------------------ */
/* Direction annotations and binding selection                              */
/* ------------------------------------------------------------------------ */

/** @addtogroup types
 *  @{ */

#ifndef IN
/** @brief Marks an input parameter (expands to nothing). */
#define IN
#endif

#ifndef OUT
/** @brief Marks an output parameter (expands to nothing). */
#define OUT
#endif

#if defined(ITAPI_ENABLE_V20_BINDINGS) || defined(ITAPI_ENABLE_V21_BINDINGS)
#undef ITAPI_ENABLE_V10_BINDINGS
#else
#ifndef ITAPI_ENABLE_V10_BINDINGS
/** @brief Defined by this header when the IT-API 1.0 bindings are in effect,
 *  that is when neither `ITAPI_ENABLE_V20_BINDINGS` nor
 *  `ITAPI_ENABLE_V21_BINDINGS` was defined before inclusion. */
#define ITAPI_ENABLE_V10_BINDINGS
#endif
#endif

/* ------------------------------------------------------------------------ */
/* Constants                                                                */
/* ------------------------------------------------------------------------ */

/** @brief Maximum length in bytes of a VIA connection discriminator. */
#define IT_MAX_VIA_DISC_LEN 64

/** @brief Maximum length in bytes of a VIA host address. */
#define IT_MAX_VIA_ADDR_LEN 64

/** @brief Size of the private data array carried by connection management
 *  and datagram service events.
 *
 *  The specification leaves the value to the implementation; 512 bytes is
 *  enough for the largest private data of any supported transport (iWARP
 *  MPA Request/Reply). The per-operation limits that an interface adapter
 *  actually accepts are published in ::it_ia_info_t and never exceed this
 *  value. */
#define IT_MAX_PRIV_DATA 512

/** @brief Size of the NUL-terminated interface name in ::it_interface_t. */
#define IT_INTERFACE_NAME_SIZE 128

/** @brief Hard high watermark value that disables the hard watermark. */
#define IT_HARD_HI_WATERMARK_DISABLE ((size_t) -1)

/** @brief Bits of an event number that identify its event stream:
 *  `(event_number & IT_EVENT_STREAM_MASK)` is the stream of the event. */
#define IT_EVENT_STREAM_MASK 0xff000

/** @brief Timeout value meaning "wait forever". */
#define IT_TIMEOUT_INFINITE ((uint64_t)(-1))

/** @brief Event threshold value that disables threshold notification. */
#define IT_THRESHOLD_DISABLE 0

/** @} */

/* ------------------------------------------------------------------------ */
/* Status codes                                                             */
/* ------------------------------------------------------------------------ */

/** @addtogroup status
 *  @{ */

/** @brief Expands one entry of ::IT_STATUS_LIST into an enumerator.
 *  @param name enumerator name
 *  @param message message string (unused here) */
#define IT_STATUS_ENUMERATOR_(name, message) name,

/** @brief Result of an IT-API function.
 *
 *  Generated from ::IT_STATUS_LIST. The values follow the IT-API 2.1 order
 *  (::IT_SUCCESS is 0, ::IT_ERR_WAITER_LIMIT is 106) but are only
 *  meaningful by name. */
typedef enum {
    IT_STATUS_LIST(IT_STATUS_ENUMERATOR_)
} it_status_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Scalar and handle types                                                  */
/* ------------------------------------------------------------------------ */

/** @addtogroup types
 *  @{ */

/** @brief Remote access context of a memory region (remote key / STag). */
typedef uint64_t it_rmr_context_t;

#ifdef IT_32BIT
typedef uint32_t it_length_t;
#else
/** @brief Length of a memory area in bytes (32 bits if `IT_32BIT` is
 *  defined before inclusion; the library is built with 64-bit lengths, so
 *  applications must not define `IT_32BIT` unless the library was built
 *  the same way). */
typedef uint64_t it_length_t;
#endif

/** @brief Address of remote memory as used by RDMA and atomic operations. */
typedef uint64_t it_rdma_addr_t;

/** @brief Identifier of a pending datagram service request. */
typedef uint64_t it_ud_svc_req_identifier_t;

/** @brief Identifier of a pending connection establishment. */
typedef uint64_t it_cn_est_identifier_t;

/** @brief InfiniBand service ID (network byte order when used as a
 *  connection qualifier). */
typedef uint64_t it_ib_serviceid_t;

/** @brief Identifier of a datagram endpoint (InfiniBand: QP number). */
typedef uint32_t it_ud_ep_id_t;

/** @brief Key of a datagram endpoint (InfiniBand: Q_Key). */
typedef uint32_t it_ud_ep_key_t;

/** @brief InfiniBand global identifier (GID), network byte order. */
typedef struct in6_addr it_ib_gid_t;

/** @brief Consumer cookie carried by a data transfer operation and returned
 *  in its completion event. */
typedef uint64_t it_dto_cookie_t;

/** @brief Generic handle; every typed handle converts to it. */
typedef void *it_handle_t;

/**
 * @brief The null handle.
 *
 * In C it is `((it_handle_t) NULL)`, as the standard writes it.  C++ does not
 * convert `void *` to the typed handles implicitly, so there it is the null
 * pointer constant, which converts to every handle type: C++ ports can pass
 * IT_NULL_HANDLE wherever a typed handle is expected.
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define IT_NULL_HANDLE nullptr
#elif defined(__cplusplus)
#define IT_NULL_HANDLE NULL
#else
#define IT_NULL_HANDLE ((it_handle_t) NULL)
#endif

/** @brief Handle of a datagram address handle. */
typedef struct it_addr_handle_s *it_addr_handle_t;
/** @brief Handle of an endpoint. */
typedef struct it_ep_handle_s *it_ep_handle_t;
/** @brief Handle of an event dispatcher. */
typedef struct it_evd_handle_s *it_evd_handle_t;
/** @brief Handle of an interface adapter. */
typedef struct it_ia_handle_s *it_ia_handle_t;
/** @brief Handle of a listen point. */
typedef struct it_listen_handle_s *it_listen_handle_t;
/** @brief Handle of a local memory region. */
typedef struct it_lmr_handle_s *it_lmr_handle_t;
/** @brief Handle of a protection zone. */
typedef struct it_pz_handle_s *it_pz_handle_t;
/** @brief Handle of a remote memory region. */
typedef struct it_rmr_handle_s *it_rmr_handle_t;
/** @brief Handle of a datagram service request. */
typedef struct it_ud_svc_req_handle_s *it_ud_svc_req_handle_t;
/** @brief Handle of a shared receive queue. */
typedef struct it_srq_handle_s *it_srq_handle_t;
/** @brief Operating-system dependent I/O (bus or physical) address. */
typedef struct it_io_addr_s *it_io_addr_t;

/** @brief Consumer context attached to a handle. */
typedef union {
    void *ptr;       /**< context as a pointer */
    uint64_t index;  /**< context as a 64-bit index */
} it_context_t;

/** @brief Boolean value. */
typedef enum {
    IT_FALSE = 0,    /**< false */
    IT_TRUE = 1      /**< true */
} it_boolean_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Memory, addressing and data transfer enumerations                        */
/* ------------------------------------------------------------------------ */

/** @addtogroup lmr
 *  @{ */

/** @brief Memory access privileges (bit mask). */
typedef enum {
    IT_PRIV_NONE = 0x0000,          /**< no access (kept for IT-API 1.0 compatibility) */
    IT_PRIV_LOCAL_READ = 0x0001,    /**< local read access */
    IT_PRIV_LOCAL_WRITE = 0x0002,   /**< local write access */
    IT_PRIV_LOCAL = 0x0003,         /**< local read and write access */
    IT_PRIV_DEFAULT = 0x0003,       /**< deprecated alias of ::IT_PRIV_LOCAL */
    IT_PRIV_REMOTE_READ = 0x0004,   /**< remote read access (RDMA Read target) */
    IT_PRIV_REMOTE_WRITE = 0x0008,  /**< remote write access (RDMA Write target) */
    IT_PRIV_REMOTE = 0x000c,        /**< remote read and write access */
    IT_PRIV_ATOMIC = 0x0010,        /**< remote atomic access */
    IT_PRIV_ALL = 0x001f            /**< every privilege */
} it_mem_priv_t;

/** @brief Local memory region creation flags (bit mask; note that
 *  ::IT_LMR_FLAG_NONE is 1, not 0). */
typedef enum {
    IT_LMR_FLAG_NONE = 0x0001,          /**< no special behaviour */
    IT_LMR_FLAG_SHARED = 0x0002,        /**< share the registration with LMRs of the same shared id */
    IT_LMR_FLAG_NONCOHERENT = 0x0004,   /**< memory is not kept coherent with the adapter */
    IT_LMR_FLAG_NON_SHAREABLE = 0x0008  /**< the registration may not be shared */
} it_lmr_flag_t;

/** @brief Addressing mode of a memory region. */
typedef enum {
    IT_ADDR_MODE_ABSOLUTE = 0,  /**< addresses are virtual addresses */
    IT_ADDR_MODE_RELATIVE = 1   /**< addresses are offsets from the region start */
} it_addr_mode_t;

/** @brief Kind of I/O buffer list. */
typedef enum {
    IT_IOBL_PAGE_LIST = 0x0001,     /**< list of equally sized pages */
    IT_IOBL_BLOCK_LIST = 0x0002,    /**< list of equally sized blocks */
    IT_IOBL_VE_PAGE_LIST = 0x0004   /**< list of variable-length elements */
} it_iobl_type_t;

/** @} */

/** @addtogroup rmr
 *  @{ */

/** @brief Type of a remote memory region. */
typedef enum {
    IT_RMR_TYPE_DEFAULT = 0,  /**< the adapter's default type */
    IT_RMR_TYPE_NARROW = 1,   /**< usable through a single endpoint */
    IT_RMR_TYPE_WIDE = 2      /**< usable through any endpoint of the protection zone */
} it_rmr_type_t;

/** @} */

/** @addtogroup dto
 *  @{ */

/** @brief Completion status of a data transfer operation. */
typedef enum {
    IT_DTO_SUCCESS = 0,                  /**< the operation completed successfully */
    IT_DTO_ERR_LOCAL_LENGTH = 1,         /**< local length error (e.g. receive buffer too small) */
    IT_DTO_ERR_LOCAL_EP = 2,             /**< local endpoint error */
    IT_DTO_ERR_LOCAL_PROTECTION = 3,     /**< local protection error */
    IT_DTO_ERR_FLUSHED = 4,              /**< flushed because the endpoint left the connected state */
    IT_RMR_OPERATION_FAILED = 5,         /**< a remote memory region link or unlink failed */
    IT_DTO_ERR_BAD_RESPONSE = 6,         /**< unexpected response from the peer */
    IT_DTO_ERR_REMOTE_ACCESS = 7,        /**< the peer refused access to its memory */
    IT_DTO_ERR_REMOTE_RESPONDER = 8,     /**< the peer could not perform the operation */
    IT_DTO_ERR_TRANSPORT = 9,            /**< transport error (retries exhausted, connection lost) */
    IT_DTO_ERR_RECEIVER_NOT_READY = 10,  /**< the peer had no receive posted, retries exhausted */
    IT_DTO_ERR_PARTIAL_PACKET = 11,      /**< a partial packet was received */
    IT_DTO_ERR_LOCAL_MM_OPERATION = 12   /**< a local memory management operation failed */
} it_dto_status_t;

/** @brief Flags of a data transfer operation (bit mask). */
typedef enum {
    IT_COMPLETION_FLAG = 0x01,      /**< a successful completion generates an event */
    IT_NOTIFY_FLAG = 0x02,          /**< the completion triggers notification */
    IT_SOLICITED_WAIT_FLAG = 0x04,  /**< the peer's receive completion notifies the peer */
    IT_BARRIER_FENCE_FLAG = 0x08,   /**< start only after earlier RDMA Reads of the endpoint completed */
    IT_UNLINK_FENCE_FLAG = 0x10,    /**< an unlink waits for earlier send-queue requests */
    IT_UNLINK_LOCAL_SINK = 0x20,    /**< unlink the local data sink when the operation completes */
    IT_COALESCE_WR_FLAG = 0x40      /**< the request may be queued for later processing (not confirmed as standard) */
} it_dto_flags_t;

/** @brief Atomic operation code. */
typedef enum {
    IT_COMPARE_AND_SWAP = 0,  /**< 64-bit compare and swap */
    IT_FETCH_AND_ADD = 1      /**< 64-bit fetch and add */
} it_atomic_op_t;

/** @brief Flags of a datagram receive completion (bit mask). */
typedef enum {
    IT_UD_IB_GRH_PRESENT = 0x01  /**< the receive buffer starts with an InfiniBand GRH */
} it_dto_ud_flags_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Addresses, connection qualifiers and transports                          */
/* ------------------------------------------------------------------------ */

/** @addtogroup types
 *  @{ */

/** @brief Type of a connection qualifier (also used as a bit mask). */
typedef enum {
    IT_IANA_PORT = 0x01,          /**< IANA (TCP/UDP) port */
    IT_IB_SERVICEID = 0x02,       /**< InfiniBand service ID */
    IT_VIA_DISCRIMINATOR = 0x04,  /**< VIA discriminator */
    IT_IANA_LR_PORT = 0x08        /**< pair of local and remote IANA ports */
} it_conn_qual_type_t;

/** @brief VIA connection discriminator. */
typedef struct {
    uint16_t len;                                       /**< number of valid bytes */
    unsigned char discriminator[IT_MAX_VIA_DISC_LEN];   /**< discriminator bytes */
} it_via_discriminator_t;

/** @brief Local and remote IANA ports. */
typedef struct {
    uint16_t local;   /**< local port, network byte order (0: any) */
    uint16_t remote;  /**< remote port, network byte order */
} it_iana_lr_port_t;

/** @brief Connection qualifier: identifies the service to connect to or
 *  listen on. */
typedef struct {
    it_conn_qual_type_t type;  /**< selects the member of @c conn_qual */
    /** @brief Qualifier value selected by @c type. */
    union {
        uint16_t port;                          /**< IANA port, network byte order */
        it_ib_serviceid_t serviceid;            /**< InfiniBand service ID, network byte order */
        it_via_discriminator_t discriminator;   /**< VIA discriminator */
        it_iana_lr_port_t lr_port;              /**< local and remote ports, network byte order */
    } conn_qual;               /**< qualifier value */
} it_conn_qual_t;

/** @brief Type of a network address. */
typedef enum {
    IT_IPV4 = 0x1,          /**< IPv4 address */
    IT_IPV6 = 0x2,          /**< IPv6 address */
    IT_IB_GID = 0x3,        /**< InfiniBand GID */
    IT_VIA_HOSTADDR = 0x4   /**< VIA host address */
} it_net_addr_type_t;

/** @brief VIA host address. */
typedef struct {
    uint16_t len;                                /**< number of valid bytes */
    unsigned char hostaddr[IT_MAX_VIA_ADDR_LEN]; /**< address bytes */
} it_via_net_addr_t;

/** @brief Network address of any supported type. */
typedef struct {
    it_net_addr_type_t addr_type;  /**< selects the member of @c addr */
    /** @brief Address value selected by @c addr_type. */
    union {
        struct in_addr ipv4;       /**< IPv4 address */
        struct in6_addr ipv6;      /**< IPv6 address */
        it_ib_gid_t gid;           /**< InfiniBand GID */
        it_via_net_addr_t via;     /**< VIA host address */
    } addr;                        /**< address value */
} it_net_addr_t;

/** @brief Transport of an interface adapter. */
typedef enum {
    IT_IB_TRANSPORT = 1,         /**< InfiniBand */
    IT_VIA_IP_TRANSPORT = 2,     /**< VIA over IP */
    IT_VIA_FC_TRANSPORT = 3,     /**< VIA over Fibre Channel */
    IT_IWARP_TCP_TRANSPORT = 4,  /**< iWARP (RDMA over TCP) */
    IT_VENDOR_TRANSPORT = 1000   /**< vendor-specific transport */
} it_transport_type_t;

/** @brief Transport service type (also used as a bit mask). */
typedef enum {
    IT_RC_SERVICE = 0x1,  /**< reliable connected service */
    IT_UD_SERVICE = 0x2   /**< unreliable datagram service */
} it_transport_service_type_t;

/** @brief IP version of an iWARP endpoint description. */
typedef enum {
    IT_IP_VERS_IPV4 = 0x1,  /**< IPv4 */
    IT_IP_VERS_IPV6 = 0x2   /**< IPv6 */
} it_ip_vers_t;

/* ------------------------------------------------------------------------ */
/* Paths                                                                    */
/* ------------------------------------------------------------------------ */

/** @brief InfiniBand path description (mirrors the fields of an IB CM REQ;
 *  also used as address handle attributes). */
typedef struct {
    uint16_t partition_key;        /**< partition key (P_Key) */
    uint8_t path_mtu : 4;          /**< path MTU (IB encoding) */
    uint8_t packet_lifetime : 6;   /**< packet lifetime (IB encoding) */
    uint16_t local_port_lid;       /**< local LID; for address handles its low bits are the source path bits */
    uint16_t remote_port_lid;      /**< remote LID; the destination LID of an address handle */
    it_ib_gid_t local_port_gid;    /**< local GID, network byte order */
    it_ib_gid_t remote_port_gid;   /**< remote GID, network byte order; the DGID or MGID of an address handle */
    uint8_t packet_rate : 6;       /**< packet rate (the maximum static rate of an address handle) */
    uint8_t sl : 4;                /**< service level */
    uint8_t subnet_local : 1;      /**< set if the peer is on the local subnet; when clear the GRH fields below are used */
    uint32_t flow_label : 20;      /**< GRH flow label */
    uint8_t traffic_class;         /**< GRH traffic class */
    uint8_t hop_limit;             /**< GRH hop limit */
} it_ib_net_endpoint_t;

/** @brief VIA path description. */
typedef it_via_net_addr_t it_via_net_endpoint_t;

/** @brief iWARP path description: the local and remote IP addresses. */
typedef struct {
    it_ip_vers_t ip_vers;          /**< selects the member used in @c laddr and @c raddr */
    /** @brief Local IP address. */
    union {
        struct in_addr ipv4;       /**< IPv4 address */
        struct in6_addr ipv6;      /**< IPv6 address */
    } laddr;                       /**< local IP address */
    /** @brief Remote IP address. */
    union {
        struct in_addr ipv4;       /**< IPv4 address */
        struct in6_addr ipv6;      /**< IPv6 address */
    } raddr;                       /**< remote IP address */
} it_iwarp_net_endpoint_t;

/** @brief Transport-specific part of a path (the type of it_path_t::remote).
 *
 *  Project extension: the specification leaves this union type unnamed; it
 *  is named here so that the union can be reached under two spellings. */
typedef union {
    it_ib_net_endpoint_t ib;         /**< InfiniBand path */
    it_via_net_endpoint_t via;       /**< VIA path */
    it_iwarp_net_endpoint_t iwarp;   /**< iWARP path */
} itx_path_remote_t;

/** @brief Path to a remote endpoint, as used to connect or to build an
 *  address handle. */
typedef struct {
    size_t spigot_id;   /**< local spigot (port) the path starts at */
    uint64_t timeout;   /**< connection establishment timeout in microseconds (active side only) */
#if defined(__cplusplus) || \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
    union {
        itx_path_remote_t remote;  /**< transport-specific part of the path */
        itx_path_remote_t u;       /**< project extension: alternative spelling of @c remote used by the IBM SKV header */
    };
#else
    itx_path_remote_t remote;      /**< transport-specific part of the path (also reachable as @c u when compiled as C11 or C++, a project extension) */
#endif
} it_path_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Interface adapter information                                            */
/* ------------------------------------------------------------------------ */

/** @addtogroup ia
 *  @{ */

/** @brief Description of one spigot (port) of an interface adapter. */
typedef struct {
    size_t spigot_id;                            /**< identifier of the spigot */
    size_t max_rc_send_len;                      /**< largest reliable-connected send in bytes */
    size_t max_rc_rdma_len;                      /**< largest RDMA transfer in bytes */
    size_t max_ud_send_len;                      /**< largest datagram send in bytes */
    it_boolean_t spigot_online;                  /**< whether the spigot is currently online */
    it_conn_qual_type_t active_side_conn_qual;   /**< mask of qualifier types usable by it_ep_connect() and it_ud_service_request_handle_create() */
    it_conn_qual_type_t passive_side_conn_qual;  /**< mask of qualifier types usable by it_listen_create() */
    size_t num_net_addr;                         /**< number of entries in @c net_addr */
    it_net_addr_t *net_addr;                     /**< network addresses of the spigot */
} it_spigot_info_t;

/** @brief Vendor information of an InfiniBand adapter. */
typedef struct {
    uint32_t vendor : 24;  /**< vendor ID (IEEE OUI) */
    uint16_t device;       /**< device ID */
    uint32_t revision;     /**< device revision */
} it_vendor_ib_t;

/** @brief Vendor information of a VIA adapter. */
typedef struct {
    char name[64];           /**< NUL-terminated adapter name */
    unsigned long hardware;  /**< hardware version */
    unsigned long provider;  /**< provider version */
} it_vendor_via_t;

/** @brief Vendor information of an iWARP adapter. */
typedef struct {
    it_boolean_t valid_vid;  /**< whether @c vid is valid */
    unsigned char vid[64];   /**< vendor identification bytes */
} it_vendor_iwarp_tcp_t;

/** @brief Attributes of an interface adapter, returned by it_ia_query(). */
typedef struct {
    char *ia_name;                                 /**< name of the interface adapter */
    uint32_t api_major_version;                    /**< major version of the newest IT-API supported */
    uint32_t api_minor_version;                    /**< minor version of the newest IT-API supported */
    uint32_t sw_major_version;                     /**< major version of the provider software */
    uint32_t sw_minor_version;                     /**< minor version of the provider software */
    /** @brief Transport-specific vendor information, selected by @c transport_type. */
    union {
        it_vendor_ib_t ib;                         /**< InfiniBand vendor information */
        it_vendor_via_t via;                       /**< VIA vendor information */
        it_vendor_iwarp_tcp_t iwarp;               /**< iWARP vendor information */
    } vendor;                                      /**< vendor information */
    uint32_t dto_alignment_hint;                   /**< buffer alignment recommended for data transfers */
    it_transport_type_t transport_type;            /**< the one transport of the adapter */
    it_transport_service_type_t supported_service_types; /**< mask of supported services */
    it_boolean_t ep_work_queues_resizable;         /**< endpoint work queues can be resized by it_ep_modify() */
    it_boolean_t three_way_handshake_support;      /**< ::IT_CONNECT_FLAG_THREE_WAY is supported */
    it_boolean_t private_data_support;             /**< connection management private data is supported */
    it_boolean_t max_message_size_support;         /**< it_conn_request_event_t::max_message_size is valid */
    it_boolean_t ird_ord_ia_support;               /**< the IRD/ORD fields of connection events are valid */
    it_boolean_t ird_ord_suppressible;             /**< the IRD/ORD exchange can be suppressed */
    it_boolean_t spigot_online_support;            /**< ::IT_ASYNC_UNAFF_SPIGOT_ONLINE events are generated */
    it_boolean_t spigot_offline_support;           /**< ::IT_ASYNC_UNAFF_SPIGOT_OFFLINE events are generated */
    size_t connect_private_data_len;               /**< maximum private data of it_ep_connect() */
    size_t accept_private_data_len;                /**< maximum private data of it_ep_accept() */
    size_t reject_private_data_len;                /**< maximum private data of it_reject() */
    size_t disconnect_private_data_len;            /**< maximum private data of it_ep_disconnect() */
    size_t ud_req_private_data_len;                /**< maximum private data of a datagram service request */
    size_t ud_rep_private_data_len;                /**< maximum private data of a datagram service reply */
    size_t num_spigots;                            /**< number of entries in @c spigot_info */
    it_spigot_info_t *spigot_info;                 /**< description of each spigot */
    it_evd_handle_t affiliated_err_evd;            /**< affiliated asynchronous event dispatcher, or ::IT_NULL_HANDLE */
    it_evd_handle_t unaffiliated_err_evd;          /**< unaffiliated asynchronous event dispatcher, or ::IT_NULL_HANDLE */
    it_boolean_t srq_support;                      /**< shared receive queues are supported */
    it_boolean_t hard_hi_watermark_support;        /**< endpoint hard high watermarks are supported */
    it_boolean_t soft_hi_watermark_support;        /**< endpoint soft high watermarks are supported */
    it_boolean_t srq_resizable;                    /**< shared receive queues can be resized */
    it_boolean_t extended_iwarp_qp_states;         /**< the extended iWARP endpoint states are used */
    it_boolean_t socket_conversion_support;        /**< it_socket_convert() is supported */
    it_boolean_t rdma_read_ord_increasable;        /**< the outbound RDMA Read depth can be increased */
    it_boolean_t rdma_read_ird_modifiable;         /**< the inbound RDMA Read depth can be changed */
    it_rmr_type_t rmr_types_supported;             /**< supported remote memory region types (narrow, wide or both) */
    it_boolean_t addr_mode_relative_support;       /**< ::IT_ADDR_MODE_RELATIVE is supported */
    it_boolean_t rdma_read_requires_remote_write;  /**< an RDMA Read sink needs remote write access and RDMA Write enabled */
    it_boolean_t ep_rdma_enables_modifiable;       /**< the RDMA enables of an endpoint can be modified */
    it_boolean_t rdma_read_local_extensions;       /**< it_post_rdma_read_to_rmr() and ::IT_UNLINK_LOCAL_SINK are supported */
    it_boolean_t dto_evd_overflow_detection;       /**< overflow of data transfer event dispatchers is detected */
    it_boolean_t atomic_support;                   /**< atomic operations are supported */
    it_boolean_t lmr_link_support;                 /**< unlinked LMRs and it_lmr_link() are supported (privileged) */
    it_boolean_t direct_lmr_handle_support;        /**< a direct LMR handle is provided (privileged) */
    it_lmr_handle_t direct_lmr_handle;             /**< the direct LMR handle, or ::IT_NULL_HANDLE */
    it_boolean_t post_send_unlink_remote_support;  /**< it_post_send_and_unlink() is supported */
    it_boolean_t narrow_rmr_unlink_support;        /**< narrow RMRs can be unlinked */
    it_boolean_t wide_rmr_unlink_support;          /**< wide RMRs can be unlinked */
    it_boolean_t unlink_fence_support;             /**< ::IT_UNLINK_FENCE_FLAG is supported */
    it_iobl_type_t iobl_types_supported;           /**< mask of supported I/O buffer list types */
} it_ia_info_t;

/** @brief Entry of the interface list returned by it_interface_list(). */
typedef struct {
    uint32_t major_version;                 /**< major version of the newest IT-API supported */
    uint32_t minor_version;                 /**< minor version of the newest IT-API supported */
    it_transport_type_t transport_type;     /**< transport of the interface */
    char name[IT_INTERFACE_NAME_SIZE];      /**< NUL-terminated name to pass to it_ia_create() */
} it_interface_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Memory descriptors                                                       */
/* ------------------------------------------------------------------------ */

/** @addtogroup dto
 *  @{ */

/** @brief Local data segment: part of a local memory region. */
typedef struct {
    it_lmr_handle_t lmr;    /**< local memory region holding the segment */
    /** @brief Start of the segment, interpreted per the addressing mode of the LMR. */
    union {
        void *abs;          /**< virtual address (absolute addressing) */
        it_length_t rel;    /**< offset in the region (relative addressing) */
        it_io_addr_t io;    /**< I/O address (I/O buffer list regions) */
    } addr;                 /**< start of the segment */
    it_length_t length;     /**< length of the segment in bytes */
} it_lmr_triplet_t;

/** @brief Local data segment in a remote memory region. */
typedef struct {
    it_rmr_handle_t rmr;    /**< remote memory region holding the segment */
    /** @brief Start of the segment, interpreted per the addressing mode of the RMR. */
    union {
        void *abs;          /**< virtual address (absolute addressing) */
        it_length_t rel;    /**< offset in the region (relative addressing) */
    } addr;                 /**< start of the segment */
    it_length_t length;     /**< length of the segment in bytes */
} it_rmr_triplet_t;

/** @} */

/** @addtogroup lmr
 *  @{ */

/** @brief Element of a variable-length I/O buffer list. */
typedef struct {
    it_io_addr_t io_addr;   /**< I/O address of the element */
    it_length_t elt_len;    /**< length of the element in bytes */
} it_iobl_ve_elt_t;

/** @brief I/O buffer list: memory described by I/O addresses. */
typedef struct {
    it_iobl_type_t iobl_type;   /**< selects the member of @c list */
    /** @brief Element list selected by @c iobl_type. */
    union {
        /** @brief Elements of constant length. */
        struct {
            it_io_addr_t *list_elt;   /**< array of element I/O addresses */
            it_length_t elt_len;      /**< length of every element */
        } ce_list;                    /**< constant-length list (page and block lists) */
        /** @brief Elements of variable length. */
        struct {
            it_iobl_ve_elt_t *list_elt;  /**< array of elements */
        } ve_list;                       /**< variable-length list */
    } list;                     /**< element list */
    size_t num_elts;            /**< number of elements */
    it_length_t fbo;            /**< first byte offset in the first element */
} it_iobl_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Endpoint attributes, parameters and states                               */
/* ------------------------------------------------------------------------ */

/** @addtogroup ep
 *  @{ */

/** @brief Attributes specific to reliable-connected endpoints. */
typedef struct {
    it_boolean_t rdma_read_enable;    /**< incoming RDMA Reads are allowed (::IT_EP_PARAM_RDMA_RD_ENABLE) */
    it_boolean_t rdma_write_enable;   /**< incoming RDMA Writes are allowed (::IT_EP_PARAM_RDMA_WR_ENABLE) */
    size_t max_rdma_read_segments;    /**< maximum segments of an RDMA Read (::IT_EP_PARAM_MAX_RDMA_READ_SEG) */
    size_t max_rdma_write_segments;   /**< maximum segments of an RDMA Write (::IT_EP_PARAM_MAX_RDMA_WRITE_SEG) */
    uint32_t rdma_read_ird;           /**< inbound RDMA Read depth (::IT_EP_PARAM_MAX_IRD; 1.0 name rdma_read_inflight_incoming) */
    uint32_t rdma_read_ord;           /**< outbound RDMA Read depth (::IT_EP_PARAM_MAX_ORD; 1.0 name rdma_read_inflight_outgoing) */
    it_srq_handle_t srq;              /**< shared receive queue of the endpoint (::IT_EP_PARAM_SRQ) */
    size_t soft_hi_watermark;         /**< soft high watermark (::IT_EP_PARAM_SOFT_HI_WATERMARK) */
    size_t hard_hi_watermark;         /**< hard high watermark (::IT_EP_PARAM_HARD_HI_WATERMARK) */
    it_boolean_t atomics_enable;      /**< incoming atomic operations are allowed (::IT_EP_PARAM_ATOMICS_ENABLE) */
} it_rc_only_attributes_t;

/** @brief Address information of a datagram endpoint. */
typedef struct {
    it_ud_ep_id_t ud_ep_id;    /**< endpoint identifier (::IT_EP_PARAM_EP_ID) */
    it_ud_ep_key_t ud_ep_key;  /**< endpoint key (::IT_EP_PARAM_EP_KEY) */
} it_remote_ep_info_t;

/** @brief Attributes specific to datagram endpoints. */
typedef struct {
    it_remote_ep_info_t ep_info;  /**< identifier and key of the endpoint */
} it_ud_only_attributes_t;

/** @brief Service-specific endpoint attributes. */
typedef union {
    it_rc_only_attributes_t rc;   /**< reliable-connected attributes */
    it_ud_only_attributes_t ud;   /**< datagram attributes */
} it_service_attributes_t;

/** @brief Attributes of an endpoint. */
typedef struct {
    size_t max_dto_payload_size;   /**< maximum payload of a data transfer (::IT_EP_PARAM_MAX_PAYLOAD) */
    size_t max_request_dtos;       /**< maximum outstanding requests (::IT_EP_PARAM_MAX_REQ_DTO) */
    size_t max_recv_dtos;          /**< maximum outstanding receives (::IT_EP_PARAM_MAX_RECV_DTO) */
    size_t max_send_segments;      /**< maximum segments of a send (::IT_EP_PARAM_MAX_SEND_SEG) */
    size_t max_recv_segments;      /**< maximum segments of a receive (::IT_EP_PARAM_MAX_RECV_SEG) */
    it_service_attributes_t srv;   /**< service-specific attributes */
    it_boolean_t priv_ops_enable;  /**< privileged operations are enabled (::IT_EP_PARAM_PRIV_OPS_ENABLE) */
} it_ep_attributes_t;

/** @brief State of a reliable-connected endpoint. */
typedef enum {
    IT_EP_STATE_UNCONNECTED = 0,                 /**< not connected; ready to connect or accept */
    IT_EP_STATE_ACTIVE1_CONNECTION_PENDING = 1,  /**< connect issued, waiting for the peer */
    IT_EP_STATE_ACTIVE2_CONNECTION_PENDING = 2,  /**< three-way handshake: waiting for the local accept or reject */
    IT_EP_STATE_PASSIVE_CONNECTION_PENDING = 3,  /**< accept issued, waiting for establishment */
    IT_EP_STATE_CONNECTED = 4,                   /**< connected */
    IT_EP_STATE_NONOPERATIONAL = 5,              /**< disconnected or broken; must be reset to be reused */
    IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ = 6  /**< iWARP: waiting for the transition request to RDMA mode */
} it_ep_state_rc_t;

/** @brief State of a datagram endpoint. */
typedef enum {
    IT_EP_STATE_UD_NONOPERATIONAL = 0,  /**< not operational */
    IT_EP_STATE_UD_OPERATIONAL = 1      /**< operational */
} it_ep_state_ud_t;

/** @brief State of an endpoint of either service type. */
typedef union {
    it_ep_state_rc_t rc;   /**< state of a reliable-connected endpoint */
    it_ep_state_ud_t ud;   /**< state of a datagram endpoint */
} it_ep_state_t;

/** @brief Parameters of an endpoint, returned by it_ep_query(). */
typedef struct {
    it_ia_handle_t ia;                          /**< interface adapter (::IT_EP_PARAM_IA) */
    size_t spigot_id;                           /**< spigot (::IT_EP_PARAM_SPIGOT) */
    it_ep_state_t ep_state;                     /**< state (::IT_EP_PARAM_STATE) */
    it_transport_service_type_t service_type;   /**< service type (::IT_EP_PARAM_SERV_TYPE) */
    it_path_t dst_path;                         /**< path to the peer (::IT_EP_PARAM_PATH) */
    it_pz_handle_t pz;                          /**< protection zone (::IT_EP_PARAM_PZ) */
    it_evd_handle_t request_sevd;               /**< request event dispatcher (::IT_EP_PARAM_REQ_SEVD) */
    it_evd_handle_t recv_sevd;                  /**< receive event dispatcher (::IT_EP_PARAM_RECV_SEVD) */
    it_evd_handle_t connect_sevd;               /**< connection event dispatcher (::IT_EP_PARAM_CONN_SEVD) */
    it_ep_attributes_t attr;                    /**< attributes (masks as documented per field) */
} it_ep_param_t;

/** @brief Reliable-connected endpoint creation flags (bit mask). */
typedef enum {
    IT_EP_NO_FLAG = 0x00,    /**< no flag */
    IT_EP_REUSEADDR = 0x01,  /**< allow reuse of a local address still in use */
    IT_EP_SRQ = 0x02         /**< the endpoint receives through a shared receive queue */
} it_ep_rc_creation_flags_t;

/** @brief Selects endpoint parameters to query or modify (bit mask). */
typedef enum {
    IT_EP_PARAM_ALL = 0x00000001,                /**< all parameters */
    IT_EP_PARAM_IA = 0x00000002,                 /**< it_ep_param_t::ia */
    IT_EP_PARAM_SPIGOT = 0x00000004,             /**< it_ep_param_t::spigot_id */
    IT_EP_PARAM_STATE = 0x00000008,              /**< it_ep_param_t::ep_state */
    IT_EP_PARAM_SERV_TYPE = 0x00000010,          /**< it_ep_param_t::service_type */
    IT_EP_PARAM_PATH = 0x00000020,               /**< it_ep_param_t::dst_path */
    IT_EP_PARAM_PZ = 0x00000040,                 /**< it_ep_param_t::pz */
    IT_EP_PARAM_REQ_SEVD = 0x00000080,           /**< it_ep_param_t::request_sevd */
    IT_EP_PARAM_RECV_SEVD = 0x00000100,          /**< it_ep_param_t::recv_sevd */
    IT_EP_PARAM_CONN_SEVD = 0x00000200,          /**< it_ep_param_t::connect_sevd */
    IT_EP_PARAM_RDMA_RD_ENABLE = 0x00000400,     /**< it_rc_only_attributes_t::rdma_read_enable */
    IT_EP_PARAM_RDMA_WR_ENABLE = 0x00000800,     /**< it_rc_only_attributes_t::rdma_write_enable */
    IT_EP_PARAM_MAX_RDMA_READ_SEG = 0x00001000,  /**< it_rc_only_attributes_t::max_rdma_read_segments */
    IT_EP_PARAM_MAX_RDMA_WRITE_SEG = 0x00002000, /**< it_rc_only_attributes_t::max_rdma_write_segments */
    IT_EP_PARAM_MAX_IRD = 0x00004000,            /**< it_rc_only_attributes_t::rdma_read_ird */
    IT_EP_PARAM_MAX_ORD = 0x00008000,            /**< it_rc_only_attributes_t::rdma_read_ord */
    IT_EP_PARAM_EP_ID = 0x00010000,              /**< it_remote_ep_info_t::ud_ep_id */
    IT_EP_PARAM_EP_KEY = 0x00020000,             /**< it_remote_ep_info_t::ud_ep_key */
    IT_EP_PARAM_MAX_PAYLOAD = 0x00040000,        /**< it_ep_attributes_t::max_dto_payload_size */
    IT_EP_PARAM_MAX_REQ_DTO = 0x00080000,        /**< it_ep_attributes_t::max_request_dtos */
    IT_EP_PARAM_MAX_RECV_DTO = 0x00100000,       /**< it_ep_attributes_t::max_recv_dtos */
    IT_EP_PARAM_MAX_SEND_SEG = 0x00200000,       /**< it_ep_attributes_t::max_send_segments */
    IT_EP_PARAM_MAX_RECV_SEG = 0x00400000,       /**< it_ep_attributes_t::max_recv_segments */
    IT_EP_PARAM_SRQ = 0x00800000,                /**< it_rc_only_attributes_t::srq */
    IT_EP_PARAM_SOFT_HI_WATERMARK = 0x01000000,  /**< it_rc_only_attributes_t::soft_hi_watermark */
    IT_EP_PARAM_HARD_HI_WATERMARK = 0x02000000,  /**< it_rc_only_attributes_t::hard_hi_watermark */
    IT_EP_PARAM_ATOMICS_ENABLE = 0x04000000,     /**< it_rc_only_attributes_t::atomics_enable */
    IT_EP_PARAM_PRIV_OPS_ENABLE = 0x08000000     /**< it_ep_attributes_t::priv_ops_enable */
} it_ep_param_mask_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Connection establishment                                                 */
/* ------------------------------------------------------------------------ */

/** @addtogroup cm
 *  @{ */

/** @brief InfiniBand connection attributes (fields of an IB CM REQ). */
typedef struct {
    uint8_t remote_cm_timeout : 5;   /**< remote CM response timeout (IB encoding) */
    uint8_t local_cm_timeout : 5;    /**< local CM response timeout (IB encoding) */
    uint8_t retry_count : 3;         /**< transport retry count */
    uint8_t rnr_retry_count : 3;     /**< receiver-not-ready retry count */
    uint8_t max_cm_retries : 4;      /**< maximum CM message retries */
    uint8_t local_ack_timeout : 5;   /**< local acknowledgement timeout (IB encoding) */
} it_ib_conn_attributes_t;

/** @brief VIA connection attributes (none are defined). */
typedef struct {
    void *unused;   /**< placeholder */
} it_via_conn_attributes_t;

/** @brief iWARP connection attributes (none are defined). */
typedef struct {
    void *unused;   /**< placeholder */
} it_iwarp_conn_attributes_t;

/** @brief Transport-specific connection attributes. */
typedef union {
    it_ib_conn_attributes_t ib;         /**< InfiniBand attributes */
    it_via_conn_attributes_t via;       /**< VIA attributes */
    it_iwarp_conn_attributes_t iwarp;   /**< iWARP attributes */
} it_conn_attributes_t;

/** @brief Connection establishment flags (bit mask). */
typedef enum {
    IT_CONNECT_FLAG_TWO_WAY = 0x0001,      /**< two-way handshake */
    IT_CONNECT_FLAG_THREE_WAY = 0x0002,    /**< three-way handshake (the active side accepts too) */
    IT_CONNECT_SUPPRESS_IRD_ORD = 0x0004   /**< do not exchange IRD/ORD automatically */
} it_cn_est_flags_t;

/** @brief Listen point creation flags (bit mask). */
typedef enum {
    IT_LISTEN_NO_FLAG = 0x0000,            /**< the adapter chooses the connection qualifier */
    IT_LISTEN_CONN_QUAL_INPUT = 0x0001,    /**< the caller supplies the connection qualifier */
    IT_LISTEN_SUPPRESS_IRD_ORD = 0x0002    /**< do not exchange IRD/ORD automatically */
} it_listen_flags_t;

/** @brief Selects listen point parameters to query (bit mask). */
typedef enum {
    IT_LISTEN_PARAM_ALL = 0x0001,          /**< all parameters */
    IT_LISTEN_PARAM_IA_HANDLE = 0x0002,    /**< it_listen_param_t::ia_handle */
    IT_LISTEN_PARAM_SPIGOT_ID = 0x0004,    /**< it_listen_param_t::spigot_id */
    IT_LISTEN_PARAM_CONNECT_EVD = 0x0008,  /**< it_listen_param_t::connect_evd */
    IT_LISTEN_PARAM_CONN_QUAL = 0x0010     /**< it_listen_param_t::connect_qual */
} it_listen_param_mask_t;

/** @brief Parameters of a listen point, returned by it_listen_query(). */
typedef struct {
    it_ia_handle_t ia_handle;       /**< interface adapter */
    size_t spigot_id;               /**< spigot listened on */
    it_evd_handle_t connect_evd;    /**< event dispatcher receiving connection requests */
    it_conn_qual_t connect_qual;    /**< connection qualifier listened on */
} it_listen_param_t;

/** @brief Reason of a connection rejection not issued by the peer. */
typedef enum {
    IT_CN_REJ_OTHER = 0,            /**< other or unknown reason */
    IT_CN_REJ_TIMEOUT = 1,          /**< the peer did not answer in time */
    IT_CN_REJ_BAD_PATH = 2,         /**< the path is unusable */
    IT_CN_REJ_STALE_CONN = 3,       /**< stale connection */
    IT_CN_REJ_BAD_ORD = 4,          /**< the RDMA Read depths cannot be satisfied */
    IT_CN_REJ_RESOURCES = 5,        /**< the peer lacks resources */
    IT_CN_REJ_BAD_CONN_PARMS = 6    /**< invalid connection parameters */
} it_conn_reject_code_t;

/** @brief Socket conversion flags (bit mask). */
typedef enum {
    IT_SC_DEFAULT = 0x0000,     /**< perform the request/reply exchange during conversion */
    IT_SC_NO_REQ_REP = 0x0001   /**< skip the request/reply exchange */
} it_sc_flags_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Datagram addressing and service resolution                               */
/* ------------------------------------------------------------------------ */

/** @addtogroup ud
 *  @{ */

/** @brief InfiniBand datagram destination. */
typedef struct {
    it_addr_handle_t addr;          /**< address handle of the destination */
    it_remote_ep_info_t ep_info;    /**< identifier and key of the destination endpoint */
} it_ib_ud_addr_t;

/** @brief Type of a datagram destination. */
typedef enum {
    IT_DG_TYPE_IB_UD = 0    /**< InfiniBand unreliable datagram */
} it_dg_type_t;

/** @brief Destination of a datagram send. */
typedef struct {
    it_dg_type_t type;      /**< selects the member of @c addr */
    /** @brief Destination selected by @c type. */
    union {
        it_ib_ud_addr_t ud; /**< InfiniBand datagram destination */
    } addr;                 /**< destination */
} it_dg_remote_ep_addr_t;

/** @brief Address handle creation flags (bit mask). */
typedef enum {
    IT_AH_PATH_COMPLETE = 0x1   /**< the path is complete and needs no resolution */
} it_ah_flags_t;

/** @brief Selects address handle parameters to query or modify (bit mask). */
typedef enum {
    IT_ADDR_PARAM_ALL = 0x0001,     /**< all parameters */
    IT_ADDR_PARAM_IA = 0x0002,      /**< it_addr_param_t::ia */
    IT_ADDR_PARAM_PZ = 0x0004,      /**< it_addr_param_t::pz */
    IT_ADDR_PARAM_PATH = 0x0008     /**< it_addr_param_t::path */
} it_addr_param_mask_t;

/** @brief Parameters of an address handle. */
typedef struct {
    it_ia_handle_t ia;  /**< interface adapter */
    it_pz_handle_t pz;  /**< protection zone */
    it_path_t path;     /**< path to the destination */
} it_addr_param_t;

/** @brief Status of a datagram service reply. */
typedef enum {
    IT_UD_SVC_EP_INFO_VALID = 0,      /**< the reply carries valid endpoint information */
    IT_UD_SVC_ID_NOT_SUPPORTED = 1,   /**< the service is not provided */
    IT_UD_SVC_REQ_REJECTED = 2,       /**< the request was rejected */
    IT_UD_NO_EP_AVAILABLE = 3,        /**< no endpoint is available */
    IT_UD_REQ_REDIRECTED = 4          /**< the request was redirected */
} it_ud_svc_req_status_t;

/** @brief Selects datagram service request parameters to query (bit mask). */
typedef enum {
    IT_UD_PARAM_ALL = 0x01,               /**< all parameters */
    IT_UD_PARAM_IA_HANDLE = 0x02,         /**< it_ud_svc_req_param_t::ia */
    IT_UD_PARAM_REQ_ID = 0x04,            /**< it_ud_svc_req_param_t::request_id */
    IT_UD_PARAM_REPLY_EVD = 0x08,         /**< it_ud_svc_req_param_t::reply_evd */
    IT_UD_PARAM_CONN_QUAL = 0x10,         /**< it_ud_svc_req_param_t::conn_qual */
    IT_UD_PARAM_DEST_PATH = 0x20,         /**< it_ud_svc_req_param_t::destination_path */
    IT_UD_PARAM_PRIV_DATA = 0x40,         /**< it_ud_svc_req_param_t::private_data */
    IT_UD_PARAM_PRIV_DATA_LENGTH = 0x80   /**< it_ud_svc_req_param_t::private_data_length */
} it_ud_svc_req_param_mask_t;

/** @brief Parameters of a datagram service request handle. */
typedef struct {
    it_ia_handle_t ia;                              /**< interface adapter */
    uint32_t request_id;                            /**< identifier of the request */
    it_evd_handle_t reply_evd;                      /**< event dispatcher receiving the reply */
    it_conn_qual_t conn_qual;                       /**< connection qualifier of the service */
    it_path_t destination_path;                     /**< path to the service */
    unsigned char private_data[IT_MAX_PRIV_DATA];   /**< private data sent with the request */
    size_t private_data_length;                     /**< number of valid bytes in @c private_data */
} it_ud_svc_req_param_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Query and modify structures                                              */
/* ------------------------------------------------------------------------ */

/** @addtogroup pz
 *  @{ */

/** @brief Selects protection zone parameters to query (bit mask). */
typedef enum {
    IT_PZ_PARAM_ALL = 0x01,   /**< all parameters */
    IT_PZ_PARAM_IA = 0x02     /**< it_pz_param_t::ia */
} it_pz_param_mask_t;

/** @brief Parameters of a protection zone. */
typedef struct {
    it_ia_handle_t ia;   /**< interface adapter */
} it_pz_param_t;

/** @} */

/** @addtogroup evd
 *  @{ */

/** @brief Event number: an event stream or a single event type.
 *
 *  The `*_EVENT_STREAM` values are passed to it_evd_create();
 *  `(event_number & IT_EVENT_STREAM_MASK)` is the stream of an event. */
typedef enum {
    IT_DTO_EVENT_STREAM = 0x00000,                  /**< data transfer completion stream */
    IT_DTO_SEND_CMPL_EVENT = 0x00001,               /**< send completed */
    IT_DTO_RC_RECV_CMPL_EVENT = 0x00002,            /**< reliable-connected receive completed */
    IT_DTO_UD_RECV_CMPL_EVENT = 0x00003,            /**< datagram receive completed */
    IT_DTO_RDMA_WRITE_CMPL_EVENT = 0x00004,         /**< RDMA Write completed */
    IT_DTO_RDMA_READ_CMPL_EVENT = 0x00005,          /**< RDMA Read completed */
    IT_RMR_LINK_CMPL_EVENT = 0x00006,               /**< remote memory region link or unlink completed */
    IT_RMR_BIND_CMPL_EVENT = 0x00006,               /**< IT-API 1.0 name of ::IT_RMR_LINK_CMPL_EVENT */
    IT_DTO_FETCH_ADD_CMPL_EVENT = 0x00007,          /**< fetch and add completed */
    IT_DTO_CMP_SWAP_CMPL_EVENT = 0x00008,           /**< compare and swap completed */
    IT_LMR_LINK_CMPL_EVENT = 0x00009,               /**< local memory region link or unlink completed */

    IT_CM_REQ_EVENT_STREAM = 0x01000,               /**< incoming connection and service request stream */
    IT_CM_REQ_CONN_REQUEST_EVENT = 0x01001,         /**< connection request arrived */
    IT_CM_REQ_UD_SERVICE_REQUEST_EVENT = 0x01002,   /**< datagram service request arrived */

    IT_CM_MSG_EVENT_STREAM = 0x02000,               /**< connection progress stream of an endpoint */
    IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT = 0x02001,  /**< three-way handshake: the peer accepted */
    IT_CM_MSG_CONN_ESTABLISHED_EVENT = 0x02002,     /**< connection established */
    IT_CM_MSG_CONN_DISCONNECT_EVENT = 0x02003,      /**< connection disconnected */
    IT_CM_MSG_CONN_PEER_REJECT_EVENT = 0x02004,     /**< the peer rejected the connection */
    IT_CM_MSG_CONN_NONPEER_REJECT_EVENT = 0x02005,  /**< the connection failed for another reason */
    IT_CM_MSG_CONN_BROKEN_EVENT = 0x02006,          /**< the connection broke */
    IT_CM_MSG_UD_SERVICE_REPLY_EVENT = 0x02007,     /**< datagram service reply arrived */

    IT_ASYNC_AFF_EVENT_STREAM = 0x04000,            /**< affiliated asynchronous error stream */
    IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE = 0x04001,    /**< an event could not be queued on a simple event dispatcher (overflow) */
    IT_ASYNC_AFF_EP_FAILURE = 0x04002,              /**< the endpoint failed */
    IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE = 0x04003, /**< a transport message had an invalid opcode */
    IT_ASYNC_AFF_EP_REQ_DROPPED = 0x04005,          /**< a request was dropped */
    IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION = 0x04006, /**< an incoming RDMA Write violated access rights */
    IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA = 0x04007,   /**< an incoming RDMA Write carried corrupt data */
    IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION = 0x04008, /**< an incoming RDMA Read violated access rights */
    IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION = 0x04020, /**< local access violation */
    IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION = 0x04020,   /**< short name of ::IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION */
    IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION = 0x04021, /**< local access violation by a receive */
    IT_ASYNC_AFF_EP_L_IRRQ_ACCESS_VIOLATION = 0x04022, /**< local access violation while answering an RDMA Read */
    IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR = 0x04023,    /**< local transport error */
    IT_ASYNC_AFF_EP_L_LLP_ERROR = 0x04024,          /**< lower-layer protocol error */
    IT_ASYNC_AFF_EP_R_ERROR = 0x04040,              /**< the peer reported an error */
    IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION = 0x04041,   /**< the peer reported an access violation */
    IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION = 0x04042, /**< the peer reported a receive access violation */
    IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR = 0x04043,  /**< the peer reported a receive length error */
    IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK = 0x04060,    /**< the endpoint reached its soft high watermark */
    IT_ASYNC_AFF_EP_SRQ_ERROR = 0x04061,            /**< the shared receive queue of the endpoint failed */
    IT_ASYNC_AFF_SRQ_LOW_WATERMARK = 0x04100,       /**< the shared receive queue fell below its low watermark */
    IT_ASYNC_AFF_SRQ_CATASTROPHIC = 0x04101,        /**< project extension (IBM OpenRDMA): the shared receive queue failed catastrophically */
    IT_ASYNC_AFF_SEVD_FULL_ERROR = 0x04200,         /**< project extension (IBM OpenRDMA): a completion queue overflowed */
    IT_ASYNC_AFF_SEVD_OP_ERROR = 0x04201,           /**< project extension (IBM OpenRDMA): a completion queue operation failed */

    IT_ASYNC_UNAFF_EVENT_STREAM = 0x08000,          /**< unaffiliated asynchronous event stream */
    IT_ASYNC_UNAFF_SPIGOT_ONLINE = 0x08002,         /**< a spigot came online */
    IT_ASYNC_UNAFF_SPIGOT_OFFLINE = 0x08003,        /**< a spigot went offline */
    IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE = 0x08004,  /**< an unaffiliated event could not be queued */

    IT_SOFTWARE_EVENT_STREAM = 0x10000,             /**< software event stream */
    IT_SOFTWARE_EVENT = 0x10001,                    /**< event posted by it_evd_post_se() */

    IT_AEVD_NOTIFICATION_EVENT_STREAM = 0x20000,    /**< aggregate event dispatcher stream */
    IT_AEVD_NOTIFICATION_EVENT = 0x20001            /**< a simple event dispatcher notified its aggregate */
} it_event_type_t;

/** @brief Project extension: spelling of ::IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE
 *  used by the IBM OpenRDMA/SKV header. */
#define IT_ASYNC_AFF_EP_SEVD_FULL_ERROR IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE

/** @brief Event dispatcher creation flags (bit mask). */
typedef enum {
    IT_EVD_DEQUEUE_NOTIFICATIONS = 0x01,  /**< an aggregate returns notification events instead of the underlying events */
    IT_EVD_CREATE_FD = 0x02,              /**< create a file descriptor that becomes readable on notification */
    IT_EVD_OVERFLOW_DEFAULT = 0x04,       /**< default overflow handling */
    IT_EVD_OVERFLOW_NOTIFY = 0x08,        /**< report overflow as an asynchronous event */
    IT_EVD_OVERFLOW_AUTO_RESET = 0x10     /**< clear the overflow condition automatically */
} it_evd_flags_t;

/** @brief Selects event dispatcher parameters to query or modify (bit mask). */
typedef enum {
    IT_EVD_PARAM_ALL = 0x0001,            /**< all parameters */
    IT_EVD_PARAM_IA = 0x0002,             /**< it_evd_param_t::ia */
    IT_EVD_PARAM_EVENT_NUMBER = 0x0004,   /**< it_evd_param_t::event_number */
    IT_EVD_PARAM_FLAG = 0x0008,           /**< it_evd_param_t::evd_flag */
    IT_EVD_PARAM_QUEUE_SIZE = 0x0010,     /**< it_evd_param_t::sevd_queue_size */
    IT_EVD_PARAM_THRESHOLD = 0x0020,      /**< it_evd_param_t::sevd_threshold */
    IT_EVD_PARAM_AEVD_HANDLE = 0x0040,    /**< it_evd_param_t::aevd */
    IT_EVD_PARAM_FD = 0x0080,             /**< it_evd_param_t::fd */
    IT_EVD_PARAM_BOUND = 0x0100,          /**< it_evd_param_t::evd_bound */
    IT_EVD_PARAM_ENABLED = 0x0200,        /**< it_evd_param_t::evd_enabled */
    IT_EVD_PARAM_OVERFLOWED = 0x0400,     /**< it_evd_param_t::evd_overflowed */
    IT_EVD_PARAM_CALLBACK = 0x0800        /**< it_evd_param_t::evd_callback */
} it_evd_param_mask_t;

/** @brief Parameters of an event dispatcher. */
typedef struct {
    it_ia_handle_t ia;              /**< interface adapter */
    it_event_type_t event_number;   /**< event stream served */
    it_evd_flags_t evd_flag;        /**< creation flags */
    size_t sevd_queue_size;         /**< queue capacity in events */
    size_t sevd_threshold;          /**< number of queued events that triggers notification */
    it_evd_handle_t aevd;           /**< aggregate event dispatcher fed, or ::IT_NULL_HANDLE */
    int fd;                         /**< file descriptor, or -1 */
    it_boolean_t evd_bound;         /**< whether an object delivers events to it */
    it_boolean_t evd_enabled;       /**< whether notification is armed */
    it_boolean_t evd_overflowed;    /**< whether the queue overflowed */
    it_boolean_t evd_callback;      /**< whether a callback is attached */
} it_evd_param_t;

/** @} */

/** @addtogroup lmr
 *  @{ */

/** @brief Selects local memory region parameters to query or modify (bit mask). */
typedef enum {
    IT_LMR_PARAM_ALL = 0x0001,            /**< all parameters */
    IT_LMR_PARAM_IA = 0x0002,             /**< it_lmr_param_t::ia */
    IT_LMR_PARAM_PZ = 0x0004,             /**< it_lmr_param_t::pz */
    IT_LMR_PARAM_ADDR = 0x0008,           /**< it_lmr_param_t::addr */
    IT_LMR_PARAM_LENGTH = 0x0010,         /**< it_lmr_param_t::length */
    IT_LMR_PARAM_MEM_PRIV = 0x0020,       /**< it_lmr_param_t::privs */
    IT_LMR_PARAM_FLAG = 0x0040,           /**< it_lmr_param_t::flags */
    IT_LMR_PARAM_SHARED_ID = 0x0080,      /**< it_lmr_param_t::shared_id */
    IT_LMR_PARAM_RMR_CONTEXT = 0x0100,    /**< it_lmr_param_t::rmr_context */
    IT_LMR_PARAM_ACTUAL_ADDR = 0x0200,    /**< it_lmr_param_t::actual_addr */
    IT_LMR_PARAM_ACTUAL_LENGTH = 0x0400,  /**< it_lmr_param_t::actual_length */
    IT_LMR_PARAM_ADDR_MODE = 0x0800,      /**< it_lmr_param_t::addr_mode */
    IT_LMR_PARAM_LINKED = 0x1000,         /**< it_lmr_param_t::linked */
    IT_LMR_PARAM_IOBL_NUM_ELTS = 0x2000,  /**< it_lmr_param_t::iobl_num_elts */
    IT_LMR_PARAM_IOBL_TYPE = 0x4000       /**< it_lmr_param_t::iobl_type */
} it_lmr_param_mask_t;

/** @brief Parameters of a local memory region. */
typedef struct {
    it_ia_handle_t ia;              /**< interface adapter */
    it_pz_handle_t pz;              /**< protection zone */
    void *addr;                     /**< start address given at registration */
    it_length_t length;             /**< length given at registration */
    it_mem_priv_t privs;            /**< access privileges */
    it_lmr_flag_t flags;            /**< creation flags */
    uint32_t shared_id;             /**< shared registration identifier */
    it_rmr_context_t rmr_context;   /**< remote access context of the region */
    void *actual_addr;              /**< start of the region actually registered */
    it_length_t actual_length;      /**< length of the region actually registered */
    it_addr_mode_t addr_mode;       /**< addressing mode */
    it_boolean_t linked;            /**< whether memory is linked to the region */
    size_t iobl_num_elts;           /**< I/O buffer list capacity in elements */
    it_iobl_type_t iobl_type;       /**< I/O buffer list type */
} it_lmr_param_t;

/** @} */

/** @addtogroup rmr
 *  @{ */

/** @brief Selects remote memory region parameters to query (bit mask). */
typedef enum {
    IT_RMR_PARAM_ALL = 0x0001,          /**< all parameters */
    IT_RMR_PARAM_IA = 0x0002,           /**< it_rmr_param_t::ia */
    IT_RMR_PARAM_PZ = 0x0004,           /**< it_rmr_param_t::pz */
    IT_RMR_PARAM_LINKED = 0x0008,       /**< it_rmr_param_t::linked */
    IT_RMR_PARAM_BOUND = 0x0008,        /**< IT-API 1.0 name of ::IT_RMR_PARAM_LINKED */
    IT_RMR_PARAM_LMR = 0x0010,          /**< it_rmr_param_t::lmr */
    IT_RMR_PARAM_ADDR = 0x0020,         /**< it_rmr_param_t::addr */
    IT_RMR_PARAM_LENGTH = 0x0040,       /**< it_rmr_param_t::length */
    IT_RMR_PARAM_MEM_PRIV = 0x0080,     /**< it_rmr_param_t::privs */
    IT_RMR_PARAM_RMR_CONTEXT = 0x0100,  /**< it_rmr_param_t::rmr_context */
    IT_RMR_PARAM_TYPE = 0x0200,         /**< it_rmr_param_t::type */
    IT_RMR_PARAM_ADDR_MODE = 0x0400     /**< it_rmr_param_t::addr_mode */
} it_rmr_param_mask_t;

/** @brief Parameters of a remote memory region. */
typedef struct {
    it_ia_handle_t ia;              /**< interface adapter */
    it_pz_handle_t pz;              /**< protection zone */
#ifdef ITAPI_ENABLE_V10_BINDINGS
    it_boolean_t bound;             /**< whether the region is bound to memory (named @c linked with 2.0 and 2.1 bindings) */
#else
    it_boolean_t linked;            /**< whether the region is linked to memory (named @c bound with 1.0 bindings) */
#endif
    it_lmr_handle_t lmr;            /**< local memory region linked to */
    void *addr;                     /**< start of the linked range */
    it_length_t length;             /**< length of the linked range */
    it_mem_priv_t privs;            /**< remote access privileges */
    it_rmr_context_t rmr_context;   /**< remote access context */
    it_rmr_type_t type;             /**< region type */
    it_addr_mode_t addr_mode;       /**< addressing mode */
} it_rmr_param_t;

/** @} */

/** @addtogroup srq
 *  @{ */

/** @brief Selects shared receive queue parameters to query or modify (bit mask). */
typedef enum {
    IT_SRQ_PARAM_ALL = 0x0001,            /**< all parameters */
    IT_SRQ_PARAM_IA = 0x0002,             /**< it_srq_param_t::ia */
    IT_SRQ_PARAM_PZ = 0x0004,             /**< it_srq_param_t::pz */
    IT_SRQ_PARAM_MAX_RECV_DTO = 0x0008,   /**< it_srq_param_t::max_recv_dtos */
    IT_SRQ_PARAM_MAX_RECV_SEG = 0x0010,   /**< it_srq_param_t::max_recv_segs */
    IT_SRQ_PARAM_LOW_WATERMARK = 0x0020   /**< it_srq_param_t::low_watermark */
} it_srq_param_mask_t;

/** @brief Parameters of a shared receive queue. */
typedef struct {
    it_ia_handle_t ia;      /**< interface adapter */
    it_pz_handle_t pz;      /**< protection zone */
    size_t max_recv_dtos;   /**< maximum outstanding receives */
    size_t max_recv_segs;   /**< maximum segments of a receive */
    size_t low_watermark;   /**< outstanding receive count that triggers ::IT_ASYNC_AFF_SRQ_LOW_WATERMARK */
} it_srq_param_t;

/** @} */

/** @addtogroup util
 *  @{ */

/** @brief Type of an object behind a handle. */
typedef enum {
    IT_HANDLE_TYPE_ADDR = 0,        /**< address handle */
    IT_HANDLE_TYPE_EP = 1,          /**< endpoint */
    IT_HANDLE_TYPE_EVD = 2,         /**< event dispatcher */
    IT_HANDLE_TYPE_IA = 3,          /**< interface adapter */
    IT_HANDLE_TYPE_LISTEN = 4,      /**< listen point */
    IT_HANDLE_TYPE_LMR = 5,         /**< local memory region */
    IT_HANDLE_TYPE_PZ = 6,          /**< protection zone */
    IT_HANDLE_TYPE_RMR = 7,         /**< remote memory region */
    IT_HANDLE_TYPE_UD_SVC_REQ = 8,  /**< datagram service request */
    IT_HANDLE_TYPE_SRQ = 9          /**< shared receive queue */
} it_handle_type_enum_t;

/** @} */

/* ------------------------------------------------------------------------ */
/* Events                                                                   */
/* ------------------------------------------------------------------------ */

/** @addtogroup evd
 *  @{ */

/** @brief Fields common to every event. */
typedef struct {
    it_event_type_t event_number;   /**< type of the event */
    it_evd_handle_t evd;            /**< event dispatcher the event was dequeued from */
} it_any_event_t;

/** @brief Completion of a data transfer, link or unlink (every data
 *  transfer event except ::IT_DTO_UD_RECV_CMPL_EVENT). */
typedef struct {
    it_event_type_t event_number;       /**< type of the event */
    it_evd_handle_t evd;                /**< event dispatcher the event was dequeued from */
    it_ep_handle_t ep;                  /**< endpoint the operation was posted on */
    it_dto_cookie_t cookie;             /**< cookie given when the operation was posted */
    it_dto_status_t dto_status;         /**< completion status */
    uint32_t transferred_length;        /**< bytes transferred (bytes received for a receive) */
    it_handle_t unlinked_mr_handle;     /**< LMR or RMR unlinked as a side effect, or ::IT_NULL_HANDLE */
} it_dto_cmpl_event_t;

/** @brief Completion of any data transfer, including datagram receives. */
typedef struct {
    it_event_type_t event_number;       /**< type of the event */
    it_evd_handle_t evd;                /**< event dispatcher the event was dequeued from */
    it_ep_handle_t ep;                  /**< endpoint the operation was posted on */
    it_dto_cookie_t cookie;             /**< cookie given when the operation was posted */
    it_dto_status_t dto_status;         /**< completion status */
    uint32_t transferred_length;        /**< bytes transferred (bytes received for a receive) */
    it_handle_t unlinked_mr_handle;     /**< LMR or RMR unlinked as a side effect, or ::IT_NULL_HANDLE */
    it_dto_ud_flags_t flags;            /**< datagram receive flags (::IT_UD_IB_GRH_PRESENT) */
    it_ud_ep_id_t ud_ep_id;             /**< identifier of the sending datagram endpoint */
    it_path_t src_path;                 /**< path back to the sender */
} it_all_dto_cmpl_event_t;

/** @brief Incoming connection request (::IT_CM_REQ_CONN_REQUEST_EVENT). */
typedef struct {
    it_event_type_t event_number;               /**< type of the event */
    it_evd_handle_t evd;                        /**< event dispatcher the event was dequeued from */
    it_cn_est_identifier_t cn_est_id;           /**< identifier to pass to it_ep_accept(), it_reject() or it_handoff() */
    it_conn_qual_t conn_qual;                   /**< connection qualifier requested */
    it_net_addr_t source_addr;                  /**< network address of the requester */
    size_t spigot_id;                           /**< spigot the request arrived on */
    uint32_t max_message_size;                  /**< largest message of the requester (valid if it_ia_info_t::max_message_size_support) */
    uint32_t rdma_read_ird;                     /**< inbound RDMA Read depth of the requester (valid if it_ia_info_t::ird_ord_ia_support) */
    uint32_t rdma_read_ord;                     /**< outbound RDMA Read depth of the requester (valid if it_ia_info_t::ird_ord_ia_support) */
    unsigned char private_data[IT_MAX_PRIV_DATA]; /**< private data of the request (no length is delivered) */
    it_boolean_t private_data_present;          /**< whether private data was received */
} it_conn_request_event_t;

/** @brief Incoming datagram service request
 *  (::IT_CM_REQ_UD_SERVICE_REQUEST_EVENT). */
typedef struct {
    it_event_type_t event_number;               /**< type of the event */
    it_evd_handle_t evd;                        /**< event dispatcher the event was dequeued from */
    it_ud_svc_req_identifier_t ud_svc_req_id;   /**< identifier to pass to it_ud_service_reply() */
    it_conn_qual_t conn_qual;                   /**< connection qualifier requested */
    it_net_addr_t source_addr;                  /**< network address of the requester */
    size_t spigot_id;                           /**< spigot the request arrived on */
    unsigned char private_data[IT_MAX_PRIV_DATA]; /**< private data of the request */
    it_boolean_t private_data_present;          /**< whether private data was received */
} it_ud_svc_request_event_t;

/** @brief Connection progress of an endpoint (every `IT_CM_MSG_CONN_*`
 *  event). */
typedef struct {
    it_event_type_t event_number;               /**< type of the event */
    it_evd_handle_t evd;                        /**< event dispatcher the event was dequeued from */
    it_cn_est_identifier_t cn_est_id;           /**< identifier for the local accept or reject of a three-way handshake */
    it_ep_handle_t ep;                          /**< endpoint of the connection */
    uint32_t rdma_read_ird;                     /**< negotiated inbound RDMA Read depth */
    uint32_t rdma_read_ord;                     /**< negotiated outbound RDMA Read depth */
    it_path_t dst_path;                         /**< path to the peer */
    it_conn_reject_code_t reject_reason_code;   /**< reason of a ::IT_CM_MSG_CONN_NONPEER_REJECT_EVENT */
    unsigned char private_data[IT_MAX_PRIV_DATA]; /**< private data sent by the peer */
    it_boolean_t private_data_present;          /**< whether private data was received */
} it_connection_event_t;

/** @brief Reply to a datagram service request
 *  (::IT_CM_MSG_UD_SERVICE_REPLY_EVENT). */
typedef struct {
    it_event_type_t event_number;               /**< type of the event */
    it_evd_handle_t evd;                        /**< event dispatcher the event was dequeued from */
    it_ud_svc_req_handle_t ud_svc;              /**< request handle the reply answers */
    it_ud_svc_req_status_t status;              /**< status of the reply */
    it_remote_ep_info_t ep_info;                /**< endpoint providing the service */
    it_path_t dst_path;                         /**< path to that endpoint */
    unsigned char private_data[IT_MAX_PRIV_DATA]; /**< private data of the reply */
    it_boolean_t private_data_present;          /**< whether private data was received */
} it_ud_svc_reply_event_t;

/** @brief Affiliated asynchronous event. */
typedef struct {
    it_event_type_t event_number;   /**< type of the event */
    it_evd_handle_t evd;            /**< event dispatcher the event was dequeued from */
    /** @brief Object that caused the event, depending on @c event_number. */
    union {
        it_evd_handle_t sevd;       /**< simple event dispatcher concerned */
        it_ep_handle_t ep;          /**< endpoint concerned */
        it_srq_handle_t srq;        /**< shared receive queue concerned */
    } cause;                        /**< object that caused the event */
} it_affiliated_event_t;

/** @brief Unaffiliated asynchronous event. */
typedef struct {
    it_event_type_t event_number;   /**< type of the event */
    it_evd_handle_t evd;            /**< event dispatcher the event was dequeued from */
    it_ia_handle_t ia;              /**< interface adapter concerned */
    size_t spigot_id;               /**< spigot concerned */
} it_unaffiliated_event_t;

/** @brief Software event posted by it_evd_post_se(). */
typedef struct {
    it_event_type_t event_number;   /**< type of the event */
    it_evd_handle_t evd;            /**< event dispatcher the event was dequeued from */
    void *data;                     /**< pointer given to it_evd_post_se() */
} it_software_event_t;

/** @brief Notification of an aggregate event dispatcher by one of its
 *  simple event dispatchers. */
typedef struct {
    it_event_type_t event_number;   /**< type of the event */
    it_evd_handle_t aevd;           /**< aggregate event dispatcher notified */
    it_evd_handle_t sevd;           /**< simple event dispatcher that has events */
} it_aevd_notification_event_t;

/** @brief Any event; @c event_number selects the member that applies. */
typedef union {
    it_event_type_t event_number;               /**< type of the event */
    it_any_event_t any;                         /**< fields common to every event */
    it_dto_cmpl_event_t dto_cmpl;               /**< data transfer events except datagram receives */
    it_all_dto_cmpl_event_t all_dto_cmpl;       /**< every data transfer event */
    it_conn_request_event_t conn_req;           /**< ::IT_CM_REQ_CONN_REQUEST_EVENT */
    it_ud_svc_request_event_t ud_svc_request;   /**< ::IT_CM_REQ_UD_SERVICE_REQUEST_EVENT */
    it_connection_event_t conn;                 /**< `IT_CM_MSG_CONN_*` events */
    it_ud_svc_reply_event_t ud_svc_reply;       /**< ::IT_CM_MSG_UD_SERVICE_REPLY_EVENT */
    it_affiliated_event_t aff_async;            /**< affiliated asynchronous events */
    it_unaffiliated_event_t unaff_async;        /**< unaffiliated asynchronous events */
    it_software_event_t sw;                     /**< software events */
    it_aevd_notification_event_t aevd_notify;   /**< aggregate notification events */
} it_event_t;

/** @brief Callback invoked when an event dispatcher signals notification.
 *  @param evd event dispatcher that signalled
 *  @param arg argument given to it_evd_callback_attach() */
typedef void (*it_evd_callback_rtn_t)(IN it_evd_handle_t evd, IN void *arg);

/** @} */

/* ======================================================================== */
/* Interface adapters                                                       */
/* ======================================================================== */

/**
 * @brief Lists the interface adapters available on this system.
 *
 * Fills at most `*num_interfaces` entries of @p interfaces and reports how
 * many were filled and how many exist.
 *
 * @param[out] interfaces array receiving the interface descriptions
 * @param[in,out] num_interfaces in: capacity of @p interfaces in entries;
 *                out: number of entries filled
 * @param[in,out] total_interfaces out: number of interfaces that exist
 * @ingroup ia
 */
void it_interface_list(OUT it_interface_t *interfaces,
                       IN OUT size_t *num_interfaces,
                       IN OUT size_t *total_interfaces);

/**
 * @brief Opens an interface adapter.
 *
 * @param[in] name NUL-terminated name from it_interface_t::name
 * @param[in] major_version major IT-API version the caller is written for
 * @param[in] minor_version minor IT-API version the caller is written for
 * @param[out] ia_handle receives the handle of the opened adapter
 * @retval IT_SUCCESS the adapter was opened
 * @retval IT_ERR_FAULT @p ia_handle is NULL
 * @retval IT_ERR_INVALID_NAME @p name is NULL or names no interface
 * @retval IT_ERR_INVALID_MAJOR_VERSION @p major_version is neither 1 nor 2
 * @retval IT_ERR_INVALID_MINOR_VERSION @p minor_version is above 0 with major 1, or above 1 with
 *          major 2
 * @retval IT_ERR_IA_CATASTROPHE the provider could not open or describe the device
 * @ingroup ia
 */
it_status_t it_ia_create(IN const char *name,
                         IN uint32_t major_version,
                         IN uint32_t minor_version,
                         OUT it_ia_handle_t *ia_handle);

/**
 * @brief Closes an interface adapter and frees the objects created on it.
 *
 * @param[in] ia_handle interface adapter to close
 * @retval IT_SUCCESS the adapter and every object of it were freed
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @note Frees every object of the adapter: endpoints first (their outstanding work requests
 *       complete flushed), then listen points, local memory regions, event dispatchers and
 *       protection zones; pending connection identifiers are dropped and every handle of the
 *       adapter becomes invalid.
 * @ingroup ia
 */
it_status_t it_ia_free(IN it_ia_handle_t ia_handle);

/**
 * @brief Queries the attributes of an interface adapter.
 *
 * The returned block is allocated by the library and must be released
 * with it_ia_info_free().
 *
 * @param[in] ia_handle interface adapter to query
 * @param[out] ia_info receives a pointer to the attribute block
 * @retval IT_SUCCESS the attributes were returned
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_FAULT @p ia_info is NULL
 * @ingroup ia
 */
it_status_t it_ia_query(IN it_ia_handle_t ia_handle,
                        OUT it_ia_info_t **ia_info);

/**
 * @brief Releases an attribute block returned by it_ia_query().
 *
 * @param[in] ia_info attribute block to release
 * @ingroup ia
 */
void it_ia_info_free(IN it_ia_info_t *ia_info);

/* ======================================================================== */
/* Protection zones                                                         */
/* ======================================================================== */

/**
 * @brief Creates a protection zone.
 *
 * @param[in] ia_handle interface adapter to create the zone on
 * @param[out] pz_handle receives the handle of the new zone
 * @retval IT_SUCCESS the zone was created
 * @retval IT_ERR_FAULT @p pz_handle is NULL
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_RESOURCES the provider could not allocate a protection domain
 * @ingroup pz
 */
it_status_t it_pz_create(IN it_ia_handle_t ia_handle,
                         OUT it_pz_handle_t *pz_handle);

/**
 * @brief Frees a protection zone.
 *
 * @param[in] pz_handle zone to free
 * @retval IT_SUCCESS the zone was freed
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_PZ_BUSY endpoints or local memory regions still belong to the zone
 * @ingroup pz
 */
it_status_t it_pz_free(IN it_pz_handle_t pz_handle);

/**
 * @brief Queries the parameters of a protection zone.
 *
 * @param[in] pz_handle zone to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_INVALID_MASK @p mask has bits other than ::IT_PZ_PARAM_ALL and ::IT_PZ_PARAM_IA
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup pz
 */
it_status_t it_pz_query(IN it_pz_handle_t pz_handle,
                        IN it_pz_param_mask_t mask,
                        OUT it_pz_param_t *params);

/* ======================================================================== */
/* Event dispatchers                                                        */
/* ======================================================================== */

/**
 * @brief Creates a simple or aggregate event dispatcher.
 *
 * @param[in] ia_handle interface adapter to create the dispatcher on
 * @param[in] event_number event stream served (a `*_EVENT_STREAM` value;
 *            ::IT_AEVD_NOTIFICATION_EVENT_STREAM creates an aggregate)
 * @param[in] evd_flag creation flags
 * @param[in] sevd_queue_size queue capacity in events
 * @param[in] sevd_threshold number of queued events that triggers
 *            notification, or ::IT_THRESHOLD_DISABLE
 * @param[in] aevd_handle aggregate dispatcher to feed, or ::IT_NULL_HANDLE
 * @param[out] evd_handle receives the handle of the new dispatcher
 * @param[out] fd receives the file descriptor when ::IT_EVD_CREATE_FD is
 *            set (may be NULL otherwise)
 * @retval IT_SUCCESS the dispatcher was created
 * @retval IT_ERR_FAULT @p evd_handle is NULL
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_INVALID_EVD_TYPE @p event_number is not an `*_EVENT_STREAM` value
 * @retval IT_ERR_INVALID_FLAGS @p evd_flag has unknown bits, or ::IT_EVD_DEQUEUE_NOTIFICATIONS on a
 *          simple dispatcher
 * @retval IT_ERR_MISMATCH_FD ::IT_EVD_CREATE_FD is set and @p fd is NULL.  An @p fd given without
 *          the flag is not an error (ported applications pass one): no descriptor is made and
 *          *@p fd is set to -1
 * @retval IT_ERR_INVALID_QUEUE_SIZE @p sevd_queue_size is 0 for a simple dispatcher
 * @retval IT_ERR_RESOURCE_QUEUE_SIZE a data transfer dispatcher larger than the device's completion
 *          queues
 * @retval IT_ERR_INVALID_THRESHOLD @p sevd_threshold exceeds @p sevd_queue_size
 * @retval IT_ERR_AEVD_NOT_ALLOWED @p aevd_handle is given for an aggregate dispatcher
 * @retval IT_ERR_INVALID_AEVD @p aevd_handle is not a live aggregate dispatcher of this adapter
 * @retval IT_ERR_ASYNC_AFF_EVD_EXISTS the adapter already has an affiliated asynchronous dispatcher
 * @retval IT_ERR_ASYNC_UNAFF_EVD_EXISTS the adapter already has an unaffiliated asynchronous
 *          dispatcher
 * @retval IT_ERR_RESOURCES the eventfd or the provider's completion queue could not be created
 * @note The file descriptor (::IT_EVD_CREATE_FD, an eventfd) belongs to the dispatcher: do not
 *       read, write or close it.  It is readable exactly while the dispatcher is ready: a simple
 *       dispatcher while it holds at least max(threshold, 1) events; an aggregate from the moment
 *       one of its simple dispatchers reaches its threshold until it has handed out every event
 *       of that dispatcher (with ::IT_EVD_DEQUEUE_NOTIFICATIONS, until it returned the
 *       notification).  The dequeue that leaves it not ready makes the descriptor unreadable
 *       before it returns; an event that makes it ready makes it readable again.  Under
 *       edge-triggered epoll every change from not ready to ready is a new edge, none is promised
 *       while it stays ready, and an edge may come with no new event: dequeue until
 *       ::IT_ERR_QUEUE_EMPTY at each wakeup, and no event is ever left queued with the descriptor
 *       quiet.  The contract in full is in @ref evd_fd
 * @note A queue that passes @p sevd_queue_size keeps the event, marks the dispatcher overflowed and
 *       posts ::IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE on the adapter's affiliated dispatcher; no event
 *       is dropped.
 * @ingroup evd
 */
it_status_t it_evd_create(IN it_ia_handle_t ia_handle,
                          IN it_event_type_t event_number,
                          IN it_evd_flags_t evd_flag,
                          IN size_t sevd_queue_size,
                          IN size_t sevd_threshold,
                          IN it_evd_handle_t aevd_handle,
                          OUT it_evd_handle_t *evd_handle,
                          OUT int *fd);

/**
 * @brief Frees an event dispatcher.
 *
 * @param[in] evd_handle dispatcher to free
 * @retval IT_SUCCESS the dispatcher was freed
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_EVD_BUSY endpoints or listen points use it, simple dispatchers feed it, or a
 *          thread waits on it
 * @ingroup evd
 */
it_status_t it_evd_free(IN it_evd_handle_t evd_handle);

/**
 * @brief Modifies parameters of an event dispatcher.
 *
 * @param[in] evd_handle dispatcher to modify
 * @param[in] mask parameters to change
 * @param[in] params new values of the selected parameters
 * @retval IT_SUCCESS the parameters were changed
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_FAULT @p params is NULL
 * @retval IT_ERR_INVALID_MASK @p mask is 0 or has bits other than ::IT_EVD_PARAM_THRESHOLD and
 *          ::IT_EVD_PARAM_OVERFLOWED (reset only)
 * @retval IT_ERR_INVALID_THRESHOLD the new threshold exceeds the queue size, or the dispatcher is
 *          an aggregate
 * @ingroup evd
 */
it_status_t it_evd_modify(IN it_evd_handle_t evd_handle,
                          IN it_evd_param_mask_t mask,
                          IN const it_evd_param_t *params);

/**
 * @brief Queries the parameters of an event dispatcher.
 *
 * @param[in] evd_handle dispatcher to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup evd
 */
it_status_t it_evd_query(IN it_evd_handle_t evd_handle,
                         IN it_evd_param_mask_t mask,
                         OUT it_evd_param_t *params);

/**
 * @brief Removes the oldest event from an event dispatcher without waiting.
 *
 * @param[in] evd_handle dispatcher to dequeue from
 * @param[out] event receives the event
 * @retval IT_SUCCESS an event was returned
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_FAULT @p event is NULL
 * @retval IT_ERR_QUEUE_EMPTY no event is queued
 * @note A dequeue that leaves the dispatcher below its threshold makes its file descriptor
 *       (::IT_EVD_CREATE_FD) unreadable before it returns; an event that arrives after it, or
 *       races it, makes the descriptor readable again.  A loop that dequeues until
 *       ::IT_ERR_QUEUE_EMPTY before it waits on the descriptor never leaves an event behind,
 *       also under edge-triggered epoll (@ref evd_fd).
 * @ingroup evd
 */
it_status_t it_evd_dequeue(IN it_evd_handle_t evd_handle,
                           OUT it_event_t *event);

/**
 * @brief Waits for an event and removes it from an event dispatcher.
 *
 * @param[in] evd_handle dispatcher to wait on
 * @param[in] timeout longest time to wait, in microseconds (a project
 *            decision: the specification's unit is not known), or
 *            ::IT_TIMEOUT_INFINITE
 * @param[out] event receives the event
 * @param[out] nmore receives the number of events still queued
 * @retval IT_SUCCESS an event was returned
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_FAULT @p event is NULL
 * @retval IT_ERR_EVD_WAIT the dispatcher feeds an aggregate dispatcher: wait on the aggregate
 * @retval IT_ERR_WAITER_LIMIT another thread is already waiting on the dispatcher (one waiter per
 *          dispatcher)
 * @retval IT_ERR_TIMEOUT_EXPIRED no event was queued when @p timeout expired
 * @retval IT_ERR_INTERRUPT a signal interrupted the wait
 * @note Returns at once when an event is queued; otherwise blocks until the dispatcher's threshold
 *       (max(threshold, 1) events) is met or @p timeout (microseconds) expires, and then returns an
 *       event if any is queued. @p nmore may be NULL.
 * @ingroup evd
 */
it_status_t it_evd_wait(IN it_evd_handle_t evd_handle,
                        IN uint64_t timeout,
                        OUT it_event_t *event,
                        OUT size_t *nmore);

/**
 * @brief Posts a software event on a software event dispatcher.
 *
 * @param[in] evd_handle dispatcher serving ::IT_SOFTWARE_EVENT_STREAM
 * @param[in] event pointer delivered as it_software_event_t::data
 * @retval IT_SUCCESS the event was queued
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_INVALID_SOFT_EVD the dispatcher does not serve ::IT_SOFTWARE_EVENT_STREAM
 * @retval IT_ERR_EVD_QUEUE_FULL the dispatcher already holds its queue size of events
 * @ingroup evd
 */
it_status_t it_evd_post_se(IN it_evd_handle_t evd_handle,
                           IN const void *event);

/**
 * @brief Attaches a notification callback to an event dispatcher.
 *
 * @param[in] evd_handle dispatcher to attach to
 * @param[in] callback function called on notification
 * @param[in] arg argument passed to @p callback
 * @retval IT_SUCCESS the callback was attached
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @retval IT_ERR_FAULT @p callback is NULL
 * @retval IT_ERR_CALLBACK_EXISTS a callback is already attached
 * @ingroup evd
 */
it_status_t it_evd_callback_attach(IN it_evd_handle_t evd_handle,
                                   IN it_evd_callback_rtn_t callback,
                                   IN void *arg);

/**
 * @brief Detaches the notification callback of an event dispatcher.
 *
 * @param[in] evd_handle dispatcher to detach from
 * @retval IT_SUCCESS no callback is attached any more (also when none was)
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher
 * @ingroup evd
 */
it_status_t it_evd_callback_detach(IN it_evd_handle_t evd_handle);

/* ======================================================================== */
/* Endpoints                                                                */
/* ======================================================================== */

/**
 * @brief Creates a reliable-connected endpoint.
 *
 * @param[in] pz_handle protection zone of the endpoint
 * @param[in] request_sevd_handle dispatcher (data transfer stream) for
 *            request completions
 * @param[in] recv_sevd_handle dispatcher (data transfer stream) for
 *            receive completions; may equal @p request_sevd_handle
 * @param[in] connect_sevd_handle dispatcher (::IT_CM_MSG_EVENT_STREAM) for
 *            connection events
 * @param[in] flags creation flags
 * @param[in] ep_attr requested attributes
 * @param[out] ep_handle receives the handle of the new endpoint
 * @retval IT_SUCCESS the endpoint was created
 * @retval IT_ERR_FAULT @p ep_handle is NULL
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_INVALID_REQ_EVD @p request_sevd_handle is not a live data transfer dispatcher of
 *          the zone's adapter
 * @retval IT_ERR_INVALID_RECV_EVD @p recv_sevd_handle is not a live data transfer dispatcher of the
 *          zone's adapter
 * @retval IT_ERR_INVALID_CONN_EVD @p connect_sevd_handle is not a live ::IT_CM_MSG_EVENT_STREAM
 *          dispatcher of the zone's adapter
 * @retval IT_ERR_INVALID_FLAGS @p flags has bits other than ::IT_EP_REUSEADDR and ::IT_EP_SRQ
 * @retval IT_ERR_SRQ_NOT_SUPPORTED ::IT_EP_SRQ was given on an adapter without shared receive
 *          queues
 * @retval IT_ERR_INVALID_SRQ ::IT_EP_SRQ was given and ep_attr->srv.rc.srq is not a live shared
 *          receive queue of @p pz_handle
 * @retval IT_ERR_INVALID_EP_ATTR @p ep_attr is NULL, its max_dto_payload_size exceeds the device's
 *          message size, or it enables atomics on an adapter without them
 * @retval IT_ERR_RESOURCE_REQ_DTO max_request_dtos exceeds the device limit
 * @retval IT_ERR_RESOURCE_RECV_DTO max_recv_dtos exceeds the device limit
 * @retval IT_ERR_RESOURCE_SSEG max_send_segments exceeds the device limit
 * @retval IT_ERR_RESOURCE_RSEG max_recv_segments exceeds the device limit
 * @retval IT_ERR_RESOURCE_RRSEG max_rdma_read_segments exceeds the device limit
 * @retval IT_ERR_RESOURCE_RWSEG max_rdma_write_segments exceeds the device limit
 * @retval IT_ERR_RESOURCE_IRD rdma_read_ird exceeds the device limit
 * @retval IT_ERR_RESOURCE_ORD rdma_read_ord exceeds the device limit
 * @retval IT_ERR_RESOURCES the provider could not create the queue pair
 * @ingroup ep
 */
it_status_t it_ep_rc_create(IN it_pz_handle_t pz_handle,
                            IN it_evd_handle_t request_sevd_handle,
                            IN it_evd_handle_t recv_sevd_handle,
                            IN it_evd_handle_t connect_sevd_handle,
                            IN it_ep_rc_creation_flags_t flags,
                            IN const it_ep_attributes_t *ep_attr,
                            OUT it_ep_handle_t *ep_handle);

/**
 * @brief Creates an unreliable-datagram endpoint.
 *
 * The endpoint is ::IT_EP_STATE_UD_OPERATIONAL at once: it needs no
 * connection.  Its identifier (it_remote_ep_info_t::ud_ep_id, the IB queue
 * pair number) is chosen by the adapter and reported by it_ep_query(); its
 * key (the IB Q_Key) is the consumer's ep_attr->srv.ud.ep_info.ud_ep_key,
 * and a datagram is received only when it carries that key.
 *
 * @param[in] pz_handle protection zone of the endpoint
 * @param[in] request_sevd_handle dispatcher (data transfer stream) for
 *            request completions
 * @param[in] recv_sevd_handle dispatcher (data transfer stream) for
 *            receive completions
 * @param[in] ep_attr requested attributes (it_ud_only_attributes_t::ep_info
 *            carries the endpoint key; its ud_ep_id is ignored)
 * @param[in] spigot_id spigot the endpoint sends and receives on
 * @param[out] ep_handle receives the handle of the new endpoint
 * @retval IT_SUCCESS the endpoint was created
 * @retval IT_ERR_FAULT @p ep_handle is NULL
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter has no datagram service
 *          (it_ia_info_t::supported_service_types lacks ::IT_UD_SERVICE)
 * @retval IT_ERR_INVALID_REQ_EVD @p request_sevd_handle is not a live data transfer dispatcher of the
 *          adapter
 * @retval IT_ERR_INVALID_RECV_EVD @p recv_sevd_handle is not a live data transfer dispatcher of the
 *          adapter
 * @retval IT_ERR_INVALID_EP_ATTR @p ep_attr is NULL, or max_dto_payload_size exceeds the datagram MTU
 *          (it_spigot_info_t::max_ud_send_len)
 * @retval IT_ERR_INVALID_SPIGOT @p spigot_id is not a spigot of the adapter
 * @retval IT_ERR_INVALID_EP_KEY the key has bit 31 set (a controlled Q_Key, IBTA 10.2.4)
 * @retval IT_ERR_RESOURCE_REQ_DTO max_request_dtos exceeds the device limit
 * @retval IT_ERR_RESOURCE_RECV_DTO max_recv_dtos exceeds the device limit
 * @retval IT_ERR_RESOURCE_SSEG max_send_segments exceeds the device limit
 * @retval IT_ERR_RESOURCE_RSEG max_recv_segments exceeds the device limit
 * @retval IT_ERR_RESOURCES the provider could not create the queue pair
 * @note it_ep_connect(), it_ep_accept(), it_ep_disconnect(), it_ep_reset(), it_ep_modify(),
 *       it_post_send() and it_post_recv() refuse a datagram endpoint with IT_ERR_INVALID_EP_TYPE.
 * @ingroup ep
 */
it_status_t it_ep_ud_create(IN it_pz_handle_t pz_handle,
                            IN it_evd_handle_t request_sevd_handle,
                            IN it_evd_handle_t recv_sevd_handle,
                            IN const it_ep_attributes_t *ep_attr,
                            IN size_t spigot_id,
                            OUT it_ep_handle_t *ep_handle);

/**
 * @brief Modifies attributes of an endpoint.
 *
 * @param[in] ep_handle endpoint to modify
 * @param[in] mask attributes to change
 * @param[in] ep_attr new values of the selected attributes
 * @retval IT_SUCCESS the attributes were changed
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_EP_ATTR @p ep_attr is NULL, or the change enables atomics on an adapter
 *          without them
 * @retval IT_ERR_INVALID_MASK @p mask is 0 or selects anything but the RDMA Read/Write enables,
 *          IRD, ORD and the atomics enable
 * @retval IT_ERR_INVALID_EP_STATE IRD or ORD is changed on an endpoint that is not UNCONNECTED, or
 *          the provider refuses the change in the endpoint's state
 * @retval IT_ERR_RESOURCE_IRD the new IRD exceeds the device limit
 * @retval IT_ERR_RESOURCE_ORD the new ORD exceeds the device limit
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider cannot modify a queue pair
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @ingroup ep
 */
it_status_t it_ep_modify(IN it_ep_handle_t ep_handle,
                         IN it_ep_param_mask_t mask,
                         IN const it_ep_attributes_t *ep_attr);

/**
 * @brief Queries the parameters of an endpoint.
 *
 * @param[in] ep_handle endpoint to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup ep
 */
it_status_t it_ep_query(IN it_ep_handle_t ep_handle,
                        IN it_ep_param_mask_t mask,
                        OUT it_ep_param_t *params);

/**
 * @brief Returns a non-operational endpoint to the unconnected state.
 *
 * @param[in] ep_handle endpoint to reset
 * @retval IT_SUCCESS the endpoint is UNCONNECTED (also when it already was)
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither NONOPERATIONAL nor UNCONNECTED
 * @retval IT_ERR_CANNOT_RESET the provider cannot reset the queue pair yet (e.g. its connection is
 *          still being torn down)
 * @ingroup ep
 */
it_status_t it_ep_reset(IN it_ep_handle_t ep_handle);

/**
 * @brief Frees an endpoint.
 *
 * @param[in] ep_handle endpoint to free
 * @retval IT_SUCCESS the endpoint was freed
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @note Works in any state: outstanding work requests complete with ::IT_DTO_ERR_FLUSHED and a
 *       connected peer sees ::IT_CM_MSG_CONN_BROKEN_EVENT.
 * @ingroup ep
 */
it_status_t it_ep_free(IN it_ep_handle_t ep_handle);

/* ======================================================================== */
/* Connection management                                                    */
/* ======================================================================== */

/**
 * @brief Creates a listen point for incoming connection and datagram
 * service requests.
 *
 * @param[in] ia_handle interface adapter to listen on
 * @param[in] spigot_id spigot to listen on
 * @param[in] connect_evd dispatcher (::IT_CM_REQ_EVENT_STREAM) receiving
 *            the requests
 * @param[in] flags listen flags
 * @param[in,out] conn_qual in: the qualifier to listen on when
 *            ::IT_LISTEN_CONN_QUAL_INPUT is set (its type otherwise);
 *            out: the qualifier actually listened on
 * @param[out] listen_handle receives the handle of the listen point
 * @retval IT_SUCCESS the listen point was created
 * @retval IT_ERR_FAULT @p listen_handle is NULL
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter has no connection management
 * @retval IT_ERR_INVALID_SPIGOT @p spigot_id is not a spigot of the adapter
 * @retval IT_ERR_INVALID_CONN_EVD @p connect_evd is not a live ::IT_CM_REQ_EVENT_STREAM dispatcher
 *          of the adapter
 * @retval IT_ERR_INVALID_FLAGS @p flags has unknown bits or ::IT_LISTEN_SUPPRESS_IRD_ORD (not
 *          offered)
 * @retval IT_ERR_INVALID_CONN_QUAL @p conn_qual is NULL; or, with ::IT_LISTEN_CONN_QUAL_INPUT, of
 *          an unknown type, a service ID neither IP-based nor at most 65535, or port 0; or a port
 *          this process may not listen on: one below the host's unprivileged start
 *          (net.ipv4.ip_unprivileged_port_start, 1024 by default) without CAP_NET_BIND_SERVICE in
 *          the effective set, on every interface, or one the host refused the provider
 * @retval IT_ERR_CONN_QUAL_BUSY another listen point, of this or any other process on the host,
 *          holds the qualifier
 * @retval IT_ERR_RESOURCES no qualifier could be reserved (no free port, or the host-wide
 *          reservation failed), or the provider ran out of resources
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note The qualifier is reserved host-wide: it stays taken until the listen point is freed or its
 *       process ends. Without ::IT_LISTEN_CONN_QUAL_INPUT a free port is chosen and written back to
 *       @p conn_qual.
 * @ingroup cm
 */
it_status_t it_listen_create(IN it_ia_handle_t ia_handle,
                             IN size_t spigot_id,
                             IN it_evd_handle_t connect_evd,
                             IN it_listen_flags_t flags,
                             IN OUT it_conn_qual_t *conn_qual,
                             OUT it_listen_handle_t *listen_handle);

/**
 * @brief Frees a listen point.
 *
 * @param[in] listen_handle listen point to free
 * @retval IT_SUCCESS the listen point was freed
 * @retval IT_ERR_INVALID_LISTEN @p listen_handle is not a live listen point
 * @ingroup cm
 */
it_status_t it_listen_free(IN it_listen_handle_t listen_handle);

/**
 * @brief Queries the parameters of a listen point.
 *
 * @param[in] listen_handle listen point to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_LISTEN @p listen_handle is not a live listen point
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup cm
 */
it_status_t it_listen_query(IN it_listen_handle_t listen_handle,
                            IN it_listen_param_mask_t mask,
                            OUT it_listen_param_t *params);

/**
 * @brief Starts establishing a connection from an unconnected endpoint.
 *
 * @param[in] ep_handle unconnected reliable-connected endpoint
 * @param[in] path path to the peer
 * @param[in] conn_attr transport-specific connection attributes (only
 *            InfiniBand defines any)
 * @param[in] connect_qual qualifier of the service to connect to
 * @param[in] cn_est_flags handshake flags
 * @param[in] private_data private data sent with the request, or NULL
 * @param[in] private_data_length number of bytes of @p private_data
 * @retval IT_SUCCESS the request was started
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is not UNCONNECTED (or the provider refuses it in
 *          its state)
 * @retval IT_ERR_INVALID_CN_EST_FLAGS @p cn_est_flags has unknown bits, both handshakes,
 *          ::IT_CONNECT_FLAG_THREE_WAY on an adapter without it, or ::IT_CONNECT_SUPPRESS_IRD_ORD
 * @retval IT_ERR_INVALID_CONN_QUAL @p connect_qual is NULL, of an unknown type, or a service ID
 *          neither IP-based nor at most 65535
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p private_data_length exceeds
 *          it_ia_info_t::connect_private_data_len, or is nonzero with @p private_data NULL
 * @retval IT_ERR_INVALID_SOURCE_PATH @p path is NULL or names an IP version other than 4 or 6
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider has no connection management
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note @p conn_attr is ignored (the provider's timers apply). A peer that cannot be reached or has
 *       no listener is reported as ::IT_CM_MSG_CONN_NONPEER_REJECT_EVENT on the connect dispatcher,
 *       not by this call.
 * @ingroup cm
 */
it_status_t it_ep_connect(IN it_ep_handle_t ep_handle,
                          IN const it_path_t *path,
                          IN const it_conn_attributes_t *conn_attr,
                          IN const it_conn_qual_t *connect_qual,
                          IN it_cn_est_flags_t cn_est_flags,
                          IN const unsigned char *private_data,
                          IN size_t private_data_length);

/**
 * @brief Accepts a pending connection establishment on an endpoint.
 *
 * Used by the passive side on a connection request and by the active
 * side of a three-way handshake on ::IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT.
 *
 * @param[in] ep_handle endpoint that takes the connection
 * @param[in] cn_est_id identifier from the request or accept-arrival event
 * @param[in] private_data private data sent with the accept, or NULL
 * @param[in] private_data_length number of bytes of @p private_data
 * @retval IT_SUCCESS the accept was issued
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_CN_EST_ID @p cn_est_id is not pending on the endpoint's adapter (answered,
 *          withdrawn by the peer, or never issued)
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p private_data_length exceeds
 *          it_ia_info_t::accept_private_data_len, or is nonzero with @p private_data NULL
 * @retval IT_ERR_INVALID_EP_STATE a request is accepted on an endpoint that is not UNCONNECTED, or
 *          an accept-arrival identifier on another endpoint or one not waiting for it
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider has no connection management
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @ingroup cm
 */
it_status_t it_ep_accept(IN it_ep_handle_t ep_handle,
                         IN it_cn_est_identifier_t cn_est_id,
                         IN const unsigned char *private_data,
                         IN size_t private_data_length);

/**
 * @brief Rejects a pending connection establishment.
 *
 * @param[in] cn_est_id identifier from the request or accept-arrival event
 * @param[in] private_data private data sent with the rejection, or NULL
 * @param[in] private_data_length number of bytes of @p private_data
 * @retval IT_SUCCESS the rejection was issued (also when the peer had already withdrawn)
 * @retval IT_ERR_INVALID_CN_EST_ID @p cn_est_id is not pending (answered, withdrawn by the peer, or
 *          never issued)
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p private_data_length exceeds
 *          it_ia_info_t::reject_private_data_len, or is nonzero with @p private_data NULL
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider has no connection management
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Rejecting an accept-arrival identifier (three-way handshake) leaves the active endpoint
 *       NONOPERATIONAL. Once past the checks, @p cn_est_id is used up even if the provider fails.
 * @ingroup cm
 */
it_status_t it_reject(IN it_cn_est_identifier_t cn_est_id,
                      IN const unsigned char *private_data,
                      IN size_t private_data_length);

/**
 * @brief Hands a pending connection request over to another listen point.
 *
 * The listen point on @p conn_qual and @p spigot_id of the same interface
 * adapter gets an ::IT_CM_REQ_CONN_REQUEST_EVENT carrying the request (its
 * source, IRD/ORD and private data) under a new identifier and its own
 * qualifier; @p cn_est_id is used up.
 *
 * @param[in] conn_qual qualifier of the listen point taking over
 * @param[in] spigot_id spigot of that listen point
 * @param[in] cn_est_id identifier from the connection request event
 * @retval IT_SUCCESS the request was handed over
 * @retval IT_ERR_INVALID_CN_EST_ID @p cn_est_id is not a pending connection request (answered,
 *          withdrawn by the peer, handed over already, or a three-way reply)
 * @retval IT_ERR_INVALID_CONN_QUAL @p conn_qual is NULL or malformed, no listen point of the
 *          adapter listens on it on @p spigot_id, or it is the listen point that holds the request
 * @ingroup cm
 */
it_status_t it_handoff(IN const it_conn_qual_t *conn_qual,
                       IN size_t spigot_id,
                       IN it_cn_est_identifier_t cn_est_id);

/**
 * @brief Disconnects an endpoint or aborts its pending connection.
 *
 * @param[in] ep_handle endpoint to disconnect
 * @param[in] private_data private data sent with the disconnection, or NULL
 * @param[in] private_data_length number of bytes of @p private_data
 * @retval IT_SUCCESS the disconnection was started
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is UNCONNECTED or NONOPERATIONAL
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p private_data_length exceeds
 *          it_ia_info_t::disconnect_private_data_len, or is nonzero with @p private_data NULL
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider has no connection management
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Outstanding work requests complete with ::IT_DTO_ERR_FLUSHED; the end is reported as
 *       ::IT_CM_MSG_CONN_DISCONNECT_EVENT.
 * @ingroup cm
 */
it_status_t it_ep_disconnect(IN it_ep_handle_t ep_handle,
                             IN const unsigned char *private_data,
                             IN size_t private_data_length);

/**
 * @brief Resolves the paths from a spigot to a network address.
 *
 * @param[in] ia_handle interface adapter
 * @param[in] spigot_id spigot the paths start at
 * @param[in] net_addr destination network address
 * @param[in,out] num_paths in: capacity of @p paths in entries;
 *            out: number of entries filled
 * @param[out] total_paths receives the number of paths that exist
 * @param[out] paths array receiving the paths
 * @retval IT_SUCCESS the path was returned (or, with @p paths NULL or @p num_paths 0, only @p
 *          total_paths)
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_INVALID_SPIGOT @p spigot_id is not a spigot of the adapter
 * @retval IT_ERR_INVALID_NETADDR @p net_addr is NULL or not an IPv4, IPv6 or GID address
 * @retval IT_ERR_FAULT @p num_paths or @p total_paths is NULL
 * @note Builds exactly one path without resolving it; whether the address is reachable shows at
 *       it_ep_connect() time.
 * @ingroup cm
 */
it_status_t it_get_pathinfo(IN it_ia_handle_t ia_handle,
                            IN size_t spigot_id,
                            IN const it_net_addr_t *net_addr,
                            IN OUT size_t *num_paths,
                            OUT size_t *total_paths,
                            OUT it_path_t *paths);

/**
 * @brief Converts a connected TCP socket into the connection of an
 * unconnected endpoint (iWARP only).
 *
 * Both ends call it on their socket.  The end that called connect() on the
 * socket sends the MPA Request (its endpoint goes to
 * ACTIVE1_CONNECTION_PENDING), the end that accept()ed answers it (its
 * endpoint waits in PASSIVE_WAIT_RDMA_TRANS_REQ); both then get
 * ::IT_CM_MSG_CONN_ESTABLISHED_EVENT with the other end's @p msg as private
 * data, or a reject or broken event.  The accepted end is recognised by a
 * listening socket of this host on its local port; `ITAPI_SC_ROLE=active`
 * or `passive` overrides that.  The interface takes its own copy of the
 * socket: the application must not read or write @p sd afterwards, and may
 * close it.
 *
 * @param[in] sd connected TCP socket
 * @param[in] ep_handle unconnected reliable-connected endpoint
 * @param[in] flags ::IT_SC_DEFAULT (::IT_SC_NO_REQ_REP, no MPA exchange, is not offered)
 * @param[in] msg private data of the MPA Request or Reply, or NULL
 * @param[in] len number of bytes of @p msg
 * @retval IT_SUCCESS the conversion started; its outcome comes as a connection event
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter cannot take over sockets
 *          (it_ia_info_t::socket_conversion_support)
 * @retval IT_ERR_INVALID_CONVERSION @p flags is not ::IT_SC_DEFAULT, or @p sd is not a connected
 *          TCP socket
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is not UNCONNECTED
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p len exceeds the connect (active end) or accept (passive
 *          end) private data limit, or is nonzero with @p msg NULL
 * @retval IT_ERR_RESOURCES the socket could not be duplicated, or the provider ran out of
 *          resources
 * @ingroup cm
 */
it_status_t it_socket_convert(IN int sd,
                              IN it_ep_handle_t ep_handle,
                              IN it_sc_flags_t flags,
                              IN const unsigned char *msg,
                              IN size_t len);

/* ======================================================================== */
/* Shared receive queues                                                    */
/* ======================================================================== */

/**
 * @brief Creates a shared receive queue.
 *
 * Note the parameter order: segments before data transfers.  Endpoints
 * created with ::IT_EP_SRQ and this queue in `ep_attr->srv.rc.srq` take their
 * receives from it; a receive completes on the receive dispatcher of the
 * endpoint the message arrived on.
 *
 * @param[in] pz_handle protection zone of the queue
 * @param[in] max_recv_segments maximum segments of a receive
 * @param[in] max_recv_dtos maximum outstanding receives
 * @param[out] srq_handle receives the handle of the new queue
 * @retval IT_SUCCESS the queue was created
 * @retval IT_ERR_FAULT @p srq_handle is NULL
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_SRQ_NOT_SUPPORTED the adapter has no shared receive queues
 *          (it_ia_info_t::srq_support)
 * @retval IT_ERR_INVALID_SRQ_SIZE @p max_recv_dtos is 0 or above the device's queue depth
 * @retval IT_ERR_RESOURCE_RSEG @p max_recv_segments is 0 or above the device's limit
 * @retval IT_ERR_RESOURCES the provider could not create the queue
 * @ingroup srq
 */
it_status_t it_srq_create(IN it_pz_handle_t pz_handle,
                          IN size_t max_recv_segments,
                          IN size_t max_recv_dtos,
                          OUT it_srq_handle_t *srq_handle);

/**
 * @brief Frees a shared receive queue.
 *
 * @param[in] srq_handle queue to free
 * @retval IT_SUCCESS the queue was freed; receives still posted to it belong
 *          to no endpoint and complete nowhere
 * @retval IT_ERR_INVALID_SRQ @p srq_handle is not a live shared receive queue
 * @retval IT_ERR_SRQ_BUSY endpoints still take their receives from it
 * @ingroup srq
 */
it_status_t it_srq_free(IN it_srq_handle_t srq_handle);

/**
 * @brief Modifies parameters of a shared receive queue.
 *
 * ::IT_SRQ_PARAM_MAX_RECV_DTO resizes the queue; ::IT_SRQ_PARAM_LOW_WATERMARK
 * arms the low-watermark event: when the queue holds fewer receives than
 * the watermark, ::IT_ASYNC_AFF_SRQ_LOW_WATERMARK (cause.srq) is posted once
 * on the adapter's affiliated dispatcher and the watermark returns to 0
 * until armed again.
 *
 * @param[in] srq_handle queue to modify
 * @param[in] mask parameters to change
 * @param[in] params new values of the selected parameters
 * @retval IT_SUCCESS the parameters were changed
 * @retval IT_ERR_INVALID_SRQ @p srq_handle is not a live shared receive queue
 * @retval IT_ERR_INVALID_MASK @p mask is 0 or names a parameter other than the two above
 * @retval IT_ERR_FAULT @p params is NULL
 * @retval IT_ERR_INVALID_SRQ_SIZE the new size is 0, above the device's depth, or below the
 *          receives the queue holds
 * @retval IT_ERR_INVALID_WATERMARK the watermark exceeds the queue's size
 * @ingroup srq
 */
it_status_t it_srq_modify(IN it_srq_handle_t srq_handle,
                          IN it_srq_param_mask_t mask,
                          IN const it_srq_param_t *params);

/**
 * @brief Queries the parameters of a shared receive queue.
 *
 * @param[in] srq_handle queue to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_SRQ @p srq_handle is not a live shared receive queue
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup srq
 */
it_status_t it_srq_query(IN it_srq_handle_t srq_handle,
                         IN it_srq_param_mask_t mask,
                         OUT it_srq_param_t *params);

/* ======================================================================== */
/* Local memory regions                                                     */
/* ======================================================================== */

/**
 * @brief Registers local memory (IT-API 1.0 binding of `it_lmr_create`).
 *
 * @param[in] pz_handle protection zone of the region
 * @param[in] addr start of the memory
 * @param[in] length length of the memory in bytes
 * @param[in] privs access privileges
 * @param[in] flags creation flags
 * @param[in] shared_id shared registration identifier (with ::IT_LMR_FLAG_SHARED)
 * @param[out] lmr_handle receives the handle of the new region
 * @param[in,out] rmr_context receives the remote access context of the
 *            region, or NULL if not wanted
 * @retval IT_SUCCESS the memory was registered
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_INVALID_ADDRESS @p addr is NULL, or a page of the memory is not mapped
 * @retval IT_ERR_INVALID_LENGTH @p length is 0
 * @retval IT_ERR_RESOURCE_LMR_LENGTH @p length exceeds what the adapter can register, or the range
 *          wraps the address space
 * @retval IT_ERR_INVALID_PRIVS @p privs has bits outside ::IT_PRIV_ALL, or ::IT_PRIV_ATOMIC on an
 *          adapter without atomics
 * @retval IT_ERR_INVALID_FLAGS @p flags has unknown bits, or ::IT_LMR_FLAG_SHARED with
 *          ::IT_LMR_FLAG_NON_SHAREABLE
 * @retval IT_ERR_FAULT @p lmr_handle is NULL
 * @retval IT_ERR_ACCESS a page of the memory is not readable, or @p privs grant a write right
 *          (::IT_PRIV_LOCAL_WRITE, ::IT_PRIV_REMOTE_WRITE, ::IT_PRIV_ATOMIC) and a page is
 *          mapped read-only; itx_error_detail() names the address and the right
 * @retval IT_ERR_RESOURCES pinning would pass the memlock limit or failed, or the provider could
 *          not register the memory
 * @note Memory is pinned only for a provider that needs it (an IA without the capability
 *       no-pinning-needed, which itapi-info(1) lists), and accounted per process by the kernel's rule: no limit with CAP_IPC_LOCK, else
 *       RLIMIT_MEMLOCK; ITAPI_MEMLOCK_LIMIT, when set, replaces it.  Past it the call fails with
 *       ::IT_ERR_RESOURCES and itx_error_detail() gives the bytes asked, already pinned and
 *       allowed.
 * @ingroup lmr
 */
it_status_t it_lmr_create10(IN it_pz_handle_t pz_handle,
                            IN void *addr,
                            IN it_length_t length,
                            IN it_mem_priv_t privs,
                            IN it_lmr_flag_t flags,
                            IN uint32_t shared_id,
                            OUT it_lmr_handle_t *lmr_handle,
                            IN OUT it_rmr_context_t *rmr_context);

/**
 * @brief Registers local memory (IT-API 2.0 binding of `it_lmr_create`).
 *
 * @param[in] pz_handle protection zone of the region
 * @param[in] addr start of the memory
 * @param[in] length length of the memory in bytes
 * @param[in] addr_mode addressing mode of the region
 * @param[in] privs access privileges
 * @param[in] flags creation flags
 * @param[in] shared_id shared registration identifier (with ::IT_LMR_FLAG_SHARED)
 * @param[out] lmr_handle receives the handle of the new region
 * @param[in,out] rmr_context receives the remote access context of the
 *            region, or NULL if not wanted
 * @retval IT_SUCCESS the memory was registered
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_INVALID_ADDRESS @p addr is NULL, or a page of the memory is not mapped
 * @retval IT_ERR_INVALID_LENGTH @p length is 0
 * @retval IT_ERR_RESOURCE_LMR_LENGTH @p length exceeds what the adapter can register, or the range
 *          wraps the address space
 * @retval IT_ERR_INVALID_ADDR_MODE @p addr_mode is neither absolute nor relative, or relative on an
 *          adapter without it
 * @retval IT_ERR_INVALID_PRIVS @p privs has bits outside ::IT_PRIV_ALL, or ::IT_PRIV_ATOMIC on an
 *          adapter without atomics
 * @retval IT_ERR_INVALID_FLAGS @p flags has unknown bits, or ::IT_LMR_FLAG_SHARED with
 *          ::IT_LMR_FLAG_NON_SHAREABLE
 * @retval IT_ERR_FAULT @p lmr_handle is NULL
 * @retval IT_ERR_ACCESS a page of the memory is not readable, or @p privs grant a write right
 *          (::IT_PRIV_LOCAL_WRITE, ::IT_PRIV_REMOTE_WRITE, ::IT_PRIV_ATOMIC) and a page is
 *          mapped read-only; itx_error_detail() names the address and the right
 * @retval IT_ERR_RESOURCES pinning would pass the memlock limit or failed, or the provider could
 *          not register the memory
 * @note Memory is pinned only for a provider that needs it (an IA without the capability
 *       no-pinning-needed, which itapi-info(1) lists), and accounted per process by the kernel's rule: no limit with CAP_IPC_LOCK, else
 *       RLIMIT_MEMLOCK; ITAPI_MEMLOCK_LIMIT, when set, replaces it.  Past it the call fails with
 *       ::IT_ERR_RESOURCES and itx_error_detail() gives the bytes asked, already pinned and
 *       allowed.
 * @ingroup lmr
 */
it_status_t it_lmr_create20(IN it_pz_handle_t pz_handle,
                            IN void *addr,
                            IN it_length_t length,
                            IN it_addr_mode_t addr_mode,
                            IN it_mem_priv_t privs,
                            IN it_lmr_flag_t flags,
                            IN uint32_t shared_id,
                            OUT it_lmr_handle_t *lmr_handle,
                            IN OUT it_rmr_context_t *rmr_context);

/**
 * @brief Registers local memory given by address or by I/O buffer list
 * (IT-API 2.1 binding of `it_lmr_create`).
 *
 * @param[in] pz_handle protection zone of the region
 * @param[in] addr start of the memory, or NULL when @p iobl is given
 * @param[in] iobl I/O buffer list describing the memory (privileged), or NULL
 * @param[in] length length of the memory in bytes
 * @param[in] addr_mode addressing mode of the region
 * @param[in] privs access privileges
 * @param[in] flags creation flags
 * @param[in] shared_id shared registration identifier (with ::IT_LMR_FLAG_SHARED)
 * @param[out] lmr_handle receives the handle of the new region
 * @param[in,out] rmr_context receives the remote access context of the
 *            region, or NULL if not wanted
 * @retval IT_SUCCESS the memory was registered
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_OP_NOT_SUPPORTED @p iobl is given (I/O buffer lists are not built in this release)
 * @retval IT_ERR_INVALID_ADDRESS @p addr is NULL, or a page of the memory is not mapped
 * @retval IT_ERR_INVALID_LENGTH @p length is 0
 * @retval IT_ERR_RESOURCE_LMR_LENGTH @p length exceeds what the adapter can register, or the range
 *          wraps the address space
 * @retval IT_ERR_INVALID_ADDR_MODE @p addr_mode is neither absolute nor relative, or relative on an
 *          adapter without it
 * @retval IT_ERR_INVALID_PRIVS @p privs has bits outside ::IT_PRIV_ALL, or ::IT_PRIV_ATOMIC on an
 *          adapter without atomics
 * @retval IT_ERR_INVALID_FLAGS @p flags has unknown bits, or ::IT_LMR_FLAG_SHARED with
 *          ::IT_LMR_FLAG_NON_SHAREABLE
 * @retval IT_ERR_FAULT @p lmr_handle is NULL
 * @retval IT_ERR_ACCESS a page of the memory is not readable, or @p privs grant a write right
 *          (::IT_PRIV_LOCAL_WRITE, ::IT_PRIV_REMOTE_WRITE, ::IT_PRIV_ATOMIC) and a page is
 *          mapped read-only; itx_error_detail() names the address and the right
 * @retval IT_ERR_RESOURCES pinning would pass the memlock limit or failed, or the provider could
 *          not register the memory
 * @note Memory is pinned only for a provider that needs it (an IA without the capability
 *       no-pinning-needed, which itapi-info(1) lists), and accounted per process by the kernel's rule: no limit with CAP_IPC_LOCK, else
 *       RLIMIT_MEMLOCK; ITAPI_MEMLOCK_LIMIT, when set, replaces it.  Past it the call fails with
 *       ::IT_ERR_RESOURCES and itx_error_detail() gives the bytes asked, already pinned and
 *       allowed.
 * @ingroup lmr
 */
it_status_t it_lmr_create21(IN it_pz_handle_t pz_handle,
                            IN void *addr,
                            IN it_iobl_t *iobl,
                            IN it_length_t length,
                            IN it_addr_mode_t addr_mode,
                            IN it_mem_priv_t privs,
                            IN it_lmr_flag_t flags,
                            IN uint32_t shared_id,
                            OUT it_lmr_handle_t *lmr_handle,
                            IN OUT it_rmr_context_t *rmr_context);

/**
 * @brief Creates a local memory region without memory, to be linked later
 * with it_lmr_link() (privileged; fast memory registration).
 *
 * Every consumer is privileged in this stack: the provider checks keys,
 * bounds and rights on every access.  The region has no memory and no
 * usable context until a link completes.
 *
 * @param[in] pz_handle protection zone of the region
 * @param[in] iobl_num_elts capacity of the region in I/O buffer list elements (pages of a
 *            virtual range, or elements of an I/O buffer list)
 * @param[in] flags creation flags
 * @param[in] shared_id shared registration identifier (with ::IT_LMR_FLAG_SHARED)
 * @param[out] lmr_handle receives the handle of the new region
 * @retval IT_SUCCESS the region was created, unlinked
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter has no unlinked regions
 *          (it_ia_info_t::lmr_link_support is IT_FALSE), or the provider cannot allocate one
 * @retval IT_ERR_INVALID_IOBL @p iobl_num_elts is 0
 * @retval IT_ERR_RESOURCE_LMR_LENGTH @p iobl_num_elts pages exceed what the adapter can register
 * @retval IT_ERR_INVALID_FLAGS @p flags has unknown bits, or ::IT_LMR_FLAG_SHARED with
 *          ::IT_LMR_FLAG_NON_SHAREABLE
 * @retval IT_ERR_FAULT @p lmr_handle is NULL
 * @retval IT_ERR_RESOURCES the provider ran out of memory or regions
 * @ingroup lmr
 */
it_status_t it_lmr_create_unlinked(IN it_pz_handle_t pz_handle,
                                   IN size_t iobl_num_elts,
                                   IN it_lmr_flag_t flags,
                                   IN uint32_t shared_id,
                                   OUT it_lmr_handle_t *lmr_handle);

/**
 * @brief Posts a request on an endpoint that links memory to an unlinked
 * local memory region (privileged); completes with
 * ::IT_LMR_LINK_CMPL_EVENT.
 *
 * The new remote context is returned at once and answers once the request
 * completes; the region's earlier context stays dead.  The memory is a
 * virtual range (@p addr) or an I/O buffer list of ranges mapped by
 * it_mem_map() (contiguous in the I/O address space; triplets then use
 * @c addr.io).  The range stays pinned until the next link or the free.
 * A provider's failure to link completes with ::IT_DTO_ERR_LOCAL_MM_OPERATION
 * and the endpoint becomes NONOPERATIONAL.
 *
 * @param[in] lmr_handle unlinked region
 * @param[in] addr start of the memory, or NULL when @p iobl is given
 * @param[in] iobl I/O buffer list describing the memory, or NULL
 * @param[in] length length of the memory in bytes
 * @param[in] addr_mode addressing mode of the region
 * @param[in] privs access privileges
 * @param[in] ep_handle endpoint the request is posted on
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[out] rmr_context receives the new remote access context
 * @retval IT_SUCCESS the link was posted
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live region, or was not created by
 *          it_lmr_create_unlinked()
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_PRIV_OPS_UNAVAILABLE the endpoint was created without
 *          it_ep_attributes_t::priv_ops_enable
 * @retval IT_ERR_INVALID_PZ the region and the endpoint are in different protection zones
 * @retval IT_ERR_LMR_BUSY the region is linked; unlink it first
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has bits other than ::IT_COMPLETION_FLAG,
 *          ::IT_NOTIFY_FLAG and ::IT_BARRIER_FENCE_FLAG
 * @retval IT_ERR_FAULT @p rmr_context is NULL
 * @retval IT_ERR_INVALID_ADDR_MODE @p addr_mode is unknown, or relative on an adapter without it
 * @retval IT_ERR_INVALID_PRIVS @p privs has bits outside ::IT_PRIV_ALL, or ::IT_PRIV_ATOMIC on an
 *          adapter without atomics
 * @retval IT_ERR_INVALID_IOBL @p iobl is of no known type, empty, has an empty, misaligned (page
 *          list) or discontiguous element, a first-byte offset outside its first element, or is not
 *          inside one range mapped by it_mem_map()
 * @retval IT_ERR_INVALID_ADDRESS @p addr and @p iobl are both NULL, or a page of the memory is not
 *          mapped
 * @retval IT_ERR_INVALID_LENGTH @p length is 0, or exceeds the I/O buffer list
 * @retval IT_ERR_RESOURCE_LMR_LENGTH the memory spans more elements than the region's capacity,
 *          exceeds what the adapter can register, or wraps the address space
 * @retval IT_ERR_ACCESS a page of the memory is not readable, or @p privs grant a write right
 *          and a page is mapped read-only
 * @retval IT_ERR_RESOURCES the range could not be pinned (memory lock limit)
 * @retval IT_ERR_INVALID_EP_TYPE the endpoint is a datagram endpoint
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is not connected
 * @retval IT_ERR_TOO_MANY_POSTS the endpoint's request queue is full
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider cannot execute the link on this endpoint
 * @ingroup lmr
 */
it_status_t it_lmr_link(IN it_lmr_handle_t lmr_handle,
                        IN const void *addr,
                        IN const it_iobl_t *iobl,
                        IN it_length_t length,
                        IN it_addr_mode_t addr_mode,
                        IN it_mem_priv_t privs,
                        IN it_ep_handle_t ep_handle,
                        IN it_dto_cookie_t cookie,
                        IN it_dto_flags_t dto_flags,
                        OUT it_rmr_context_t *rmr_context);

/**
 * @brief Posts a request on an endpoint that unlinks the memory of a local
 * memory region (privileged; a local invalidate); completes with
 * ::IT_LMR_LINK_CMPL_EVENT.
 *
 * Once it completes the region's context is refused; the region may be
 * linked again.  A provider's failure completes with
 * ::IT_DTO_ERR_LOCAL_MM_OPERATION (e.g. an RMR is still linked to the region).
 *
 * @param[in] lmr_handle linked region
 * @param[in] ep_handle endpoint the request is posted on
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @retval IT_SUCCESS the unlink was posted
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live region, was not created by
 *          it_lmr_create_unlinked(), or is not linked
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_PRIV_OPS_UNAVAILABLE the endpoint was created without
 *          it_ep_attributes_t::priv_ops_enable
 * @retval IT_ERR_INVALID_PZ the region and the endpoint are in different protection zones
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has bits other than ::IT_COMPLETION_FLAG,
 *          ::IT_NOTIFY_FLAG, ::IT_BARRIER_FENCE_FLAG and ::IT_UNLINK_FENCE_FLAG
 * @retval IT_ERR_INVALID_EP_TYPE the endpoint is a datagram endpoint
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is not connected
 * @retval IT_ERR_TOO_MANY_POSTS the endpoint's request queue is full
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider cannot execute the unlink on this endpoint
 * @ingroup lmr
 */
it_status_t it_lmr_unlink(IN it_lmr_handle_t lmr_handle,
                          IN it_ep_handle_t ep_handle,
                          IN it_dto_cookie_t cookie,
                          IN it_dto_flags_t dto_flags);

/**
 * @brief Frees a local memory region (deregisters the memory).
 *
 * @param[in] lmr_handle region to free
 * @retval IT_SUCCESS the region was freed
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live local memory region
 * @ingroup lmr
 */
it_status_t it_lmr_free(IN it_lmr_handle_t lmr_handle);

/**
 * @brief Modifies parameters of a local memory region.
 *
 * @param[in] lmr_handle region to modify
 * @param[in] mask parameters to change
 * @param[in] params new values of the selected parameters
 * @retval IT_SUCCESS the privileges were changed
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live local memory region
 * @retval IT_ERR_INVALID_MASK @p mask is anything but ::IT_LMR_PARAM_MEM_PRIV
 * @retval IT_ERR_FAULT @p params is NULL
 * @retval IT_ERR_INVALID_PRIVS the new privileges have bits outside ::IT_PRIV_ALL, or
 *          ::IT_PRIV_ATOMIC on an adapter without atomics
 * @retval IT_ERR_ACCESS the new privileges add a write right and a page of the region is mapped
 *          read-only (or unreadable); the privileges are unchanged
 * @retval IT_ERR_INVALID_ADDRESS the new privileges add a write right and a page of the region is
 *          no longer mapped
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider cannot change the rights of a region
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @ingroup lmr
 */
it_status_t it_lmr_modify(IN it_lmr_handle_t lmr_handle,
                          IN it_lmr_param_mask_t mask,
                          IN const it_lmr_param_t *params);

/**
 * @brief Queries the parameters of a local memory region.
 *
 * @param[in] lmr_handle region to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live local memory region
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup lmr
 */
it_status_t it_lmr_query(IN it_lmr_handle_t lmr_handle,
                         IN it_lmr_param_mask_t mask,
                         OUT it_lmr_param_t *params);

/**
 * @brief Makes CPU writes to non-coherent memory visible to the adapter
 * (before a peer RDMA-reads it; 1.0 name `it_lmr_sync_rdma_read`).
 *
 * @param[in] local_segments segments to flush
 * @param[in] num_segments number of entries of @p local_segments
 * @retval IT_SUCCESS the segments were flushed
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments is nonzero and @p local_segments is NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not live
 * @note Memory of every provider of this release is coherent: the call is a full memory fence;
 *       segment bounds are not checked.
 * @ingroup lmr
 */
it_status_t it_lmr_flush_to_mem(IN const it_lmr_triplet_t *local_segments,
                                IN size_t num_segments);

/**
 * @brief Makes data written by the adapter into non-coherent memory
 * visible to the CPU (after a peer RDMA-wrote it; 1.0 name
 * `it_lmr_sync_rdma_write`).
 *
 * @param[in] local_segments segments to refresh
 * @param[in] num_segments number of entries of @p local_segments
 * @retval IT_SUCCESS the segments were refreshed
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments is nonzero and @p local_segments is NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not live
 * @note Memory of every provider of this release is coherent: the call is a full memory fence;
 *       segment bounds are not checked.
 * @ingroup lmr
 */
it_status_t it_lmr_refresh_from_mem(IN const it_lmr_triplet_t *local_segments,
                                    IN size_t num_segments);

/**
 * @brief Maps a virtual address range to I/O addresses for building I/O
 * buffer lists (privileged).
 *
 * The providers of this stack address the caller's virtual memory: the
 * range is pinned and its I/O address is its virtual address; the whole
 * range is mapped.  I/O buffer lists may name any part of a mapping.
 *
 * @param[in] ia_handle interface adapter
 * @param[in] vaddr start of the virtual range
 * @param[in] aspace_id address space the range belongs to
 * @param[in] len length of the range in bytes
 * @param[out] io_addr receives the I/O address of the start of the range
 * @param[out] mapped_len receives the number of bytes mapped
 * @retval IT_SUCCESS the range was mapped
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_FAULT @p io_addr or @p mapped_len is NULL
 * @retval IT_ERR_INVALID_ADDRESS @p vaddr is NULL, or a page of the range is not mapped
 * @retval IT_ERR_INVALID_LENGTH @p len is 0 or the range wraps the address space
 * @retval IT_ERR_NO_PERMISSION @p aspace_id is neither 0 nor the caller's process id
 * @retval IT_ERR_ACCESS a page of the range is not readable (the rights of a registration from
 *          the mapping are checked when it is registered)
 * @retval IT_ERR_RESOURCES the range could not be pinned (memory lock limit)
 * @ingroup lmr
 */
it_status_t it_mem_map(IN it_ia_handle_t ia_handle,
                       IN void *vaddr,
                       IN uint64_t aspace_id,
                       IN size_t len,
                       OUT it_io_addr_t *io_addr,
                       OUT size_t *mapped_len);

/**
 * @brief Removes a mapping made by it_mem_map() (privileged).
 *
 * Regions registered from the mapping must be freed first (the consumer's
 * duty, as with any I/O mapping).  Mappings left are removed with the IA.
 *
 * @param[in] ia_handle interface adapter
 * @param[in] io_addr I/O address returned by it_mem_map()
 * @param[in] mapped_len length returned by it_mem_map()
 * @retval IT_SUCCESS the mapping was removed
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live interface adapter
 * @retval IT_ERR_INVALID_ADDRESS @p io_addr is not an address it_mem_map() returned on this
 *          adapter, or it was unmapped
 * @retval IT_ERR_INVALID_LENGTH @p mapped_len is not the length it_mem_map() returned
 * @ingroup lmr
 */
it_status_t it_mem_unmap(IN it_ia_handle_t ia_handle,
                         IN it_io_addr_t io_addr,
                         IN size_t mapped_len);

/* ======================================================================== */
/* Remote memory regions                                                    */
/* ======================================================================== */

/**
 * @brief Creates a remote memory region (IT-API 1.0 binding of
 * `it_rmr_create`).
 *
 * @param[in] pz_handle protection zone of the region
 * @param[out] rmr_handle receives the handle of the new region
 * @retval IT_SUCCESS the region was created, unlinked, of the IA's default type (narrow where
 *          offered, else wide)
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_OP_NOT_SUPPORTED the IA has no remote memory regions (rmr_types_supported 0)
 * @retval IT_ERR_FAULT @p rmr_handle is NULL
 * @retval IT_ERR_RESOURCES the provider could not allocate a memory window
 * @ingroup rmr
 */
it_status_t it_rmr_create10(IN it_pz_handle_t pz_handle,
                            OUT it_rmr_handle_t *rmr_handle);

/**
 * @brief Creates a remote memory region of a given type (IT-API 2.0 and
 * 2.1 binding of `it_rmr_create`).
 *
 * @param[in] pz_handle protection zone of the region
 * @param[in] rmr_type type of the region
 * @param[out] rmr_handle receives the handle of the new region
 * @retval IT_SUCCESS the region was created, unlinked
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_OP_NOT_SUPPORTED the IA has no remote memory regions (rmr_types_supported 0)
 * @retval IT_ERR_INVALID_RMR_TYPE @p rmr_type is unknown or not in rmr_types_supported
 *          (::IT_RMR_TYPE_DEFAULT picks narrow where offered, else wide)
 * @retval IT_ERR_FAULT @p rmr_handle is NULL
 * @retval IT_ERR_RESOURCES the provider could not allocate a memory window
 * @note A protection zone holding a region refuses it_pz_free() with IT_ERR_PZ_BUSY.
 * @ingroup rmr
 */
it_status_t it_rmr_create20(IN it_pz_handle_t pz_handle,
                            IN it_rmr_type_t rmr_type,
                            OUT it_rmr_handle_t *rmr_handle);

/**
 * @brief Frees a remote memory region.
 *
 * A linked region is unlinked by the free: its context is refused at once.
 *
 * @param[in] rmr_handle region to free
 * @retval IT_SUCCESS the region is freed
 * @retval IT_ERR_INVALID_RMR @p rmr_handle is not a live region, or its link is still queued on
 *          its endpoint behind a send waiting for a receive (free it after the completion)
 * @ingroup rmr
 */
it_status_t it_rmr_free(IN it_rmr_handle_t rmr_handle);

/**
 * @brief Queries the parameters of a remote memory region.
 *
 * @param[in] rmr_handle region to query
 * @param[in] mask parameters to return
 * @param[out] params receives the selected parameters
 * @retval IT_SUCCESS @p params holds the region's parameters (lmr, addr, length, privs and
 *          rmr_context are zero while unlinked; linked turns IT_FALSE on an unlink, and on the
 *          receive completion of a peer's it_post_send_and_unlink() naming it)
 * @retval IT_ERR_INVALID_RMR @p rmr_handle is not a live region
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup rmr
 */
it_status_t it_rmr_query(IN it_rmr_handle_t rmr_handle,
                         IN it_rmr_param_mask_t mask,
                         OUT it_rmr_param_t *params);

/**
 * @brief Posts a request on an endpoint that binds a range of a local
 * memory region to a remote memory region (IT-API 1.0 binding of
 * `it_rmr_bind`); completes with ::IT_RMR_BIND_CMPL_EVENT.
 *
 * @param[in] rmr_handle region to bind
 * @param[in] lmr_handle local memory region holding the range
 * @param[in] addr start of the range
 * @param[in] length length of the range in bytes
 * @param[in] privs remote access privileges
 * @param[in] ep_handle endpoint the request is posted on
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[out] rmr_context receives the new remote access context
 * @retval IT_SUCCESS the request was posted; @p rmr_context holds the new context, valid once the
 *          request completes (a previous context of the region dies)
 * @retval IT_ERR_INVALID_RMR @p rmr_handle is not a live region
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live local memory region
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has bits other than ::IT_COMPLETION_FLAG,
 *          ::IT_NOTIFY_FLAG and ::IT_BARRIER_FENCE_FLAG
 * @retval IT_ERR_FAULT @p rmr_context is NULL
 * @retval IT_ERR_INVALID_PZ the region, the local memory region and the endpoint are not all in
 *          one protection zone
 * @retval IT_ERR_INVALID_ADDR_MODE the local memory region is relatively addressed on an
 *          iWARP IA (no window on a zero-based region)
 * @retval IT_ERR_INVALID_PRIVS @p privs has unknown bits, or remote privileges the local memory
 *          region does not have
 * @retval IT_ERR_INVALID_LENGTH @p length is 0
 * @retval IT_ERR_RANGE the range does not lie inside the local memory region
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider cannot execute it on this endpoint
 * @note The region answers only through @p ep_handle when narrow, through any endpoint of its
 *       protection zone when wide.  A provider-side bind failure completes with
 *       ::IT_RMR_OPERATION_FAILED; a request posted on a NONOPERATIONAL endpoint completes
 *       with ::IT_DTO_ERR_FLUSHED.  The local memory region refuses it_lmr_free() with
 *       IT_ERR_LMR_BUSY while the region is linked to it.
 * @ingroup rmr
 */
it_status_t it_rmr_bind10(IN it_rmr_handle_t rmr_handle,
                          IN it_lmr_handle_t lmr_handle,
                          IN void *addr,
                          IN it_length_t length,
                          IN it_mem_priv_t privs,
                          IN it_ep_handle_t ep_handle,
                          IN it_dto_cookie_t cookie,
                          IN it_dto_flags_t dto_flags,
                          OUT it_rmr_context_t *rmr_context);

/**
 * @brief Posts a request on an endpoint that links a range of a local
 * memory region to a remote memory region (IT-API 2.0 and 2.1 binding of
 * `it_rmr_bind`); completes with ::IT_RMR_LINK_CMPL_EVENT.
 *
 * @param[in] rmr_handle region to link
 * @param[in] lmr_handle local memory region holding the range
 * @param[in] addr start of the range
 * @param[in] length length of the range in bytes
 * @param[in] addr_mode addressing mode of the remote region
 * @param[in] privs remote access privileges
 * @param[in] ep_handle endpoint the request is posted on
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @p addr is read as the local memory region's triplets are (a virtual address, or an offset
 * for a relatively addressed one).  With ::IT_ADDR_MODE_ABSOLUTE the region answers to the
 * same remote addresses as the local memory region does for the range; with
 * ::IT_ADDR_MODE_RELATIVE to offsets from the start of the range.
 *
 * @param[out] rmr_context receives the new remote access context
 * @retval IT_SUCCESS the request was posted; @p rmr_context holds the new context, valid once the
 *          request completes (a previous context of the region dies)
 * @retval IT_ERR_INVALID_RMR @p rmr_handle is not a live region
 * @retval IT_ERR_INVALID_LMR @p lmr_handle is not a live local memory region
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has bits other than ::IT_COMPLETION_FLAG,
 *          ::IT_NOTIFY_FLAG and ::IT_BARRIER_FENCE_FLAG
 * @retval IT_ERR_FAULT @p rmr_context is NULL
 * @retval IT_ERR_INVALID_PZ the region, the local memory region and the endpoint are not all in
 *          one protection zone
 * @retval IT_ERR_INVALID_ADDR_MODE @p addr_mode is unknown, relative without
 *          addr_mode_relative_support, or the local memory region is relatively addressed on an
 *          iWARP IA (no window on a zero-based region)
 * @retval IT_ERR_INVALID_PRIVS @p privs has unknown bits, or remote privileges the local memory
 *          region does not have
 * @retval IT_ERR_INVALID_LENGTH @p length is 0
 * @retval IT_ERR_RANGE the range does not lie inside the local memory region
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider cannot execute it on this endpoint
 * @note The region answers only through @p ep_handle when narrow, through any endpoint of its
 *       protection zone when wide.  A provider-side bind failure completes with
 *       ::IT_RMR_OPERATION_FAILED; a request posted on a NONOPERATIONAL endpoint completes
 *       with ::IT_DTO_ERR_FLUSHED.  The local memory region refuses it_lmr_free() with
 *       IT_ERR_LMR_BUSY while the region is linked to it.
 * @ingroup rmr
 */
it_status_t it_rmr_link(IN it_rmr_handle_t rmr_handle,
                        IN it_lmr_handle_t lmr_handle,
                        IN void *addr,
                        IN it_length_t length,
                        IN it_addr_mode_t addr_mode,
                        IN it_mem_priv_t privs,
                        IN it_ep_handle_t ep_handle,
                        IN it_dto_cookie_t cookie,
                        IN it_dto_flags_t dto_flags,
                        OUT it_rmr_context_t *rmr_context);

/**
 * @brief Posts a request on an endpoint that unlinks a remote memory
 * region (1.0 name `it_rmr_unbind`); completes with
 * ::IT_RMR_LINK_CMPL_EVENT.
 *
 * @param[in] rmr_handle region to unlink
 * @param[in] ep_handle endpoint the request is posted on
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @retval IT_SUCCESS the request was posted; the context is refused once it completes
 * @retval IT_ERR_INVALID_RMR @p rmr_handle is not a live region, or is not linked
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_OP_NOT_SUPPORTED the IA cannot unlink regions of this type
 *          (narrow_/wide_rmr_unlink_support), or the provider cannot execute it on this
 *          endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has bits other than ::IT_COMPLETION_FLAG,
 *          ::IT_NOTIFY_FLAG, ::IT_BARRIER_FENCE_FLAG and ::IT_UNLINK_FENCE_FLAG
 * @retval IT_ERR_INVALID_PZ the endpoint is in another protection zone
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @note A narrow region is unlinked through the endpoint it was linked on; elsewhere the
 *       request completes with ::IT_RMR_OPERATION_FAILED.
 * @ingroup rmr
 */
it_status_t it_rmr_unlink(IN it_rmr_handle_t rmr_handle,
                          IN it_ep_handle_t ep_handle,
                          IN it_dto_cookie_t cookie,
                          IN it_dto_flags_t dto_flags);

/**
 * @brief Builds the remote address of a location in an absolutely
 * addressed region (1.0 name `it_make_rdma_addr`).
 *
 * @param addr virtual address of the location
 * @return the remote address to pass to RDMA and atomic operations
 * @ingroup rmr
 */
it_rdma_addr_t it_make_rdma_addr_absolute(void *addr);

/**
 * @brief Builds the remote address of a location in a relatively
 * addressed region.
 *
 * @param offset offset of the location from the start of the region
 * @return the remote address to pass to RDMA and atomic operations
 * @ingroup rmr
 */
it_rdma_addr_t it_make_rdma_addr_relative(it_length_t offset);

/* ======================================================================== */
/* Data transfer operations                                                 */
/* ======================================================================== */

/**
 * @brief Posts a send on a reliable-connected endpoint.
 *
 * @param[in] ep_handle endpoint to send on
 * @param[in] local_segments data to send
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @retval IT_SUCCESS the request was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits, or ::IT_UNLINK_LOCAL_SINK or
 *          ::IT_UNLINK_FENCE_FLAG (they belong to the unlink calls)
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments exceeds the endpoint's max_send_segments (or
 *          64), or is nonzero with @p local_segments NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not a live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is longer than 4 GiB - 1 bytes
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Protection, bounds and length errors are reported in the completion's dto_status
 *       (::IT_DTO_ERR_LOCAL_PROTECTION, ::IT_DTO_ERR_REMOTE_ACCESS, ::IT_DTO_ERR_LOCAL_LENGTH,
 *       ...), not by this call; a request posted on a NONOPERATIONAL endpoint completes with
 *       ::IT_DTO_ERR_FLUSHED.
 * @ingroup dto
 */
it_status_t it_post_send(IN it_ep_handle_t ep_handle,
                         IN const it_lmr_triplet_t *local_segments,
                         IN size_t num_segments,
                         IN it_dto_cookie_t cookie,
                         IN it_dto_flags_t dto_flags);

/**
 * @brief Posts a send that also unlinks a remote memory region of the peer
 * (send with remote invalidate).
 *
 * @param[in] ep_handle endpoint to send on
 * @param[in] local_segments data to send
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[in] rmr_context remote access context to unlink at the peer
 * @retval IT_SUCCESS the request was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_OP_NOT_SUPPORTED the IA has no post_send_unlink_remote_support, or the provider
 *          cannot execute it on this endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits, or ::IT_UNLINK_LOCAL_SINK or
 *          ::IT_UNLINK_FENCE_FLAG
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments exceeds the endpoint's max_send_segments (or
 *          64), or is nonzero with @p local_segments NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not a live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is longer than 4 GiB - 1 bytes
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @note The context must name a linked region of the peer usable through the peer's endpoint;
 *       otherwise the send completes with ::IT_DTO_ERR_REMOTE_ACCESS and the connection breaks.
 *       The peer's receive completion carries the unlinked region in unlinked_mr_handle.
 * @ingroup dto
 */
it_status_t it_post_send_and_unlink(IN it_ep_handle_t ep_handle,
                                    IN const it_lmr_triplet_t *local_segments,
                                    IN size_t num_segments,
                                    IN it_dto_cookie_t cookie,
                                    IN it_dto_flags_t dto_flags,
                                    IN it_rmr_context_t rmr_context);

/**
 * @brief Posts a receive on a reliable-connected endpoint or on a shared
 * receive queue.
 *
 * @param[in] handle endpoint or shared receive queue
 * @param[in] local_segments buffers to receive into
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @retval IT_SUCCESS the receive was posted
 * @retval IT_ERR_INVALID_HANDLE @p handle is not a live handle, or neither an endpoint nor a shared
 *          receive queue
 * @retval IT_ERR_INVALID_RECV_DTO @p handle is an endpoint that takes its receives from a shared
 *          receive queue
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits, or ::IT_UNLINK_LOCAL_SINK or
 *          ::IT_UNLINK_FENCE_FLAG (they belong to the unlink calls)
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments exceeds the endpoint's max_recv_segments (or
 *          64), or is nonzero with @p local_segments NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not a live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is longer than 4 GiB - 1 bytes
 * @retval IT_ERR_TOO_MANY_POSTS the receive queue of the endpoint is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Receives may be posted in any endpoint state; on a NONOPERATIONAL endpoint they complete
 *       with ::IT_DTO_ERR_FLUSHED. Protection and length errors are reported in the completion's
 *       dto_status (::IT_DTO_ERR_LOCAL_PROTECTION, ::IT_DTO_ERR_LOCAL_LENGTH), not by this call.
 * @ingroup dto
 */
it_status_t it_post_recv(IN it_handle_t handle,
                         IN const it_lmr_triplet_t *local_segments,
                         IN size_t num_segments,
                         IN it_dto_cookie_t cookie,
                         IN it_dto_flags_t dto_flags);

/**
 * @brief Posts an RDMA Read from remote memory into local memory regions.
 *
 * @param[in] ep_handle endpoint to read through
 * @param[in] local_segments local buffers receiving the data
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[in] rdma_addr remote address to read from
 * @param[in] rmr_context remote access context of the remote memory
 * @retval IT_SUCCESS the request was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits, or ::IT_UNLINK_LOCAL_SINK or
 *          ::IT_UNLINK_FENCE_FLAG (they belong to the unlink calls)
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments exceeds the endpoint's max_rdma_read_segments
 *          (at least 1) (or 64), or is nonzero with @p local_segments NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not a live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is longer than 4 GiB - 1 bytes
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Protection, bounds and length errors are reported in the completion's dto_status
 *       (::IT_DTO_ERR_LOCAL_PROTECTION, ::IT_DTO_ERR_REMOTE_ACCESS, ::IT_DTO_ERR_LOCAL_LENGTH,
 *       ...), not by this call; a request posted on a NONOPERATIONAL endpoint completes with
 *       ::IT_DTO_ERR_FLUSHED.
 * @ingroup dto
 */
it_status_t it_post_rdma_read(IN it_ep_handle_t ep_handle,
                              IN const it_lmr_triplet_t *local_segments,
                              IN size_t num_segments,
                              IN it_dto_cookie_t cookie,
                              IN it_dto_flags_t dto_flags,
                              IN it_rdma_addr_t rdma_addr,
                              IN it_rmr_context_t rmr_context);

/**
 * @brief Posts an RDMA Read from remote memory into local remote memory
 * regions.
 *
 * Each sink segment is a linked RMR of this side (a narrow one linked on
 * @p ep_handle), its address read in the RMR's addressing mode.  The sink
 * needs what a Read sink needs on the transport
 * (it_ia_info_t::rdma_read_requires_remote_write): on InfiniBand the
 * RMR's LMR must allow local write, on iWARP the RMR itself remote write.
 * Those, and the range, are checked as the Read executes: a violation
 * completes with ::IT_DTO_ERR_LOCAL_PROTECTION.  With ::IT_UNLINK_LOCAL_SINK
 * the sink RMR is unlinked once the data landed and the completion names
 * it in it_dto_cmpl_event_t::unlinked_mr_handle.
 *
 * @param[in] ep_handle endpoint to read through
 * @param[in] local_segments local remote-memory-region segments receiving the data
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[in] rdma_addr remote address to read from
 * @param[in] rmr_context remote access context of the remote memory
 * @retval IT_SUCCESS the Read was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits or ::IT_UNLINK_FENCE_FLAG
 * @retval IT_ERR_INVALID_EP_TYPE the endpoint is a datagram endpoint
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is not connected
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter cannot read into RMRs
 *          (it_ia_info_t::rdma_read_local_extensions is IT_FALSE), or the provider cannot on this
 *          endpoint
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments exceeds the endpoint's RDMA Read segments,
 *          the list is NULL, ::IT_UNLINK_LOCAL_SINK is given with other than one segment, or the
 *          provider refuses the Read at post (the endpoint's negotiated ORD is 0)
 * @retval IT_ERR_INVALID_RMR a segment names no live RMR, or one that is not linked
 * @retval IT_ERR_INVALID_PZ a segment's RMR is in another protection zone than the endpoint
 * @retval IT_ERR_INVALID_LENGTH a segment is 4 GiB or longer
 * @retval IT_ERR_TOO_MANY_POSTS the endpoint's request queue is full
 * @ingroup dto
 */
it_status_t it_post_rdma_read_to_rmr(IN it_ep_handle_t ep_handle,
                                     IN const it_rmr_triplet_t *local_segments,
                                     IN size_t num_segments,
                                     IN it_dto_cookie_t cookie,
                                     IN it_dto_flags_t dto_flags,
                                     IN it_rdma_addr_t rdma_addr,
                                     IN it_rmr_context_t rmr_context);

/**
 * @brief Posts an RDMA Write of local memory into remote memory.
 *
 * @param[in] ep_handle endpoint to write through
 * @param[in] local_segments data to write
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[in] rdma_addr remote address to write to
 * @param[in] rmr_context remote access context of the remote memory
 * @retval IT_SUCCESS the request was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits, or ::IT_UNLINK_LOCAL_SINK or
 *          ::IT_UNLINK_FENCE_FLAG (they belong to the unlink calls)
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_INVALID_NUM_SEGMENTS @p num_segments exceeds the endpoint's
 *          max_rdma_write_segments (at least 1) (or 64), or is nonzero with @p local_segments NULL
 * @retval IT_ERR_INVALID_LMR a segment names a region that is not a live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is longer than 4 GiB - 1 bytes
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Protection, bounds and length errors are reported in the completion's dto_status
 *       (::IT_DTO_ERR_LOCAL_PROTECTION, ::IT_DTO_ERR_REMOTE_ACCESS, ::IT_DTO_ERR_LOCAL_LENGTH,
 *       ...), not by this call; a request posted on a NONOPERATIONAL endpoint completes with
 *       ::IT_DTO_ERR_FLUSHED.
 * @ingroup dto
 */
it_status_t it_post_rdma_write(IN it_ep_handle_t ep_handle,
                               IN const it_lmr_triplet_t *local_segments,
                               IN size_t num_segments,
                               IN it_dto_cookie_t cookie,
                               IN it_dto_flags_t dto_flags,
                               IN it_rdma_addr_t rdma_addr,
                               IN it_rmr_context_t rmr_context);

/**
 * @brief Posts an atomic operation on a 64-bit word of remote memory.
 *
 * @param[in] ep_handle endpoint to operate through
 * @param[in] op atomic operation
 * @param[in] swap_or_add value to swap in (compare and swap) or to add
 *            (fetch and add)
 * @param[in] compare value to compare with (compare and swap only)
 * @param[in] result 8-byte local segment receiving the original remote value
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[in] rdma_addr remote address of the 64-bit word
 * @param[in] rmr_context remote access context of the remote memory
 * @retval IT_SUCCESS the operation was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter has no atomics (it_ia_info_t::atomic_support)
 * @retval IT_ERR_INVALID_ATOMIC_OP @p op is neither ::IT_COMPARE_AND_SWAP nor ::IT_FETCH_AND_ADD
 * @retval IT_ERR_INVALID_LENGTH @p result is NULL or not 8 bytes long
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits, or ::IT_UNLINK_LOCAL_SINK or
 *          ::IT_UNLINK_FENCE_FLAG (they belong to the unlink calls)
 * @retval IT_ERR_INVALID_EP_STATE the endpoint is neither CONNECTED nor NONOPERATIONAL
 * @retval IT_ERR_INVALID_LMR @p result names a region that is not live
 * @retval IT_ERR_TOO_MANY_POSTS the request queue of the endpoint is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory or hit a device limit
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Protection, bounds and alignment errors are reported in the completion's dto_status
 *       (::IT_DTO_ERR_LOCAL_PROTECTION; ::IT_DTO_ERR_REMOTE_ACCESS also for an @p rdma_addr that is
 *       not 8-byte aligned), not by this call; a request posted on a NONOPERATIONAL endpoint
 *       completes with ::IT_DTO_ERR_FLUSHED.
 * @ingroup dto
 */
it_status_t it_post_atomic(IN it_ep_handle_t ep_handle,
                           IN it_atomic_op_t op,
                           IN uint64_t swap_or_add,
                           IN uint64_t compare,
                           IN const it_lmr_triplet_t *result,
                           IN it_dto_cookie_t cookie,
                           IN it_dto_flags_t dto_flags,
                           IN it_rdma_addr_t rdma_addr,
                           IN it_rmr_context_t rmr_context);

/**
 * @brief Posts a datagram send on an unreliable-datagram endpoint.
 *
 * Delivery is unreliable: a datagram to an endpoint id nobody has, with a
 * key other than the destination's, or finding no receive posted there, is
 * dropped at the destination, and the send still completes with
 * ::IT_DTO_SUCCESS (as on InfiniBand, a UD send completes once sent).
 *
 * @param[in] ep_handle datagram endpoint to send on
 * @param[in] local_segments data to send (their total is the datagram)
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @param[in] remote_ep_addr destination: ::IT_DG_TYPE_IB_UD with an address handle of the
 *            endpoint's protection zone and the destination's it_remote_ep_info_t
 * @retval IT_SUCCESS the datagram was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_EP_TYPE the endpoint is a reliable-connected one
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits or an unlink flag
 * @retval IT_ERR_INVALID_AH @p remote_ep_addr is NULL or not ::IT_DG_TYPE_IB_UD, or its address
 *          handle is not live or belongs to another protection zone
 * @retval IT_ERR_INVALID_NUM_SEGMENTS more segments than the endpoint's max_send_segments
 * @retval IT_ERR_INVALID_LMR a segment names no live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is 4 GiB or longer
 * @retval IT_ERR_PAYLOAD_SIZE the datagram is longer than the path MTU
 *          (it_spigot_info_t::max_ud_send_len); nothing is sent
 * @retval IT_ERR_TOO_MANY_POSTS the send queue is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @note Local key and bounds errors complete the request with ::IT_DTO_ERR_LOCAL_PROTECTION; the
 *       endpoint stays operational.
 * @ingroup dto
 */
it_status_t it_post_sendto(IN it_ep_handle_t ep_handle,
                           IN const it_lmr_triplet_t *local_segments,
                           IN size_t num_segments,
                           IN it_dto_cookie_t cookie,
                           IN it_dto_flags_t dto_flags,
                           IN const it_dg_remote_ep_addr_t *remote_ep_addr);

/**
 * @brief Posts a datagram receive on an unreliable-datagram endpoint.
 *
 * The completion is ::IT_DTO_UD_RECV_CMPL_EVENT in the it_all_dto_cmpl_event_t form: ud_ep_id
 * names the sender, src_path a path back to it (for it_address_handle_create()), and with
 * ::IT_UD_IB_GRH_PRESENT in flags the first 40 bytes of the buffer hold the InfiniBand GRH and
 * the payload follows it; transferred_length counts the GRH.  The buffers must leave room for
 * the GRH: a datagram that does not fit completes the receive with ::IT_DTO_ERR_LOCAL_LENGTH.
 *
 * @param[in] ep_handle datagram endpoint to receive on
 * @param[in] local_segments buffers to receive into
 * @param[in] num_segments number of entries of @p local_segments
 * @param[in] cookie cookie returned in the completion
 * @param[in] dto_flags data transfer flags
 * @retval IT_SUCCESS the receive was posted
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint
 * @retval IT_ERR_INVALID_EP_TYPE the endpoint is a reliable-connected one
 * @retval IT_ERR_INVALID_DTO_FLAGS @p dto_flags has unknown bits or an unlink flag
 * @retval IT_ERR_INVALID_NUM_SEGMENTS more segments than the endpoint's max_recv_segments
 * @retval IT_ERR_INVALID_LMR a segment names no live local memory region
 * @retval IT_ERR_INVALID_LENGTH a segment is 4 GiB or longer
 * @retval IT_ERR_TOO_MANY_POSTS the receive queue is full
 * @retval IT_ERR_RESOURCES the provider ran out of memory
 * @retval IT_ERR_IA_CATASTROPHE the device failed
 * @ingroup dto
 */
it_status_t it_post_recvfrom(IN it_ep_handle_t ep_handle,
                             IN const it_lmr_triplet_t *local_segments,
                             IN size_t num_segments,
                             IN it_dto_cookie_t cookie,
                             IN it_dto_flags_t dto_flags);

/* ======================================================================== */
/* Address handles                                                          */
/* ======================================================================== */

/**
 * @brief Creates an address handle for sending datagrams along a path.
 *
 * The InfiniBand fields of the path are the address vector (remote GID and LID, SL, GRH fields
 * when subnet_local is clear, rate, MTU).  Without ::IT_AH_PATH_COMPLETE the adapter completes
 * the local end of the path: a zero P_Key becomes 0xffff, a zero local GID the spigot's, a zero
 * MTU the spigot's; with it the path is used as given.
 *
 * @param[in] pz_handle protection zone of the address handle
 * @param[in] destination_path path to the destination (from it_get_pathinfo(), a service reply's
 *            dst_path or a receive's src_path)
 * @param[in] ah_flags 0 or ::IT_AH_PATH_COMPLETE
 * @param[out] addr_handle receives the new address handle
 * @retval IT_SUCCESS the address handle was created
 * @retval IT_ERR_FAULT @p addr_handle is NULL
 * @retval IT_ERR_INVALID_PZ @p pz_handle is not a live protection zone
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter has no datagram service
 * @retval IT_ERR_INVALID_FLAGS @p ah_flags has bits other than ::IT_AH_PATH_COMPLETE
 * @retval IT_ERR_INVALID_SOURCE_PATH @p destination_path is NULL or names no destination (remote GID
 *          and LID zero)
 * @retval IT_ERR_INVALID_SPIGOT the path starts at a spigot the adapter does not have
 * @retval IT_ERR_RESOURCES the provider could not create the handle
 * @ingroup ud
 */
it_status_t it_address_handle_create(IN it_pz_handle_t pz_handle,
                                     IN const it_path_t *destination_path,
                                     IN it_ah_flags_t ah_flags,
                                     OUT it_addr_handle_t *addr_handle);

/**
 * @brief Frees an address handle.
 *
 * Datagrams already posted with it are unaffected.
 *
 * @param[in] addr_handle address handle to free
 * @retval IT_SUCCESS the handle was freed
 * @retval IT_ERR_INVALID_AH @p addr_handle is not a live address handle
 * @ingroup ud
 */
it_status_t it_address_handle_free(IN it_addr_handle_t addr_handle);

/**
 * @brief Modifies parameters of an address handle.
 *
 * Only the path can change; it is completed as by it_address_handle_create() without
 * ::IT_AH_PATH_COMPLETE.  On failure the handle keeps its old path.
 *
 * @param[in] addr_handle address handle to modify
 * @param[in] mask ::IT_ADDR_PARAM_PATH
 * @param[in] params new values of the selected parameters
 * @retval IT_SUCCESS the path was changed
 * @retval IT_ERR_INVALID_AH @p addr_handle is not a live address handle
 * @retval IT_ERR_INVALID_MASK @p mask is anything but ::IT_ADDR_PARAM_PATH (the IA and PZ are fixed)
 * @retval IT_ERR_FAULT @p params is NULL
 * @retval IT_ERR_INVALID_SOURCE_PATH the new path names no destination
 * @retval IT_ERR_INVALID_SPIGOT the new path starts at a spigot the adapter does not have
 * @retval IT_ERR_RESOURCES the provider could not rebuild the handle
 * @ingroup ud
 */
it_status_t it_address_handle_modify(IN it_addr_handle_t addr_handle,
                                     IN it_addr_param_mask_t mask,
                                     IN const it_addr_param_t *params);

/**
 * @brief Queries the parameters of an address handle.
 *
 * @param[in] addr_handle address handle to query
 * @param[in] mask parameters to return (every parameter is returned whatever the mask)
 * @param[out] params receives the selected parameters; the path as completed at creation
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_AH @p addr_handle is not a live address handle
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p params is NULL
 * @ingroup ud
 */
it_status_t it_address_handle_query(IN it_addr_handle_t addr_handle,
                                    IN it_addr_param_mask_t mask,
                                    OUT it_addr_param_t *params);

/* ======================================================================== */
/* Datagram service resolution                                              */
/* ======================================================================== */

/**
 * @brief Creates a datagram service request handle.
 *
 * The adapter is the reply dispatcher's.  The qualifier names the port a listen point of the
 * serving node listens on (as it_ep_connect()'s: ::IT_IANA_PORT, the remote port of
 * ::IT_IANA_LR_PORT, or ::IT_IB_SERVICEID).
 *
 * @param[in] conn_qual qualifier of the service to resolve
 * @param[in] reply_evd dispatcher (::IT_CM_MSG_EVENT_STREAM) receiving the reply
 * @param[in] destination_path path to the node providing the service
 * @param[in] private_data private data sent with the request, or NULL
 * @param[in] private_data_length number of bytes of @p private_data
 * @param[out] ud_svc_handle receives the new request handle
 * @retval IT_SUCCESS the handle was created (nothing is sent yet)
 * @retval IT_ERR_FAULT @p ud_svc_handle is NULL
 * @retval IT_ERR_INVALID_EVD @p reply_evd is not a live ::IT_CM_MSG_EVENT_STREAM dispatcher
 * @retval IT_ERR_OP_NOT_SUPPORTED the adapter has no datagram service
 * @retval IT_ERR_INVALID_CONN_QUAL @p conn_qual is NULL, of an unsupported type, or names port 0
 * @retval IT_ERR_INVALID_SOURCE_PATH @p destination_path is NULL
 * @retval IT_ERR_INVALID_SPIGOT the path starts at a spigot the adapter does not have
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p private_data_length exceeds
 *          it_ia_info_t::ud_req_private_data_len, or is nonzero with @p private_data NULL
 * @ingroup ud
 */
it_status_t it_ud_service_request_handle_create(
    IN const it_conn_qual_t *conn_qual,
    IN it_evd_handle_t reply_evd,
    IN const it_path_t *destination_path,
    IN const unsigned char *private_data,
    IN size_t private_data_length,
    OUT it_ud_svc_req_handle_t *ud_svc_handle);

/**
 * @brief Frees a datagram service request handle.
 *
 * A reply still on its way is discarded.
 *
 * @param[in] ud_svc_handle request handle to free
 * @retval IT_SUCCESS the handle was freed
 * @retval IT_ERR_INVALID_UD_SVC @p ud_svc_handle is not a live request handle
 * @ingroup ud
 */
it_status_t it_ud_service_request_handle_free(
    IN it_ud_svc_req_handle_t ud_svc_handle);

/**
 * @brief Queries the parameters of a datagram service request handle.
 *
 * @param[in] ud_svc_handle request handle to query
 * @param[in] mask parameters to return (every parameter is returned whatever the mask)
 * @param[out] ud_svc_handle_info receives the selected parameters
 * @retval IT_SUCCESS the parameters were returned
 * @retval IT_ERR_INVALID_UD_SVC @p ud_svc_handle is not a live request handle
 * @retval IT_ERR_INVALID_MASK @p mask has unknown bits
 * @retval IT_ERR_FAULT @p ud_svc_handle_info is NULL
 * @ingroup ud
 */
it_status_t it_ud_service_request_handle_query(
    IN it_ud_svc_req_handle_t ud_svc_handle,
    IN it_ud_svc_req_param_mask_t mask,
    OUT it_ud_svc_req_param_t *ud_svc_handle_info);

/**
 * @brief Sends a datagram service request; the reply arrives as
 * ::IT_CM_MSG_UD_SERVICE_REPLY_EVENT.
 *
 * The listen point on the qualifier's port gets ::IT_CM_REQ_UD_SERVICE_REQUEST_EVENT; its
 * it_ud_service_reply() comes back with status, endpoint information, the handle's destination
 * path (dst_path) and private data.  When nothing listens there, or the listen point is freed
 * before answering, the reply's status is ::IT_UD_SVC_ID_NOT_SUPPORTED.  A handle may be sent
 * again; each send gets one reply.
 *
 * @param[in] ud_svc_handle request handle to send
 * @retval IT_SUCCESS the request was sent
 * @retval IT_ERR_INVALID_UD_SVC @p ud_svc_handle is not a live request handle
 * @retval IT_ERR_INVALID_SOURCE_PATH the handle's path names an IP version other than 4 or 6
 * @retval IT_ERR_INVALID_PDATA_LENGTH the provider refused the private data's length
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider has no datagram service resolution
 * @retval IT_ERR_RESOURCES the provider ran out of memory
 * @ingroup ud
 */
it_status_t it_ud_service_request(IN it_ud_svc_req_handle_t ud_svc_handle);

/**
 * @brief Answers an incoming datagram service request.
 *
 * A request is answered once; @p ep_info reaches the requester only with
 * ::IT_UD_SVC_EP_INFO_VALID.
 *
 * @param[in] ud_svc_req_id identifier from the service request event
 * @param[in] status status of the reply
 * @param[in] ep_info endpoint providing the service (by value)
 * @param[in] private_data private data sent with the reply, or NULL
 * @param[in] private_data_length number of bytes of @p private_data
 * @retval IT_SUCCESS the reply was sent
 * @retval IT_ERR_INVALID_UD_SVC_REQ_ID @p ud_svc_req_id is not a pending request (answered already,
 *          its adapter freed, or never issued)
 * @retval IT_ERR_INVALID_UD_STATUS @p status is not an it_ud_svc_req_status_t value
 * @retval IT_ERR_INVALID_PDATA_LENGTH @p private_data_length exceeds
 *          it_ia_info_t::ud_rep_private_data_len, or is nonzero with @p private_data NULL
 * @retval IT_ERR_RESOURCES the provider ran out of memory
 * @ingroup ud
 */
it_status_t it_ud_service_reply(IN it_ud_svc_req_identifier_t ud_svc_req_id,
                                IN it_ud_svc_req_status_t status,
                                IN it_remote_ep_info_t ep_info,
                                IN const unsigned char *private_data,
                                IN size_t private_data_length);

/* ======================================================================== */
/* Utilities                                                                */
/* ======================================================================== */

/**
 * @brief Attaches a consumer context to a handle.
 *
 * @param[in] handle handle of any type
 * @param[in] context context to attach (replaces any previous one)
 * @retval IT_SUCCESS the context was attached
 * @retval IT_ERR_INVALID_HANDLE @p handle is not a live handle
 * @ingroup util
 */
it_status_t it_set_consumer_context(IN it_handle_t handle,
                                    IN it_context_t context);

/**
 * @brief Returns the consumer context attached to a handle.
 *
 * @param[in] handle handle of any type
 * @param[out] context receives the context
 * @retval IT_SUCCESS the context was returned
 * @retval IT_ERR_INVALID_HANDLE @p handle is not a live handle
 * @retval IT_ERR_FAULT @p context is NULL
 * @retval IT_ERR_NO_CONTEXT no context was ever attached to @p handle
 * @ingroup util
 */
it_status_t it_get_consumer_context(IN it_handle_t handle,
                                    OUT it_context_t *context);

/**
 * @brief Returns the type of the object behind a handle.
 *
 * @param[in] handle handle of any type
 * @param[out] type_of_handle receives the type
 * @retval IT_SUCCESS the type was returned
 * @retval IT_ERR_INVALID_HANDLE @p handle is not a live handle
 * @retval IT_ERR_FAULT @p type_of_handle is NULL
 * @ingroup util
 */
it_status_t it_get_handle_type(IN it_handle_t handle,
                               OUT it_handle_type_enum_t *type_of_handle);

/**
 * @brief Converts a network address to another address type.
 *
 * @param[in] source_addr address to convert
 * @param[in] addr_type type to convert to
 * @param[out] destination_addr receives the converted address
 * @retval IT_SUCCESS the address was converted
 * @retval IT_ERR_INVALID_NETADDR @p source_addr or @p destination_addr is NULL, or the source is
 *          not IPv4, IPv6 or GID
 * @retval IT_ERR_INVALID_CONVERSION @p addr_type is not IPv4, IPv6 or GID, or the address has no
 *          IPv4 form (not IPv4-mapped)
 * @ingroup util
 */
it_status_t it_convert_net_addr(IN const it_net_addr_t *source_addr,
                                IN it_net_addr_type_t addr_type,
                                OUT it_net_addr_t *destination_addr);

/**
 * @brief Converts a 64-bit value from host to network byte order.
 *
 * @param hostint value in host byte order
 * @return the value in network (big-endian) byte order
 * @ingroup util
 */
uint64_t it_hton64(uint64_t hostint);

/**
 * @brief Converts a 64-bit value from network to host byte order.
 *
 * @param netint value in network (big-endian) byte order
 * @return the value in host byte order
 * @ingroup util
 */
uint64_t it_ntoh64(uint64_t netint);

/* ======================================================================== */
/* Binding-dependent generic names and IT-API 1.0 compatibility names       */
/* ======================================================================== */

/** @addtogroup util
 *  @{ */

#if defined(ITAPI_ENABLE_V21_BINDINGS)
#define it_lmr_create it_lmr_create21
#define it_rmr_create it_rmr_create20
#define it_rmr_bind it_rmr_link
#elif defined(ITAPI_ENABLE_V20_BINDINGS)
#define it_lmr_create it_lmr_create20
#define it_rmr_create it_rmr_create20
#define it_rmr_bind it_rmr_link
#else
/** @brief Generic name of local memory registration: it_lmr_create10()
 *  with 1.0 bindings, it_lmr_create20() with 2.0 bindings,
 *  it_lmr_create21() with 2.1 bindings. */
#define it_lmr_create it_lmr_create10
/** @brief Generic name of remote memory region creation: it_rmr_create10()
 *  with 1.0 bindings, it_rmr_create20() with 2.0 and 2.1 bindings. */
#define it_rmr_create it_rmr_create10
/** @brief Generic name of remote memory region binding: it_rmr_bind10()
 *  with 1.0 bindings, it_rmr_link() with 2.0 and 2.1 bindings. */
#define it_rmr_bind it_rmr_bind10
#endif

/** @brief IT-API 1.0 name of the field it_rc_only_attributes_t::rdma_read_ird. */
#define rdma_read_inflight_incoming rdma_read_ird

/** @brief IT-API 1.0 name of the field it_rc_only_attributes_t::rdma_read_ord. */
#define rdma_read_inflight_outgoing rdma_read_ord

/** @brief IT-API 1.0 name of the field it_ia_info_t::ird_ord_ia_support. */
#define ird_support ird_ord_ia_support

/** @brief IT-API 1.0 name of the field it_ia_info_t::ird_ord_ia_support. */
#define ord_support ird_ord_ia_support

/** @brief IT-API 1.0 name of it_make_rdma_addr_absolute(). */
#define it_make_rdma_addr it_make_rdma_addr_absolute

/** @brief IT-API 1.0 name of it_lmr_flush_to_mem(). */
#define it_lmr_sync_rdma_read it_lmr_flush_to_mem

/** @brief IT-API 1.0 name of it_lmr_refresh_from_mem(). */
#define it_lmr_sync_rdma_write it_lmr_refresh_from_mem

/** @brief IT-API 1.0 name of it_rmr_unlink(). */
#define it_rmr_unbind it_rmr_unlink

/** @} */

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* IT_API_H */
