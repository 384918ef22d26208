/*
 * dat/: a DAT 2.0 (uDAPL) provider for libdat2 over the public IT-API.
 *
 * Objects and handles.  Every handle the consumer sees is a cell
 * (datx_cell_t) whose first member is the DAT_PROVIDER pointer, as libdat2's
 * redirection (DAT_HANDLE_TO_PROVIDER) requires.  Cells live in chunks that
 * are never given back: a freed object's cell stays a tombstone (magic
 * DATX_MAGIC_DEAD) and is never handed out again, so a stale handle is
 * refused with DAT_INVALID_HANDLE and its subtype, and a handle is only
 * dereferenced after it was found inside a chunk (datx_cell_get()).  The
 * price is one cell (64 bytes) per object ever freed.
 *
 * A call on an IA, PZ, EVD, CNO, EP, PSP, RSP, LMR, RMR, CR or SRQ holds its cell for
 * the call (datx_cell_hold(), the public entry wrapping a static *_on_held
 * body), and a free retires the cell atomically with the holds: an EVD's
 * or CNO's free is refused as in use while held (a wait may last); the
 * others wait the short holders out (datx_cell_retire_wait()).
 * dat_evd_dequeue alone takes no hold: it reads its EVD in a read section,
 * which the EVD's teardown waits out (rsec_enter()).  A call
 * that names a second object holds it too, or, when the object it makes
 * keeps it (an EP its PZ, EVDs and SRQ; an LMR, RMR or SRQ its PZ; a
 * service point its EVD; an EVD its CNO), counts as its user
 * (datx_cell_use()) in the same word: the free of a PZ, EVD, SRQ or CNO
 * with users is refused as in use, and a free that retired the cell first
 * has a later use refused as an invalid handle.
 *
 * Names: dat_* are libdat2's and the DAT standard's; this provider's own
 * are datx_<object>_<verb>.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef DATX_PRIV_H
#define DATX_PRIV_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#ifndef DAT_EXTENSIONS
#define DAT_EXTENSIONS 1
#endif
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>

#include <glib.h>
#include <netinet/in.h>
#include <stdint.h>

#include "rsec.h"

#ifndef G_LOG_DOMAIN
#define G_LOG_DOMAIN "itapi-dat"
#endif

/** @brief A DAT error status: the error class bit, a type and a subtype. */
#define DATX_ERR(type, subtype) ((DAT_RETURN) (DAT_CLASS_ERROR | (type) | (subtype)))

/* The header DAPL's rdma_cm provider (openib_cma in dapl 2.1.10) puts in
 * front of the private data of every refusal it sends: 4 bytes, the DAT
 * and provider versions big-endian (DAT major << 24 | DAT minor << 16 |
 * provider major << 8 | provider minor).  Its requester takes a refusal
 * with private data for the consumer's (DAT_CONNECTION_EVENT_PEER_REJECTED)
 * and skips those 4 bytes; one without any, for the stack's.  This
 * provider frames its refusals the same way (dat_cr_reject) and strips the
 * header from those it receives, so that DAPL's provider and this one each
 * hand the other's consumer exactly what the rejecting consumer gave. */
#define DATX_REJECT_HDR_LEN 4u

/** @brief Kinds of object behind a handle. */
typedef enum {
  DATX_IA = 1,
  DATX_PZ,
  DATX_EVD,
  DATX_EP,
  DATX_LMR,
  DATX_PSP,
  DATX_CR,
  DATX_CNO,
  DATX_RSP,
  DATX_SRQ,
  DATX_RMR,
  DATX_CSP,
  DATX_AH,
  DATX_TYPE_COUNT
} datx_type_t;

/** @brief Magic of a live cell. */
#define DATX_MAGIC_LIVE 0x44415458u /* "DATX" */
/** @brief Magic of a freed cell (a tombstone). */
#define DATX_MAGIC_DEAD 0x44454144u /* "DEAD" */

/** @brief What a DAT handle points at. */
typedef struct datx_cell {
  DAT_PROVIDER *provider; /**< first: libdat2 finds the provider here */
  uint32_t magic;         /**< ::DATX_MAGIC_LIVE or ::DATX_MAGIC_DEAD */
  uint32_t type;          /**< a ::datx_type_t */
  guint64 hold;           /**< calls inside the object (datx_cell_hold), objects that use it
                               (datx_cell_use), and whether it is dead: atomic */
  uint32_t id;            /**< cell number (an LMR's lmr_context) */
  DAT_BOOLEAN has_context; /**< whether @c context was set */
  void *object;           /**< the live object, NULL in a tombstone */
  DAT_CONTEXT context;    /**< consumer context (dat_set_consumer_context) */
  struct datx_ia *ia;     /**< the adapter the object was made on (NULL for an IA) */
  uint64_t it;            /**< an EP's IT-API endpoint, an LMR's IT-API region, for the data
                               path (datx_cell_peek()); 0 when none: atomic */
} datx_cell_t;

/* A cell fills one cache line, and a handle's offset in its chunk is
 * checked with a mask. */
G_STATIC_ASSERT(sizeof(void *) != 8 || sizeof(datx_cell_t) == 64);

/** @brief One DAT_PROVIDER per IT-API interface named in dat.conf. */
typedef struct datx_provider {
  DAT_PROVIDER dat;          /**< the table libdat2 calls through */
  DAT_PROVIDER_INFO info;    /**< as registered */
  char it_name[64];          /**< the IT-API interface it opens */
  gsize caps_read;           /**< g_once_init_enter() guard of the two below */
  gboolean have_caps;        /**< @c caps was read */
  itx_caps_t caps;           /**< the device's features and limits (itx_interface_caps()), read once */
  struct datx_provider *next; /**< the process's list of providers */
} datx_provider_t;

typedef struct datx_ia datx_ia_t;
typedef struct datx_evd datx_evd_t;
typedef struct datx_cno datx_cno_t;

/** @brief An interface adapter. */
struct datx_ia {
  datx_cell_t *cell;          /**< its handle */
  datx_provider_t *provider;  /**< the provider it was opened through */
  it_ia_handle_t it;          /**< the IT-API adapter */
  GMutex lock;                /**< guards @c children and @c psps */
  GList *children;            /**< cells of the objects made on it */
  GList *psps;                /**< its public service points (datx_psp_t) */
  datx_cell_t *async_evd;     /**< the asynchronous EVD (made at open, or the consumer's) */
  struct sockaddr_in addr;    /**< its address: spigot 0's first IPv4 address */
  size_t connect_pdata_len;   /**< it_ia_info_t::connect_private_data_len */
  size_t accept_pdata_len;    /**< it_ia_info_t::accept_private_data_len */
  size_t reject_pdata_len;    /**< it_ia_info_t::reject_private_data_len */
  size_t max_rc_send_len;     /**< spigot 0's largest send */
  size_t max_rc_rdma_len;     /**< spigot 0's largest RDMA transfer */
  it_transport_type_t transport; /**< the adapter's transport */
  gboolean srq_support;       /**< it_ia_info_t::srq_support */
  gboolean srq_resizable;     /**< it_ia_info_t::srq_resizable */
  DAT_COUNT max_srqs;         /**< the device's SRQs (0 without SRQs) */
  DAT_COUNT max_recv_per_srq; /**< the device's SRQ depth (0 without SRQs) */
  DAT_COUNT max_ep_per_srq;   /**< EPs an SRQ may serve (0 without SRQs) */
  DAT_COUNT max_rd_in;        /**< inbound RDMA Reads in flight per EP: the device's */
  DAT_COUNT max_rd_out;       /**< outbound RDMA Reads in flight per EP: the device's */
  DAT_COUNT max_iov;          /**< segments of a Send or receive: the device's */
  DAT_COUNT max_read_iov;     /**< segments of an RDMA Read's sink: the device's */
  DAT_COUNT max_write_iov;    /**< segments of an RDMA Write: the device's */
  char mtu[16];               /**< DAT_IB_TRANSPORT_MTU's value, decimal */
  gboolean atomics;           /**< it_ia_info_t::atomic_support: EPs take atomics, LMRs may allow them */
  gboolean immediate;         /**< the device has immediate data (RNIC-PI capability "immediate-data") */
  gboolean ud;                /**< it_ia_info_t::supported_service_types has IT_UD_SERVICE (DAT's IB UD extension) */
  size_t ud_req_pdata_len;    /**< it_ia_info_t::ud_req_private_data_len */
  size_t ud_rep_pdata_len;    /**< it_ia_info_t::ud_rep_private_data_len */
  size_t max_ud_send_len;     /**< spigot 0's largest datagram */
  gint ud_clamp_said;         /**< a datagram EP's max_message_size was cut to max_ud_send_len, said once (atomic) */
  gint ud_eps;                /**< its datagram EPs (atomic): send completions are checked for them only then */
  it_evd_handle_t ud_reply_evd; /**< the service replies of its datagram EPs' connects (made at the first), under @c lock */
  GThread *ud_thread;         /**< takes them from @c ud_reply_evd (datx_ud_connect), or NULL */
  gint ud_closing;            /**< set by the IA's close: the thread ends */
  gint imm_pending;           /**< its EPs' signaled RDMA Writes with immediate data not yet completed (datx_ep_t::imm_pending summed; may stay above when an EP is freed with some) */
  DAT_NAMED_ATTR pattrs[10];   /**< provider-specific attributes (DAT_IB_RDMA_READ, DAT_IB_TRANSPORT_MTU, ...) */
  guint npattrs;              /**< entries of @c pattrs in use */
};

typedef struct datx_ep datx_ep_t;

/** @brief A protection zone. */
typedef struct {
  datx_cell_t *cell; /**< its handle */
  datx_ia_t *ia;     /**< its adapter */
  it_pz_handle_t it; /**< the IT-API zone */
} datx_pz_t;

/** @brief The IT-API streams a DAT EVD may serve, one IT-API dispatcher each. */
enum { DATX_S_DTO, DATX_S_CR, DATX_S_CONN, DATX_S_ASYNC, DATX_S_SW, DATX_S_COUNT };

/** @brief An event dispatcher: one IT-API SEVD per stream, behind an AEVD when several. */
struct datx_evd {
  datx_cell_t *cell;                 /**< its handle */
  datx_ia_t *ia;                     /**< its adapter */
  DAT_EVD_FLAGS flags;               /**< the streams asked for */
  DAT_COUNT qlen;                    /**< queue length the consumer asked for (dat_evd_resize): atomic */
  DAT_COUNT capacity;                /**< queue length of each IT-API dispatcher, fixed at creation */
  it_evd_handle_t sevd[DATX_S_COUNT]; /**< per stream, or IT_NULL_HANDLE */
  it_evd_handle_t aevd;              /**< the aggregate when several streams, else IT_NULL_HANDLE */
  it_evd_handle_t waitable;          /**< what wait and dequeue use: the aggregate or the one SEVD */
  datx_cno_t *cno;                   /**< the CNO it notifies, or NULL (@c cno_lock) */
  GMutex cno_lock;                   /**< guards @c cno; taken before a CNO's lock */
  int fd;                            /**< @c waitable's descriptor once it has had a CNO, else -1 (atomic) */
  GMutex held_lock;                  /**< guards @c held */
  GQueue held;                       /**< translated events taken while waiting for a threshold (DAT_EVENT *), oldest first */
  gint nheld;                        /**< entries of @c held, set under @c held_lock: read without it first (atomic) */
  datx_cell_t *last_ep;              /**< the EP the last completion translated named: the cell whose
                                          datx_cell_it() is that IT-API endpoint (atomic) */
  guint state;                       /**< a DAT_EVD_STATE: enabled/disabled, waitable/unwaitable; atomic */
  gint waiting;                      /**< a thread is in dat_evd_wait: atomic */
};

/** @brief A consumer notification object: the descriptors of the EVDs attached to it. */
struct datx_cno {
  datx_cell_t *cell;              /**< its handle */
  datx_ia_t *ia;                  /**< its adapter */
  DAT_OS_WAIT_PROXY_AGENT agent;  /**< as given (kept for dat_cno_query) */
  GMutex lock;                    /**< guards @c evds */
  GPtrArray *evds;                /**< the EVDs attached (datx_evd_t *) */
  int epfd;                       /**< edge-triggered epoll set of the EVDs' descriptors */
  int wake;                       /**< eventfd in @c epfd, level-triggered: written when the IA closes */
  int gone;                       /**< eventfd in @c epfd, level-triggered: written when its last EVD left */
  gint waiters;                   /**< threads in dat_cno_wait */
};

/** @brief A shared receive queue. */
typedef struct {
  datx_cell_t *cell;     /**< its handle */
  datx_ia_t *ia;         /**< its adapter */
  datx_pz_t *pz;         /**< its zone (its EPs' zone too: IT-API wants the same) */
  it_srq_handle_t it;    /**< the IT-API queue */
} datx_srq_t;

/** @brief An endpoint. */
struct datx_ep {
  datx_cell_t *cell;            /**< its handle */
  datx_ia_t *ia;                /**< its adapter */
  datx_pz_t *pz;                /**< its zone (NULL: made by the provider, not configured yet) */
  datx_evd_t *recv_evd, *req_evd, *conn_evd; /**< its dispatchers (NULL when none) */
  datx_srq_t *srq;              /**< the SRQ it receives through, or NULL */
  it_ep_handle_t it;            /**< the IT-API endpoint (IT_NULL_HANDLE: made by the provider, not configured yet) */
  gboolean ud;                  /**< a datagram EP (DAT_IB_SERVICE_TYPE_UD): an IT-API UD endpoint */
  uint32_t ud_id;               /**< a datagram EP's identifier (the IB QPN) */
  GPtrArray *ud_reqs;           /**< a datagram EP's service requests awaiting their reply (datx_ud_req_t), under @c lock */
  GPtrArray *ud_ahs;            /**< cells of the AHs its UD events gave, freed with it (as DAPL's), under @c lock */
  GPtrArray *ud_cms;            /**< private data of its active UD events until dat_ib_ud_cm_free (DAPL's CM objects), under @c lock */
  it_evd_handle_t own_dto;      /**< private DTO dispatcher for a NULL DAT EVD, or IT_NULL_HANDLE */
  it_evd_handle_t own_conn;     /**< private connection dispatcher for a NULL DAT EVD, or IT_NULL_HANDLE */
  DAT_EP_ATTR attr;             /**< attributes as granted */
  struct sockaddr_in remote;    /**< the peer, once connecting or accepted */
  DAT_CONN_QUAL local_qual;     /**< PSP's qualifier on the passive side */
  DAT_CONN_QUAL remote_qual;    /**< qualifier connected to on the active side */
  gboolean active;              /**< it connected (rather than accepted) */
  unsigned char pdata[IT_MAX_PRIV_DATA]; /**< private data of the last connection event */
  GMutex lock;                  /**< guards @c imm_cookies, @c early_recvs and @c swallow */
  GArray *imm_cookies;          /**< cookies of its signaled RDMA Writes with immediate data not yet completed (NULL: none yet) */
  gint imm_pending;             /**< entries of @c imm_cookies: read without the lock first */
  /* The connect being made, tried again while nobody listens yet
   * (datx_ep_connect_retry). */
  it_path_t conn_path;          /**< its path */
  it_conn_qual_t conn_qual;     /**< its qualifier */
  unsigned char conn_pdata[IT_MAX_PRIV_DATA]; /**< its private data */
  size_t conn_pdata_len;        /**< bytes of @c conn_pdata */
  gint64 conn_deadline;         /**< monotonic time (µs) until which it is tried again; 0: not */
  guint conn_tries;             /**< tries made after the first */
  gint established;             /**< a connection was established since the EP was made or reset */
  GPtrArray *early_recvs;       /**< receives posted before that (datx_early_recv_t), posted again on a retry */
  GArray *swallow;              /**< cookies of receives a failed try flushed, which the consumer posted once */
  gint nswallow;                /**< entries of @c swallow: read without the lock first */
  gint recv_posted;             /**< receives posted and not yet completed to the consumer (an RC EP without an SRQ): atomic */
};

/** @brief A receive posted on an EP before its connection was established. */
typedef struct {
  uint64_t cookie;              /**< its cookie */
  size_t n;                     /**< its segments */
  it_lmr_triplet_t seg[];       /**< the segments */
} datx_early_recv_t;

/** @brief A local memory region. */
typedef struct {
  datx_cell_t *cell;         /**< its handle; cell id is the lmr_context */
  datx_ia_t *ia;             /**< its adapter */
  datx_pz_t *pz;             /**< its zone */
  it_lmr_handle_t it;        /**< the IT-API region */
  DAT_REGION_DESCRIPTION region; /**< as given */
  DAT_MEM_TYPE mem_type;     /**< DAT_MEM_TYPE_VIRTUAL, DAT_MEM_TYPE_SHARED_VIRTUAL or DAT_MEM_TYPE_LMR */
  void *addr;                /**< its start in this process (for_va, the shared memory's address, or the other LMR's) */
  DAT_VLEN length;           /**< as given (the other LMR's for DAT_MEM_TYPE_LMR) */
  DAT_MEM_PRIV_FLAGS privs;  /**< as given */
  DAT_RMR_CONTEXT rmr_context; /**< the IT-API context, 32 bits */
} datx_lmr_t;

/** @brief Binds of one RMR whose consumer cookies are kept until their completion. */
#define DATX_RMR_BINDS 16

/** @brief A remote memory region (a memory window). */
typedef struct {
  datx_cell_t *cell;         /**< its handle; its number is in the IT-API cookie of its binds */
  datx_ia_t *ia;             /**< its adapter */
  datx_pz_t *pz;             /**< its zone */
  it_rmr_handle_t it;        /**< the IT-API region (its consumer context is @c cell) */
  DAT_RMR_SCOPE scope;       /**< DAT_RMR_SCOPE_PZ (wide) or DAT_RMR_SCOPE_EP (narrow) */
  GMutex lock;               /**< guards the five below */
  uint32_t seq;              /**< number of the last bind or unbind posted */
  struct {
    uint32_t seq;            /**< the bind's number (0: none) */
    DAT_RMR_COOKIE cookie;   /**< the consumer's cookie of it */
  } binds[DATX_RMR_BINDS];   /**< the consumer's cookies of the last binds, by number */
  DAT_LMR_TRIPLET triplet;   /**< the range of the last bind */
  DAT_MEM_PRIV_FLAGS privs;  /**< the privileges of the last bind */
  DAT_RMR_CONTEXT context;   /**< the context of the last bind (IT-API's, 32 bits) */
} datx_rmr_t;

/** @brief A public, reserved or common service point: an IT-API listen point. */
typedef struct {
  datx_cell_t *cell;       /**< its handle (a PSP's or an RSP's) */
  datx_ia_t *ia;           /**< its adapter */
  datx_evd_t *evd;         /**< the CR EVD */
  DAT_CONN_QUAL qual;      /**< the connection qualifier (an IANA port) */
  DAT_PSP_FLAGS flags;     /**< as given (a PSP) */
  datx_cell_t *ep;         /**< an RSP's endpoint, NULL for a PSP */
  gboolean served;         /**< an RSP that took its one request, under the adapter's lock */
  it_listen_handle_t it;   /**< the IT-API listen point */
  DAT_COMM comm;           /**< a CSP's communicator, as given */
  struct sockaddr_in csp_addr; /**< a CSP's address, as given */
} datx_psp_t;

/** @brief A connection request, from its CR event until accepted or rejected. */
typedef struct {
  datx_cell_t *cell;          /**< its handle */
  datx_ia_t *ia;              /**< its adapter */
  DAT_CONN_QUAL qual;         /**< the qualifier it asked for */
  datx_cell_t *local_ep;      /**< the RSP's endpoint it came to, the EP the provider made for it (a PSP with DAT_PSP_PROVIDER_FLAG), or NULL */
  gboolean provider_ep;       /**< @c local_ep was made by the provider: freed unless accepted on */
  it_cn_est_identifier_t cn_est_id; /**< IT-API's identifier of it */
  struct sockaddr_in remote;  /**< the requester */
  unsigned char pdata[IT_MAX_PRIV_DATA]; /**< its private data (writable by the consumer) */
  size_t pdata_size;          /**< bytes of @c pdata reported (IT-API delivers no length: the limit) */
  gboolean ud;                /**< a datagram service request (DAT_IB_UD_CONNECTION_REQUEST_EVENT) */
  it_ud_svc_req_identifier_t ud_svc_req_id; /**< IT-API's identifier of a datagram request */
  uint32_t ud_qpn;            /**< the requesting datagram EP's identifier */
} datx_cr_t;

/** @brief A datagram address handle (DAT_IB_ADDR_HANDLE::ah): an IT-API one. */
typedef struct {
  datx_cell_t *cell;          /**< its handle, what DAT_IB_ADDR_HANDLE::ah holds */
  datx_ia_t *ia;              /**< its adapter */
  datx_pz_t *pz;              /**< its zone (used: the zone's free is refused while it lives) */
  datx_ep_t *ep;              /**< the EP whose event gave it, which frees it when freed */
  it_addr_handle_t it;        /**< the IT-API address handle */
} datx_ah_t;

/** @brief An IT-API event with no DAT counterpart, dropped by the translation. */
#define DATX_DROPPED ((DAT_RETURN) 1)

/* dat_handle.c */
/**
 * @brief Makes a live cell for @p object of @p type, listed on @p ia's children.
 * @param provider the provider the handle dispatches to
 * @param type a ::datx_type_t
 * @param object the object behind the handle
 * @param ia the adapter whose close frees it, or NULL (the adapter itself)
 * @return the cell, or NULL when out of cells
 */
datx_cell_t *datx_cell_new(DAT_PROVIDER *provider, datx_type_t type, void *object, datx_ia_t *ia);
/**
 * @brief Makes @p cell a tombstone: refused from now on, never reused.
 * @param cell a live cell
 * @param ia the adapter whose children list holds it, or NULL
 */
void datx_cell_kill(datx_cell_t *cell, datx_ia_t *ia);
/* The chunks of cells (dat_handle.c), read by the lookups below with no
 * lock: a chunk's address is published before the count that makes it
 * visible. */
#define DATX_CHUNK_CELLS 4096u
extern datx_cell_t *datx_chunks[];
extern guint datx_nchunks;

/**
 * @brief The cell @p handle is, if it lies inside a published chunk on a
 *        cell boundary: anything else is refused before its bytes are read
 *        (libdat2 itself has read its first word, the provider, to reach us).
 * @param handle what the consumer passed
 * @return the cell, live or dead, or NULL
 */
static inline datx_cell_t *
datx_cell_find(DAT_HANDLE handle)
{
  if (handle == NULL)
    return NULL;
  uintptr_t p = (uintptr_t) handle;
  guint n = __atomic_load_n(&datx_nchunks, __ATOMIC_ACQUIRE);
  for (guint i = n; i-- > 0;) {
    uintptr_t base = (uintptr_t) datx_chunks[i];
    if (p - base < DATX_CHUNK_CELLS * sizeof(datx_cell_t))
      return (p - base) % sizeof(datx_cell_t) == 0 ? (datx_cell_t *) handle : NULL;
  }
  return NULL;
}
/**
 * @brief The live cell of @p handle and @p type, without a hold: for the
 *        data path, which reads the cell's own fields (datx_cell_it(),
 *        datx_cell_t::ia) and never its object.
 *
 * A cell outlives its object (it is never freed), so reading it is safe
 * whatever races; the object may be freed at any moment.  The IT-API
 * handle the cell gives is then refused by IT-API (its handles are
 * generation-checked and never name another object), so a post through it
 * fails, and the caller makes it again with holds to say why.
 *
 * @param handle what the consumer passed
 * @param type the ::datx_type_t expected
 * @return the cell, or NULL for a NULL, foreign, freed or other-typed handle
 */
static inline datx_cell_t *
datx_cell_peek(DAT_HANDLE handle, datx_type_t type)
{
  datx_cell_t *cell = datx_cell_find(handle);
  if (cell == NULL || (guint) __atomic_load_n(&cell->magic, __ATOMIC_ACQUIRE) != DATX_MAGIC_LIVE ||
      cell->type != (uint32_t) type)
    return NULL;
  return cell;
}
/**
 * @brief datx_cell_peek() of the cell of number @p id (an lmr_context).
 * @param id a cell number (datx_cell_t::id)
 * @param type the type it must have
 * @return the live cell, not held, or NULL
 */
static inline datx_cell_t *
datx_cell_peek_id(uint32_t id, datx_type_t type)
{
  guint chunk = id / DATX_CHUNK_CELLS;
  if (chunk >= __atomic_load_n(&datx_nchunks, __ATOMIC_ACQUIRE))
    return NULL;
  datx_cell_t *cell = &datx_chunks[chunk][id % DATX_CHUNK_CELLS];
  if ((guint) __atomic_load_n(&cell->magic, __ATOMIC_ACQUIRE) != DATX_MAGIC_LIVE ||
      cell->type != (uint32_t) type)
    return NULL;
  return cell;
}
/*
 * Read sections of dat_evd_dequeue (util/rsec.h): a poller's dequeue
 * reads its EVD, and the EVD's adapter, without a hold, inside a section;
 * whatever frees a datx_evd_t first kills its cell, then waits for the
 * sections open at that moment to end (rsec_sync()), and only then tears
 * the object down.  A section is a plain store on entry and on exit,
 * where a hold and a put were two locked instructions.
 */
/**
 * @brief Sets the IT-API handle the data path finds in @p cell (datx_cell_t::it).
 * @param cell an EP's or an LMR's cell
 * @param it the IT-API endpoint or region, or 0 once freed
 */
static inline void
datx_cell_set_it(datx_cell_t *cell, uint64_t it)
{
  __atomic_store_n(&cell->it, it, __ATOMIC_RELEASE);
}
/**
 * @brief The IT-API handle of @p cell's object (datx_cell_t::it), 0 when none.
 * @param cell a cell found by datx_cell_peek()
 * @return the handle, or 0
 */
static inline uint64_t
datx_cell_it(const datx_cell_t *cell)
{
  return __atomic_load_n(&cell->it, __ATOMIC_ACQUIRE);
}
/* A cell's `hold` word: the number of calls inside the object (low 32
 * bits), the number of objects that use it (an EP its PZ: the next 31
 * bits), with DATX_HOLD_DEAD set once the handle is killed.  One word, so
 * that a hold or a use (an increment of a word without the bit) and a
 * retire (setting the bit on a word without users, or without holds
 * either) exclude each other with no lock: a hold or a use sees a live cell
 * and counts itself, or sees the tombstone; a retire sees the count, or
 * makes every later one fail.  Every call takes and drops a hold, so a lock
 * here would be taken four times by a one-segment post. */
#define DATX_HOLD_DEAD (G_GUINT64_CONSTANT(1) << 63)
#define DATX_HOLD_ONE G_GUINT64_CONSTANT(1)
#define DATX_HOLD_CALLS G_GUINT64_CONSTANT(0xffffffff)
#define DATX_HOLD_USER (G_GUINT64_CONSTANT(1) << 32)
#define DATX_HOLD_USERS (~DATX_HOLD_DEAD & ~DATX_HOLD_CALLS)

/**
 * @brief The object behind a handle, after checking it is one of ours, live and of @p type.
 * @param handle what the consumer passed
 * @param type the ::datx_type_t expected
 * @return the object, or NULL for a NULL, foreign, freed or other-typed handle
 */
void *datx_cell_get(DAT_HANDLE handle, datx_type_t type);
/**
 * @brief Takes a reference on a live handle of @p type for the length of a call.
 *
 * While a call holds its object, the object's free is refused as in use
 * (datx_cell_retire()), so a thread blocked in dat_evd_wait or
 * dat_cno_wait never finds its object freed under it.
 *
 * @param handle what the consumer passed
 * @param type the ::datx_type_t expected
 * @return the cell, or NULL for a NULL, foreign, freed or other-typed handle
 */
static inline datx_cell_t *
datx_cell_hold(DAT_HANDLE handle, datx_type_t type)
{
  /* A cell not yet published (magic) has a hold word of 0 too. */
  datx_cell_t *cell = datx_cell_peek(handle, type);
  if (cell == NULL)
    return NULL;
  guint64 v = __atomic_load_n(&cell->hold, __ATOMIC_ACQUIRE);
  do {
    if (v & DATX_HOLD_DEAD)
      return NULL;
  } while (!__atomic_compare_exchange_n(&cell->hold, &v, v + DATX_HOLD_ONE, TRUE, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED));
  return cell;
}
/**
 * @brief What datx_cell_put() does when it dropped the last hold of a killed
 *        cell (or found no hold to drop): wakes the free waiting for it.
 * @param cell the cell
 * @param was its hold word before the drop
 */
void datx_cell_put_dead(datx_cell_t *cell, guint64 was);
/**
 * @brief Drops a reference taken by datx_cell_hold().
 * @param cell the cell held
 */
static inline void
datx_cell_put(datx_cell_t *cell)
{
  guint64 was = __atomic_fetch_sub(&cell->hold, DATX_HOLD_ONE, __ATOMIC_RELEASE);
  if (G_UNLIKELY((was & DATX_HOLD_DEAD) || (was & DATX_HOLD_CALLS) == 0))
    datx_cell_put_dead(cell, was);
}
/**
 * @brief Returns @p call's status with @p handle's object held while it
 * runs (the object's free waits for it, or refuses as in use); @p call
 * looks the handle up itself and refuses a dead one.
 */
#define DATX_RETURN_HELD(handle, type, call)                                                    \
  do {                                                                                          \
    datx_cell_t *held_ = datx_cell_hold((handle), (type));                                      \
    DAT_RETURN ret_ = (call);                                                                   \
    if (held_ != NULL)                                                                          \
      datx_cell_put(held_);                                                                     \
    return ret_;                                                                                \
  } while (0)
/**
 * @brief Counts an object that keeps @p handle's object (an EP its PZ) as
 *        its user, atomically with the frees: datx_cell_retire() and
 *        datx_cell_retire_wait() refuse a cell with users.
 *
 * No hold is needed to read the object afterwards: a user keeps it until
 * datx_cell_unuse().
 *
 * @param handle what the consumer passed
 * @param type the ::datx_type_t expected
 * @return the object, or NULL for a NULL, foreign, freed or other-typed handle
 */
void *datx_cell_use(DAT_HANDLE handle, datx_type_t type);
/**
 * @brief Drops a use taken by datx_cell_use().
 * @param cell the cell used
 */
void datx_cell_unuse(datx_cell_t *cell);
/** @brief What datx_cell_retire() found. */
typedef enum {
  DATX_RETIRED, /**< the handle is dead now: the caller frees the object */
  DATX_BUSY,    /**< a call holds it, or an object uses it: the free is refused as in use */
  DATX_GONE,    /**< another thread retired it first: an invalid handle */
} datx_retire_t;
/**
 * @brief Kills @p cell's handle unless a call holds it or an object uses it,
 *        atomically with datx_cell_hold() and datx_cell_use().
 *
 * The one thread that gets ::DATX_RETIRED owns the object's teardown; it
 * still calls datx_cell_kill() to take the cell off its adapter's list.
 *
 * @param cell a cell found by datx_cell_get()
 * @return ::DATX_RETIRED, ::DATX_BUSY or ::DATX_GONE
 */
datx_retire_t datx_cell_retire(datx_cell_t *cell);
/**
 * @brief Kills @p cell's handle unless an object uses it, then waits until
 *        no call holds it.
 *
 * For objects whose holders are short (an event being translated names an
 * EP or a PSP): the free waits them out rather than failing.
 *
 * @param cell a cell found by datx_cell_get()
 * @return ::DATX_RETIRED, ::DATX_BUSY when an object uses it (datx_cell_use()),
 *         or ::DATX_GONE when another thread retired it first
 */
datx_retire_t datx_cell_retire_wait(datx_cell_t *cell);
/**
 * @brief Kills @p cell's handle whatever uses it, then waits until no call
 *        holds it: an adapter's abrupt close, which forgets the users too.
 * @param cell a cell on the adapter's list
 * @return ::DATX_RETIRED, or ::DATX_GONE when another thread retired it first
 */
datx_retire_t datx_cell_retire_close(datx_cell_t *cell);
/**
 * @brief Makes a cell retired by datx_cell_retire_wait() live again, when the free is refused.
 * @param cell the cell, dead and not freed
 */
void datx_cell_revive(datx_cell_t *cell);
/**
 * @brief Holds the live cell of number @p id and type @p type (datx_cell_put() after).
 * @param id a cell number (datx_cell_t::id)
 * @param type the type it must have
 * @return the cell, held, or NULL
 */
datx_cell_t *datx_cell_hold_id(uint32_t id, datx_type_t type);
/**
 * @brief Holds the LMR whose lmr_context is @p context (datx_cell_put() after).
 * @param context an lmr_context returned by dat_lmr_create
 * @return the live LMR's cell, held, or NULL
 */
datx_cell_t *datx_lmr_hold_context(DAT_LMR_CONTEXT context);
/**
 * @brief The type of a live handle of ours.
 * @param handle what the consumer passed
 * @return its ::datx_type_t, or 0
 */
datx_type_t datx_cell_type(DAT_HANDLE handle);

/* dat_status.c */
/**
 * @brief The DAT status for an IT-API status.
 * @param st the IT-API status
 * @param handle_subtype the DAT_INVALID_HANDLE subtype for an invalid handle of the call's object
 * @return the DAT status
 */
DAT_RETURN datx_status(it_status_t st, DAT_RETURN_SUBTYPE handle_subtype);
/**
 * @brief The DAT completion status of an IT-API DTO status.
 * @param st the IT-API DTO status
 * @return the DAT DTO status
 */
DAT_DTO_COMPLETION_STATUS datx_dto_status(it_dto_status_t st);

/* dat_provider.c */
/**
 * @brief Fills @p p's function table: every entry set, the missing ones to stubs
 *        returning DAT_NOT_IMPLEMENTED.
 * @param p the provider table to fill
 */
void datx_provider_fill(DAT_PROVIDER *p);
/**
 * @brief The provider registered under @p ia_name.
 * @param ia_name a DAT IA name from dat.conf
 * @return the provider, or NULL
 */
datx_provider_t *datx_provider_find(const char *ia_name);

/* The DAT_PROVIDER entries, by object. */
/* dat_ia.c */
/** @brief DAT_PROVIDER::ia_open_func (dat_ia_open). */
DAT_RETURN datx_ia_open(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE *async_evd,
                        DAT_IA_HANDLE *ia_handle);
/** @brief DAT_PROVIDER::ia_query_func (dat_ia_query). */
DAT_RETURN datx_ia_query(DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
                         DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK pr_mask,
                         DAT_PROVIDER_ATTR *pr_attr);
/** @brief DAT_PROVIDER::ia_close_func (dat_ia_close). */
DAT_RETURN datx_ia_close(DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS flags);
/**
 * @brief DAT_PROVIDER::ia_ha_related_func (dat_ia_ha_related).
 *
 * No IA of this provider is HA-related to any other, nor to itself
 * (ha_supported is false): the answer is DAT_FALSE for every name.
 *
 * @param ia_handle the IA
 * @param name the IA name asked about
 * @param[out] answer DAT_FALSE
 * @retval DAT_SUCCESS the answer is set
 * @retval DAT_INVALID_HANDLE @p ia_handle is not a live IA
 * @retval DAT_INVALID_PARAMETER @p name or @p answer is NULL
 */
DAT_RETURN datx_ia_ha_related(DAT_IA_HANDLE ia_handle, const DAT_NAME_PTR name, DAT_BOOLEAN *answer);
/** @brief DAT_PROVIDER::pz_create_func (dat_pz_create). */
DAT_RETURN datx_pz_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE *pz_handle);
/** @brief DAT_PROVIDER::pz_query_func (dat_pz_query). */
DAT_RETURN datx_pz_query(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param);
/** @brief DAT_PROVIDER::pz_free_func (dat_pz_free). */
DAT_RETURN datx_pz_free(DAT_PZ_HANDLE pz_handle);
/** @brief DAT_PROVIDER::set_consumer_context_func (dat_set_consumer_context). */
DAT_RETURN datx_set_consumer_context(DAT_HANDLE handle, DAT_CONTEXT context);
/** @brief DAT_PROVIDER::get_consumer_context_func (dat_get_consumer_context). */
DAT_RETURN datx_get_consumer_context(DAT_HANDLE handle, DAT_CONTEXT *context);
/** @brief DAT_PROVIDER::get_handle_type_func (dat_get_handle_type). */
DAT_RETURN datx_get_handle_type(DAT_HANDLE handle, DAT_HANDLE_TYPE *type);

/* dat_lmr.c */
/**
 * @brief DAT_PROVIDER::lmr_create_func (dat_lmr_create): virtual and shared
 *        virtual memory, and another LMR's memory (DAT_MEM_TYPE_LMR:
 *        registered anew, with keys of its own; the length is the other
 *        LMR's), on it_lmr_create.  Another memory type is
 *        DAT_MODEL_NOT_SUPPORTED; an LMR of another IA, or not an LMR,
 *        DAT_INVALID_HANDLE with DAT_INVALID_HANDLE_LMR.
 */
DAT_RETURN datx_lmr_create(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                           DAT_VLEN length, DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privs,
                           DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_handle,
                           DAT_LMR_CONTEXT *lmr_context, DAT_RMR_CONTEXT *rmr_context,
                           DAT_VLEN *registered_length, DAT_VADDR *registered_address);
/** @brief DAT_PROVIDER::lmr_query_func (dat_lmr_query). */
DAT_RETURN datx_lmr_query(DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param);
/** @brief DAT_PROVIDER::lmr_free_func (dat_lmr_free). */
DAT_RETURN datx_lmr_free(DAT_LMR_HANDLE lmr_handle);
/** @brief DAT_PROVIDER::lmr_sync_rdma_read_func (dat_lmr_sync_rdma_read: coherent memory, the triplets checked). */
DAT_RETURN datx_lmr_sync_rdma_read(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *iov, DAT_VLEN n);
/** @brief DAT_PROVIDER::lmr_sync_rdma_write_func (dat_lmr_sync_rdma_write: coherent memory, the triplets checked). */
DAT_RETURN datx_lmr_sync_rdma_write(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *iov, DAT_VLEN n);

/* dat_rmr.c */
/** @brief DAT_PROVIDER::rmr_create_func (dat_rmr_create: a wide IT-API RMR). */
DAT_RETURN datx_rmr_create(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE *rmr_handle);
/** @brief DAT_PROVIDER::rmr_create_for_ep_func (dat_rmr_create_for_ep: a narrow IT-API RMR). */
DAT_RETURN datx_rmr_create_for_ep(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE *rmr_handle);
/** @brief DAT_PROVIDER::rmr_query_func (dat_rmr_query). */
DAT_RETURN datx_rmr_query(DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param);
/** @brief DAT_PROVIDER::rmr_bind_func (dat_rmr_bind: it_rmr_link, or it_rmr_unlink for a zero-length triplet). */
DAT_RETURN datx_rmr_bind(DAT_RMR_HANDLE rmr_handle, DAT_LMR_HANDLE lmr_handle,
                         const DAT_LMR_TRIPLET *triplet, DAT_MEM_PRIV_FLAGS privs,
                         DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_handle, DAT_RMR_COOKIE cookie,
                         DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *rmr_context);
/** @brief DAT_PROVIDER::rmr_free_func (dat_rmr_free). */
DAT_RETURN datx_rmr_free(DAT_RMR_HANDLE rmr_handle);
/** @brief DAT_PROVIDER::ep_post_send_with_invalidate_func (it_post_send_and_unlink). */
DAT_RETURN datx_ep_post_send_with_invalidate(DAT_EP_HANDLE ep_handle, DAT_COUNT n,
                                             DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                                             DAT_COMPLETION_FLAGS flags, DAT_BOOLEAN invalidate,
                                             DAT_RMR_CONTEXT context);
/** @brief DAT_PROVIDER::ep_post_rdma_read_to_rmr_func (it_post_rdma_read_to_rmr). */
DAT_RETURN datx_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep_handle, const DAT_RMR_TRIPLET *local,
                                         DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                         DAT_COMPLETION_FLAGS flags);
/**
 * @brief Translates the completion of an RMR bind or unbind (::IT_RMR_LINK_CMPL_EVENT).
 * @param in the IT-API completion, its cookie the RMR's cell
 * @param[out] out DAT_RMR_BIND_COMPLETION_EVENT naming the RMR and the consumer's cookie
 * @return DAT_SUCCESS
 */
DAT_RETURN datx_rmr_translate_bind(const it_dto_cmpl_event_t *in, DAT_EVENT *out);
/**
 * @brief The rmr_context of the RMR a peer's Send with Invalidate unlinked.
 * @param unlinked it_dto_cmpl_event_t::unlinked_mr_handle of a receive
 * @param[out] context its context, set only on success
 * @return TRUE when @p unlinked is a live RMR of ours
 */
gboolean datx_rmr_context_of(it_handle_t unlinked, DAT_RMR_CONTEXT *context);

/* dat_evd.c */
/** @brief DAT_PROVIDER::evd_create_func (dat_evd_create). */
DAT_RETURN datx_evd_create(DAT_IA_HANDLE ia_handle, DAT_COUNT qlen, DAT_CNO_HANDLE cno,
                           DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd_handle);
/** @brief DAT_PROVIDER::evd_query_func (dat_evd_query). */
DAT_RETURN datx_evd_query(DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param);
/** @brief DAT_PROVIDER::evd_free_func (dat_evd_free). */
DAT_RETURN datx_evd_free(DAT_EVD_HANDLE evd_handle);
/** @brief DAT_PROVIDER::evd_wait_func (dat_evd_wait). */
DAT_RETURN datx_evd_wait(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                         DAT_EVENT *event, DAT_COUNT *nmore);
/** @brief DAT_PROVIDER::evd_dequeue_func (dat_evd_dequeue). */
DAT_RETURN datx_evd_dequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT *event);
/** @brief DAT_PROVIDER::evd_post_se_func (dat_evd_post_se). */
DAT_RETURN datx_evd_post_se(DAT_EVD_HANDLE evd_handle, const DAT_EVENT *event);
/** @brief DAT_PROVIDER::evd_modify_cno_func (dat_evd_modify_cno). */
DAT_RETURN datx_evd_modify_cno(DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle);
/** @brief DAT_PROVIDER::evd_enable_func (dat_evd_enable). */
DAT_RETURN datx_evd_enable(DAT_EVD_HANDLE evd_handle);
/** @brief DAT_PROVIDER::evd_disable_func (dat_evd_disable). */
DAT_RETURN datx_evd_disable(DAT_EVD_HANDLE evd_handle);
/**
 * @brief DAT_PROVIDER::evd_resize_func (dat_evd_resize).
 *
 * IT-API cannot change a dispatcher's queue size: the EVD's queue length
 * may shrink, and grow back up to what it was created with.  The events
 * waiting in IT-API are taken (translated and held, oldest first, as
 * dat_evd_wait holds them) to be counted.
 *
 * @param evd_handle the EVD
 * @param qlen the new queue length
 * @retval DAT_SUCCESS the EVD's queue length is @p qlen
 * @retval DAT_INVALID_HANDLE @p evd_handle is not a live EVD
 * @retval DAT_INVALID_PARAMETER @p qlen is not positive (DAT_INVALID_ARG2)
 * @retval DAT_INVALID_STATE more than @p qlen events are queued
 * @retval DAT_INSUFFICIENT_RESOURCES @p qlen exceeds the queue length the EVD
 *         was created with (DAT_RESOURCE_TEVD)
 */
DAT_RETURN datx_evd_resize(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen);
/**
 * @brief DAT_PROVIDER::evd_set_unwaitable_func (dat_evd_set_unwaitable).
 *
 * dat_evd_wait on the EVD returns DAT_INVALID_STATE with
 * DAT_INVALID_STATE_EVD_UNWAITABLE from now on, a thread already waiting
 * within ::DATX_WAIT_SLICE_US; events still arrive, notify the CNO and
 * are dequeued.
 *
 * @param evd_handle the EVD
 * @retval DAT_SUCCESS the EVD is unwaitable
 * @retval DAT_INVALID_HANDLE @p evd_handle is not a live EVD
 */
DAT_RETURN datx_evd_set_unwaitable(DAT_EVD_HANDLE evd_handle);
/**
 * @brief DAT_PROVIDER::evd_clear_unwaitable_func (dat_evd_clear_unwaitable).
 * @param evd_handle the EVD
 * @retval DAT_SUCCESS the EVD is waitable
 * @retval DAT_INVALID_HANDLE @p evd_handle is not a live EVD
 */
DAT_RETURN datx_evd_clear_unwaitable(DAT_EVD_HANDLE evd_handle);
/**
 * @brief The longest a thread in dat_evd_wait sleeps in IT-API at a time
 *        (µs): IT-API has no call that wakes a waiter, so the wait looks at
 *        dat_evd_set_unwaitable between sleeps.
 */
#define DATX_WAIT_SLICE_US 50000
/**
 * @brief Frees an EVD's IT-API dispatchers and its cell (adapter close).
 * @param evd the EVD
 */
void datx_evd_destroy(datx_evd_t *evd);

/* dat_cno.c */
/** @brief DAT_PROVIDER::cno_create_func (dat_cno_create). */
DAT_RETURN datx_cno_create(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent,
                           DAT_CNO_HANDLE *cno_handle);
/** @brief DAT_PROVIDER::cno_modify_agent_func (dat_cno_modify_agent). */
DAT_RETURN datx_cno_modify_agent(DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent);
/** @brief DAT_PROVIDER::cno_query_func (dat_cno_query). */
DAT_RETURN datx_cno_query(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param);
/** @brief DAT_PROVIDER::cno_fd_create_func (dat_cno_fd_create: the descriptor is the CNO's epoll set). */
DAT_RETURN datx_cno_fd_create(DAT_IA_HANDLE ia_handle, DAT_FD *fd, DAT_CNO_HANDLE *cno_handle);
/** @brief DAT_PROVIDER::cno_trigger_func (dat_cno_trigger: the EVD that triggered, without waiting). */
DAT_RETURN datx_cno_trigger(DAT_CNO_HANDLE cno_handle, DAT_EVD_HANDLE *evd_handle);
/** @brief DAT_PROVIDER::cno_free_func (dat_cno_free). */
DAT_RETURN datx_cno_free(DAT_CNO_HANDLE cno_handle);
/** @brief DAT_PROVIDER::cno_wait_func (dat_cno_wait). */
DAT_RETURN datx_cno_wait(DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_handle);
/**
 * @brief Wakes every thread in dat_cno_wait on @p cno for good (an abrupt IA close).
 * @param cno the CNO
 */
void datx_cno_wake_dead(datx_cno_t *cno);
/**
 * @brief Frees a CNO whose handle is dead and that no call holds.
 * @param cno the CNO
 */
void datx_cno_destroy(datx_cno_t *cno);
/**
 * @brief Attaches @p evd to @p cno, or detaches it from its CNO when @p cno is NULL.
 *
 * The EVD keeps the caller's use of @p cno (datx_cell_use()) and drops its
 * use of the CNO it leaves.
 *
 * @param evd the EVD (its @c fd set when @p cno is not NULL)
 * @param cno the CNO, used by the caller, or NULL
 */
void datx_cno_attach(datx_evd_t *evd, datx_cno_t *cno);
/**
 * @brief Whether @p evd holds events taken while waiting for a threshold.
 * @param evd the EVD
 * @return TRUE when dat_evd_dequeue would return a held event
 */
gboolean datx_evd_has_held(datx_evd_t *evd);

/* dat_ep.c */
/** @brief DAT_PROVIDER::ep_create_func (dat_ep_create). */
DAT_RETURN datx_ep_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                          DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd, const DAT_EP_ATTR *attr,
                          DAT_EP_HANDLE *ep_handle);
/** @brief DAT_PROVIDER::ep_query_func (dat_ep_query). */
DAT_RETURN datx_ep_query(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param);
/** @brief DAT_PROVIDER::ep_modify_func (dat_ep_modify). */
DAT_RETURN datx_ep_modify(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param);
/** @brief DAT_PROVIDER::ep_reset_func (dat_ep_reset). */
DAT_RETURN datx_ep_reset(DAT_EP_HANDLE ep_handle);
/** @brief DAT_PROVIDER::ep_free_func (dat_ep_free). */
DAT_RETURN datx_ep_free(DAT_EP_HANDLE ep_handle);
/** @brief DAT_PROVIDER::ep_get_status_func (dat_ep_get_status). */
DAT_RETURN datx_ep_get_status(DAT_EP_HANDLE ep_handle, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                              DAT_BOOLEAN *request_idle);

/**
 * @brief DAT_PROVIDER::ep_recv_query_func (dat_ep_recv_query).
 *
 * An EP without an SRQ has each receive posted to it allocated at the
 * post and consumed in order: both counts are the receives posted whose
 * completion the consumer has not yet dequeued.  An EP with an SRQ takes
 * buffers as messages arrive, which IT-API does not report: both are
 * DAT_VALUE_UNKNOWN.
 *
 * @param ep_handle the EP
 * @param[out] nbufs_allocated the receives at the EP not yet completed, or NULL
 * @param[out] bufs_alloc_span the span of those receives, or NULL
 * @retval DAT_SUCCESS the counts are set
 * @retval DAT_INVALID_HANDLE @p ep_handle is not a live EP
 */
DAT_RETURN datx_ep_recv_query(DAT_EP_HANDLE ep_handle, DAT_COUNT *nbufs_allocated,
                              DAT_COUNT *bufs_alloc_span);
/**
 * @brief DAT_PROVIDER::ep_set_watermark_func (dat_ep_set_watermark).
 *
 * IT-API tells neither when an EP takes a buffer from its SRQ nor lets a
 * consumer break a connection with a broken-connection event: only
 * DAT_WATERMARK_INFINITE (no event, the default) is taken, the soft one
 * kept in the EP's attributes (srq_soft_hw).
 *
 * @param ep_handle the EP
 * @param soft_high_watermark DAT_WATERMARK_INFINITE
 * @param hard_high_watermark DAT_WATERMARK_INFINITE
 * @retval DAT_SUCCESS both are DAT_WATERMARK_INFINITE
 * @retval DAT_INVALID_HANDLE @p ep_handle is not a live EP
 * @retval DAT_INVALID_PARAMETER a watermark is negative and not DAT_WATERMARK_INFINITE
 * @retval DAT_MODEL_NOT_SUPPORTED a watermark is finite
 */
DAT_RETURN datx_ep_set_watermark(DAT_EP_HANDLE ep_handle, DAT_COUNT soft_high_watermark,
                                 DAT_COUNT hard_high_watermark);

/**
 * @brief Makes the EP a PSP with DAT_PSP_PROVIDER_FLAG gives a request:
 *        default attributes, no zone, EVDs or IT-API endpoint until the
 *        consumer's dat_ep_modify names its zone (DAT 2.0
 *        DAT_EP_STATE_UNCONFIGURED_TENTATIVE until then).
 * @param ia the adapter
 * @return the EP's cell, or NULL when out of cells
 */
datx_cell_t *datx_ep_new_tentative(datx_ia_t *ia);

/**
 * @brief The IT-API attributes every service type shares, from the EP's
 *        DAT attributes: a max_message_size of 0 asks for @p max_payload,
 *        and a count of DTOs or segments below 1 is 1; the rest is zero,
 *        for the caller's service type to fill.
 * @param ep the EP being made: its IA and attributes set
 * @param max_payload the largest message of the EP's service type on its IA
 * @param[out] it_attr the attributes
 */
void datx_ep_it_attr_init(const datx_ep_t *ep, size_t max_payload, it_ep_attributes_t *it_attr);

/** @brief DAT_PROVIDER::ep_create_with_srq_func (dat_ep_create_with_srq). */
DAT_RETURN datx_ep_create_with_srq(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle,
                                   DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE req_evd,
                                   DAT_EVD_HANDLE conn_evd, DAT_SRQ_HANDLE srq_handle,
                                   const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_handle);

/* dat_srq.c */
/** @brief DAT_PROVIDER::srq_create_func (dat_srq_create). */
DAT_RETURN datx_srq_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR *attr,
                           DAT_SRQ_HANDLE *srq_handle);
/** @brief DAT_PROVIDER::srq_free_func (dat_srq_free). */
DAT_RETURN datx_srq_free(DAT_SRQ_HANDLE srq_handle);
/** @brief DAT_PROVIDER::srq_post_recv_func (dat_srq_post_recv). */
DAT_RETURN datx_srq_post_recv(DAT_SRQ_HANDLE srq_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                              DAT_DTO_COOKIE cookie);
/** @brief DAT_PROVIDER::srq_query_func (dat_srq_query). */
DAT_RETURN datx_srq_query(DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param);
/** @brief DAT_PROVIDER::srq_resize_func (dat_srq_resize). */
DAT_RETURN datx_srq_resize(DAT_SRQ_HANDLE srq_handle, DAT_COUNT max_recv_dtos);
/** @brief DAT_PROVIDER::srq_set_lw_func (dat_srq_set_lw). */
DAT_RETURN datx_srq_set_lw(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark);

/* dat_cm.c */
/** @brief DAT_PROVIDER::ep_connect_func (dat_ep_connect). */
DAT_RETURN datx_ep_connect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote, DAT_CONN_QUAL qual,
                           DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata,
                           DAT_QOS qos, DAT_CONNECT_FLAGS flags);
/** @brief DAT_PROVIDER::ep_dup_connect_func (dat_ep_dup_connect). */
DAT_RETURN datx_ep_dup_connect(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE dup_handle,
                               DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata,
                               DAT_QOS qos);
/** @brief DAT_PROVIDER::ep_disconnect_func (dat_ep_disconnect). */
DAT_RETURN datx_ep_disconnect(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags);
/** @brief DAT_PROVIDER::psp_create_func (dat_psp_create). */
DAT_RETURN datx_psp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_handle,
                           DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_handle);
/** @brief DAT_PROVIDER::psp_create_any_func (dat_psp_create_any). */
DAT_RETURN datx_psp_create_any(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd_handle,
                               DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_handle);
/** @brief DAT_PROVIDER::rsp_create_func (dat_rsp_create). */
DAT_RETURN datx_rsp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_handle,
                           DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE *rsp_handle);
/** @brief DAT_PROVIDER::rsp_query_func (dat_rsp_query). */
DAT_RETURN datx_rsp_query(DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param);
/** @brief DAT_PROVIDER::rsp_free_func (dat_rsp_free). */
DAT_RETURN datx_rsp_free(DAT_RSP_HANDLE rsp_handle);
/** @brief DAT_PROVIDER::psp_query_func (dat_psp_query). */
DAT_RETURN datx_psp_query(DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param);
/** @brief DAT_PROVIDER::psp_free_func (dat_psp_free). */
DAT_RETURN datx_psp_free(DAT_PSP_HANDLE psp_handle);
/** @brief DAT_PROVIDER::csp_create_func (dat_csp_create: a listen point on the address's port). */
DAT_RETURN datx_csp_create(DAT_IA_HANDLE ia_handle, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
                           DAT_EVD_HANDLE evd_handle, DAT_CSP_HANDLE *csp_handle);
/** @brief DAT_PROVIDER::csp_query_func (dat_csp_query). */
DAT_RETURN datx_csp_query(DAT_CSP_HANDLE csp_handle, DAT_CSP_PARAM_MASK mask, DAT_CSP_PARAM *param);
/** @brief DAT_PROVIDER::csp_free_func (dat_csp_free). */
DAT_RETURN datx_csp_free(DAT_CSP_HANDLE csp_handle);
/** @brief DAT_PROVIDER::ep_common_connect_func (dat_ep_common_connect: to a CSP's address and port). */
DAT_RETURN datx_ep_common_connect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote,
                                  DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata);
/** @brief DAT_PROVIDER::cr_query_func (dat_cr_query). */
DAT_RETURN datx_cr_query(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param);
/** @brief DAT_PROVIDER::cr_accept_func (dat_cr_accept). */
DAT_RETURN datx_cr_accept(DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle, DAT_COUNT pdata_size,
                          const DAT_PVOID pdata);
/** @brief DAT_PROVIDER::cr_reject_func (dat_cr_reject). */
DAT_RETURN datx_cr_reject(DAT_CR_HANDLE cr_handle, DAT_COUNT pdata_size, const DAT_PVOID pdata);
/**
 * @brief DAT_PROVIDER::cr_handoff_func (dat_cr_handoff): it_handoff to the
 *        service point of the IA on @p handoff.
 *
 * The request arrives on that service point's CR EVD as a
 * DAT_CONNECTION_REQUEST_EVENT with a new CR; @p cr_handle is used up.
 *
 * @param cr_handle the CR
 * @param handoff the qualifier of another PSP or RSP of the same IA
 * @retval DAT_SUCCESS handed over
 * @retval DAT_INVALID_HANDLE @p cr_handle is not a live CR (accepted, rejected or handed off)
 * @retval DAT_INVALID_PARAMETER no other service point of the IA listens on
 *         @p handoff (DAT_INVALID_ARG2); the CR stays usable
 */
DAT_RETURN datx_cr_handoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff);
/**
 * @brief Makes a CR for an IT-API connection request, for the CR event.
 *
 * An RSP serves one request, then rejects the others; it stays, named
 * by the event, until dat_rsp_free (as DAPL's does).
 *
 * @param ia the adapter
 * @param req the IT-API event (a connection or a datagram service request)
 * @param[out] sp the PSP or RSP that matches the request's qualifier
 * @param[out] qual the qualifier of the service point
 * @return the CR's cell, or NULL when no service point matches (the request is then rejected)
 */
datx_cell_t *datx_cr_arrive(datx_ia_t *ia, const it_event_t *req, DAT_HANDLE *sp,
                            DAT_CONN_QUAL *qual);

/* dat_dto.c */
/**
 * @brief IT-API segments for a post's DAT LMR triplets.
 *
 * Zero-length segments are left out; each LMR is held while read.
 *
 * @param ia the adapter the LMRs must belong to
 * @param n the number of triplets
 * @param iov the triplets
 * @param[out] out the IT-API segments (at least ::DATX_MAX_SEGS)
 * @param[out] nout the segments used
 * @param[out] total their total length
 * @return DAT_SUCCESS, or the status of a bad count or a foreign or stale LMR
 */
DAT_RETURN datx_segments_of(const datx_ia_t *ia, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                            it_lmr_triplet_t *out, size_t *nout, uint64_t *total);
/**
 * @brief IT-API's flags for DAT's completion flags of a post.
 * @param f DAT_COMPLETION_* flags
 * @return the IT-API DTO flags
 */
static inline it_dto_flags_t
datx_dto_flags_of(DAT_COMPLETION_FLAGS f)
{
  /* Bit for bit, with no branch (a post's): suppressed is not
   * IT_COMPLETION_FLAG, solicited moves up one, the fence stays. */
  G_STATIC_ASSERT((int) DAT_COMPLETION_SUPPRESS_FLAG == (int) IT_COMPLETION_FLAG &&
                  (int) DAT_COMPLETION_SOLICITED_WAIT_FLAG << 1 == (int) IT_SOLICITED_WAIT_FLAG &&
                  (int) DAT_COMPLETION_BARRIER_FENCE_FLAG == (int) IT_BARRIER_FENCE_FLAG);
  return (it_dto_flags_t) ((~f & DAT_COMPLETION_SUPPRESS_FLAG) | ((f & DAT_COMPLETION_SOLICITED_WAIT_FLAG) << 1) |
                           (f & DAT_COMPLETION_BARRIER_FENCE_FLAG));
}
/** @brief The most segments of one post. */
#define DATX_MAX_SEGS 32

/** @brief How long (ms) a connect refused for want of a listener is tried
 *  again by default (ITAPI_DAT_CONNECT_RETRY_MS; at most the connect's
 *  timeout).  Long enough for a peer that announces its address before it
 *  listens and then registers its memory first (dtest's server) on a
 *  loaded or emulated host. */
#define DATX_CONNECT_RETRY_MS 10000
/** @brief DAT_PROVIDER::ep_post_send_func (dat_ep_post_send). */
DAT_RETURN datx_ep_post_send(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                             DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
/** @brief DAT_PROVIDER::ep_post_recv_func (dat_ep_post_recv). */
DAT_RETURN datx_ep_post_recv(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                             DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
/** @brief DAT_PROVIDER::ep_post_rdma_read_func (dat_ep_post_rdma_read). */
DAT_RETURN datx_ep_post_rdma_read(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                  DAT_COMPLETION_FLAGS flags);
/** @brief DAT_PROVIDER::ep_post_rdma_write_func (dat_ep_post_rdma_write). */
/**
 * @brief DAT's IB extensions (dat_ib_extensions.h): RDMA Write with
 *        immediate data, the atomics, the attribute query; the others are
 *        DAT_NOT_IMPLEMENTED.  The provider's handle_extendedop_func.
 * @param handle the EP, IA or other handle the operation names (for
 *        DAT_IB_OPEN_QUERY_OP the IA name)
 * @param op a DAT_IB_OP
 * @param args the operation's arguments, as dat_ib_extensions.h's macros pass them
 * @return DAT_SUCCESS or the DAT status of what failed
 */
DAT_RETURN datx_handle_extendedop(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args);

/**
 * @brief Whether the signaled RDMA Write of @p ep with @p cookie that just
 *        completed carried immediate data; forgets it.
 * @param ep the EP (held)
 * @param cookie the completion's cookie
 * @return TRUE for an RDMA Write with immediate data
 */
gboolean datx_ep_imm_done(datx_ep_t *ep, uint64_t cookie);

/**
 * @brief Releases what an EP's RDMA Writes with immediate data, early
 *        receives and retries kept (its free).
 * @param ep the EP
 */
void datx_ep_imm_clear(datx_ep_t *ep);

/**
 * @brief Tries @p ep's connect again when nobody listened at its qualifier
 *        yet (a non-peer reject of no reason), within the connect's timeout
 *        and ITAPI_DAT_CONNECT_RETRY_MS: the receives posted before are
 *        posted again, and their flushes kept from the consumer.
 * @param ep the EP (held), active, its connect just refused
 * @return TRUE when a new try is under way (the refusal is not reported)
 */
gboolean datx_ep_connect_retry(datx_ep_t *ep);

/**
 * @brief Posts the receives @p ep had before a failed connect try again,
 *        their flushes kept from the consumer (datx_ep_swallow).
 * @param ep the EP (held), reset to Unconnected
 */
void datx_ep_recvs_again(datx_ep_t *ep);

/**
 * @brief Whether a flushed receive of @p ep with @p cookie is one a failed
 *        connect try flushed and a retry posted again; forgets it.
 * @param ep the EP (held)
 * @param cookie the receive's cookie
 * @return TRUE: the completion is not the consumer's
 */
gboolean datx_ep_swallow(datx_ep_t *ep, uint64_t cookie);

/**
 * @brief The EP's connection was established: forgets its early receives.
 * @param ep the EP (held)
 */
void datx_ep_established(datx_ep_t *ep);

DAT_RETURN datx_ep_post_rdma_write(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                   DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                   DAT_COMPLETION_FLAGS flags);

/* dat_ud.c */
/** @brief The Q_Key of every datagram EP (DAPL's, DAT_UD_QKEY). */
#define DATX_UD_QKEY 0x78654321u
/** @brief Bytes this provider puts in front of the consumer's private data of a datagram
 *  service request and reply (datx_ud_hdr_t). */
#define DATX_UD_HDR_LEN 8u
/**
 * @brief Makes @p ep an IT-API datagram endpoint (DAT_IB_SERVICE_TYPE_UD).
 * @param ep the EP being made: its IA, PZ and attributes set
 * @param req the request dispatcher
 * @param recv the receive dispatcher
 * @return DAT_SUCCESS, or the status of what IT-API refused
 */
DAT_RETURN datx_ud_ep_create(datx_ep_t *ep, it_evd_handle_t req, it_evd_handle_t recv);
/**
 * @brief Frees a datagram EP's pending service requests (its free).
 * @param ep the EP, retired
 */
void datx_ud_ep_clear(datx_ep_t *ep);
/**
 * @brief dat_ep_connect on a datagram EP: a datagram service request to
 *        the qualifier, carrying the EP's identifier and @p pdata.
 * @param ep the EP (held)
 * @param path the path to the remote IA
 * @param q the qualifier
 * @param remote the remote IA's address (for the event's DAT_IB_ADDR_HANDLE::ia_addr)
 * @param pdata the consumer's private data
 * @param len its bytes
 * @param deadline monotonic time (µs) until which a request nobody serves is sent again; 0: never
 * @return DAT_SUCCESS or the status of what failed
 */
DAT_RETURN datx_ud_connect(datx_ep_t *ep, const it_path_t *path, const it_conn_qual_t *q,
                           const struct sockaddr_in *remote, const void *pdata, size_t len,
                           gint64 deadline);
/**
 * @brief Ends the IA's thread taking datagram service replies (its close,
 *        before it_ia_free).
 * @param ia the adapter
 */
void datx_ud_ia_close(datx_ia_t *ia);
/**
 * @brief Reads a datagram service request into @p cr: the requester's
 *        identifier and the consumer's private data.
 * @param in the IT-API event
 * @param cr the CR being made
 * @return FALSE when the request was not framed by this provider
 */
gboolean datx_ud_request_parse(const it_ud_svc_request_event_t *in, datx_cr_t *cr);
/**
 * @brief dat_cr_accept of a datagram request: the reply, the AH to the
 *        requester, and the passive DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED.
 * @param cr the CR (retired)
 * @param ep the datagram EP (held)
 * @param pdata the consumer's private data
 * @param len its bytes
 * @return DAT_SUCCESS or the status of what failed
 */
DAT_RETURN datx_ud_accept(datx_cr_t *cr, datx_ep_t *ep, const void *pdata, size_t len);
/**
 * @brief dat_cr_reject of a datagram request.
 * @param cr the CR (retired)
 * @param pdata the consumer's private data
 * @param len its bytes
 * @return the IT-API status of the reply
 */
it_status_t datx_ud_reject(datx_cr_t *cr, const void *pdata, size_t len);
/**
 * @brief The DAT event of a datagram receive (DAT_IB_DTO_EVENT, DAT_IB_DTO_RECV_UD).
 * @param in the IT-API completion
 * @param out the DAT event, its DTO data filled
 * @return DAT_SUCCESS
 */
DAT_RETURN datx_ud_translate_recv(const it_all_dto_cmpl_event_t *in, DAT_EVENT *out);
/** @brief dat_ib_post_send_ud: the arguments after the EP and the op. */
DAT_RETURN datx_ud_post_send(DAT_EP_HANDLE ep_handle, va_list args);
/** @brief dat_ib_ud_ah_free: the arguments after the EP and the op. */
DAT_RETURN datx_ud_ah_free(DAT_EP_HANDLE ep_handle, va_list args);
/** @brief dat_ib_ud_cm_free: the arguments after the EP and the op. */
DAT_RETURN datx_ud_cm_free(DAT_EP_HANDLE ep_handle, va_list args);

#endif /* DATX_PRIV_H */
