/*
 * vp/emul's datagram to a UD QP of another process leaves with no lock
 * held: the post builds it under the fabric lock, completes the send, lets
 * the lock go and only then makes the sendmsg() (and the connect() of a
 * first datagram to that QP) (emul_ring_ud.c, "Datagrams").  A datagram
 * from another process is read the same way: the progress thread reads it
 * before it takes the lock to deliver it.  A system call under the fabric
 * lock stalls every thread of the process that posts or polls meanwhile
 * (issue 26, point 5).
 *
 * The other process is played by this test: it binds the host-wide name of
 * a UD QP number no QP of this process has ("itapi-emul/ud/<qpn>") and
 * reads what arrives there, then sends the last datagram back to the QP.
 * Every sendmsg() and recv() is watched (-Wl,--wrap): a datagram's (its
 * header's magic first) must find the fabric lock not held by the calling
 * thread (with the recv() under the lock, 1 datagram of 1 was read so).
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>
#include <it_api.h>
#include <itx.h>

#include "emul.h"
#include "emul_ring.h"
#include "syscall_watch.h"

#define UD_MAGIC 0x44554d45u  /* emul_ring_ud.c, X_UD_MAGIC */
#define HDR_LEN 40            /* emul_ring_ud.c, x_ud_hdr_t */
#define LEN 1000
#define QKEY 0x1234u

static gint dgrams, dgrams_locked;

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t
__wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
  syscall_watch_hit(SC_SENDMSG);
  uint32_t magic = 0;
  if (m->msg_iovlen > 0 && m->msg_iov[0].iov_len >= sizeof(magic))
    memcpy(&magic, m->msg_iov[0].iov_base, sizeof(magic));
  if (magic == UD_MAGIC) {
    g_atomic_int_inc(&dgrams);
    if (emul_fabric_mine)
      g_atomic_int_inc(&dgrams_locked);
  }
  return __real_sendmsg(fd, m, flags);
}

static gint reads, reads_locked;

ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t
__wrap_recv(int fd, void *buf, size_t len, int flags)
{
  syscall_watch_hit(SC_RECV);
  ssize_t n = __real_recv(fd, buf, len, flags);
  uint32_t magic = 0;
  if (n >= (ssize_t) sizeof(magic))
    memcpy(&magic, buf, sizeof(magic));
  if (magic == UD_MAGIC) {
    g_atomic_int_inc(&reads);
    if (emul_fabric_mine)
      g_atomic_int_inc(&reads_locked);
  }
  return n;
}

static void
ok(it_status_t st, const char *what)
{
  if (st != IT_SUCCESS)
    g_error("%s on emul0 returned %s (%s)", what, itx_status_name(st), itx_error_detail());
}

/* One DTO event of @evd, within 5 s. */
static it_event_t
dto_wait(it_evd_handle_t evd)
{
  it_event_t ev;
  for (int i = 0; i < 5000; i++) {
    it_status_t st = it_evd_dequeue(evd, &ev);
    if (st == IT_SUCCESS)
      return ev;
    g_assert_cmpint(st, ==, IT_ERR_QUEUE_EMPTY);
    g_usleep(1000);
  }
  g_error("no DTO event within 5 s");
}

/* emul0, a PZ, one DTO EVD and a UD EP on it (Q_Key QKEY). */
static void
ud_open(it_ia_handle_t *ia, it_pz_handle_t *pz, it_evd_handle_t *dto, it_ep_handle_t *ep)
{
  ok(it_ia_create("emul0", 2, 1, ia), "it_ia_create(emul0)");
  ok(it_pz_create(*ia, pz), "it_pz_create");
  ok(it_evd_create(*ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, dto, NULL),
     "it_evd_create");
  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  a.max_dto_payload_size = LEN;
  a.max_request_dtos = 4;
  a.max_recv_dtos = 4;
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  a.srv.ud.ep_info.ud_ep_key = QKEY;
  ok(it_ep_ud_create(*pz, *dto, *dto, &a, 0, ep), "it_ep_ud_create");
}

/* The name of a UD QP of "another process" (this test), bound: a number
 * from @base on (one of 16 for this pid) that no UD QP of the host has, in
 * *@qpn; its listening socket returned. */
static int
other_bind(uint32_t base, uint32_t *qpn)
{
  uint32_t first = base + ((uint32_t) getpid() & 0xffffu) * 16;
  int lfd = -1;
  for (uint32_t i = 0; lfd < 0 && i < 16; i++) {
    *qpn = first + i;
    lfd = emul_ring_bind_listen("ud/", *qpn);
  }
  g_assert_cmpint(lfd, >=, 0);
  return lfd;
}

/* The destination UD QP @qpn of this host (its GID is emul's), through an
 * address handle made in @pz (in *@ah). */
static it_dg_remote_ep_addr_t
ud_dest(it_ia_handle_t ia, it_pz_handle_t pz, uint32_t qpn, it_addr_handle_t *ah)
{
  it_ia_info_t *info = NULL;
  ok(it_ia_query(ia, &info), "it_ia_query");
  g_assert_cmpuint(info->num_spigots, >, 0);
  g_assert_cmpuint(info->spigot_info[0].num_net_addr, >, 0);
  it_net_addr_t self = info->spigot_info[0].net_addr[0];
  it_ia_info_free(info);
  it_path_t path;
  size_t n = 1, total = 0;
  ok(it_get_pathinfo(ia, 0, &self, &n, &total, &path), "it_get_pathinfo");
  ok(it_address_handle_create(pz, &path, 0, ah), "it_address_handle_create");
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = *ah;
  dst.addr.ud.ep_info.ud_ep_id = qpn;
  dst.addr.ud.ep_info.ud_ep_key = QKEY;
  return dst;
}

static void
test_sendmsg_unlocked(void)
{
  /* Counted from here: an earlier test may have sent. */
  g_atomic_int_set(&dgrams, 0);
  g_atomic_int_set(&dgrams_locked, 0);
  g_atomic_int_set(&reads, 0);
  g_atomic_int_set(&reads_locked, 0);
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto;
  it_ep_handle_t ep;
  ud_open(&ia, &pz, &dto, &ep);

  /* The "other process": a number no UD QP of the host has, bound here. */
  uint32_t qpn;
  int lfd = other_bind(0xe00000u, &qpn);

  /* A path to this host's own address, the QP number none of this
   * process's. */
  it_addr_handle_t ah;
  it_dg_remote_ep_addr_t dst = ud_dest(ia, pz, qpn, &ah);

  uint8_t *buf = g_malloc(LEN);
  for (int i = 0; i < LEN; i++)
    buf[i] = (uint8_t) (i * 13 + 5);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  ok(it_lmr_create(pz, buf, NULL, LEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr, &ctx),
     "it_lmr_create");
  it_lmr_triplet_t t = { .lmr = lmr, .addr.abs = buf, .length = LEN };
  for (int k = 0; k < 2; k++) {  /* the first connects, the second reuses the socket */
    ok(it_post_sendto(ep, &t, 1, 7 + k, IT_COMPLETION_FLAG, &dst), "it_post_sendto");
    it_event_t ev = dto_wait(dto);
    g_assert_cmpint(ev.event_number, ==, IT_DTO_SEND_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 7 + k);
  }

  /* Both datagrams arrived, whole, on the connection the first one made. */
  struct pollfd p = { .fd = lfd, .events = POLLIN };
  g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
  int c = accept(lfd, NULL, NULL);
  g_assert_cmpint(c, >=, 0);
  uint8_t msg_last[HDR_LEN + EMUL_UD_GRH_LEN + LEN];
  for (int k = 0; k < 2; k++) {
    uint8_t msg[HDR_LEN + EMUL_UD_GRH_LEN + LEN + 16];
    p = (struct pollfd) { .fd = c, .events = POLLIN };
    g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
    ssize_t r = recv(c, msg, sizeof(msg), 0);
    g_assert_cmpint(r, ==, HDR_LEN + EMUL_UD_GRH_LEN + LEN);
    uint32_t w[2];
    memcpy(w, msg, sizeof(w));
    g_assert_cmphex(w[0], ==, UD_MAGIC);
    g_assert_cmpuint(w[1], ==, qpn);
    g_assert_cmpmem(msg + HDR_LEN + EMUL_UD_GRH_LEN, LEN, buf, LEN);
    memcpy(msg_last, msg, sizeof(msg_last));
  }
  g_assert_cmpint(g_atomic_int_get(&dgrams), ==, 2);
  g_assert_cmpint(g_atomic_int_get(&dgrams_locked), ==, 0);

  /* The "other process" answers: the last datagram back, sender and
   * destination swapped, to the number it came from.  The progress thread
   * reads it before it takes the fabric lock, and the receive gets it. */
  uint8_t *in = g_malloc0(EMUL_UD_GRH_LEN + LEN);
  it_lmr_handle_t in_lmr;
  ok(it_lmr_create(pz, in, NULL, EMUL_UD_GRH_LEN + LEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                   IT_LMR_FLAG_NONE, 0, &in_lmr, &ctx), "it_lmr_create");
  it_lmr_triplet_t rt = { .lmr = in_lmr, .addr.abs = in, .length = EMUL_UD_GRH_LEN + LEN };
  ok(it_post_recvfrom(ep, &rt, 1, 9, IT_COMPLETION_FLAG), "it_post_recvfrom");
  uint8_t back[HDR_LEN + EMUL_UD_GRH_LEN + LEN];
  uint32_t w[3];
  memcpy(w, msg_last, sizeof(w));
  memcpy(back, msg_last, sizeof(back));
  uint32_t own_qpn = w[2];
  w[1] = own_qpn;  /* dst: the QP that sent it */
  w[2] = qpn;      /* src: the "other process" */
  memcpy(back, w, sizeof(w));
  int sock = emul_ring_dial("ud/", own_qpn, 0);
  g_assert_cmpint(sock, >=, 0);
  g_assert_cmpint(send(sock, back, sizeof(back), 0), ==, (ssize_t) sizeof(back));
  it_event_t ev = dto_wait(dto);
  g_assert_cmpint(ev.event_number, ==, IT_DTO_UD_RECV_CMPL_EVENT);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 9);
  g_assert_cmpmem(in + EMUL_UD_GRH_LEN, LEN, buf, LEN);
  g_assert_cmpint(g_atomic_int_get(&reads), >=, 1);
  g_assert_cmpint(g_atomic_int_get(&reads_locked), ==, 0);
  close(sock);
  g_free(in);

  close(c);
  close(lfd);
  ok(it_ia_free(ia), "it_ia_free");
  g_free(buf);
  /* Nor any other call of the UD QP's life: its name bound, the sender
   * accepted, its sockets closed at the destroy (with them under the lock,
   * 7 calls: socket, bind, listen, accept4 twice, close twice). */
  g_autofree char *names = NULL;
  int locked = syscall_watch_locked(&names);
  if (locked != 0)
    g_test_message("system calls made under the fabric lock: %s", names);
  g_assert_cmpint(locked, ==, 0);
}

/* The progress thread's start of an accepted sender's watch, held until
 * the destroy has given up its wait for the accept callback (a second, or
 * so) and returned: armed once. */
static gint slow_armed, slow_in, slow_go, slow_out;
static GThread *main_thread;

static void
slow_attach(GSource *s)
{
  (void) s;
  if (g_thread_self() == main_thread || !g_atomic_int_compare_and_exchange(&slow_armed, 1, 0))
    return;
  g_atomic_int_set(&slow_in, 1);
  for (int i = 0; i < 10000 && !g_atomic_int_get(&slow_go); i++)
    g_usleep(1000);
  g_atomic_int_set(&slow_out, 1);
}

/* A UD QP destroyed while the progress thread, having accepted a sender
 * and let the fabric lock go, has not yet started that sender's watch, and
 * starts it only after the destroy gave up waiting for it: the watch is
 * destroyed all the same, once (by the accept's callback), and the
 * sender's connection closes.  Before, the destroy freed the watch and its
 * entry, which the callback then started: a use after free (ASan). */
static void
test_destroy_beside_accept(void)
{
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto;
  it_ep_handle_t ep;
  ud_open(&ia, &pz, &dto, &ep);
  it_ep_param_t prm;
  ok(it_ep_query(ep, IT_EP_PARAM_EP_ID, &prm), "it_ep_query(EP_ID)");
  uint32_t qpn = prm.attr.srv.ud.ep_info.ud_ep_id;

  main_thread = g_thread_self();
  g_atomic_pointer_set(&syscall_watch_attach_hook, slow_attach);
  g_atomic_int_set(&slow_armed, 1);
  int sock = emul_ring_dial("ud/", qpn, 0);  /* the "other process" connects */
  g_assert_cmpint(sock, >=, 0);
  for (int i = 0; i < 5000 && !g_atomic_int_get(&slow_in); i++)
    g_usleep(1000);
  g_assert_true(g_atomic_int_get(&slow_in));
  ok(it_ep_free(ep), "it_ep_free");  /* waits a second for the accept, then goes on */
  g_assert_false(g_atomic_int_get(&slow_out));  /* the destroy went first */
  g_atomic_int_set(&slow_go, 1);
  for (int i = 0; i < 15000 && !g_atomic_int_get(&slow_out); i++)
    g_usleep(1000);
  g_assert_true(g_atomic_int_get(&slow_out));

  /* The sender's connection closes: its watch was destroyed, its socket
   * with it. */
  struct pollfd p = { .fd = sock, .events = POLLIN };
  g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
  char c;
  g_assert_cmpint(recv(sock, &c, 1, MSG_DONTWAIT), ==, 0);
  close(sock);
  g_atomic_pointer_set(&syscall_watch_attach_hook, NULL);
  ok(it_ia_free(ia), "it_ia_free");
}

/* A datagram socket whose destination is gone before its sender took the
 * fabric lock to keep it: the progress thread's callback for its end runs
 * first.  Played here: as the sender starts the socket's watch, the
 * attach hook closes the "other process"'s listening socket (the socket
 * pending there is reset) and owes a bell to a bare connection whose bell
 * is a pipe; the sender rings it before it takes the lock, and the write
 * hook holds it there 300 ms, while the progress thread runs the callback.
 * Before, that callback asked a table that did not exist yet
 * (g_hash_table_lookup on NULL: a GLib critical; once in the TSan run of
 * /conformance/ud/race/free-beside-sendto over the bounce ring). */
static gint hup_armed, hup_held;
static int hup_lfd = -1, hup_bell[2] = { -1, -1 };
static emul_xconn_t *hup_x;

static void
hup_attach(GSource *s)
{
  (void) s;
  if (g_thread_self() != main_thread || !g_atomic_int_compare_and_exchange(&hup_armed, 1, 2))
    return;
  close(hup_lfd);  /* the destination's process ends: the pending socket is reset */
  hup_lfd = -1;
  emul_ring_doorbell(hup_x, X_BELL_SELF);  /* rung before the sender takes the lock */
}

static void
hup_write(int fd)
{
  if (fd != hup_bell[1] || g_thread_self() != main_thread)
    return;
  g_usleep(300 * 1000);  /* the progress thread takes the socket's end meanwhile */
  g_atomic_int_set(&hup_held, 1);
}

static void
test_hup_before_table(void)
{
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto;
  it_ep_handle_t ep;
  ud_open(&ia, &pz, &dto, &ep);

  uint32_t qpn;
  hup_lfd = other_bind(0xe80000u, &qpn);
  it_addr_handle_t ah;
  it_dg_remote_ep_addr_t dst = ud_dest(ia, pz, qpn, &ah);
  uint8_t *buf = g_malloc0(LEN);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  ok(it_lmr_create(pz, buf, NULL, LEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr, &ctx),
     "it_lmr_create");

  /* The bare connection the bell is owed to. */
  g_assert_cmpint(pipe2(hup_bell, O_CLOEXEC | O_NONBLOCK), ==, 0);
  hup_x = g_new0(emul_xconn_t, 1);
  hup_x->ref = 1;
  hup_x->fd = -1;
  hup_x->sock_closed = TRUE;
  hup_x->bell_fd = hup_bell[1];
  hup_x->peer_bell_fd = -1;
  hup_x->peer_pidfd = -1;
  hup_x->peer_mem = -1;
  g_mutex_init(&hup_x->mlock);
  g_queue_init(&hup_x->msgs);

  main_thread = g_thread_self();
  g_atomic_pointer_set(&syscall_watch_attach_hook, hup_attach);
  g_atomic_pointer_set(&syscall_watch_write_hook, hup_write);
  g_atomic_int_set(&hup_armed, 1);
  it_lmr_triplet_t t = { .lmr = lmr, .addr.abs = buf, .length = LEN };
  ok(it_post_sendto(ep, &t, 1, 5, IT_COMPLETION_FLAG, &dst), "it_post_sendto");
  it_event_t ev = dto_wait(dto);
  g_atomic_pointer_set(&syscall_watch_attach_hook, NULL);
  g_atomic_pointer_set(&syscall_watch_write_hook, NULL);
  /* The hooks ran: the socket's watch started, the sender held. */
  g_assert_cmpint(g_atomic_int_get(&hup_armed), ==, 2);
  g_assert_cmpint(g_atomic_int_get(&hup_held), ==, 1);
  /* A datagram to a QP that is gone is dropped, as a fabric may: the send
   * completes successfully all the same. */
  g_assert_cmpint(ev.event_number, ==, IT_DTO_SEND_CMPL_EVENT);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 5);
  char c;
  g_assert_cmpint(read(hup_bell[0], &c, 1), ==, 1);  /* the bell was rung */

  ok(it_ia_free(ia), "it_ia_free");
  g_assert_cmpint(g_atomic_int_get(&hup_x->ref), ==, 1);
  emul_ring_conn_unref(hup_x);
  close(hup_bell[0]);
  g_free(buf);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_setenv("ITAPI_PROVIDER", "emul", TRUE);
  /* First: the sending table is made by the first datagram socket kept. */
  g_test_add_func("/emul/ud/hup-before-table", test_hup_before_table);
  g_test_add_func("/emul/ud/sendmsg-unlocked", test_sendmsg_unlocked);
  g_test_add_func("/emul/ud/destroy-beside-accept", test_destroy_beside_accept);
  return g_test_run();
}
