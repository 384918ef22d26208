/*
 * Seeds of the vp/emul fuzz target (emul_fuzz.c), recorded from a real
 * connection: this program listens on emul0 and runs itself as a child
 * (--child PORT ADDR RKEY) that connects with the real library over the
 * bounce ring (ITAPI_EMUL_CMA=0, ITAPI_EMUL_MAP=0: every byte rides a
 * frame) and sends what an application sends: Sends of 16, 1000, 20000
 * and 200000 bytes (four frames), RDMA Writes of 64 and 65536 bytes and
 * an RDMA Read of 4096 into this process's region, then a disconnect with
 * private data.  This process records every socket message it reads from
 * the child (recvmsg wrapped) and, once the child is done, the frames of
 * the child's ring as the segment holds them, and its own answers (the
 * Read Response); then writes them as inputs of the fuzz target in the
 * directory given (emul_fuzz.h), the region's key and addresses as the
 * target's tokens and the handshake's nonce and proof as theirs:
 *
 *   emul-fuzz-record DIR
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"
#include "emul.h"
#include "emul_fuzz.h"
#include "emul_ring.h"

#define LINE_MS 20000
#define ROUND_LINE(n) (((uint64_t) (n) + X_LINE - 1) & ~(uint64_t) (X_LINE - 1))

static const uint32_t send_len[] = { 16, 1000, 20000, 200000 };
#define RECV_LEN (256u << 10)

/* ---- the socket messages read (this process's recvmsg, wrapped) ---- */

static GMutex msgs_lock;
static GPtrArray *msgs;  /* GBytes of each x_msg_t read, X_MSG_MIN + pdata_len bytes */

ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t
__wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
  ssize_t n = __real_recvmsg(fd, m, flags);
  if (msgs != NULL && n >= (ssize_t) X_MSG_MIN && m->msg_iovlen > 0 && m->msg_iov[0].iov_len >= X_MSG_MIN) {
    const x_msg_t *h = m->msg_iov[0].iov_base;
    if (h->magic == X_MAGIC) {
      g_mutex_lock(&msgs_lock);
      g_ptr_array_add(msgs, g_bytes_new(h, (gsize) n));
      g_mutex_unlock(&msgs_lock);
    }
  }
  return n;
}

/* ---- the child: the real library's active side ---- */

static void
post_wait(conf_side_t *s, it_status_t posted)
{
  conf_ok(posted);
  it_event_t ev;
  conf_ok(it_evd_wait(s->dto, CONF_TIMEOUT_US, &ev, NULL));
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
}

static int
child(unsigned port, guint64 addr, guint64 rkey)
{
  conf_side_t s;
  conf_side_open_on(&s, "emul0", NULL);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  conf_ok(conf_connect(&s, s.ep, &q, IT_CONNECT_FLAG_TWO_WAY, "seed", 4));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_t b;
  conf_buf_new(&s, &b, RECV_LEN, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&b, 7);
  for (size_t i = 0; i < G_N_ELEMENTS(send_len); i++) {
    it_lmr_triplet_t t = conf_seg(&b, 0, send_len[i]);
    post_wait(&s, it_post_send(s.ep, &t, 1, i, IT_COMPLETION_FLAG));
  }
  const uint32_t write_len[] = { 64, EMUL_FUZZ_RW_LEN };
  for (size_t i = 0; i < G_N_ELEMENTS(write_len); i++) {
    it_lmr_triplet_t t = conf_seg(&b, 0, write_len[i]);
    it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
    post_wait(&s, it_post_rdma_write(s.ep, &t, 1, 10 + i, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) rkey));
  }
  it_lmr_triplet_t t = conf_seg(&b, 0, 4096);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  post_wait(&s, it_post_rdma_read(s.ep, &t, 1, 20, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) rkey));
  printf("sent\n");
  fflush(stdout);
  g_autofree char *go = conf_hear(STDIN_FILENO, LINE_MS);
  g_assert_cmpstr(go, ==, "disconnect");
  static const unsigned char bye[] = "bye";
  conf_ok(it_ep_disconnect(s.ep, bye, 3));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  printf("done\n");
  fflush(stdout);
  g_free(conf_hear(STDIN_FILENO, LINE_MS));
  conf_buf_free(&b);
  conf_side_close(&s);
  return 0;
}

/* ---- the seeds ---- */

typedef struct {
  GByteArray *b;
} seed_t;

static seed_t
seed_new(uint8_t mode)
{
  seed_t s = { g_byte_array_new() };
  g_byte_array_append(s.b, &mode, 1);
  return s;
}

static void
seed_add(seed_t *s, uint8_t kind, const void *bytes, size_t len)
{
  uint32_t n = GUINT32_TO_LE((uint32_t) len);
  g_byte_array_append(s->b, &kind, 1);
  g_byte_array_append(s->b, (const guint8 *) &n, 4);
  if (len > 0)
    g_byte_array_append(s->b, bytes, (guint) len);
}

static void
seed_write(seed_t *s, const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename(dir, name, NULL);
  GError *err = NULL;
  if (!g_file_set_contents(path, (const char *) s->b->data, s->b->len, &err))
    g_error("%s: %s", path, err->message);
  g_byte_array_free(s->b, TRUE);
}

/* A frame of a ring, as the fuzz target's record holds it: the region's
 * key and addresses as its tokens. */
typedef struct {
  GBytes *bytes;
  uint32_t op;
} frame_t;

static void
tokens(x_frame_t *f, const conf_buf_t *region)
{
  uint64_t base = (uint64_t) (uintptr_t) region->data;
  if (f->rkey == region->ctx)
    f->rkey = EMUL_FUZZ_RKEY_RW;
  if (f->raddr >= base && f->raddr - base <= region->len)
    f->raddr = EMUL_FUZZ_ADDR_RW << 32 | (f->raddr - base);
}

/* The frames ring @s of @x's segment holds from position 0 to @upto. */
static GPtrArray *
frames_of(const emul_xconn_t *x, int s, uint64_t key, uint64_t upto, const conf_buf_t *region)
{
  GPtrArray *all = g_ptr_array_new();
  const uint8_t *data = (const uint8_t *) x->seg + X_HDR_SIZE + (size_t) s * X_RING_SIZE;
  for (uint64_t pos = 0; pos < upto;) {
    uint64_t mark;
    memcpy(&mark, data + pos, 8);
    if (mark != (pos ^ key))
      break;
    const x_short_t *sh = (const x_short_t *) (data + pos);
    uint64_t len = sh->op == X_OP_SEND_SHORT ? sizeof(*sh) + sh->len :
                   sizeof(x_frame_t) + ((const x_frame_t *) (data + pos))->frag_len;
    g_assert_cmpuint(pos + len, <=, X_RING_SIZE);  /* one lap: the recording is shorter */
    uint8_t *copy = g_memdup2(data + pos, len);
    memset(copy, 0, 8);  /* the mark's place: the fuzz target writes its own */
    if (sh->op != X_OP_SEND_SHORT)
      tokens((x_frame_t *) copy, region);
    frame_t *f = g_new(frame_t, 1);
    f->op = sh->op;
    f->bytes = g_bytes_new_take(copy, len);
    g_ptr_array_add(all, f);
    pos += ROUND_LINE(len);
  }
  return all;
}

static void
add_frame(seed_t *s, const frame_t *f)
{
  gsize n;
  const void *b = g_bytes_get_data(f->bytes, &n);
  seed_add(s, EMUL_FUZZ_FRAME, b, n);
  seed_add(s, EMUL_FUZZ_BELL, NULL, 0);
}

/* A message read, as the fuzz target's record holds it: the nonce's
 * address and a proof as its tokens. */
static void
add_msg(seed_t *s, GBytes *m)
{
  gsize n;
  const x_msg_t *src = g_bytes_get_data(m, &n);
  x_msg_t c;
  memcpy(&c, src, MIN(n, sizeof(c)));
  if (c.type == X_REQ)
    c.probe_addr = 1;
  if (c.type == X_ATTACH && c.proof != 0)
    c.proof = 1;
  seed_add(s, EMUL_FUZZ_MSG, &c, n);
}

static const char *
op_name(uint32_t op)
{
  static const char *const names[] = { "?", "send", "write", "read", "atomic", "ack", "read-resp", "cont",
                                       "send-short" };
  return op < G_N_ELEMENTS(names) ? names[op] : "?";
}

static void
write_seeds(const char *dir, GPtrArray *in, GPtrArray *answers)
{
  /* Everything in order, then the peer's messages after the handshake. */
  seed_t all = seed_new(EMUL_FUZZ_RECVS);
  for (guint i = 0; i < in->len; i++)
    add_frame(&all, g_ptr_array_index(in, i));
  for (guint i = 0; i < msgs->len; i++) {
    const x_msg_t *m = g_bytes_get_data(g_ptr_array_index(msgs, i), NULL);
    if (m->type != X_REQ && m->type != X_ATTACH)
      add_msg(&all, g_ptr_array_index(msgs, i));
  }
  seed_write(&all, dir, "all");
  /* Each message alone (its continuations with it). */
  for (guint i = 0, k = 0; i < in->len; k++) {
    seed_t one = seed_new(EMUL_FUZZ_RECVS);
    const frame_t *first = g_ptr_array_index(in, i);
    do
      add_frame(&one, g_ptr_array_index(in, i++));
    while (i < in->len && ((const frame_t *) g_ptr_array_index(in, i))->op == X_OP_CONT);
    g_autofree char *name = g_strdup_printf("message-%u-%s", k, op_name(first->op));
    seed_write(&one, dir, name);
  }
  /* The handshake in the records, trusted or not, then the first Sends. */
  for (int trusted = 0; trusted < 2; trusted++) {
    seed_t hs = seed_new(EMUL_FUZZ_RAW | EMUL_FUZZ_RECVS | (trusted ? EMUL_FUZZ_TRUSTED : 0));
    for (guint i = 0; i < msgs->len; i++) {
      GBytes *m = g_ptr_array_index(msgs, i);
      const x_msg_t *h = g_bytes_get_data(m, NULL);
      if (h->type == X_REQ || (h->type == X_ATTACH && trusted))
        add_msg(&hs, m);
      if (h->type == X_ATTACH && !trusted) {
        x_msg_t c = *h;
        c.proof = 0;
        seed_add(&hs, EMUL_FUZZ_MSG, &c, X_MSG_MIN);
      }
    }
    for (guint i = 0; i < MIN(in->len, 3u); i++)
      add_frame(&hs, g_ptr_array_index(in, i));
    seed_write(&hs, dir, trusted ? "handshake-trusted" : "handshake");
  }
  /* This process's answers, as a peer's answers to the target's requests
   * (its Send and its RDMA Read), with its ring consumed. */
  seed_t ans = seed_new(EMUL_FUZZ_POSTS | EMUL_FUZZ_RECVS);
  seed_add(&ans, EMUL_FUZZ_CONSUME, NULL, 0);
  uint64_t acked = 1;
  seed_add(&ans, EMUL_FUZZ_ACK, &acked, sizeof(acked));
  for (guint i = 0; i < answers->len; i++)
    add_frame(&ans, g_ptr_array_index(answers, i));
  seed_write(&ans, dir, "answers");
}

static void
frames_free(GPtrArray *a)
{
  for (guint i = 0; i < a->len; i++) {
    frame_t *f = g_ptr_array_index(a, i);
    g_bytes_unref(f->bytes);
    g_free(f);
  }
  g_ptr_array_free(a, TRUE);
}

static int
record(const char *self, const char *dir)
{
  msgs = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
  conf_side_t s;
  it_ep_attributes_t a;
  conf_default_attr(&a);
  conf_side_open_on(&s, "emul0", &a);
  it_listen_handle_t lh;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(s.ia, 0, s.req, IT_LISTEN_NO_FLAG, &q, &lh));
  conf_buf_t region, rb;
  conf_buf_new(&s, &region, EMUL_FUZZ_RW_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ | IT_PRIV_REMOTE_WRITE,
               IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &rb, (size_t) G_N_ELEMENTS(send_len) * RECV_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (size_t i = 0; i < G_N_ELEMENTS(send_len); i++) {
    it_lmr_triplet_t t = conf_seg(&rb, i * RECV_LEN, RECV_LEN);
    conf_ok(it_post_recv(s.ep, &t, 1, i, IT_COMPLETION_FLAG));
  }
  g_autofree char *port = g_strdup_printf("%u", (unsigned) ntohs(q.conn_qual.port));
  g_autofree char *addr = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64) (uintptr_t) region.data);
  g_autofree char *rkey = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64) region.ctx);
  const char *args[] = { "--child", port, addr, rkey, NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-fuzz-record", NULL, NULL);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  for (size_t i = 0; i < G_N_ELEMENTS(send_len); i++)
    conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, i);
  g_autofree char *sent = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(sent, ==, "sent");

  /* The child's ring as far as this process took it, and this process's. */
  emul_fabric_lock();
  g_assert_cmpuint(g_list_length(emul_ring_conns), ==, 1);
  const emul_xconn_t *x = emul_ring_conns->data;
  GPtrArray *in = frames_of(x, 0, x->key_in, x->rx_head, &region);
  GPtrArray *answers = frames_of(x, 1, x->key_out, x->tail, &region);
  emul_fabric_unlock();

  conf_say(c.to, "disconnect\n");
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_autofree char *done = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(done, ==, "done");
  conf_say(c.to, "bye\n");
  conf_child_reap(&c);

  g_mutex_lock(&msgs_lock);
  g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
  write_seeds(dir, in, answers);
  printf("recorded %u frames, %u answers and %u socket messages into %s\n", in->len, answers->len, msgs->len,
         dir);
  g_ptr_array_free(msgs, TRUE);
  msgs = NULL;
  g_mutex_unlock(&msgs_lock);
  frames_free(in);
  frames_free(answers);
  conf_buf_free(&region);
  conf_buf_free(&rb);
  conf_side_close(&s);
  return 0;
}

int
main(int argc, char **argv)
{
  /* Every byte in a frame, both sides (the child inherits them). */
  g_setenv("ITAPI_EMUL_CMA", "0", TRUE);
  g_setenv("ITAPI_EMUL_MAP", "0", TRUE);
  if (argc == 5 && strcmp(argv[1], "--child") == 0)
    return child((unsigned) atoi(argv[2]), g_ascii_strtoull(argv[3], NULL, 10),
                 g_ascii_strtoull(argv[4], NULL, 10));
  if (argc != 2) {
    fprintf(stderr, "usage: emul-fuzz-record DIR\n");
    return 2;
  }
  return record(argv[0], argv[1]);
}
