/*
 * Conformance suite fixture: written only against the public IT-API, so
 * the same tests run over every provider.  The interface under test is
 * $ITAPI_CONF_IA, or the first one it_interface_list() reports.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef CONF_H
#define CONF_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>
#include <glib.h>

#include "cert_limit.h"

/* Assert an IT-API status by name, printing the detail on mismatch. */
#define conf_assert_status(call, want)                                          \
  do {                                                                          \
    it_status_t got_ = (call);                                                  \
    if (got_ != (want))                                                         \
      g_error("%s:%d: %s returned %s, expected %s (%s)", __FILE__, __LINE__,    \
              #call, itx_status_name(got_), itx_status_name(want),              \
              itx_error_detail());                                              \
  } while (0)
#define conf_ok(call) conf_assert_status(call, IT_SUCCESS)

typedef struct conf_side {
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto;   /* request and receive completions */
  it_evd_handle_t cm;    /* CM_MSG stream: the EP's connection events */
  it_evd_handle_t req;   /* CM_REQ stream: the listener's requests */
  it_evd_handle_t aff;   /* affiliated async events */
  it_ep_handle_t ep;
} conf_side_t;

typedef struct conf_pair {
  conf_side_t a;         /* active side */
  conf_side_t p;         /* passive side */
  it_listen_handle_t lh;
  it_conn_qual_t qual;   /* the listener's qualifier (IT_IANA_PORT) */
} conf_pair_t;

/* A registered buffer with guard bytes on both sides. */
typedef struct conf_buf {
  unsigned char *mem;    /* guard | data | guard */
  unsigned char *data;
  size_t len;
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
} conf_buf_t;

#define CONF_GUARD 4096
#define CONF_GUARD_BYTE 0xa5
/* How long a test waits for one event: ITAPI_CONF_WAIT_S seconds (default
 * 5; the lab's software devices under an emulated CPU land a 64 MiB RDMA
 * Write in more than that on a loaded host: lab/ib-guest.sh gives 30). */
gint64 conf_wait_us(void);
#define CONF_TIMEOUT_US (conf_wait_us())

const char *conf_ia_name(void);
/* A count the environment variable @name sets (a decimal number), or @def
 * where it is unset or empty: the suite's volume knobs (ITAPI_RACE_ROUNDS,
 * ITAPI_BESIDE_ROUNDS, ITAPI_ACKS_ROUNDS, ITAPI_SCALE_PAIRS...; itapi(7)). */
size_t conf_env_count(const char *name, size_t def);
/* Rounds of each test that posts beside a long transfer in flight
 * (ITAPI_BESIDE_ROUNDS, default 8, at least 1): any round in time shows a
 * post that waits for the transfer. */
unsigned conf_beside_rounds(void);
void conf_default_attr(it_ep_attributes_t *a);
/* Open an IA with a PZ, a DTO EVD (256 entries), CM_MSG, CM_REQ and
 * affiliated EVDs and one RC EP (attr NULL: conf_default_attr). */
void conf_side_open(conf_side_t *s, const it_ep_attributes_t *attr);
/* The same on interface @iface rather than conf_ia_name(). */
void conf_side_open_on(conf_side_t *s, const char *iface, const it_ep_attributes_t *attr);
void conf_side_close(conf_side_t *s);
/* Open both sides and a listener on the passive one (port chosen). */
void conf_pair_open(conf_pair_t *p);
/* The same with the EP attributes of the active (@aa) and passive (@pa)
 * sides (NULL: conf_default_attr). */
void conf_pair_open2(conf_pair_t *p, const it_ep_attributes_t *aa, const it_ep_attributes_t *pa);
/* it_ep_connect of @ep to @q over the path conf_path gives for @s (its
 * address, no timeout), no connection attributes: its status. */
it_status_t conf_connect(conf_side_t *s, it_ep_handle_t ep, const it_conn_qual_t *q,
                         it_cn_est_flags_t flags, const void *pd, size_t len);
/* Connect a to p: the passive side accepts; both see ESTABLISHED.
 * Private data of connect and accept may be NULL. */
void conf_pair_connect(conf_pair_t *p, const void *cpd, size_t clen, const void *apd, size_t alen);
void conf_pair_close(conf_pair_t *p);
/* The address the suite connects to on @s's IA: the first network address
 * it_ia_query lists for spigot 0, or 127.0.0.1 when it lists none
 * (doc/certification.md).  Hardware and rdma-core devices (rxe, siw) cannot
 * reach 127.0.0.1, so loopback is never assumed. */
it_net_addr_t conf_self_addr(conf_side_t *s);
/* The first address of @type (IT_IPV4 or IT_IPV6) @s's IA lists for
 * spigot 0, into @out; FALSE (and @out untouched) when it lists none. */
gboolean conf_self_addr_of(conf_side_t *s, it_net_addr_type_t type, it_net_addr_t *out);
/* @a in text ("10.9.0.1", "::1"), for messages (g_free it). */
char *conf_addr_str(const it_net_addr_t *a);
/* Whether @a and @b are the same address (type and bytes). */
gboolean conf_addr_equal(const it_net_addr_t *a, const it_net_addr_t *b);
/* A path from @s to @addr on spigot 0 (one path; the test fails, naming
 * the address, when the IA has none). */
void conf_path_to(conf_side_t *s, const it_net_addr_t *addr, it_path_t *path);
/* A path from @s to its own interface's address, conf_self_addr. */
void conf_path(conf_side_t *s, it_path_t *path);
/* The RC state of @ep (it_ep_query). */
it_ep_state_rc_t conf_ep_state(it_ep_handle_t ep);
/* it_evd_wait, the wait told to itapi-certify (cert_limit.h) as "an event
 * (it_evd_wait at @where)"; one of IT_TIMEOUT_INFINITE is not told (the
 * ceiling, --timeout, limits it). */
it_status_t conf_evd_wait_at(it_evd_handle_t evd, uint64_t timeout, it_event_t *ev, size_t *more,
                             const char *where);
#define conf_evd_wait(evd, timeout, ev, more) conf_evd_wait_at((evd), (timeout), (ev), (more), G_STRLOC)
/* Spin (yielding) until *@flag is set by another thread, at most
 * CONF_TIMEOUT_US, the wait told as "@what"; fail naming @what past that. */
void conf_await_flag(const volatile gint *flag, const char *what);
/* Wait for one event; fail unless it is @want. */
it_event_t conf_wait(it_evd_handle_t evd, it_event_type_t want);
/* Fail if @evd holds any event (after a short grace period). */
void conf_assert_empty(it_evd_handle_t evd);
/* Poll a DTO completion; fail unless event, status and cookie match. */
it_dto_cmpl_event_t conf_dto(it_evd_handle_t evd, it_event_type_t want, it_dto_status_t status,
                             it_dto_cookie_t cookie);
/* Whether a request of completion @type that must fail with @want may
 * complete with @got on @s's IA: @want itself; and where a completion
 * means transmission (itx_ia_completion: iWARP), a Send or Write the peer
 * refuses (IT_DTO_ERR_REMOTE_ACCESS, IT_DTO_ERR_REMOTE_RESPONDER) may also
 * complete successfully or flushed, the refusal coming back as a broken
 * connection.  Callers check the connection breaks. */
gboolean conf_refusal_ok(conf_side_t *s, it_event_type_t type, it_dto_status_t got,
                         it_dto_status_t want);
/* conf_dto on @s's DTO EVD for a request the peer must refuse with
 * @status, by conf_refusal_ok. */
it_dto_cmpl_event_t conf_dto_refused(conf_side_t *s, it_event_type_t want, it_dto_status_t status,
                                     it_dto_cookie_t cookie);
/* An RDMA Write the peer refused for access (@cookie, conf_dto_refused
 * with REMOTE_ACCESS), then the CONN_BROKEN that follows on @s. */
it_event_t conf_write_refused(conf_side_t *s, it_dto_cookie_t cookie);
/* Make what @s's EP sent so far (Sends, RDMA Writes) land at the peer
 * before the test looks there.  On an IA whose completions mean placement
 * (itx_ia_completion), nothing; otherwise (iWARP) a zero-length RDMA Read
 * of @addr in @ctx, waited for on @s's DTO EVD (cookie
 * CONF_PLACED_COOKIE): the peer answers it after placing what came first. */
#define CONF_PLACED_COOKIE 0xf1ace0ffULL
void conf_placed(conf_side_t *s, it_rdma_addr_t addr, it_rmr_context_t ctx);
/* Register @len bytes (plus guards) in @s's PZ. */
void conf_buf_new(conf_side_t *s, conf_buf_t *b, size_t len, it_mem_priv_t privs,
                  it_addr_mode_t mode);
void conf_buf_free(conf_buf_t *b);
/* The byte conf_buf_fill(@seed) puts at offset @i (conf_buf_check's too). */
unsigned char conf_pattern_byte(size_t i, unsigned seed);
/* The index of the first of the @len bytes at @p that is not @v, or @len. */
size_t conf_first_not(const unsigned char *p, size_t len, unsigned char v);
/* This process's /proc/self/status @field ("VmRSS:", "VmHWM:"), in KiB. */
gint64 conf_status_kb(const char *field);
/* The peak RSS (VmHWM) starts again from the current one (proc(5),
 * clear_refs). */
void conf_peak_reset(void);
void conf_buf_fill(conf_buf_t *b, unsigned seed);
void conf_buf_check(const conf_buf_t *b, size_t off, size_t len, unsigned seed);
/* One RDMA Write (or, with @read, Read) posted from a thread of its own
 * (conf_rdma_post_run), signaled with @cookie. */
typedef struct {
  it_ep_handle_t ep;
  it_lmr_triplet_t local;
  it_rdma_addr_t remote;
  it_rmr_context_t ctx;
  it_dto_cookie_t cookie;
  gboolean read;
} conf_rdma_post_t;
/* A GThreadFunc posting the conf_rdma_post_t it is given. */
gpointer conf_rdma_post_run(gpointer post);
/* A byte of a buffer a transfer may be writing at this moment, read as an
 * application polling for it would (ThreadSanitizer is told the read races
 * the transfer on purpose). */
unsigned char conf_landing_peek(const unsigned char *p);
/* Fail if a guard byte around the data changed. */
void conf_buf_check_guards(const conf_buf_t *b);
it_lmr_triplet_t conf_seg(const conf_buf_t *b, size_t off, size_t len);
/* Skip the current test unless @cond; @what names the capability. */
gboolean conf_require(gboolean cond, const char *what);
/* Fresh copy of the IA's info (free with it_ia_info_free). */
it_ia_info_t *conf_info(conf_side_t *s);
/* Privileges an RDMA Read sink needs on @s's IA: IT_PRIV_LOCAL, plus
 * IT_PRIV_REMOTE_WRITE where it_ia_info_t.rdma_read_requires_remote_write
 * (iWARP: the Read Response is a tagged write into the sink). */
it_mem_priv_t conf_sink_privs(conf_side_t *s);
/* Whether the interface under test executes atomics, asked on a side
 * opened for that alone.  @attr (may be NULL): set to the default EP
 * attributes with atomics_enable as the answer.  @iwarp (may be NULL):
 * whether its transport is iWARP. */
gboolean conf_probe_atomics(it_ep_attributes_t *attr, gboolean *iwarp);
/* The IA's transport type. */
it_transport_type_t conf_transport(conf_side_t *s);
/* The destination that answers the sender of UD receive completion @d:
 * an address handle in @pz from its source path, its EP id, Q_Key @qkey. */
it_dg_remote_ep_addr_t conf_ud_reply_to(it_pz_handle_t pz, const it_all_dto_cmpl_event_t *d, uint32_t qkey);

/* A change of a key (an rmr_context) for the key tests: XOR with @mask.
 * The key byte is the consumer-owned low 8 bits (the key of an iWARP STag,
 * RDMAC verbs 7.2; of an R_Key by verbs convention). */
typedef struct conf_key_change {
  uint64_t mask;
  char what[40];
} conf_key_change_t;
/* With @key_byte, five changes of @key's key byte alone; otherwise each
 * other bit of it alone (bits 8 to 31, or to 63 when @key has bits set
 * above 31).  Fills @out (64 entries) and returns how many. */
int conf_key_changes(uint64_t key, gboolean key_byte, conf_key_change_t *out);

/* conf-dto's RDMA Read scatter tests (conf_dto_scatter.c): add them. */
void conf_dto_scatter_register(void);

/* ---- child processes (the cross-process tests) ----
 * A child is this program run again with a role flag: its stdin and
 * stdout are line pipes to the parent, its stderr a file the parent shows
 * when the child fails. */
typedef struct conf_child {
  pid_t pid;
  int to;        /* the child's stdin */
  int from;      /* the child's stdout */
  char err[256]; /* the file holding its stderr */
} conf_child_t;
/* Run @exe with the arguments @args (NULL-terminated, after argv[0]) as a
 * child, its stderr into <@name>-<this process's pid>.err in $TMPDIR
 * (default /tmp).
 * @env_name (may be NULL): set to @env_value in the child before it runs. */
conf_child_t conf_child_spawn(const char *exe, const char *const *args, const char *name,
                              const char *env_name, const char *env_value);
/* A child's listener: @s listens on a port of the IA's choosing (its
 * requests on @s->req), which it says on stdout as "port N". */
it_listen_handle_t conf_child_listen(conf_side_t *s);
/* Write the line @fmt to @fd (the child's stdin, or stdout in a child). */
void conf_say(int fd, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* One line from @fd within @timeout_ms, without its newline; NULL at end
 * of file or timeout (free with g_free). */
char *conf_hear(int fd, int timeout_ms);
/* The listener port child @c said (its "port N" line, conf_child_listen)
 * within @timeout_ms, as an it_conn_qual_t. */
it_conn_qual_t conf_child_hear_port(conf_child_t *c, int timeout_ms);
/* Open @s (with @attr, NULL for the defaults) and connect it to child
 * @c's listener (its "port N" line), within @timeout_ms for each line; once
 * established, the region the child offers from its next line, "mr ADDR
 * CTX", in *@addr and *@ctx. */
void conf_child_connect_mr(conf_child_t *c, conf_side_t *s, const it_ep_attributes_t *attr,
                           int timeout_ms, guint64 *addr, guint64 *ctx);
/* Wait for child @c to end: it must exit 0.  Its stderr file is removed
 * and its pipes closed. */
void conf_child_reap(conf_child_t *c);
/* Whether child @c has ended (with @block, wait until it has), its wait
 * status in *@status; as waitpid() does, whoever started the child
 * (conf_xuser_start). */
gboolean conf_child_wait(const conf_child_t *c, gboolean block, int *status);
/* Send @sig to the child @pid, as kill() does, whoever started it. */
void conf_child_kill(pid_t pid, int sig);

/* A child's watchdog: a child that hears of nothing for this many seconds
 * takes its parent to be stuck and ends (SIGALRM, with a line on its
 * stderr saying so).  It counts from conf_child_watchdog_start and again
 * from each event the child takes (conf_child_progress; conf_wait calls
 * it), not from the child's start alone: a long stream in the lab VM
 * (TCG, beside the host's suites) ran past 60 s and its child was killed
 * mid-stream (the lab run of the CI of 82e7631).  CONF_XPROC_WATCHDOG_S
 * overrides it (the conformance matrix's emul-watchdog row). */
#define CONF_CHILD_WATCHDOG_S 60
void conf_child_watchdog_start(void);
/* The child took an event: its watchdog counts again from now (nothing
 * in a process that did not start one).  alarm() is called at most once
 * a second: a busy-polling child makes no system call per event. */
void conf_child_progress(void);
/* What the child now waits for (a static string; NULL: nothing), which
 * the watchdog's line names: a child stuck in a call of its own (no
 * event, but no 5 s timeout either) is then told from a stuck parent.
 * The watchdog also writes every thread's stack (gdb, when installed). */
void conf_child_waiting(const char *what);
/* Every thread's stack of process @pid (gdb attached in batch mode) onto
 * @fd; a line saying gdb is missing when it is. */
void conf_gdb_stacks(pid_t pid, int fd);

/* ---- across users (conf_xuser.c) ----
 * With ITAPI_CONF_CHILD_USER=NAME every child runs as the unprivileged user
 * NAME; with ITAPI_CONF_PARENT_USER=NAME the tests' process runs as NAME
 * and every child as root.  The root end of each pair checks that neither
 * process maps a memfd of the other user but the one holding the
 * connection's rings (conf_xuser_check); ITAPI_CONF_XUSER_MAPS_LOG=FILE
 * appends what breaks that rule to FILE instead of failing. */

/* First thing in the main() of a program whose tests start children
 * (before g_test_init(), with its untouched @argv, and in a child's role
 * too): under ITAPI_CONF_PARENT_USER the program, started as root, leaves
 * a root spawner behind and runs again as the user; a root child starts
 * watching its unprivileged parent.  Nothing otherwise. */
void conf_xuser_start(char **argv);
/* Whether one end of each pair runs as another user (either variable). */
gboolean conf_xuser_on(void);
/* Fail (g_error) when the root process or an unprivileged peer it watches
 * maps a memfd the other user created, other than the connection's rings;
 * @when says what checked ("on a line heard").  Nothing where no peer is
 * watched, or where the last check ended less than @gap_us ago: conf_hear
 * and conf_say call it on every line (0), conf_wait on every connection
 * event (0) and on data completions at most once a millisecond (1000: a
 * check reads two maps, some 250 us), a thread every 10 ms. */
void conf_xuser_check(const char *when, gint64 gap_us);
/* Watch the unprivileged process @pid until it is reaped (conf_child_wait). */
void conf_xuser_watch(pid_t pid);
/* For conf_child_spawn: start the child @argv through the spawner of
 * ITAPI_CONF_PARENT_USER with its stdin, stdout and stderr (its pid; 0
 * where there is no spawner); else fork (under ITAPI_CONF_CHILD_USER the
 * parent returns once the child executed a program, and watches it from
 * then on), and in the fork become ITAPI_CONF_CHILD_USER's user (0, or the
 * errno that stopped it, on which the parent fails with a g_error). */
pid_t conf_xuser_fork(void);
int conf_xuser_child_drop(void);
pid_t conf_xuser_spawn(const char *const *argv, int in, int out, int err, const char *env_name,
                       const char *env_value);

#endif
