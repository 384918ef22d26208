/*
 * vp/emul: the frames of a connection to another process that a drain
 * takes under the QP's link alone, with no process-wide lock (issue 26,
 * point 5; emul_ring_drain_link).  Over the bounce ring (ITAPI_EMUL_CMA=0,
 * ITAPI_EMUL_MAP=0: every byte rides a frame) the child process sends
 * this one SENDS Sends of SEND_LEN bytes, each landing in a receive of
 * three SGEs, and after every fifth an RDMA Write of WRITE_LEN bytes into
 * a region of ours; the frames pass the ring's end (more than its 1 MiB in
 * all).  This process busy-polls its completions, checks every byte, then
 * reads the connection's count of frames taken under the link alone and
 * under the fabric lock (emul_xconn_t.rx_link, rx_full): all under the
 * link.  Whoever drained them: this thread's poll, the progress thread's
 * look before it sleeps, or its wake-up by the child's doorbell.
 *
 * Before, a Send for a receive of more than one SGE, an RDMA Write, a
 * frame that wraps the ring's end, and every frame a doorbell brought were
 * the full drain's, under the fabric lock: all SENDS + SENDS / 5 frames.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"
#include "emul.h"
#include "emul_ring.h"

#define SENDS 200
#define SEND_LEN 6000
#define WRITES (SENDS / 5)
#define WRITE_LEN 4096
#define READS WRITES  /* of what the Writes put */
#define LONGS 2
#define LONG_LEN 200000  /* four frames: 3 of 64 KiB, then the rest */
#define LONG_FRAMES 4
#define SGE_LEN 2048   /* three per receive: 6144 bytes of room */
#define OUTSTANDING 32
#define LINE_MS 20000
#define SRQ_MSG 512
#define HELD_US (2 * G_USEC_PER_SEC)

/* Byte @i of Send @k (or of Write @k + SENDS). */
static unsigned char
byte_of(unsigned k, size_t i)
{
  return (unsigned char) (k * 7 + i * 13 + 1);
}

static void
await_one(conf_side_t *s, unsigned *outstanding)
{
  it_event_t ev;
  it_status_t st;
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  while ((st = it_evd_dequeue(s->dto, &ev)) == IT_ERR_QUEUE_EMPTY && g_get_monotonic_time() < end)
    ;
  conf_ok(st);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  (*outstanding)--;
}

/* Where the frames of this process's one connection to another were
 * taken: under its QP's link alone (*@link), under the fabric lock
 * (*@full). */
static void
frames_taken(guint64 *link, guint64 *full)
{
  guint conns = 0;
  *link = *full = 0;
  emul_fabric_lock();
  for (GList *i = emul_ring_conns; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    *link = __atomic_load_n(&x->rx_link, __ATOMIC_RELAXED);  /* counted under its link */
    *full = __atomic_load_n(&x->rx_full, __ATOMIC_RELAXED);
    conns++;
  }
  emul_fabric_unlock();
  g_assert_cmpuint(conns, ==, 1);
}

/* The "one" child: one Send of SRQ_MSG bytes once told. */
static int
child_one(conf_side_t *s)
{
  g_autofree char *go = conf_hear(STDIN_FILENO, LINE_MS);
  g_assert_cmpstr(go, ==, "go");
  conf_buf_t sb;
  conf_buf_new(s, &sb, SRQ_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (size_t i = 0; i < SRQ_MSG; i++)
    sb.data[i] = byte_of(SENDS + WRITES, i);
  it_lmr_triplet_t t = conf_seg(&sb, 0, SRQ_MSG);
  conf_ok(it_post_send(s->ep, &t, 1, 1, IT_COMPLETION_FLAG));
  conf_dto(s->dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  printf("sent\n");
  fflush(stdout);
  g_free(conf_hear(STDIN_FILENO, LINE_MS));  /* "bye", or the parent gone */
  conf_buf_free(&sb);
  conf_side_close(s);
  return 0;
}

/* The "forge" child: the parent Reads FORGE_LEN bytes of its region; it
 * holds its QP's link (so that its own answer waits), hears the Read's
 * sequence number, and puts a Read Response of its own making in the
 * ring first: FORGE_LEN bytes said (byte_len), FORGE_TOTAL carried
 * (total), all 0xee. */
#define FORGE_LEN 4096
#define FORGE_TOTAL (64u << 10)
static int
child_forge(conf_side_t *s)
{
  conf_buf_t src;
  conf_buf_new(s, &src, FORGE_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
  memset(src.data, 0x11, FORGE_LEN);
  emul_fabric_lock();
  g_assert_nonnull(emul_ring_conns);
  emul_xconn_t *x = emul_ring_conns->data;
  emul_link_t *l = x->qp->link;
  l->ref++;
  emul_fabric_unlock();
  emul_link_lock(l);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) src.data, (guint64) src.ctx);
  fflush(stdout);
  g_autofree char *go = conf_hear(STDIN_FILENO, LINE_MS);
  guint64 seq = 0;
  g_assert_nonnull(go);
  g_assert_cmpint(sscanf(go, "go %" G_GUINT64_FORMAT, &seq), ==, 1);
  uint8_t *junk = g_malloc(FORGE_TOTAL);
  memset(junk, 0xee, FORGE_TOTAL);
  x_out_t o = { .f = { .seq = seq, .op = X_OP_READ_RESP, .byte_len = FORGE_LEN, .total = FORGE_TOTAL } };
  o.buf = junk;
  gboolean pushed = emul_ring_emit_now(x, &o);
  rnicpi_spin_unlock(&l->lock);
  emul_ring_bells_flush();  /* the frame's doorbell */
  printf("forged %d\n", pushed);
  fflush(stdout);
  g_free(conf_hear(STDIN_FILENO, LINE_MS));  /* "bye", or the parent gone */
  g_free(junk);
  emul_fabric_lock();
  emul_link_unref(l);
  emul_fabric_unlock();
  conf_buf_free(&src);
  conf_side_close(s);
  return 0;
}

/* The requester: accepts the parent's connection, then in @mode "stream"
 * hears where to write, sends and writes; in "one", child_one. */
static int
child(const char *mode)
{
  conf_side_t s;
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.max_request_dtos = OUTSTANDING;
  conf_side_open(&s, &a);
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  printf("established\n");
  fflush(stdout);
  if (strcmp(mode, "one") == 0)
    return child_one(&s);
  if (strcmp(mode, "forge") == 0)
    return child_forge(&s);
  g_autofree char *go = conf_hear(STDIN_FILENO, LINE_MS);
  guint64 addr = 0, ctx = 0;
  g_assert_nonnull(go);
  g_assert_cmpint(sscanf(go, "go %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &addr, &ctx), ==, 2);

  conf_buf_t sb, wb;
  conf_buf_new(&s, &sb, (size_t) SENDS * SEND_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &wb, (size_t) WRITES * WRITE_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < SENDS; k++)
    for (size_t i = 0; i < SEND_LEN; i++)
      sb.data[(size_t) k * SEND_LEN + i] = byte_of(k, i);
  for (unsigned k = 0; k < WRITES; k++)
    for (size_t i = 0; i < WRITE_LEN; i++)
      wb.data[(size_t) k * WRITE_LEN + i] = byte_of(k + SENDS, i);
  unsigned outstanding = 0;
  for (unsigned k = 0; k < SENDS; k++) {
    while (outstanding >= OUTSTANDING - 1)
      await_one(&s, &outstanding);
    it_lmr_triplet_t t = conf_seg(&sb, (size_t) k * SEND_LEN, SEND_LEN);
    conf_ok(it_post_send(s.ep, &t, 1, k, IT_COMPLETION_FLAG));
    outstanding++;
    if (k % 5 == 4) {
      unsigned j = k / 5;
      it_lmr_triplet_t g = conf_seg(&wb, (size_t) j * WRITE_LEN, WRITE_LEN);
      it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + (guint64) j * WRITE_LEN));
      conf_ok(it_post_rdma_write(s.ep, &g, 1, SENDS + j, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
      outstanding++;
    }
  }
  while (outstanding > 0)
    await_one(&s, &outstanding);
  /* Then READS RDMA Reads of what the Writes put there, one at a time
   * (none waits for ORD behind another): the parent answers each under its
   * link, and this process lands each answer under its own. */
  conf_buf_t rd;
  conf_buf_new(&s, &rd, (size_t) READS * WRITE_LEN, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  for (unsigned j = 0; j < READS; j++) {
    it_lmr_triplet_t g = conf_seg(&rd, (size_t) j * WRITE_LEN, WRITE_LEN);
    it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + (guint64) j * WRITE_LEN));
    conf_ok(it_post_rdma_read(s.ep, &g, 1, 2 * SENDS + j, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
    outstanding = 1;
    await_one(&s, &outstanding);
  }
  for (unsigned j = 0; j < READS; j++)
    for (size_t i = 0; i < WRITE_LEN; i++)
      if (rd.data[(size_t) j * WRITE_LEN + i] != byte_of(j + SENDS, i))
        g_error("RDMA Read %u: byte %zu is %u, not %u", j, i, rd.data[(size_t) j * WRITE_LEN + i],
                byte_of(j + SENDS, i));
  conf_buf_check_guards(&rd);
  /* Then LONGS Sends of several frames, one at a time. */
  conf_buf_t lb;
  conf_buf_new(&s, &lb, LONG_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned j = 0; j < LONGS; j++) {
    for (size_t i = 0; i < LONG_LEN; i++)
      lb.data[i] = byte_of(SENDS + j, i);
    it_lmr_triplet_t t = conf_seg(&lb, 0, LONG_LEN);
    conf_ok(it_post_send(s.ep, &t, 1, 3 * SENDS + j, IT_COMPLETION_FLAG));
    outstanding = 1;
    await_one(&s, &outstanding);
  }
  conf_buf_free(&lb);
  guint64 link, full;
  frames_taken(&link, &full);
  printf("sent %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", link, full);
  fflush(stdout);
  /* Held open until the parent has counted. */
  g_free(conf_hear(STDIN_FILENO, LINE_MS));  /* "bye", or the parent gone */
  conf_buf_free(&rd);
  conf_buf_free(&sb);
  conf_buf_free(&wb);
  conf_side_close(&s);
  return 0;
}

static const char *self;

/* The child in @mode, and @ep of @s (open) connected to it. */
static conf_child_t
connect_child(const char *mode, conf_side_t *s, it_ep_handle_t ep)
{
  const char *args[] = { "--child", mode, NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-ring-link", NULL, NULL);
  it_conn_qual_t q = conf_child_hear_port(&c, LINE_MS);
  conf_ok(conf_connect(s, ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(s->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_autofree char *el = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(el, ==, "established");
  return c;
}

/* Tell the child to go, and reap it: it exited 0. */
static void
reap_child(conf_child_t *c)
{
  conf_say(c->to, "bye\n");
  conf_child_reap(c);
}

/* The next DTO event of @s: busy-polled (it_evd_dequeue), or, with
 * @sleep, waited for (it_evd_wait, whose sleep drains the rings as it
 * begins and ends: emul_ring_cq_wait_begin, _end). */
static it_status_t
next_dto(conf_side_t *s, gboolean sleep, it_event_t *ev)
{
  if (sleep)
    return it_evd_wait(s->dto, CONF_TIMEOUT_US, ev, NULL);
  it_status_t st;
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  while ((st = it_evd_dequeue(s->dto, ev)) == IT_ERR_QUEUE_EMPTY && g_get_monotonic_time() < end)
    ;
  return st;
}

static void
test_frames_under_link(gconstpointer data)
{
  gboolean sleep = GPOINTER_TO_INT(data);
  conf_side_t s;
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.max_recv_dtos = SENDS + LONGS;
  a.max_recv_segments = 3;
  conf_side_open(&s, &a);
  conf_child_t c = connect_child("stream", &s, s.ep);

  /* Every receive posted before the first Send comes, three SGEs each;
   * the region the Writes land in. */
  conf_buf_t rb, wb;
  conf_buf_new(&s, &rb, (size_t) SENDS * 3 * SGE_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &wb, (size_t) WRITES * WRITE_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE | IT_PRIV_REMOTE_READ,
               IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < SENDS; k++) {
    it_lmr_triplet_t t[3];
    for (int i = 0; i < 3; i++)
      t[i] = conf_seg(&rb, ((size_t) k * 3 + i) * SGE_LEN, SGE_LEN);
    conf_ok(it_post_recv(s.ep, t, 3, k, IT_COMPLETION_FLAG));
  }
  conf_buf_t lb;
  conf_buf_new(&s, &lb, (size_t) LONGS * LONG_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned j = 0; j < LONGS; j++) {
    it_lmr_triplet_t t = conf_seg(&lb, (size_t) j * LONG_LEN, LONG_LEN);
    conf_ok(it_post_recv(s.ep, &t, 1, SENDS + j, IT_COMPLETION_FLAG));
  }
  /* Polled a while first: the progress thread leaves the ring to the
   * polls, mostly (its doorbell wake-ups drain under the link too). */
  it_event_t ev;
  gint64 end = g_get_monotonic_time() + 50 * 1000;
  while (g_get_monotonic_time() < end)
    g_assert_cmpint(it_evd_dequeue(s.dto, &ev), ==, IT_ERR_QUEUE_EMPTY);
  conf_say(c.to, "go %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) wb.data,
           (guint64) wb.ctx);

  for (unsigned n = 0; n < SENDS + LONGS; n++) {
    conf_ok(next_dto(&s, sleep, &ev));
    g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, n);  /* in order */
    g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, n < SENDS ? SEND_LEN : LONG_LEN);
  }
  /* Every Write acknowledged (landed), every Read answered: the child's
   * count of the Read Responses it took under its link, and under the
   * fabric lock. */
  g_autofree char *sl = conf_hear(c.from, LINE_MS);
  guint64 clink = 0, cfull = 0;
  g_assert_nonnull(sl);
  g_assert_cmpint(sscanf(sl, "sent %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &clink, &cfull), ==, 2);

  for (unsigned k = 0; k < SENDS; k++) {
    const unsigned char *p = rb.data + (size_t) k * 3 * SGE_LEN;
    for (size_t i = 0; i < SEND_LEN; i++)
      if (p[i] != byte_of(k, i))
        g_error("Send %u: byte %zu is %u, not %u", k, i, p[i], byte_of(k, i));
  }
  for (unsigned k = 0; k < WRITES; k++) {
    const unsigned char *p = wb.data + (size_t) k * WRITE_LEN;
    for (size_t i = 0; i < WRITE_LEN; i++)
      if (p[i] != byte_of(k + SENDS, i))
        g_error("RDMA Write %u: byte %zu is %u, not %u", k, i, p[i], byte_of(k + SENDS, i));
  }
  for (unsigned j = 0; j < LONGS; j++) {
    const unsigned char *p = lb.data + (size_t) j * LONG_LEN;
    for (size_t i = 0; i < LONG_LEN; i++)
      if (p[i] != byte_of(SENDS + j, i))
        g_error("long Send %u: byte %zu is %u, not %u", j, i, p[i], byte_of(SENDS + j, i));
  }
  conf_buf_check_guards(&rb);
  conf_buf_check_guards(&wb);
  conf_buf_check_guards(&lb);

  guint64 link, full;
  frames_taken(&link, &full);
  g_test_message("frames taken under the link alone: %" G_GUINT64_FORMAT ", under the fabric lock: %"
                 G_GUINT64_FORMAT "; the child's: %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT,
                 link, full, clink, cfull);
  /* Every frame of the long Sends too: the full drain executes each once
   * assembled (its copy into the receive, 64 KiB or more, lets the fabric
   * lock go). */
  g_assert_cmpuint(full, ==, 0);
  g_assert_cmpuint(link, ==, SENDS + WRITES + READS + LONGS * LONG_FRAMES);
  g_assert_cmpuint(cfull, ==, 0);
  g_assert_cmpuint(clink, ==, READS);

  reap_child(&c);
  conf_buf_free(&rb);
  conf_buf_free(&wb);
  conf_buf_free(&lb);
  conf_side_close(&s);
}

/* An SRQ receive posted by another thread while this one holds the
 * fabric lock. */
typedef struct {
  it_srq_handle_t srq;
  it_lmr_triplet_t t;
  it_status_t st;
  gint done;
} srq_post_t;

static gpointer
srq_post_run(gpointer data)
{
  srq_post_t *p = data;
  p->st = it_post_recv(p->srq, &p->t, 1, 77, IT_COMPLETION_FLAG);
  g_atomic_int_set(&p->done, 1);
  return NULL;
}

/* A receive posted to an SRQ one of whose QPs is connected to another
 * process, with no Send waiting for it, takes the SRQ's lock alone: it
 * returns while another thread holds the fabric lock, and the child's
 * Send lands in it after, taken under the QP's link alone.  Before, such
 * a post took the fabric lock (emul_srq_t.xqps): it returned only once the
 * lock was let go; and a Send into an SRQ was the full drain's. */
static void
test_srq_post_unlocked(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_srq_handle_t srq;
  conf_ok(it_srq_create(s.pz, 1, 16, &srq));
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.srv.rc.srq = srq;
  it_ep_handle_t ep;
  conf_ok(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_SRQ, &a, &ep));
  conf_child_t c = connect_child("one", &s, ep);

  conf_buf_t rb;
  conf_buf_new(&s, &rb, SRQ_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  srq_post_t p = { .srq = srq, .t = conf_seg(&rb, 0, SRQ_MSG) };
  emul_fabric_lock();
  GThread *t = g_thread_new("srq-poster", srq_post_run, &p);
  gint64 end = g_get_monotonic_time() + HELD_US;
  while (!g_atomic_int_get(&p.done) && g_get_monotonic_time() < end)
    g_usleep(1000);
  gboolean in_time = g_atomic_int_get(&p.done);
  emul_fabric_unlock();
  g_thread_join(t);
  conf_ok(p.st);
  g_assert_true(in_time);

  /* Polled (a sleeper's last look before it sleeps drains under the
   * fabric lock): the Send into the SRQ is taken under the link too. */
  conf_say(c.to, "go\n");
  it_event_t ev;
  it_status_t st;
  end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  while ((st = it_evd_dequeue(s.dto, &ev)) == IT_ERR_QUEUE_EMPTY && g_get_monotonic_time() < end)
    ;
  conf_ok(st);
  g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 77);
  g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, SRQ_MSG);
  guint64 link, full;
  frames_taken(&link, &full);
  g_test_message("frames taken under the link alone: %" G_GUINT64_FORMAT ", under the fabric lock: %"
                 G_GUINT64_FORMAT, link, full);
  g_assert_cmpuint(full, ==, 0);
  g_assert_cmpuint(link, ==, 1);
  for (size_t i = 0; i < SRQ_MSG; i++)
    g_assert_cmpuint(rb.data[i], ==, byte_of(SENDS + WRITES, i));
  conf_buf_check_guards(&rb);
  g_autofree char *sl = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(sl, ==, "sent");
  reap_child(&c);
  conf_ok(it_ep_free(ep));
  conf_ok(it_srq_free(srq));
  conf_buf_free(&rb);
  conf_side_close(&s);
}

/* A Read Response whose frame carries more than it says (total 64 KiB,
 * byte_len 4 KiB, for a Read of 4 KiB) is refused: the connection breaks,
 * the Read does not complete successfully, and not a byte lands past its
 * sink.  Before, a drain under the link alone took it and copied the
 * frame's 64 KiB into the 4 KiB sink (the full path checks total against
 * byte_len, x_answer). */
static void
test_forged_read_response(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_child_t c = connect_child("forge", &s, s.ep);
  g_autofree char *ml = conf_hear(c.from, LINE_MS);
  guint64 addr = 0, ctx = 0;
  g_assert_nonnull(ml);
  g_assert_cmpint(sscanf(ml, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &addr, &ctx), ==, 2);
  conf_buf_t sink;
  conf_buf_new(&s, &sink, FORGE_LEN, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  memset(sink.data, 0, FORGE_LEN);
  /* The Read's sequence number: the QP's next. */
  emul_fabric_lock();
  g_assert_nonnull(emul_ring_conns);
  guint64 seq = ((emul_xconn_t *) emul_ring_conns->data)->qp->next_seq;
  emul_fabric_unlock();
  it_lmr_triplet_t g = conf_seg(&sink, 0, FORGE_LEN);
  conf_ok(it_post_rdma_read(s.ep, &g, 1, 9, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute((void *) (uintptr_t) addr), (it_rmr_context_t) ctx));
  conf_say(c.to, "go %" G_GUINT64_FORMAT "\n", seq);
  g_autofree char *fl = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(fl, ==, "forged 1");
  it_event_t ev;
  conf_ok(next_dto(&s, FALSE, &ev));
  g_assert_cmpint(ev.event_number, ==, IT_DTO_RDMA_READ_CMPL_EVENT);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 9);
  g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), !=, itx_dto_status_name(IT_DTO_SUCCESS));
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_buf_check_guards(&sink);
  conf_say(c.to, "bye\n");
  conf_child_reap(&c);
  conf_buf_free(&sink);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--child") == 0)
    return child(argv[2]);
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/emul/ring-link/frames-under-link", GINT_TO_POINTER(FALSE),
                       test_frames_under_link);
  /* The same, this process sleeping in it_evd_wait for each completion: the
   * sleep's last look at the rings after it armed them drains under the
   * link too (before: under the fabric lock, x_serve). */
  g_test_add_data_func("/emul/ring-link/frames-under-link/sleep", GINT_TO_POINTER(TRUE),
                       test_frames_under_link);
  g_test_add_func("/emul/ring-link/srq-post-unlocked", test_srq_post_unlocked);
  g_test_add_func("/emul/ring-link/forged-read-response", test_forged_read_response);
  return g_test_run();
}
