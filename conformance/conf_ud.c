/*
 * Conformance: unreliable datagrams (IT-API 2.4 it_ep_ud_create, 2.10
 * it_post_sendto / it_post_recvfrom, 2.11 address handles, 2.12 UD service
 * resolution).  Every test needs IT_UD_SERVICE in
 * it_ia_info_t.supported_service_types and is skipped without it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>

#include "conf.h"

#define GRH 40
#define QKEY_P 0x11110001u
#define QKEY_A 0x22220002u

/* One side of a datagram exchange: an IA with DTO, CM_MSG and CM_REQ
 * EVDs and one UD EP with Q_Key @qkey. */
typedef struct {
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto, cm, req;
  it_ep_handle_t ep;
  it_remote_ep_info_t info; /* as it_ep_query reports it */
} ud_side_t;

static gboolean
ud_available(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_ia_info_t *info = conf_info(&s);
  gboolean ud = (info->supported_service_types & IT_UD_SERVICE) != 0;
  it_ia_info_free(info);
  conf_side_close(&s);
  return conf_require(ud, "ud");
}

static void
ud_attr(it_ep_attributes_t *a, uint32_t qkey)
{
  memset(a, 0, sizeof(*a));
  a->max_dto_payload_size = 1024;
  a->max_request_dtos = 16;
  a->max_recv_dtos = 16;
  a->max_send_segments = 2;
  a->max_recv_segments = 2;
  a->srv.ud.ep_info.ud_ep_key = qkey;
}

/* A side whose DTO EVD holds @depth events and whose EP takes @recvs
 * receives (ud_attr's otherwise). */
static void
ud_side_open_sized(ud_side_t *s, uint32_t qkey, size_t depth, size_t recvs)
{
  memset(s, 0, sizeof(*s));
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &s->ia));
  conf_ok(it_pz_create(s->ia, &s->pz));
  conf_ok(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, depth, 1, IT_NULL_HANDLE, &s->dto, NULL));
  conf_ok(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, &s->cm, NULL));
  conf_ok(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, &s->req, NULL));
  it_ep_attributes_t a;
  ud_attr(&a, qkey);
  if (recvs > 0)
    a.max_recv_dtos = recvs;
  conf_ok(it_ep_ud_create(s->pz, s->dto, s->dto, &a, 0, &s->ep));
  it_ep_param_t p;
  conf_ok(it_ep_query(s->ep, IT_EP_PARAM_ALL, &p));
  s->info = p.attr.srv.ud.ep_info;
}

static void
ud_side_open(ud_side_t *s, uint32_t qkey)
{
  ud_side_open_sized(s, qkey, 64, 0);
}

/* The requester (@a, Q_Key QKEY_A) and the responder (@p, QKEY_P) of a
 * test; FALSE, with the test skipped, where the IA has no UD service. */
static gboolean
ud_pair_open(ud_side_t *a, ud_side_t *p)
{
  if (!ud_available())
    return FALSE;
  ud_side_open(a, QKEY_A);
  ud_side_open(p, QKEY_P);
  return TRUE;
}

static void
ud_side_close(ud_side_t *s)
{
  conf_ok(it_ia_free(s->ia));
  memset(s, 0, sizeof(*s));
}

/* conf_buf_new needs a conf_side_t: borrow its IA and PZ. */
static void
ud_buf(ud_side_t *s, conf_buf_t *b, size_t len)
{
  conf_side_t cs;
  memset(&cs, 0, sizeof(cs));
  cs.ia = s->ia;
  cs.pz = s->pz;
  conf_buf_new(&cs, b, len, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
}

static void
ud_path(ud_side_t *s, it_path_t *path)
{
  conf_side_t cs;
  memset(&cs, 0, sizeof(cs));
  cs.ia = s->ia;
  conf_path(&cs, path);
}

static size_t
ud_mtu(ud_side_t *s)
{
  it_ia_info_t *info = NULL;
  conf_ok(it_ia_query(s->ia, &info));
  size_t mtu = info->spigot_info[0].max_ud_send_len;
  it_ia_info_free(info);
  return mtu;
}

static it_ia_info_t *
ud_info(ud_side_t *s)
{
  it_ia_info_t *info = NULL;
  conf_ok(it_ia_query(s->ia, &info));
  return info;
}

static void
test_ep_create_query(void)
{
  g_test_summary("UD EP: it_ep_ud_create gives an EP that is UD_OPERATIONAL at once; it_ep_query "
                 "reports the UD service, the Q_Key given and the id peers send to; RC-only calls "
                 "refuse it with IT_ERR_INVALID_EP_TYPE");
  if (!ud_available())
    return;
  ud_side_t s;
  ud_side_open(&s, QKEY_P);
  it_ep_param_t p;
  conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
  g_assert_cmpint(p.service_type, ==, IT_UD_SERVICE);
  g_assert_cmpint(p.ep_state.ud, ==, IT_EP_STATE_UD_OPERATIONAL);
  g_assert_cmphex(p.attr.srv.ud.ep_info.ud_ep_key, ==, QKEY_P);
  g_assert_cmpuint(p.attr.srv.ud.ep_info.ud_ep_id, !=, 0);
  g_assert_true(p.connect_sevd == IT_NULL_HANDLE);
  g_assert_true(p.request_sevd == s.dto);

  /* A second EP gets its own id. */
  ud_side_t t;
  ud_side_open(&t, QKEY_P);
  g_assert_cmpuint(t.info.ud_ep_id, !=, s.info.ud_ep_id);
  ud_side_close(&t);

  /* Errors of creation. */
  it_ep_attributes_t a;
  ud_attr(&a, 0x80000001u);
  it_ep_handle_t ep;
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, &a, 0, &ep), IT_ERR_INVALID_EP_KEY);
  ud_attr(&a, QKEY_P);
  conf_assert_status(it_ep_ud_create(s.pz, s.cm, s.dto, &a, 0, &ep), IT_ERR_INVALID_REQ_EVD);
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.cm, &a, 0, &ep), IT_ERR_INVALID_RECV_EVD);
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, NULL, 0, &ep), IT_ERR_INVALID_EP_ATTR);
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, &a, 99, &ep), IT_ERR_INVALID_SPIGOT);
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, &a, 0, NULL), IT_ERR_FAULT);
  a.max_dto_payload_size = ud_mtu(&s) + 1;
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, &a, 0, &ep), IT_ERR_INVALID_EP_ATTR);

  /* RC-only calls on a UD EP. */
  it_path_t path;
  ud_path(&s, &path);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(4791);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_assert_status(it_ep_connect(s.ep, &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
                     IT_ERR_INVALID_EP_TYPE);
  conf_assert_status(it_ep_disconnect(s.ep, NULL, 0), IT_ERR_INVALID_EP_TYPE);
  conf_buf_t b;
  ud_buf(&s, &b, 64);
  it_lmr_triplet_t seg = conf_seg(&b, 0, 64);
  conf_assert_status(it_post_send(s.ep, &seg, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP_TYPE);
  conf_assert_status(it_post_recv(s.ep, &seg, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP_TYPE);
  conf_ok(it_ep_free(s.ep));
  conf_buf_free(&b);
  ud_side_close(&s);
}

/* Resolve @p's service on @qual from @a: request, the listener's event,
 * a valid reply with @p's EP; returns the reply event. */
static it_event_t
resolve(ud_side_t *a, ud_side_t *p, const it_conn_qual_t *qual, it_ud_svc_req_handle_t *svc)
{
  it_path_t path;
  ud_path(a, &path);
  const unsigned char req_pd[] = "which QP serves you?";
  const unsigned char rep_pd[] = "this one";
  conf_ok(it_ud_service_request_handle_create(qual, a->cm, &path, req_pd, sizeof(req_pd), svc));
  conf_ok(it_ud_service_request(*svc));
  it_event_t ev = conf_wait(p->req, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
  g_assert_true(ev.ud_svc_request.private_data_present);
  g_assert_cmpmem(ev.ud_svc_request.private_data, sizeof(req_pd), req_pd, sizeof(req_pd));
  g_assert_cmpuint(ev.ud_svc_request.conn_qual.conn_qual.port, ==, qual->conn_qual.port);
  g_assert_cmpuint(ev.ud_svc_request.spigot_id, ==, 0);
  conf_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID, p->info,
                              rep_pd, sizeof(rep_pd)));
  /* Answered once only. */
  conf_assert_status(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID,
                                         p->info, NULL, 0), IT_ERR_INVALID_UD_SVC_REQ_ID);
  it_event_t rep = conf_wait(a->cm, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
  g_assert_true(rep.ud_svc_reply.ud_svc == *svc);
  g_assert_cmpint(rep.ud_svc_reply.status, ==, IT_UD_SVC_EP_INFO_VALID);
  g_assert_cmpuint(rep.ud_svc_reply.ep_info.ud_ep_id, ==, p->info.ud_ep_id);
  g_assert_cmphex(rep.ud_svc_reply.ep_info.ud_ep_key, ==, p->info.ud_ep_key);
  g_assert_true(rep.ud_svc_reply.private_data_present);
  g_assert_cmpmem(rep.ud_svc_reply.private_data, sizeof(rep_pd), rep_pd, sizeof(rep_pd));
  g_assert_cmpmem(&rep.ud_svc_reply.dst_path.remote.ib.remote_port_gid, 16,
                  &path.remote.ib.remote_port_gid, 16);
  return rep;
}

static void
listen_on(ud_side_t *p, it_conn_qual_t *qual, it_listen_handle_t *lh)
{
  memset(qual, 0, sizeof(*qual));
  qual->type = IT_IANA_PORT;
  conf_ok(it_listen_create(p->ia, 0, p->req, IT_LISTEN_NO_FLAG, qual, lh));
}

/* Wait for a UD receive; check sender, flags and length, return the
 * offset of the payload in the buffer. */
static size_t
wait_recv(ud_side_t *p, it_dto_cookie_t cookie, const ud_side_t *from, size_t len)
{
  it_event_t ev = conf_wait(p->dto, IT_DTO_UD_RECV_CMPL_EVENT);
  const it_all_dto_cmpl_event_t *d = &ev.all_dto_cmpl;
  g_assert_cmpint(d->dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(d->cookie, ==, cookie);
  g_assert_true(d->ep == p->ep);
  g_assert_cmpuint(d->ud_ep_id, ==, from->info.ud_ep_id);
  size_t off = (d->flags & IT_UD_IB_GRH_PRESENT) ? GRH : 0;
  g_assert_cmpuint(d->transferred_length, ==, off + len);
  return off;
}

static void
test_resolve_sendto(void)
{
  g_test_summary("UD: resolve a peer's EP by UD service resolution, then it_post_sendto / "
                 "it_post_recvfrom both ways with the data checked after the GRH, the receive "
                 "completion naming the sender's ud_ep_id and a src_path that addresses it back");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  it_conn_qual_t qual;
  it_listen_handle_t lh;
  listen_on(&p, &qual, &lh);
  it_ud_svc_req_handle_t svc;
  it_event_t rep = resolve(&a, &p, &qual, &svc);

  it_addr_handle_t ah;
  conf_ok(it_address_handle_create(a.pz, &rep.ud_svc_reply.dst_path, 0, &ah));
  const size_t n = 1000;
  conf_buf_t sb, rb;
  ud_buf(&a, &sb, n);
  ud_buf(&p, &rb, GRH + n);
  conf_buf_fill(&sb, 3);
  it_lmr_triplet_t rseg = conf_seg(&rb, 0, GRH + n);
  conf_ok(it_post_recvfrom(p.ep, &rseg, 1, 77, IT_COMPLETION_FLAG));
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = ah;
  dst.addr.ud.ep_info = rep.ud_svc_reply.ep_info;
  /* Two segments: the datagram is their concatenation. */
  it_lmr_triplet_t sseg[2] = { conf_seg(&sb, 0, 400), conf_seg(&sb, 400, n - 400) };
  conf_ok(it_post_sendto(a.ep, sseg, 2, 55, IT_COMPLETION_FLAG, &dst));
  it_dto_cmpl_event_t sc = conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 55);
  g_assert_true(sc.ep == a.ep);
  size_t off = wait_recv(&p, 77, &a, n);
  conf_buf_t chk = rb;
  chk.data = rb.data + off;
  conf_buf_check(&chk, 0, n, 3);
  conf_buf_check_guards(&rb);

  /* And back, to the address the completion gave. */
  it_event_t ev;
  memset(&ev, 0, sizeof(ev));
  conf_buf_t rb2, sb2;
  ud_buf(&a, &rb2, GRH + 64);
  ud_buf(&p, &sb2, 64);
  conf_buf_fill(&sb2, 9);
  it_lmr_triplet_t r2 = conf_seg(&rb2, 0, GRH + 64);
  conf_ok(it_post_recvfrom(a.ep, &r2, 1, 78, IT_COMPLETION_FLAG));
  /* The source path of the first datagram, as the receiver saw it. */
  conf_ok(it_post_recvfrom(p.ep, &rseg, 1, 79, IT_COMPLETION_FLAG));
  conf_ok(it_post_sendto(a.ep, sseg, 1, 56, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 56);
  ev = conf_wait(p.dto, IT_DTO_UD_RECV_CMPL_EVENT);
  g_assert_cmpuint(ev.all_dto_cmpl.ud_ep_id, ==, a.info.ud_ep_id);
  it_dg_remote_ep_addr_t to_a = conf_ud_reply_to(p.pz, &ev.all_dto_cmpl, QKEY_A);
  it_lmr_triplet_t s2 = conf_seg(&sb2, 0, 64);
  conf_ok(it_post_sendto(p.ep, &s2, 1, 57, IT_COMPLETION_FLAG, &to_a));
  conf_dto(p.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 57);
  off = wait_recv(&a, 78, &p, 64);
  chk = rb2;
  chk.data = rb2.data + off;
  conf_buf_check(&chk, 0, 64, 9);

  conf_ok(it_ud_service_request_handle_free(svc));
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_buf_free(&sb2);
  conf_buf_free(&rb2);
  ud_side_close(&a);
  ud_side_close(&p);
}

/* A path and AH from @a to the loopback address, and @p's EP as target. */
static it_addr_handle_t
ah_to(ud_side_t *a)
{
  it_path_t path;
  ud_path(a, &path);
  it_addr_handle_t ah;
  conf_ok(it_address_handle_create(a->pz, &path, IT_AH_PATH_COMPLETE, &ah));
  return ah;
}

static void
test_qkey_mismatch(void)
{
  g_test_summary("UD: a datagram with the wrong Q_Key is dropped at the receiver (nothing "
                 "completes there) while the send still completes successfully; one with the "
                 "right key then arrives in the same receive");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  it_addr_handle_t ah = ah_to(&a);
  conf_buf_t sb, rb;
  ud_buf(&a, &sb, 128);
  ud_buf(&p, &rb, GRH + 128);
  conf_buf_fill(&sb, 5);
  it_lmr_triplet_t rseg = conf_seg(&rb, 0, GRH + 128);
  conf_ok(it_post_recvfrom(p.ep, &rseg, 1, 1, IT_COMPLETION_FLAG));
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = ah;
  dst.addr.ud.ep_info.ud_ep_id = p.info.ud_ep_id;
  dst.addr.ud.ep_info.ud_ep_key = QKEY_P ^ 1;
  it_lmr_triplet_t sseg = conf_seg(&sb, 0, 128);
  conf_ok(it_post_sendto(a.ep, &sseg, 1, 2, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_assert_empty(p.dto);
  /* To an id no EP has: the same. */
  dst.addr.ud.ep_info.ud_ep_id = p.info.ud_ep_id + 100000;
  dst.addr.ud.ep_info.ud_ep_key = QKEY_P;
  conf_ok(it_post_sendto(a.ep, &sseg, 1, 3, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  conf_assert_empty(p.dto);
  dst.addr.ud.ep_info.ud_ep_id = p.info.ud_ep_id;
  conf_ok(it_post_sendto(a.ep, &sseg, 1, 4, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 4);
  size_t off = wait_recv(&p, 1, &a, 128);
  conf_buf_t chk = rb;
  chk.data = rb.data + off;
  conf_buf_check(&chk, 0, 128, 5);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  ud_side_close(&a);
  ud_side_close(&p);
}

static void
test_no_recv_dropped(void)
{
  g_test_summary("UD: a datagram to an EP with no receive posted is dropped (nothing completes "
                 "there, not even later when a receive is posted) and the send completes "
                 "successfully, as on InfiniBand");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  it_addr_handle_t ah = ah_to(&a);
  conf_buf_t sb, rb;
  ud_buf(&a, &sb, 32);
  ud_buf(&p, &rb, GRH + 32);
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = ah;
  dst.addr.ud.ep_info = p.info;
  it_lmr_triplet_t sseg = conf_seg(&sb, 0, 32);
  conf_ok(it_post_sendto(a.ep, &sseg, 1, 1, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  it_lmr_triplet_t rseg = conf_seg(&rb, 0, GRH + 32);
  conf_ok(it_post_recvfrom(p.ep, &rseg, 1, 2, IT_COMPLETION_FLAG));
  conf_assert_empty(p.dto);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  ud_side_close(&a);
  ud_side_close(&p);
}

static void
test_mtu(void)
{
  g_test_summary("UD: a datagram larger than it_spigot_info_t.max_ud_send_len is refused by "
                 "it_post_sendto with IT_ERR_PAYLOAD_SIZE and nothing is sent; one of exactly "
                 "the MTU arrives whole");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  size_t mtu = ud_mtu(&a);
  g_assert_cmpuint(mtu, >=, 256);
  it_addr_handle_t ah = ah_to(&a);
  conf_buf_t sb, rb;
  ud_buf(&a, &sb, mtu + 1);
  ud_buf(&p, &rb, GRH + mtu + 1);
  conf_buf_fill(&sb, 11);
  it_lmr_triplet_t rseg = conf_seg(&rb, 0, GRH + mtu + 1);
  conf_ok(it_post_recvfrom(p.ep, &rseg, 1, 1, IT_COMPLETION_FLAG));
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = ah;
  dst.addr.ud.ep_info = p.info;
  it_lmr_triplet_t big = conf_seg(&sb, 0, mtu + 1);
  conf_assert_status(it_post_sendto(a.ep, &big, 1, 2, IT_COMPLETION_FLAG, &dst), IT_ERR_PAYLOAD_SIZE);
  conf_assert_empty(a.dto);
  conf_assert_empty(p.dto);
  it_lmr_triplet_t whole = conf_seg(&sb, 0, mtu);
  conf_ok(it_post_sendto(a.ep, &whole, 1, 3, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  size_t off = wait_recv(&p, 1, &a, mtu);
  conf_buf_t chk = rb;
  chk.data = rb.data + off;
  conf_buf_check(&chk, 0, mtu, 11);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  ud_side_close(&a);
  ud_side_close(&p);
}

static void
test_recv_too_small(void)
{
  g_test_summary("UD: a receive too small for the GRH and the payload completes with "
                 "IT_DTO_ERR_LOCAL_LENGTH, the send succeeds, and the EP stays usable");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  it_addr_handle_t ah = ah_to(&a);
  conf_buf_t sb, rb;
  ud_buf(&a, &sb, 100);
  ud_buf(&p, &rb, GRH + 100);
  it_lmr_triplet_t small = conf_seg(&rb, 0, 100);
  conf_ok(it_post_recvfrom(p.ep, &small, 1, 1, IT_COMPLETION_FLAG));
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = ah;
  dst.addr.ud.ep_info = p.info;
  it_lmr_triplet_t sseg = conf_seg(&sb, 0, 100);
  conf_ok(it_post_sendto(a.ep, &sseg, 1, 2, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_event_t ev = conf_wait(p.dto, IT_DTO_UD_RECV_CMPL_EVENT);
  g_assert_cmpint(ev.all_dto_cmpl.dto_status, ==, IT_DTO_ERR_LOCAL_LENGTH);
  it_lmr_triplet_t full = conf_seg(&rb, 0, GRH + 100);
  conf_ok(it_post_recvfrom(p.ep, &full, 1, 3, IT_COMPLETION_FLAG));
  conf_ok(it_post_sendto(a.ep, &sseg, 1, 4, IT_COMPLETION_FLAG, &dst));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 4);
  wait_recv(&p, 3, &a, 100);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  ud_side_close(&a);
  ud_side_close(&p);
}

/* A thread sending datagrams through one address handle (and draining
 * its completions) until the handle is refused. */
typedef struct {
  ud_side_t *a;
  it_dg_remote_ep_addr_t dst;
  it_lmr_triplet_t seg;
  volatile gint started, stop;
  guint64 sent;
  it_status_t bad;
} ah_racer_t;

static gpointer
ah_sender(gpointer data)
{
  ah_racer_t *r = data;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 1000000; i++) {
    it_status_t st = it_post_sendto(r->a->ep, &r->seg, 1, i, IT_COMPLETION_FLAG, &r->dst);
    g_atomic_int_set(&r->started, 1);
    if (st == IT_SUCCESS)
      r->sent++;
    else if (st == IT_ERR_INVALID_AH)
      break;
    else if (st != IT_ERR_TOO_MANY_POSTS && r->bad == IT_SUCCESS)
      r->bad = st;
    it_event_t ev;
    while (it_evd_dequeue(r->a->dto, &ev) == IT_SUCCESS)
      if (ev.event_number != IT_DTO_SEND_CMPL_EVENT || ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
        g_error("a datagram send racing its address handle's modify and free completed as event "
                "0x%x, status %d", (unsigned) ev.event_number, (int) ev.dto_cmpl.dto_status);
  }
  return NULL;
}

static void
test_ah_race(void)
{
  g_test_summary("UD: an address handle modified over and over, then freed, while another thread "
                 "sends datagrams through it: every send returns success (and completes "
                 "successfully) until the free, then IT_ERR_INVALID_AH; no send uses the provider "
                 "handle a modify replaced once it is gone (run under ASan, this shows it)");
  if (!ud_available())
    return;
  unsigned rounds = 20;
  for (unsigned round = 0; round < rounds; round++) {
    ud_side_t a, p;
    ud_side_open(&a, QKEY_A);
    ud_side_open(&p, QKEY_P);
    conf_buf_t sb;
    ud_buf(&a, &sb, 64);
    conf_buf_fill(&sb, round);
    it_addr_handle_t ah = ah_to(&a);
    it_addr_param_t ap;
    conf_ok(it_address_handle_query(ah, IT_ADDR_PARAM_PATH, &ap));
    ah_racer_t r = { .a = &a, .seg = conf_seg(&sb, 0, 64) };
    r.dst.type = IT_DG_TYPE_IB_UD;
    r.dst.addr.ud.addr = ah;
    r.dst.addr.ud.ep_info = p.info;
    GThread *t = g_thread_new("ah-sender", ah_sender, &r);
    conf_await_flag(&r.started, "the sending thread to start");
    for (unsigned k = 0; k < 50 + round * 10; k++) {
      ap.path.remote.ib.sl = (uint8_t) (k % 8);
      conf_ok(it_address_handle_modify(ah, IT_ADDR_PARAM_PATH, &ap));
    }
    conf_ok(it_address_handle_free(ah));
    g_atomic_int_set(&r.stop, 1);
    g_thread_join(t);
    if (r.bad != IT_SUCCESS)
      g_error("it_post_sendto returned %s while its address handle was modified and freed",
              itx_status_name(r.bad));
    g_assert_cmpuint(r.sent, >, 0);
    conf_assert_status(it_post_sendto(a.ep, &r.seg, 1, 0, IT_COMPLETION_FLAG, &r.dst), IT_ERR_INVALID_AH);
    ud_side_close(&a);
    ud_side_close(&p);
    free(sb.mem);
  }
}

static void
test_ah_lifecycle(void)
{
  g_test_summary("Address handles: create from it_get_pathinfo's path, query it back, modify the "
                 "path, free; a freed handle, bad flags, a NULL path, a bad mask and an AH of "
                 "another PZ are refused with the documented statuses");
  if (!ud_available())
    return;
  ud_side_t a;
  ud_side_open(&a, QKEY_A);
  it_path_t path;
  ud_path(&a, &path);
  it_addr_handle_t ah;
  conf_ok(it_address_handle_create(a.pz, &path, IT_AH_PATH_COMPLETE, &ah));
  it_handle_type_enum_t type;
  conf_ok(it_get_handle_type(ah, &type));
  g_assert_cmpint(type, ==, IT_HANDLE_TYPE_ADDR);
  it_addr_param_t ap;
  conf_ok(it_address_handle_query(ah, IT_ADDR_PARAM_ALL, &ap));
  g_assert_true(ap.ia == a.ia);
  g_assert_true(ap.pz == a.pz);
  g_assert_cmpmem(&ap.path.remote.ib.remote_port_gid, 16, &path.remote.ib.remote_port_gid, 16);
  g_assert_cmpuint(ap.path.remote.ib.path_mtu, ==, path.remote.ib.path_mtu);

  it_addr_param_t np = ap;
  np.path.remote.ib.sl = 3;
  np.path.remote.ib.hop_limit = 7;
  conf_ok(it_address_handle_modify(ah, IT_ADDR_PARAM_PATH, &np));
  conf_ok(it_address_handle_query(ah, IT_ADDR_PARAM_PATH, &ap));
  g_assert_cmpuint(ap.path.remote.ib.sl, ==, 3);
  g_assert_cmpuint(ap.path.remote.ib.hop_limit, ==, 7);
  conf_assert_status(it_address_handle_modify(ah, IT_ADDR_PARAM_PZ, &np), IT_ERR_INVALID_MASK);
  conf_assert_status(it_address_handle_modify(ah, IT_ADDR_PARAM_PATH, NULL), IT_ERR_FAULT);
  conf_assert_status(it_address_handle_query(ah, 0x100, &ap), IT_ERR_INVALID_MASK);
  conf_assert_status(it_address_handle_query(ah, IT_ADDR_PARAM_ALL, NULL), IT_ERR_FAULT);

  it_addr_handle_t bad;
  conf_assert_status(it_address_handle_create(a.pz, &path, 0x2, &bad), IT_ERR_INVALID_FLAGS);
  conf_assert_status(it_address_handle_create(a.pz, NULL, 0, &bad), IT_ERR_INVALID_SOURCE_PATH);
  conf_assert_status(it_address_handle_create(a.pz, &path, 0, NULL), IT_ERR_FAULT);
  conf_assert_status(it_address_handle_create(IT_NULL_HANDLE, &path, 0, &bad), IT_ERR_INVALID_PZ);
  it_path_t nowhere;
  memset(&nowhere, 0, sizeof(nowhere));
  conf_assert_status(it_address_handle_create(a.pz, &nowhere, 0, &bad), IT_ERR_INVALID_SOURCE_PATH);

  /* The PZ holds the AH. */
  conf_assert_status(it_pz_free(a.pz), IT_ERR_PZ_BUSY);

  /* An AH of another PZ. */
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(a.ia, &pz2));
  it_addr_handle_t other;
  conf_ok(it_address_handle_create(pz2, &path, 0, &other));
  conf_buf_t sb;
  ud_buf(&a, &sb, 16);
  it_lmr_triplet_t seg = conf_seg(&sb, 0, 16);
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = other;
  dst.addr.ud.ep_info = a.info;
  conf_assert_status(it_post_sendto(a.ep, &seg, 1, 1, IT_COMPLETION_FLAG, &dst), IT_ERR_INVALID_AH);
  conf_assert_status(it_post_sendto(a.ep, &seg, 1, 1, IT_COMPLETION_FLAG, NULL), IT_ERR_INVALID_AH);
  conf_ok(it_address_handle_free(other));
  conf_ok(it_pz_free(pz2));

  conf_ok(it_address_handle_free(ah));
  conf_assert_status(it_address_handle_free(ah), IT_ERR_INVALID_AH);
  conf_assert_status(it_address_handle_query(ah, IT_ADDR_PARAM_ALL, &ap), IT_ERR_INVALID_AH);
  conf_assert_status(it_address_handle_modify(ah, IT_ADDR_PARAM_PATH, &np), IT_ERR_INVALID_AH);
  dst.addr.ud.addr = ah;
  conf_assert_status(it_post_sendto(a.ep, &seg, 1, 1, IT_COMPLETION_FLAG, &dst), IT_ERR_INVALID_AH);
  conf_assert_empty(a.dto);
  conf_buf_free(&sb);
  ud_side_close(&a);
}

static void
test_svc_reject(void)
{
  g_test_summary("UD service resolution: a reply with IT_UD_SVC_REQ_REJECTED and private data "
                 "reaches the requester with that status; a bad status or an unknown id is "
                 "refused; a request to a port nobody listens on is answered "
                 "IT_UD_SVC_ID_NOT_SUPPORTED");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  it_conn_qual_t qual;
  it_listen_handle_t lh;
  listen_on(&p, &qual, &lh);
  it_path_t path;
  ud_path(&a, &path);
  it_ud_svc_req_handle_t svc;
  conf_ok(it_ud_service_request_handle_create(&qual, a.cm, &path, NULL, 0, &svc));
  it_ud_svc_req_param_t sp;
  conf_ok(it_ud_service_request_handle_query(svc, IT_UD_PARAM_ALL, &sp));
  g_assert_true(sp.ia == a.ia);
  g_assert_true(sp.reply_evd == a.cm);
  g_assert_cmpuint(sp.conn_qual.conn_qual.port, ==, qual.conn_qual.port);
  g_assert_cmpuint(sp.private_data_length, ==, 0);
  conf_ok(it_ud_service_request(svc));
  it_event_t ev = conf_wait(p.req, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
  g_assert_false(ev.ud_svc_request.private_data_present);
  it_remote_ep_info_t none = { 0, 0 };
  conf_assert_status(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, (it_ud_svc_req_status_t) 99, none,
                                         NULL, 0), IT_ERR_INVALID_UD_STATUS);
  conf_assert_status(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id + 12345, IT_UD_SVC_REQ_REJECTED,
                                         none, NULL, 0), IT_ERR_INVALID_UD_SVC_REQ_ID);
  const unsigned char why[] = "go away";
  conf_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_REQ_REJECTED, none, why, sizeof(why)));
  it_event_t rep = conf_wait(a.cm, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
  g_assert_cmpint(rep.ud_svc_reply.status, ==, IT_UD_SVC_REQ_REJECTED);
  g_assert_true(rep.ud_svc_reply.private_data_present);
  g_assert_cmpmem(rep.ud_svc_reply.private_data, sizeof(why), why, sizeof(why));

  /* Nobody listens there. */
  conf_ok(it_listen_free(lh));
  conf_ok(it_ud_service_request(svc));
  rep = conf_wait(a.cm, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
  g_assert_cmpint(rep.ud_svc_reply.status, ==, IT_UD_SVC_ID_NOT_SUPPORTED);
  conf_assert_empty(p.req);

  /* Handle errors. */
  conf_ok(it_ud_service_request_handle_free(svc));
  conf_assert_status(it_ud_service_request_handle_free(svc), IT_ERR_INVALID_UD_SVC);
  conf_assert_status(it_ud_service_request(svc), IT_ERR_INVALID_UD_SVC);
  conf_assert_status(it_ud_service_request_handle_query(svc, IT_UD_PARAM_ALL, &sp), IT_ERR_INVALID_UD_SVC);
  conf_assert_status(it_ud_service_request_handle_create(&qual, a.dto, &path, NULL, 0, &svc), IT_ERR_INVALID_EVD);
  conf_assert_status(it_ud_service_request_handle_create(&qual, a.cm, NULL, NULL, 0, &svc),
                     IT_ERR_INVALID_SOURCE_PATH);
  conf_assert_status(it_ud_service_request_handle_create(NULL, a.cm, &path, NULL, 0, &svc),
                     IT_ERR_INVALID_CONN_QUAL);
  conf_assert_status(it_ud_service_request_handle_create(&qual, a.cm, &path, NULL, 0, NULL), IT_ERR_FAULT);
  ud_side_close(&a);
  ud_side_close(&p);
}

static void
test_svc_pdata_limits(void)
{
  g_test_summary("UD service resolution: private data up to it_ia_info_t.ud_req_private_data_len "
                 "and ud_rep_private_data_len goes through whole; one byte more is refused with "
                 "IT_ERR_INVALID_PDATA_LENGTH");
  ud_side_t a, p;
  if (!ud_pair_open(&a, &p))
    return;
  it_ia_info_t *info = ud_info(&a);
  size_t req_max = info->ud_req_private_data_len, rep_max = info->ud_rep_private_data_len;
  it_ia_info_free(info);
  g_assert_cmpuint(req_max, >, 0);
  g_assert_cmpuint(rep_max, >, 0);
  unsigned char pd[IT_MAX_PRIV_DATA + 1];
  for (size_t i = 0; i < sizeof(pd); i++)
    pd[i] = (unsigned char) (i * 13 + 1);
  it_conn_qual_t qual;
  it_listen_handle_t lh;
  listen_on(&p, &qual, &lh);
  it_path_t path;
  ud_path(&a, &path);
  it_ud_svc_req_handle_t svc;
  conf_assert_status(it_ud_service_request_handle_create(&qual, a.cm, &path, pd, req_max + 1, &svc),
                     IT_ERR_INVALID_PDATA_LENGTH);
  conf_assert_status(it_ud_service_request_handle_create(&qual, a.cm, &path, NULL, 4, &svc),
                     IT_ERR_INVALID_PDATA_LENGTH);
  conf_ok(it_ud_service_request_handle_create(&qual, a.cm, &path, pd, req_max, &svc));
  conf_ok(it_ud_service_request(svc));
  it_event_t ev = conf_wait(p.req, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
  g_assert_cmpmem(ev.ud_svc_request.private_data, req_max, pd, req_max);
  conf_assert_status(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID, p.info,
                                         pd, rep_max + 1), IT_ERR_INVALID_PDATA_LENGTH);
  conf_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID, p.info, pd, rep_max));
  it_event_t rep = conf_wait(a.cm, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
  g_assert_cmpmem(rep.ud_svc_reply.private_data, rep_max, pd, rep_max);
  ud_side_close(&a);
  ud_side_close(&p);
}

static void
test_unsupported(void)
{
  g_test_summary("UD absent: on an IA without IT_UD_SERVICE every UD call refuses with "
                 "IT_ERR_OP_NOT_SUPPORTED and reports no UD private data");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_ia_info_t *info = conf_info(&s);
  gboolean ud = (info->supported_service_types & IT_UD_SERVICE) != 0;
  size_t req = info->ud_req_private_data_len, mtu = info->spigot_info[0].max_ud_send_len;
  it_ia_info_free(info);
  if (!conf_require(!ud, "no-ud")) {
    conf_side_close(&s);
    return;
  }
  g_assert_cmpuint(req, ==, 0);
  g_assert_cmpuint(mtu, ==, 0);
  it_ep_attributes_t a;
  ud_attr(&a, QKEY_A);
  it_ep_handle_t ep;
  conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, &a, 0, &ep), IT_ERR_OP_NOT_SUPPORTED);
  it_path_t path;
  conf_path(&s, &path);
  it_addr_handle_t ah;
  conf_assert_status(it_address_handle_create(s.pz, &path, 0, &ah), IT_ERR_OP_NOT_SUPPORTED);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(4791);
  it_ud_svc_req_handle_t svc;
  conf_assert_status(it_ud_service_request_handle_create(&q, s.cm, &path, NULL, 0, &svc),
                     IT_ERR_OP_NOT_SUPPORTED);
  conf_side_close(&s);
}

/* ---- datagrams from two threads at once ---- */

#define XR_N 500     /* datagrams each way */
#define XR_LEN 16
#define XR_WIN 16    /* sends in flight */

/* One thread's side of a race: it sends XR_N datagrams to @peer (each
 * carrying its sequence number and @tag) and takes every completion of
 * its own EVD, the datagrams @peer sends it among them (XR_N receives
 * posted before it starts, receive i in slot i).  What went wrong, in
 * @why (checked by the main thread). */
typedef struct {
  ud_side_t *me;
  const ud_side_t *peer;
  it_addr_handle_t ah;
  conf_buf_t sb, rb;
  unsigned char tag, peer_tag;
  guint n;                  /* datagrams to send (0: until @stop) */
  gint stop;
  guint posted, sends_done, recvd;
  gint shown;               /* @posted, published for the main thread */
  gboolean seen[XR_N];
  char why[200];
} xr_t;

static void
xr_open(xr_t *x, ud_side_t *me, const ud_side_t *peer, unsigned char tag, unsigned char peer_tag)
{
  memset(x, 0, sizeof(*x));
  x->me = me;
  x->peer = peer;
  x->tag = tag;
  x->peer_tag = peer_tag;
  x->n = XR_N;
  x->ah = ah_to(me);
  ud_buf(me, &x->sb, XR_WIN * XR_LEN);
  ud_buf(me, &x->rb, XR_N * (GRH + XR_LEN));
  for (guint i = 0; i < XR_N; i++) {
    it_lmr_triplet_t r = conf_seg(&x->rb, i * (GRH + XR_LEN), GRH + XR_LEN);
    conf_ok(it_post_recvfrom(me->ep, &r, 1, i, IT_COMPLETION_FLAG));
  }
}

static void
xr_fail(xr_t *x, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void
xr_fail(xr_t *x, const char *fmt, ...)
{
  if (x->why[0] != '\0')
    return;
  va_list ap;
  va_start(ap, fmt);
  g_vsnprintf(x->why, sizeof(x->why), fmt, ap);
  va_end(ap);
}

/* A completion of @x's EVD: a send's (in order, successful) or a
 * datagram's (intact, from the peer, never twice). */
static void
xr_take(xr_t *x, const it_event_t *ev)
{
  const it_all_dto_cmpl_event_t *d = &ev->all_dto_cmpl;
  if (ev->event_number == IT_DTO_SEND_CMPL_EVENT) {
    if (d->dto_status != IT_DTO_SUCCESS || d->cookie != x->sends_done)
      xr_fail(x, "send %u completed as cookie %" G_GUINT64_FORMAT " with %s", x->sends_done,
              (guint64) d->cookie, itx_dto_status_name(d->dto_status));
    x->sends_done++;
    return;
  }
  if (ev->event_number != IT_DTO_UD_RECV_CMPL_EVENT || d->dto_status != IT_DTO_SUCCESS ||
      d->cookie >= XR_N || d->ud_ep_id != x->peer->info.ud_ep_id) {
    xr_fail(x, "%s with %s (cookie %" G_GUINT64_FORMAT ") among the datagrams from the peer",
            itx_event_name(ev->event_number), itx_dto_status_name(d->dto_status), (guint64) d->cookie);
    return;
  }
  size_t off = (d->flags & IT_UD_IB_GRH_PRESENT) ? GRH : 0;
  const unsigned char *p = x->rb.data + d->cookie * (GRH + XR_LEN) + off;
  guint32 seq;
  memcpy(&seq, p, sizeof(seq));
  gboolean intact = d->transferred_length == off + XR_LEN && seq < XR_N;
  for (guint k = 4; intact && k < XR_LEN; k++)
    intact = p[k] == (unsigned char) (x->peer_tag + seq + k);
  if (!intact)
    xr_fail(x, "datagram in receive %" G_GUINT64_FORMAT " (%u bytes) is not one the peer sent",
            (guint64) d->cookie, d->transferred_length);
  else if (x->seen[seq])
    xr_fail(x, "datagram %u of the peer arrived twice", seq);
  else
    x->seen[seq] = TRUE;
  x->recvd++;
}

static gpointer
xr_run(gpointer data)
{
  xr_t *x = data;
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = x->ah;
  dst.addr.ud.ep_info = x->peer->info;
  cert_limit_t w;
  cert_limit_begin(&w, "a datagram stream's sends and receives", 4 * CONF_TIMEOUT_US);
  for (;;) {
    gboolean sending = x->n > 0 ? x->posted < x->n : !g_atomic_int_get(&x->stop);
    if (!sending && x->sends_done == x->posted && (x->n == 0 || x->recvd >= XR_N))
      break;
    if (cert_limit_over(&w)) {
      xr_fail(x, "after %d s: %u of %u sends completed, %u of %u datagrams arrived",
              (int) (4 * CONF_TIMEOUT_US / G_USEC_PER_SEC), x->sends_done, x->posted, x->recvd, XR_N);
      break;
    }
    if (sending && x->posted - x->sends_done < XR_WIN) {
      guint32 seq = x->posted % XR_N;
      unsigned char *p = x->sb.data + (x->posted % XR_WIN) * XR_LEN;
      memcpy(p, &seq, sizeof(seq));
      for (guint k = 4; k < XR_LEN; k++)
        p[k] = (unsigned char) (x->tag + seq + k);
      it_lmr_triplet_t t = conf_seg(&x->sb, (x->posted % XR_WIN) * XR_LEN, XR_LEN);
      it_status_t st = it_post_sendto(x->me->ep, &t, 1, x->posted, IT_COMPLETION_FLAG, &dst);
      if (st != IT_SUCCESS) {
        xr_fail(x, "it_post_sendto %u returned %s", x->posted, itx_status_name(st));
        break;
      }
      x->posted++;
      g_atomic_int_set(&x->shown, (gint) x->posted);
    }
    it_event_t ev;
    it_status_t st = it_evd_dequeue(x->me->dto, &ev);
    if (st == IT_SUCCESS)
      xr_take(x, &ev);
    else if (st != IT_ERR_QUEUE_EMPTY)
      xr_fail(x, "it_evd_dequeue returned %s", itx_status_name(st));
  }
  cert_limit_end(&w);
  return NULL;
}

/* Waits until @x's sender has posted @n datagrams, or for CONF_TIMEOUT_US
 * (the caller's checks then say what fell short). */
static void
xr_wait_shown(xr_t *x, gint n)
{
  cert_limit_t w;
  cert_limit_beginf(&w, CONF_TIMEOUT_US, "the datagram sender to post %d", n);
  while (g_atomic_int_get(&x->shown) < n && !cert_limit_over(&w))
    g_usleep(200);
  cert_limit_end(&w);
}

static void
xr_close(xr_t *x)
{
  conf_ok(it_address_handle_free(x->ah));
  conf_buf_free(&x->sb);
  conf_buf_free(&x->rb);
}

static void
test_race_cross_send(void)
{
  g_test_summary("UD from two threads at once: each sends 500 datagrams to the other's EP while "
                 "taking the other's, every receive posted first; each send completes once, in "
                 "order and successfully, and each datagram arrives once and intact");
  if (!ud_available())
    return;
  ud_side_t a, p;
  ud_side_open_sized(&a, QKEY_A, 2 * XR_N + 64, XR_N);
  ud_side_open_sized(&p, QKEY_P, 2 * XR_N + 64, XR_N);
  static xr_t xa, xp;
  xr_open(&xa, &a, &p, 'A', 'P');
  xr_open(&xp, &p, &a, 'P', 'A');
  GThread *ta = g_thread_new("ud-race-a", xr_run, &xa);
  GThread *tp = g_thread_new("ud-race-p", xr_run, &xp);
  g_thread_join(ta);
  g_thread_join(tp);
  g_assert_cmpstr(xa.why, ==, "");
  g_assert_cmpstr(xp.why, ==, "");
  g_assert_cmpuint(xa.sends_done, ==, XR_N);
  g_assert_cmpuint(xp.sends_done, ==, XR_N);
  g_assert_cmpuint(xa.recvd, ==, XR_N);
  g_assert_cmpuint(xp.recvd, ==, XR_N);
  xr_close(&xa);
  xr_close(&xp);
  ud_side_close(&a);
  ud_side_close(&p);
}

static void
test_race_free_beside_sendto(void)
{
  g_test_summary("UD: an EP freed while another thread sends datagrams to it: every send "
                 "completes once and successfully (a datagram to an EP that is gone is dropped); "
                 "then datagrams to a new EP in its place arrive intact");
  if (!ud_available())
    return;
  ud_side_t a, p;
  ud_side_open_sized(&a, QKEY_A, 2 * XR_N + 64, XR_N);
  ud_side_open_sized(&p, QKEY_P, 2 * XR_N + 64, XR_N);
  static xr_t xa;
  xr_open(&xa, &a, &p, 'A', 'P');
  xa.n = 0;  /* until stopped */
  GThread *t = g_thread_new("ud-race-sender", xr_run, &xa);
  /* The free lands among the sends, however slow the machine: after the
   * sender's 8th post, and the sender goes on for 8 more after it. */
  xr_wait_shown(&xa, 8);
  conf_ok(it_ep_free(p.ep));
  xr_wait_shown(&xa, g_atomic_int_get(&xa.shown) + 8);
  g_atomic_int_set(&xa.stop, 1);
  g_thread_join(t);
  g_assert_cmpstr(xa.why, ==, "");
  g_assert_cmpuint(xa.sends_done, ==, xa.posted);
  g_assert_cmpuint(xa.posted, >, 0);

  /* A new EP on the same IA: what comes to it now is its own. */
  it_ep_attributes_t at;
  ud_attr(&at, QKEY_P);
  conf_ok(it_ep_ud_create(p.pz, p.dto, p.dto, &at, 0, &p.ep));
  it_ep_param_t pp;
  conf_ok(it_ep_query(p.ep, IT_EP_PARAM_ALL, &pp));
  p.info = pp.attr.srv.ud.ep_info;
  it_event_t ev;
  while (it_evd_dequeue(p.dto, &ev) == IT_SUCCESS)
    ;  /* the old EP's receives, flushed, and what reached it */
  conf_buf_t rb, sb;
  ud_buf(&p, &rb, GRH + XR_LEN);
  ud_buf(&a, &sb, XR_LEN);
  conf_buf_fill(&sb, 9);
  it_lmr_triplet_t r = conf_seg(&rb, 0, GRH + XR_LEN);
  conf_ok(it_post_recvfrom(p.ep, &r, 1, 1, IT_COMPLETION_FLAG));
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = xa.ah;
  dst.addr.ud.ep_info = p.info;
  it_lmr_triplet_t t1 = conf_seg(&sb, 0, XR_LEN);
  while (it_evd_dequeue(a.dto, &ev) == IT_SUCCESS)
    ;  /* datagrams the old EP sent back: none; flushed receives of a: none */
  conf_ok(it_post_sendto(a.ep, &t1, 1, 77, IT_COMPLETION_FLAG, &dst));
  it_event_t sev = conf_wait(a.dto, IT_DTO_SEND_CMPL_EVENT);
  g_assert_cmpuint(sev.dto_cmpl.cookie, ==, 77);
  g_assert_cmpint(sev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  size_t off = wait_recv(&p, 1, &a, XR_LEN);
  conf_buf_t chk = rb;
  chk.data = rb.data + off;
  conf_buf_check(&chk, 0, XR_LEN, 9);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  xr_close(&xa);
  ud_side_close(&a);
  ud_side_close(&p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/ud/ep/create-query", test_ep_create_query);
  g_test_add_func("/conformance/ud/resolve/sendto-recvfrom", test_resolve_sendto);
  g_test_add_func("/conformance/ud/qkey-mismatch", test_qkey_mismatch);
  g_test_add_func("/conformance/ud/no-recv-dropped", test_no_recv_dropped);
  g_test_add_func("/conformance/ud/mtu-limit", test_mtu);
  g_test_add_func("/conformance/ud/recv-too-small", test_recv_too_small);
  g_test_add_func("/conformance/ud/ah/lifecycle", test_ah_lifecycle);
  g_test_add_func("/conformance/ud/ah/modify-free-vs-sendto", test_ah_race);
  g_test_add_func("/conformance/ud/svc/reject", test_svc_reject);
  g_test_add_func("/conformance/ud/svc/pdata-limit", test_svc_pdata_limits);
  g_test_add_func("/conformance/ud/unsupported", test_unsupported);
  g_test_add_func("/conformance/ud/race/cross-send", test_race_cross_send);
  g_test_add_func("/conformance/ud/race/free-beside-sendto", test_race_free_beside_sendto);
  return g_test_run();
}
