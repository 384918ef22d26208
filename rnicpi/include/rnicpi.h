/*
 * RNIC-PI: the RNIC Programming Interface of this stack, version 1.
 *
 * SPDX-License-Identifier: MIT
 */

/**
 * @file rnicpi.h
 * @brief RNIC-PI v1: the ABI between the access layers and a verbs provider.
 *
 * Minor versions only add.  Each member says the version it came in
 * ("ABI 1.4: ..."); @ref rnicpi_changes says what each version brought.
 *
 * A provider is a shared module (or a built-in) that exports one const
 * descriptor, ::rnicpi_provider_t, under the symbol named by
 * #RNICPI_PROVIDER_SYMBOL.  The descriptor carries the ABI version, the
 * provider's name and version, and one operations table per area (device,
 * memory, queues, data path, connection management, socket handoff).  Each
 * table starts with its own size, so a provider built against an older
 * minor version stays loadable: operations past the end of its table, and
 * operations left NULL, are filled by the loader with stubs that return
 * #RNICPI_ENOTSUP.  The access layer therefore never tests an operation for
 * NULL on the hot path.
 *
 * The access layer reconciles iWARP and InfiniBand semantics from the
 * capability record (::rnicpi_caps_t) alone; it never branches on a
 * provider's name.  A provider reports what it cannot do by leaving the
 * matching capability bit clear.
 *
 * A provider includes only this header and GLib.  It calls back into the
 * access layer only through the upcalls (::rnicpi_upcalls_t) it is given
 * when a device is opened; every context the access layer hands down
 * (device, CQ, QP and listener contexts) comes back unchanged in upcalls and
 * completions, and may be a handle value rather than a pointer, so a late
 * completion for a freed object is harmless.
 */
#ifndef RNICPI_H
#define RNICPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup rnicpi_abi Provider descriptor and loading
 *  @brief How a provider is found, versioned and registered.
 *  @{ */

/** Major version of the ABI: a provider of another major is refused. */
#define RNICPI_ABI_MAJOR 1
/** Minor version of the ABI: additions only; older minors stay loadable. */
#define RNICPI_ABI_MINOR 12
/** Name of the symbol a loadable provider module exports. */
#define RNICPI_PROVIDER_SYMBOL "rnicpi_provider_v1"
/** Bytes of each name slot rnicpi_device_ops_t::list and
 *  rnicpi_device_ops_t::list_refused fill: a device name of at most 63
 *  bytes and its NUL. */
#define RNICPI_DEVICE_NAME_MAX 64
/** Bytes of each reason slot rnicpi_device_ops_t::list_refused fills, and
 *  of rnicpi_entry_t::reason: a sentence and its NUL. */
#define RNICPI_REASON_MAX 256

/** @} */

/** @defgroup rnicpi_status Status codes
 *  @brief The one status type of the provider layer.
 *  @{ */

/**
 * X-macro list of RNIC-PI statuses: name and a sentence saying what it means.
 * rnicpi_status_name() and rnicpi_status_message() are generated from it.
 */
#define RNICPI_STATUS_LIST(X)                                                  \
  /** success */ \
  X(RNICPI_OK, "success")                                                      \
  /** the provider does not support this operation */ \
  X(RNICPI_ENOTSUP, "the provider does not support this operation")           \
  /** an argument is out of the range the provider accepts */ \
  X(RNICPI_EINVAL, "an argument is out of the range the provider accepts")    \
  /** the provider ran out of memory */ \
  X(RNICPI_ENOMEM, "the provider ran out of memory")                          \
  /** the object is still in use by another object */ \
  X(RNICPI_EBUSY, "the object is still in use by another object")             \
  /** the object is not in a state that allows this operation */ \
  X(RNICPI_ESTATE, "the object is not in a state that allows this operation") \
  /** the work queue is full */ \
  X(RNICPI_EFULL, "the work queue is full")                                   \
  /** a key, protection domain or access right does not match */ \
  X(RNICPI_EACCES, "a key, protection domain or access right does not match") \
  /** an address or length lies outside the registered region */ \
  X(RNICPI_ERANGE, "an address or length lies outside the registered region") \
  /** no such object (listener, connection request, device) */ \
  X(RNICPI_ENOENT, "no such object (listener, connection request, device)")   \
  /** the address or port is already taken */ \
  X(RNICPI_EEXIST, "the address or port is already taken")                    \
  /** a device limit of the capability record was exceeded */ \
  X(RNICPI_ELIMIT, "a device limit of the capability record was exceeded")    \
  /** the device failed */ \
  X(RNICPI_EIO, "the device failed")

/** Status returned by every provider operation. */
typedef enum {
/** Expands one entry of #RNICPI_STATUS_LIST into an enumerator. */
#define RNICPI__ENUM(name, msg) name,
  RNICPI_STATUS_LIST(RNICPI__ENUM)
  RNICPI_STATUS_COUNT /**< number of statuses (not a status) */
} rnicpi_status_t;

/* Defined in libitapi, exported to providers (node ITAPI_PROVIDER_0.1 of
 * itapi/itapi.map): a module resolves them from the library that loaded it. */
#pragma GCC visibility push(default)

/**
 * @brief Name of a status, e.g. "RNICPI_EACCES".
 * @param status any value; unknown values give "RNICPI_UNKNOWN".
 * @return a static string.
 */
const char *rnicpi_status_name(rnicpi_status_t status);

/**
 * @brief One sentence saying what a status means.
 * @param status any value.
 * @return a static string.
 */
const char *rnicpi_status_message(rnicpi_status_t status);

#pragma GCC visibility pop

/** @} */

/** @defgroup rnicpi_caps Capability record
 *  @brief What a device can do, in the vocabulary of IT-API's it_ia_info_t.
 *  @{ */

/** Wire transport family of a device. */
typedef enum {
  RNICPI_TRANSPORT_IB = 1,    /**< InfiniBand or RoCE semantics */
  RNICPI_TRANSPORT_IWARP = 4, /**< iWARP (RDMAP/DDP/MPA over TCP) semantics */
} rnicpi_transport_t;

/** How the device wants paths and addresses described. */
typedef enum {
  RNICPI_PATH_IP = 1,  /**< an IP address pair (iWARP style) */
  RNICPI_PATH_GID = 2, /**< an IB path record with GIDs (IB style) */
} rnicpi_path_format_t;

/**
 * Feature bits of ::rnicpi_caps_t.features.  Each bit has a name that the
 * certification runner prints when a test is skipped for lack of it
 * (rnicpi_cap_name()).
 */
#define RNICPI_CAP_LIST(X)                                                     \
  /** capability "rc" */ \
  X(RNICPI_CAP_RC, 0, "rc")                                                    \
  /** capability "ud" */ \
  X(RNICPI_CAP_UD, 1, "ud")                                                    \
  /** capability "cm-verbs" */ \
  X(RNICPI_CAP_CM_VERBS, 2, "cm-verbs")                                        \
  /** capability "socket-handoff" */ \
  X(RNICPI_CAP_SOCKET_HANDOFF, 3, "socket-handoff")                            \
  /** capability "three-way-handshake" */ \
  X(RNICPI_CAP_THREE_WAY, 4, "three-way-handshake")                            \
  /** capability "ird-ord-negotiated" */ \
  X(RNICPI_CAP_IRD_ORD_NEGOTIATED, 5, "ird-ord-negotiated")                    \
  /** capability "read-sink-needs-remote-write" */ \
  X(RNICPI_CAP_READ_SINK_REMOTE_WRITE, 6, "read-sink-needs-remote-write")     \
  /** capability "zero-based-addressing" */ \
  X(RNICPI_CAP_ZERO_BASED, 7, "zero-based-addressing")                        \
  /** capability "mw-narrow" */ \
  X(RNICPI_CAP_MW_NARROW, 8, "mw-narrow")                                      \
  /** capability "mw-wide" */ \
  X(RNICPI_CAP_MW_WIDE, 9, "mw-wide")                                          \
  /** capability "fast-register" */ \
  X(RNICPI_CAP_FAST_REGISTER, 10, "fast-register")                            \
  /** capability "local-invalidate" */ \
  X(RNICPI_CAP_LOCAL_INVALIDATE, 11, "local-invalidate")                      \
  /** capability "remote-invalidate" */ \
  X(RNICPI_CAP_REMOTE_INVALIDATE, 12, "remote-invalidate")                    \
  /** capability "immediate-data" (ABI 1.5): #RNICPI_WR_IMM_DATA and
   *  #RNICPI_WR_RDMA_WRITE_IMM; the receive completion carries the value
   *  (#RNICPI_WC_WITH_IMM).  On iWARP, RFC 7306 Immediate Data, which a
   *  connection may lack: post_send then says RNICPI_ENOTSUP */ \
  X(RNICPI_CAP_IMMEDIATE, 13, "immediate-data")                               \
  /** capability "atomics" */ \
  X(RNICPI_CAP_ATOMICS, 14, "atomics")                                         \
  /** capability "srq" */ \
  X(RNICPI_CAP_SRQ, 15, "srq")                                                 \
  /** capability "flush-on-error" */ \
  X(RNICPI_CAP_FLUSH_ON_ERROR, 16, "flush-on-error")                          \
  /** capability "cq-overflow-detection" */ \
  X(RNICPI_CAP_CQ_OVERFLOW_DETECT, 17, "cq-overflow-detection")               \
  /** capability "qp-resize" */ \
  X(RNICPI_CAP_QP_RESIZE, 18, "qp-resize")                                     \
  /** capability "wants-page-list" */ \
  X(RNICPI_CAP_PAGE_LIST, 19, "wants-page-list")                             \
  /** capability "read-sink-window" (ABI 1.4): an RDMA Read may scatter into
   *  memory windows (#RNICPI_WR_SINK_MW) and invalidate its sink
   *  (#RNICPI_WR_RDMA_READ_INV, with RNICPI_CAP_LOCAL_INVALIDATE) */ \
  X(RNICPI_CAP_READ_SINK_MW, 20, "read-sink-window")                          \
  /** capability "completes-at-placement" (ABI 1.6): a successful Send or
   *  RDMA Write completion means the peer placed the data, and a fault the
   *  peer finds in the message completes that work request in error (IB
   *  RC, whose completion follows the ACK; a device that moves the data
   *  itself into the peer's memory; an iWARP device that fences each Send
   *  and Write with a zero-length RDMA Read, except toward a peer that
   *  announces an IRD of 0, which cannot answer the fence).  Without
   *  it, the completion means the transport took the message (iWARP: RFC
   *  5040 has no acknowledgement, so an iWARP RNIC completes at
   *  transmission): the data is
   *  defined at the peer once a later RDMA Read of the same QP completes
   *  or a later Send arrives there, and a fault the peer finds comes back
   *  as a Terminate that breaks the connection, so the work request may
   *  already have completed successfully, or completes flushed. */ \
  X(RNICPI_CAP_PLACED_COMPLETION, 21, "completes-at-placement")              \
  /** capability "no-pinning-needed" (ABI 1.8): the access layer need not
   *  lock a region's pages in memory, nor account them against the
   *  memory-lock limit: the device reaches memory by the CPU (copies,
   *  sockets, cross-memory attach), or its kernel driver
   *  pins and accounts the pages itself (rdma-core's ib_umem).  The access
   *  layer still checks, at every registration, that the pages are mapped,
   *  and writable when a write right is granted.  Without it (every
   *  provider older than 1.8), the access layer locks each registration's
   *  pages with mlock() and holds the process to its limit (kal_pin()):
   *  the conservative reading, right for a device that DMAs into user
   *  memory the kernel does not pin for it. */ \
  X(RNICPI_CAP_NO_PIN, 22, "no-pinning-needed")                              \
  /** capability "mw-needs-va-region" (ABI 1.12): a memory window may be
   *  bound only to a region that answers to virtual addresses, never to a
   *  zero-based one (RDMAC verbs 7.2.7: an iWARP RNIC's rule; InfiniBand
   *  binds windows to either).  The access layer refuses it_rmr_link on a
   *  relatively addressed LMR of such a device before anything is posted;
   *  the provider still refuses such a bind itself (::rnicpi_bind_t).  A
   *  provider sets it on each of its devices of iWARP semantics (an iWARP
   *  RNIC it drives, an iWARP personality it emulates);
   *  rnicpi_caps_complete() sets it on
   *  the iWARP devices of a provider older than 1.12, whose record could
   *  not say so. */ \
  X(RNICPI_CAP_MW_NEEDS_VA_REGION, 23, "mw-needs-va-region")

/** Feature bit values, generated from #RNICPI_CAP_LIST. */
enum rnicpi_cap_bits {
/** Expands one entry of #RNICPI_CAP_LIST into a bit value. */
#define RNICPI__CAP(name, bit, str) name = (1ull << (bit)),
  RNICPI_CAP_LIST(RNICPI__CAP)
};

/**
 * @brief Name of one feature bit, e.g. "read-sink-needs-remote-write".
 * @param cap exactly one RNICPI_CAP_* bit.
 * @return a static string, or "unknown".
 */
#pragma GCC visibility push(default)
const char *rnicpi_cap_name(uint64_t cap);
#pragma GCC visibility pop

/** Largest private data any provider may accept in one CM message. */
#define RNICPI_MAX_PDATA 512

/** Entries of rnicpi_caps_t::addrs: the most network addresses a device
 *  reports for its port 0. */
#define RNICPI_CAPS_ADDRS_MAX 4

/**
 * The one capability record of a device.  Limits are maxima; 0 means the
 * feature is absent.
 */
typedef struct rnicpi_caps {
  uint32_t size;                   /**< sizeof(rnicpi_caps_t) of the provider */
  rnicpi_transport_t transport;    /**< wire semantics */
  rnicpi_path_format_t path_format; /**< how paths are described */
  uint64_t features;               /**< OR of RNICPI_CAP_* bits */
  uint32_t vendor_id;              /**< IEEE OUI or 0 */
  uint32_t hw_version;             /**< hardware revision */
  uint32_t sw_major;               /**< provider software major version */
  uint32_t sw_minor;               /**< provider software minor version */
  uint32_t pdata_connect;          /**< private data bytes on connect */
  uint32_t pdata_accept;           /**< private data bytes on accept */
  uint32_t pdata_reject;           /**< private data bytes on reject */
  uint32_t pdata_disconnect;       /**< private data bytes on disconnect */
  uint32_t pdata_ud_req;           /**< private data bytes in a UD service request */
  uint32_t pdata_ud_rep;           /**< private data bytes in a UD service reply */
  uint32_t max_ird;                /**< inbound RDMA Reads in flight per QP */
  uint32_t max_ord;                /**< outbound RDMA Reads in flight per QP */
  uint32_t max_qp;                 /**< queue pairs per device */
  uint32_t max_qp_wr;              /**< work requests per queue */
  uint32_t max_cq;                 /**< completion queues per device */
  uint32_t max_cqe;                /**< entries per completion queue */
  uint32_t max_mr;                 /**< memory regions per device */
  uint32_t max_pd;                 /**< protection domains per device */
  uint32_t max_srq;                /**< shared receive queues per device */
  uint32_t max_send_sge;           /**< gather entries per send */
  uint32_t max_recv_sge;           /**< scatter entries per receive */
  uint32_t max_rdma_write_sge;     /**< gather entries per RDMA Write */
  uint32_t max_rdma_read_sge;      /**< scatter entries per RDMA Read sink */
  uint32_t max_inline;             /**< bytes of inline data per send */
  uint64_t max_msg_size;           /**< largest message of any operation */
  uint64_t max_mr_size;            /**< largest region */
  uint32_t num_ports;              /**< ports (IT-API spigots) */
  uint32_t num_addrs;              /**< entries used in addrs[] */
  struct sockaddr_storage addrs[RNICPI_CAPS_ADDRS_MAX]; /**< network addresses of port 0 */
  /** ABI 1.3: largest datagram payload a UD send may carry (the path MTU;
   *  0 without RNICPI_CAP_UD).  A UD receive buffer needs 40 bytes more
   *  for the GRH (rnicpi_wc_t::flags #RNICPI_WC_GRH). */
  uint32_t ud_mtu;
} rnicpi_caps_t;

/** @} */

/** @defgroup rnicpi_objects Provider objects
 *  @brief Base structures that a provider embeds in its own objects.
 *
 *  A provider allocates its objects and embeds one of these as a member;
 *  it converts back with container_of (e.g. `to_<provider>_qp()`).
 *  @{ */

struct rnicpi_provider;

/** An open device. */
typedef struct rnicpi_dev {
  const struct rnicpi_provider *prov; /**< provider that owns the device */
  void *al_ctx;                      /**< access-layer context given to open */
} rnicpi_dev_t;

/** A protection domain. */
typedef struct rnicpi_pd {
  rnicpi_dev_t *dev; /**< device of the domain */
} rnicpi_pd_t;

/** A completion queue. */
typedef struct rnicpi_cq {
  rnicpi_dev_t *dev; /**< device of the queue */
  uint64_t al_ctx;   /**< access-layer context, passed back in cq_notify */
} rnicpi_cq_t;

/** A memory region.  Its keys are 64-bit fields; on a device of
 *  RNICPI_TRANSPORT_IB or RNICPI_TRANSPORT_IWARP they fit in 32 bits, the
 *  width of an R_Key and of an STag on the wire, which consumers of
 *  32-bit key interfaces (verbs, DAT) depend on. */
typedef struct rnicpi_mr {
  rnicpi_pd_t *pd; /**< domain of the region */
  uint64_t lkey;   /**< key for local access (gather/scatter lists) */
  uint64_t rkey;   /**< key for remote access (STag / R_Key) */
} rnicpi_mr_t;

/** A queue pair. */
typedef struct rnicpi_qp {
  rnicpi_pd_t *pd;  /**< domain of the queue pair */
  uint64_t al_ctx;  /**< access-layer context, passed back in completions */
  uint32_t qp_num;  /**< queue pair number */
} rnicpi_qp_t;

/** A listener created by the provider's CM verbs. */
typedef struct rnicpi_listen {
  rnicpi_dev_t *dev; /**< device of the listener */
  uint64_t al_ctx;   /**< access-layer context, passed back in CM requests */
} rnicpi_listen_t;

/** A shared receive queue (RNICPI_CAP_SRQ). */
typedef struct rnicpi_srq {
  rnicpi_pd_t *pd;  /**< domain of the queue */
  uint64_t al_ctx;  /**< access-layer context, passed back in async events */
} rnicpi_srq_t;

/**
 * An address handle (ABI 1.3, RNICPI_CAP_UD): where a UD send goes.  The
 * destination queue pair and its Q_Key travel in each work request
 * (rnicpi_send_wr_t::remote_qpn, rnicpi_send_wr_t::remote_qkey).
 */
typedef struct rnicpi_ah {
  rnicpi_pd_t *pd; /**< domain of the handle: UD queue pairs of this domain may use it */
} rnicpi_ah_t;

/** Type of a memory window (ABI 1.2). */
typedef enum {
  RNICPI_MW_NARROW = 1, /**< bound to the queue pair it was bound on (IB type 2, iWARP MW; RNICPI_CAP_MW_NARROW) */
  RNICPI_MW_WIDE = 2,   /**< usable through any queue pair of its domain (IB type 1; RNICPI_CAP_MW_WIDE) */
} rnicpi_mw_type_t;

/**
 * A memory window (ABI 1.2).  Allocated unbound; a #RNICPI_WR_BIND_MW work
 * request binds it to a range of a region and gives it a new key.
 */
typedef struct rnicpi_mw {
  rnicpi_pd_t *pd;       /**< domain of the window */
  rnicpi_mw_type_t type; /**< narrow or wide */
  uint64_t rkey;         /**< key of the last bind posted (0 before the first) */
} rnicpi_mw_t;

/** @} */

/** @defgroup rnicpi_types Work requests, completions and events
 *  @{ */

/** Bytes of a port GID (rnicpi_wc_t::src_gid, rnicpi_ah_attr_t::dgid):
 *  128 bits, the size of an IPv6 address. */
#define RNICPI_GID_LEN 16

/** Access rights of a memory region and of a queue pair. */
enum rnicpi_access {
  RNICPI_ACCESS_LOCAL_READ = 1u << 0,   /**< local gather */
  RNICPI_ACCESS_LOCAL_WRITE = 1u << 1,  /**< local scatter */
  RNICPI_ACCESS_REMOTE_READ = 1u << 2,  /**< target of RDMA Read */
  RNICPI_ACCESS_REMOTE_WRITE = 1u << 3, /**< target of RDMA Write */
  RNICPI_ACCESS_ATOMIC = 1u << 4,       /**< target of atomics */
  RNICPI_ACCESS_MW_BIND = 1u << 5,      /**< a region: memory windows may be bound to it (ABI 1.2) */
};

/** Description of memory to register. */
typedef struct rnicpi_mr_attr {
  void *addr;         /**< first byte, in the caller's address space */
  uint64_t length;    /**< bytes */
  uint64_t iova;      /**< address the region answers to remotely (addr, or 0 when zero-based) */
  uint32_t access;    /**< OR of ::rnicpi_access */
  size_t page_size;   /**< page size of the page list (0: no list) */
  size_t num_pages;   /**< entries of pages[] */
  const uint64_t *pages; /**< page addresses when the device asked for them */
} rnicpi_mr_attr_t;

/** One gather/scatter element. */
typedef struct rnicpi_sge {
  uint64_t addr;   /**< address in the caller's address space */
  uint32_t length; /**< bytes */
  uint32_t pad;    /**< zero */
  uint64_t lkey;   /**< local key of the region that holds it */
} rnicpi_sge_t;

/** Operation of a send-queue work request. */
typedef enum {
  RNICPI_WR_SEND = 0,        /**< Send */
  RNICPI_WR_SEND_INV,        /**< Send with remote invalidate */
  RNICPI_WR_RDMA_WRITE,      /**< RDMA Write */
  RNICPI_WR_RDMA_READ,       /**< RDMA Read */
  RNICPI_WR_ATOMIC_CMP_SWP,  /**< 64-bit compare and swap */
  RNICPI_WR_ATOMIC_FETCH_ADD, /**< 64-bit fetch and add */
  RNICPI_WR_BIND_MW,         /**< bind a memory window (ABI 1.2; send_wr_t::bind) */
  RNICPI_WR_LOCAL_INV,       /**< invalidate the window key invalidate_rkey (ABI 1.2), or (ABI 1.4) a
                              *   fast-registered region's key */
  RNICPI_WR_FAST_REG,        /**< ABI 1.4: bind a region of mr_alloc to memory (send_wr_t::fast_reg;
                              *   RNICPI_CAP_FAST_REGISTER) */
  RNICPI_WR_RDMA_READ_INV,   /**< ABI 1.4: RDMA Read, then invalidate the sink key invalidate_rkey
                              *   (a window or fast-registered region) once the data landed
                              *   (RNICPI_CAP_READ_SINK_MW and RNICPI_CAP_LOCAL_INVALIDATE) */
  RNICPI_WR_IMM_DATA,        /**< ABI 1.5: immediate data alone (send_wr_t::imm_data, no SGE): it
                              *   consumes one receive of the peer (RNICPI_CAP_IMMEDIATE) */
  RNICPI_WR_RDMA_WRITE_IMM,  /**< ABI 1.5: RDMA Write, then its immediate data, which consumes one
                              *   receive of the peer once the written bytes are placed
                              *   (RNICPI_CAP_IMMEDIATE) */
  RNICPI_WR_OPCODE_COUNT     /**< number of opcodes (not an opcode) */
} rnicpi_wr_opcode_t;

/** Flags of a work request. */
enum rnicpi_wr_flags {
  RNICPI_WR_SIGNALED = 1u << 0,  /**< a successful completion makes a CQ entry */
  RNICPI_WR_SOLICITED = 1u << 1, /**< the peer's receive completion is solicited */
  RNICPI_WR_FENCE = 1u << 2,     /**< wait for earlier RDMA Reads */
  RNICPI_WR_LOCAL_FENCE = 1u << 3, /**< wait for every earlier work request of the queue (ABI 1.2) */
  /**
   * ABI 1.4 (RNICPI_CAP_READ_SINK_MW), RDMA Read only: the keys of sg_list
   * are keys of bound memory windows of the queue pair's domain (a narrow
   * one bound through this queue pair), each address in its window's
   * address space (its VA, or an offset when zero-based).  The sink needs
   * the personality's read-sink rights: the local ones granted by the
   * window's region, the remote ones (RNICPI_CAP_READ_SINK_REMOTE_WRITE)
   * by the window.  A violation is #RNICPI_WC_LOC_PROT_ERR.
   */
  RNICPI_WR_SINK_MW = 1u << 4,
};

/**
 * What a #RNICPI_WR_BIND_MW binds (ABI 1.2).  Rules, as IBTA 10.6.7 and the
 * RDMAC verbs (7.2.7) state them, checked by the provider at execution
 * (failure: #RNICPI_WC_MW_BIND_ERR and the queue pair goes to ERROR):
 * the window's domain is the queue pair's and the region's; the region
 * has #RNICPI_ACCESS_MW_BIND; [addr, addr + length) lies inside the
 * region, in the region's address space (its iova); the window's rights
 * are remote rights the region grants; on a device with
 * RNICPI_CAP_MW_NEEDS_VA_REGION (iWARP) the region is not zero-based.  A narrow window answers only through the queue pair it
 * was bound on.  Binding a bound window rebinds it: its old key dies.
 */
typedef struct rnicpi_bind {
  struct rnicpi_mw *mw;  /**< the window */
  struct rnicpi_mr *mr;  /**< the region it exposes */
  uint64_t addr;         /**< first byte, in the region's address space */
  uint64_t length;       /**< bytes */
  uint32_t access;       /**< OR of RNICPI_ACCESS_REMOTE_* and RNICPI_ACCESS_ATOMIC */
  uint32_t zero_based;   /**< nonzero: the window answers to offsets from addr (RNICPI_CAP_ZERO_BASED) */
} rnicpi_bind_t;

/**
 * What a #RNICPI_WR_FAST_REG binds (ABI 1.4; the RDMAC verbs "Fast-Register" and the
 * IB memory management extensions).  Checked by the provider at execution
 * (failure: #RNICPI_WC_MEM_MGT_ERR and the queue pair goes to ERROR): the
 * region came from mr_alloc, is in the queue pair's domain and is invalid
 * (never registered, or invalidated since); num_pages is at most the
 * max_pages it was allocated with; [addr, addr + length) lies inside the
 * pages.  The region answers to iova (addr, or 0 when zero-based).
 */
typedef struct rnicpi_fast_reg {
  struct rnicpi_mr *mr;   /**< a region of mr_alloc */
  void *addr;             /**< first byte, in the caller's address space */
  uint64_t length;        /**< bytes */
  uint64_t iova;          /**< address the region answers to (addr, or 0: zero-based) */
  uint32_t access;        /**< OR of ::rnicpi_access */
  uint32_t pad;           /**< zero */
  size_t page_size;       /**< bytes per entry of pages (or per page spanned) */
  size_t num_pages;       /**< pages (list elements) the memory spans */
  const uint64_t *pages;  /**< page addresses when the device wants them (RNICPI_CAP_PAGE_LIST), read at post */
} rnicpi_fast_reg_t;

/**
 * A send-queue work request.  The members from @c bind on are meaningful
 * only for their opcodes (#RNICPI_WR_BIND_MW, a send on a UD queue pair,
 * #RNICPI_WR_FAST_REG): the access layer leaves them unset otherwise, and
 * a provider must not read them then.
 */
typedef struct rnicpi_send_wr {
  uint64_t wr_id;             /**< returned in the completion */
  rnicpi_wr_opcode_t opcode;  /**< operation */
  uint32_t flags;             /**< OR of ::rnicpi_wr_flags */
  const rnicpi_sge_t *sg_list; /**< local buffers */
  uint32_t num_sge;           /**< entries of sg_list */
  uint64_t remote_addr;       /**< RDMA/atomic target address */
  uint64_t rkey;              /**< RDMA/atomic target key */
  uint64_t invalidate_rkey;   /**< key to invalidate for RNICPI_WR_SEND_INV */
  uint64_t compare_add;       /**< atomic compare or add operand */
  uint64_t swap;              /**< atomic swap operand */
  /**
   * RNICPI_WR_BIND_MW (ABI 1.2).  When post_send accepts the request it has
   * already written the window's new key into bind.mw->rkey (as
   * ibv_bind_mw does): the key answers once the bind completes, and the
   * bind's completion repeats it in rnicpi_wc_t::rkey.
   */
  rnicpi_bind_t bind;
  /* ABI 1.3: a #RNICPI_WR_SEND on a UD queue pair (the only opcode a UD
   * queue pair takes).  Ignored on RC queue pairs. */
  struct rnicpi_ah *ah;       /**< UD: destination node (an address handle of the QP's domain) */
  uint32_t remote_qpn;        /**< UD: destination queue pair number */
  /** UD: Q_Key to present; a key with bit 31 set means "the sending QP's
   *  own Q_Key" (IBTA 10.2.4, controlled Q_Keys) */
  uint32_t remote_qkey;
  /**
   * ABI 1.4: #RNICPI_WR_FAST_REG.  When post_send accepts the request it
   * has already written the region's new key into fast_reg.mr->lkey and
   * ->rkey (equal); the key answers once the request completes, and the
   * completion repeats it in rnicpi_wc_t::rkey.
   */
  rnicpi_fast_reg_t fast_reg;
  /**
   * ABI 1.5: the value #RNICPI_WR_IMM_DATA and #RNICPI_WR_RDMA_WRITE_IMM
   * deliver to the peer's receive completion (rnicpi_wc_t::imm_data).  It
   * travels in network byte order: 8 bytes on iWARP (RFC 7306), the low 32
   * bits on InfiniBand.
   */
  uint64_t imm_data;
} rnicpi_send_wr_t;

/** A receive work request. */
typedef struct rnicpi_recv_wr {
  uint64_t wr_id;             /**< returned in the completion */
  const rnicpi_sge_t *sg_list; /**< buffers to scatter into */
  uint32_t num_sge;           /**< entries of sg_list */
} rnicpi_recv_wr_t;

/** Status of a completion. */
typedef enum {
  RNICPI_WC_SUCCESS = 0,    /**< done */
  RNICPI_WC_LOC_LEN_ERR,    /**< local buffers too small or too large */
  RNICPI_WC_LOC_QP_OP_ERR,  /**< local queue pair error */
  RNICPI_WC_LOC_PROT_ERR,   /**< local key, domain, bounds or rights */
  RNICPI_WC_WR_FLUSH_ERR,   /**< flushed: the queue pair left the connected state */
  RNICPI_WC_MW_BIND_ERR,    /**< memory window bind failed */
  RNICPI_WC_BAD_RESP_ERR,   /**< the responder answered out of protocol */
  RNICPI_WC_REM_ACCESS_ERR, /**< remote key, domain, bounds or rights */
  RNICPI_WC_REM_OP_ERR,     /**< the responder could not execute */
  RNICPI_WC_TRANSPORT_ERR,  /**< the transport failed (retries, connection lost) */
  RNICPI_WC_RNR_ERR,        /**< receiver not ready, retries exhausted */
  RNICPI_WC_GENERAL_ERR,    /**< other error */
  RNICPI_WC_MEM_MGT_ERR,    /**< ABI 1.4: a fast registration or local invalidation of a region failed */
} rnicpi_wc_status_t;

/** What a completion completes. */
typedef enum {
  RNICPI_WC_SEND = 0,      /**< a send (any send opcode) */
  RNICPI_WC_RDMA_WRITE,    /**< an RDMA Write */
  RNICPI_WC_RDMA_READ,     /**< an RDMA Read */
  RNICPI_WC_CMP_SWP,       /**< a compare and swap */
  RNICPI_WC_FETCH_ADD,     /**< a fetch and add */
  RNICPI_WC_RECV,          /**< a receive */
  RNICPI_WC_BIND_MW,       /**< a memory window bind (ABI 1.2) */
  RNICPI_WC_LOCAL_INV,     /**< a local invalidation (ABI 1.2) */
  RNICPI_WC_FAST_REG,      /**< a fast registration (ABI 1.4) */
} rnicpi_wc_opcode_t;

/** Flags of a completion (rnicpi_wc_t::flags). */
enum rnicpi_wc_flags {
  /** A receive of a Send with Invalidate: rnicpi_wc_t::rkey names the key
   *  the peer invalidated, already dead (ABI 1.2). */
  RNICPI_WC_WITH_INV = 1u << 0,
  /** ABI 1.3: the first 40 bytes of the receive buffer hold an IB Global
   *  Route Header (IBTA 8.3); byte_len counts them. */
  RNICPI_WC_GRH = 1u << 1,
  /** ABI 1.3: a receive completion of a UD queue pair; on success
   *  src_qpn and src_gid name the sender. */
  RNICPI_WC_UD = 1u << 2,
  /** ABI 1.5: a receive consumed by immediate data (#RNICPI_WR_IMM_DATA,
   *  #RNICPI_WR_RDMA_WRITE_IMM): rnicpi_wc_t::imm_data holds the value.
   *  On iWARP the 8 bytes are also placed at the start of the receive
   *  buffer when it holds 8 bytes or more (byte_len 8), and nothing is
   *  placed otherwise (byte_len 0).  On InfiniBand nothing is placed in
   *  the receive buffer, imm_data holds the 32 bits that travelled, and
   *  byte_len is the RDMA Write's length (0 for immediate data alone), as
   *  a verbs work completion of IBV_WC_RECV_RDMA_WITH_IMM gives it. */
  RNICPI_WC_WITH_IMM = 1u << 3,
};

/** A completion queue entry. */
typedef struct rnicpi_wc {
  uint64_t wr_id;            /**< from the work request */
  uint64_t qp_ctx;           /**< access-layer context of the queue pair */
  rnicpi_wc_status_t status; /**< outcome */
  rnicpi_wc_opcode_t opcode; /**< operation */
  uint32_t byte_len;         /**< bytes received (receives), or moved */
  uint32_t flags;            /**< OR of ::rnicpi_wc_flags (ABI 1.1: zero) */
  /**
   * ABI 1.2: the window's new key (RNICPI_WC_BIND_MW), or the key the peer
   * invalidated (RNICPI_WC_RECV with #RNICPI_WC_WITH_INV); 0 otherwise.
   * ABI 1.4: the region's new key (RNICPI_WC_FAST_REG); the key the request
   * named (RNICPI_WC_LOCAL_INV, any status); the sink key invalidated
   * (RNICPI_WC_RDMA_READ of #RNICPI_WR_RDMA_READ_INV, flag #RNICPI_WC_WITH_INV).
   * A provider writes every field its minor knows, zero where it does not
   * apply (/rnicpi/data/wc-zero-fields); the access layer polls a
   * provider of a minor before 5, which knows fewer fields than the
   * entry has, one entry at a time into a zeroed entry.
   */
  uint64_t rkey;
  /* ABI 1.3, UD receives (#RNICPI_WC_UD): the sender.  Zero otherwise. */
  uint32_t src_qpn;          /**< sending queue pair number */
  uint16_t src_lid;          /**< sending port's LID (0 where the fabric routes by GID only) */
  uint16_t pad;              /**< zero */
  uint8_t src_gid[RNICPI_GID_LEN]; /**< sending port's GID, network order (IPv4-mapped on IP devices) */
  uint64_t imm_data;         /**< ABI 1.5: the immediate data (#RNICPI_WC_WITH_IMM); zero otherwise */
} rnicpi_wc_t;

/** Queue pair states, as the access layer sees them. */
typedef enum {
  RNICPI_QPS_IDLE = 0, /**< created or reset: may post receives */
  RNICPI_QPS_RTS,      /**< connected: may post everything */
  RNICPI_QPS_ERROR,    /**< broken or disconnected: posts complete flushed */
} rnicpi_qp_state_t;

/** Service type of a queue pair (ABI 1.3). */
typedef enum {
  RNICPI_QPT_RC = 0, /**< reliable connected */
  RNICPI_QPT_UD = 1, /**< unreliable datagram (RNICPI_CAP_UD) */
} rnicpi_qp_type_t;

/**
 * Destination of an address handle (ABI 1.3), as an IB address vector
 * (IBTA 11.2.2): the port is found by its GID; a provider whose fabric
 * routes by LID uses dlid.
 */
typedef struct rnicpi_ah_attr {
  uint8_t dgid[RNICPI_GID_LEN]; /**< destination port GID, network order (IPv4-mapped on IP devices) */
  uint16_t dlid;          /**< destination LID (0: route by GID) */
  uint8_t sl;             /**< service level */
  uint8_t global;         /**< nonzero: send a GRH with the fields below */
  uint32_t flow_label;    /**< GRH flow label (20 bits) */
  uint8_t traffic_class;  /**< GRH traffic class */
  uint8_t hop_limit;      /**< GRH hop limit */
  uint8_t static_rate;    /**< IB rate code (0: port rate) */
  uint8_t path_mtu;       /**< IB MTU code of the path (0: the device's) */
  uint32_t port;          /**< local port the datagrams leave from */
} rnicpi_ah_attr_t;

/** Creation attributes of a queue pair. */
typedef struct rnicpi_qp_attr {
  rnicpi_cq_t *send_cq;     /**< completions of the send queue */
  rnicpi_cq_t *recv_cq;     /**< completions of the receive queue */
  uint32_t max_send_wr;     /**< send queue depth: post_send refuses a request with
                             *   RNICPI_EFULL while this many are outstanding (not completed
                             *   and polled), never more (the access layer sizes CQs by it) */
  uint32_t max_recv_wr;     /**< receive queue depth: post_recv refuses a receive with
                             *   RNICPI_EFULL while this many are outstanding, never more */
  uint32_t max_send_sge;    /**< gather entries per send */
  uint32_t max_recv_sge;    /**< scatter entries per receive */
  uint32_t max_rdma_write_sge; /**< gather entries per RDMA Write */
  uint32_t max_rdma_read_sge;  /**< scatter entries per RDMA Read */
  uint32_t ird;             /**< inbound RDMA Reads in flight */
  uint32_t ord;             /**< outbound RDMA Reads in flight */
  uint32_t access;          /**< inbound rights: OR of RNICPI_ACCESS_REMOTE_* */
  struct rnicpi_srq *srq;   /**< receives come from this SRQ (RNICPI_CAP_SRQ), or NULL */
  /** ABI 1.3: RC (0, what older access layers leave) or UD (RNICPI_CAP_UD).
   *  A UD queue pair is created in RTS: it needs no connection, takes only
   *  #RNICPI_WR_SEND, and its state never changes but to ERROR. */
  rnicpi_qp_type_t type;
  uint32_t qkey;            /**< ABI 1.3, UD: the Q_Key a datagram must carry to be received */
} rnicpi_qp_attr_t;

/** Address of a peer or of a listener. */
typedef struct rnicpi_addr {
  struct sockaddr_storage sa; /**< IPv4 or IPv6 address; port in sin_port */
} rnicpi_addr_t;

/** Parameters of connect and accept. */
typedef struct rnicpi_conn_param {
  const void *pdata;   /**< private data */
  uint32_t pdata_len;  /**< bytes of private data */
  uint32_t ird;        /**< inbound reads this side offers */
  uint32_t ord;        /**< outbound reads this side wants */
  bool three_way;      /**< connect: ask for REQ/REP/RTU */
  /** connect: give up after this long, microseconds, when no answer to the
   *  request came (reply, reject): the queue pair gets one UNREACHABLE,
   *  reason RNICPI_CM_REASON_TIMEOUT, and enters ERROR.  0: the provider's
   *  default.  A value the clock cannot add (UINT64_MAX, which is
   *  IT_TIMEOUT_INFINITE in a path) means never: rnicpi_deadline(). */
  uint64_t timeout_us;
} rnicpi_conn_param_t;

/** Connection-management event types, delivered by the cm_event upcall. */
typedef enum {
  RNICPI_CM_CONNECT_REQUEST = 1, /**< a listener got a request (listen_ctx, conn_id) */
  RNICPI_CM_CONNECT_REPLY,       /**< three-way: the passive side accepted (qp_ctx, conn_id) */
  RNICPI_CM_ESTABLISHED,         /**< the queue pair is connected (qp_ctx) */
  RNICPI_CM_REJECTED,            /**< the peer's consumer rejected (qp_ctx) */
  /** No listener, timeout, or refused by a non-peer (qp_ctx).  Also a
   *  request the listener never answered because it went away (unlisten,
   *  its process ending): the requester was never connected, so this,
   *  never BROKEN, is its one terminal event, and the queue pair enters
   *  ERROR (IT-API: a non-peer reject). */
  RNICPI_CM_UNREACHABLE,
  RNICPI_CM_DISCONNECTED,        /**< orderly disconnect by either side (qp_ctx) */
  RNICPI_CM_BROKEN,              /**< the connection failed (qp_ctx) */
  RNICPI_CM_REQUEST_CANCELLED,   /**< a pending request went away (listen_ctx, conn_id) */
  /** ABI 1.3: a UD service request reached a listener (listen_ctx, conn_id =
   *  the request's id for ud_svc_reply, src, port, pdata) */
  RNICPI_CM_UD_SVC_REQUEST,
  /** ABI 1.3: the answer to ud_svc_request (qp_ctx = the request's context,
   *  src = the responder, ud_status, ud_qpn, ud_qkey, pdata) */
  RNICPI_CM_UD_SVC_REPLY,
} rnicpi_cm_event_type_t;

/** Status of a UD service reply (ABI 1.3), as IBTA 12.11.2's SIDR_REP. */
typedef enum {
  RNICPI_UD_SVC_OK = 0,          /**< ud_qpn and ud_qkey are valid */
  RNICPI_UD_SVC_NO_SERVICE = 1,  /**< nothing listens on that port (service ID not supported) */
  RNICPI_UD_SVC_REJECTED = 2,    /**< the listener's consumer refused */
  RNICPI_UD_SVC_NO_QP = 3,       /**< no queue pair available */
  RNICPI_UD_SVC_REDIRECT = 4,    /**< redirected */
} rnicpi_ud_svc_status_t;

/** Why a connection attempt was refused by a non-peer. */
typedef enum {
  RNICPI_CM_REASON_NONE = 0,     /**< not a rejection */
  RNICPI_CM_REASON_NO_LISTENER,  /**< nothing listens on that address and port */
  RNICPI_CM_REASON_TIMEOUT,      /**< no answer in time */
  RNICPI_CM_REASON_BAD_PATH,     /**< the address is not reachable */
  RNICPI_CM_REASON_RESOURCES,    /**< resources ran out: the peer device's, or this host's sockets or memory */
  RNICPI_CM_REASON_BAD_ORD,      /**< an ORD exceeds the other end's IRD (either way) */
  RNICPI_CM_REASON_BAD_PARAMS,   /**< the answer asks for what the request did not offer
                                  *   (an RTR, MPA markers) */
} rnicpi_cm_reason_t;

/** A connection-management event. */
typedef struct rnicpi_cm_event {
  rnicpi_cm_event_type_t type; /**< what happened */
  uint64_t listen_ctx;         /**< listener context (requests) */
  uint64_t qp_ctx;             /**< queue pair context (all others) */
  uint64_t conn_id;            /**< provider's id of a pending connection */
  rnicpi_addr_t src;           /**< requester's address (requests) */
  uint32_t port;               /**< listener's port (requests) */
  uint32_t ird;                /**< peer's IRD (requests) or negotiated IRD */
  uint32_t ord;                /**< peer's ORD (requests) or negotiated ORD */
  rnicpi_cm_reason_t reason;   /**< for UNREACHABLE */
  uint32_t pdata_len;          /**< bytes of pdata */
  uint8_t pdata[RNICPI_MAX_PDATA]; /**< private data of the message */
  /* ABI 1.3: RNICPI_CM_UD_SVC_REPLY. */
  rnicpi_ud_svc_status_t ud_status; /**< the responder's status */
  uint32_t ud_qpn;             /**< the service's queue pair number (status OK) */
  uint32_t ud_qkey;            /**< the service's Q_Key (status OK) */
} rnicpi_cm_event_t;

/** Asynchronous event types, delivered by the async_event upcall. */
typedef enum {
  RNICPI_ASYNC_CQ_OVERFLOW = 1, /**< a CQ got more entries than its size (cq_ctx) */
  RNICPI_ASYNC_QP_FATAL,        /**< a queue pair hit a local error (qp_ctx) */
  RNICPI_ASYNC_QP_ACCESS_ERR,   /**< a peer violated this side's memory rights (qp_ctx) */
  RNICPI_ASYNC_PORT_ACTIVE,     /**< a port came up */
  RNICPI_ASYNC_PORT_DOWN,       /**< a port went down */
  RNICPI_ASYNC_SRQ_LIMIT,       /**< an SRQ fell below its armed limit (srq_ctx); disarms it */
  /** ABI 1.7: the peer reported an error that ended the queue pair (an
   *  iWARP Terminate or an InfiniBand NAK received; qp_ctx). */
  RNICPI_ASYNC_QP_REMOTE_ERR,
} rnicpi_async_type_t;

/**
 * ABI 1.7: what a queue pair's asynchronous event is about, in terms
 * common to iWARP and InfiniBand.  The access layer turns it into the
 * IT-API affiliated event (doc/writing-a-provider.md has the table).
 */
typedef enum {
  RNICPI_AE_UNSPECIFIED = 0, /**< no detail (also what a provider older than 1.7 gives) */
  /* ::RNICPI_ASYNC_QP_ACCESS_ERR: a request from the peer broke this side's memory rights. */
  RNICPI_AE_WRITE_ACCESS,    /**< an incoming RDMA Write named memory it may not write */
  RNICPI_AE_READ_ACCESS,     /**< an incoming RDMA Read Request named memory it may not read */
  RNICPI_AE_ACCESS,          /**< another incoming request did (an atomic, a remote invalidate) */
  /* ::RNICPI_ASYNC_QP_FATAL: this side found the fault in what the peer sent. */
  RNICPI_AE_WRITE_CORRUPT,   /**< an incoming RDMA Write failed its integrity check (CRC) */
  RNICPI_AE_BAD_OPCODE,      /**< a message of an unknown or not negotiated opcode or version */
  RNICPI_AE_PROTOCOL,        /**< another transport rule broken: queue number, sequence,
                              *   offset, no receive posted, a message longer than its receive,
                              *   no Read credit, a misaligned atomic */
  RNICPI_AE_LLP,             /**< the lower layer failed: framing (MPA), CRC, the stream */
  /* ::RNICPI_ASYNC_QP_FATAL: this side's own memory failed a request. */
  RNICPI_AE_LOCAL_RECV,      /**< a posted receive's buffer could not be written */
  RNICPI_AE_LOCAL_READ_RESP, /**< memory being read to answer the peer's RDMA Read went away */
  RNICPI_AE_LOCAL,           /**< another local buffer (a work request's, a Read's sink,
                              *   an atomic's result) */
  /* ::RNICPI_ASYNC_QP_REMOTE_ERR: what the peer reported. */
  RNICPI_AE_REMOTE_ACCESS,   /**< our request broke the peer's memory rights */
  RNICPI_AE_REMOTE_RECV,     /**< the peer's receive buffer could not take our Send */
  RNICPI_AE_REMOTE_RECV_LENGTH, /**< our Send was longer than the peer's receive */
  RNICPI_AE_REMOTE,          /**< any other error the peer reported */
} rnicpi_async_cause_t;

/** Terminate layer/type/code value when there is none (term_layer etc.). */
#define RNICPI_TERM_NONE 0xff

/**
 * An asynchronous event.  The fields from @p cause on are ABI 1.7: the
 * access layer reads them only from a provider of minor 7 or later.
 */
typedef struct rnicpi_async_event {
  rnicpi_async_type_t type; /**< what happened */
  uint64_t ctx;             /**< CQ or QP context, or the port number */
  rnicpi_async_cause_t cause; /**< queue pair events: what it was about; the Terminate
                               *   fields count only with a cause */
  /** iWARP: layer of the Terminate (RFC 5040 7.1: 0 RDMAP, 1 DDP, 2 LLP)
   *  this side sent (QP_FATAL, QP_ACCESS_ERR) or received (QP_REMOTE_ERR);
   *  #RNICPI_TERM_NONE when none went either way (InfiniBand). */
  uint8_t term_layer;
  uint8_t term_etype;       /**< iWARP: the Terminate's error type, or #RNICPI_TERM_NONE */
  uint8_t term_code;        /**< iWARP: the Terminate's error code, or #RNICPI_TERM_NONE */
} rnicpi_async_event_t;

/**
 * Calls from a provider into the access layer.  They may come from any
 * thread of the provider's, but never while the provider holds a lock that
 * its own operations take, so an upcall may call provider operations.
 */
typedef struct rnicpi_upcalls {
  /**
   * A CM event for the device opened with @p dev_ctx.
   * @param dev_ctx the context given to open.
   * @param ev the event, valid during the call only.
   */
  void (*cm_event)(void *dev_ctx, const rnicpi_cm_event_t *ev);
  /**
   * A completion arrived on an armed CQ whose context is @p cq_ctx.  It is
   * delivered outside the provider's locks, so it may arrive while, or just
   * after, another thread destroys that CQ: the access layer looks @p cq_ctx
   * up and ignores one it no longer knows.  None arrives once the device's
   * close has returned.
   * @param dev_ctx the context given to open.
   * @param cq_ctx the context given to cq_create.
   */
  void (*cq_notify)(void *dev_ctx, uint64_t cq_ctx);
  /**
   * An asynchronous event.
   * @param dev_ctx the context given to open.
   * @param ev the event, valid during the call only; the access layer
   *        reads its fields from @c cause on only from a provider of minor
   *        7 or later.
   */
  void (*async_event)(void *dev_ctx, const rnicpi_async_event_t *ev);
} rnicpi_upcalls_t;

/** @} */

/** @defgroup rnicpi_ops Operations tables
 *  @brief One table per area, each starting with its size.
 *
 *  Each operation lists the statuses it returns and when, as the access
 *  layer reads them.  Where the access layer tells one status from the others
 *  (RNICPI_EEXIST and RNICPI_EACCES of listen, RNICPI_ENOENT of accept,
 *  RNICPI_EBUSY of mr_dereg...), that status is the contract and a provider must give it
 *  in that case and no other; the rest of a list says what a caller may
 *  see, and a case listed under two statuses may come as either.  Any
 *  other status means the operation failed for a reason of the device's:
 *  a provider over a kernel's verbs passes on what the kernel said, by
 *  errno (EINVAL RNICPI_EINVAL, ENOMEM RNICPI_ENOMEM, EAGAIN RNICPI_EFULL,
 *  EBUSY RNICPI_EBUSY, EPERM RNICPI_EACCES, anything unknown RNICPI_EIO),
 *  and the access layer maps every status it does not single out to an
 *  IT-API status once (IT_ERR_RESOURCES for a creation, otherwise by one
 *  table of the access layer's).  An operation refused leaves its objects as they were.
 *  Every operation of a table may be the loader's stub, which returns
 *  RNICPI_ENOTSUP (or 0, or nothing) and changes nothing.
 *  @{ */

/** Device discovery and protection domains. */
typedef struct rnicpi_device_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * List the names of the devices the provider offers.
   * @param names room for @p *count names of up to 63 bytes and a NUL;
   *        the first min(in, out) entries are set.
   * @param count in: the room in @p names; out: how many devices there
   *        are (possibly more than the room, or 0).
   * @retval RNICPI_OK always (the loader's stub alone says RNICPI_ENOTSUP,
   *         and a count of 0)
   */
  rnicpi_status_t (*list)(char (*names)[RNICPI_DEVICE_NAME_MAX], size_t *count);
  /**
   * Open a device by name; upcalls go to @p up with @p dev_ctx.
   * @param name a name list() gave.
   * @param up the upcalls; the provider keeps a copy.
   * @param dev_ctx the access layer's context, first argument of every
   *        upcall (also rnicpi_dev_t::al_ctx).
   * @param dev set to the device on RNICPI_OK.
   * @retval RNICPI_OK @p *dev is set; its capability record is ready
   * @retval RNICPI_ENOENT no device of that name, or one the provider does
   *         not offer (a device with no IP address to be reached at, which
   *         list_refused names)
   * @retval RNICPI_EIO the device or the system refused what the provider
   *         needs to run it (its threads' descriptors, the kernel's event
   *         channels, the query of the device), said once in the log
   */
  rnicpi_status_t (*open)(const char *name, const rnicpi_upcalls_t *up,
                          void *dev_ctx, rnicpi_dev_t **dev);
  /**
   * Close a device whose objects are all destroyed.  No upcall comes once
   * it returns.
   * @param dev the device.
   */
  void (*close)(rnicpi_dev_t *dev);
  /**
   * Fill the capability record.  The access layer reads it through
   * rnicpi_caps_complete().
   * @param dev the device.
   * @param caps set whole: its size first, every field not offered 0.
   * @retval RNICPI_OK always (the record is the one the provider made at
   *         open); a device that cannot describe itself is no interface
   *         (the loader's stub: RNICPI_ENOTSUP)
   */
  rnicpi_status_t (*query)(rnicpi_dev_t *dev, rnicpi_caps_t *caps);
  /**
   * Allocate a protection domain.
   * @param dev the device.
   * @param pd set to the domain on RNICPI_OK.
   * @retval RNICPI_OK @p *pd is set
   * @retval RNICPI_ELIMIT max_pd domains exist, made through this opened
   *         device (where the kernel keeps the count instead, its refusal
   *         at the limit comes by its errno)
   * @retval RNICPI_ENOMEM the provider ran out of memory, or the kernel
   *         refused the domain
   */
  rnicpi_status_t (*pd_alloc)(rnicpi_dev_t *dev, rnicpi_pd_t **pd);
  /**
   * Free a protection domain with no objects left.
   * @param pd the domain.
   * @retval RNICPI_OK the domain is gone
   * @retval RNICPI_EBUSY objects of the domain remain (regions, queue
   *         pairs...): nothing changed
   */
  rnicpi_status_t (*pd_free)(rnicpi_pd_t *pd);
  /**
   * ABI 1.9: the devices the provider found and will not offer as
   * interfaces (a device without an address, say), or one entry with an
   * empty-handed name such as "(none)" when it found no device at all: each
   * name into @p names and a sentence saying why and what to do into
   * @p reasons (capacity @p *count); @p *count is set to how many there are.
   * @param names room for @p *count names.
   * @param reasons room for @p *count sentences, one per name.
   * @param count in: the room; out: how many there are.
   * @retval RNICPI_OK the list was made (possibly empty)
   * @retval RNICPI_ENOTSUP the provider keeps no such list (the loader's
   *         stub, for providers older than 1.9 and for one that offers
   *         every device it has)
   */
  rnicpi_status_t (*list_refused)(char (*names)[RNICPI_DEVICE_NAME_MAX],
                                  char (*reasons)[RNICPI_REASON_MAX], size_t *count);
  /**
   * ABI 1.12: what a user can do to have capability @p cap on @p dev and
   * its connections, where a setting of the provider's own decides it (an
   * environment variable read when the device opens), as one sentence the
   * access layer appends to its error message when the application asked
   * for what the device or a connection lacks ("IA '<name>' has no
   * atomics; <advice>").  The sentence names the setting and where it must
   * hold, e.g. "set ITAPI_<PROVIDER>_ATOMICS=1 in the processes at both
   * ends before they open the interface"; it covers both the device that lacks
   * @p cap and a connection that did not negotiate it, as the access layer
   * asks in either case.  The access layer names no provider's settings
   * itself: this is where that knowledge lives.
   * @param dev an open device.
   * @param cap exactly one RNICPI_CAP_* bit.
   * @param advice room for @p len bytes; set to a NUL-terminated sentence
   *        (truncated to fit) on RNICPI_OK, untouched otherwise.
   * @param len bytes of @p advice (the access layer gives 256).
   * @retval RNICPI_OK @p advice holds the sentence
   * @retval RNICPI_ENOENT nothing the user can set changes @p cap on this
   *         device (the hardware has it or not)
   * @retval RNICPI_ENOTSUP the provider gives no advice (the loader's stub,
   *         for a provider that leaves it NULL or is older than 1.12)
   */
  rnicpi_status_t (*cap_advice)(rnicpi_dev_t *dev, uint64_t cap, char *advice, size_t len);
} rnicpi_device_ops_t;

/** Memory registration. */
typedef struct rnicpi_mem_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Register memory; the keys land in (*mr)->lkey and (*mr)->rkey (never
   * 0).  The access layer has checked the range, and pinned it unless the
   * device has RNICPI_CAP_NO_PIN; it maps every failure to
   * IT_ERR_RESOURCES with the provider's status in the detail.
   * @param pd the domain of the region.
   * @param attr the memory, the address it answers to and the rights.
   * @param mr set to the region on RNICPI_OK.
   * @retval RNICPI_OK @p *mr is set
   * @retval RNICPI_EINVAL no address, a length of 0, or an iova whose
   *         range wraps the device's address space (iWARP's 64-bit tagged
   *         offset)
   * @retval RNICPI_ELIMIT longer than max_mr_size, or max_mr regions exist
   * @retval RNICPI_ENOTSUP #RNICPI_ACCESS_ATOMIC on a device without
   *         RNICPI_CAP_ATOMICS (a provider may instead keep the right,
   *         which no request can use then)
   * @retval RNICPI_ERANGE the kernel found a page not mapped (EFAULT)
   * @retval RNICPI_ENOMEM the kernel ran out of memory, or the region
   *         passes the memory-lock limit a kernel driver checks itself
   */
  rnicpi_status_t (*mr_reg)(rnicpi_pd_t *pd, const rnicpi_mr_attr_t *attr,
                            rnicpi_mr_t **mr);
  /**
   * Change the access rights of a region; its keys stay (but where the
   * device's call re-registers the region and gives it new keys, the
   * provider sets them in the region and says so in the log: a peer
   * holding the old key fails).
   * @param mr the region.
   * @param access the new rights: OR of ::rnicpi_access.
   * @retval RNICPI_OK the rights bind every access from now on
   * @retval RNICPI_ENOTSUP the device cannot change rights in place (a
   *         kernel driver without rereg), or #RNICPI_ACCESS_ATOMIC without
   *         RNICPI_CAP_ATOMICS, as mr_reg: nothing changed
   * @retval RNICPI_EINVAL the kernel refused the rights
   */
  rnicpi_status_t (*mr_modify)(rnicpi_mr_t *mr, uint32_t access);
  /**
   * Deregister; remote accesses in flight complete with an access error.
   * @param mr the region.
   * @retval RNICPI_OK the region is gone; its keys answer no more
   * @retval RNICPI_EBUSY a memory window is bound to it, or a queued fast
   *         registration names it: nothing changed
   *         (the access layer's IT_ERR_LMR_BUSY)
   */
  rnicpi_status_t (*mr_dereg)(rnicpi_mr_t *mr);
  /**
   * ABI 1.4 (RNICPI_CAP_FAST_REGISTER): allocate an invalid region of up to
   * @p max_pages pages, bound later by #RNICPI_WR_FAST_REG and invalidated
   * by #RNICPI_WR_LOCAL_INV; freed by mr_dereg.  Its keys are those of its
   * last fast registration posted (an unusable key before the first).
   * @param pd the domain of the region.
   * @param max_pages the most pages a fast registration of it may name.
   * @param mr set to the region on RNICPI_OK.
   * @retval RNICPI_OK @p *mr is set
   * @retval RNICPI_EINVAL @p max_pages is 0
   * @retval RNICPI_ENOTSUP the device lacks RNICPI_CAP_FAST_REGISTER (also
   *         the loader's stub, for a provider without mr_alloc)
   * @retval RNICPI_ELIMIT max_mr regions exist
   */
  rnicpi_status_t (*mr_alloc)(rnicpi_pd_t *pd, uint32_t max_pages, rnicpi_mr_t **mr);
  /**
   * ABI 1.10: allocate memory for an application's buffers (itx_mem_alloc())
   * of the kind this provider's devices reach at their best speed: @p length
   * bytes, a whole number of pages and never 0, zero-filled, page-aligned,
   * readable and writable, at @p *addr, with a word of the provider's own
   * in @p *ctx that mem_free gets back.  The memory belongs to the process,
   * not to @p dev: it stays valid after the device is closed.  A provider
   * whose peer processes map registered memory to reach it by memcpy
   * answers, for instance, with a sealed memfd mapped MAP_SHARED.
   * @param dev an open device of the provider.
   * @param length bytes, a multiple of the page size.
   * @param addr set to the memory on RNICPI_OK.
   * @param ctx set to the provider's word on RNICPI_OK.
   * @retval RNICPI_OK @p *addr and @p *ctx are set
   * @retval RNICPI_ENOTSUP ordinary memory serves the device best (the
   *         loader's stub, for a provider that leaves it NULL or is older
   *         than 1.10): the access layer maps anonymous memory itself
   * @retval RNICPI_ENOMEM the system refused (memory, address space,
   *         descriptors), with errno saying why, as the failed system call
   *         left it (the access layer quotes it to the application)
   */
  rnicpi_status_t (*mem_alloc)(rnicpi_dev_t *dev, size_t length, void **addr, uint64_t *ctx);
  /**
   * ABI 1.10: free memory mem_alloc gave: its address, length and context.
   * Called without a device (the one that allocated may be closed), only
   * for memory this provider's mem_alloc returned; a provider that sets
   * mem_alloc sets mem_free.
   * @param addr the address mem_alloc set.
   * @param length the length it was given.
   * @param ctx the word it set.
   */
  void (*mem_free)(void *addr, size_t length, uint64_t ctx);
} rnicpi_mem_ops_t;

/** Completion queues and queue pairs. */
typedef struct rnicpi_queue_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Create a CQ of @p depth entries; @p al_ctx comes back in its cq_notify
   * upcalls.
   * @param dev the device.
   * @param depth entries the CQ holds; one more completion is an overflow
   *        (#RNICPI_ASYNC_CQ_OVERFLOW).
   * @param al_ctx the access layer's context (rnicpi_cq_t::al_ctx).
   * @param cq set to the CQ on RNICPI_OK.
   * @retval RNICPI_OK @p *cq is set
   * @retval RNICPI_ELIMIT @p depth is 0 or above the device's max_cqe, or
   *         max_cq CQs exist (as pd_alloc counts domains)
   * @retval RNICPI_ENOMEM the provider ran out of memory, or the kernel
   *         refused the CQ
   */
  rnicpi_status_t (*cq_create)(rnicpi_dev_t *dev, uint32_t depth,
                               uint64_t al_ctx, rnicpi_cq_t **cq);
  /**
   * Destroy a CQ no queue pair uses; completions still in it are dropped.
   * @param cq the CQ.
   * @retval RNICPI_OK the CQ is gone; no upcall names it afterwards
   * @retval RNICPI_EBUSY a queue pair still completes into it: nothing changed
   */
  rnicpi_status_t (*cq_destroy)(rnicpi_cq_t *cq);
  /**
   * Create a queue pair in state IDLE (a UD one in RTS).
   * @param pd the domain of the queue pair.
   * @param attr its CQs, depths, SGE limits, IRD, ORD, rights, SRQ and type.
   * @param al_ctx the access layer's context (rnicpi_qp_t::al_ctx, and
   *        rnicpi_wc_t::qp_ctx of its completions).
   * @param qp set to the queue pair on RNICPI_OK.
   * @retval RNICPI_OK @p *qp is set
   * @retval RNICPI_ELIMIT a depth, an SGE count, IRD or ORD above the
   *         capability record, or max_qp queue pairs exist (as pd_alloc
   *         counts domains); also a queue pair larger than the device
   *         would make, or a CQ that cannot grow with no room left for its
   *         depth
   * @retval RNICPI_EINVAL a CQ missing, a type that is neither RC nor UD,
   *         or an SRQ of another domain than @p pd
   * @retval RNICPI_ENOTSUP a UD queue pair on a device without
   *         RNICPI_CAP_UD, or a type neither RC nor UD.  An SRQ is given
   *         only where RNICPI_CAP_SRQ says (the access layer checks)
   * @retval RNICPI_ENOMEM the provider ran out of memory, or the kernel
   *         refused the queue pair or its first state change
   */
  rnicpi_status_t (*qp_create)(rnicpi_pd_t *pd, const rnicpi_qp_attr_t *attr,
                               uint64_t al_ctx, rnicpi_qp_t **qp);
  /**
   * Change the inbound rights, IRD and ORD of a queue pair; the other
   * fields of @p attr are ignored.  New rights bind every inbound request
   * that arrives after the call returns, in any state.  IRD and ORD are
   * what the queue pair offers when it next connects or accepts: a
   * connected queue pair keeps the values its connection negotiated (a
   * provider may apply a lower IRD at once, never a higher one), as
   * InfiniBand allows no change of them in RTS; the access layer changes
   * them only while the endpoint is unconnected.
   * @param qp the queue pair.
   * @param attr access, ird and ord are read.
   * @retval RNICPI_OK the change is made
   * @retval RNICPI_ELIMIT IRD or ORD above the capability record: nothing changed
   * @retval RNICPI_EINVAL the kernel refused the rights
   */
  rnicpi_status_t (*qp_modify)(rnicpi_qp_t *qp, const rnicpi_qp_attr_t *attr);
  /**
   * Move to ERROR: every outstanding work request completes flushed; the
   * peer sees BROKEN.  Also for a queue pair already in ERROR.
   * @param qp the queue pair.
   * @retval RNICPI_OK always
   */
  rnicpi_status_t (*qp_to_error)(rnicpi_qp_t *qp);
  /**
   * Move an ERROR queue pair back to IDLE for reuse (a UD one back to
   * RTS): nothing of its work requests remains in its CQs afterwards.  The
   * access layer resets only a queue pair in ERROR (it_ep_reset of a
   * NONOPERATIONAL endpoint), which is the contract; a provider may also
   * reset one that never connected, or refuse it with RNICPI_ESTATE.
   * @param qp the queue pair.
   * @retval RNICPI_OK the queue pair is IDLE
   * @retval RNICPI_ESTATE it is connected or connecting: move it to ERROR
   *         first (the access layer's IT_ERR_CANNOT_RESET)
   * @retval RNICPI_EIO the device would not take the queue pair back to
   *         its first state, or make it anew where the device cannot reset
   *         one (iWARP verbs); the queue pair stays in ERROR
   */
  rnicpi_status_t (*qp_reset)(rnicpi_qp_t *qp);
  /**
   * Current state.
   * @param qp the queue pair.
   * @return its state (the loader's stub: #RNICPI_QPS_ERROR).
   */
  rnicpi_qp_state_t (*qp_state)(rnicpi_qp_t *qp);
  /**
   * Destroy; outstanding work requests complete flushed first, and no
   * completion or upcall names the queue pair afterwards.
   * @param qp the queue pair.
   * @retval RNICPI_OK always
   */
  rnicpi_status_t (*qp_destroy)(rnicpi_qp_t *qp);
} rnicpi_queue_ops_t;

/** The data path. */
typedef struct rnicpi_data_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Post one send-queue work request.  The requests of a send queue
   * complete in posting order whatever their kinds (RDMAC verbs p.134),
   * also when a provider carries some out by another path than others
   * (local ones, one-sided ones into memory it reaches itself): none
   * completes ahead of a request posted before it, and on InfiniBand a
   * Send waiting for the peer's receive (RNR) holds back every request
   * after it, RDMA Writes placing nothing meanwhile.  One that fails here (a local key, bounds, rights) completes
   * with its error in its place, after those before it, which complete
   * successfully or, if outstanding when the provider moved the queue pair
   * to ERROR for the failure, flushed; those after it complete flushed.
   * So a status other than RNICPI_OK means the request was not taken: no
   * completion will name it, and the queue pair is as it was.
   * @param qp the queue pair.
   * @param wr the request; read during the call only (a #RNICPI_WR_BIND_MW
   *        or #RNICPI_WR_FAST_REG gets its new key written as documented
   *        at ::rnicpi_send_wr_t).
   * @retval RNICPI_OK taken; it completes (a queue pair in ERROR completes
   *         it flushed)
   * @retval RNICPI_ESTATE the queue pair is IDLE, never connected, or
   *         (where the device takes no request before it) still connecting:
   *         the access layer's IT_ERR_INVALID_EP_STATE
   * @retval RNICPI_EFULL max_send_wr requests are outstanding
   * @retval RNICPI_ELIMIT more SGEs than the queue pair's limit for the
   *         opcode, or an RDMA Read or atomic on a queue pair whose ORD is 0
   * @retval RNICPI_ENOTSUP an operation the device lacks (its capability
   *         clear: windows, invalidation, fast registration, reads into
   *         windows, immediate data, atomics), or one this connection did
   *         not negotiate (iWARP's RFC 7306 atomics and immediate data,
   *         toward a peer without them).  The access layer names the
   *         capability the opcode needs and quotes cap_advice
   * @retval RNICPI_EINVAL an opcode out of range (or RNICPI_ENOTSUP), a
   *         bind without its window or region, a fast registration of a
   *         region not of mr_alloc, #RNICPI_WR_SINK_MW on anything but a
   *         Read (a provider may ignore the flag there), anything but a
   *         Send on a UD queue pair
   * @retval RNICPI_EACCES UD: no address handle, or one of another domain
   * @retval RNICPI_ERANGE UD: a datagram longer than ud_mtu (the access
   *         layer's IT_ERR_PAYLOAD_SIZE)
   */
  rnicpi_status_t (*post_send)(rnicpi_qp_t *qp, const rnicpi_send_wr_t *wr);
  /**
   * Post one receive.  It is taken in any state but on a queue pair that
   * receives from an SRQ: an IDLE queue pair keeps it for its first
   * message, one in ERROR completes it flushed.
   * @param qp the queue pair.
   * @param wr the receive; read during the call only.
   * @retval RNICPI_OK taken; it completes
   * @retval RNICPI_EFULL max_recv_wr receives are outstanding
   * @retval RNICPI_ELIMIT more SGEs than the queue pair's max_recv_sge
   * @retval RNICPI_EINVAL the queue pair receives from an SRQ (or
   *         RNICPI_ESTATE; the access layer never asks)
   */
  rnicpi_status_t (*post_recv)(rnicpi_qp_t *qp, const rnicpi_recv_wr_t *wr);
  /**
   * Take up to @p n completions, oldest first.
   * @param cq the CQ.
   * @param wc room for @p n entries; the access layer zeroes each first
   *        (see rnicpi_wc_t::rkey).
   * @param n the room, at least 1.
   * @return how many entries were set, 0 when the CQ is empty (also the
   *         loader's stub).
   */
  int (*poll_cq)(rnicpi_cq_t *cq, rnicpi_wc_t *wc, int n);
  /**
   * Completions the CQ holds now, which poll_cq would take (a poll_cq that
   * makes the provider's progress, reading its sockets say, may
   * find more; cq_wait_begin says when that matters).
   * @param cq the CQ.
   * @return the count (the loader's stub: 0).
   */
  uint32_t (*cq_count)(rnicpi_cq_t *cq);
  /**
   * Ask for one cq_notify upcall at the next completion.  The access layer
   * counts the CQ after arming, so a completion that came in between is
   * never missed, and reads no status from it.
   * @param cq the CQ.
   * @retval RNICPI_OK armed (always, for a provider that arms in software)
   * @retval RNICPI_EIO the device refused to arm its CQ
   */
  rnicpi_status_t (*arm_cq)(rnicpi_cq_t *cq);
  /**
   * ABI 1.11: the calling thread is about to sleep until @p cq has a
   * completion (the access layer's it_evd_wait).  The provider names, in
   * @p fds, the descriptors whose readiness means its peer sent something
   * that may complete into @p cq (a socket, a doorbell its peer writes),
   * each with the poll(2) events to wait for, and from now until
   * cq_wait_end treats this thread as the one that makes that progress:
   * a message that arrives wakes the sleeper directly, and cq_wait_end
   * then takes it in this thread, where a provider thread would be woken
   * first and would wake the sleeper through cq_notify (two wake-ups and
   * a notification per event instead of one).
   *
   * The contract, so that no completion is ever stranded:
   * - the caller then arms @p cq (arm_cq), looks at cq_count, and sleeps
   *   in poll(2) on @p fds together with a descriptor of its own that its
   *   cq_notify upcall makes readable; a completion that comes by a path
   *   @p fds do not cover (another thread's, a peer in the same process,
   *   a teardown) still brings the cq_notify upcall of an armed CQ;
   * - so from here on, whatever a poll_cq would return (also what only its
   *   own progress would find: data in a socket, a frame in a ring) is
   *   counted by cq_count, makes a descriptor of @p fds ready, or brings
   *   cq_notify: a caller that has once been answered RNICPI_OK may skip
   *   the poll_cq of an empty CQ (cq_count 0) before it sleeps;
   * - whatever poll returned (ready, timed out, interrupted), the same
   *   thread calls cq_wait_end with the same array and the revents poll
   *   set, exactly once for each cq_wait_begin that returned RNICPI_OK,
   *   before it calls cq_wait_begin again;
   * - both may push completions into any CQ, from this thread, with the
   *   cq_notify upcalls of armed CQs (this thread is no provider thread,
   *   so it holds no provider lock then);
   * - any number of threads may wait on one CQ; the descriptors stay
   *   open until the matching cq_wait_end returns.
   *
   * @param cq the CQ to wait for.
   * @param fds room for @p *nfds entries; the provider sets fd and events
   *        of the first ones it uses.
   * @param nfds in: the room in @p fds; out: the entries used, possibly 0
   *        (nothing of the provider's to sleep on for this CQ now: its
   *        completions all come by cq_notify).  A provider that would need
   *        more than the room covers what fits and leaves the rest to
   *        cq_notify.
   * @retval RNICPI_OK @p *nfds is set; call cq_wait_end after the sleep
   * @retval RNICPI_ENOTSUP the provider has no descriptors to offer (the
   *         loader's stub, for providers older than 1.11): sleep on the
   *         cq_notify upcall alone, and do not call cq_wait_end
   */
  rnicpi_status_t (*cq_wait_begin)(rnicpi_cq_t *cq, struct pollfd *fds, uint32_t *nfds);
  /**
   * ABI 1.11: the sleep that cq_wait_begin prepared is over (see there):
   * the provider takes in this thread what @p fds announced (reads the
   * socket, drains the ring, answers what must be answered), pushes the
   * completions that produces, and stops counting this thread as a
   * sleeper of @p cq.  It never blocks.
   * @param cq the CQ of the matching cq_wait_begin.
   * @param fds the array cq_wait_begin filled, revents as poll(2) left
   *        them (0 when poll timed out or was interrupted).
   * @param nfds the entries cq_wait_begin used.
   */
  void (*cq_wait_end)(rnicpi_cq_t *cq, const struct pollfd *fds, uint32_t nfds);
} rnicpi_data_ops_t;

/**
 * Connection management verbs (optional: RNICPI_CAP_CM_VERBS).  What a
 * connection attempt comes to (established, rejected, unreachable) arrives
 * by the cm_event upcall; a status other than RNICPI_OK means the call
 * started nothing and no event will follow from it.
 */
typedef struct rnicpi_cm_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Listen on a port of the device's addresses.
   * @param dev the device.
   * @param port the TCP or rdma_cm port, 1 to 65535.
   * @param al_ctx the access layer's context, in the listener's requests
   *        (rnicpi_cm_event_t::listen_ctx).
   * @param lst set to the listener on RNICPI_OK.
   * @retval RNICPI_OK listening; requests come as
   *         #RNICPI_CM_CONNECT_REQUEST
   * @retval RNICPI_EEXIST something listens on @p port already: the access
   *         layer tries another port when it chose this one, and otherwise
   *         says IT_ERR_CONN_QUAL_BUSY
   * @retval RNICPI_EINVAL @p port is 0 or above 65535 (a provider with a
   *         port space of its own may take any)
   * @retval RNICPI_EACCES the system refused the port (the kernel's bind
   *         of a TCP port); the access layer says IT_ERR_INVALID_CONN_QUAL.
   *         It has already refused a port below the host's unprivileged
   *         start to a process without CAP_NET_BIND_SERVICE.
   * @retval RNICPI_EIO the socket or the device's connection manager
   *         failed otherwise
   */
  rnicpi_status_t (*listen)(rnicpi_dev_t *dev, uint32_t port, uint64_t al_ctx,
                            rnicpi_listen_t **lst);
  /**
   * Stop listening; pending requests are refused (their requesters see
   * #RNICPI_CM_UNREACHABLE).
   * @param lst the listener.
   * @retval RNICPI_OK always; the listener is gone
   */
  rnicpi_status_t (*unlisten)(rnicpi_listen_t *lst);
  /**
   * Start connecting an IDLE queue pair to @p dst.
   * @param qp the queue pair, IDLE.
   * @param dst the listener's address and port.  A loopback address
   *        (rnicpi_addr_is_loopback()) means this host: it reaches this
   *        host's listeners on the device, also where the device cannot
   *        reach the loopback itself (it lists no loopback address): the
   *        connect then goes to the device's own address
   *        (rnicpi_caps_loopback_target()).
   * @param param private data, IRD, ORD, three-way and the timeout.
   * @retval RNICPI_OK started: one of #RNICPI_CM_ESTABLISHED,
   *         #RNICPI_CM_CONNECT_REPLY (three-way), #RNICPI_CM_REJECTED,
   *         #RNICPI_CM_UNREACHABLE follows
   * @retval RNICPI_ELIMIT private data over pdata_connect, or IRD or ORD
   *         above the capability record
   * @retval RNICPI_ESTATE the queue pair is not IDLE or connects already
   * @retval RNICPI_ENOTSUP three_way on a device without
   *         RNICPI_CAP_THREE_WAY (the access layer asks for it only where
   *         the capability says so; a provider may ignore it then)
   * @retval RNICPI_EINVAL the device has no address of @p dst's family
   * @retval RNICPI_EIO no socket, or the device's connection manager
   *         failed
   */
  rnicpi_status_t (*connect)(rnicpi_qp_t *qp, const rnicpi_addr_t *dst,
                             const rnicpi_conn_param_t *param);
  /**
   * Accept request @p conn_id on an IDLE queue pair (passive side), or
   * confirm a reply (active side, three-way).
   * @param qp the queue pair: an IDLE one to take the request, or the
   *        active queue pair of the reply.
   * @param conn_id rnicpi_cm_event_t::conn_id of the request or reply.
   * @param param private data, IRD and ORD.
   * @retval RNICPI_OK accepted: #RNICPI_CM_ESTABLISHED follows (or, to
   *         the active side of a three-way connect, #RNICPI_CM_CONNECT_REPLY)
   * @retval RNICPI_ENOENT no such request pending: it was withdrawn, or
   *         already answered (the access layer's IT_ERR_INVALID_CN_EST_ID)
   * @retval RNICPI_ELIMIT private data over pdata_accept (or any at all in
   *         the answer to a three-way reply, where the transport's RTU
   *         carries none), or IRD or ORD above the capability record
   * @retval RNICPI_ESTATE the queue pair is not IDLE, or the request is
   *         not in a state to be accepted by it
   * @retval RNICPI_EINVAL a queue pair of another transport than the
   *         request's, or a reply confirmed on another queue pair than its
   *         own
   */
  rnicpi_status_t (*accept)(rnicpi_qp_t *qp, uint64_t conn_id,
                            const rnicpi_conn_param_t *param);
  /**
   * Refuse request @p conn_id (or, three-way, a reply) with private data;
   * the requester sees #RNICPI_CM_REJECTED with it.
   * @param dev the device of the listener (or of the active queue pair).
   * @param conn_id rnicpi_cm_event_t::conn_id.
   * @param pdata private data, or NULL.
   * @param pdata_len bytes of @p pdata.
   * @retval RNICPI_OK refused
   * @retval RNICPI_ENOENT no such request pending: the requester went
   *         away or it was answered (the access layer takes it as done)
   * @retval RNICPI_ELIMIT @p pdata_len over pdata_reject
   */
  rnicpi_status_t (*reject)(rnicpi_dev_t *dev, uint64_t conn_id,
                            const void *pdata, uint32_t pdata_len);
  /**
   * Orderly disconnect: both sides see DISCONNECTED and flush.  On a queue
   * pair still connecting, the attempt ends.
   * The access layer calls it only for a connected or connecting endpoint.
   * @param qp the queue pair.
   * @param pdata private data, or NULL.
   * @param pdata_len bytes of @p pdata.
   * @retval RNICPI_OK the disconnect is under way (or the queue pair is in
   *         ERROR already and its event on its way)
   * @retval RNICPI_ELIMIT @p pdata_len over pdata_disconnect (0 on iWARP,
   *         whose FIN carries none, and where the connection manager's
   *         disconnect carries none, as rdma_cm's)
   * @retval RNICPI_ESTATE no connection to end (or one already down)
   */
  rnicpi_status_t (*disconnect)(rnicpi_qp_t *qp, const void *pdata,
                                uint32_t pdata_len);
  /**
   * ABI 1.3 (RNICPI_CAP_UD): ask the listener at @p dst (address and port)
   * for its UD service (IB SIDR_REQ).  The answer comes back as one
   * RNICPI_CM_UD_SVC_REPLY upcall with qp_ctx = @p req_ctx: the listener's
   * reply, or RNICPI_UD_SVC_NO_SERVICE when nothing listens there or the
   * listener goes away unanswered.
   * @param dev the device.
   * @param dst the listener's address and port; a loopback address
   *        reaches this host's listeners on the device, as for connect.
   * @param pdata private data, or NULL.
   * @param pdata_len bytes of @p pdata.
   * @param req_ctx the access layer's context of the request.
   * @retval RNICPI_OK asked; the one reply upcall follows
   * @retval RNICPI_ELIMIT @p pdata_len over pdata_ud_req (the access
   *         layer's IT_ERR_INVALID_PDATA_LENGTH)
   * @retval RNICPI_ENOTSUP the device lacks RNICPI_CAP_UD
   * @retval RNICPI_EINVAL the device has no address of @p dst's family
   */
  rnicpi_status_t (*ud_svc_request)(rnicpi_dev_t *dev, const rnicpi_addr_t *dst,
                                    const void *pdata, uint32_t pdata_len, uint64_t req_ctx);
  /**
   * ABI 1.3: answer UD service request @p req_id (IB SIDR_REP).
   * @param dev the device of the listener.
   * @param req_id rnicpi_cm_event_t::conn_id of the request.
   * @param status the answer.
   * @param qpn the service's queue pair number (status OK).
   * @param qkey the service's Q_Key (status OK).
   * @param pdata private data, or NULL.
   * @param pdata_len bytes of @p pdata.
   * @retval RNICPI_OK answered
   * @retval RNICPI_ENOENT no such request pending (the access layer's
   *         IT_ERR_INVALID_UD_SVC_REQ_ID)
   * @retval RNICPI_ELIMIT @p pdata_len over pdata_ud_rep
   * @retval RNICPI_EINVAL @p status is not a ::rnicpi_ud_svc_status_t
   */
  rnicpi_status_t (*ud_svc_reply)(rnicpi_dev_t *dev, uint64_t req_id, rnicpi_ud_svc_status_t status,
                                  uint32_t qpn, uint32_t qkey, const void *pdata, uint32_t pdata_len);
} rnicpi_cm_ops_t;

/**
 * Shared receive queues (optional: RNICPI_CAP_SRQ).  A receive taken from an
 * SRQ completes on the receive CQ of the queue pair the message arrived on,
 * with that QP's context.  Receives still posted when the SRQ is destroyed
 * belong to no queue pair and complete nowhere: the access layer refuses to
 * destroy an SRQ that queue pairs still use.
 */
typedef struct rnicpi_srq_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Create an SRQ of @p max_wr receives of up to @p max_sge entries each.
   * @param pd the domain of the SRQ (and of the queue pairs that use it).
   * @param max_wr receives it holds.
   * @param max_sge scatter entries per receive.
   * @param al_ctx the access layer's context, in its async events.
   * @param srq set to the SRQ on RNICPI_OK.
   * @retval RNICPI_OK @p *srq is set
   * @retval RNICPI_ELIMIT @p max_wr or @p max_sge 0 or above the
   *         capability record, or max_srq SRQs exist (as pd_alloc counts
   *         domains), or larger than the device would make
   */
  rnicpi_status_t (*srq_create)(rnicpi_pd_t *pd, uint32_t max_wr, uint32_t max_sge,
                                uint64_t al_ctx, rnicpi_srq_t **srq);
  /**
   * Resize and arm the limit event (#RNICPI_ASYNC_SRQ_LIMIT, once, when
   * it holds fewer than @p limit receives).
   * @param srq the SRQ.
   * @param max_wr the new size, or 0 to keep it.
   * @param limit the watermark, or 0 to disarm.
   * @retval RNICPI_OK done
   * @retval RNICPI_EBUSY @p max_wr is below the receives it holds now:
   *         nothing changed (the access layer's IT_ERR_INVALID_SRQ_SIZE)
   */
  rnicpi_status_t (*srq_modify)(rnicpi_srq_t *srq, uint32_t max_wr, uint32_t limit);
  /**
   * Destroy an SRQ no queue pair uses; its receives are dropped.
   * @param srq the SRQ.
   * @retval RNICPI_OK the SRQ is gone
   * @retval RNICPI_EBUSY a queue pair still receives from it: nothing changed
   */
  rnicpi_status_t (*srq_destroy)(rnicpi_srq_t *srq);
  /**
   * Post one receive to the SRQ.
   * @param srq the SRQ.
   * @param wr the receive; read during the call only.
   * @retval RNICPI_OK taken
   * @retval RNICPI_EFULL it holds max_wr receives (the access layer's
   *         IT_ERR_TOO_MANY_POSTS)
   * @retval RNICPI_ELIMIT more SGEs than the SRQ's max_sge
   */
  rnicpi_status_t (*post_srq_recv)(rnicpi_srq_t *srq, const rnicpi_recv_wr_t *wr);
  /**
   * Receives the SRQ holds now.
   * @param srq the SRQ.
   * @return the count (the loader's stub: 0).
   */
  uint32_t (*srq_count)(rnicpi_srq_t *srq);
} rnicpi_srq_ops_t;

/**
 * Memory windows (optional: RNICPI_CAP_MW_NARROW, RNICPI_CAP_MW_WIDE;
 * ABI 1.2).  Windows are bound and invalidated by send-queue work requests
 * (#RNICPI_WR_BIND_MW, #RNICPI_WR_LOCAL_INV, #RNICPI_WR_SEND_INV at the
 * peer).  A region with a bound window refuses mr_dereg with #RNICPI_EBUSY.
 */
typedef struct rnicpi_mw_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Allocate an unbound window of @p type.
   * @param pd the domain of the window.
   * @param type narrow or wide.
   * @param mw set to the window on RNICPI_OK.
   * @retval RNICPI_OK @p *mw is set
   * @retval RNICPI_ENOTSUP the type's capability bit is clear
   * @retval RNICPI_EINVAL @p type is neither narrow nor wide
   * @retval RNICPI_ELIMIT no key left for another window
   */
  rnicpi_status_t (*mw_alloc)(rnicpi_pd_t *pd, rnicpi_mw_type_t type, rnicpi_mw_t **mw);
  /**
   * Free a window; a bound window is invalidated first.
   * @param mw the window.
   * @retval RNICPI_OK the window is gone; its key answers no more
   * @retval RNICPI_EBUSY a bind or invalidation of it is still queued:
   *         nothing changed (free it once that completed)
   */
  rnicpi_status_t (*mw_dealloc)(rnicpi_mw_t *mw);
} rnicpi_mw_ops_t;

/**
 * Address handles (optional: RNICPI_CAP_UD; ABI 1.3).  A handle may be
 * destroyed while sends that named it are outstanding: a send reads its
 * handle when it is posted.
 */
typedef struct rnicpi_ud_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Create an address handle in @p pd.
   * @param pd the domain of the handle.
   * @param attr the destination.
   * @param ah set to the handle on RNICPI_OK.
   * @retval RNICPI_OK @p *ah is set
   * @retval RNICPI_ENOTSUP the device lacks RNICPI_CAP_UD
   * @retval RNICPI_EINVAL the port is out of range, no GID of the port can
   *         reach the destination's family, or the device refused the
   *         address
   * @retval RNICPI_ENOMEM the provider or the device ran out of memory
   */
  rnicpi_status_t (*ah_create)(rnicpi_pd_t *pd, const rnicpi_ah_attr_t *attr, rnicpi_ah_t **ah);
  /**
   * Destroy an address handle.
   * @param ah the handle.
   * @retval RNICPI_OK the handle is gone (a device's refusal comes as
   *         another status, which the access layer does not read)
   */
  rnicpi_status_t (*ah_destroy)(rnicpi_ah_t *ah);
} rnicpi_ud_ops_t;

/** Socket handoff (optional: RNICPI_CAP_SOCKET_HANDOFF). */
typedef struct rnicpi_sock_ops {
  size_t size; /**< sizeof the table as the provider built it */
  /**
   * Take over connected TCP socket @p fd and bring @p qp to RTS on it:
   * the MPA exchange runs on the socket (the @p active end sends the
   * request), and its outcome comes by the cm_event upcall
   * (#RNICPI_CM_ESTABLISHED when it succeeds).  On any status but
   * RNICPI_OK the socket stays the caller's, as it was.
   * @param qp the queue pair, IDLE.
   * @param fd the connected socket; the provider owns it from RNICPI_OK on.
   * @param active true at the end that called connect().
   * @param param private data, IRD and ORD.
   * @retval RNICPI_OK taken; the socket is the provider's
   * @retval RNICPI_EINVAL @p fd is not a socket of type SOCK_STREAM (the
   *         access layer's IT_ERR_INVALID_CONVERSION)
   * @retval RNICPI_ELIMIT private data over pdata_connect (@p active) or
   *         pdata_accept, or IRD or ORD above the capability record
   * @retval RNICPI_ESTATE the queue pair is not IDLE
   */
  rnicpi_status_t (*handoff)(rnicpi_qp_t *qp, int fd, bool active,
                             const rnicpi_conn_param_t *param);
} rnicpi_sock_ops_t;

/** @} */

/** @addtogroup rnicpi_abi
 *  @{ */

/** The descriptor a provider exports. */
typedef struct rnicpi_provider {
  uint32_t abi_major;               /**< #RNICPI_ABI_MAJOR it was built with */
  uint32_t abi_minor;               /**< #RNICPI_ABI_MINOR it was built with */
  const char *name;                 /**< short name, as ITAPI_PROVIDER gives it */
  const char *version;              /**< provider version string */
  const char *description;          /**< one line for itapi-info */
  /**
   * Called once when loaded, before any other operation; NULL: nothing to
   * check.
   * @retval RNICPI_OK the provider is usable; a host without its devices
   *         is better told by list_refused, which gives the reason
   * @retval RNICPI_ENOTSUP the provider cannot run here; any status but
   *         RNICPI_OK does the same: the loader keeps the provider in the
   *         registry as refused, the status named in the reason, and calls
   *         nothing of it
   */
  rnicpi_status_t (*probe)(void);
  const rnicpi_device_ops_t *device; /**< device operations */
  const rnicpi_mem_ops_t *mem;       /**< memory operations */
  const rnicpi_queue_ops_t *queue;   /**< queue operations */
  const rnicpi_data_ops_t *data;     /**< data path operations */
  const rnicpi_cm_ops_t *cm;         /**< CM verbs, or NULL */
  const rnicpi_sock_ops_t *sock;     /**< socket handoff, or NULL */
  const struct rnicpi_srq_ops *srq;  /**< shared receive queues, or NULL (ABI 1.1) */
  const struct rnicpi_mw_ops *mw;    /**< memory windows, or NULL (ABI 1.2) */
  const struct rnicpi_ud_ops *ud;    /**< address handles, or NULL (ABI 1.3) */
} rnicpi_provider_t;

/**
 * @brief Define a provider's descriptor.
 *
 * Built with `-DRNICPI_BUILTIN`, the descriptor is named
 * `rnicpi_builtin_<name>` and linked into the library; otherwise it is
 * exported as #RNICPI_PROVIDER_SYMBOL from a loadable module.
 * @param name the provider's short name, as a bare identifier.
 */
#ifdef RNICPI_BUILTIN
#define RNICPI_PROVIDER_DEFINE(name) \
  const rnicpi_provider_t rnicpi_builtin_##name
#else
#define RNICPI_PROVIDER_DEFINE(name) \
  __attribute__((visibility("default"))) const rnicpi_provider_t rnicpi_provider_v1
#endif

/**
 * @brief The descriptor a provider defined with RNICPI_PROVIDER_DEFINE(),
 *        for the provider's own code (e.g. to set rnicpi_dev_t::prov).
 *        Declare it first with
 *        `extern const rnicpi_provider_t RNICPI_PROVIDER_SELF(name);`.
 * @param name the provider's short name, as a bare identifier.
 */
#ifdef RNICPI_BUILTIN
#define RNICPI_PROVIDER_SELF(name) rnicpi_builtin_##name
#else
#define RNICPI_PROVIDER_SELF(name) rnicpi_provider_v1
#endif

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* RNICPI_H */
