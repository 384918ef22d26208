/*
 * vp/emul datagrams and UD service resolution across processes (the
 * InfiniBand personality's UD service, emul_ud.c, between two processes
 * of one host).
 *
 * Names.  A UD QP binds the abstract SOCK_SEQPACKET socket
 * "itapi-emul/ud/<qpn>" when it is created: the kernel's namespace makes
 * the number unique on the host, so a QP whose number a UD QP of another
 * process holds takes the next free one (numbers stay unique in the
 * process as well).  A QP that cannot bind is reachable from its own
 * process only (said in the debug log).
 *
 * Datagrams.  A sender with no UD QP of the destination number in its own
 * process connects to that name (once per destination: the connected
 * sockets are kept per process, at most X_UD_OUT_MAX, each until its
 * destination closes) and sends the
 * datagram as one message: an x_ud_hdr_t, then the GRH and payload.  All
 * of it is non-blocking: a destination that is gone, a connection refused
 * or a full socket buffer drops the datagram, as a fabric may, and the
 * send completes successfully all the same (IBTA 10.8.3.1, emul_ud.c).  A
 * kept socket found dead (its QP went; the number may have been taken
 * again) is connected anew once.  The receiving process's progress thread
 * reads the message, checks it (magic, lengths, that it names this QP;
 * anything else closes that sender's socket) and delivers it under the
 * fabric lock by the in-process rules (emul_ud_deliver: Q_Key,
 * personality, a receive posted, its room): one that finds no receive is
 * dropped, never queued, so what waits for a receive is what the socket
 * buffers hold, and a UD QP takes at most X_UD_IN_MAX senders at once.
 * The sender's QP number comes from the header: as on InfiniBand, what a
 * receiver checks is the Q_Key.
 * Latency is the progress thread's wake-up (the application's CQ poll
 * does not read these sockets).
 *
 * Service resolution.  A request for a port no listener of this process
 * has goes to "itapi-emul/<port>", the socket of that port's listener in
 * another process (emul_ring_listen.c), as X_SIDR_REQ.  That listener's consumer
 * gets the request event; its answer goes back as X_SIDR_REP on the same
 * socket, which then closes.  A socket that closes unanswered (the
 * listener went, its process died, or it holds as many requests of other
 * processes unanswered as it may: emul_ud_svc_remote) or a malformed
 * answer is NO_SERVICE.
 *
 * Everything here runs under the fabric lock (the progress thread's
 * callbacks take it with emul_ring_enter, as in emul_ring_msg.c) but the
 * system calls of datagrams and names: emul_ring_ud_send runs after the
 * post has let the lock go, and takes it only to look up or add a
 * connected socket (connect() and sendmsg() are made without it, and a
 * socket the table forgets is closed after it); the progress thread reads
 * what came (up to 8 datagrams) before it takes the lock to deliver them,
 * the source keeping the connection and its socket (ud_in_free), and
 * accepts a sender before it too (ud_accept); a UD QP's name is bound
 * before the QP takes the lock (emul_ring_ud_bind) and its sockets closed
 * after its destroy let it go (emul_ring_ud_free); a service request is
 * dialled and sent, its answer read and sent, with no lock held; and the
 * progress thread's watches of these sockets are started and destroyed
 * with no lock held (GLib writes its main context's wake-up eventfd as it
 * adds or removes a descriptor).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emul_ring.h"

#define X_UD_MAGIC 0x44554d45u  /* "EMUD" */
#define X_UD_OUT_MAX 64         /* connected sockets kept for sending */
/* Senders connected to one UD QP's name at once: a sending process keeps
 * one socket per destination (X_UD_OUT_MAX), so this is how many
 * processes may send to the QP together.  One past it is refused (its
 * datagrams are dropped, as a fabric may), said once per process: a
 * local process cannot make this one hold a descriptor per connect. */
#define X_UD_IN_MAX 256
static gboolean x_said_ud_in;

typedef struct x_ud_hdr {
  uint32_t magic;
  uint32_t dst_qpn;
  uint32_t src_qpn;
  uint32_t qkey;
  uint32_t pers;       /* emul_pers_id_t of the sender's device */
  uint32_t len;        /* GRH and payload bytes that follow */
  uint8_t sgid[16];
} x_ud_hdr_t;

/* A UD QP's name: its listening socket (emul_ring_lsock_t) and the senders
 * connected to it.  @qp is NULL once the QP is destroyed (fabric lock). */
struct emul_xud {
  emul_ring_lsock_t sock;  /* first */
  emul_qp_t *qp;
  GList *ins;          /* x_ud_in_t* */
  guint nins;          /* their number */
};

/* A sender's connection to a UD QP's name.  Its watch is made by the
 * accept under the fabric lock and started after it (ud_accept), which
 * may be after the QP's destroy let every entry go (emul_ring_ud_free:
 * the accept's callback may outlast the destroy's wait for it).  Who
 * destroys the watch is settled by @start, swapped once: the accept, when
 * the destroy came first (X_IN_DOOMED), else the destroy (X_IN_STARTED). */
enum { X_IN_NEW, X_IN_STARTED, X_IN_DOOMED };
typedef struct x_ud_in {
  struct emul_xud *u;
  int fd;
  GSource *src;
  gint start;          /* X_IN_* (atomic) */
} x_ud_in_t;

/* A service request of ours waiting for another process's answer: the
 * data of the progress thread's watch of its socket, which closes with it
 * (svc_out_free). */
typedef struct x_svc_out {
  int fd;
  emul_dev_t *dev;     /* referenced */
  uint64_t req_ctx;
  rnicpi_addr_t dst;
} x_svc_out_t;

/* A socket connected to a UD QP of another process, kept for sending.
 * Referenced by the table, by its watch and by each sender between its
 * look-up and its sendmsg() (made with no lock held): the descriptor
 * closes with the last reference, so that a sender never writes to a
 * number reused meanwhile.  The watch is started before the entry joins
 * the table and destroyed after it left it, with no lock held
 * (ud_out_drop). */
typedef struct x_ud_out {
  uint32_t qpn;
  int fd;
  GSource *src;        /* watches for the QP's end (HUP) */
  gint refs;
} x_ud_out_t;

static GHashTable *x_ud_out;  /* destination QP number -> x_ud_out_t* */

/* ---- receiving ---- */

/* The source owns its connection: the socket closes, and the entry is
 * freed, once the source is destroyed and no callback of it runs
 * (ud_in_ready reads before it takes the fabric lock). */
static void
ud_in_free(gpointer data)
{
  x_ud_in_t *in = data;
  close(in->fd);
  g_free(in);
}

/* Fabric lock held: @in leaves its QP's list; its watch is destroyed by
 * its own callback once the lock is let go (ud_in_ready). */
static void
ud_in_close(x_ud_in_t *in)
{
  in->u->ins = g_list_remove(in->u->ins, in);
  in->u->nins--;
  in->u = NULL;
}

/* Datagrams read with no lock held, delivered after under the fabric lock
 * (ud_in_ready); the progress thread's. */
#define UD_READ_BATCH 8
typedef struct {
  x_ud_hdr_t h;
  uint8_t body[EMUL_UD_GRH_LEN + EMUL_UD_MTU + 1];
} ud_msg_t;
static ud_msg_t ud_rx[UD_READ_BATCH];
static ssize_t ud_rx_len[UD_READ_BATCH];

static gboolean
ud_in_ready(gint fd, GIOCondition cond, gpointer data)
{
  x_ud_in_t *in = data;  /* the source's: valid, its socket open, while this runs */
  (void) cond;
  guint k = 0;
  while (k < UD_READ_BATCH) {
    ssize_t n = recv(fd, &ud_rx[k], sizeof(ud_rx[k]), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ud_rx_len[k++] = n;
    if (n <= 0)
      break;  /* the sender closed (or an error): nothing after it */
  }
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  gboolean closed = FALSE;
  if (emul_ring_enter() && in->u != NULL) {  /* its QP not destroyed meanwhile */
    for (guint i = 0; i < k; i++) {
      ssize_t n = ud_rx_len[i];
      const x_ud_hdr_t *h = &ud_rx[i].h;
      emul_qp_t *qp = in->u->qp;
      if (n < (ssize_t) sizeof(*h) || h->magic != X_UD_MAGIC || h->len != (size_t) n - sizeof(*h) ||
          h->len < EMUL_UD_GRH_LEN || h->len > EMUL_UD_GRH_LEN + EMUL_UD_MTU ||
          h->dst_qpn != qp->base.qp_num || h->pers >= EMUL_PERS_COUNT) {
        ud_in_close(in);  /* the sender closed, or is not a peer of ours */
        closed = TRUE;
        break;
      }
      emul_ud_dgram_t d = {
        .pers = &emul_pers[h->pers], .qkey = h->qkey, .src_qpn = h->src_qpn, .sgid = h->sgid,
        .buf = ud_rx[i].body, .len = h->len,
      };
      emul_ud_deliver_locked(qp, &d, &w);
    }
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  if (closed) {
    /* Out of its QP's list: nobody else destroys it.  Its notify frees
     * @in once this callback returns. */
    g_source_destroy(in->src);
    g_source_unref(in->src);
  }
  return G_SOURCE_CONTINUE;
}

#define UD_ACCEPT_BATCH 8

/* The progress thread, when senders connect to a UD QP's name: accepted
 * with no lock held, put in the QP's list under the fabric lock (closed
 * after it if the QP went meanwhile), and watched once it is let go.  A
 * destroy of the QP waits for this callback (a second at most) before it
 * destroys the watches of its list; one that comes between the unlock and
 * a start leaves that watch to this callback (x_ud_in_t.start), which
 * then destroys it itself once started. */
static gboolean
ud_accept(gint fd, GIOCondition cond, gpointer data)
{
  struct emul_xud *u = data;
  (void) cond;
  int c[UD_ACCEPT_BATCH];
  guint n = 0;
  while (n < UD_ACCEPT_BATCH && (c[n] = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
    n++;
  if (n == 0)
    emul_ring_accept_refuse(fd, errno, "senders to UD QPs");
  x_ud_in_t *made[UD_ACCEPT_BATCH] = { NULL };
  if (emul_ring_enter() && u->qp != NULL) {
    for (guint i = 0; i < n; i++) {
      if (u->nins >= X_UD_IN_MAX) {
        if (!x_said_ud_in) {
          x_said_ud_in = TRUE;
          g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: UD QP %u has %u sending processes connected: "
                "refusing any more (their datagrams to it are dropped)", u->qp->base.qp_num, u->nins);
        }
        continue;  /* closed below, as for a QP gone */
      }
      u->nins++;
      x_ud_in_t *in = made[i] = g_new0(x_ud_in_t, 1);
      in->u = u;
      in->fd = c[i];
      in->src = emul_ring_watch_new(c[i], G_IO_IN | G_IO_HUP | G_IO_ERR, ud_in_ready, in, ud_in_free);
      u->ins = g_list_prepend(u->ins, in);
      c[i] = -1;
    }
  }
  emul_fabric_unlock();
  for (guint i = 0; i < n; i++) {
    x_ud_in_t *in = made[i];
    if (in == NULL) {
      close(c[i]);
      continue;
    }
    /* Started first: a watch destroyed before its start could not be
     * started.  The entry stays while it is ours or still NEW (its watch,
     * which frees it, is destroyed by one of us only after the swap). */
    GSource *src = in->src;
    emul_ring_watch_start(src);
    if (!g_atomic_int_compare_and_exchange(&in->start, X_IN_NEW, X_IN_STARTED)) {
      g_source_destroy(src);  /* the QP's destroy left it to us */
      g_source_unref(src);
    }
  }
  return G_SOURCE_CONTINUE;
}

struct emul_xud *
emul_ring_ud_bind(uint32_t *qpn)
{
  int e = 0;
  for (int tries = 1;; tries++) {
    *qpn = emul_qp_number();
    int fd = emul_ring_bind_listen("ud/", *qpn);
    if (fd >= 0) {
      struct emul_xud *u = g_new0(struct emul_xud, 1);
      emul_ring_lsock_init(&u->sock, fd);
      return u;
    }
    e = errno;
    if (e != EADDRINUSE || tries == 4096)
      break;
    /* another process's UD QP has it: the next one */
  }
  g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: UD QP %u is not reachable from other processes (no socket "
        "itapi-emul/ud/%u: %s%s); datagrams between it and other processes are dropped, in-process ones "
        "are not", *qpn, *qpn, g_strerror(e),
        e == EADDRINUSE ? ", and so were the 4095 numbers before it: destroy unused UD QPs" : "");
  return NULL;
}

void
emul_ring_ud_open(emul_qp_t *qp, struct emul_xud *u)
{
  if (u != NULL)
    u->qp = qp;
  qp->xud = u;
}

void
emul_ring_ud_start(emul_qp_t *qp)
{
  struct emul_xud *u = qp->xud;
  if (u != NULL)
    emul_ring_lsock_watch(&u->sock, ud_accept);
}

struct emul_xud *
emul_ring_ud_close(emul_qp_t *qp)
{
  struct emul_xud *u = qp->xud;
  if (u == NULL)
    return NULL;
  /* The senders' callbacks and the accept's find it gone; their watches
   * are destroyed, their sockets closed, once the lock is let go. */
  u->qp = NULL;
  for (GList *i = u->ins; i != NULL; i = i->next)
    ((x_ud_in_t *) i->data)->u = NULL;
  qp->xud = NULL;
  return u;
}

void
emul_ring_ud_free(struct emul_xud *u)
{
  if (u == NULL)
    return;
  /* The name first: its close waits for an accept callback still running,
   * which starts the watches it put in the list (none joins it since the
   * destroy), and lets @u go.  A watch that callback has still not started
   * (the wait is bounded) is left to it (x_ud_in_t.start). */
  GList *ins = u->ins;
  emul_ring_lsock_close(&u->sock);
  for (GList *i = ins; i != NULL; i = i->next) {
    x_ud_in_t *in = i->data;
    GSource *src = in->src;  /* its notify frees the entry */
    if (g_atomic_int_compare_and_exchange(&in->start, X_IN_NEW, X_IN_DOOMED))
      continue;
    g_source_destroy(src);
    g_source_unref(src);
  }
  g_list_free(ins);
}

/* ---- sending ---- */

static void
ud_out_unref(x_ud_out_t *o)
{
  if (o != NULL && g_atomic_int_dec_and_test(&o->refs)) {
    close(o->fd);
    g_free(o);
  }
}

/* The table forgets @o, if it still holds it (fabric lock held): the
 * table's reference is returned, to be let go with its watch once the
 * lock is (ud_out_drop); NULL when the table held none.  There may be no
 * table yet: the first socket's watch starts before its sender takes the
 * lock to make one, and the socket's end may come first. */
static x_ud_out_t *
ud_out_forget(x_ud_out_t *o)
{
  if (x_ud_out == NULL || g_hash_table_lookup(x_ud_out, GUINT_TO_POINTER(o->qpn)) != o)
    return NULL;
  g_hash_table_remove(x_ud_out, GUINT_TO_POINTER(o->qpn));
  return o;
}

/* No lock held: the watch of @o (or NULL), which no table holds, is
 * destroyed (it lets its reference go once no callback of it runs), and
 * the caller's reference with it. */
static void
ud_out_drop(x_ud_out_t *o)
{
  if (o == NULL)
    return;
  g_source_destroy(o->src);
  g_source_unref(o->src);
  ud_out_unref(o);
}

/* A watch started before the table takes @o, or one the table forgot
 * meanwhile, watches for nothing once the socket is dead; its owner
 * destroys it (ud_out_drop). */
static gboolean
ud_out_hup(gint fd, GIOCondition cond, gpointer data)
{
  x_ud_out_t *o = data;  /* the watch's reference keeps it */
  (void) fd;
  (void) cond;
  x_ud_out_t *gone = emul_ring_enter() ? ud_out_forget(o) : NULL;
  emul_fabric_unlock();
  ud_out_drop(gone);
  return G_SOURCE_REMOVE;  /* the destination QP is gone (its process closed the socket) */
}

/* A reference to the socket the table holds for UD QP @qpn, unless it is
 * @stale (found dead), or NULL (fabric lock held). */
static x_ud_out_t *
ud_out_ref_locked(uint32_t qpn, const x_ud_out_t *stale)
{
  x_ud_out_t *o = x_ud_out != NULL ? g_hash_table_lookup(x_ud_out, GUINT_TO_POINTER(qpn)) : NULL;
  if (o == NULL || o == stale)
    return NULL;
  g_atomic_int_inc(&o->refs);
  return o;
}

/* A reference to a socket newly connected to UD QP @qpn of another
 * process, in the table instead of @stale, or to the one another sender
 * connected meanwhile; NULL when nobody has that number.  connect() is
 * made with no lock held; the fabric lock is taken for the table. */
static x_ud_out_t *
ud_out_connect(uint32_t qpn, x_ud_out_t *stale)
{
  int fd = emul_ring_dial("ud/", qpn, 0);  /* a datagram never waits */
  x_ud_out_t *o, *mine = NULL;
  if (fd >= 0) {
    mine = g_new0(x_ud_out_t, 1);
    mine->qpn = qpn;
    mine->fd = fd;
    mine->refs = 3;  /* the table's, the caller's and the watch's */
    mine->src = emul_ring_watch(fd, G_IO_HUP | G_IO_ERR, ud_out_hup, mine,
                                (GDestroyNotify) ud_out_unref);
  }
  emul_fabric_lock();
  x_ud_out_t *gone = stale != NULL ? ud_out_forget(stale) : NULL, *evicted = NULL;
  o = ud_out_ref_locked(qpn, NULL);
  if (o != NULL || mine == NULL) {
    emul_fabric_unlock();
    ud_out_drop(gone);
    if (mine != NULL) {
      ud_out_drop(mine);  /* another sender connected it meanwhile */
      ud_out_unref(mine);
    }
    return o;
  }
  if (x_ud_out == NULL)
    x_ud_out = g_hash_table_new(NULL, NULL);
  if (g_hash_table_size(x_ud_out) >= X_UD_OUT_MAX) {
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, x_ud_out);
    if (g_hash_table_iter_next(&it, NULL, &v))
      evicted = ud_out_forget(v);
  }
  g_hash_table_insert(x_ud_out, GUINT_TO_POINTER(qpn), mine);
  emul_fabric_unlock();
  ud_out_drop(gone);
  ud_out_drop(evicted);
  return mine;
}

gboolean
emul_ring_ud_away_locked(emul_qp_t *qp, uint32_t dst_qpn, emul_ud_out_t *out)
{
  if (qp->xud == NULL)
    return FALSE;  /* without a name of its own (no progress thread), none */
  out->away = TRUE;
  out->dst_qpn = dst_qpn;
  out->sock = ud_out_ref_locked(dst_qpn, NULL);
  return TRUE;
}

void
emul_ring_ud_send(emul_ud_out_t *out)
{
  const emul_ud_dgram_t *d = &out->d;
  x_ud_hdr_t h = {
    .magic = X_UD_MAGIC, .dst_qpn = out->dst_qpn, .src_qpn = d->src_qpn, .qkey = d->qkey,
    .pers = (uint32_t) d->pers->id, .len = (uint32_t) d->len,
  };
  memcpy(h.sgid, d->sgid, 16);
  struct iovec iov[2] = { { &h, sizeof(h) }, { (void *) (uintptr_t) d->buf, d->len } };
  struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
  /* The socket the post found (the usual case: no lock taken here), or
   * one connected now; a socket found dead is connected anew once. */
  x_ud_out_t *o = out->sock != NULL ? out->sock : ud_out_connect(out->dst_qpn, NULL);
  out->sock = NULL;
  for (int attempt = 0; o != NULL; attempt++) {
    gboolean gone = sendmsg(o->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN;
    if (!gone || attempt == 1) {
      /* Sent, or the receiver is behind, or its QP stays gone: dropped. */
      if (gone) {
        emul_fabric_lock();
        x_ud_out_t *table = ud_out_forget(o);
        emul_fabric_unlock();
        ud_out_drop(table);
      }
      ud_out_unref(o);
      return;
    }
    /* Its QP went (the number may be taken again). */
    x_ud_out_t *stale = o;
    o = ud_out_connect(out->dst_qpn, stale);
    ud_out_unref(stale);
  }
  /* Nobody has that number: dropped. */
}

/* ---- service resolution ---- */

static void
svc_out_free(gpointer data)
{
  x_svc_out_t *o = data;
  close(o->fd);
  emul_dev_unref(o->dev);
  g_free(o);
}

/* The answer, read with no lock held, the requester told under the fabric
 * lock; the watch ends with it (its socket closes after the callback). */
static gboolean
svc_out_ready(gint fd, GIOCondition cond, gpointer data)
{
  x_svc_out_t *o = data;
  (void) cond;
  x_msg_t *m = g_new(x_msg_t, 1);
  int fds[4], nfds = 0;
  ssize_t n = emul_ring_recv_msg(fd, m, fds, &nfds);
  for (int i = 0; i < nfds; i++)
    close(fds[i]);
  gboolean done = n >= 0 || (errno != EAGAIN && errno != EINTR);
  if (done) {
    gboolean ok = n >= (ssize_t) X_MSG_MIN && m->magic == X_MAGIC && m->type == X_SIDR_REP &&
                  m->pdata_len <= (size_t) n - X_MSG_MIN && m->status <= RNICPI_UD_SVC_REDIRECT;
    if (emul_ring_enter()) {
      if (ok)
        emul_ud_svc_reply_to(o->dev, o->req_ctx, &o->dst, (rnicpi_ud_svc_status_t) m->status, m->qpn,
                             m->qkey, m->pdata, m->pdata_len);
      else
        emul_ud_svc_reply_to(o->dev, o->req_ctx, &o->dst, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    }
    emul_fabric_unlock();
  }
  g_free(m);
  return done ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

gboolean
emul_ring_ud_svc_request(emul_dev_t *dev, const rnicpi_addr_t *dst, uint32_t port, const void *pdata,
                      uint32_t len, uint64_t req_ctx)
{
  if (!emul_ring_ready())
    return FALSE;
  int fd = emul_ring_dial("", port, 0);
  if (fd < 0)
    return FALSE;  /* nobody listens there */
  x_msg_t *m = g_new0(x_msg_t, 1);
  m->type = X_SIDR_REQ;
  m->pers = (uint32_t) dev->pers->id;
  m->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
  if (m->pdata_len > 0)
    memcpy(m->pdata, pdata, m->pdata_len);
  gboolean sent = emul_ring_send_fd(fd, m, NULL, 0);
  g_free(m);
  if (!sent) {
    close(fd);
    return FALSE;
  }
  x_svc_out_t *o = g_new0(x_svc_out_t, 1);
  o->fd = fd;
  emul_dev_ref(dev);
  o->dev = dev;
  o->req_ctx = req_ctx;
  o->dst = *dst;
  /* The answer may come, and @o go with its watch, before this returns:
   * the context's reference keeps the watch until then. */
  g_source_unref(emul_ring_watch(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, svc_out_ready, o, svc_out_free));
  return TRUE;
}

void
emul_ring_ud_svc_answer(int fd, rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey,
                     const void *pdata, uint32_t len)
{
  x_msg_t *m = g_new0(x_msg_t, 1);
  m->type = X_SIDR_REP;
  m->status = (uint32_t) status;
  if (status == RNICPI_UD_SVC_OK) {
    m->qpn = qpn;
    m->qkey = qkey;
  }
  m->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
  if (m->pdata_len > 0)
    memcpy(m->pdata, pdata, m->pdata_len);
  emul_ring_send_fd(fd, m, NULL, 0);  /* a requester gone meanwhile reads nothing */
  g_free(m);
  close(fd);
}

void
emul_ring_ud_on_svc_req(emul_xconn_t *x, const x_msg_t *m, int *sock, emul_work_t *w)
{
  if (x->side != 1 || x->qp != NULL || x->conn != NULL) {
    /* only as the first message to a listener */
    emul_ring_peer_violation(x, w, "a UD service request on a connection that is not a new one at a "
                             "listener");
    return;
  }
  emul_listen_t *l = x->listener;
  const emul_dev_t *dev = l != NULL ? to_emul_dev(l->base.dev) : NULL;
  if (*sock >= 0 && dev != NULL && (dev->caps.features & RNICPI_CAP_UD) &&
      (uint32_t) dev->pers->id == m->pers && m->pdata_len <= dev->caps.pdata_ud_req &&
      emul_ud_svc_remote(l, *sock, m->pdata, m->pdata_len))
    *sock = -1;  /* the request's now */
  /* Otherwise no service: the duplicate closes after the lock (x_pre_drop)
   * and the socket with the connection, and the requester reads its EOF. */
  emul_ring_close(x);  /* the request lives on in its own socket (*sock) */
}
