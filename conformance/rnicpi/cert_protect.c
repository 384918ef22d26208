/*
 * cert-rnicpi: the checks a responder makes on every part of a remote
 * access, each on its own, and the IRD/ORD limit.
 *
 * - Keys: a key that differs from a live one in its consumer-owned key
 *   byte only (the low 8 bits of an iWARP STag, RDMAC verbs 7.2; of an
 *   R_Key by verbs convention), or in any single other bit, names no
 *   memory.  The wrong-key test of cert_errors.c changes index bits too,
 *   which the index lookup refuses before the key is compared.  Nor does
 *   a key with a bit above a 32-bit key's width: keys are compared in
 *   full, never cut to the device's width.
 * - Protection domains: an in-bounds access to a region (or window) of
 *   another domain than the responder queue pair's is refused on every
 *   operation; a local key of another domain than the queue pair's is a
 *   local protection error.
 * - IRD/ORD: more Reads and atomics posted than the negotiated ORD all
 *   complete, in order, with their bytes: the requester holds back what
 *   the peer's IRD cannot take (RFC 5040 6.8 / IBTA 9.5), and the
 *   connection stays up.
 *
 * Every refused access is checked as cert_errors.c checks one: requester
 * RNICPI_WC_REM_ACCESS_ERR, both sides BROKEN and ERROR, the responder's
 * access event, the requester's remote-access event, and the memory the
 * request named (target and local buffer) unchanged.  Each attempt first
 * makes the same access with the right key, on the same connection: only
 * the part under test differs.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define TARGET (RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define PROT_LEN 64
#define TGT_LEN 256
#define GOOD_ID 0x600d
#define BAD_ID 0xbad
#define WORD0 1000u

typedef enum { PROT_WRITE, PROT_READ, PROT_ATOMIC } prot_op_t;

static const char *const op_what[] = { "RDMA Write", "RDMA Read", "atomic fetch-and-add" };

/* A pair connected with IRD and ORD @ird/@ord asked on both sides, its QP
 * contexts drawn from @ctx (a fresh one per pair, so that one pair's late
 * events never match the next one's waits). */
static void
prot_pair_open(cert_t *f, cert_pair_t *pr, uint64_t ctx, uint32_t ird, uint32_t ord)
{
  memset(pr, 0, sizeof(*pr));
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.ird = ird;
  a.ord = ord;
  cert_side_new(f, &pr->a, ctx, 256, &a);
  cert_side_new(f, &pr->p, ctx + 0x8000, 256, &a);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, ctx + 0x4000, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = ird, .ord = ord };
  cert_ok(CMV->connect(pr->a.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, ctx + 0x4000);
  cert_ok(CMV->accept(pr->p.qp, req->conn_id, &cp));
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr->a.ctx);
  g_autofree rnicpi_cm_event_t *ep = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr->p.ctx);
  pr->a.ird = ea->ird;
  pr->a.ord = ea->ord;
  pr->p.ird = ep->ird;
  pr->p.ord = ep->ord;
  cert_ok(CMV->unlisten(lst));
}

/* Whether the device offers @op (a skip with the capability's name when
 * not). */
static gboolean
op_offered(cert_t *f, prot_op_t op)
{
  return op != PROT_ATOMIC || cert_require(f, RNICPI_CAP_ATOMICS);
}

static uint32_t
target_access(cert_t *f)
{
  uint32_t acc = TARGET | RNICPI_ACCESS_MW_BIND;
  if (f->caps.features & RNICPI_CAP_ATOMICS)
    acc |= RNICPI_ACCESS_ATOMIC;
  return acc;
}

/* Post @op of @pr's requester from/into @loc (its first PROT_LEN bytes, 8
 * for an atomic) at @raddr of key @rkey. */
static void
post_op(cert_pair_t *pr, prot_op_t op, const cert_buf_t *loc, uint64_t raddr, uint64_t rkey,
        uint64_t id)
{
  static const rnicpi_wr_opcode_t opc[] = { RNICPI_WR_RDMA_WRITE, RNICPI_WR_RDMA_READ,
                                            RNICPI_WR_ATOMIC_FETCH_ADD };
  rnicpi_sge_t sge = cert_sge(loc, 0, op == PROT_ATOMIC ? 8 : PROT_LEN);
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = opc[op], .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1, .remote_addr = raddr, .rkey = rkey,
                          .compare_add = 1 };
  cert_ok(DAT->post_send(pr->a.qp, &wr));
}

/* @op with the right key @rkey at @raddr of @tgt (offset @off): it
 * succeeds, and its bytes moved. */
static void
good_op(cert_t *f, cert_pair_t *pr, prot_op_t op, cert_buf_t *loc, cert_buf_t *tgt, size_t off,
        uint64_t raddr, uint64_t rkey)
{
  static const rnicpi_wc_opcode_t wco[] = { RNICPI_WC_RDMA_WRITE, RNICPI_WC_RDMA_READ,
                                            RNICPI_WC_FETCH_ADD };
  uint64_t before = 0;
  if (op == PROT_ATOMIC)
    memcpy(&before, tgt->data + off, 8);
  post_op(pr, op, loc, raddr, rkey, GOOD_ID);
  rnicpi_wc_t wc = cert_wc(pr->a.scq);
  g_assert_cmphex(wc.wr_id, ==, GOOD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, wco[op]);
  if (op == PROT_WRITE) {
    cert_placed(f, pr, raddr, rkey);
    g_assert_cmpmem(tgt->data + off, PROT_LEN, loc->data, PROT_LEN);
  } else if (op == PROT_READ) {
    g_assert_cmpmem(loc->data, PROT_LEN, tgt->data + off, PROT_LEN);
  } else {
    uint64_t old, now;
    memcpy(&old, loc->data, 8);
    memcpy(&now, tgt->data + off, 8);
    g_assert_cmpuint(old, ==, before);
    g_assert_cmpuint(now, ==, before + 1);
  }
}

static const rnicpi_async_cause_t op_cause[] = { RNICPI_AE_WRITE_ACCESS, RNICPI_AE_READ_ACCESS,
                                                 RNICPI_AE_ACCESS };

/* @op with @rkey at @raddr is refused: requester RNICPI_WC_REM_ACCESS_ERR
 * (a Write where completions mean transmission may have completed, or
 * flushed, before the refusal came back), both sides BROKEN and ERROR,
 * the responder's access event of the operation's cause, the requester's
 * REMOTE_ACCESS; @tgt and @loc hold what they held before.  @quiet: also
 * check that nothing more completes or is reported (CERT_QUIET_MS each). */
static void
bad_op(cert_t *f, cert_pair_t *pr, prot_op_t op, cert_buf_t *loc, cert_buf_t *tgt, uint64_t raddr,
       uint64_t rkey, gboolean quiet)
{
  if (op == PROT_WRITE)
    cert_buf_fill(loc, 0x5b);
  else
    memset(loc->data, 0xee, loc->len);
  g_autofree uint8_t *tgt_was = g_memdup2(tgt->data, tgt->len);
  g_autofree uint8_t *loc_was = g_memdup2(loc->data, loc->len);
  post_op(pr, op, loc, raddr, rkey, BAD_ID);
  rnicpi_wc_t wc = cert_wc(pr->a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmphex(wc.qp_ctx, ==, pr->a.ctx);
  gboolean at_sent = !(f->caps.features & RNICPI_CAP_PLACED_COMPLETION);
  if (op == PROT_WRITE && at_sent &&
      (wc.status == RNICPI_WC_SUCCESS || wc.status == RNICPI_WC_WR_FLUSH_ERR))
    g_test_message("%s with key 0x%" G_GINT64_MODIFIER "x: completion status %d (completed at "
                   "transmission)", op_what[op], rkey, wc.status);
  else if (wc.status != RNICPI_WC_REM_ACCESS_ERR)
    g_test_message("%s with key 0x%" G_GINT64_MODIFIER "x at 0x%" G_GINT64_MODIFIER "x: "
                   "completion status %d, expected REM_ACCESS_ERR", op_what[op], rkey, raddr,
                   wc.status);
  if (!(op == PROT_WRITE && at_sent))
    g_assert_cmpint(wc.status, ==, RNICPI_WC_REM_ACCESS_ERR);
  else
    g_assert_cmpint(wc.status, !=, RNICPI_WC_LOC_PROT_ERR);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr->a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr->p.ctx));
  cert_wait_qp_async(f, op_cause[op], pr->p.ctx);
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_ACCESS, pr->a.ctx);
  cert_wait_state(pr->a.qp, RNICPI_QPS_ERROR);
  cert_wait_state(pr->p.qp, RNICPI_QPS_ERROR);
  g_assert_cmpmem(tgt->data, tgt->len, tgt_was, tgt->len);
  g_assert_cmpmem(loc->data, loc->len, loc_was, loc->len);
  cert_buf_check_guards(tgt);
  cert_buf_check_guards(loc);
  if (quiet) {
    cert_assert_cq_quiet(pr->a.scq);
    cert_assert_cq_quiet(pr->p.scq);
    cert_assert_cq_quiet(pr->p.rcq);
    cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr->a.ctx);
    cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr->p.ctx);
  }
}

/* ---- Keys ------------------------------------------------------------- */

/* How a key is changed: XOR with @mask (one bit, or in the key byte). */
typedef struct key_change {
  uint64_t mask;
  char what[48];
} key_change_t;

/* Bits a key of the device may have: 32, or 64 where its keys use more
 * (a provider may pass a 32-bit key, whose higher bits it never sees). */
static int
key_width(uint64_t key)
{
  return (key >> 32) != 0 ? 64 : 32;
}

/* The key byte alone: several values, each different from @key's. */
static int
key_byte_changes(uint64_t key, key_change_t *out)
{
  uint8_t kb = (uint8_t) key;
  const uint8_t vals[] = { (uint8_t) (kb + 1), (uint8_t) (kb - 1), (uint8_t) (kb ^ 0x80),
                           (uint8_t) ~kb, (uint8_t) (kb ^ 0x5a) };
  int n = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(vals); i++) {
    out[n].mask = (uint64_t) (uint8_t) (vals[i] ^ kb);
    g_snprintf(out[n].what, sizeof(out[n].what), "key byte 0x%02x -> 0x%02x", kb, vals[i]);
    n++;
  }
  return n;
}

/* Every other bit of the key alone (the index field, and on wider keys
 * whatever else the provider put there). */
static int
key_bit_changes(uint64_t key, key_change_t *out)
{
  int n = 0;
  for (int b = 8; b < key_width(key); b++) {
    out[n].mask = UINT64_C(1) << b;
    g_snprintf(out[n].what, sizeof(out[n].what), "bit %d flipped", b);
    n++;
  }
  return n;
}

typedef enum { KEYS_BYTE, KEYS_BITS } keys_kind_t;

typedef struct {
  prot_op_t op;
  keys_kind_t kind;
} keys_case_t;

static const keys_case_t keys_cases[] = {
  { PROT_WRITE, KEYS_BYTE }, { PROT_READ, KEYS_BYTE }, { PROT_ATOMIC, KEYS_BYTE },
  { PROT_WRITE, KEYS_BITS }, { PROT_READ, KEYS_BITS }, { PROT_ATOMIC, KEYS_BITS },
};

/* One connection per changed key: a good access with the region's key,
 * then the same access with the changed one, refused. */
static void
test_protect_region_key(cert_t *f, gconstpointer data)
{
  const keys_case_t *c = data;
  g_test_summary("a remote key that differs from a live region's only in its consumer-owned key "
                 "byte (several values), or only in one other bit (each bit of the key alone), "
                 "names no memory: the access with it, after the same one with the right key "
                 "succeeded on the connection, completes RNICPI_WC_REM_ACCESS_ERR, both sides "
                 "break with the responder's access event, and neither the target nor the local "
                 "buffer changes");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS) || !op_offered(f, c->op))
    return;
  key_change_t ch[64];
  int n = 0;
  for (int i = 0; n == 0 || i < n; i++) {
    cert_pair_t pr;
    prot_pair_open(f, &pr, 0x1000000 + (uint64_t) i * 0x10000, cert_min(4, f->caps.max_ird),
                   cert_min(4, f->caps.max_ord));
    cert_buf_t loc, tgt;
    cert_buf_new(pr.a.pd, &loc, PROT_LEN, cert_sink_access(f));
    cert_buf_new(pr.p.pd, &tgt, TGT_LEN, target_access(f));
    cert_buf_fill(&loc, 1);
    cert_buf_fill(&tgt, 2);
    uint64_t key = tgt.mr->rkey;
    if (n == 0)
      n = c->kind == KEYS_BYTE ? key_byte_changes(key, ch) : key_bit_changes(key, ch);
    uint64_t bad = key ^ ch[i].mask;
    g_test_message("%s: key 0x%" G_GINT64_MODIFIER "x, %s: 0x%" G_GINT64_MODIFIER "x",
                   op_what[c->op], key, ch[i].what, bad);
    good_op(f, &pr, c->op, &loc, &tgt, 8, cert_raddr(&tgt, 8), key);
    bad_op(f, &pr, c->op, &loc, &tgt, cert_raddr(&tgt, 8), bad, i == n - 1);
    cert_buf_free(&loc);
    cert_buf_free(&tgt);
    cert_pair_free(&pr);
  }
}

/* A remote key is compared in full.  A device whose keys are 32 bits
 * wide (iWARP's STag, IB's R_Key) must not cut a 64-bit rnicpi key to
 * them: a key with a bit above the 32 set names no memory.  The request
 * with it is refused at post (any status but RNICPI_OK, nothing
 * completes), or completes RNICPI_WC_REM_ACCESS_ERR (the device may
 * refuse it before it leaves, so the responder need not see it), or,
 * for a Write where completions mean transmission, with success or
 * flushed, in which case the responder refuses it and both sides break.
 * Never do its bytes land. */
static void
test_protect_key_high_bits(cert_t *f, gconstpointer data)
{
  prot_op_t op = (prot_op_t) GPOINTER_TO_INT(data);
  g_test_summary("a remote key that equals a live 32-bit key in its low 32 bits but has a bit "
                 "above them set (bits 32, 40, 48, 56 and 63 in turn) names no memory: the "
                 "access with it, after the same access with the right key succeeded on the "
                 "connection, is refused at post or completes RNICPI_WC_REM_ACCESS_ERR (a Write "
                 "completed at transmission: the responder refuses it and both sides break), "
                 "and neither the target nor the local buffer changes");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS) || !op_offered(f, op))
    return;
  static const int bits[] = { 32, 40, 48, 56, 63 };
  for (size_t i = 0; i < G_N_ELEMENTS(bits); i++) {
    cert_pair_t pr;
    prot_pair_open(f, &pr, 0x5000000 + (uint64_t) i * 0x10000, cert_min(4, f->caps.max_ird),
                   cert_min(4, f->caps.max_ord));
    cert_buf_t loc, tgt;
    cert_buf_new(pr.a.pd, &loc, PROT_LEN, cert_sink_access(f));
    cert_buf_new(pr.p.pd, &tgt, TGT_LEN, target_access(f));
    cert_buf_fill(&loc, 1);
    cert_buf_fill(&tgt, 2);
    uint64_t key = tgt.mr->rkey;
    if (key_width(key) > 32) {
      g_test_skip("the device's keys use more than 32 bits: /rnicpi/protect/key-bits flips each");
      cert_buf_free(&loc);
      cert_buf_free(&tgt);
      cert_pair_free(&pr);
      return;
    }
    uint64_t bad = key | UINT64_C(1) << bits[i];
    g_test_message("%s: key 0x%" G_GINT64_MODIFIER "x, bit %d set: 0x%" G_GINT64_MODIFIER "x",
                   op_what[op], key, bits[i], bad);
    good_op(f, &pr, op, &loc, &tgt, 8, cert_raddr(&tgt, 8), key);

    if (op == PROT_WRITE)
      cert_buf_fill(&loc, 0x5b);
    else
      memset(loc.data, 0xee, loc.len);
    g_autofree uint8_t *tgt_was = g_memdup2(tgt.data, tgt.len);
    g_autofree uint8_t *loc_was = g_memdup2(loc.data, loc.len);
    static const rnicpi_wr_opcode_t opc[] = { RNICPI_WR_RDMA_WRITE, RNICPI_WR_RDMA_READ,
                                              RNICPI_WR_ATOMIC_FETCH_ADD };
    rnicpi_sge_t sge = cert_sge(&loc, 0, op == PROT_ATOMIC ? 8 : PROT_LEN);
    rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = opc[op], .flags = RNICPI_WR_SIGNALED,
                            .sg_list = &sge, .num_sge = 1, .remote_addr = cert_raddr(&tgt, 8),
                            .rkey = bad, .compare_add = 1 };
    rnicpi_status_t st = DAT->post_send(pr.a.qp, &wr);
    if (st != RNICPI_OK) {
      g_test_message("refused at post: status %d", st);
      cert_assert_cq_quiet(pr.a.scq);
    } else {
      rnicpi_wc_t wc = cert_wc(pr.a.scq);
      g_assert_cmphex(wc.wr_id, ==, BAD_ID);
      gboolean at_sent = op == PROT_WRITE && !(f->caps.features & RNICPI_CAP_PLACED_COMPLETION);
      if (wc.status != RNICPI_WC_REM_ACCESS_ERR)
        g_test_message("completion status %d, expected REM_ACCESS_ERR%s", wc.status,
                       at_sent ? " (or, completed at transmission, success or flushed)" : "");
      if (at_sent && (wc.status == RNICPI_WC_SUCCESS || wc.status == RNICPI_WC_WR_FLUSH_ERR)) {
        /* Its bytes went out: the responder must refuse them. */
        g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.p.ctx));
        cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
      } else {
        g_assert_cmpint(wc.status, ==, RNICPI_WC_REM_ACCESS_ERR);
      }
    }
    g_assert_cmpmem(tgt.data, tgt.len, tgt_was, tgt.len);
    g_assert_cmpmem(loc.data, loc.len, loc_was, loc.len);
    cert_buf_check_guards(&tgt);
    cert_buf_check_guards(&loc);
    cert_buf_free(&loc);
    cert_buf_free(&tgt);
    cert_pair_free(&pr);
  }
}

/* A window of the responder's domain over part of @tgt, bound through
 * @pr's responder (narrow where offered, so it answers through that queue
 * pair, else wide); its key. */
static uint64_t
bind_window(cert_t *f, cert_pair_t *pr, rnicpi_mw_t *mw, cert_buf_t *tgt)
{
  uint32_t acc = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE;
  if (f->caps.features & RNICPI_CAP_ATOMICS)
    acc |= RNICPI_ACCESS_ATOMIC;
  rnicpi_send_wr_t wr = { .wr_id = 0xb1d, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED,
                          .bind = { .mw = mw, .mr = tgt->mr, .addr = cert_raddr(tgt, 0),
                                    .length = TGT_LEN / 2, .access = acc } };
  cert_ok(DAT->post_send(pr->p.qp, &wr));
  rnicpi_wc_t wc = cert_wc(pr->p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xb1d);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_BIND_MW);
  g_assert_cmphex(wc.rkey, ==, mw->rkey);
  return mw->rkey;
}

static gboolean
window_type(cert_t *f, rnicpi_mw_type_t *type)
{
  if (cert_prov->mw == NULL || !(f->caps.features & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE))) {
    g_test_skip("needs capability: mw-narrow");
    return FALSE;
  }
  *type = (f->caps.features & RNICPI_CAP_MW_NARROW) ? RNICPI_MW_NARROW : RNICPI_MW_WIDE;
  g_test_message("needs capability: %s",
                 *type == RNICPI_MW_NARROW ? "mw-narrow" : "mw-wide");
  return TRUE;
}

typedef enum { WIN_KEY_BYTE, WIN_KEY_BITS, WIN_INVALIDATED, WIN_REBOUND } win_case_t;

static void
test_protect_window_key(cert_t *f, gconstpointer data)
{
  win_case_t c = (win_case_t) GPOINTER_TO_INT(data);
  g_test_summary("a window's key is checked in full: an RDMA Write with a bound window's key "
                 "changed only in its key byte (several values) or only in one other bit is "
                 "refused, and so is its old key once the window is invalidated (Local "
                 "Invalidate) or bound again (the new key works): RNICPI_WC_REM_ACCESS_ERR, both "
                 "sides broken, the window's memory unchanged");
  rnicpi_mw_type_t type;
  if (!cert_require(f, RNICPI_CAP_CM_VERBS) || !window_type(f, &type))
    return;
  if (c == WIN_INVALIDATED && !cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  key_change_t ch[64];
  int n = c == WIN_INVALIDATED || c == WIN_REBOUND ? 1 : 0;
  for (int i = 0; n == 0 || i < n; i++) {
    cert_pair_t pr;
    prot_pair_open(f, &pr, 0x2000000 + (uint64_t) i * 0x10000, cert_min(4, f->caps.max_ird),
                   cert_min(4, f->caps.max_ord));
    cert_buf_t loc, tgt;
    cert_buf_new(pr.a.pd, &loc, PROT_LEN, cert_sink_access(f));
    cert_buf_new(pr.p.pd, &tgt, TGT_LEN, target_access(f));
    cert_buf_fill(&loc, 3);
    cert_buf_fill(&tgt, 4);
    rnicpi_mw_t *mw = NULL;
    cert_ok(cert_prov->mw->mw_alloc(pr.p.pd, type, &mw));
    uint64_t key = bind_window(f, &pr, mw, &tgt);
    if (n == 0)
      n = c == WIN_KEY_BYTE ? key_byte_changes(key, ch) : key_bit_changes(key, ch);
    good_op(f, &pr, PROT_WRITE, &loc, &tgt, 8, cert_raddr(&tgt, 8), key);
    uint64_t bad = key;
    if (c == WIN_INVALIDATED) {
      rnicpi_send_wr_t inv = { .wr_id = 0x1a, .opcode = RNICPI_WR_LOCAL_INV,
                               .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = key };
      cert_ok(DAT->post_send(pr.p.qp, &inv));
      rnicpi_wc_t wc = cert_wc(pr.p.scq);
      g_assert_cmphex(wc.wr_id, ==, 0x1a);
      g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
      g_test_message("window key 0x%" G_GINT64_MODIFIER "x invalidated", key);
    } else if (c == WIN_REBOUND) {
      uint64_t key2 = bind_window(f, &pr, mw, &tgt);
      g_assert_cmphex(key2, !=, key);
      g_test_message("window key 0x%" G_GINT64_MODIFIER "x rebound as 0x%" G_GINT64_MODIFIER "x",
                     key, key2);
      cert_buf_fill(&loc, 5);
      good_op(f, &pr, PROT_WRITE, &loc, &tgt, 8, cert_raddr(&tgt, 8), key2);
    } else {
      bad = key ^ ch[i].mask;
      g_test_message("window key 0x%" G_GINT64_MODIFIER "x, %s: 0x%" G_GINT64_MODIFIER "x", key,
                     ch[i].what, bad);
    }
    if (bad == tgt.mr->rkey) {
      /* The changed key is the window's region's own, live in the same
       * domain with the same rights: it names memory, and the access
       * rightly succeeds.  A device that draws its key bytes at random
       * gives a neighbouring slot the same byte now and then. */
      g_test_message("that is the key of the window's region, which grants the access: "
                     "not a key that names no memory, so not tried");
    } else {
      bad_op(f, &pr, PROT_WRITE, &loc, &tgt, cert_raddr(&tgt, 8), bad, i == n - 1);
    }
    cert_ok(cert_prov->mw->mw_dealloc(mw));
    cert_buf_free(&loc);
    cert_buf_free(&tgt);
    cert_pair_free(&pr);
  }
}

/* ---- Protection domains ----------------------------------------------- */

static void
test_protect_pz_remote(cert_t *f, gconstpointer data)
{
  prot_op_t op = (prot_op_t) GPOINTER_TO_INT(data);
  g_test_summary("an in-bounds access with the live key of a region registered in another "
                 "protection domain of the responder's device than its queue pair's (RDMA "
                 "Write, RDMA Read, atomic) is refused: RNICPI_WC_REM_ACCESS_ERR, both sides "
                 "broken with the responder's access event, neither region changed (the same "
                 "access to a region of the queue pair's domain succeeded first)");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS) || !op_offered(f, op))
    return;
  cert_pair_t pr;
  prot_pair_open(f, &pr, 0x3000000, cert_min(4, f->caps.max_ird), cert_min(4, f->caps.max_ord));
  rnicpi_pd_t *other = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &other));
  cert_buf_t loc, tgt, foreign;
  cert_buf_new(pr.a.pd, &loc, PROT_LEN, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, TGT_LEN, target_access(f));
  cert_buf_new(other, &foreign, TGT_LEN, target_access(f));
  cert_buf_fill(&loc, 6);
  cert_buf_fill(&tgt, 7);
  cert_buf_fill(&foreign, 8);
  good_op(f, &pr, op, &loc, &tgt, 8, cert_raddr(&tgt, 8), tgt.mr->rkey);
  bad_op(f, &pr, op, &loc, &foreign, cert_raddr(&foreign, 8), foreign.mr->rkey, TRUE);
  cert_buf_free(&loc);
  cert_buf_free(&tgt);
  cert_buf_free(&foreign);
  cert_ok(DEV->pd_free(other));
  cert_pair_free(&pr);
}

static void
test_protect_pz_window(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a window of another protection domain, bound through a queue pair of that "
                 "domain (a second connection), is refused through the responder queue pair of "
                 "the first: an in-bounds RDMA Write with its live key completes "
                 "RNICPI_WC_REM_ACCESS_ERR and leaves its memory unchanged, while it works "
                 "through its own connection");
  rnicpi_mw_type_t type;
  if (!cert_require(f, RNICPI_CAP_CM_VERBS) || !window_type(f, &type))
    return;
  if (f->caps.features & RNICPI_CAP_MW_WIDE)
    type = RNICPI_MW_WIDE; /* a narrow one is refused elsewhere already: another QP */
  cert_pair_t pr, pr2;
  prot_pair_open(f, &pr, 0x3100000, cert_min(4, f->caps.max_ird), cert_min(4, f->caps.max_ord));
  prot_pair_open(f, &pr2, 0x3200000, cert_min(4, f->caps.max_ird), cert_min(4, f->caps.max_ord));
  cert_buf_t loc, loc2, tgt, foreign;
  cert_buf_new(pr.a.pd, &loc, PROT_LEN, cert_sink_access(f));
  cert_buf_new(pr2.a.pd, &loc2, PROT_LEN, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, TGT_LEN, target_access(f));
  cert_buf_new(pr2.p.pd, &foreign, TGT_LEN, target_access(f));
  cert_buf_fill(&loc, 9);
  cert_buf_fill(&loc2, 10);
  cert_buf_fill(&foreign, 11);
  rnicpi_mw_t *mw = NULL;
  cert_ok(cert_prov->mw->mw_alloc(pr2.p.pd, type, &mw));
  uint64_t key = bind_window(f, &pr2, mw, &foreign);
  good_op(f, &pr2, PROT_WRITE, &loc2, &foreign, 8, cert_raddr(&foreign, 8), key);
  good_op(f, &pr, PROT_WRITE, &loc, &tgt, 8, cert_raddr(&tgt, 8), tgt.mr->rkey);
  bad_op(f, &pr, PROT_WRITE, &loc, &foreign, cert_raddr(&foreign, 8), key, TRUE);
  g_assert_cmpint(QUE->qp_state(pr2.a.qp), ==, RNICPI_QPS_RTS);
  cert_ok(cert_prov->mw->mw_dealloc(mw));
  cert_buf_free(&loc);
  cert_buf_free(&loc2);
  cert_buf_free(&tgt);
  cert_buf_free(&foreign);
  cert_pair_free(&pr);
  cert_pair_free(&pr2);
}

typedef enum { LOCAL_SEND, LOCAL_WRITE_SRC, LOCAL_READ_SINK, LOCAL_ATOMIC_RESULT } local_case_t;

static void
test_protect_pz_local(cert_t *f, gconstpointer data)
{
  local_case_t c = (local_case_t) GPOINTER_TO_INT(data);
  g_test_summary("a work request whose local key belongs to a region of another protection "
                 "domain than its queue pair's (a Send's gather entry, an RDMA Write's source, "
                 "an RDMA Read's sink, an atomic's result) completes RNICPI_WC_LOC_PROT_ERR, the "
                 "queue pair enters ERROR, and neither the peer's memory nor the local buffer "
                 "changes");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  if (c == LOCAL_ATOMIC_RESULT && !cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  cert_pair_t pr;
  prot_pair_open(f, &pr, 0x3300000, cert_min(4, f->caps.max_ird), cert_min(4, f->caps.max_ord));
  rnicpi_pd_t *other = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &other));
  cert_buf_t foreign, tgt, rbuf;
  cert_buf_new(other, &foreign, PROT_LEN, cert_sink_access(f) | TARGET);
  cert_buf_new(pr.p.pd, &tgt, TGT_LEN, target_access(f));
  cert_buf_new(pr.p.pd, &rbuf, PROT_LEN, RW);
  cert_buf_fill(&foreign, 12);
  cert_buf_fill(&tgt, 13);
  cert_post_recv(pr.p.qp, &rbuf, 0, PROT_LEN, 0x7ec);
  g_autofree uint8_t *tgt_was = g_memdup2(tgt.data, tgt.len);
  g_autofree uint8_t *loc_was = g_memdup2(foreign.data, foreign.len);
  static const rnicpi_wr_opcode_t opc[] = { RNICPI_WR_SEND, RNICPI_WR_RDMA_WRITE,
                                            RNICPI_WR_RDMA_READ, RNICPI_WR_ATOMIC_FETCH_ADD };
  cert_post_send(pr.a.qp, opc[c], &foreign, 0, c == LOCAL_ATOMIC_RESULT ? 8 : PROT_LEN, BAD_ID,
                 RNICPI_WR_SIGNALED, cert_raddr(&tgt, 8), tgt.mr->rkey);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmphex(wc.qp_ctx, ==, pr.a.ctx);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_LOC_PROT_ERR);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  /* A local error need not reach the responder at once; take it down. */
  if (QUE->qp_state(pr.p.qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(pr.p.qp));
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x7ec);
  g_assert_cmpint(r.status, ==, RNICPI_WC_WR_FLUSH_ERR);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  g_assert_cmpmem(tgt.data, tgt.len, tgt_was, tgt.len);
  g_assert_cmpmem(foreign.data, foreign.len, loc_was, foreign.len);
  for (size_t i = 0; i < rbuf.len; i++)
    g_assert_cmphex(rbuf.data[i], ==, 0);
  cert_buf_check_guards(&tgt);
  cert_buf_check_guards(&foreign);
  cert_buf_free(&foreign);
  cert_buf_free(&tgt);
  cert_buf_free(&rbuf);
  cert_ok(DEV->pd_free(other));
  cert_pair_free(&pr);
}

static void
test_protect_pz_local_recv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a receive whose buffer is a region of another protection domain than its queue "
                 "pair's: the Send that lands in it completes the receive RNICPI_WC_LOC_PROT_ERR "
                 "(byte_len 0) and leaves the buffer unchanged; the receiver reports "
                 "RNICPI_ASYNC_QP_FATAL of cause LOCAL_RECV, the sender's request fails (where "
                 "completions mean transmission it may have completed) with "
                 "RNICPI_ASYNC_QP_REMOTE_ERR of cause REMOTE_RECV, both sides break");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  cert_pair_t pr;
  prot_pair_open(f, &pr, 0x3400000, cert_min(4, f->caps.max_ird), cert_min(4, f->caps.max_ord));
  rnicpi_pd_t *other = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &other));
  cert_buf_t src, foreign;
  cert_buf_new(pr.a.pd, &src, PROT_LEN, RW);
  cert_buf_new(other, &foreign, PROT_LEN, RW);
  cert_buf_fill(&src, 15);
  cert_buf_fill(&foreign, 16);
  g_autofree uint8_t *was = g_memdup2(foreign.data, foreign.len);
  cert_post_recv(pr.p.qp, &foreign, 0, PROT_LEN, 0x7ec);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, PROT_LEN, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x7ec);
  g_assert_cmphex(r.qp_ctx, ==, pr.p.ctx);
  g_assert_cmpint(r.status, ==, RNICPI_WC_LOC_PROT_ERR);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, BAD_ID);
  g_test_message("sender's completion status %d", s.status);
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION)
    g_assert_cmpint(s.status, !=, RNICPI_WC_SUCCESS);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.p.ctx));
  cert_wait_qp_async(f, RNICPI_AE_LOCAL_RECV, pr.p.ctx);
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_RECV, pr.a.ctx);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  g_assert_cmpmem(foreign.data, foreign.len, was, foreign.len);
  cert_buf_check_guards(&foreign);
  cert_buf_free(&src);
  cert_buf_free(&foreign);
  cert_ok(DEV->pd_free(other));
  cert_pair_free(&pr);
}

/* ---- IRD/ORD ---------------------------------------------------------- */

/* Bytes per Read: large enough that the responder is still answering one
 * when the next arrives, where a requester sends more than the IRD. */
#define RO_LEN (256 * 1024)

typedef enum { RO_READS, RO_ATOMICS, RO_MIXED } ro_kind_t;

typedef struct {
  ro_kind_t kind;
  uint32_t ord;  /* asked on both sides (IRD and ORD) */
  int n;         /* requests posted back to back */
} ro_case_t;

static const ro_case_t ro_cases[] = {
  { RO_READS, 1, 8 }, { RO_ATOMICS, 1, 8 }, { RO_MIXED, 1, 8 }, { RO_READS, 4, 16 },
  { RO_MIXED, 4, 16 },
};

static void
test_protect_ird_ord(cert_t *f, gconstpointer data)
{
  const ro_case_t *c = data;
  g_test_summary("with IRD and ORD negotiated to N (1, or 4) on both sides, 2N..8N RDMA Reads, "
                 "atomics, or both mixed, posted back to back, all complete successfully in "
                 "posting order with the right bytes (each Read its own slice, each atomic the "
                 "value its predecessors left): the requester holds back what the peer's IRD "
                 "cannot take; the connection stays up, a Send after them arrives, and nothing "
                 "else completes or is reported");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  if (c->kind != RO_READS && !cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  uint32_t want = cert_min(c->ord, cert_min(f->caps.max_ird, f->caps.max_ord));
  if (want == 0) {
    g_test_skip("the device offers no outstanding RDMA Read (max_ird or max_ord 0)");
    return;
  }
  cert_pair_t pr;
  prot_pair_open(f, &pr, 0x4000000, want, want);
  g_test_message("asked IRD = ORD = %u; negotiated: requester IRD %u ORD %u, responder IRD %u "
                 "ORD %u", want, pr.a.ird, pr.a.ord, pr.p.ird, pr.p.ord);
  /* A provider may lower what was asked, within its limits; what it may
   * not do is give the requester more Read credit than the responder takes. */
  if (f->caps.features & RNICPI_CAP_IRD_ORD_NEGOTIATED) {
    g_assert_cmpuint(pr.a.ord, >=, 1);
    g_assert_cmpuint(pr.a.ord, <=, want);
    g_assert_cmpuint(pr.p.ird, >=, pr.a.ord);
  }
  int n = c->n;
  cert_buf_t src, sink, res, rbuf;
  cert_buf_new(pr.p.pd, &src, (size_t) n * RO_LEN + 64, target_access(f));
  cert_buf_new(pr.a.pd, &sink, (size_t) n * RO_LEN, cert_sink_access(f));
  cert_buf_new(pr.a.pd, &res, (size_t) n * 8, RW);
  cert_buf_new(pr.p.pd, &rbuf, PROT_LEN, RW);
  cert_buf_fill(&src, 14);
  uint64_t word = WORD0;
  size_t woff = (size_t) n * RO_LEN; /* the atomics' word, past the Reads' slices */
  memcpy(src.data + woff, &word, 8);
  g_autofree uint8_t *src_was = g_memdup2(src.data, woff);
  memset(res.data, 0xee, res.len);

  gboolean is_atomic[64];
  for (int i = 0; i < n; i++) {
    is_atomic[i] = c->kind == RO_ATOMICS || (c->kind == RO_MIXED && i % 2 == 1);
    if (is_atomic[i]) {
      rnicpi_sge_t sge = cert_sge(&res, (size_t) i * 8, 8);
      rnicpi_send_wr_t wr = { .wr_id = 0x500 + (uint64_t) i, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                              .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                              .remote_addr = cert_raddr(&src, woff), .rkey = src.mr->rkey,
                              .compare_add = (uint64_t) i + 1 };
      cert_ok(DAT->post_send(pr.a.qp, &wr));
    } else {
      cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, (size_t) i * RO_LEN, RO_LEN,
                     0x500 + (uint64_t) i, RNICPI_WR_SIGNALED,
                     cert_raddr(&src, (size_t) (n - 1 - i) * RO_LEN), src.mr->rkey);
    }
  }
  rnicpi_wc_t wc[64];
  int got = cert_poll(pr.a.scq, wc, n, CERT_TIMEOUT_MS);
  for (int i = 0; i < got; i++)
    if (wc[i].status != RNICPI_WC_SUCCESS || wc[i].wr_id != 0x500 + (uint64_t) i)
      g_test_message("completion %d: wr_id 0x%" G_GINT64_MODIFIER "x status %d", i, wc[i].wr_id,
                     wc[i].status);
  g_assert_cmpint(got, ==, n);
  uint64_t expect = WORD0;
  for (int i = 0; i < n; i++) {
    g_assert_cmphex(wc[i].wr_id, ==, 0x500 + (uint64_t) i);
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmphex(wc[i].qp_ctx, ==, pr.a.ctx);
    if (is_atomic[i]) {
      g_assert_cmpint(wc[i].opcode, ==, RNICPI_WC_FETCH_ADD);
      uint64_t old;
      memcpy(&old, res.data + (size_t) i * 8, 8);
      g_assert_cmpuint(old, ==, expect);
      expect += (uint64_t) i + 1;
    } else {
      g_assert_cmpint(wc[i].opcode, ==, RNICPI_WC_RDMA_READ);
      g_assert_cmpuint(wc[i].byte_len, ==, RO_LEN);
      g_assert_cmpmem(sink.data + (size_t) i * RO_LEN, RO_LEN,
                      src.data + (size_t) (n - 1 - i) * RO_LEN, RO_LEN);
    }
  }
  memcpy(&word, src.data + woff, 8);
  g_assert_cmpuint(word, ==, expect);
  g_assert_cmpmem(src.data, woff, src_was, woff);
  cert_buf_check_guards(&sink);
  cert_buf_check_guards(&src);

  /* The connection is still up: a Send behind them arrives. */
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_post_recv(pr.p.qp, &rbuf, 0, PROT_LEN, 0x5e0);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &sink, 0, PROT_LEN, 0x5e1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x5e0);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, PROT_LEN);
  g_assert_cmpmem(rbuf.data, PROT_LEN, sink.data, PROT_LEN);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0x5e1);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr.a.ctx);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr.p.ctx);
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_QP_REMOTE_ERR, pr.a.ctx, 0));
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_QP_FATAL, pr.p.ctx, 0));

  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&res);
  cert_buf_free(&rbuf);
  cert_pair_free(&pr);
}

void
cert_register_protect(void)
{
  static const char *const op_id[] = { "write", "read", "atomic" };
  for (size_t i = 0; i < G_N_ELEMENTS(keys_cases); i++) {
    const keys_case_t *c = &keys_cases[i];
    g_autofree char *path = g_strdup_printf("/rnicpi/protect/%s/%s",
                                            c->kind == KEYS_BYTE ? "key-byte" : "key-bits",
                                            op_id[c->op]);
    g_test_add(path, cert_t, c, cert_setup, test_protect_region_key, cert_teardown);
  }
  for (int op = PROT_WRITE; op <= PROT_ATOMIC; op++) {
    g_autofree char *path = g_strdup_printf("/rnicpi/protect/key-high-bits/%s", op_id[op]);
    g_test_add(path, cert_t, GINT_TO_POINTER(op), cert_setup, test_protect_key_high_bits,
               cert_teardown);
  }
  g_test_add("/rnicpi/protect/window/key-byte", cert_t, GINT_TO_POINTER(WIN_KEY_BYTE), cert_setup,
             test_protect_window_key, cert_teardown);
  g_test_add("/rnicpi/protect/window/key-bits", cert_t, GINT_TO_POINTER(WIN_KEY_BITS), cert_setup,
             test_protect_window_key, cert_teardown);
  g_test_add("/rnicpi/protect/window/invalidated", cert_t, GINT_TO_POINTER(WIN_INVALIDATED),
             cert_setup, test_protect_window_key, cert_teardown);
  g_test_add("/rnicpi/protect/window/rebound", cert_t, GINT_TO_POINTER(WIN_REBOUND), cert_setup,
             test_protect_window_key, cert_teardown);
  for (int op = PROT_WRITE; op <= PROT_ATOMIC; op++) {
    g_autofree char *path = g_strdup_printf("/rnicpi/protect/pz/%s", op_id[op]);
    g_test_add(path, cert_t, GINT_TO_POINTER(op), cert_setup, test_protect_pz_remote,
               cert_teardown);
  }
  g_test_add("/rnicpi/protect/pz/window", cert_t, NULL, cert_setup, test_protect_pz_window,
             cert_teardown);
  static const char *const local_id[] = { "send", "write-source", "read-sink", "atomic-result" };
  for (int c = LOCAL_SEND; c <= LOCAL_ATOMIC_RESULT; c++) {
    g_autofree char *path = g_strdup_printf("/rnicpi/protect/pz/local/%s", local_id[c]);
    g_test_add(path, cert_t, GINT_TO_POINTER(c), cert_setup, test_protect_pz_local, cert_teardown);
  }
  g_test_add("/rnicpi/protect/pz/local/recv", cert_t, NULL, cert_setup, test_protect_pz_local_recv,
             cert_teardown);
  static const char *const ro_id[] = { "reads", "atomics", "mixed" };
  for (size_t i = 0; i < G_N_ELEMENTS(ro_cases); i++) {
    const ro_case_t *c = &ro_cases[i];
    g_autofree char *path = g_strdup_printf("/rnicpi/protect/ird-ord/%u/%s-%d", c->ord,
                                            ro_id[c->kind], c->n);
    g_test_add(path, cert_t, c, cert_setup, test_protect_ird_ord, cert_teardown);
  }
}
