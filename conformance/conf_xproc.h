/*
 * Conformance across processes: what the harness (conf_xproc_harness.c),
 * the child's side (conf_xproc_child.c) and the tests (conf_xproc.c) share.
 *
 * conf-xproc re-executes itself with "--xproc-role ROLE" for the second
 * process; the child says its port and keys on stdout (a pipe) and takes
 * commands on stdin (a pipe).  Every wait is bounded.  The parent holds the
 * tests: it spawns a child in a role, drives it line by line and checks
 * what landed on both sides.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef CONF_XPROC_H
#define CONF_XPROC_H

#include "conf.h"

#define MSG_SMALL 1024
#define MSG_BIG (1024 * 1024)
#define LINE_TIMEOUT_MS 10000
/* stream: messages, receive slots, credit receives */
#define STREAM_N 2000
#define STREAM_W 16
#define STREAM_SLOT (256 * 1024)
#define STREAM_CREDITS 8
#define STREAM_SPLIT 24

/* The private data of the parent's connect and of the child's accept. */
#define XPROC_CPD_TEXT "hello from the parent"
#define XPROC_APD_TEXT "hello from the child"
extern const unsigned char xproc_cpd[sizeof XPROC_CPD_TEXT];
extern const unsigned char xproc_apd[sizeof XPROC_APD_TEXT];

/* "window": the window's place in the child's region */
#define WIN_OFF 4096
#define WIN_LEN 512
/* "atomic": the target word's first value */
#define WORD0 100u
/* "ud": datagrams each way, their length, the Q_Keys, the service
 * resolution's private data */
#define UD_GRH 40
#define UD_N 8
#define UD_LEN 1000
#define UD_QKEY_PARENT 0x33330003u
#define UD_QKEY_CHILD 0x44440004u
#define XPROC_UD_REQ_TEXT "which EP serves you?"
#define XPROC_UD_REP_TEXT "this one, in the child"
extern const unsigned char xproc_ud_req_pd[sizeof XPROC_UD_REQ_TEXT];
extern const unsigned char xproc_ud_rep_pd[sizeof XPROC_UD_REP_TEXT];
/* "burst": messages per round and their length */
#define BURST_N 60
#define BURST_LEN 64
/* sleep-beside-acks: rounds of ACKS_B sends of ACKS_LEN bytes. */
#define ACKS_B 8
#define ACKS_LEN 64

typedef conf_child_t child_t;

/* ---- the harness (conf_xproc_harness.c) ---- */

/* This program's path, for xproc_spawn (set by main). */
extern const char *xproc_self_exe;

child_t xproc_spawn(const char *role);
int xproc_reap(child_t *c, int ms);
void xproc_reap_ok(child_t *c);
/* The last @max bytes of @c's stderr file on one line (its line breaks
 * shown as " | "): itapi-certify reports the first line of an error only.
 * "(empty)" when there is none. */
char *xproc_child_stderr_line(const child_t *c, size_t max);
/* What a wait status xproc_reap() returned says, in words: "exited with
 * status 0", "was killed by signal 11 (Segmentation fault)", or (-1) "did
 * not exit in time and was killed". */
char *xproc_wait_status_text(int st);
void xproc_connect(conf_side_t *s, uint16_t port);
uint16_t xproc_hear_port(child_t *c);
void xproc_peer_accessed(const conf_buf_t *b);

/* ---- the child's side (conf_xproc_child.c) ---- */

/* Run the child @role; its exit status (2: no such role). */
int xproc_child_main(const char *role);

/* The patterns and layouts both sides compute. */
size_t xproc_stream_size(unsigned k);
unsigned char xproc_stream_byte(unsigned k, size_t j);
/* The stream's busy-poll variant (CONF_XPROC_STREAM_POLL=1, inherited by
 * the child): both sides take completions by it_evd_dequeue alone, and
 * every fourth receive of the child is two SGEs over the slot in swapped order,
 * the second half first (STREAM_SPLIT bytes at the slot's start last). */
gboolean xproc_stream_busy(void);
/* How long the stream tests wait for one event: three times CONF_TIMEOUT_US,
 * since the lab VM (TCG, two vCPUs shared with the host's suites) can hold
 * one process of the pair off its CPU for seconds. */
#define XPROC_EVENT_WAIT_US (3 * CONF_TIMEOUT_US)
/* The next event of @dto within XPROC_EVENT_WAIT_US (@poll: by
 * it_evd_dequeue alone, never slept on); FALSE when none came, with the
 * status in *@st. */
gboolean xproc_next_event(it_evd_handle_t dto, gboolean poll, it_event_t *ev, it_status_t *st);
/* Why @s's connection broke, for an error message, once a completion
 * came with an error: what else its DTO EVD gives within 2 s (the first
 * completion that failed other than by a flush, and how many were
 * flushed), and the events queued on its affiliated async and connection
 * EVDs.  Each part begins with "; ". */
char *xproc_broken_account(conf_side_t *s);
unsigned char xproc_burst_byte(unsigned round, unsigned k, size_t j);
/* Post message @k of @round (@len bytes of xproc_burst_byte, at slot @k of
 * @b, cookie @k, signaled) as a Send on @ep. */
void xproc_burst_send(it_ep_handle_t ep, conf_buf_t *b, unsigned round, unsigned k, size_t len);
void xproc_recvlen_params(size_t *n, int *sges);
gboolean xproc_ud_open(conf_side_t *s, uint32_t qkey, it_ep_handle_t *ep, it_remote_ep_info_t *info,
                       conf_buf_t *rb);
void xproc_ud_take(conf_side_t *s, it_ep_handle_t ep, const conf_buf_t *rb, it_ud_ep_id_t from,
                   unsigned seed0, it_event_t *last);
void xproc_ud_send_all(conf_side_t *s, it_ep_handle_t ep, conf_buf_t *sb,
                       const it_dg_remote_ep_addr_t *dst, unsigned seed0);

#endif
