/*
 * vp/emul CM across processes: the connection object, the handshake
 * with another process (REQ, PROBE, ATTACH, REP or REJ, RTU) on both
 * sides, and the dispatch of the messages read from its socket
 * (emul_ring_on_msg).  The listeners are emul_ring_listen.c's; the socket
 * and its messages, sent and read, emul_ring_msg.c's; the end of a
 * connection (DISC or BREAK, the peer's death) emul_ring_teardown.c's.
 * Design: emul_ring.h, "CM".
 *
 * Run-time knobs: ITAPI_EMUL_CMA=0 forbids cross-memory attach; payloads of
 * every connection made afterwards go through the shared-memory bounce
 * ring.  ITAPI_EMUL_TRUST=0 trusts no peer (below).  ITAPI_EMUL_TIMEOUT_MS
 * is how long a peer may take nothing from a ring with frames waiting
 * (emul_ring.h, "Timeout").  All are read at each connection (a listener's
 * when it starts listening), so a process may change them.
 *
 * Trust.  A peer gets this process's region table, its bell eventfd and
 * mappings of its regions (emul_mapped.c) only when it could reach this
 * process's memory anyway: it runs as our effective user (SO_PEERCRED,
 * never what it claims) and the kernel lets it attach to us, which it
 * proves by reading a random nonce of ours (x->nonce, private memory,
 * never sent) with process_vm_readv and sending back what it read; the
 * kernel's own rule (ptrace access mode, Yama, dumpability, containers)
 * decides, not ours.  Any other peer gets the connection segment (its
 * rings) and nothing else: every payload goes through the rings, and this
 * process executes the peer's requests itself, checking key, domain,
 * bounds and rights in its own tables (emul_ring_resp.c).  The proofs
 * cross before the consumer sees the request: REQ (the active's nonce) ->
 * PROBE (the passive's proof and nonce) -> ATTACH (the active's proof, and
 * to a trusted passive its table and bell) -> the request is raised ->
 * REP (to a trusted active the passive's table and bell).
 *
 * Rules:
 * - everything here runs under the fabric lock; upcalls go through the
 *   event thread (CM, async) or emul_work_deliver after the lock (CQs);
 * - socket callbacks run on the progress thread and enter with
 *   emul_ring_enter (emul_progress.c): a socket is closed only under the
 *   lock, so a callback never sees a freed xconn;
 * - no call here blocks on a peer: sockets are non-blocking and a peer
 *   that stops answering is only waited for by the application's own
 *   (bounded) waits; its death is an EOF.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#include "emul_ring.h"

GList *emul_ring_conns;                /* every live emul_xconn_t */
/* g_list_length(emul_ring_conns), read without the lock by every poll of a CQ:
 * alone on its line, written only when a connection comes or goes. */
_Alignas(64) gint emul_ring_nconn;

/* ---- connections ---- */

/* The peer's process and effective user, as the kernel saw them when the
 * socket connected; an unknown peer is no user of ours ((uid_t) -1). */
pid_t
emul_ring_peer_cred(int fd, uid_t *uid)
{
  struct ucred cr;
  socklen_t len = sizeof(cr);
  *uid = (uid_t) -1;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
    return 0;
  *uid = cr.uid;
  return cr.pid;
}


/* A connection's nonce: random, never 0 (a proof of 0 is "nothing read");
 * drawn with no lock held (a system call). */
uint64_t
emul_ring_nonce_new(void)
{
  uint64_t v = 0;
  while (v == 0) {
    if (getrandom(&v, sizeof(v), 0) != (ssize_t) sizeof(v))
      v = (uint64_t) g_random_int() << 32 | g_random_int();
  }
  return v;
}

/* The knobs of a connection, read by the application's thread when it
 * connects or listens: the progress thread never reads the environment,
 * which the application may change meanwhile (getenv races setenv). */
emul_ring_knobs_t
emul_ring_knobs_read(void)
{
  return (emul_ring_knobs_t) {
    .no_cma = g_strcmp0(g_getenv("ITAPI_EMUL_CMA"), "0") == 0,
    .no_trust = g_strcmp0(g_getenv("ITAPI_EMUL_TRUST"), "0") == 0,
    .timeout_ms = (uint32_t) rnicpi_env_int("ITAPI_EMUL_TIMEOUT_MS", X_TIMEOUT_MS, 0, INT_MAX),
  };
}

/* The peer's memory file x_probe opened, taken by the connection (fabric
 * lock held; one per connection: a second probe's is closed with @pre). */
static void
x_take_mem(emul_xconn_t *x, x_pre_t *pre)
{
  if (x->peer_mem < 0 && pre->mem >= 0) {
    x->peer_mem = pre->mem;
    pre->mem = -1;
  }
}

/* A connection's bell, given to the peer with REQ or REP: an application
 * thread sleeps on it (emul_ring_cq_wait_begin).  Without one (-1), the
 * progress thread's doorbell serves. */
int
emul_ring_bell_new(void)
{
  return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/* A connection over socket @fd to process @pid (pinned by @pidfd, or -1),
 * with its bell @bell_fd: all made with no lock held (x_listen_ready,
 * emul_ring_dial_open); the connection is made under the fabric lock.
 * @k: the knobs when its listener or connect started (no_cma is read by
 * the progress thread as it reads the handshake, x_conn_pre: set before
 * the watch). */
emul_xconn_t *
emul_ring_conn_new(int fd, int side, pid_t pid, int pidfd, uid_t uid, uint64_t nonce, int bell_fd,
                   const emul_ring_knobs_t *k)
{
  emul_xconn_t *x = g_new0(emul_xconn_t, 1);
  x->ref = 1;
  x->fd = fd;
  x->side = side;
  x->peer_pid = pid;
  x->peer_pidfd = pidfd;
  x->peer_mem = -1;
  x->peer_uid = uid;
  x->no_trust = k->no_trust;
  x->nonce = nonce;
  x->no_cma = k->no_cma;
  x->timeout_us = (gint64) k->timeout_ms * 1000;
  x->bell_fd = bell_fd;
  x->peer_bell_fd = -1;
  g_queue_init(&x->out);
  g_mutex_init(&x->mlock);
  g_queue_init(&x->msgs);
  /* The source's reference: its callback reads the socket before it takes
   * the fabric lock; dropped once the source is destroyed and no callback
   * runs (x_sock_close).  It starts watching once the lock is let go, as
   * the connection's first messages leave (emul_ring_msgs_flush). */
  g_atomic_int_inc(&x->ref);
  x->src = emul_ring_watch_new(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, emul_ring_conn_ready, x,
                               (GDestroyNotify) emul_ring_conn_unref);
  x->watch_due = TRUE;
  emul_ring_peer_watch_new(x);
  emul_ring_doorbell(x, X_BELL_MSGS);
  emul_ring_conns = g_list_prepend(emul_ring_conns, x);
  g_atomic_int_inc(&emul_ring_nconn);
  return x;
}

/* The last reference may go with no lock held: the thread that rang a
 * doorbell or sent the socket's messages (emul_ring_bells_ring) holds one
 * until then. */
void
emul_ring_conn_unref(emul_xconn_t *x)
{
  /* The last reference, dropped under the fabric lock, goes as the lock
   * does: an owed bell takes it (its unmappings and closes are system
   * calls).  Nobody else holds one to add to it meanwhile. */
  if (emul_fabric_mine && g_atomic_int_get(&x->ref) == 1)
    emul_ring_doorbell(x, 0);
  if (!g_atomic_int_dec_and_test(&x->ref))
    return;
  /* Unmapped with the last reference: a spinning progress thread may
   * still look at the ring's words. */
  if (x->seg != NULL)
    munmap(x->seg, X_SEG_SIZE);
  if (x->peer_mrs != NULL)
    munmap((void *) x->peer_mrs, X_MR_CAP * sizeof(x_mr_entry_t));
  emul_ring_maps_free(x);
  /* Closed with the last reference too: a thread may sleep on bell_fd. */
  if (x->bell_fd >= 0)
    close(x->bell_fd);
  if (x->peer_bell_fd >= 0)
    close(x->peer_bell_fd);
  /* And the pin: a long attach copy holds a reference. */
  if (x->peer_pidfd >= 0)
    close(x->peer_pidfd);
  if (x->peer_mem >= 0)
    close(x->peer_mem);
  x_sockmsg_t *e;
  while ((e = g_queue_pop_head(&x->msgs)) != NULL) {
    if (e->upcall != NULL)
      emul_events_raise(e->upcall);  /* the messages ahead are dropped, not the event */
    emul_ring_sockmsg_drop(e);
    g_free(e);
    g_atomic_int_add(&emul_ring_msgs_owed, -1);
  }
  if (!x->sock_closed)
    close(x->fd);
  g_mutex_clear(&x->mlock);
  g_free(x->held_req);
  g_free(x);
}

/* Release everything a connection holds; the peer sees EOF. */
void
emul_ring_close(emul_xconn_t *x)
{
  if (x->dead)
    return;
  x->dead = TRUE;
  g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: connection to process %d closed: %" G_GUINT64_FORMAT
        " frames taken under its QP's link alone, %" G_GUINT64_FORMAT " under the fabric lock",
        (int) x->peer_pid, __atomic_load_n(&x->rx_link, __ATOMIC_RELAXED),
        __atomic_load_n(&x->rx_full, __ATOMIC_RELAXED));
  emul_ring_conns = g_list_remove(emul_ring_conns, x);
  g_atomic_int_add(&emul_ring_nconn, -1);
  if (x->qp != NULL && x->qp->x == x)
    __atomic_store_n(&x->qp->x, NULL, __ATOMIC_RELAXED);  /* read unlocked as a hint (x_hot_candidate) */
  emul_ring_free_queues(x);
  if (x->conn != NULL) {
    x->conn->x = NULL;
    x->conn = NULL;
  }
  /* A thread asleep on the bell wakes and lets the connection go. */
  if (x->waiters > 0 && x->bell_fd >= 0)
    emul_ring_doorbell(x, X_BELL_SELF);
  /* The socket closes (the peer sees EOF), and its watch goes, once the
   * messages queued before this are sent, with the lock let go. */
  g_mutex_lock(&x->mlock);
  x->sock_close = TRUE;
  g_mutex_unlock(&x->mlock);
  emul_ring_doorbell(x, X_BELL_MSGS);
  /* The peer's region table and its regions mapped here stay mapped until
   * the last reference goes (a long copy may use them; the thread that
   * owes the close above holds one): unmapped with no lock held, most of
   * the time. */
  x->map_gen++;
  emul_ring_conn_unref(x);
}

static void
x_pdata(x_msg_t *m, const void *pdata, uint32_t len)
{
  m->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
  if (m->pdata_len > 0)
    memcpy(m->pdata, pdata, m->pdata_len);
}

/* ---- active side ---- */

/* Whether process @pid (uid @uid, SO_PEERCRED) may listen on a privileged
 * port: root, or CAP_NET_BIND_SERVICE in its effective set.  A process
 * whose capabilities cannot be read is not believed. */
static gboolean
x_may_bind_privileged(pid_t pid, uid_t uid)
{
  gboolean has = FALSE;
  return uid == 0 || (rnicpi_pid_cap_effective(pid, CAP_NET_BIND_SERVICE, &has) && has);
}

gboolean
emul_ring_dial_open(uint32_t port, emul_dial_t *d)
{
  *d = EMUL_DIAL_NONE;
  if (!emul_ring_init())
    return FALSE;
  /* A listener's backlog may be full for a moment (a burst of requests):
   * wait for it as long as for a stalled peer, 0 (never) meaning 60 s. */
  uint32_t wait_ms = emul_ring_knobs_read().timeout_ms;
  d->fd = emul_ring_dial("", port, wait_ms != 0 ? wait_ms : 60000);
  if (d->fd < 0)
    return FALSE; /* nobody listens there: unreachable, as in-process */
  d->pid = (int) emul_ring_peer_cred(d->fd, &d->uid);
  d->pidfd = emul_ring_peer_pin(d->fd, (pid_t) d->pid);
  /* Any process may bind an abstract socket name: below the host's
   * unprivileged start, only a listener that could bind the TCP port is
   * believed (the access layer refuses the others their listen), as its
   * pin, alive after the look, says it was the one looked at. */
  if (port < rnicpi_unprivileged_port_start() &&
      (!x_may_bind_privileged((pid_t) d->pid, d->uid) || !emul_ring_peer_alive(d->pidfd))) {
    g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d (uid %d) answers on privileged port %u "
          "without CAP_NET_BIND_SERVICE: not connecting to it (find who binds the abstract socket "
          "itapi-emul/%u)", d->pid, (int) d->uid, port, port);
    emul_ring_dial_close(d);
    return FALSE;
  }
  /* Sealed at its size: the peer maps it, and a file that could shrink
   * under a mapping would SIGBUS it (the peer checks, x_seg_map). */
  d->seg_fd = memfd_create("itapi-emul-conn", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void *seg = MAP_FAILED;
  if (d->seg_fd >= 0 && ftruncate(d->seg_fd, X_SEG_SIZE) == 0 &&
      fcntl(d->seg_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    seg = mmap(NULL, X_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, d->seg_fd, 0);
  d->seg = seg != MAP_FAILED ? seg : NULL;
  if (d->seg == NULL) {
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no shared segment for a connection to port %u: %s",
          port, g_strerror(errno));
    emul_ring_dial_close(d);
    return FALSE;
  }
  d->bell_fd = emul_ring_bell_new();
  d->nonce = emul_ring_nonce_new();
  emul_random_ready();  /* the segment's keys (emul_ring_connect) */
  return TRUE;
}

void
emul_ring_dial_close(emul_dial_t *d)
{
  if (d->seg != NULL)
    munmap(d->seg, X_SEG_SIZE);
  if (d->seg_fd >= 0)
    close(d->seg_fd);
  if (d->bell_fd >= 0)
    close(d->bell_fd);
  if (d->pidfd >= 0)
    close(d->pidfd);
  if (d->fd >= 0)
    close(d->fd);
  *d = EMUL_DIAL_NONE;
}

void
emul_ring_connect(emul_qp_t *qp, emul_dial_t *d, gboolean v6, const rnicpi_conn_param_t *p)
{
  emul_ring_knobs_t k = emul_ring_knobs_read();
  emul_xconn_t *x = emul_ring_conn_new(d->fd, 0, (pid_t) d->pid, d->pidfd, d->uid, d->nonce,
                                       d->bell_fd, &k);
  int seg_fd = d->seg_fd;
  x->seg = d->seg;
  *d = EMUL_DIAL_NONE;
  x->seg->magic = X_MAGIC;
  x->seg->ring_size = X_RING_SIZE;
  x->seg->ring[0].armed = x->seg->ring[1].armed = 1;  /* until a consumer says it polls */
  for (int i = 0; i < 2; i++)  /* the top bit: no mark is ever 0, the ring's first content */
    x->seg->key[i] = ((uint64_t) emul_random_u32() << 32 | emul_random_u32()) | UINT64_C(1) << 63;
  x->key_out = x->seg->key[0];
  x->key_in = x->seg->key[1];
  x->seg->access[0] = qp->attr.access;
  x->seg->ird[0] = p->ird;
  x->qp = qp;
  __atomic_store_n(&qp->x, x, __ATOMIC_RELAXED);

  emul_conn_t *c = g_new0(emul_conn_t, 1);
  c->id = emul_fabric.next_conn_id++;
  c->state = CONN_REQUESTED;
  c->active = qp;
  c->ird = p->ird;
  c->ord = p->ord;
  c->three_way = p->three_way;
  c->x = x;
  x->conn = c;
  qp->conn = c;
  qp->attr.ird = p->ird;
  qp->attr.ord = p->ord;
  g_hash_table_insert(emul_fabric.conns, &c->id, c);
  emul_cm_arm(c, p->timeout_us);

  x_msg_t m = {
    .type = X_REQ, .qpn = qp->base.qp_num, .ird = p->ird, .ord = p->ord,
    .three_way = p->three_way, .pd_id = qp->pd->id,
    .probe_addr = (uint64_t) (uintptr_t) &x->nonce, .fds = X_FD_SEG,
    .pers = (uint32_t) emul_pers_of_qp(qp)->id, .atomics = emul_qp_atomics(qp), .v6 = v6,
  };
  x_pdata(&m, p->pdata, p->pdata_len);
  /* The segment's descriptor is the message's (closed once sent).  A
   * listener gone between connect and send: its EOF says so from the
   * progress thread. */
  emul_ring_send_msg(x, &m, &seg_fd, 1, 1u);
}

static void
x_established(emul_qp_t *qp, emul_conn_t *c, const void *pdata, uint32_t len)
{
  qp->state = RNICPI_QPS_RTS;
  if (qp->link == NULL)
    emul_link_join_ring(qp);
  emul_ring_access_changed(qp);  /* the negotiated IRD, for the peer */
  qp->x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_qp_cm_event(qp, RNICPI_CM_ESTABLISHED, pdata, len);
}

/* The peer's bell eventfd: the message's descriptor *@fd becomes the
 * connection's (the others are closed after it is handled). */
static void
x_take_peer_bell(emul_xconn_t *x, int *fd)
{
  if (fd != NULL && *fd >= 0 && x->peer_bell_fd < 0) {
    x->peer_bell_fd = *fd;
    *fd = -1;
  }
}

/* What a trusted peer gave with its ATTACH or REP (@pre): its region
 * table, which makes this process attach to it for payload when it can
 * (x->probed) and may, and its bell.  An untrusted peer's bell is never
 * written to: a descriptor shared with the peer could be made to block. */
static void
x_take_gifts(emul_xconn_t *x, x_pre_t *pre)
{
  if (pre->table != MAP_FAILED) {
    x->peer_mrs = pre->table;
    pre->table = MAP_FAILED;
  }
  x->cma_out = x->probed && x->peer_mrs != NULL;
  if (x->trusted)
    x_take_peer_bell(x, &pre->bell);
  if (x->probed && x->peer_mrs == NULL)
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: process %d does not trust process %d: its payloads go "
          "through the ring", (int) x->peer_pid, (int) getpid());
}

static void
x_on_rep(emul_xconn_t *x, const x_msg_t *m, x_pre_t *pre, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_qp_t *qp = x->qp;
  if (c == NULL || qp == NULL || c->state != CONN_REQUESTED || !x->probe_seen || pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "a reply %s", pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  x->peer_pd = m->pd_id;
  x->peer_qpn = m->qpn;
  x_take_gifts(x, pre);
  qp->atomics = emul_qp_atomics(qp) && m->atomics != 0;
  emul_cm_settle(qp, m->ird, m->ord);  /* as in-process (emul_cm.c) */
  emul_xconn_t *after = emul_events_after;
  emul_events_after = x;  /* the event leaves after the answer (emul_ring_teardown) */
  if (c->three_way) {
    c->state = CONN_REPLIED;
    rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
    ev->type = RNICPI_CM_CONNECT_REPLY;
    ev->qp_ctx = qp->base.al_ctx;
    ev->conn_id = c->id;
    ev->ird = qp->ird;
    ev->ord = qp->ord;
    emul_cm_fill_pdata(ev, m->pdata, m->pdata_len);
    emul_defer_cm(emul_qp_dev(qp), ev);
    g_free(ev);
  } else {
    x_established(qp, c, m->pdata, m->pdata_len);
  }
  emul_events_after = after;
}

/* ---- passive side ---- */

static void
x_on_req(emul_xconn_t *x, const x_msg_t *m, x_pre_t *pre, emul_work_t *w)
{
  emul_listen_t *l = x->listener;
  if (l == NULL || x->conn != NULL || x->seg != NULL || pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "a connection request %s",
                             pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  if (m->pers != (uint32_t) to_emul_dev(l->base.dev)->pers->id) {
    /* An HCA does not reach an RNIC: refused as by a non-peer. */
    x_msg_t r = { .type = X_REJ, .reason = RNICPI_CM_REASON_BAD_PATH };
    emul_ring_send_msg(x, &r, NULL, 0, 0);
    emul_ring_close(x);
    return;
  }
  x_seg_hdr_t *seg = pre->seg;
  if (seg == MAP_FAILED || __atomic_load_n(&seg->magic, __ATOMIC_RELAXED) != X_MAGIC ||
      __atomic_load_n(&seg->ring_size, __ATOMIC_RELAXED) != X_RING_SIZE) {
    /* the mappings go after the lock (x_pre_drop) */
    emul_ring_peer_violation(x, w, "a connection segment of another layout (not version %08x)", X_MAGIC);
    return;
  }
  x->seg = pre->seg;
  pre->seg = MAP_FAILED;
  /* Read once: the peer may change them in the segment, not for us. */
  x->key_out = __atomic_load_n(&x->seg->key[1], __ATOMIC_RELAXED);
  x->key_in = __atomic_load_n(&x->seg->key[0], __ATOMIC_RELAXED);
  x->peer_pd = m->pd_id;
  x->peer_qpn = m->qpn;
  x->probed = pre->cma;
  x_take_mem(x, pre);

  emul_conn_t *c = g_new0(emul_conn_t, 1);
  c->id = emul_fabric.next_conn_id++;
  c->state = CONN_REQUESTED;
  c->listener = l;
  c->ird = m->ird;
  c->ord = m->ord;
  c->three_way = m->three_way != 0;
  c->peer_atomics = m->atomics != 0;
  c->x = x;
  x->conn = c;
  g_hash_table_insert(emul_fabric.conns, &c->id, c);

  /* The consumer sees the request once the proofs crossed (Trust). */
  x->held_req = g_memdup2(m, sizeof(*m));
  x_msg_t p = { .type = X_PROBE, .probe_addr = (uint64_t) (uintptr_t) &x->nonce, .proof = pre->proof,
                .attach = pre->cma };
  emul_ring_send_msg(x, &p, NULL, 0, 0);
}

/* The active side's ATTACH: its proof, and a trusted peer's gifts; the
 * request held since REQ goes to the consumer. */
static void
x_on_attach(emul_xconn_t *x, const x_msg_t *a, x_pre_t *pre, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_listen_t *l = x->listener;
  if (x->side != 1 || x->held_req == NULL || c == NULL || c->passive != NULL || l == NULL ||
      pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "an attach answer %s", pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  x->peer_cma = a->proof == x->nonce && a->attach != 0;  /* it can, and it may */
  x->trusted = pre->trust;
  x_take_gifts(x, pre);
  x_msg_t *m = x->held_req;
  x->held_req = NULL;
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_CONNECT_REQUEST;
  ev->listen_ctx = l->base.al_ctx;
  ev->conn_id = c->id;
  ev->port = l->port;
  ev->ird = m->ird;
  ev->ord = m->ord;
  emul_cm_loopback(&ev->src.sa, m->v6 != 0);
  emul_cm_fill_pdata(ev, m->pdata, m->pdata_len);
  emul_defer_cm(to_emul_dev(l->base.dev), ev);
  g_free(ev);
  g_free(m);
}

/* Send @m (ATTACH or REP) with, to a trusted peer, our region table and
 * bell (both stay ours: the message closes neither). */
static void
x_send_gifts(emul_xconn_t *x, x_msg_t *m)
{
  int fds[2], n = 0;
  if (x->trusted && emul_ring_mr_fd >= 0) {
    fds[n++] = emul_ring_mr_fd;
    m->fds |= X_FD_TABLE;
  }
  if (x->trusted && x->bell_fd >= 0) {
    fds[n++] = x->bell_fd;
    m->fds |= X_FD_BELL;
  }
  emul_ring_send_msg(x, m, fds, n, 0);
}

/* The passive side's PROBE: its proof and its nonce, read before the lock
 * (@pre); the answer is ATTACH, with our table and bell to a trusted peer. */
static void
x_on_probe(emul_xconn_t *x, const x_msg_t *p, x_pre_t *pre, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  if (x->side != 0 || x->probe_seen || c == NULL || c->state != CONN_REQUESTED || pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "a probe %s", pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  x->probe_seen = TRUE;
  x->peer_cma = p->proof == x->nonce && p->attach != 0;
  x->trusted = pre->trust;
  x->probed = pre->cma;
  x_take_mem(x, pre);
  x_msg_t a = { .type = X_ATTACH, .attach = pre->cma, .proof = pre->proof };
  x_send_gifts(x, &a);
}

rnicpi_status_t
emul_ring_accept(emul_qp_t *qp, emul_conn_t *c, const rnicpi_conn_param_t *p)
{
  emul_xconn_t *x = c->x;
  if (c->state == CONN_REQUESTED && c->active == NULL) {
    if (qp->state != RNICPI_QPS_IDLE || qp->conn != NULL || qp->peer != NULL || qp->x != NULL ||
        qp->dialing)
      return RNICPI_ESTATE;
    c->passive = qp;
    qp->conn = c;
    __atomic_store_n(&qp->x, x, __ATOMIC_RELAXED);
    x->qp = qp;
    qp->attr.ird = p->ird;
    qp->attr.ord = p->ord;
    x->seg->access[1] = qp->attr.access;
    emul_cm_settle(qp, c->ird, c->ord);
    qp->atomics = emul_qp_atomics(qp) && c->peer_atomics;
    x->seg->ird[1] = qp->attr.ird;
    x_msg_t m = {
      .type = X_REP, .qpn = qp->base.qp_num, .ird = p->ird, .ord = p->ord,
      .three_way = c->three_way, .pd_id = qp->pd->id,
      .atomics = emul_qp_atomics(qp),
    };
    x_pdata(&m, p->pdata, p->pdata_len);
    x_send_gifts(x, &m);
    if (c->three_way)
      c->state = CONN_REPLIED;  /* the active consumer confirms (RTU) or rejects */
    else
      x_established(qp, c, NULL, 0);
    return RNICPI_OK;
  }
  if (c->state == CONN_REPLIED && qp == c->active) {
    x_msg_t m = { .type = X_RTU };
    x_pdata(&m, p->pdata, p->pdata_len);
    emul_ring_send_msg(x, &m, NULL, 0, 0);
    x_established(qp, c, NULL, 0);
    return RNICPI_OK;
  }
  return RNICPI_ESTATE;
}

void
emul_ring_reject(emul_conn_t *c, const void *pdata, uint32_t len, emul_work_t *w)
{
  emul_xconn_t *x = c->x;
  x_msg_t m = { .type = X_REJ };
  x_pdata(&m, pdata, len);
  emul_ring_send_msg(x, &m, NULL, 0, 0);
  emul_qp_t *self = c->state == CONN_REPLIED ? c->active : NULL;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_ring_close(x);
  if (self != NULL) /* the active consumer refused the reply: it is done too */
    emul_qp_set_error(self, w);
}

/* A QP leaves a cross-process handshake (destroy, error, disconnect): the
 * peer sees EOF (cancelled request, or BROKEN while waiting for RTU). */
void
emul_ring_qp_gone(emul_qp_t *qp, emul_conn_t *c, emul_work_t *w)
{
  (void) w;
  emul_xconn_t *x = c->x;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  if (qp->x == x)
    emul_ring_close(x);
}

static void
x_on_rej(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  if (c == NULL) {
    emul_ring_peer_violation(x, w, "a rejection of no connection request");
    return;
  }
  emul_qp_t *to = c->state == CONN_REQUESTED ? c->active : c->passive;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_ring_close(x);
  if (to == NULL)
    return;
  if (m->reason != 0)  /* a reason we do not know is the peer's refusal as a non-peer */
    emul_cm_unreachable(to, m->reason <= RNICPI_CM_REASON_BAD_PARAMS ? (rnicpi_cm_reason_t) m->reason
                                                                     : RNICPI_CM_REASON_BAD_PATH);
  else
    emul_qp_cm_event(to, RNICPI_CM_REJECTED, m->pdata, m->pdata_len);
  emul_qp_set_error(to, w);
}

/* The socket closed before or during the handshake. */
void
emul_ring_fail_pending(emul_xconn_t *x, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_qp_t *qp = NULL;
  gboolean unreachable = FALSE;
  if (c != NULL) {
    if (x->side == 1 && c->state == CONN_REQUESTED) {
      if (c->listener != NULL && x->held_req == NULL)  /* raised: ATTACH came */
        emul_cm_request_cancelled(c);
    } else if (x->side == 0 && c->state == CONN_REQUESTED) {
      qp = c->active;
      unreachable = TRUE;
    } else {
      qp = x->side == 0 ? c->active : c->passive;
    }
    x->conn = NULL;
    c->x = NULL;
    emul_cm_conn_drop(c);
  }
  emul_ring_close(x);
  if (qp != NULL) {
    if (unreachable)
      emul_cm_unreachable(qp, RNICPI_CM_REASON_NO_LISTENER);
    else
      emul_qp_cm_event(qp, RNICPI_CM_BROKEN, NULL, 0);
    emul_qp_set_error(qp, w);
  }
}

void
emul_ring_on_msg(emul_xconn_t *x, const x_msg_t *m, int *fds, int nfds, x_pre_t *pre,
                 emul_work_t *w, x_later_t *later)
{
  switch (m->type) {
  case X_REQ:
    x_on_req(x, m, pre, w);
    break;
  case X_PROBE:
    x_on_probe(x, m, pre, w);
    break;
  case X_ATTACH:
    x_on_attach(x, m, pre, w);
    break;
  case X_REP:
    if (x->side == 0)
      x_on_rep(x, m, pre, w);
    else
      emul_ring_peer_violation(x, w, "a reply to a connection it did not request");
    break;
  case X_RTU:
    if (x->side == 1 && x->conn != NULL && x->conn->state == CONN_REPLIED && x->qp != NULL)
      x_established(x->qp, x->conn, m->pdata, m->pdata_len);
    else
      emul_ring_peer_violation(x, w, "a ready-to-use out of turn");
    break;
  case X_REJ:
    x_on_rej(x, m, w);
    break;
  case X_DOORBELL:
    break; /* the ring is drained below */
  case X_SPACE:
    emul_ring_space(x);
    /* A Read that waited for its answer's room goes on (emul_ring_exec_in). */
    if (x->qp != NULL && x->qp->x == x && x->qp->xin_rnr)
      emul_ring_run_in(x->qp, FALSE, w);
    break;
  case X_DISC:
  case X_BREAK:
    if (x->qp != NULL && x->qp->x == x && x->conn == NULL)
      emul_ring_answers_settle(x->qp, w);  /* answers it gave before it ended */
    emul_ring_peer_break(x, m, w);
    break;
  case X_MAP_REQ:
    if (!x->trusted) {
      /* It never had our table: it names keys it was not given. */
      emul_ring_peer_violation(x, w, "a request to map region %u, which only a trusted peer may make",
                               m->mr_index);
      break;
    }
    emul_ring_on_map_req(x, m, &later->io[later->n]);
    later->n++;
    break;
  case X_MAP_REP:
    if (emul_ring_on_map_rep(x, m, nfds == 1 ? fds[0] : -1, &later->io[later->n])) {
      fds[0] = -1;  /* the mapping's now */
      later->n++;
    }
    break;
  case X_SIDR_REQ:
    emul_ring_ud_on_svc_req(x, m, &pre->sock, w);
    break;
  default:
    emul_ring_peer_violation(x, w, "a socket message of unknown type %u", m->type);
    break;
  }
}
