/*
 * User access layer: private structures shared by the ual/ files.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UAL_H
#define UAL_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <glib.h>

#include "itx.h"
#include "kal.h"
#include "rnicpi.h"
#include "rsec.h"

#define UAL_LOG "itapi-ual"

/* Every IT-API object starts with this header. */
typedef struct ual_obj {
  it_handle_type_enum_t type;
  uint64_t handle;            /* the encoded, generation-checked value */
  struct ual_ia *ia;
  it_context_t context;
  gboolean has_context;
  GList sib;                  /* its node in its IA's children (data: this object); ual_ia_child_add */
} ual_obj_t;

typedef struct ual_ia {
  ual_obj_t obj;
  const kal_iface_t *iface;
  const rnicpi_provider_t *prov;
  rnicpi_dev_t *dev;
  rnicpi_caps_t caps;
  uint32_t major, minor;
  GList *children;            /* ual_obj_t* of every object of the IA, each node the
                               * object's own (ual_obj_t.sib): adding and removing one
                               * is O(1) whatever the IA holds */
  guint nchildren;            /* their number (ual_ia_teardown) */
  struct ual_evd *aff_evd;
  struct ual_evd *unaff_evd;
  GList *maps;                /* ual_map_t*: ranges of it_mem_map (ual_lmr.c) */
  gboolean host_cm;           /* connects go through the host stack (ual_hostcm.c) */
  gboolean said_ip_path;      /* an IP path on this IA of InfiniBand paths was logged (ual_cm.c) */
  gint said_loopback;         /* a loopback destination taken to the IA's address was logged
                               * (ual_ia_map_loopback; atomic: it_get_pathinfo reads) */
  int dying;                  /* children freed, waiting for their grace period (ual_obj.c) */
  uint32_t nobj[IT_HANDLE_TYPE_SRQ + 1]; /* live children by type, against the device's limits */
} ual_ia_t;

typedef struct ual_pz {
  ual_obj_t obj;
  rnicpi_pd_t *pd;
  gint nref;                  /* EPs, LMRs living in it */
} ual_pz_t;

typedef struct ual_evd {
  ual_obj_t obj;
  it_event_type_t stream;
  it_evd_flags_t flags;       /* as created */
  gint fd_on;                 /* the consumer watches fd: IT_EVD_CREATE_FD, or
                               * itx_evd_fd_enable() since (atomic) */
  size_t qsize;
  size_t threshold;
  struct ual_evd *aevd;       /* the AEVD this SEVD feeds, or NULL */
  int fd;                     /* eventfd: readable while the threshold is met */
  GMutex lock;
  GQueue q;                   /* it_event_t* (every stream but DTO) */
  rnicpi_cq_t *cq;            /* DTO stream */
  /* The provider's poll_cq, and whether each entry is zeroed before it
   * (a provider of an ABI minor before 5, which leaves the fields of later
   * minors alone): read by every dequeue, set before the EVD is published. */
  int (*poll_cq)(rnicpi_cq_t *cq, rnicpi_wc_t *wc, int n);
  gboolean wc_zero;
  gboolean signaled;          /* fd holds a count */
  gboolean overflowed;
  gboolean in_aevd;           /* queued on its AEVD (AEVD lock) */
  gint waiters;               /* a thread is in it_evd_wait (one waiter per EVD); -1 once
                               * it_evd_free took the slot for good */
  gint sleepers;              /* ...and about to sleep, or asleep: the CQ must be armed */
  gint wait_ops;              /* the provider's cq_wait_begin (RNIC-PI 1.11) for its CQ:
                               * 0 not asked yet, 1 offered, -1 not offered */
  gint nbound;                /* EPs and listeners using it */
  gint nsevd;                 /* AEVD: SEVDs attached */
  GQueue notified;            /* AEVD: SEVDs with events (ual_evd_t*) */
  it_evd_callback_rtn_t callback;
  void *callback_arg;
  gint dead;                  /* freed: no AEVD queues it, a waiter leaves (ual_evd_unpublish) */
} ual_evd_t;

typedef struct ual_ep {
  ual_obj_t obj;
  ual_pz_t *pz;
  struct ual_srq *srq;        /* receives come from it (IT_EP_SRQ), or NULL */
  ual_evd_t *req, *recv, *conn;
  rnicpi_qp_t *qp;
  /* The provider's post_send, read by every send-side post: one load
   * rather than the chain through the IA and the provider. */
  rnicpi_status_t (*post_send)(rnicpi_qp_t *qp, const rnicpi_send_wr_t *wr);
  gint state;                 /* it_ep_state_rc_t, read without the lock */
  it_ep_attributes_t attr;
  it_ep_rc_creation_flags_t flags;
  size_t spigot;
  it_path_t dst_path;
  uint32_t ird, ord;          /* negotiated */
  gboolean ud;                /* a datagram EP (ual_ud.c): conn is NULL, state is it_ep_state_ud_t */
  itx_ep_error_t error;       /* the last affiliated error (itx_ep_error) */
} ual_ep_t;

/* An address handle (ual_ud.c).  it_post_sendto reads @ah in a read
 * section, without the object lock: it_address_handle_modify replaces it
 * atomically and keeps the handle it replaced on @replaced, destroyed with
 * the object after its grace period (a send may still be using it). */
typedef struct ual_ah {
  ual_obj_t obj;
  ual_pz_t *pz;
  rnicpi_ah_t *ah;            /* atomic */
  GSList *replaced;           /* rnicpi_ah_t*: earlier provider handles (object lock) */
  it_path_t path;
} ual_ah_t;

/* A UD service request handle (ual_ud.c). */
typedef struct ual_udsvc {
  ual_obj_t obj;
  ual_evd_t *reply;
  it_conn_qual_t qual;
  it_path_t path;
  uint32_t request_id;
  size_t pdata_len;
  unsigned char pdata[IT_MAX_PRIV_DATA];
} ual_udsvc_t;

typedef struct ual_srq {
  ual_obj_t obj;
  ual_pz_t *pz;
  rnicpi_srq_t *srq;
  size_t max_recv_dtos;
  size_t max_recv_segs;
  size_t low_watermark;       /* armed limit, 0 when none */
  gint nep;                   /* EPs receiving from it */
} ual_srq_t;

typedef struct ual_listen {
  ual_obj_t obj;
  ual_evd_t *evd;
  rnicpi_listen_t *lst;
  kal_port_t *res;
  it_conn_qual_t qual;
  size_t spigot;
} ual_listen_t;

typedef struct ual_lmr {
  ual_obj_t obj;
  ual_pz_t *pz;
  rnicpi_mr_t *mr;
  kal_pin_t *pin;
  void *addr;
  it_length_t length;
  it_addr_mode_t addr_mode;
  it_mem_priv_t privs;
  it_lmr_flag_t flags;
  uint32_t shared_id;
  gboolean iobl;              /* registered from an I/O buffer list: triplets use addr.io */
  /* Unlinked LMRs (it_lmr_create_unlinked): a fast-register region of the
   * provider, linked and unlinked by work requests (it_lmr_link/unlink). */
  gboolean linkable;
  gboolean linked;            /* as the consumer last saw it (a link posted, no unlink since) */
  size_t iobl_num_elts;       /* capacity in I/O buffer list elements */
  it_iobl_type_t iobl_type;   /* type of the list of the current link (0: a virtual range) */
  uint64_t lkey;              /* mr->lkey as of the last registration or link: what posts read */
  /* RMR links posting a bind of @mr right now, plus UAL_LMR_FREED once
   * it_lmr_free deregisters it (atomic): a link counts itself in or finds
   * the LMR gone, and the free refuses while any link is counted, so no
   * bind names a deregistered region (ual_lmr_bind_begin). */
  gint binds;
} ual_lmr_t;

#define UAL_LMR_FREED 0x40000000

/* The slow path of ual_lmr_bind_begin (ual_lmr.c): the LMR is marked;
 * wait for the free that marked it to decide, then count in or not. */
gboolean ual_lmr_bind_wait(ual_lmr_t *lmr);

/* Count a link that is about to post a bind of @lmr's region in; FALSE
 * when it_lmr_free got there first (the caller answers IT_ERR_INVALID_LMR,
 * as for a stale handle).  Inside a read section that found @lmr. */
static inline gboolean
ual_lmr_bind_begin(ual_lmr_t *lmr)
{
  if (G_LIKELY(!(g_atomic_int_add(&lmr->binds, 1) & UAL_LMR_FREED)))
    return TRUE;
  g_atomic_int_add(&lmr->binds, -1);
  return ual_lmr_bind_wait(lmr);
}

/* The bind ual_lmr_bind_begin counted in has been posted (or refused). */
static inline void
ual_lmr_bind_end(ual_lmr_t *lmr)
{
  g_atomic_int_add(&lmr->binds, -1);
}

/* A range mapped by it_mem_map: pinned; its I/O address is its address. */
typedef struct ual_map {
  uintptr_t addr;
  size_t len;
  kal_pin_t *pin;
} ual_map_t;

/* A remote memory region (ual_rmr.c).  it_rmr_link, it_rmr_unlink and
 * it_post_rdma_read_to_rmr run in a read section, without the object
 * lock: the read section keeps the structure alive, and @lock guards the
 * link state (@linked to @key) and the two words that keep @mw alive
 * while a post names it (@posting, @freed).
 *
 * Lock order: ual_lock, then @lock (ual_rmr_invalidated, it_rmr_query and
 * it_rmr_free take it inside ual_lock; the posts take it alone).  @lock is
 * a leaf: nothing else is taken while it is held, and no provider call is
 * made under it (a post_send may make upcalls that take ual_lock). */
typedef struct ual_rmr {
  ual_obj_t obj;
  ual_pz_t *pz;
  rnicpi_mw_t *mw;            /* set at create; dealloc'd by it_rmr_free only while @posting is 0 */
  it_rmr_type_t type;         /* NARROW or WIDE (DEFAULT resolved) */
  GMutex lock;
  guint posting;              /* links and unlinks between their check and their post's return */
  gboolean freed;             /* it_rmr_free passed: posts that still find the RMR refuse it */
  gboolean linked;            /* as the consumer last saw it */
  it_lmr_handle_t lmr;        /* handle value only: never dereferenced */
  void *addr;
  it_length_t length;
  it_mem_priv_t privs;
  it_addr_mode_t addr_mode;
  it_rmr_context_t ctx;       /* the context of the last link posted */
  uint64_t key;               /* mw->rkey as the last link's post left it, accepted or not */
} ual_rmr_t;

/* A connection establishment identifier the consumer may answer. */
typedef enum { CN_PASSIVE_REQUEST, CN_ACTIVE_REPLY } ual_cn_kind_t;

typedef struct ual_cn {
  it_cn_est_identifier_t id;
  ual_cn_kind_t kind;
  uint64_t prov_id;
  ual_ia_t *ia;
  uint64_t listen;            /* listener handle (passive request) */
  uint64_t ep;                /* EP handle (active reply) */
  it_conn_request_event_t req; /* the request as delivered (passive), for it_handoff */
} ual_cn_t;

/* The one lock of object lifetimes and connection state.  Taken and
 * dropped through ual_lock_take/ual_lock_drop, which count this thread's
 * depth: freeing an object waits for its grace period only where the lock
 * can be dropped (ual_obj.c). */
extern GRecMutex ual_lock;
extern __thread int ual_lock_depth;
static inline void ual_lock_take(void) { g_rec_mutex_lock(&ual_lock); ual_lock_depth++; }
static inline void ual_lock_drop(void) { ual_lock_depth--; g_rec_mutex_unlock(&ual_lock); }

/* Handles (ual_handle.c).  A handle packs the object type + 1 (8 bits), a
 * generation (UAL_GEN_BITS) and a slot index (32 bits); slots live in
 * fixed chunks that never move, so a lookup takes no lock.  The lookups
 * are inline: every data-path call makes one or two.  A unit test builds
 * ual_handle.c with smaller limits. */
#ifndef UAL_CHUNK_BITS
#define UAL_CHUNK_BITS 12
#endif
#define UAL_CHUNK_SLOTS (1u << UAL_CHUNK_BITS)
#ifndef UAL_MAX_CHUNKS
#define UAL_MAX_CHUNKS 1024u
#endif
#ifndef UAL_GEN_BITS
#define UAL_GEN_BITS 24
#endif
typedef struct ual_slot {
  ual_obj_t *obj;
  uint32_t gen;
} ual_slot_t;
extern ual_slot_t *ual_slot_chunks[UAL_MAX_CHUNKS];

/* Give @obj a handle of @type in @ia and publish it; FALSE when every slot
 * is in use or retired (the caller answers IT_ERR_RESOURCES). */
gboolean ual_handle_alloc(ual_obj_t *obj, it_handle_type_enum_t type, ual_ia_t *ia) G_GNUC_WARN_UNUSED_RESULT;
/* Unpublish @obj: lookups no longer find it; its slot stays reserved. */
void ual_handle_kill(ual_obj_t *obj);
/* Give @obj's slot back for a later generation (or retire it when its
 * generations are spent) and clear obj->handle.  Only once no thread can
 * be using @obj: after rsec_sync, or before the handle was ever returned. */
void ual_handle_release(ual_obj_t *obj);
/* How many slots were retired because their generation would wrap. */
uint32_t ual_handle_retired(void);

/* Read sections (util/rsec.h).  A lookup made without the object lock is
 * made inside one (rsec_enter/rsec_exit, RSEC_SCOPE), and what it found
 * stays valid until the section ends: freeing waits for the sections open
 * when the object was unpublished (rsec_sync).  Sections nest; a blocking
 * wait is never made inside one. */

/* A thread variable read on the data path: initial-exec (rsec.h). */
#define UAL_TLS RSEC_TLS

/* The object in the slot handle value @v names, if its own handle (type
 * and generation included) is @v; NULL otherwise.  @v's type is checked by
 * the callers below.  Slot 0 is never used, so index 0 finds nothing.
 * Without the object lock, only inside a read section. */
static inline ual_obj_t *
ual_slot_obj(uint64_t v)
{
  uint32_t idx = (uint32_t) v;
  if ((idx >> UAL_CHUNK_BITS) >= UAL_MAX_CHUNKS)
    return NULL;
  ual_slot_t *chunk = __atomic_load_n(&ual_slot_chunks[idx >> UAL_CHUNK_BITS], __ATOMIC_ACQUIRE);
  if (chunk == NULL)
    return NULL;
  ual_obj_t *obj = __atomic_load_n(&chunk[idx & (UAL_CHUNK_SLOTS - 1)].obj, __ATOMIC_ACQUIRE);
  return obj != NULL && obj->handle == v ? obj : NULL;
}

/* The live object @h names, of any type, or NULL: a freed, foreign or
 * garbage value is refused without being dereferenced. */
static inline ual_obj_t *
ual_handle_any(const void *h)
{
  uint64_t v = (uint64_t) (uintptr_t) h, type = v >> 56;
  return type == 0 || type > IT_HANDLE_TYPE_SRQ + 1 ? NULL : ual_slot_obj(v);
}

/* The live object @h names if it is of @type, or NULL. */
static inline ual_obj_t *
ual_handle_get(const void *h, it_handle_type_enum_t type)
{
  uint64_t v = (uint64_t) (uintptr_t) h;
  return (v >> 56) != (uint64_t) type + 1 ? NULL : ual_slot_obj(v);
}

/* Free @o, a child of its IA already off the IA's list that passed its
 * busy checks (ual_obj.c): unpublish it, wait for its grace period with
 * the object lock dropped, destroy it.  Called with the lock held; it is
 * held again on return.  Where this thread cannot wait (ual_can_sync),
 * the reclaimer thread destroys @o later. */
void ual_obj_retire(ual_obj_t *o);
/* Hand @o (unpublished, its IA's dying count raised; or an IA) to the
 * reclaimer thread, which waits for its grace period and destroys it. */
void ual_reclaim_later(ual_obj_t *o);
/* Destroy every child of @ia, once the children other threads freed are
 * gone, no thread waits on its EVDs and their grace period has passed;
 * release its handle, close its device and free it (the IA and its
 * children unpublished; object lock not held). */
void ual_ia_teardown(ual_ia_t *ia);
/* The port GID a path from @ia starts at: its first address (an IPv4 one
 * IPv4-mapped), or the mapped 127.0.0.1 when it lists none. */
void ual_ia_local_gid(const ual_ia_t *ia, struct in6_addr *gid);
/* A loopback destination @sa (rnicpi_addr_is_loopback) on an IA that lists
 * addresses, none of them loopback (rdma_cm devices cannot reach 127.0.0.1),
 * becomes the IA's own address (rnicpi_caps_loopback_target), its port
 * kept: this host's listeners on the IA listen there.  TRUE when @sa was
 * replaced; said once per IA, naming both addresses. */
gboolean ual_ia_map_loopback(ual_ia_t *ia, struct sockaddr_storage *sa);
/* Unpublish @o: its handle finds nothing, and it leaves every list a
 * lookup could reach it by (an SEVD its AEVD's queue) (object lock held). */
void ual_obj_unpublish(ual_obj_t *o);
/* Whether this thread may wait for a grace period: it is inside no read
 * section and holds the object lock at most once. */
gboolean ual_can_sync(void);
/* Free a child object of an IA that needs no busy check: look @h up as
 * @type (else @bad, with a sentence naming @what), unlink it from its IA,
 * destroy it, all under the object lock. */
it_status_t ual_child_free(const void *h, it_handle_type_enum_t type, it_status_t bad,
                           const char *what);
/* Destroy any child object of an IA, by its type (ual_ia.c). */
void ual_obj_destroy(ual_obj_t *o);

static inline ual_ia_t *ual_ia_get(it_ia_handle_t h)
{ return (ual_ia_t *) ual_handle_get(h, IT_HANDLE_TYPE_IA); }
static inline ual_pz_t *ual_pz_get(it_pz_handle_t h)
{ return (ual_pz_t *) ual_handle_get(h, IT_HANDLE_TYPE_PZ); }
static inline ual_evd_t *ual_evd_get(it_evd_handle_t h)
{ return (ual_evd_t *) ual_handle_get(h, IT_HANDLE_TYPE_EVD); }
static inline ual_ep_t *ual_ep_get(it_ep_handle_t h)
{ return (ual_ep_t *) ual_handle_get(h, IT_HANDLE_TYPE_EP); }
static inline ual_lmr_t *ual_lmr_get(it_lmr_handle_t h)
{ return (ual_lmr_t *) ual_handle_get(h, IT_HANDLE_TYPE_LMR); }
static inline ual_listen_t *ual_listen_get(it_listen_handle_t h)
{ return (ual_listen_t *) ual_handle_get(h, IT_HANDLE_TYPE_LISTEN); }
static inline ual_rmr_t *ual_rmr_get(it_rmr_handle_t h)
{ return (ual_rmr_t *) ual_handle_get(h, IT_HANDLE_TYPE_RMR); }
static inline ual_srq_t *ual_srq_get(it_srq_handle_t h)
{ return (ual_srq_t *) ual_handle_get(h, IT_HANDLE_TYPE_SRQ); }
static inline ual_ah_t *ual_ah_get(it_addr_handle_t h)
{ return (ual_ah_t *) ual_handle_get(h, IT_HANDLE_TYPE_ADDR); }
static inline ual_udsvc_t *ual_udsvc_get(it_ud_svc_req_handle_t h)
{ return (ual_udsvc_t *) ual_handle_get(h, IT_HANDLE_TYPE_UD_SVC_REQ); }

#define UAL_HANDLE(obj, type) ((type) (uintptr_t) (obj)->handle)

/* IT_ERR_INVALID_ADDR_MODE, with its sentence, unless @mode is absolute, or
 * relative on an IA with zero-based addressing (ual_lmr.c). */
it_status_t ual_check_addr_mode(const ual_ia_t *ia, it_addr_mode_t mode);

/* Errors with a sentence for itx_error_detail(). */
it_status_t ual_fail(it_status_t st, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* The provider of @ia refused to create an object (@fmt: what, as "create
 * a UD queue pair"): @nosup when it does not offer it (RNICPI_ENOTSUP),
 * else IT_ERR_RESOURCES; the sentence says which and what to do. */
it_status_t ual_prov_refused(const ual_ia_t *ia, rnicpi_status_t rs, it_status_t nosup, const char *fmt, ...)
  G_GNUC_PRINTF(4, 5);
/* Put @obj on its IA's list of children, or take it off (ual_lock held):
 * O(1), the node being the object's own (ual_obj_t.sib).  An IA with
 * 200,000 protection zones freed them in O(n) each through g_list_remove. */
void ual_ia_child_add(ual_ia_t *ia, ual_obj_t *obj);
void ual_ia_child_remove(ual_ia_t *ia, ual_obj_t *obj);
/* A new object of a PZ: its handle, the PZ's count and the IA's list
 * (ual_lock held). */
it_status_t ual_pz_child_add(ual_obj_t *obj, it_handle_type_enum_t type, ual_pz_t *pz);
/* ual_handle_alloc, or IT_ERR_RESOURCES with a sentence when no handle is left. */
it_status_t ual_handle_new(ual_obj_t *obj, it_handle_type_enum_t type, ual_ia_t *ia);
#define ual_ok() (IT_SUCCESS)

/* EVDs (ual_evd.c). */
void ual_evd_push(ual_evd_t *evd, const it_event_t *ev);
void ual_evd_update(ual_evd_t *evd);
void ual_evd_destroy(ual_evd_t *evd);
/* Take a freed EVD off its AEVD's queue for good and wake its waiter
 * (object lock held). */
void ual_evd_unpublish(ual_evd_t *evd);
void ual_async_aff(ual_ia_t *ia, it_event_type_t type, it_handle_t cause);
void ual_upcall_cq_notify(void *dev_ctx, uint64_t cq_ctx);
void ual_upcall_async(void *dev_ctx, const rnicpi_async_event_t *ev);

/* EPs and CM (ual_ep.c, ual_cm.c). */
it_status_t ual_check_queue_attr(ual_ia_t *ia, const it_ep_attributes_t *a);
/* The request and receive EVDs of a new EP of @ia (object lock held). */
it_status_t ual_ep_dto_evds(ual_ia_t *ia, it_evd_handle_t req_h, it_evd_handle_t recv_h,
                            ual_evd_t **req, ual_evd_t **recv);
void ual_ep_destroy(ual_ep_t *ep);
void ual_listen_destroy(ual_listen_t *l);
void ual_cn_drop_ia(ual_ia_t *ia);
void ual_upcall_cm(void *dev_ctx, const rnicpi_cm_event_t *ev);
it_status_t ual_qual_to_port(const it_conn_qual_t *q, gboolean passive, uint32_t *port);
it_status_t ual_path_to_addr(ual_ia_t *ia, const it_path_t *path, uint32_t port, rnicpi_addr_t *out);
it_status_t ual_check_pdata(const unsigned char *pdata, size_t len, size_t limit, const char *what,
                            ual_ia_t *ia);
/* End @ep's connection attempt locally: flush its QP and deliver the event
 * the provider would have given (@type UNREACHABLE or DISCONNECTED). */
void ual_cm_fail(ual_ep_t *ep, rnicpi_cm_event_type_t type, rnicpi_cm_reason_t reason);

/* The host-stack connection path (ual_hostcm.c).  Whether @ia's connects
 * take it (ITAPI_CM, capabilities); start one (object lock held, @ep
 * validated); drop @ep's connect in flight, if any (TRUE when there was one). */
gboolean ual_hostcm_wanted(const ual_ia_t *ia);
it_status_t ual_hostcm_connect(ual_ep_t *ep, const rnicpi_addr_t *dst, const rnicpi_conn_param_t *p);
gboolean ual_hostcm_cancel(ual_ep_t *ep);

/* Datagrams (ual_ud.c): address handles, service requests, UD receives. */
void ual_ah_destroy(ual_ah_t *ah);
void ual_udsvc_destroy(ual_udsvc_t *svc);
void ual_ud_drop_ia(ual_ia_t *ia);
void ual_ud_recv_event(ual_ia_t *ia, const rnicpi_wc_t *wc, it_all_dto_cmpl_event_t *d);
void ual_ud_cm_event(ual_ia_t *ia, const rnicpi_cm_event_t *ev);

/* Shared receive queues (ual_srq.c). */
void ual_srq_destroy(ual_srq_t *srq);
it_status_t ual_srq_post_recv(ual_srq_t *srq, const it_lmr_triplet_t *segs, size_t n,
                              it_dto_cookie_t cookie);

/* A receive completion with what it_dto_cmpl_event_t has no member for,
 * kept in the it_event_t beyond it (wc_to_event, itx_dto_imm_data): the
 * peer's immediate data.  Only an IT_DTO_RC_RECV_CMPL_EVENT has it; other
 * events use those bytes for their own members (a datagram receive's
 * sender). */
typedef struct ual_dto_ext {
  it_dto_cmpl_event_t dto;
  uint32_t with_imm;  /* the receive was consumed by immediate data */
  uint32_t pad;
  uint64_t imm_data;
} ual_dto_ext_t;
G_STATIC_ASSERT(sizeof(ual_dto_ext_t) <= sizeof(it_event_t));

/* The bits of each IT-API flag and parameter mask type that the access
 * layer knows, from it_api.h's names: a call refuses any other bit with
 * IT_ERR_INVALID_FLAGS or IT_ERR_INVALID_MASK.  A flag added to one of
 * these types in it_api.h is added here too, or the calls refuse it.
 * it_api.h numbers each type's bits from bit 0 without a gap, so a mask
 * with a gap has left a flag out (UAL_MASK_GAPLESS). */
#define UAL_MASK_GAPLESS(m) ((((m) + 1u) & (m)) == 0)

#define UAL_DTO_FLAGS_KNOWN                                                         \
  ((unsigned) (IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_SOLICITED_WAIT_FLAG |       \
               IT_BARRIER_FENCE_FLAG | IT_UNLINK_FENCE_FLAG | IT_UNLINK_LOCAL_SINK | \
               IT_COALESCE_WR_FLAG))
#define UAL_EVD_FLAGS_KNOWN                                                          \
  ((unsigned) (IT_EVD_DEQUEUE_NOTIFICATIONS | IT_EVD_CREATE_FD | IT_EVD_OVERFLOW_DEFAULT | \
               IT_EVD_OVERFLOW_NOTIFY | IT_EVD_OVERFLOW_AUTO_RESET))
#define UAL_EVD_PARAMS_KNOWN                                                            \
  ((unsigned) (IT_EVD_PARAM_ALL | IT_EVD_PARAM_IA | IT_EVD_PARAM_EVENT_NUMBER |          \
               IT_EVD_PARAM_FLAG | IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD |    \
               IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_FD | IT_EVD_PARAM_BOUND |         \
               IT_EVD_PARAM_ENABLED | IT_EVD_PARAM_OVERFLOWED | IT_EVD_PARAM_CALLBACK))
#define UAL_LISTEN_PARAMS_KNOWN                                                       \
  ((unsigned) (IT_LISTEN_PARAM_ALL | IT_LISTEN_PARAM_IA_HANDLE | IT_LISTEN_PARAM_SPIGOT_ID | \
               IT_LISTEN_PARAM_CONNECT_EVD | IT_LISTEN_PARAM_CONN_QUAL))
#define UAL_EP_PARAMS_KNOWN                                                                   \
  ((unsigned) (IT_EP_PARAM_ALL | IT_EP_PARAM_IA | IT_EP_PARAM_SPIGOT | IT_EP_PARAM_STATE |     \
               IT_EP_PARAM_SERV_TYPE | IT_EP_PARAM_PATH | IT_EP_PARAM_PZ |                    \
               IT_EP_PARAM_REQ_SEVD | IT_EP_PARAM_RECV_SEVD | IT_EP_PARAM_CONN_SEVD |         \
               IT_EP_PARAM_RDMA_RD_ENABLE | IT_EP_PARAM_RDMA_WR_ENABLE |                      \
               IT_EP_PARAM_MAX_RDMA_READ_SEG | IT_EP_PARAM_MAX_RDMA_WRITE_SEG |               \
               IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD | IT_EP_PARAM_EP_ID |                \
               IT_EP_PARAM_EP_KEY | IT_EP_PARAM_MAX_PAYLOAD | IT_EP_PARAM_MAX_REQ_DTO |       \
               IT_EP_PARAM_MAX_RECV_DTO | IT_EP_PARAM_MAX_SEND_SEG | IT_EP_PARAM_MAX_RECV_SEG | \
               IT_EP_PARAM_SRQ | IT_EP_PARAM_SOFT_HI_WATERMARK | IT_EP_PARAM_HARD_HI_WATERMARK | \
               IT_EP_PARAM_ATOMICS_ENABLE | IT_EP_PARAM_PRIV_OPS_ENABLE))
#define UAL_LMR_PARAMS_KNOWN                                                           \
  ((unsigned) (IT_LMR_PARAM_ALL | IT_LMR_PARAM_IA | IT_LMR_PARAM_PZ | IT_LMR_PARAM_ADDR | \
               IT_LMR_PARAM_LENGTH | IT_LMR_PARAM_MEM_PRIV | IT_LMR_PARAM_FLAG |          \
               IT_LMR_PARAM_SHARED_ID | IT_LMR_PARAM_RMR_CONTEXT |                        \
               IT_LMR_PARAM_ACTUAL_ADDR | IT_LMR_PARAM_ACTUAL_LENGTH |                    \
               IT_LMR_PARAM_ADDR_MODE | IT_LMR_PARAM_LINKED | IT_LMR_PARAM_IOBL_NUM_ELTS | \
               IT_LMR_PARAM_IOBL_TYPE))
#define UAL_RMR_PARAMS_KNOWN                                                           \
  ((unsigned) (IT_RMR_PARAM_ALL | IT_RMR_PARAM_IA | IT_RMR_PARAM_PZ | IT_RMR_PARAM_LINKED | \
               IT_RMR_PARAM_LMR | IT_RMR_PARAM_ADDR | IT_RMR_PARAM_LENGTH |               \
               IT_RMR_PARAM_MEM_PRIV | IT_RMR_PARAM_RMR_CONTEXT | IT_RMR_PARAM_TYPE |     \
               IT_RMR_PARAM_ADDR_MODE))
#define UAL_SRQ_PARAMS_KNOWN                                                          \
  ((unsigned) (IT_SRQ_PARAM_ALL | IT_SRQ_PARAM_IA | IT_SRQ_PARAM_PZ |                    \
               IT_SRQ_PARAM_MAX_RECV_DTO | IT_SRQ_PARAM_MAX_RECV_SEG | IT_SRQ_PARAM_LOW_WATERMARK))
#define UAL_UD_SVC_PARAMS_KNOWN                                                       \
  ((unsigned) (IT_UD_PARAM_ALL | IT_UD_PARAM_IA_HANDLE | IT_UD_PARAM_REQ_ID |            \
               IT_UD_PARAM_REPLY_EVD | IT_UD_PARAM_CONN_QUAL | IT_UD_PARAM_DEST_PATH |    \
               IT_UD_PARAM_PRIV_DATA | IT_UD_PARAM_PRIV_DATA_LENGTH))
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_DTO_FLAGS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_EVD_FLAGS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_EVD_PARAMS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_LISTEN_PARAMS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_EP_PARAMS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_LMR_PARAMS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_RMR_PARAMS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_SRQ_PARAMS_KNOWN));
G_STATIC_ASSERT(UAL_MASK_GAPLESS(UAL_UD_SVC_PARAMS_KNOWN));

/* Gather/scatter lists (ual_dto.c). */
#define UAL_MAX_SGE 64
it_status_t ual_to_sges(const it_lmr_triplet_t *t, size_t n, size_t max, rnicpi_sge_t *out);

/* Whether @ep, in connection state @state, is pending only for the
 * ESTABLISHED upcall while its queue pair already runs (ual_dto.c). */
gboolean ual_ep_established(ual_ep_t *ep, int state);
/* What a refused post returns, with the reason recorded (ual_dto.c);
 * @wr is the send-queue request refused, NULL for a receive. */
it_status_t ual_post_fail(ual_ep_t *ep, rnicpi_status_t rs, const rnicpi_send_wr_t *wr);
/* The IT-API status of a provider's answer to a post of @wr (NULL: a
 * receive). */
static inline it_status_t
ual_post_status(ual_ep_t *ep, rnicpi_status_t rs, const rnicpi_send_wr_t *wr)
{
  return G_LIKELY(rs == RNICPI_OK) ? IT_SUCCESS : ual_post_fail(ep, rs, wr);
}

/* Room for what a provider advises (RNIC-PI 1.12 cap_advice). */
#define UAL_ADVICE_LEN 256
/* The provider's advice on getting capability @cap on @ia, as "; " and
 * its sentence in @buf, for the end of a message; "" when it has none
 * (ual_ia.c). */
const char *ual_cap_advice(ual_ia_t *ia, uint64_t cap, char buf[UAL_ADVICE_LEN]);

/* Send-queue posts (ual_dto.c): @allowed are flags beyond the common ones. */
it_status_t ual_post_sq(it_ep_handle_t ep_handle, rnicpi_send_wr_t *wr, const it_lmr_triplet_t *segs,
                        size_t n, it_dto_flags_t flags, it_dto_flags_t allowed, const char *fn);

/* Memory windows (ual_rmr.c). */
void ual_rmr_destroy(ual_rmr_t *rmr);
it_handle_t ual_rmr_invalidated(ual_ia_t *ia, uint64_t key);
/* Take @rmr's lock unless it_rmr_free took the RMR (then FALSE, the lock
 * not held: the caller answers IT_ERR_INVALID_RMR, as for a stale handle).
 * Inside a read section that found @rmr, or under ual_lock. */
gboolean ual_rmr_lock_live(ual_rmr_t *rmr);
it_status_t ual_post_sq_sges(ual_ep_t *ep, rnicpi_send_wr_t *wr, rnicpi_sge_t *sge, size_t n,
                             it_dto_flags_t flags);
it_status_t ual_post_checks(it_ep_handle_t ep_handle, it_dto_flags_t flags, it_dto_flags_t allowed,
                            const char *fn, ual_ep_t **out);
uint32_t ual_access_of(ual_ia_t *ia, it_mem_priv_t p);

/* Memory (ual_lmr.c). */
void ual_lmr_destroy(ual_lmr_t *lmr);
void ual_mem_unmap_all(ual_ia_t *ia);
gboolean ual_lmr_is_link_key(ual_ia_t *ia, uint64_t key);
void ual_pz_destroy(ual_pz_t *pz);

/* Status mapping for provider results. */
it_status_t ual_map_status(rnicpi_status_t st);

#endif
