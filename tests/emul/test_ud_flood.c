/*
 * vp/emul's UD service across processes against a flood from a local
 * process (issue 56: a hostile peer cannot hurt the target): a process
 * that connects to a UD QP's name thousands of times, or sends thousands
 * of UD service requests to a listener nobody answers yet, makes the
 * target hold a bounded number of descriptors (emul_ring_ud.c,
 * X_UD_IN_MAX; emul_ud.c, SVC_PENDING_MAX), and the target keeps serving
 * others: another UD QP receives a datagram from another process, the
 * flooded one receives again once the flood is gone, a service request
 * is answered once the waiting ones are.
 *
 * The flooding process is a child forked by this test that makes raw
 * socket calls only (the protocol's layouts from emul_ring.h); the
 * "other process" that sends a datagram is this test itself, on a socket
 * of its own to the QP's name (the target tells senders apart by socket,
 * not by process).
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <it_api.h>
#include <itx.h>

#include "emul.h"
#include "emul_ring.h"

#define FLOOD 2000
#define HELD_MAX 256           /* X_UD_IN_MAX, SVC_PENDING_MAX */
#define SLACK 32               /* descriptors the target may open meanwhile */
#define LEN 64
#define QKEY 0x1234u
#define UD_MAGIC 0x44554d45u   /* emul_ring_ud.c, X_UD_MAGIC */
#define HDR_LEN 40             /* emul_ring_ud.c, x_ud_hdr_t */

static void
ok(it_status_t st, const char *what)
{
  if (st != IT_SUCCESS)
    g_error("%s on emul0 returned %s (%s)", what, itx_status_name(st), itx_error_detail());
}

/* This process's open descriptors. */
static int
fd_count(void)
{
  GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
  g_assert_nonnull(d);
  int n = 0;
  while (g_dir_read_name(d) != NULL)
    n++;
  g_dir_close(d);
  return n;
}

/* The descriptor count once it held still for 300 ms (the progress
 * thread accepts the flood in batches), within 20 s. */
static int
fd_count_settled(void)
{
  int last = fd_count(), still = 0;
  for (int i = 0; i < 2000 && still < 30; i++) {
    g_usleep(10000);
    int n = fd_count();
    still = n == last ? still + 1 : 0;
    last = n;
  }
  return last;
}

/* ---- the flooding child ---- */

/* Connect @n sockets to emul_ring_addr(@kind, @num) (a full backlog is
 * waited out), each sending @m if not NULL, and keep them until @go
 * closes; says how many on @done. */
static void G_GNUC_NORETURN
flood_child(const char *kind, uint32_t num, x_msg_t *m, int go, int done)
{
  int made = 0;
  for (int tries = 0; made < FLOOD && tries < FLOOD * 100; tries++) {
    int fd = emul_ring_dial(kind, num, 0);
    if (fd < 0) {
      g_usleep(200);  /* the backlog is full: the target accepts on */
      continue;
    }
    if (m != NULL && !emul_ring_send_fd(fd, m, NULL, 0)) {
      close(fd);
      continue;
    }
    made++;
  }
  if (write(done, &made, sizeof(made)) != (ssize_t) sizeof(made))
    _exit(2);
  char c;
  while (read(go, &c, 1) > 0)
    ;
  _exit(0);
}

typedef struct {
  pid_t pid;
  int go;  /* closed: the child lets its sockets go and exits */
} flood_t;

static flood_t
flood_start(const char *kind, uint32_t num, x_msg_t *m)
{
  int go[2], done[2];
  g_assert_cmpint(pipe(go), ==, 0);
  g_assert_cmpint(pipe(done), ==, 0);
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    close(go[1]);
    close(done[0]);
    flood_child(kind, num, m, go[0], done[1]);
  }
  close(go[0]);
  close(done[1]);
  int made = 0;
  g_assert_cmpint(read(done[0], &made, sizeof(made)), ==, (int) sizeof(made));
  close(done[0]);
  g_test_message("the flood connected %d sockets", made);
  g_assert_cmpint(made, ==, FLOOD);
  return (flood_t) { .pid = pid, .go = go[1] };
}

static void
flood_end(flood_t *f)
{
  close(f->go);
  g_assert_cmpint(waitpid(f->pid, NULL, 0), ==, f->pid);
}

/* ---- UD ---- */

typedef struct {
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto, cm, req;
} side_t;

static void
side_open(side_t *s)
{
  ok(it_ia_create("emul0", 2, 1, &s->ia), "it_ia_create(emul0)");
  ok(it_pz_create(s->ia, &s->pz), "it_pz_create");
  ok(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE, &s->dto, NULL),
     "it_evd_create(dto)");
  ok(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE, &s->cm, NULL),
     "it_evd_create(cm)");
  /* Room for every request the listener may hold. */
  ok(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4 * HELD_MAX, 1, IT_NULL_HANDLE,
                   &s->req, NULL), "it_evd_create(req)");
}

static void
side_close(side_t *s)
{
  ok(it_evd_free(s->req), "it_evd_free");
  ok(it_evd_free(s->cm), "it_evd_free");
  ok(it_evd_free(s->dto), "it_evd_free");
  ok(it_pz_free(s->pz), "it_pz_free");
  ok(it_ia_free(s->ia), "it_ia_free");
}

/* A UD EP of @s (Q_Key QKEY) and its QP number. */
static it_ep_handle_t
ud_ep(side_t *s, uint32_t *qpn)
{
  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  a.max_dto_payload_size = LEN;
  a.max_request_dtos = 4;
  a.max_recv_dtos = 4;
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  a.srv.ud.ep_info.ud_ep_key = QKEY;
  it_ep_handle_t ep;
  ok(it_ep_ud_create(s->pz, s->dto, s->dto, &a, 0, &ep), "it_ep_ud_create");
  it_ep_param_t prm;
  ok(it_ep_query(ep, IT_EP_PARAM_EP_ID, &prm), "it_ep_query(EP_ID)");
  *qpn = prm.attr.srv.ud.ep_info.ud_ep_id;
  return ep;
}

/* One DTO event of @evd within 5 s, or FALSE. */
static gboolean
dto_take(it_evd_handle_t evd, it_event_t *ev)
{
  for (int i = 0; i < 5000; i++) {
    it_status_t st = it_evd_dequeue(evd, ev);
    if (st == IT_SUCCESS)
      return TRUE;
    g_assert_cmpint(st, ==, IT_ERR_QUEUE_EMPTY);
    g_usleep(1000);
  }
  return FALSE;
}

/* A datagram of LEN bytes to UD QP @qpn of the target, as another process
 * sends it (emul_ring_ud.c, x_ud_hdr_t), on a socket of its own: the
 * receive posted on @ep completes with it. */
static void
datagram_arrives(side_t *s, it_ep_handle_t ep, uint32_t qpn, uint8_t fill)
{
  uint8_t *in = g_malloc0(EMUL_UD_GRH_LEN + LEN);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  ok(it_lmr_create(s->pz, in, NULL, EMUL_UD_GRH_LEN + LEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                   IT_LMR_FLAG_NONE, 0, &lmr, &ctx), "it_lmr_create");
  it_lmr_triplet_t rt = { .lmr = lmr, .addr.abs = in, .length = EMUL_UD_GRH_LEN + LEN };
  ok(it_post_recvfrom(ep, &rt, 1, fill, IT_COMPLETION_FLAG), "it_post_recvfrom");
  uint8_t msg[HDR_LEN + EMUL_UD_GRH_LEN + LEN];
  memset(msg, 0, sizeof(msg));
  uint32_t w[6] = { UD_MAGIC, qpn, 0xe0000du, QKEY, EMUL_PERS_IB, EMUL_UD_GRH_LEN + LEN };
  memcpy(msg, w, sizeof(w));
  memset(msg + HDR_LEN + EMUL_UD_GRH_LEN, fill, LEN);
  int sock = emul_ring_dial("ud/", qpn, 0);
  g_assert_cmpint(sock, >=, 0);
  g_assert_cmpint(send(sock, msg, sizeof(msg), 0), ==, (ssize_t) sizeof(msg));
  it_event_t ev;
  g_assert_true(dto_take(s->dto, &ev));
  g_assert_cmpint(ev.event_number, ==, IT_DTO_UD_RECV_CMPL_EVENT);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, fill);
  for (int i = 0; i < LEN; i++)
    g_assert_cmpuint(in[EMUL_UD_GRH_LEN + i], ==, fill);
  close(sock);
  ok(it_lmr_free(lmr), "it_lmr_free");
  g_free(in);
}

static void
test_senders(void)
{
  g_test_summary("a process that connects to a UD QP's name thousands of times makes the target hold at most "
                 "X_UD_IN_MAX of them; another UD QP still receives, and the flooded one once the flood ends");
  side_t s;
  side_open(&s);
  uint32_t flooded, other;
  it_ep_handle_t ep = ud_ep(&s, &flooded), ep2 = ud_ep(&s, &other);
  datagram_arrives(&s, ep, flooded, 1);  /* the progress thread runs */
  int before = fd_count_settled();
  flood_t f = flood_start("ud/", flooded, NULL);
  int during = fd_count_settled();
  g_test_message("the target's descriptors: %d before the flood, %d during it", before, during);
  g_assert_cmpint(during - before, <=, HELD_MAX + SLACK);
  datagram_arrives(&s, ep2, other, 2);
  flood_end(&f);
  int after = fd_count_settled();
  g_assert_cmpint(after - before, <=, SLACK);
  datagram_arrives(&s, ep, flooded, 3);
  ok(it_ep_free(ep), "it_ep_free");
  ok(it_ep_free(ep2), "it_ep_free");
  side_close(&s);
}

/* A UD service request to @port as another process sends it, on a socket
 * of its own (returned). */
static int
svc_ask(uint16_t port)
{
  int sock = emul_ring_dial("", port, 0);
  g_assert_cmpint(sock, >=, 0);
  x_msg_t m = { .type = X_SIDR_REQ, .pers = EMUL_PERS_IB };
  g_assert_true(emul_ring_send_fd(sock, &m, NULL, 0));
  return sock;
}

/* The requests waiting at @s's listener, answered (@st); how many. */
static int
svc_answer_all(side_t *s, it_ud_svc_req_status_t st, it_remote_ep_info_t info)
{
  int n = 0;
  it_event_t ev;
  for (;;) {
    it_status_t r = it_evd_dequeue(s->req, &ev);
    if (r == IT_ERR_QUEUE_EMPTY)
      return n;
    ok(r, "it_evd_dequeue(req)");
    g_assert_cmpint(ev.event_number, ==, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
    ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, st, info, NULL, 0), "it_ud_service_reply");
    n++;
  }
}

static void
test_service_requests(void)
{
  g_test_summary("a process that sends thousands of UD service requests to a listener whose consumer does not "
                 "answer yet makes the target hold at most SVC_PENDING_MAX of them; once they are answered a "
                 "new request is");
  side_t s;
  side_open(&s);
  uint32_t qpn;
  it_ep_handle_t ep = ud_ep(&s, &qpn);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  it_listen_handle_t lh;
  ok(it_listen_create(s.ia, 0, s.req, IT_LISTEN_NO_FLAG, &qual, &lh), "it_listen_create");
  uint16_t port = ntohs(qual.conn_qual.port);
  it_remote_ep_info_t info = { .ud_ep_id = qpn, .ud_ep_key = QKEY };
  close(svc_ask(port));  /* the progress thread runs */
  g_usleep(100000);
  svc_answer_all(&s, IT_UD_SVC_REQ_REJECTED, info);
  int before = fd_count_settled();
  x_msg_t m = { .type = X_SIDR_REQ, .pers = EMUL_PERS_IB };
  flood_t f = flood_start("", port, &m);
  int during = fd_count_settled();
  g_test_message("the target's descriptors: %d before the flood, %d during it", before, during);
  g_assert_cmpint(during - before, <=, HELD_MAX + SLACK);
  int held = svc_answer_all(&s, IT_UD_SVC_REQ_REJECTED, info);
  g_test_message("the listener held %d requests", held);
  g_assert_cmpint(held, <=, HELD_MAX);
  g_assert_cmpint(fd_count_settled() - before, <=, SLACK);
  /* Served again: a new request is raised and its answer comes back. */
  int sock = svc_ask(port);
  it_event_t ev;
  for (int i = 0; i < 5000 && it_evd_dequeue(s.req, &ev) == IT_ERR_QUEUE_EMPTY; i++)
    g_usleep(1000);
  g_assert_cmpint(ev.event_number, ==, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
  ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID, info, NULL, 0),
     "it_ud_service_reply");
  struct pollfd p = { .fd = sock, .events = POLLIN };
  g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
  x_msg_t rep;
  int fds[4], nfds = 0;
  g_assert_cmpint(emul_ring_recv_msg(sock, &rep, fds, &nfds), >=, (ssize_t) X_MSG_MIN);
  g_assert_cmpuint(rep.type, ==, X_SIDR_REP);
  g_assert_cmpuint(rep.status, ==, RNICPI_UD_SVC_OK);
  g_assert_cmpuint(rep.qpn, ==, qpn);
  close(sock);
  flood_end(&f);
  ok(it_listen_free(lh), "it_listen_free");
  ok(it_ep_free(ep), "it_ep_free");
  side_close(&s);
}

int
main(int argc, char **argv)
{
  g_setenv("ITAPI_PROVIDER", "emul", FALSE);
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/ud-flood/senders", test_senders);
  g_test_add_func("/emul/ud-flood/service-requests", test_service_requests);
  return g_test_run();
}
