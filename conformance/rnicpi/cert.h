/*
 * cert-rnicpi: RNIC-PI level certification of a verbs provider.  The tests
 * drive a provider's operations tables directly (no IT-API), so an RNIC
 * vendor can certify a provider module against the ABI of rnicpi.h.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef CERT_H
#define CERT_H

#include <glib.h>

#include "rnicpi.h"
#include "rnicpi_registry.h"

#include "cert_limit.h"

/* How long an upcall or a completion may take to arrive. */
#define CERT_TIMEOUT_MS 5000
/* How long to watch for something that must not arrive. */
#define CERT_QUIET_MS 100

/** The provider under test (operations tables completed by the loader). */
extern const rnicpi_provider_t *cert_prov;

#define DEV (cert_prov->device)
#define MEM (cert_prov->mem)
#define QUE (cert_prov->queue)
#define DAT (cert_prov->data)
#define CMV (cert_prov->cm)

/* Assert a provider status, printing names rather than numbers. */
#define cert_cmpst(expr, want)                                                 \
  do {                                                                         \
    const char *got_ = rnicpi_status_name(expr);                               \
    const char *want_ = rnicpi_status_name(want);                              \
    if (g_strcmp0(got_, want_) != 0)                                           \
      g_assertion_message_cmpstr(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC,  \
                                 #expr " == " #want, got_, "==", want_);       \
  } while (0)
#define cert_ok(expr) cert_cmpst((expr), RNICPI_OK)

/** One test's device, with the upcalls queued for the test to wait on. */
typedef struct cert {
  rnicpi_dev_t *dev;
  rnicpi_caps_t caps;
  char dev_name[64];
  GAsyncQueue *cm_q;     /* rnicpi_cm_event_t * */
  GAsyncQueue *notify_q; /* uint64_t * (cq context) */
  GAsyncQueue *async_q;  /* rnicpi_async_event_t * */
  GList *cm_seen, *notify_seen, *async_seen; /* popped, not yet matched */
  /* cert_gate_async(): the state of the gate on async_event upcalls
   * (CERT_GATE_*), under gate_lock; gate_cond signals each change. */
  GMutex gate_lock;
  GCond gate_cond;
  int gate_state;
} cert_t;

/** One end of a connection: its own domain, CQs and queue pair. */
typedef struct cert_side {
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq;
  rnicpi_qp_t *qp;
  uint64_t ctx;      /* QP context; CQ contexts are ctx|1 (send), ctx|2 (recv) */
  uint32_t ird, ord; /* negotiated, from ESTABLISHED */
} cert_side_t;

/** An active and a passive side. */
typedef struct cert_pair {
  cert_side_t a, p;
} cert_pair_t;

/** A buffer with guard bytes either side of the registered part. */
typedef struct cert_buf {
  uint8_t *mem;  /* guard, data, guard */
  uint8_t *data; /* the registered part */
  size_t len;
  rnicpi_mr_t *mr;
  size_t map_len; /* nonzero: mem is a MAP_SHARED mapping of memfd fd */
  int fd;
} cert_buf_t;

#define CERT_GUARD 64
#define CERT_GUARD_BYTE 0xa5

/* The provider under test: --provider-module PATH or --provider NAME taken
 * out of argv, else RNICPI_CERT_MODULE or RNICPI_CERT_PROVIDER, else
 * "emul"; NULL (after saying why) when it cannot be used. */
const rnicpi_provider_t *cert_select_provider(int *argc, char **argv);

/* Fixture. */
void cert_setup(cert_t *f, gconstpointer data);
void cert_teardown(cert_t *f, gconstpointer data);
void cert_open_again(cert_t *f, cert_t *b);
void cert_add(const char *path, void (*fn)(cert_t *, gconstpointer));
/* Register @p fn as @p path with @p data, a case of the caller's table: one
 * test body for variants of one check, each under its own path (the case
 * outlives the run: a static table). */
void cert_add_data(const char *path, gconstpointer data, void (*fn)(cert_t *, gconstpointer));
/* vp/emul's paths between processes, chosen by its knobs at the connect
 * (other providers ignore them): "attach" (cross-memory attach), "mapped"
 * (the peer's region mapped here: it needs shared memory) or "bounce"
 * (neither: the ring).  The environment that selects @p mode: name, value,
 * ..., NULL. */
const char *const *cert_xproc_env(const char *mode);
/* Register @p fn as PATH/attach, PATH/mapped and PATH/bounce, with the
 * mode's name as its data. */
void cert_add_xproc(const char *path, void (*fn)(cert_t *, gconstpointer));
gboolean cert_require(cert_t *f, uint64_t cap);
/* FALSE, the test skipped, where the device offers no outstanding RDMA
 * Read (max_ird or max_ord 0). */
gboolean cert_require_reads(cert_t *f);
/* g_test_skip with a message made as printf makes it. */
void cert_skipf(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
uint32_t cert_min(uint32_t a, uint32_t b);

/* Upcalls. */
rnicpi_cm_event_t *cert_wait_cm(cert_t *f, rnicpi_cm_event_type_t type, uint64_t ctx);
void cert_assert_no_cm(cert_t *f, rnicpi_cm_event_type_t type, uint64_t ctx);
/* The first CM event of @type for @ctx within @timeout_ms, or NULL. */
rnicpi_cm_event_t *cert_poll_cm(cert_t *f, rnicpi_cm_event_type_t type, uint64_t ctx,
                                guint timeout_ms);
rnicpi_async_event_t *cert_wait_async(cert_t *f, rnicpi_async_type_t type, uint64_t ctx);
/* The gate on @f's async_event upcall.  Armed (cert_gate_async), the next
 * such upcall queues its event as always, then holds the provider's thread
 * that made it until the test opens the gate (cert_gate_open) or
 * CERT_GATE_HOLD_MS have passed, whichever comes first: a test learns what
 * the provider does with that thread busy.  rnicpi_upcalls_t lets an upcall
 * call provider operations, which may block; a provider that moves no data
 * while one of its upcalls waits is only slowed, for at most that long. */
#define CERT_GATE_HOLD_MS 3000
void cert_gate_async(cert_t *f);
/* Whether an upcall is held by the gate within @timeout_ms. */
gboolean cert_gate_wait_held(cert_t *f, guint timeout_ms);
/* Open the gate (the held upcall returns) and disarm it; FALSE when the
 * hold had lapsed first (CERT_GATE_HOLD_MS). */
gboolean cert_gate_open(cert_t *f);
rnicpi_async_event_t *cert_poll_async(cert_t *f, rnicpi_async_type_t type, uint64_t ctx,
                                      guint timeout_ms);
gboolean cert_wait_notify(cert_t *f, uint64_t cq_ctx, guint timeout_ms);
/* The queue pair event @cause raises (its type), with that cause; the
 * Terminate detail goes to the test log. */
void cert_wait_qp_async(cert_t *f, rnicpi_async_cause_t cause, uint64_t ctx);

/* Completions. */
int cert_poll(rnicpi_cq_t *cq, rnicpi_wc_t *wc, int n, guint timeout_ms);
void cert_assert_cq_quiet(rnicpi_cq_t *cq);
rnicpi_wc_t cert_wc(rnicpi_cq_t *cq);
void cert_assert_each_once(const rnicpi_wc_t *wc, int n, const uint64_t *ids, int nids,
                           rnicpi_wc_status_t status);
void cert_expect_flushed(rnicpi_cq_t *cq, uint64_t qp_ctx, const uint64_t *ids, int nids);

/* Memory. */
void cert_buf_new(rnicpi_pd_t *pd, cert_buf_t *b, size_t len, uint32_t access);
/* The same in memory another process can map: a MAP_SHARED mapping of a
 * memfd that allows sealing, kept open (vp/emul then moves data to it
 * across processes by plain loads and stores). */
void cert_buf_new_shared(rnicpi_pd_t *pd, cert_buf_t *b, size_t len, uint32_t access);
/* The region (unless already deregistered: mr NULL), then the memory. */
void cert_buf_free(cert_buf_t *b);
/* Whether the buffers made from now on are reached for another process (a
 * test with a peer, or the peer itself): under ThreadSanitizer, their bytes
 * are then a benign race, as a DMA target's (cert_peer.c sets it). */
void cert_buf_peer_reached(gboolean on);
void cert_buf_fill(cert_buf_t *b, uint8_t seed);
/* Byte @i of the pattern cert_buf_fill writes for @seed. */
uint8_t cert_pattern(uint8_t seed, size_t i);
void cert_buf_check(const cert_buf_t *b, size_t off, size_t len, uint8_t seed);
void cert_buf_check_guards(const cert_buf_t *b);
rnicpi_sge_t cert_sge(const cert_buf_t *b, size_t off, uint32_t len);
/* The rights an RDMA Read sink needs on @f's device: local read and write,
 * and remote write where RNICPI_CAP_READ_SINK_REMOTE_WRITE says so (iWARP). */
uint32_t cert_sink_access(cert_t *f);
uint64_t cert_raddr(const cert_buf_t *b, size_t off);

/* Queue pairs and connections. */
rnicpi_qp_attr_t cert_qp_attr(cert_t *f, rnicpi_cq_t *scq, rnicpi_cq_t *rcq);
void cert_side_new(cert_t *f, cert_side_t *s, uint64_t ctx, uint32_t cq_depth,
                   const rnicpi_qp_attr_t *attr);
void cert_side_free(cert_side_t *s);
uint32_t cert_port(void);
/* Listen on a fresh port (trying further ones while the host holds them);
 * returns the port. */
uint32_t cert_listen(cert_t *f, uint64_t ctx, rnicpi_listen_t **lst);
/* The address the catalog connects to on @f's device: its first
 * (caps.addrs[0]), or 127.0.0.1 when it lists none (doc/certification.md).
 * Port 0. */
void cert_self_addr(cert_t *f, struct sockaddr_storage *out);
/* cert_self_addr as a GID: an IPv6 address as is, IPv4 mapped. */
void cert_self_gid(cert_t *f, uint8_t gid[RNICPI_GID_LEN]);
/* cert_self_addr with @port: where a listener on @port is reached. */
void cert_addr(cert_t *f, uint32_t port, rnicpi_addr_t *out);
gboolean cert_pair_open(cert_t *f, cert_pair_t *pr, const rnicpi_qp_attr_t *attr);
/* The same with the connect's and the accept's parameters given. */
gboolean cert_pair_open_cp(cert_t *f, cert_pair_t *pr, const rnicpi_qp_attr_t *attr,
                           const rnicpi_conn_param_t *act, const rnicpi_conn_param_t *pas);
void cert_pair_free(cert_pair_t *pr);
void cert_post_recv(rnicpi_qp_t *qp, const cert_buf_t *b, size_t off, uint32_t len, uint64_t id);
void cert_post_send(rnicpi_qp_t *qp, rnicpi_wr_opcode_t op, const cert_buf_t *b, size_t off,
                    uint32_t len, uint64_t id, uint32_t flags, uint64_t raddr, uint64_t rkey);
/* Make the Sends and Writes @pr's active side posted so far land before the
 * test looks at the peer's memory.  With "completes-at-placement",
 * nothing; otherwise a zero-length RDMA Read of @raddr/@rkey (the peer
 * answers it after placing what came first, RFC 5040 5.5), whose
 * completion (wr_id CERT_PLACED_ID) is taken from the send CQ. */
#define CERT_PLACED_ID 0xf1ace0ffull
void cert_placed(cert_t *f, cert_pair_t *pr, uint64_t raddr, uint64_t rkey);
/* The same for the requests @s posted (its QP and send CQ). */
void cert_placed_by(cert_t *f, cert_side_t *s, uint64_t raddr, uint64_t rkey);

/* ---- A peer in another process (cert_peer.c) ---------------------------
 * A second cert-rnicpi, started with --peer and the provider option of this
 * one (cert_prov_option), holds the passive side of a connection and does
 * what the test asks, one command line at a time; the commands are listed
 * in cert_peer.c.  Its queue pair has context CERT_PEER_CTX. */
#define CERT_PEER_CTX 0xb0000ull

/** The active side here, the process holding the passive side. */
typedef struct cert_peer {
  cert_side_t a;    /* this process's side (context 0xa0000) */
  GPid pid;
  int to_fd, from_fd;
  GString *in;      /* answer bytes read, not yet taken: a line may be long */
  char last[256];   /* the last command, for messages */
} cert_peer_t;

/* "--provider=NAME" or "--provider-module=PATH": what selected cert_prov. */
extern const char *cert_prov_option;
/* cert-rnicpi --peer: serve commands on standard input until it ends. */
int cert_peer_serve(void);
/* Start a peer, create its side with QP access rights @peer_access,
 * connect to it; FALSE (a skip) without RNICPI_CAP_CM_VERBS. */
gboolean cert_peer_open(cert_t *f, cert_peer_t *pe, uint32_t peer_access);
/* The same, the peer's environment changed by @env: name, value, ...,
 * NULL. */
gboolean cert_peer_open_env(cert_t *f, cert_peer_t *pe, uint32_t peer_access,
                            const char *const *env);
/* The first half of cert_peer_open_env: the peer started, this side's
 * QP and the peer's made, nothing connected. */
gboolean cert_peer_start(cert_t *f, cert_peer_t *pe, uint32_t peer_access,
                         const char *const *env);
/* The peer listens and is told @answer ("accept [LEN]", "reject LEN"),
 * this side connects with @cp; the caller takes the peer's answer
 * (cert_peer_reply) and the CM events. */
void cert_peer_connect(cert_t *f, cert_peer_t *pe, const rnicpi_conn_param_t *cp,
                       const char *answer);
/* Private data of the peer's CM messages: byte i of seed s is s + 13 i. */
#define CERT_PDATA_CONNECT 0x21
#define CERT_PDATA_ACCEPT 0x42
#define CERT_PDATA_REJECT 0x77
#define CERT_PDATA_DISCONNECT 0x99
void cert_pdata_fill(uint8_t *p, uint32_t len, uint8_t seed);
/* @len bytes in hex (g_free it), "-" for none. */
char *cert_pdata_hex(const uint8_t *p, uint32_t len);
/* Tell the peer to clean up and exit, wait for it, free this side. */
void cert_peer_close(cert_peer_t *pe);
/* A region of the peer: its buffer slot, address and key. */
typedef struct cert_xreg {
  int slot;
  uint64_t addr, rkey;
} cert_xreg_t;
/* The peer registers @len zero bytes in buffer @slot of its domain @pd
 * with @access, in shared memory (cert_buf_new_shared) if @shared. */
cert_xreg_t cert_peer_reg(cert_peer_t *pe, int slot, int pd, size_t len, uint32_t access,
                          gboolean shared);
/* The QP rights a peer takes by default: all the device has. */
uint32_t cert_peer_rights(cert_t *f);
/* The peer's QP is reported BROKEN and enters ERROR, and an asynchronous
 * event of @type (0: none asked) came to it. */
void cert_peer_broken(cert_peer_t *pe, rnicpi_async_type_t type);
/* Wait for a peer that was told to "die". */
void cert_peer_reap(cert_peer_t *pe);
/* Send a command / take its answer: the words after "ok" (g_free them);
 * any "err" answer, none in time, or a peer gone (its pipe closed: SIGPIPE
 * is ignored on both ends) fails the test naming the peer and the command. */
void cert_peer_send(cert_peer_t *pe, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
char *cert_peer_reply(cert_peer_t *pe);
char *cert_peer_call(cert_peer_t *pe, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void cert_peer_do(cert_peer_t *pe, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* A command whose answer is one number. */
uint64_t cert_peer_u64(cert_peer_t *pe, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Test registration, one function per area. */
void cert_register_device(void);
void cert_register_queue(void);
void cert_register_cm(void);
void cert_register_data(void);
void cert_register_errors(void);
void cert_register_flush(void);
void cert_register_protect(void);
void cert_register_mw(void);
void cert_register_srq(void);
void cert_register_ud(void);
void cert_register_more(void);
void cert_register_edge(void);
void cert_register_wire(void);
void cert_register_xproc(void);
void cert_register_xmore(void);
void cert_register_wait(void);
void cert_register_rules(void);
void cert_register_fence(void);
void cert_register_close(void);
void cert_register_status(void);
void cert_register_negotiate(void);
void cert_register_count(void);

/* Shared by cert_mw.c, cert_srq.c, cert_ud.c and cert_more.c (defined in
 * cert_more.c). */
/* Wait until @qp is in @want (CERT_TIMEOUT_MS at most). */
void cert_wait_state(rnicpi_qp_t *qp, rnicpi_qp_state_t want);
/* The one-sided access @id the active side of @pr posted was refused by
 * the responder: the requester completes it with RNICPI_WC_REM_ACCESS_ERR
 * (@write without "completes-at-placement": success or a flush are also
 * allowed, the refusal coming back as a Terminate), the responder gets
 * RNICPI_ASYNC_QP_ACCESS_ERR, both sides BROKEN and in ERROR, and the
 * requester's send CQ holds nothing more. */
void cert_expect_refused(cert_t *f, cert_pair_t *pr, uint64_t id, gboolean write);
/* A signaled one-SGE RDMA Write of @len bytes of @src at @off to
 * @raddr/@rkey that must succeed, and be placed (cert_placed) before the
 * caller looks at the target. */
void cert_write_ok(cert_t *f, cert_pair_t *pr, const cert_buf_t *src, size_t off, uint32_t len,
                   uint64_t raddr, uint64_t rkey);

#endif
