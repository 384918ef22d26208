/*
 * Project extensions to IT-API.  Names start with itx_ so the it_
 * namespace stays exactly the standard's.
 *
 * SPDX-License-Identifier: MIT
 */

/**
 * @file itx.h
 * @brief Extensions: status names and messages, error details, the table of
 *        implemented calls, event names, what a send completion means,
 *        memory the provider reaches fastest (itx_mem_alloc()).
 */
#ifndef ITX_H
#define ITX_H

#include <it_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libitapi is built with -fvisibility=hidden: what this header declares is
 * its exported interface (itapi/itapi.map, doc/architecture.md). */
#pragma GCC visibility push(default)

/** @defgroup itx Project extensions (itx_*)
 *  @brief Helpers that are not part of IT-API 2.1.
 *  @{ */

/**
 * @brief Name of a status, e.g. "IT_ERR_INVALID_HANDLE".
 * @param status any value; one outside the list gives "IT_ERR_UNKNOWN".
 * @return a static string.
 */
const char *itx_status_name(it_status_t status);

/**
 * @brief A sentence saying what a status means to an application.
 * @param status any value.
 * @return a static string.
 */
const char *itx_status_message(it_status_t status);

/**
 * @brief The reason for the last failed IT-API call of this thread: what
 *        failed, with the object and the number, and what to do.
 * @return a string owned by the library, valid until the thread's next
 *         failing call; "" when no call has failed.
 */
const char *itx_error_detail(void);

/**
 * @brief Name of an event number, e.g. "IT_CM_MSG_CONN_ESTABLISHED_EVENT".
 * @param event any event number.
 * @return a static string; "IT_EVENT_UNKNOWN" for unknown numbers.
 */
const char *itx_event_name(it_event_type_t event);

/**
 * @brief Name of a DTO completion status, e.g. "IT_DTO_ERR_FLUSHED".
 * @param status any value of it_dto_cmpl_event_t.dto_status.
 * @return a static string; "IT_DTO_ERR_UNKNOWN" for values outside the list.
 */
const char *itx_dto_status_name(it_dto_status_t status);

/** What a successful Send or RDMA Write completion promises on an IA. */
typedef enum itx_completion {
  /** The transport took the message (iWARP: RFC 5040 has no
   *  acknowledgement).  The data is defined at the peer once a later RDMA
   *  Read on the same endpoint completes, or a later Send arrives there; a
   *  fault the peer finds breaks the connection, so the request may
   *  already have completed successfully, or completes flushed. */
  ITX_COMPLETION_SENT = 0,
  /** The peer placed the data, and a fault the peer finds completes the
   *  request in error (InfiniBand RC, whose completion follows the
   *  acknowledgement; a device that moves the data into the peer's memory
   *  itself; an iWARP device that fences each Send and Write with a
   *  zero-length RDMA Read).  A device that places by such a fence keeps
   *  the promise only on a connection where the fence can go (an ORD here
   *  and an IRD at the peer above 0); its page, `itapi-<provider>(7)`, says
   *  so, and the settings that choose the mode. */
  ITX_COMPLETION_PLACED = 1
} itx_completion_t;

/**
 * @brief What a successful Send or RDMA Write completion means on an IA
 *        (RNIC-PI capability "completes-at-placement").
 * @param ia_handle an open IA.
 * @return #ITX_COMPLETION_PLACED or #ITX_COMPLETION_SENT; the weaker
 *         #ITX_COMPLETION_SENT for a handle that is not a live IA.
 */
itx_completion_t itx_ia_completion(it_ia_handle_t ia_handle);

/** The last asynchronous error of an endpoint, with what the transport said. */
typedef struct itx_ep_error {
  /** The affiliated event it raised; 0 when none since the EP was created
   *  or last reset. */
  it_event_type_t event;
  /** IT_TRUE when an iWARP Terminate went with it: @c sent, @c layer,
   *  @c etype and @c code say which. */
  it_boolean_t terminate;
  it_boolean_t sent;  /**< IT_TRUE: this side sent the Terminate; IT_FALSE: the peer did */
  uint8_t layer;      /**< RFC 5040 7.1: 0 RDMAP, 1 DDP, 2 LLP (MPA) */
  uint8_t etype;      /**< the layer's error type (RFC 5040 7.1, RFC 5041 7.2) */
  uint8_t code;       /**< the error code (RFC 5040 7.1, RFC 5041 7.2, RFC 5044 8) */
} itx_ep_error_t;

/**
 * @brief The last asynchronous error of an endpoint: the affiliated event
 *        and, on iWARP, the Terminate's layer, type and code (what the RDMAC
 *        verbs' Query QP returns).
 * @param ep_handle an RC endpoint.
 * @param error filled; its event is 0 when the endpoint has had none since
 *        it was created or last reset.
 * @retval IT_SUCCESS @p error is filled.
 * @retval IT_ERR_INVALID_EP @p ep_handle is not a live endpoint.
 * @retval IT_ERR_FAULT @p error is NULL.
 */
it_status_t itx_ep_error(it_ep_handle_t ep_handle, itx_ep_error_t *error);

/**
 * @brief Remove up to @p max of the oldest events from an event dispatcher
 *        in one call, without waiting (IBM's it_evd_dequeue_n, libibverbs'
 *        ibv_poll_cq).
 *
 * The events, their order and every field are those @p max calls of
 * it_evd_dequeue() would return, one after the other, stopping at the
 * first ::IT_ERR_QUEUE_EMPTY; so are the dispatcher's state afterwards
 * (its overflow flag, its file descriptor's level, its aggregate's
 * notifications).  What it saves is per call: a DTO dispatcher's
 * completion queue is polled for many entries at once, the handle looked
 * up once.  Any dispatcher is accepted, simple or aggregate; an aggregate
 * one gives its members' events in the rotation it_evd_dequeue() follows.
 * Like every call, it may race any other on the same dispatcher: each
 * event goes to one caller, and a dispatcher freed by another thread is
 * refused (::IT_ERR_INVALID_EVD) or, when the free comes later, the
 * events taken before it are returned.
 * @param evd_handle the dispatcher.
 * @param max room in @p events; 0 takes nothing and returns ::IT_SUCCESS
 *        with @p count 0.
 * @param events room for @p max events, filled from the first, oldest
 *        first.
 * @param count set to how many events were taken, from 1 to @p max (0
 *        only when @p max is 0); set only on success.
 * @retval IT_SUCCESS @p count events are in @p events.
 * @retval IT_ERR_QUEUE_EMPTY no event is queued (and @p max is not 0).
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher.
 * @retval IT_ERR_FAULT @p events or @p count is NULL.
 * @note As after it_evd_dequeue(): a loop that dequeues until
 *       ::IT_ERR_QUEUE_EMPTY before it waits on the dispatcher's file
 *       descriptor never leaves an event behind.
 */
it_status_t itx_evd_dequeue_n(it_evd_handle_t evd_handle, size_t max, it_event_t *events,
                              size_t *count);

/**
 * @brief Give an event dispatcher created without ::IT_EVD_CREATE_FD its
 *        file descriptor, as if it had been created with the flag.
 *
 * For a consumer that decides to watch a dispatcher only after making it
 * (DAT's dat_evd_modify_cno attaching a CNO to an EVD made without one,
 * an event loop added later).  From the call on the descriptor is what
 * it_evd_create() gives with the flag: readable while the dispatcher
 * holds at least its threshold of events (an aggregate: while a member
 * has notified it), at once if it does now; a DTO dispatcher's completion
 * queue is watched for the next completion from now on, which costs a
 * notification per completion that finds it below its threshold, as for
 * a dispatcher created with the flag.  it_evd_query() then reports the
 * flag and the descriptor.  Calling it again returns the same
 * descriptor.  The descriptor belongs to the dispatcher: do not close it;
 * it_evd_free() does.
 * @param evd_handle the dispatcher.
 * @param fd set to the descriptor.
 * @retval IT_SUCCESS @p fd is set.
 * @retval IT_ERR_INVALID_EVD @p evd_handle is not a live event dispatcher.
 * @retval IT_ERR_FAULT @p fd is NULL.
 */
it_status_t itx_evd_fd_enable(it_evd_handle_t evd_handle, int *fd);

/**
 * @brief Allocate memory for RDMA buffers of the kind the IA's provider
 *        reaches at its best speed.
 *
 * Register it with it_lmr_create() as any memory.  What it is depends on
 * the provider, which says so through RNIC-PI (`mem_alloc`): ordinary
 * anonymous pages, or memory a peer process can map to move one-sided RDMA
 * by memcpy (a MAP_SHARED mapping, which then stays shared with a child
 * made by fork() and holds one file descriptor until freed).
 * itx_mem_alloc(3) and each provider's page, `itapi-<provider>(7)`, say
 * which.  The memory is zero-filled and page-aligned, its length rounded
 * up to whole pages; it belongs to the process, not to the IA, and stays
 * valid after it_ia_free() until itx_mem_free().
 *
 * @param ia_handle the IA whose provider will reach the memory; use the
 *        memory with IAs of that provider.
 * @param length bytes wanted, at least 1.
 * @param addr set to the memory's address, only on success.
 * @retval IT_SUCCESS @p addr is set.
 * @retval IT_ERR_INVALID_IA @p ia_handle is not a live IA.
 * @retval IT_ERR_INVALID_LENGTH @p length is 0.
 * @retval IT_ERR_RESOURCES the system refused: no memory, no address space
 *         for @p length, or no file descriptor left; itx_error_detail()
 *         names the size and the reason.
 * @retval IT_ERR_FAULT @p addr is NULL.
 */
it_status_t itx_mem_alloc(it_ia_handle_t ia_handle, size_t length, void **addr);

/**
 * @brief Free memory of itx_mem_alloc().
 *
 * Free the LMRs that register it first (it_lmr_free()), as for memory of
 * malloc(): a provider may still reach registered memory.  A peer process
 * that mapped it keeps its own view of the pages until it lets them go;
 * this process's pages, and its descriptor if it holds one, are released
 * here.
 * @param addr the address itx_mem_alloc() set; NULL does nothing.
 * @retval IT_SUCCESS the memory is freed (or @p addr is NULL).
 * @retval IT_ERR_INVALID_ADDRESS @p addr is not an address itx_mem_alloc()
 *         returned, or was freed already.
 */
it_status_t itx_mem_free(void *addr);

/** Whether this build implements an IT-API call. */
typedef struct itx_call_info {
  const char *name;       /**< the standard name, e.g. "it_post_send" */
  it_boolean_t supported; /**< IT_FALSE: the call returns IT_ERR_OP_NOT_SUPPORTED */
  const char *area;       /**< the IT-API area, e.g. "DTO" */
} itx_call_info_t;

/**
 * @brief Number of IT-API entry points in the table.
 * @return the count.
 */
size_t itx_call_count(void);

/**
 * @brief One entry of the table of entry points.
 * @param i index below itx_call_count().
 * @return the entry, or NULL when out of range.
 */
const itx_call_info_t *itx_call_get(size_t i);

/** One RNIC-PI provider the library knows, usable or refused. */
typedef struct itx_provider_info {
  const char *name;        /**< provider name (the module's file name when refused early) */
  const char *origin;      /**< "built-in" or the module's path */
  it_boolean_t usable;     /**< IT_FALSE: the provider was refused, see @c reason */
  const char *version;     /**< the provider's version; NULL when refused */
  const char *description; /**< one line about the provider; NULL when refused */
  const char *reason;      /**< why it was refused; "" when usable */
} itx_provider_info_t;

/**
 * @brief Number of RNIC-PI providers the library knows, usable and refused
 *        (built-ins, modules of `ITAPI_PROVIDER_PATH` and of the install
 *        directory, restricted by `ITAPI_PROVIDER`).
 *
 * The first call loads the providers; the strings of the entries stay
 * valid until the process exits.
 * @return the count.
 */
size_t itx_provider_count(void);

/**
 * @brief One provider, in the order the library registered them.
 * @param i index below itx_provider_count().
 * @param info filled, only on success.
 * @retval IT_SUCCESS @p info is filled.
 * @retval IT_ERR_RANGE @p i is not below itx_provider_count().
 * @retval IT_ERR_FAULT @p info is NULL.
 */
it_status_t itx_provider_get(size_t i, itx_provider_info_t *info);

/** A device a provider found and does not offer as an interface. */
typedef struct itx_refused_device {
  char name[64];    /**< the device, or "(none)" when the provider found none */
  char reason[256]; /**< a sentence saying why and what to do */
} itx_refused_device_t;

/**
 * @brief The devices a usable provider found and does not offer as
 *        interfaces, each with its reason (RNIC-PI 1.9 `list_refused`).
 * @param i index below itx_provider_count().
 * @param devices room for @p *count entries.
 * @param count in: the room; out: how many there are (may exceed the room;
 *        the first ones are filled).  Set only on success.
 * @retval IT_SUCCESS the list was made (possibly empty).
 * @retval IT_ERR_OP_NOT_SUPPORTED the provider keeps no such list (older
 *         than RNIC-PI 1.9, or one that offers every device it has).
 * @retval IT_ERR_RANGE @p i is not below itx_provider_count().
 * @retval IT_ERR_INVALID_NAME the provider was refused: it has no devices.
 * @retval IT_ERR_FAULT @p devices or @p count is NULL.
 */
it_status_t itx_provider_refused_devices(size_t i, itx_refused_device_t *devices, size_t *count);

/** One setting of the stack in force, and where its value came from
 *  (itapi.conf(5)). */
typedef struct itx_setting {
  /** "itapi" for the whole stack, "interface NAME" for one interface. */
  const char *scope;
  /** "file" (the configuration file read), "provider", "cm" or "device". */
  const char *key;
  /** The value in force ("none" for no file, "all" for every provider). */
  const char *value;
  /** Where it came from: "FILE, line N", an environment variable
   *  ("ITAPI_PROVIDER", "ITAPI_CONF", "ITAPI_CM"), or "default". */
  const char *origin;
} itx_setting_t;

/**
 * @brief Number of settings in force: the configuration file read, the
 *        providers, the connection path, then each key of each interface
 *        section of the file.
 *
 * The first call reads the configuration file and loads the providers
 * (as it_interface_list() does); the strings of the entries stay valid
 * until the process exits.
 * @return the count.
 */
size_t itx_setting_count(void);

/**
 * @brief One setting in force, in the order itx_setting_count() gives.
 * @param i index below itx_setting_count().
 * @param setting filled, only on success.
 * @retval IT_SUCCESS @p setting is filled.
 * @retval IT_ERR_RANGE @p i is not below itx_setting_count().
 * @retval IT_ERR_FAULT @p setting is NULL.
 */
it_status_t itx_setting_get(size_t i, itx_setting_t *setting);

/**
 * @brief Why the configuration file was refused when the library started
 *        (a line that is wrong, a file another user could rewrite, a file
 *        ITAPI_CONF names that cannot be read); while it is, no interface
 *        is offered.
 * @return a sentence naming the file, the line and what to do, valid until
 *         the process exits; NULL when the file was taken or there is none.
 */
const char *itx_conf_error(void);

/**
 * @brief Post an RDMA Write followed by immediate data, which consumes one
 *        receive of the peer once the written bytes are placed there
 *        (InfiniBand's RDMA Write with Immediate, RFC 7306's Immediate
 *        Data after an RDMA Write on iWARP).
 *
 * The request completes on the EP's request EVD as
 * ::IT_DTO_RDMA_WRITE_CMPL_EVENT.  The peer's receive completes as
 * ::IT_DTO_RC_RECV_CMPL_EVENT, for which itx_dto_imm_data() gives the value.
 * Its @c transferred_length is the Write's length on InfiniBand; on iWARP
 * it is 8 when the receive holds 8 bytes or more, where the value is also
 * placed in network byte order, else 0.  The IA offers this when its
 * device has ::ITX_FEATURE_IMMEDIATE (itx_interface_caps(); an iWARP
 * connection uses it only when both ends offered RFC 7306).
 * @param ep_handle a connected RC endpoint.
 * @param local_segments the bytes to write, as for it_post_rdma_write().
 * @param num_segments how many segments (at most the EP's
 *        @c max_rdma_write_segments).
 * @param cookie given back in the completion.
 * @param dto_flags as for it_post_rdma_write().
 * @param rdma_addr where the bytes go in the peer's memory.
 * @param rmr_context the peer's RMR context for @p rdma_addr.
 * @param imm_data the value the peer's receive completion carries: its low
 *        32 bits on InfiniBand, all 64 on iWARP.
 * @retval IT_SUCCESS the request is posted.
 * @retval IT_ERR_OP_NOT_SUPPORTED the IA, or this connection, has no
 *         immediate data (itx_error_detail() says which and what to set).
 * @retval IT_ERR_INVALID_EP, IT_ERR_INVALID_EP_STATE, IT_ERR_INVALID_DTO_FLAGS,
 *         IT_ERR_INVALID_LMR, IT_ERR_INVALID_NUM_SEGMENTS, IT_ERR_TOO_MANY_POSTS
 *         as for it_post_rdma_write().
 */
it_status_t itx_post_rdma_write_imm(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
                                    size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                                    it_rdma_addr_t rdma_addr, it_rmr_context_t rmr_context,
                                    uint64_t imm_data);

/**
 * @brief Post immediate data alone: no payload, one receive of the peer
 *        consumed (InfiniBand's Send with Immediate of no bytes, RFC 7306's
 *        Immediate Data on iWARP).
 *
 * The request completes as ::IT_DTO_SEND_CMPL_EVENT; the peer's receive
 * as ::IT_DTO_RC_RECV_CMPL_EVENT with itx_dto_imm_data() giving the value
 * (@c transferred_length 0 on InfiniBand; on iWARP as for
 * itx_post_rdma_write_imm()).
 * @param ep_handle a connected RC endpoint.
 * @param cookie given back in the completion.
 * @param dto_flags as for it_post_send().
 * @param imm_data the value: its low 32 bits on InfiniBand, all 64 on iWARP.
 * @retval IT_SUCCESS the request is posted.
 * @retval IT_ERR_OP_NOT_SUPPORTED the IA, or this connection, has no
 *         immediate data.
 * @retval IT_ERR_INVALID_EP, IT_ERR_INVALID_EP_STATE, IT_ERR_INVALID_DTO_FLAGS,
 *         IT_ERR_TOO_MANY_POSTS as for it_post_send().
 */
it_status_t itx_post_imm_data(it_ep_handle_t ep_handle, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                              uint64_t imm_data);

/**
 * @brief Whether a receive completion was consumed by the peer's immediate
 *        data (itx_post_rdma_write_imm(), itx_post_imm_data(), or another
 *        stack's equivalent), and its value.
 * @param event an event as it_evd_dequeue(), it_evd_wait() or
 *        itx_evd_dequeue_n() returned it, whole (the value is kept in the
 *        it_event_t beyond it_dto_cmpl_event_t).
 * @param imm_data filled with the value when the result is IT_TRUE (the
 *        low 32 bits on InfiniBand); may be NULL.
 * @return IT_TRUE for a successful ::IT_DTO_RC_RECV_CMPL_EVENT that carries
 *         immediate data; IT_FALSE for any other event, or NULL.
 */
it_boolean_t itx_dto_imm_data(const it_event_t *event, uint64_t *imm_data);

/**
 * @brief The device of an interface offers immediate data: a receive
 *        completion can carry a value of the sender's
 *        (itx_post_rdma_write_imm(), itx_post_imm_data()).  On a transport
 *        where a connection may lack it, such a post can still say
 *        ::IT_ERR_OP_NOT_SUPPORTED.
 */
#define ITX_FEATURE_IMMEDIATE (UINT64_C(1) << 13)

/**
 * @brief What the device behind an interface offers: its features and its
 *        limits, as the access layer reads them (itx_interface_caps()).
 *
 * Limits are maxima for the whole device, or per queue where said; 0 means
 * the feature is absent.  An endpoint's own limits come from it_ep_query()
 * and it_ia_query(); these are the device's, for an application that sizes
 * its objects before it creates them.
 */
typedef struct itx_caps {
  /** Features, one bit each: ITX_FEATURE_IMMEDIATE and the bits that
   *  itx_feature_name() names (a bit keeps its number and its name from one
   *  release to the next). */
  uint64_t features;
  uint32_t max_qp;                 /**< endpoints (queue pairs) per device */
  uint32_t max_qp_wr;              /**< work requests per queue */
  uint32_t max_cq;                 /**< completion queues per device */
  uint32_t max_cqe;                /**< entries per completion queue */
  uint32_t max_mr;                 /**< memory regions per device */
  uint32_t max_pd;                 /**< protection zones per device */
  uint32_t max_srq;                /**< shared receive queues per device */
  uint32_t max_send_sge;           /**< gather entries per send */
  uint32_t max_recv_sge;           /**< scatter entries per receive */
  uint32_t max_rdma_write_sge;     /**< gather entries per RDMA Write */
  uint32_t max_rdma_read_sge;      /**< scatter entries per RDMA Read sink */
  uint32_t max_inline;             /**< bytes of inline data per send */
  uint32_t max_ird;                /**< inbound RDMA Reads in flight per endpoint */
  uint32_t max_ord;                /**< outbound RDMA Reads in flight per endpoint */
  uint64_t max_msg_size;           /**< largest message of any operation */
  uint64_t max_mr_size;            /**< largest region */
  uint32_t num_ports;              /**< ports (IT-API spigots) */
} itx_caps_t;

/**
 * @brief The name of one feature bit of itx_caps_t::features, e.g.
 *        "immediate-data" for ::ITX_FEATURE_IMMEDIATE (what itapi-info
 *        prints).
 * @param feature exactly one bit.
 * @return a static string; "unknown" for a bit without a name, or a value
 *         that is not one bit.
 */
const char *itx_feature_name(uint64_t feature);

/**
 * @brief The features and limits of the device behind an interface, as the
 *        access layer reads them.
 *
 * Opens the device for the query and closes it again.
 * @param interface an interface name of it_interface_list() (a device's,
 *        or an alias's: then the device it names).
 * @param caps filled, only on success.
 * @retval IT_SUCCESS @p caps is filled.
 * @retval IT_ERR_INVALID_NAME no usable provider lists @p interface.
 * @retval IT_ERR_RESOURCES the provider could not open or query the device.
 * @retval IT_ERR_FAULT @p interface or @p caps is NULL.
 */
it_status_t itx_interface_caps(const char *interface, itx_caps_t *caps);

/** @} */

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* ITX_H */
