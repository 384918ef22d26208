/*
 * Conformance: RDMA Read with several local segments (scatter), part of
 * conf-dto.  An application written for InfiniBand scatters a Read over
 * several segments; a device whose wire Read names one sink (iWARP, RFC
 * 5040 6.1) may split it into several wire Reads, but the application
 * sees one request: one completion with its cookie and the whole length,
 * success only when every segment landed, its error when any part
 * failed, one flushed completion when flushed, and parts beyond the ORD
 * wait rather than fail.
 *
 * The segment limit is the device's (its capability record's
 * max_rdma_read_sge, itx_interface_caps); the tests use up to 8 (what
 * IBM's SKV asks) and skip where the limit is 1.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"

#define SC_SEGS_MAX 8
#define SC_BUFS_MAX 3
#define PRIV_TARGET (IT_PRIV_LOCAL | IT_PRIV_REMOTE)

/* Where one scattered Read lands: its segments in @nbuf sink buffers, of
 * uneven lengths with gaps between them (and, in one region, two
 * segments that follow each other in memory). */
typedef struct sc_plan {
  size_t n, nbuf, total;
  conf_buf_t buf[SC_BUFS_MAX];
  it_lmr_triplet_t seg[SC_SEGS_MAX];
  size_t at[SC_SEGS_MAX];     /* offset in its buffer */
  unsigned which[SC_SEGS_MAX]; /* its buffer */
} sc_plan_t;

/* The number of segments the tests scatter a Read over on the interface
 * under test: min(8, max_rdma_read_sge); 0, the test skipped, where that
 * is 1. */
static size_t
sc_segments(void)
{
  itx_caps_t caps;
  conf_ok(itx_interface_caps(conf_ia_name(), &caps));
  size_t n = MIN((size_t) caps.max_rdma_read_sge, (size_t) SC_SEGS_MAX);
  if (n < 2) {
    g_test_skip("the device takes one segment per RDMA Read (max_rdma_read_sge 1)");
    return 0;
  }
  return n;
}

/* A pair whose EPs take @n Read segments and whose ORD and IRD are @ord. */
static void
sc_pair_up(conf_pair_t *p, size_t n, size_t ord)
{
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.srv.rc.max_rdma_read_segments = n;
  a.srv.rc.rdma_read_ord = ord;
  a.srv.rc.rdma_read_ird = ord;
  conf_pair_open2(p, &a, &a);
  conf_pair_connect(p, NULL, 0, NULL, 0);
}

/* Segment @i's length: uneven, 1 to 3000 bytes, times @scale. */
static size_t
sc_len(size_t i, size_t scale)
{
  return (1 + (i * 911 + 29) % 3000) * scale;
}

/* Plan @n segments over @nbuf sink buffers of @s (segment i in buffer
 * i % nbuf), registered with the privileges an RDMA Read sink needs but
 * buffer @local_only (SIZE_MAX: none), registered IT_PRIV_LOCAL alone.
 * Segments 1 and 2 are adjacent when they share a buffer. */
static void
sc_plan_privs(conf_side_t *s, sc_plan_t *pl, size_t n, size_t nbuf, size_t scale,
              size_t local_only)
{
  memset(pl, 0, sizeof(*pl));
  pl->n = n;
  pl->nbuf = nbuf;
  size_t end[SC_BUFS_MAX] = { 3, 17, 1 };
  for (size_t i = 0; i < n; i++) {
    unsigned b = (unsigned) (i % nbuf);
    size_t len = sc_len(i, scale);
    pl->which[i] = b;
    pl->at[i] = end[b];
    end[b] += len + (i == 1 ? 0 : 5 + i);
    pl->total += len;
  }
  for (size_t b = 0; b < nbuf; b++)
    conf_buf_new(s, &pl->buf[b], end[b] + 64, b == local_only ? IT_PRIV_LOCAL : conf_sink_privs(s),
                 IT_ADDR_MODE_ABSOLUTE);
  for (size_t i = 0; i < n; i++)
    pl->seg[i] = conf_seg(&pl->buf[pl->which[i]], pl->at[i], sc_len(i, scale));
}

static void
sc_plan(conf_side_t *s, sc_plan_t *pl, size_t n, size_t nbuf, size_t scale)
{
  sc_plan_privs(s, pl, n, nbuf, scale, SIZE_MAX);
}

static void
sc_plan_free(sc_plan_t *pl)
{
  for (size_t b = 0; b < pl->nbuf; b++)
    conf_buf_free(&pl->buf[b]);
}

/* Every segment holds the source's bytes from @src in order, and every
 * other byte of the sinks (gaps, guards) is as it was. */
static void
sc_check(const sc_plan_t *pl, const unsigned char *src)
{
  for (size_t b = 0; b < pl->nbuf; b++) {
    const conf_buf_t *buf = &pl->buf[b];
    g_autofree gboolean *covered = g_new0(gboolean, buf->len);
    size_t from = 0;
    for (size_t i = 0; i < pl->n; i++) {
      size_t len = pl->seg[i].length;
      if (pl->which[i] == b) {
        g_assert_cmpmem(buf->data + pl->at[i], len, src + from, len);
        for (size_t k = 0; k < len; k++)
          covered[pl->at[i] + k] = TRUE;
      }
      from += len;
    }
    for (size_t k = 0; k < buf->len; k++)
      if (!covered[k] && buf->data[k] != 0)
        g_error("sink buffer %zu: byte %zu, outside every segment, is 0x%02x", b, k, buf->data[k]);
    conf_buf_check_guards(buf);
  }
}

static void
sc_post(conf_pair_t *p, const sc_plan_t *pl, it_dto_cookie_t cookie, const unsigned char *src,
        it_rmr_context_t ctx)
{
  conf_ok(it_post_rdma_read(p->a.ep, pl->seg, pl->n, cookie, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute((void *) src), ctx));
}

/* Read from @src into @pl (cookie @cookie): it completes once,
 * successfully, with the whole length, and every byte lands in its place. */
static void
sc_read_ok(conf_pair_t *p, const sc_plan_t *pl, it_dto_cookie_t cookie,
           const unsigned char *src, it_rmr_context_t ctx)
{
  sc_post(p, pl, cookie, src, ctx);
  it_dto_cmpl_event_t ev = conf_dto(p->a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, cookie);
  g_assert_cmpuint(ev.transferred_length, ==, pl->total);
  sc_check(pl, src);
}

/* One scattered Read over @nbuf regions lands every byte in its place and
 * completes once with the whole length. */
static void
test_scatter(gconstpointer data)
{
  size_t nbuf = GPOINTER_TO_SIZE(data);
  g_test_summary("IT-API DTO: it_post_rdma_read with min(8, max_rdma_read_sge) local segments "
                 "of uneven lengths, in one LMR (two of them adjacent) or across several, lands "
                 "each segment's bytes from its offset of the remote range, touches nothing "
                 "between them, and completes once with the cookie and the whole length");
  size_t n = sc_segments();
  if (n == 0)
    return;
  conf_pair_t p;
  sc_pair_up(&p, n, 4);
  sc_plan_t pl;
  sc_plan(&p.a, &pl, n, MIN(nbuf, n), 1);
  conf_buf_t src;
  conf_buf_new(&p.p, &src, pl.total + 100, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 23);
  sc_read_ok(&p, &pl, 0x5c01, src.data + 41, src.ctx);
  conf_buf_check(&src, 0, src.len, 23);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  sc_plan_free(&pl);
  conf_pair_close(&p);
}

/* With ORD 1 every wire Read after the first waits for the one before. */
static void
test_scatter_beyond_ord(void)
{
  g_test_summary("IT-API DTO: with rdma_read_ord 1, three scattered RDMA Reads of "
                 "min(8, max_rdma_read_sge) segments each (more wire Reads than the ORD where a "
                 "device splits them) all complete, in order, successfully, with their bytes");
  size_t n = sc_segments();
  if (n == 0)
    return;
  conf_pair_t p;
  sc_pair_up(&p, n, 1);
  sc_plan_t pl[3];
  conf_buf_t src;
  for (size_t r = 0; r < 3; r++)
    sc_plan(&p.a, &pl[r], n, 1 + r % 2, 4);
  conf_buf_new(&p.p, &src, pl[0].total + 64, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 29);
  for (size_t r = 0; r < 3; r++)
    sc_post(&p, &pl[r], 0x5c10 + r, src.data + r, src.ctx);
  for (size_t r = 0; r < 3; r++) {
    it_dto_cmpl_event_t ev =
      conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 0x5c10 + r);
    g_assert_cmpuint(ev.transferred_length, ==, pl[r].total);
  }
  for (size_t r = 0; r < 3; r++) {
    sc_check(&pl[r], src.data + r);
    sc_plan_free(&pl[r]);
  }
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

/* A bad remote key fails the whole Read, once. */
static void
test_scatter_bad_key(void)
{
  g_test_summary("IT-API DTO: after a scattered RDMA Read (min(8, max_rdma_read_sge) segments, "
                 "ORD 2) that succeeds, one through a wrong rmr_context completes once, "
                 "IT_DTO_ERR_REMOTE_ACCESS, the connection breaks, the scattered Read posted "
                 "behind it completes once, flushed, and nothing else completes");
  size_t n = sc_segments();
  if (n == 0)
    return;
  conf_pair_t p;
  sc_pair_up(&p, n, 2);
  sc_plan_t pl, behind;
  sc_plan(&p.a, &pl, n, 2, 1);
  sc_plan(&p.a, &behind, n, 1, 1);
  conf_buf_t src;
  conf_buf_new(&p.p, &src, pl.total + 64, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 31);
  sc_read_ok(&p, &pl, 0x5c2f, src.data, src.ctx);
  memset(pl.buf[0].data, 0, pl.buf[0].len);
  memset(pl.buf[1].data, 0, pl.buf[1].len);
  sc_post(&p, &pl, 0x5c20, src.data, src.ctx ^ 0xff0000ffu);
  sc_post(&p, &behind, 0x5c21, src.data, src.ctx);
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x5c20);
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 0x5c21);
  conf_wait(p.a.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_assert_empty(p.a.dto);
  conf_buf_check(&src, 0, src.len, 31);
  conf_buf_free(&src);
  sc_plan_free(&behind);
  sc_plan_free(&pl);
  conf_pair_close(&p);
}

/* The read-sink rule holds for every segment. */
static void
test_scatter_sink_rule(void)
{
  g_test_summary("IT-API DTO: where it_ia_info_t.rdma_read_requires_remote_write is set "
                 "(iWARP), a scattered RDMA Read (min(8, max_rdma_read_sge) segments over three "
                 "LMRs) one of whose LMRs lacks IT_PRIV_REMOTE_WRITE fails once with "
                 "IT_DTO_ERR_LOCAL_PROTECTION, lands nothing in any segment and breaks the "
                 "connection; otherwise (IB) it succeeds");
  size_t n = sc_segments();
  if (n == 0)
    return;
  conf_pair_t p;
  sc_pair_up(&p, n, 4);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean needs_rw = info->rdma_read_requires_remote_write;
  it_ia_info_free(info);
  sc_plan_t pl;
  sc_plan_privs(&p.a, &pl, n, MIN((size_t) 3, n), 1, 1);
  conf_buf_t src;
  conf_buf_new(&p.p, &src, pl.total + 64, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 41);
  if (needs_rw) {
    sc_post(&p, &pl, 0x5c40, src.data, src.ctx);
    conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 0x5c40);
    for (size_t b = 0; b < pl.nbuf; b++) {
      g_assert_cmpuint(conf_first_not(pl.buf[b].data, pl.buf[b].len, 0), ==, pl.buf[b].len);
      conf_buf_check_guards(&pl.buf[b]);
    }
    conf_wait(p.a.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    conf_assert_empty(p.a.dto);
  } else {
    sc_read_ok(&p, &pl, 0x5c40, src.data, src.ctx);
  }
  conf_buf_free(&src);
  sc_plan_free(&pl);
  conf_pair_close(&p);
}

/* Flushed by a disconnect: each scattered Read completes once. */
static void
test_scatter_flush(void)
{
  g_test_summary("IT-API DTO: after a scattered RDMA Read that succeeds, four of "
                 "min(8, max_rdma_read_sge) segments (about 64 KiB each, ORD 1) in flight when "
                 "the peer disconnects: each completes exactly once, in order, successfully with "
                 "all its bytes or flushed (none successful after a flushed one); one posted "
                 "after the disconnect completes once, flushed; nothing else completes");
  size_t n = sc_segments();
  if (n == 0)
    return;
  conf_pair_t p;
  sc_pair_up(&p, n, 1);
  enum { NREADS = 4 };
  sc_plan_t pl[NREADS], late;
  for (size_t r = 0; r < NREADS; r++)
    sc_plan(&p.a, &pl[r], n, 1 + r % 3, 16);
  sc_plan(&p.a, &late, n, 2, 1);
  conf_buf_t src;
  conf_buf_new(&p.p, &src, pl[0].total + 64, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 37);
  sc_read_ok(&p, &late, 0x5c3e, src.data, src.ctx);
  for (size_t b = 0; b < late.nbuf; b++)
    memset(late.buf[b].data, 0, late.buf[b].len);
  for (size_t r = 0; r < NREADS; r++)
    sc_post(&p, &pl[r], 0x5c30 + r, src.data + r, src.ctx);
  conf_ok(it_ep_disconnect(p.p.ep, NULL, 0));
  size_t flushed = 0;
  for (size_t r = 0; r < NREADS; r++) {
    it_event_t ev = conf_wait(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 0x5c30 + r);
    if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS) {
      g_assert_cmpuint(flushed, ==, 0);
      g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, pl[r].total);
      sc_check(&pl[r], src.data + r);
    } else {
      g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_ERR_FLUSHED);
      flushed++;
    }
  }
  g_test_message("%zu of %d scattered Reads flushed, the rest successful", flushed, NREADS);
  /* The peer's orderly close, or a break where the close found Reads
   * still to answer. */
  it_event_t cm;
  size_t more = 0;
  conf_ok(conf_evd_wait(p.a.cm, CONF_TIMEOUT_US, &cm, &more));
  g_assert_true(cm.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
                cm.event_number == IT_CM_MSG_CONN_BROKEN_EVENT);
  sc_post(&p, &late, 0x5c3f, src.data, src.ctx);
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 0x5c3f);
  conf_assert_empty(p.a.dto);
  conf_buf_free(&src);
  sc_plan_free(&late);
  for (size_t r = 0; r < NREADS; r++)
    sc_plan_free(&pl[r]);
  conf_pair_close(&p);
}

void
conf_dto_scatter_register(void)
{
  g_test_add_data_func("/conformance/dto/read-scatter/one-region", GSIZE_TO_POINTER(1), test_scatter);
  g_test_add_data_func("/conformance/dto/read-scatter/regions", GSIZE_TO_POINTER(3), test_scatter);
  g_test_add_func("/conformance/dto/read-scatter/beyond-ord", test_scatter_beyond_ord);
  g_test_add_func("/conformance/dto/read-scatter/bad-key", test_scatter_bad_key);
  g_test_add_func("/conformance/dto/read-scatter/sink-rule", test_scatter_sink_rule);
  g_test_add_func("/conformance/dto/read-scatter/flush", test_scatter_flush);
}
