/*
 * Helpers a provider may link (the rnicpi_util static library): pieces every
 * software or hardware-assisted provider needs and should not write twice.
 *
 * SPDX-License-Identifier: MIT
 */

/**
 * @file rnicpi_util.h
 * @brief Provider helpers: a completion ring that never drops an entry,
 *        intrusive work-queue FIFOs, a cache of freed entries, the
 *        reason of a failed TCP connect, what a loopback destination
 *        means on a device, and what the host lets a process do with a
 *        privileged port.
 */
#ifndef RNICPI_UTIL_H
#define RNICPI_UTIL_H

#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "rnicpi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup rnicpi_util Provider helpers
 *  @brief Link `rnicpi_util` to use them.
 *  @{ */

/**
 * One cq_notify upcall, by value: where a ring's notifications go, and a
 * queued notification.  Delivering it touches neither the CQ nor the
 * device, either of which another thread may destroy between the push that
 * queued it and its delivery.
 */
typedef struct rnicpi_notify {
  void (*notify)(void *dev_ctx, uint64_t cq_ctx); /**< the access layer's cq_notify */
  void *dev_ctx;                                  /**< the device's access-layer context */
  uint64_t cq_ctx;                                /**< the CQ's access-layer context */
  /** The device's count of notifications queued and not yet delivered
   *  (see rnicpi_notify_quiesce()); NULL if the provider does not count. */
  gint *inflight;
} rnicpi_notify_t;

/**
 * A lock for short sections on a data path: taking it free is one atomic
 * exchange and releasing it a plain store, where a GMutex's release is an
 * atomic exchange too.  A waiter spins a little, then yields its CPU, and
 * once the holder has kept it for long (some hundreds of microseconds: a
 * large copy) sleeps in short slices, so a long section does not cost a
 * second CPU.  Not recursive; zero is unlocked.
 */
typedef struct rnicpi_spin {
  int held; /**< 1 while a thread holds it */
} rnicpi_spin_t;

/**
 * @brief Tell the CPU the caller is spinning (x86 `pause`; nothing
 *        elsewhere): one turn of a busy-wait loop.
 */
static inline void
rnicpi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/**
 * @brief One turn of waiting for another thread, the @p n th (from 1) of
 *        this wait: a pause for the first few, then a yield of the CPU,
 *        and once the wait has lasted some hundreds of microseconds a
 *        short sleep.  rnicpi_spin_wait() waits with it; so may any loop
 *        that waits for another thread to let go of something.
 * @param n turns taken so far in this wait, this one included.
 */
void rnicpi_spin_backoff(unsigned n);

/**
 * @brief Wait for a spin lock another thread holds, and take it (the
 *        contended part of rnicpi_spin_lock()).
 * @param l the lock.
 */
void rnicpi_spin_wait(rnicpi_spin_t *l);

/**
 * @brief Take a spin lock.
 * @param l the lock.
 */
static inline void
rnicpi_spin_lock(rnicpi_spin_t *l)
{
  if (G_UNLIKELY(__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE)))
    rnicpi_spin_wait(l);
}

/**
 * @brief A provider's integer run-time parameter from the environment.
 * @param name the variable, e.g. "ITAPI_IWARP_CRC".
 * @param dflt the value when the variable is unset or empty.
 * @param lo smallest value accepted.
 * @param hi largest value accepted.
 * @return the variable's value, or @p dflt when it is unset, empty, not a
 *         whole number or outside [@p lo, @p hi] (the last two are warned
 *         about, with the variable, its value and the range).
 */
int rnicpi_env_int(const char *name, int dflt, int lo, int hi);

/** The unprivileged start rnicpi_unprivileged_port_start() assumes when
 *  the host's setting cannot be read (the kernel's default). */
#define RNICPI_UNPRIVILEGED_PORT_DEFAULT 1024

/**
 * @brief The first port a process without CAP_NET_BIND_SERVICE may listen
 *        on: the host's `net.ipv4.ip_unprivileged_port_start`
 *        (/proc/sys/net/ipv4/ip_unprivileged_port_start), read at each call.
 *
 * The one reader of the setting for the access layer, the providers and
 * the tests, so that all of them draw the privileged line at the same
 * port.
 *
 * @return the setting (0 to 65535), or #RNICPI_UNPRIVILEGED_PORT_DEFAULT
 *         when it cannot be read.
 */
uint32_t rnicpi_unprivileged_port_start(void);

/**
 * @brief Whether the calling thread has a capability in its effective set,
 *        the set the kernel checks (capget(2)).
 *
 * The effective set of the caller's own user namespace: where the network
 * namespace belongs to an ancestor user namespace, the kernel does not
 * count it for a port (ns_capable(net->user_ns)).
 *
 * @param cap the capability, e.g. CAP_NET_BIND_SERVICE (linux/capability.h).
 * @return TRUE when it has; FALSE when not, for an unknown capability, or
 *         when capget(2) fails.
 */
gboolean rnicpi_cap_effective(unsigned cap);

/**
 * @brief Whether another process has a capability in its effective set
 *        now, as its /proc/PID/status says (readable for every process,
 *        where capget(2) of another process may be refused): what a
 *        listener named by SO_PEERCRED may bind.
 * @param pid the process.
 * @param cap the capability (0 to 63).
 * @param has set on success to whether it has it.
 * @return TRUE when the process's capabilities could be read; FALSE when
 *         it is gone, cannot be seen, or @p cap is out of range (the caller
 *         decides what an unknown answer means).
 */
gboolean rnicpi_pid_cap_effective(pid_t pid, unsigned cap, gboolean *has);

/**
 * @brief Count one more object of a kind a device holds, within its limit.
 * @param count the device's count of that kind (read and changed atomically).
 * @param max the capability record's limit of that kind (max_pd, max_cq,
 *        max_qp, max_srq).
 * @return TRUE when counted; FALSE, nothing changed, when @p max objects
 *         exist already: the operation answers RNICPI_ELIMIT.
 */
static inline gboolean
rnicpi_count_take(gint *count, uint32_t max)
{
  if ((uint32_t) g_atomic_int_add(count, 1) < max)
    return TRUE;
  g_atomic_int_add(count, -1);
  return FALSE;
}

/**
 * @brief Count one object of a kind less (it was destroyed, or its
 *        creation failed after rnicpi_count_take()).
 * @param count the device's count of that kind.
 */
static inline void
rnicpi_count_put(gint *count)
{
  g_atomic_int_add(count, -1);
}

/**
 * @brief Whether a send-queue opcode is one of the 64-bit atomics.
 * @param op the opcode.
 * @return TRUE for #RNICPI_WR_ATOMIC_CMP_SWP and #RNICPI_WR_ATOMIC_FETCH_ADD.
 */
static inline gboolean
rnicpi_wr_is_atomic(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_ATOMIC_CMP_SWP || op == RNICPI_WR_ATOMIC_FETCH_ADD;
}

/**
 * @brief The moment a timeout ends, without overflow.
 * @param now_us the monotonic clock now, microseconds (g_get_monotonic_time()).
 * @param us the timeout, microseconds (rnicpi_conn_param_t.timeout_us).
 * @return @p now_us + @p us, or G_MAXINT64 (never) when the sum would not
 *         fit: UINT64_MAX, an application's IT_TIMEOUT_INFINITE, waits
 *         forever instead of wrapping to a moment already past.
 */
static inline gint64
rnicpi_deadline(gint64 now_us, uint64_t us)
{
  return us >= (uint64_t) (G_MAXINT64 - now_us) ? G_MAXINT64 : now_us + (gint64) us;
}

/**
 * @brief An asynchronous event with no Terminate detail.
 * @param type what happened.
 * @param ctx the CQ, QP or SRQ context, or the port number.
 * @param cause for queue pair events, what it was about.
 * @return the event, its Terminate fields #RNICPI_TERM_NONE.
 */
static inline rnicpi_async_event_t
rnicpi_async_event(rnicpi_async_type_t type, uint64_t ctx, rnicpi_async_cause_t cause)
{
  rnicpi_async_event_t ev = {
    .type = type, .ctx = ctx, .cause = cause, .term_layer = RNICPI_TERM_NONE,
    .term_etype = RNICPI_TERM_NONE, .term_code = RNICPI_TERM_NONE,
  };
  return ev;
}

/**
 * @brief Whether a queue pair event's cause is a violation of this side's
 *        memory rights by the peer (raised as ::RNICPI_ASYNC_QP_ACCESS_ERR).
 * @param cause the cause.
 * @return TRUE for the three access causes.
 */
static inline gboolean
rnicpi_async_cause_is_access(rnicpi_async_cause_t cause)
{
  return cause == RNICPI_AE_WRITE_ACCESS || cause == RNICPI_AE_READ_ACCESS ||
         cause == RNICPI_AE_ACCESS;
}

/**
 * @brief The queue pair event type a cause is raised as.
 * @param cause the cause.
 * @retval RNICPI_ASYNC_QP_ACCESS_ERR for the three access causes
 * @retval RNICPI_ASYNC_QP_REMOTE_ERR for what the peer reported
 * @retval RNICPI_ASYNC_QP_FATAL for the rest
 */
static inline rnicpi_async_type_t
rnicpi_async_type_of(rnicpi_async_cause_t cause)
{
  switch (cause) {
  case RNICPI_AE_WRITE_ACCESS:
  case RNICPI_AE_READ_ACCESS:
  case RNICPI_AE_ACCESS:
    return RNICPI_ASYNC_QP_ACCESS_ERR;
  case RNICPI_AE_REMOTE_ACCESS:
  case RNICPI_AE_REMOTE_RECV:
  case RNICPI_AE_REMOTE_RECV_LENGTH:
  case RNICPI_AE_REMOTE:
    return RNICPI_ASYNC_QP_REMOTE_ERR;
  default:
    return RNICPI_ASYNC_QP_FATAL;
  }
}

/**
 * @brief The name of a cause, for messages.
 * @param cause the cause.
 * @return its name without the prefix ("WRITE_ACCESS"), or "?" for a
 *         value this header does not know.
 */
static inline const char *
rnicpi_async_cause_name(rnicpi_async_cause_t cause)
{
  static const char *const names[] = {
    [RNICPI_AE_UNSPECIFIED] = "UNSPECIFIED", [RNICPI_AE_WRITE_ACCESS] = "WRITE_ACCESS",
    [RNICPI_AE_READ_ACCESS] = "READ_ACCESS", [RNICPI_AE_ACCESS] = "ACCESS",
    [RNICPI_AE_WRITE_CORRUPT] = "WRITE_CORRUPT", [RNICPI_AE_BAD_OPCODE] = "BAD_OPCODE",
    [RNICPI_AE_PROTOCOL] = "PROTOCOL", [RNICPI_AE_LLP] = "LLP",
    [RNICPI_AE_LOCAL_RECV] = "LOCAL_RECV", [RNICPI_AE_LOCAL_READ_RESP] = "LOCAL_READ_RESP",
    [RNICPI_AE_LOCAL] = "LOCAL", [RNICPI_AE_REMOTE_ACCESS] = "REMOTE_ACCESS",
    [RNICPI_AE_REMOTE_RECV] = "REMOTE_RECV", [RNICPI_AE_REMOTE_RECV_LENGTH] = "REMOTE_RECV_LENGTH",
    [RNICPI_AE_REMOTE] = "REMOTE",
  };
  return (size_t) cause < G_N_ELEMENTS(names) && names[cause] != NULL ? names[cause] : "?";
}

/**
 * @brief The responder's cause for a request of opcode @p op that broke
 *        its memory rights: the RDMA Write, RDMA Read or other access cause.
 * @param op the requester's opcode.
 * @return ::RNICPI_AE_WRITE_ACCESS, ::RNICPI_AE_READ_ACCESS or ::RNICPI_AE_ACCESS.
 */
static inline rnicpi_async_cause_t
rnicpi_access_cause(rnicpi_wr_opcode_t op)
{
  switch (op) {
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM:
    return RNICPI_AE_WRITE_ACCESS;
  case RNICPI_WR_RDMA_READ:
  case RNICPI_WR_RDMA_READ_INV:
    return RNICPI_AE_READ_ACCESS;
  default:
    return RNICPI_AE_ACCESS;
  }
}

/**
 * @brief Why a TCP connect failed, as a connection-management reason: one
 *        mapping for every provider and the access layer's host-stack
 *        connect.
 * @param err the errno of connect() or the socket's SO_ERROR.
 * @retval RNICPI_CM_REASON_NO_LISTENER a refusal or a reset (nothing
 *         listens there)
 * @retval RNICPI_CM_REASON_TIMEOUT no answer in time
 * @retval RNICPI_CM_REASON_RESOURCES this host ran out of files, buffers,
 *         memory or local ports
 * @retval RNICPI_CM_REASON_BAD_PATH anything else (no route, no address)
 */
static inline rnicpi_cm_reason_t
rnicpi_cm_reason_of_errno(int err)
{
  switch (err) {
  case ECONNREFUSED:
  case ECONNRESET:
    return RNICPI_CM_REASON_NO_LISTENER;
  case ETIMEDOUT:
    return RNICPI_CM_REASON_TIMEOUT;
  case EMFILE:
  case ENFILE:
  case ENOBUFS:
  case ENOMEM:
  case EADDRNOTAVAIL:
    return RNICPI_CM_REASON_RESOURCES;
  default:
    return RNICPI_CM_REASON_BAD_PATH;
  }
}

/**
 * @brief Whether @p sa names this host's loopback: 127.0.0.0/8, ::1, or an
 *        IPv4-mapped 127.x.y.z (the form a GID path carries).  The
 *        wildcards 0.0.0.0 and :: are not.
 * @param sa an AF_INET or AF_INET6 address; any other family is not
 *        loopback.
 * @return TRUE for a loopback address.
 */
static inline gboolean
rnicpi_addr_is_loopback(const struct sockaddr *sa)
{
  /* Read by copy: callers fill a sockaddr_storage through other types. */
  sa_family_t family;
  memcpy(&family, (const char *) sa + offsetof(struct sockaddr, sa_family), sizeof(family));
  if (family == AF_INET) {
    struct sockaddr_in s4;
    memcpy(&s4, sa, sizeof(s4));
    return (ntohl(s4.sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
  }
  if (family != AF_INET6)
    return FALSE;
  struct sockaddr_in6 s6;
  memcpy(&s6, sa, sizeof(s6));
  return IN6_IS_ADDR_LOOPBACK(&s6.sin6_addr) ||
         (IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr) && s6.sin6_addr.s6_addr[12] == IN_LOOPBACKNET);
}

/**
 * @brief The address a loopback destination stands for on a device that
 *        cannot reach the loopback itself (a device bound to a network
 *        interface other than `lo`, which holds 127.0.0.1): the device's
 *        own first address of @p family, else its first of the other
 *        family.  "Loopback" means "this host"; the host's listeners on
 *        the device listen on the device's addresses.
 * @param caps the device's capability record.
 * @param family AF_INET or AF_INET6: the destination's family.
 * @param out the address, port 0; written only when the answer is TRUE.
 * @retval TRUE @p caps lists addresses and none of them is a loopback
 *         one: connect to @p out (with the destination's port)
 * @retval FALSE the device lists a loopback address (it reaches the
 *         loopback as it is) or none at all: leave the destination alone
 */
static inline gboolean
rnicpi_caps_loopback_target(const rnicpi_caps_t *caps, int family, struct sockaddr_storage *out)
{
  uint32_t n = MIN(caps->num_addrs, (uint32_t) G_N_ELEMENTS(caps->addrs));
  const struct sockaddr_storage *same = NULL, *other = NULL;
  for (uint32_t i = 0; i < n; i++) {
    const struct sockaddr_storage *a = &caps->addrs[i];
    if (rnicpi_addr_is_loopback((const struct sockaddr *) a))
      return FALSE;
    if (a->ss_family == family) {
      if (same == NULL)
        same = a;
    } else if ((a->ss_family == AF_INET || a->ss_family == AF_INET6) && other == NULL) {
      other = a;
    }
  }
  const struct sockaddr_storage *pick = same != NULL ? same : other;
  if (pick == NULL)
    return FALSE;
  *out = *pick;
  if (out->ss_family == AF_INET)
    ((struct sockaddr_in *) out)->sin_port = 0;
  else
    ((struct sockaddr_in6 *) out)->sin6_port = 0;
  return TRUE;
}

/**
 * @brief Take a spin lock if it is free.
 * @param l the lock.
 * @return TRUE when the caller now holds it.
 */
static inline gboolean
rnicpi_spin_trylock(rnicpi_spin_t *l)
{
  return !__atomic_load_n(&l->held, __ATOMIC_RELAXED) &&
         !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE);
}

/**
 * @brief Release a spin lock the caller holds.
 * @param l the lock.
 */
static inline void
rnicpi_spin_unlock(rnicpi_spin_t *l)
{
  __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

/**
 * @brief Place @p n bytes of an inbound RDMA Write (or Read Response) in
 *        order: every byte before the last is stored, then the last.
 *
 * No specification orders the placement of one message's bytes, but
 * hardware places them in address order, and applications ported from it
 * (perftest's `ib_write_lat`, MPI's eager RDMA channels, the project's own
 * `itapi_pingpong`) learn that a Write has landed by polling its last byte.
 * A plain memcpy() may store the tail first (glibc's vector copies do, for
 * a few KiB), so a provider that copies payload places the final piece of
 * a message with this call.  It costs one byte store more than memcpy().
 * A reader that sees the last byte and then issues an acquire fence sees
 * every other byte.  A kernel copy does not keep that rule either: it is
 * one string instruction, whose stores the CPU may make visible out of
 * order (Intel SDM vol. 3, "Out-of-Order Stores For String Operations"),
 * though never before those of an earlier string instruction or store, nor
 * after a later one.  So a provider that has the kernel place payload
 * (recvmsg(), process_vm_writev()) leaves the last byte out of that copy
 * and places it after it, in a copy of its own.
 * @param dst where the bytes land.
 * @param src the payload.
 * @param n how many bytes (0 does nothing).
 */
static inline void
rnicpi_place(void *dst, const void *src, size_t n)
{
  if (n == 0)
    return;
  uint8_t *d = dst;
  const uint8_t *s = src;
  if (n > 1)
    memcpy(d, s, n - 1);
  __atomic_store_n(d + n - 1, s[n - 1], __ATOMIC_RELEASE);
}

/**
 * A completion ring with the RNIC-PI rules built in: it never drops an
 * entry (past its declared depth it grows, and the first crossing is
 * reported so the provider can raise ::RNICPI_ASYNC_CQ_OVERFLOW), and an
 * arm request is answered once, by the next push.
 */
typedef struct rnicpi_cq_ring {
  rnicpi_spin_t lock;   /**< guards every field below (count is also read without it) */
  rnicpi_wc_t *ring;    /**< entries, a power-of-two array */
  uint32_t cap;         /**< entries the array holds */
  uint32_t head;        /**< index of the oldest entry */
  uint32_t count;       /**< entries held */
  uint32_t depth;       /**< the depth the CQ was created with */
  gboolean armed;       /**< the next push answers an arm request */
  gboolean overflowed;  /**< more than depth entries since it was last empty */
  struct rnicpi_notify to; /**< where its notifications go (rnicpi_cq_ring_init()) */
} rnicpi_cq_ring_t;

/** What rnicpi_cq_ring_push() asks the provider to do after it. */
enum rnicpi_cq_push_result {
  RNICPI_CQ_PUSH_NOTIFY = 1u << 0,   /**< deliver the cq_notify upcall (outside your locks) */
  RNICPI_CQ_PUSH_OVERFLOW = 1u << 1, /**< raise ::RNICPI_ASYNC_CQ_OVERFLOW once */
};

/**
 * @brief Set up a ring for a CQ of @p depth entries.
 * @param r the ring.
 * @param depth declared depth (at least 1).
 * @param to where its notifications go (copied).
 */
void rnicpi_cq_ring_init(rnicpi_cq_ring_t *r, uint32_t depth, const rnicpi_notify_t *to);

/**
 * @brief Release a ring's memory.
 * @param r the ring.
 */
void rnicpi_cq_ring_clear(rnicpi_cq_ring_t *r);

/**
 * @brief Double a full ring's array (with its lock held; called by
 *        rnicpi_cq_ring_push()).
 * @param r the ring.
 */
void rnicpi_cq_ring_grow(rnicpi_cq_ring_t *r);

/**
 * @brief Append one completion.  Inline: a provider pushes one per
 *        completed request on its data path.
 * @param r the ring.
 * @param wc the completion.
 * @return an OR of ::rnicpi_cq_push_result bits.
 */
static inline unsigned
rnicpi_cq_ring_push(rnicpi_cq_ring_t *r, const rnicpi_wc_t *wc)
{
  unsigned out = 0;
  rnicpi_spin_lock(&r->lock);
  if (G_UNLIKELY(r->count == r->cap))
    rnicpi_cq_ring_grow(r);
  r->ring[(r->head + r->count) & (r->cap - 1)] = *wc;
  __atomic_store_n(&r->count, r->count + 1, __ATOMIC_RELAXED); /* read unlocked by poll */
  if (G_UNLIKELY(r->count > r->depth) && !r->overflowed) {
    r->overflowed = TRUE;
    out |= RNICPI_CQ_PUSH_OVERFLOW;
  }
  /* armed is written under the lock but may be read without it (by a
   * provider's progress thread): atomic on both sides. */
  if (G_UNLIKELY(__atomic_load_n(&r->armed, __ATOMIC_RELAXED))) {
    __atomic_store_n(&r->armed, FALSE, __ATOMIC_SEQ_CST);
    out |= RNICPI_CQ_PUSH_NOTIFY;
  }
  rnicpi_spin_unlock(&r->lock);
  return out;
}

/**
 * @brief Take up to @p n completions, oldest first.  Inline: an empty ring
 *        (a busy poller's usual case) costs one load and no lock.  A push
 *        racing that look is found by the next poll; one that finished
 *        before it, or before an arm of the ring, is seen (the lock orders
 *        them).
 * @param r the ring.
 * @param wc where to put them.
 * @param n room in @p wc.
 * @return how many were taken (0 when empty).
 */
static inline int
rnicpi_cq_ring_poll(rnicpi_cq_ring_t *r, rnicpi_wc_t *wc, int n)
{
  int got = 0;
  if (__atomic_load_n(&r->count, __ATOMIC_RELAXED) == 0 || n <= 0)
    return 0;
  rnicpi_spin_lock(&r->lock);
  while (got < n && r->count > 0) {
    wc[got++] = r->ring[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    __atomic_store_n(&r->count, r->count - 1, __ATOMIC_RELAXED);
  }
  if (r->count == 0)
    r->overflowed = FALSE;
  rnicpi_spin_unlock(&r->lock);
  return got;
}

/**
 * @brief Completions held.
 * @param r the ring.
 * @return the count.
 */
static inline uint32_t
rnicpi_cq_ring_count(rnicpi_cq_ring_t *r)
{
  /* No lock: count is stored atomically for unlocked readers (as poll's
   * empty check); a relaxed read sees a value it really held. */
  return __atomic_load_n(&r->count, __ATOMIC_RELAXED);
}

/**
 * @brief Ask for one notification at the next push.
 * @param r the ring.
 */
void rnicpi_cq_ring_arm(rnicpi_cq_ring_t *r);

/**
 * CQ notifications to deliver once the provider's locks are released: an
 * upcall may call back into the provider (rnicpi.h), so completions found
 * under a lock are batched and notified after it.  Entries are copies, not
 * CQ pointers: the CQ may be gone by then.  Start it empty with
 * rnicpi_notify_batch_init() (or zero it whole).
 */
typedef struct rnicpi_notify_batch {
  rnicpi_notify_t notify[8]; /**< the first notifications, without allocation */
  int nnotify;               /**< entries used in notify[] */
  GArray *more;              /**< of rnicpi_notify_t, past notify[], allocated on demand */
} rnicpi_notify_batch_t;

/**
 * @brief Make @p b an empty batch.  Cheaper than zeroing it on a data path:
 *        the entries are left as they are, only the counts are set.
 * @param b the batch.
 */
static inline void
rnicpi_notify_batch_init(rnicpi_notify_batch_t *b)
{
  b->nnotify = 0;
  b->more = NULL;
}

/**
 * @brief Whether @p b holds notifications to deliver.
 * @param b the batch.
 * @return TRUE when rnicpi_notify_batch_deliver() has something to do.
 */
static inline gboolean
rnicpi_notify_batch_pending(const rnicpi_notify_batch_t *b)
{
  return b->nnotify != 0 || b->more != NULL;
}

/**
 * @brief Queue the notification of a ring whose push answered
 *        ::RNICPI_CQ_PUSH_NOTIFY (call it under the lock the push was made under).
 * @param b the batch.
 * @param r the ring.
 */
void rnicpi_notify_batch_add(rnicpi_notify_batch_t *b, const rnicpi_cq_ring_t *r);

/**
 * @brief Deliver every notification of the batch, in order, and empty it.
 *        Call it with none of the provider's locks held.
 * @param b the batch.
 */
void rnicpi_notify_batch_deliver(rnicpi_notify_batch_t *b);

/**
 * @brief Wait until every notification counted in @p inflight is delivered.
 *
 * A device's close calls it (with no lock held) after its CQs are gone, so
 * that no cq_notify upcall runs once close returns (rnicpi.h).  Called from
 * inside a delivery (an upcall that closes the device), it does not wait
 * for that delivery's own entries.
 *
 * @param inflight the device's count (::rnicpi_notify_t).
 */
void rnicpi_notify_quiesce(gint *inflight);

/**
 * @brief Append one completion to a CQ's ring; when the push answers an arm
 *        request, queue the CQ's notification in @p b.
 * @param r the CQ's ring.
 * @param wc the completion.
 * @param b the batch delivered once the provider's locks are released.
 * @return TRUE when the ring just went past its depth: the provider raises
 *         ::RNICPI_ASYNC_CQ_OVERFLOW for the CQ (once).
 */
static inline gboolean
rnicpi_cq_ring_push_notify(rnicpi_cq_ring_t *r, const rnicpi_wc_t *wc, rnicpi_notify_batch_t *b)
{
  unsigned out = rnicpi_cq_ring_push(r, wc);
  if (G_UNLIKELY(out & RNICPI_CQ_PUSH_NOTIFY))
    rnicpi_notify_batch_add(b, r);
  return (out & RNICPI_CQ_PUSH_OVERFLOW) != 0;
}

/**
 * A FIFO of work-queue entries linked through a pointer inside each entry,
 * at byte offset rnicpi_fifo::off: queueing allocates nothing.  An entry can sit in
 * two FIFOs at once through two links (a Read in the send queue and in
 * the queue of Reads waiting for their response).  No locking: callers
 * hold their queue pair's lock.
 */
typedef struct rnicpi_fifo {
  void *head;   /**< first entry, NULL when empty */
  void *tail;   /**< last entry, NULL when empty */
  uint32_t len; /**< entries queued */
  uint32_t off; /**< offset of the link pointer inside an entry */
} rnicpi_fifo_t;

/** The link pointer of entry @p e in FIFO @p f. */
#define RNICPI_FIFO_LINK(f, e) (*(void **) ((char *) (e) + (f)->off))

/**
 * @brief Make @p f an empty FIFO whose entries link at @p link_offset.
 * @param f the FIFO.
 * @param link_offset offsetof() the link pointer in the entry type.
 */
static inline void
rnicpi_fifo_init(rnicpi_fifo_t *f, size_t link_offset)
{
  f->head = f->tail = NULL;
  f->len = 0;
  f->off = (uint32_t) link_offset;
}

/**
 * @brief Whether @p f holds no entry.
 * @param f the FIFO.
 * @return TRUE when empty.
 */
static inline gboolean
rnicpi_fifo_empty(const rnicpi_fifo_t *f)
{
  return f->head == NULL;
}

/**
 * @brief The first entry, left in place.
 * @param f the FIFO.
 * @return the entry, or NULL when empty.
 */
static inline void *
rnicpi_fifo_peek(const rnicpi_fifo_t *f)
{
  return f->head;
}

/**
 * @brief Append @p e.
 * @param f the FIFO.
 * @param e an entry in no other position of @p f.
 */
static inline void
rnicpi_fifo_push(rnicpi_fifo_t *f, void *e)
{
  RNICPI_FIFO_LINK(f, e) = NULL;
  if (f->tail != NULL)
    RNICPI_FIFO_LINK(f, f->tail) = e;
  else
    f->head = e;
  f->tail = e;
  f->len++;
}

/**
 * @brief Put @p e first (an entry taken back).
 * @param f the FIFO.
 * @param e an entry in no other position of @p f.
 */
static inline void
rnicpi_fifo_push_head(rnicpi_fifo_t *f, void *e)
{
  RNICPI_FIFO_LINK(f, e) = f->head;
  f->head = e;
  if (f->tail == NULL)
    f->tail = e;
  f->len++;
}

/**
 * @brief Unlink @p e, which follows @p prev.
 * @param f the FIFO.
 * @param prev the entry before @p e, or NULL when @p e is the first.
 * @param e the entry to unlink.
 */
static inline void
rnicpi_fifo_unlink(rnicpi_fifo_t *f, void *prev, void *e)
{
  if (prev != NULL)
    RNICPI_FIFO_LINK(f, prev) = RNICPI_FIFO_LINK(f, e);
  else
    f->head = RNICPI_FIFO_LINK(f, e);
  if (f->tail == e)
    f->tail = prev;
  f->len--;
}

/**
 * @brief Take the first entry.
 * @param f the FIFO.
 * @return the entry, or NULL when empty.
 */
static inline void *
rnicpi_fifo_pop(rnicpi_fifo_t *f)
{
  void *e = f->head;
  if (e != NULL)
    rnicpi_fifo_unlink(f, NULL, e);
  return e;
}

/**
 * @brief Unlink @p e wherever it is: a walk, for short queues only.
 * @param f the FIFO.
 * @param e the entry; nothing happens when it is not in @p f.
 */
static inline void
rnicpi_fifo_remove(rnicpi_fifo_t *f, void *e)
{
  void *prev = NULL;
  for (void *x = f->head; x != NULL; prev = x, x = RNICPI_FIFO_LINK(f, x))
    if (x == e) {
      rnicpi_fifo_unlink(f, prev, x);
      return;
    }
}

/**
 * Freed work-queue entries of one size kept for reuse (the first word of a
 * free entry links it): a post allocates nothing once its queue has been
 * as deep as it gets.  No locking: callers hold their queue's lock.
 */
typedef struct rnicpi_cache {
  void *top; /**< the last entry put back, NULL when none */
} rnicpi_cache_t;

/**
 * @brief An entry of @p size bytes: one put back earlier, or a new one.
 * @param c the cache.
 * @param size bytes per entry (the same for every call on @p c).
 * @return the entry, contents undefined.
 */
static inline void *
rnicpi_cache_get(rnicpi_cache_t *c, size_t size)
{
  void *p = c->top;
  if (G_UNLIKELY(p == NULL))
    return g_malloc(size);
  c->top = *(void **) p;
  return p;
}

/**
 * @brief rnicpi_cache_get(), the entry zeroed.
 * @param c the cache.
 * @param size the size of an entry (the same for every call on @p c).
 * @return an entry of @p size bytes, all zero.
 */
static inline void *
rnicpi_cache_get0(rnicpi_cache_t *c, size_t size)
{
  return memset(rnicpi_cache_get(c, size), 0, size);
}

/**
 * @brief Keep @p p for the next rnicpi_cache_get().
 * @param c the cache.
 * @param p an entry that left every queue.
 */
static inline void
rnicpi_cache_put(rnicpi_cache_t *c, void *p)
{
  *(void **) p = c->top;
  c->top = p;
}

/**
 * @brief Free every entry kept (the queue pair is going away).
 * @param c the cache.
 */
static inline void
rnicpi_cache_clear(rnicpi_cache_t *c)
{
  void *p;
  while ((p = c->top) != NULL) {
    c->top = *(void **) p;
    g_free(p);
  }
}

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* RNICPI_UTIL_H */
