/*
 * Conformance: interface adapters, protection zones, endpoints' creation
 * and attributes, handles and the utility calls (IT-API 2.1 chapters
 * "Interface Adapter", "Protection Zone", "Endpoint", "Utilities"), and
 * the itx_* table of entry points.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <string.h>

#include "conf.h"

/* ---------------------------------------------------------------------- */
/* Interface adapters                                                      */
/* ---------------------------------------------------------------------- */

static void
test_interface_list(void)
{
  g_test_summary("IA: it_interface_list reports min(capacity, total) interfaces, each named "
                 "so that it_ia_create opens it; capacity 0 reports the total only");
  it_interface_t ifs[16];
  memset(ifs, 0, sizeof(ifs));
  size_t n = G_N_ELEMENTS(ifs), total = 0;
  it_interface_list(ifs, &n, &total);
  g_assert_cmpuint(total, >=, 1);
  g_assert_cmpuint(n, ==, MIN(total, G_N_ELEMENTS(ifs)));
  for (size_t i = 0; i < n; i++) {
    g_assert_cmpuint(strlen(ifs[i].name), >, 0);
    g_assert_cmpuint(strlen(ifs[i].name), <, IT_INTERFACE_NAME_SIZE);
    g_assert_cmpuint(ifs[i].major_version, >=, 1);
    it_ia_handle_t ia;
    conf_ok(it_ia_create(ifs[i].name, 2, 1, &ia));
    it_ia_info_t *info = NULL;
    conf_ok(it_ia_query(ia, &info));
    g_assert_cmpstr(info->ia_name, ==, ifs[i].name);
    g_assert_cmpint(info->transport_type, ==, ifs[i].transport_type);
    it_ia_info_free(info);
    conf_ok(it_ia_free(ia));
  }

  size_t n0 = 0, total0 = 0;
  it_interface_list(ifs, &n0, &total0);
  g_assert_cmpuint(n0, ==, 0);
  g_assert_cmpuint(total0, ==, total);
  n0 = 0;
  total0 = 0;
  it_interface_list(NULL, &n0, &total0);
  g_assert_cmpuint(n0, ==, 0);
  g_assert_cmpuint(total0, ==, total);

  /* A capacity of one fills exactly the first entry. */
  it_interface_t one[2];
  memset(one, 0x5a, sizeof(one));
  size_t n1 = 1, total1 = 0;
  it_interface_list(one, &n1, &total1);
  g_assert_cmpuint(n1, ==, 1);
  g_assert_cmpuint(total1, ==, total);
  g_assert_cmpstr(one[0].name, ==, ifs[0].name);
  g_assert_cmpuint(one[1].major_version, ==, 0x5a5a5a5au);
}

static void
test_ia_create_versions(void)
{
  g_test_summary("IA: it_ia_create refuses an unknown name (IT_ERR_INVALID_NAME), major "
                 "version 3 (IT_ERR_INVALID_MAJOR_VERSION) and 2.9 (IT_ERR_INVALID_MINOR_VERSION); "
                 "versions 1.0, 2.0 and 2.1 open");
  it_ia_handle_t ia = IT_NULL_HANDLE;
  conf_assert_status(it_ia_create("no-such-interface-conformance", 2, 1, &ia), IT_ERR_INVALID_NAME);
  conf_assert_status(it_ia_create("", 2, 1, &ia), IT_ERR_INVALID_NAME);
  conf_assert_status(it_ia_create(conf_ia_name(), 3, 0, &ia), IT_ERR_INVALID_MAJOR_VERSION);
  conf_assert_status(it_ia_create(conf_ia_name(), 2, 9, &ia), IT_ERR_INVALID_MINOR_VERSION);
  g_assert_true(ia == IT_NULL_HANDLE);

  static const uint32_t ok[][2] = { { 1, 0 }, { 2, 0 }, { 2, 1 } };
  for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
    conf_ok(it_ia_create(conf_ia_name(), ok[i][0], ok[i][1], &ia));
    it_handle_type_enum_t t;
    conf_ok(it_get_handle_type(ia, &t));
    g_assert_cmpint(t, ==, IT_HANDLE_TYPE_IA);
    conf_ok(it_ia_free(ia));
    conf_assert_status(it_ia_free(ia), IT_ERR_INVALID_IA);
  }
}

static void
test_ia_query(void)
{
  g_test_summary("IA: it_ia_query describes at least one spigot with an address, private-data "
                 "limits within IT_MAX_PRIV_DATA, and names the affiliated EVD once created and "
                 "only while it lives; it_ia_info_free releases the block");
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));
  it_ia_info_t *info = NULL;
  conf_ok(it_ia_query(ia, &info));
  g_assert_nonnull(info);
  g_assert_cmpstr(info->ia_name, ==, conf_ia_name());
  g_assert_cmpuint(info->api_major_version, ==, 2);
  g_assert_cmpuint(info->api_minor_version, ==, 1);
  g_assert_cmpuint(info->num_spigots, >=, 1);
  g_assert_nonnull(info->spigot_info);
  for (size_t i = 0; i < info->num_spigots; i++)
    g_assert_cmpuint(info->spigot_info[i].spigot_id, ==, i);
  g_assert_cmpuint(info->spigot_info[0].num_net_addr, >=, 1);
  g_assert_nonnull(info->spigot_info[0].net_addr);
  g_assert_cmpuint(info->spigot_info[0].passive_side_conn_qual & IT_IANA_PORT, !=, 0);
  g_assert_cmpuint(info->supported_service_types & IT_RC_SERVICE, !=, 0);
  g_assert_cmpuint(info->connect_private_data_len, <=, IT_MAX_PRIV_DATA);
  g_assert_cmpuint(info->accept_private_data_len, <=, IT_MAX_PRIV_DATA);
  g_assert_cmpuint(info->reject_private_data_len, <=, IT_MAX_PRIV_DATA);
  g_assert_cmpuint(info->disconnect_private_data_len, <=, IT_MAX_PRIV_DATA);
  g_assert_cmpuint(info->ud_req_private_data_len, <=, IT_MAX_PRIV_DATA);
  g_assert_cmpuint(info->ud_rep_private_data_len, <=, IT_MAX_PRIV_DATA);
  g_assert_true(info->affiliated_err_evd == IT_NULL_HANDLE);
  g_assert_true(info->unaffiliated_err_evd == IT_NULL_HANDLE);
  it_ia_info_free(info);

  it_evd_handle_t aff, unaff;
  conf_ok(it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                        IT_NULL_HANDLE, &aff, NULL));
  conf_ok(it_evd_create(ia, IT_ASYNC_UNAFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                        IT_NULL_HANDLE, &unaff, NULL));
  conf_ok(it_ia_query(ia, &info));
  g_assert_true(info->affiliated_err_evd == aff);
  g_assert_true(info->unaffiliated_err_evd == unaff);
  it_ia_info_free(info);

  conf_ok(it_evd_free(aff));
  conf_ok(it_ia_query(ia, &info));
  g_assert_true(info->affiliated_err_evd == IT_NULL_HANDLE);
  g_assert_true(info->unaffiliated_err_evd == unaff);
  it_ia_info_free(info);
  conf_ok(it_ia_free(ia));
  conf_assert_status(it_ia_query(ia, &info), IT_ERR_INVALID_IA);
}

/* ---------------------------------------------------------------------- */
/* Protection zones                                                        */
/* ---------------------------------------------------------------------- */

static void
test_pz_busy(void)
{
  g_test_summary("PZ: it_pz_free of a PZ holding an LMR or an EP returns IT_ERR_PZ_BUSY and the "
                 "PZ stays usable; after those are freed it succeeds; it_pz_query returns the IA");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_pz_param_t pp;
  memset(&pp, 0, sizeof(pp));
  conf_ok(it_pz_query(s.pz, IT_PZ_PARAM_ALL, &pp));
  g_assert_true(pp.ia == s.ia);

  it_pz_handle_t pz;
  conf_ok(it_pz_create(s.ia, &pz));
  conf_buf_t b;
  memset(&b, 0, sizeof(b));
  conf_buf_new(&s, &b, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  /* Register a second region in the new PZ. */
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_ok(it_lmr_create(pz, b.data, NULL, b.len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                        IT_LMR_FLAG_NONE, 0, &lmr, &ctx));
  conf_assert_status(it_pz_free(pz), IT_ERR_PZ_BUSY);
  conf_ok(it_pz_query(pz, IT_PZ_PARAM_IA, &pp));
  g_assert_true(pp.ia == s.ia);
  conf_ok(it_lmr_free(lmr));
  conf_ok(it_pz_free(pz));
  conf_assert_status(it_pz_query(pz, IT_PZ_PARAM_ALL, &pp), IT_ERR_INVALID_PZ);

  /* The fixture's PZ holds an EP and an LMR. */
  conf_assert_status(it_pz_free(s.pz), IT_ERR_PZ_BUSY);
  conf_buf_free(&b);
  conf_assert_status(it_pz_free(s.pz), IT_ERR_PZ_BUSY);
  conf_ok(it_ep_free(s.ep));
  s.ep = IT_NULL_HANDLE;
  conf_ok(it_pz_free(s.pz));
  s.pz = IT_NULL_HANDLE;
  conf_side_close(&s);
}

/* ---------------------------------------------------------------------- */
/* Handles: context, type, staleness                                        */
/* ---------------------------------------------------------------------- */

/* One live object of every kind the IA offers. */
typedef struct {
  conf_side_t s;
  conf_buf_t b;
  it_listen_handle_t lh;
  it_conn_qual_t qual;
} every_kind_t;

static void
every_kind_open(every_kind_t *k)
{
  memset(k, 0, sizeof(*k));
  conf_side_open(&k->s, NULL);
  conf_buf_new(&k->s, &k->b, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  k->qual.type = IT_IANA_PORT;
  conf_ok(it_listen_create(k->s.ia, 0, k->s.req, IT_LISTEN_NO_FLAG, &k->qual, &k->lh));
}

static void
every_kind_close(every_kind_t *k)
{
  conf_ok(it_listen_free(k->lh));
  conf_buf_free(&k->b);
  conf_side_close(&k->s);
}

typedef struct {
  const char *kind;
  it_handle_t h;
  it_handle_type_enum_t type;
} kind_t;

static size_t
every_kind_list(every_kind_t *k, kind_t out[6])
{
  kind_t l[] = {
    { "IA", k->s.ia, IT_HANDLE_TYPE_IA },
    { "PZ", k->s.pz, IT_HANDLE_TYPE_PZ },
    { "EVD", k->s.dto, IT_HANDLE_TYPE_EVD },
    { "EP", k->s.ep, IT_HANDLE_TYPE_EP },
    { "LMR", k->b.lmr, IT_HANDLE_TYPE_LMR },
    { "listener", k->lh, IT_HANDLE_TYPE_LISTEN },
  };
  memcpy(out, l, sizeof(l));
  return G_N_ELEMENTS(l);
}

static void
test_consumer_context(void)
{
  g_test_summary("Utilities: every handle kind (IA, PZ, EVD, EP, LMR, listener) starts without "
                 "a consumer context (IT_ERR_NO_CONTEXT) and returns what it_set_consumer_context "
                 "stored, as a pointer and as an index, independently of the others");
  every_kind_t k;
  every_kind_open(&k);
  kind_t kinds[6];
  size_t n = every_kind_list(&k, kinds);
  static int anchors[6];
  for (size_t i = 0; i < n; i++) {
    it_context_t c;
    memset(&c, 0, sizeof(c));
    conf_assert_status(it_get_consumer_context(kinds[i].h, &c), IT_ERR_NO_CONTEXT);
  }
  for (size_t i = 0; i < n; i++) {
    it_context_t c = { .ptr = &anchors[i] };
    conf_ok(it_set_consumer_context(kinds[i].h, c));
  }
  for (size_t i = 0; i < n; i++) {
    it_context_t c = { .ptr = NULL };
    conf_ok(it_get_consumer_context(kinds[i].h, &c));
    if (c.ptr != &anchors[i])
      g_error("%s handle: context pointer %p, expected %p", kinds[i].kind, c.ptr, (void *) &anchors[i]);
  }
  for (size_t i = 0; i < n; i++) {
    it_context_t c = { .index = UINT64_C(0xfeedface00000000) + i };
    conf_ok(it_set_consumer_context(kinds[i].h, c));
  }
  for (size_t i = 0; i < n; i++) {
    it_context_t c = { .index = 0 };
    conf_ok(it_get_consumer_context(kinds[i].h, &c));
    g_assert_cmphex(c.index, ==, UINT64_C(0xfeedface00000000) + i);
  }
  every_kind_close(&k);
}

static void
test_handle_type(void)
{
  g_test_summary("Utilities: it_get_handle_type names the kind of every handle (IA, PZ, EVD, EP, "
                 "LMR, listener)");
  every_kind_t k;
  every_kind_open(&k);
  kind_t kinds[6];
  size_t n = every_kind_list(&k, kinds);
  for (size_t i = 0; i < n; i++) {
    it_handle_type_enum_t t = (it_handle_type_enum_t) 99;
    conf_ok(it_get_handle_type(kinds[i].h, &t));
    if (t != kinds[i].type)
      g_error("%s handle: type %d, expected %d", kinds[i].kind, (int) t, (int) kinds[i].type);
  }
  /* Every EVD stream is an EVD. */
  it_handle_type_enum_t t;
  conf_ok(it_get_handle_type(k.s.cm, &t));
  g_assert_cmpint(t, ==, IT_HANDLE_TYPE_EVD);
  conf_ok(it_get_handle_type(k.s.req, &t));
  g_assert_cmpint(t, ==, IT_HANDLE_TYPE_EVD);
  conf_ok(it_get_handle_type(k.s.aff, &t));
  g_assert_cmpint(t, ==, IT_HANDLE_TYPE_EVD);
  every_kind_close(&k);
}

static void
test_stale_ep(void)
{
  g_test_summary("Handles: a freed EP handle gives IT_ERR_INVALID_EP from it_ep_query, "
                 "it_ep_free, it_ep_modify, it_ep_connect and it_post_send, and is no handle at "
                 "all for it_get_handle_type");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t b;
  conf_buf_new(&s, &b, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_ep_handle_t ep = s.ep;
  conf_ok(it_ep_free(ep));
  s.ep = IT_NULL_HANDLE;

  it_ep_param_t ep_p;
  conf_assert_status(it_ep_query(ep, IT_EP_PARAM_ALL, &ep_p), IT_ERR_INVALID_EP);
  conf_assert_status(it_ep_free(ep), IT_ERR_INVALID_EP);
  it_ep_attributes_t a;
  conf_default_attr(&a);
  conf_assert_status(it_ep_modify(ep, IT_EP_PARAM_MAX_IRD, &a), IT_ERR_INVALID_EP);
  conf_assert_status(it_ep_reset(ep), IT_ERR_INVALID_EP);
  it_lmr_triplet_t seg = conf_seg(&b, 0, 64);
  conf_assert_status(it_post_send(ep, &seg, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP);
  conf_assert_status(it_post_rdma_write(ep, &seg, 1, 1, IT_COMPLETION_FLAG, 0, 0), IT_ERR_INVALID_EP);
  it_status_t st = it_post_recv(ep, &seg, 1, 1, IT_COMPLETION_FLAG);
  if (st != IT_ERR_INVALID_EP && st != IT_ERR_INVALID_HANDLE)
    g_error("it_post_recv on a freed EP returned %s, expected IT_ERR_INVALID_EP or "
            "IT_ERR_INVALID_HANDLE", itx_status_name(st));
  it_path_t path;
  conf_path(&s, &path);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(9);
  conf_assert_status(it_ep_connect(ep, &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
                     IT_ERR_INVALID_EP);
  conf_assert_status(it_ep_disconnect(ep, NULL, 0), IT_ERR_INVALID_EP);
  it_handle_type_enum_t t;
  conf_assert_status(it_get_handle_type(ep, &t), IT_ERR_INVALID_HANDLE);
  it_context_t c;
  conf_assert_status(it_get_consumer_context(ep, &c), IT_ERR_INVALID_HANDLE);
  conf_buf_free(&b);
  conf_side_close(&s);
}

static void
test_stale_pz_evd_lmr(void)
{
  g_test_summary("Handles: freed PZ, EVD and LMR handles give IT_ERR_INVALID_PZ, "
                 "IT_ERR_INVALID_EVD and IT_ERR_INVALID_LMR from their query and free calls and "
                 "from the calls that use them");
  conf_side_t s;
  conf_side_open(&s, NULL);

  /* PZ */
  it_pz_handle_t pz;
  conf_ok(it_pz_create(s.ia, &pz));
  conf_ok(it_pz_free(pz));
  it_pz_param_t pp;
  conf_assert_status(it_pz_query(pz, IT_PZ_PARAM_ALL, &pp), IT_ERR_INVALID_PZ);
  conf_assert_status(it_pz_free(pz), IT_ERR_INVALID_PZ);
  unsigned char *mem = g_malloc0(8192);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_assert_status(it_lmr_create(pz, mem, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                   IT_LMR_FLAG_NONE, 0, &lmr, &ctx), IT_ERR_INVALID_PZ);
  it_ep_attributes_t a;
  conf_default_attr(&a);
  it_ep_handle_t ep;
  conf_assert_status(it_ep_rc_create(pz, s.dto, s.dto, s.cm, IT_EP_NO_FLAG, &a, &ep), IT_ERR_INVALID_PZ);

  /* EVD */
  it_evd_handle_t evd;
  conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1,
                        IT_NULL_HANDLE, &evd, NULL));
  conf_ok(it_evd_free(evd));
  it_evd_param_t ep_;
  it_event_t ev;
  size_t more;
  conf_assert_status(it_evd_query(evd, IT_EVD_PARAM_ALL, &ep_), IT_ERR_INVALID_EVD);
  conf_assert_status(it_evd_free(evd), IT_ERR_INVALID_EVD);
  conf_assert_status(it_evd_dequeue(evd, &ev), IT_ERR_INVALID_EVD);
  conf_assert_status(conf_evd_wait(evd, 0, &ev, &more), IT_ERR_INVALID_EVD);
  conf_assert_status(it_evd_post_se(evd, NULL), IT_ERR_INVALID_EVD);

  /* LMR */
  conf_ok(it_lmr_create(s.pz, mem, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                        IT_LMR_FLAG_NONE, 0, &lmr, &ctx));
  conf_ok(it_lmr_free(lmr));
  it_lmr_param_t lp;
  conf_assert_status(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &lp), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_free(lmr), IT_ERR_INVALID_LMR);
  memset(&lp, 0, sizeof(lp));
  lp.privs = IT_PRIV_LOCAL;
  conf_assert_status(it_lmr_modify(lmr, IT_LMR_PARAM_MEM_PRIV, &lp), IT_ERR_INVALID_LMR);
  it_lmr_triplet_t seg = { .lmr = lmr, .addr.abs = mem, .length = 64 };
  conf_assert_status(it_post_recv(s.ep, &seg, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_flush_to_mem(&seg, 1), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_refresh_from_mem(&seg, 1), IT_ERR_INVALID_LMR);

  /* The IA's own objects were not disturbed. */
  conf_ok(it_pz_query(s.pz, IT_PZ_PARAM_ALL, &pp));
  conf_assert_status(it_evd_dequeue(s.dto, &ev), IT_ERR_QUEUE_EMPTY);
  g_free(mem);
  conf_side_close(&s);
}

static void
test_garbage_handles(void)
{
  g_test_summary("Handles: garbage values ((void *) 1, 0xdeadbeef, a stack address, "
                 "IT_NULL_HANDLE) and handles of another kind are refused with the call's "
                 "handle error, never a crash; it_get_handle_type returns IT_ERR_INVALID_HANDLE");
  conf_side_t s;
  conf_side_open(&s, NULL);
  int on_stack = 42;
  void *garbage[] = { (void *) 1, (void *) (uintptr_t) 0xdeadbeef, &on_stack, IT_NULL_HANDLE };
  for (size_t i = 0; i < G_N_ELEMENTS(garbage); i++) {
    void *h = garbage[i];
    it_ep_param_t ep_p;
    it_pz_param_t pz_p;
    it_evd_param_t evd_p;
    it_lmr_param_t lmr_p;
    it_listen_param_t l_p;
    it_ia_info_t *info = NULL;
    it_event_t ev;
    it_handle_type_enum_t t;
    it_context_t c = { .index = 1 };
    conf_assert_status(it_ep_query((it_ep_handle_t) h, IT_EP_PARAM_ALL, &ep_p), IT_ERR_INVALID_EP);
    conf_assert_status(it_ep_free((it_ep_handle_t) h), IT_ERR_INVALID_EP);
    conf_assert_status(it_pz_query((it_pz_handle_t) h, IT_PZ_PARAM_ALL, &pz_p), IT_ERR_INVALID_PZ);
    conf_assert_status(it_pz_free((it_pz_handle_t) h), IT_ERR_INVALID_PZ);
    conf_assert_status(it_evd_query((it_evd_handle_t) h, IT_EVD_PARAM_ALL, &evd_p), IT_ERR_INVALID_EVD);
    conf_assert_status(it_evd_dequeue((it_evd_handle_t) h, &ev), IT_ERR_INVALID_EVD);
    conf_assert_status(it_lmr_query((it_lmr_handle_t) h, IT_LMR_PARAM_ALL, &lmr_p), IT_ERR_INVALID_LMR);
    conf_assert_status(it_listen_query((it_listen_handle_t) h, IT_LISTEN_PARAM_ALL, &l_p),
                       IT_ERR_INVALID_LISTEN);
    conf_assert_status(it_ia_query((it_ia_handle_t) h, &info), IT_ERR_INVALID_IA);
    conf_assert_status(it_ia_free((it_ia_handle_t) h), IT_ERR_INVALID_IA);
    conf_assert_status(it_get_handle_type(h, &t), IT_ERR_INVALID_HANDLE);
    conf_assert_status(it_set_consumer_context(h, c), IT_ERR_INVALID_HANDLE);
    conf_assert_status(it_get_consumer_context(h, &c), IT_ERR_INVALID_HANDLE);
  }
  g_assert_cmpint(on_stack, ==, 42);

  /* Handles of another kind where an EP is expected. */
  it_handle_t others[] = { s.ia, s.pz, s.dto, s.cm };
  for (size_t i = 0; i < G_N_ELEMENTS(others); i++) {
    it_ep_param_t ep_p;
    conf_assert_status(it_ep_query((it_ep_handle_t) others[i], IT_EP_PARAM_ALL, &ep_p), IT_ERR_INVALID_EP);
    conf_assert_status(it_ep_free((it_ep_handle_t) others[i]), IT_ERR_INVALID_EP);
    conf_assert_status(it_ep_disconnect((it_ep_handle_t) others[i], NULL, 0), IT_ERR_INVALID_EP);
  }
  /* ... and the other way round. */
  it_pz_param_t pz_p;
  conf_assert_status(it_pz_query((it_pz_handle_t) s.ep, IT_PZ_PARAM_ALL, &pz_p), IT_ERR_INVALID_PZ);
  conf_assert_status(it_evd_free((it_evd_handle_t) s.ep), IT_ERR_INVALID_EVD);
  conf_assert_status(it_ia_free((it_ia_handle_t) s.pz), IT_ERR_INVALID_IA);
  /* None of the refused calls freed anything. */
  it_ep_param_t ep_p;
  conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &ep_p));
  conf_ok(it_pz_query(s.pz, IT_PZ_PARAM_ALL, &pz_p));
  it_handle_type_enum_t t;
  conf_ok(it_get_handle_type(s.dto, &t));
  g_assert_cmpint(t, ==, IT_HANDLE_TYPE_EVD);
  conf_side_close(&s);
}

static void
test_handle_reuse(void)
{
  g_test_summary("Handles: a freed EP handle stays invalid after new EPs are created in its "
                 "place, and the new handles differ from it (generation check)");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_ep_attributes_t a;
  conf_default_attr(&a);
  it_ep_handle_t old = s.ep;
  conf_ok(it_ep_free(old));
  s.ep = IT_NULL_HANDLE;
  it_ep_handle_t fresh[8];
  for (size_t i = 0; i < G_N_ELEMENTS(fresh); i++) {
    conf_ok(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_NO_FLAG, &a, &fresh[i]));
    g_assert_true(fresh[i] != old);
    it_ep_param_t p;
    conf_assert_status(it_ep_query(old, IT_EP_PARAM_STATE, &p), IT_ERR_INVALID_EP);
    conf_ok(it_ep_query(fresh[i], IT_EP_PARAM_STATE, &p));
    /* Free and re-create, so the same slot is reused if the library recycles slots. */
    if (i % 2 == 0) {
      it_ep_handle_t gone = fresh[i];
      conf_ok(it_ep_free(gone));
      conf_ok(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_NO_FLAG, &a, &fresh[i]));
      g_assert_true(fresh[i] != gone);
      conf_assert_status(it_ep_query(gone, IT_EP_PARAM_STATE, &p), IT_ERR_INVALID_EP);
    }
  }
  it_handle_type_enum_t t;
  conf_assert_status(it_get_handle_type(old, &t), IT_ERR_INVALID_HANDLE);
  conf_assert_status(it_ep_free(old), IT_ERR_INVALID_EP);
  for (size_t i = 0; i < G_N_ELEMENTS(fresh); i++)
    conf_ok(it_ep_free(fresh[i]));
  conf_side_close(&s);
}

/* ---------------------------------------------------------------------- */
/* Endpoints                                                               */
/* ---------------------------------------------------------------------- */

static void
test_ep_query(void)
{
  g_test_summary("EP: it_ep_query of a fresh RC EP returns the attributes it was created with, "
                 "state UNCONNECTED, RC service, its IA, PZ and three EVDs");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t recv;
  conf_ok(it_evd_create(s.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE,
                        &recv, NULL));
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.max_dto_payload_size = 65536;
  a.max_request_dtos = 17;
  a.max_recv_dtos = 19;
  a.max_send_segments = 3;
  a.max_recv_segments = 2;
  a.srv.rc.rdma_read_enable = IT_FALSE;
  a.srv.rc.rdma_write_enable = IT_TRUE;
  a.srv.rc.max_rdma_read_segments = 1;
  a.srv.rc.max_rdma_write_segments = 2;
  a.srv.rc.rdma_read_ird = 2;
  a.srv.rc.rdma_read_ord = 3;
  it_ep_handle_t ep;
  conf_ok(it_ep_rc_create(s.pz, s.dto, recv, s.cm, IT_EP_NO_FLAG, &a, &ep));

  it_ep_param_t p;
  memset(&p, 0xa5, sizeof(p));
  conf_ok(it_ep_query(ep, IT_EP_PARAM_ALL, &p));
  g_assert_true(p.ia == s.ia);
  g_assert_true(p.pz == s.pz);
  g_assert_true(p.request_sevd == s.dto);
  g_assert_true(p.recv_sevd == recv);
  g_assert_true(p.connect_sevd == s.cm);
  g_assert_cmpint(p.ep_state.rc, ==, IT_EP_STATE_UNCONNECTED);
  g_assert_cmpint(p.service_type, ==, IT_RC_SERVICE);
  g_assert_cmpuint(p.attr.max_dto_payload_size, ==, a.max_dto_payload_size);
  g_assert_cmpuint(p.attr.max_request_dtos, ==, a.max_request_dtos);
  g_assert_cmpuint(p.attr.max_recv_dtos, ==, a.max_recv_dtos);
  g_assert_cmpuint(p.attr.max_send_segments, ==, a.max_send_segments);
  g_assert_cmpuint(p.attr.max_recv_segments, ==, a.max_recv_segments);
  g_assert_cmpint(p.attr.srv.rc.rdma_read_enable, ==, IT_FALSE);
  g_assert_cmpint(p.attr.srv.rc.rdma_write_enable, ==, IT_TRUE);
  g_assert_cmpuint(p.attr.srv.rc.max_rdma_read_segments, ==, 1);
  g_assert_cmpuint(p.attr.srv.rc.max_rdma_write_segments, ==, 2);
  g_assert_cmpuint(p.attr.srv.rc.rdma_read_ird, ==, 2);
  g_assert_cmpuint(p.attr.srv.rc.rdma_read_ord, ==, 3);
  g_assert_true(p.attr.srv.rc.srq == IT_NULL_HANDLE);

  /* Single fields. */
  memset(&p, 0, sizeof(p));
  conf_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &p));
  g_assert_cmpint(p.ep_state.rc, ==, IT_EP_STATE_UNCONNECTED);
  conf_ok(it_ep_query(ep, IT_EP_PARAM_RECV_SEVD, &p));
  g_assert_true(p.recv_sevd == recv);

  /* The EVDs are bound while the EP lives. */
  conf_assert_status(it_evd_free(recv), IT_ERR_EVD_BUSY);
  conf_ok(it_ep_free(ep));
  conf_ok(it_evd_free(recv));
  conf_side_close(&s);
}

static void
test_ep_modify(void)
{
  g_test_summary("EP: it_ep_modify changes the RDMA enables, IRD and ORD of an UNCONNECTED EP "
                 "and it_ep_query shows them; a mask naming a field that cannot change returns "
                 "IT_ERR_INVALID_MASK and changes nothing");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_ia_info_t *info = conf_info(&s);
  gboolean enables = info->ep_rdma_enables_modifiable;
  gboolean ird_mod = info->rdma_read_ird_modifiable;
  it_ia_info_free(info);

  it_ep_param_t p;
  it_ep_attributes_t m;
  memset(&m, 0, sizeof(m));
  if (enables) {
    m.srv.rc.rdma_read_enable = IT_FALSE;
    m.srv.rc.rdma_write_enable = IT_FALSE;
    conf_ok(it_ep_modify(s.ep, IT_EP_PARAM_RDMA_RD_ENABLE | IT_EP_PARAM_RDMA_WR_ENABLE, &m));
    conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
    g_assert_cmpint(p.attr.srv.rc.rdma_read_enable, ==, IT_FALSE);
    g_assert_cmpint(p.attr.srv.rc.rdma_write_enable, ==, IT_FALSE);
    m.srv.rc.rdma_write_enable = IT_TRUE;
    conf_ok(it_ep_modify(s.ep, IT_EP_PARAM_RDMA_WR_ENABLE, &m));
    conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
    g_assert_cmpint(p.attr.srv.rc.rdma_read_enable, ==, IT_FALSE);
    g_assert_cmpint(p.attr.srv.rc.rdma_write_enable, ==, IT_TRUE);
  }
  if (ird_mod) {
    /* Lower both (ORD may not be increasable). */
    m.srv.rc.rdma_read_ird = 2;
    m.srv.rc.rdma_read_ord = 1;
    conf_ok(it_ep_modify(s.ep, IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD, &m));
    conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
    g_assert_cmpuint(p.attr.srv.rc.rdma_read_ird, ==, 2);
    g_assert_cmpuint(p.attr.srv.rc.rdma_read_ord, ==, 1);
  }

  conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
  it_ep_attributes_t before = p.attr;
  it_ep_attributes_t big;
  conf_default_attr(&big);
  big.max_send_segments = 1;
  big.max_request_dtos = 3;
  conf_assert_status(it_ep_modify(s.ep, IT_EP_PARAM_MAX_SEND_SEG, &big), IT_ERR_INVALID_MASK);
  conf_assert_status(it_ep_modify(s.ep, IT_EP_PARAM_MAX_REQ_DTO | IT_EP_PARAM_MAX_IRD, &big),
                     IT_ERR_INVALID_MASK);
  conf_assert_status(it_ep_modify(s.ep, IT_EP_PARAM_PZ, &big), IT_ERR_INVALID_MASK);
  conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
  g_assert_cmpuint(p.attr.max_send_segments, ==, before.max_send_segments);
  g_assert_cmpuint(p.attr.max_request_dtos, ==, before.max_request_dtos);
  g_assert_cmpuint(p.attr.srv.rc.rdma_read_ird, ==, before.srv.rc.rdma_read_ird);
  conf_side_close(&s);
}

static void
test_ep_create_errors(void)
{
  g_test_summary("EP: it_ep_rc_create with max_send_segments beyond the device returns "
                 "IT_ERR_RESOURCE_SSEG; with a request EVD of another IA or of the CM_MSG "
                 "stream it returns IT_ERR_INVALID_REQ_EVD");
  conf_side_t s, other;
  conf_side_open(&s, NULL);
  conf_side_open(&other, NULL);
  it_ep_attributes_t a;
  conf_default_attr(&a);
  it_ep_handle_t ep = IT_NULL_HANDLE;

  a.max_send_segments = (size_t) 1 << 24;
  conf_assert_status(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_NO_FLAG, &a, &ep),
                     IT_ERR_RESOURCE_SSEG);
  conf_default_attr(&a);
  conf_assert_status(it_ep_rc_create(s.pz, other.dto, s.dto, s.cm, IT_EP_NO_FLAG, &a, &ep),
                     IT_ERR_INVALID_REQ_EVD);
  conf_assert_status(it_ep_rc_create(s.pz, s.cm, s.dto, s.cm, IT_EP_NO_FLAG, &a, &ep),
                     IT_ERR_INVALID_REQ_EVD);
  g_assert_true(ep == IT_NULL_HANDLE);
  /* Nothing was left bound to the EVDs by the failures. */
  conf_ok(it_ep_free(other.ep));
  other.ep = IT_NULL_HANDLE;
  conf_ok(it_evd_free(other.dto));
  other.dto = IT_NULL_HANDLE;
  conf_side_close(&other);
  conf_side_close(&s);
}

/* ---------------------------------------------------------------------- */
/* Addresses and byte order                                                */
/* ---------------------------------------------------------------------- */

static void
test_convert_net_addr(void)
{
  g_test_summary("Utilities: it_convert_net_addr turns an IPv4 address into the IPv4-mapped "
                 "GID ::ffff:a.b.c.d and back; a GID with no IPv4 form gives "
                 "IT_ERR_INVALID_CONVERSION");
  it_net_addr_t v4 = { .addr_type = IT_IPV4 };
  g_assert_cmpint(inet_pton(AF_INET, "192.0.2.77", &v4.addr.ipv4), ==, 1);
  it_net_addr_t gid, back;
  memset(&gid, 0, sizeof(gid));
  memset(&back, 0, sizeof(back));
  conf_ok(it_convert_net_addr(&v4, IT_IB_GID, &gid));
  g_assert_cmpint(gid.addr_type, ==, IT_IB_GID);
  struct in6_addr want;
  g_assert_cmpint(inet_pton(AF_INET6, "::ffff:192.0.2.77", &want), ==, 1);
  g_assert_cmpmem(&gid.addr.gid, sizeof(want), &want, sizeof(want));
  conf_ok(it_convert_net_addr(&gid, IT_IPV4, &back));
  g_assert_cmpint(back.addr_type, ==, IT_IPV4);
  g_assert_cmphex(back.addr.ipv4.s_addr, ==, v4.addr.ipv4.s_addr);

  it_net_addr_t ll = { .addr_type = IT_IB_GID };
  g_assert_cmpint(inet_pton(AF_INET6, "fe80::2:c903:1:1", &ll.addr.gid), ==, 1);
  conf_assert_status(it_convert_net_addr(&ll, IT_IPV4, &back), IT_ERR_INVALID_CONVERSION);
  g_assert_cmpint(back.addr_type, ==, IT_IPV4);
  g_assert_cmphex(back.addr.ipv4.s_addr, ==, v4.addr.ipv4.s_addr);
}

/* @a as the GID a path holds for it (an IPv4 address IPv4-mapped). */
static struct in6_addr
addr_gid(const it_net_addr_t *a)
{
  it_net_addr_t g;
  conf_ok(it_convert_net_addr(a, IT_IB_GID, &g));
  return g.addr.gid;
}

/* Whether the path's local end @local (a GID, or an IPv4 / IPv6 address
 * as @type says) is one of the addresses @info lists for spigot 0. */
static gboolean
listed(const it_ia_info_t *info, it_net_addr_type_t type, const void *local)
{
  for (size_t i = 0; i < info->spigot_info[0].num_net_addr; i++) {
    const it_net_addr_t *a = &info->spigot_info[0].net_addr[i];
    if (type == IT_IB_GID) {
      struct in6_addr g = addr_gid(a);
      if (memcmp(&g, local, sizeof(g)) == 0)
        return TRUE;
    } else if (a->addr_type == type &&
               memcmp(type == IT_IPV4 ? (const void *) &a->addr.ipv4 : (const void *) &a->addr.ipv6,
                      local, type == IT_IPV4 ? sizeof(struct in_addr) : sizeof(struct in6_addr)) == 0) {
      return TRUE;
    }
  }
  return FALSE;
}

static void
test_pathinfo_local(void)
{
  g_test_summary("Paths: it_get_pathinfo to each address the IA lists for spigot 0 gives a path "
                 "on spigot 0 whose remote end is that address and whose local end is one of the "
                 "IA's own addresses (laddr of the same IP version on iWARP, local_port_gid on "
                 "InfiniBand), never a loopback address the IA does not list");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_ia_info_t *info = conf_info(&s);
  gboolean iwarp = info->transport_type == IT_IWARP_TCP_TRANSPORT;
  g_assert_cmpuint(info->num_spigots, >=, 1);
  for (size_t i = 0; i < info->spigot_info[0].num_net_addr; i++) {
    const it_net_addr_t *to = &info->spigot_info[0].net_addr[i];
    g_autofree char *to_s = conf_addr_str(to);
    it_path_t path;
    conf_path_to(&s, to, &path);
    g_assert_cmpuint(path.spigot_id, ==, 0);
    if (iwarp) {
      const it_iwarp_net_endpoint_t *iw = &path.remote.iwarp;
      gboolean v4 = to->addr_type == IT_IPV4;
      g_assert_cmpint(iw->ip_vers, ==, v4 ? IT_IP_VERS_IPV4 : IT_IP_VERS_IPV6);
      if (v4)
        g_assert_cmphex(iw->raddr.ipv4.s_addr, ==, to->addr.ipv4.s_addr);
      else
        g_assert_cmpmem(&iw->raddr.ipv6, sizeof(iw->raddr.ipv6), &to->addr.ipv6, sizeof(to->addr.ipv6));
      if (!listed(info, to->addr_type, v4 ? (const void *) &iw->laddr.ipv4 : (const void *) &iw->laddr.ipv6)) {
        char l[INET6_ADDRSTRLEN];
        inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? (const void *) &iw->laddr.ipv4 : (const void *) &iw->laddr.ipv6,
                  l, sizeof(l));
        g_error("the path from IA '%s' to %s starts at %s, which the IA does not list for spigot 0",
                conf_ia_name(), to_s, l);
      }
    } else {
      const it_ib_net_endpoint_t *ib = &path.remote.ib;
      struct in6_addr want = addr_gid(to);
      g_assert_cmpmem(&ib->remote_port_gid, sizeof(want), &want, sizeof(want));
      if (!listed(info, IT_IB_GID, &ib->local_port_gid)) {
        char l[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &ib->local_port_gid, l, sizeof(l));
        g_error("the path from IA '%s' to %s starts at GID %s, which is none of the addresses the "
                "IA lists for spigot 0", conf_ia_name(), to_s, l);
      }
    }
  }
  it_ia_info_free(info);
  conf_side_close(&s);
}

static void
test_hton64(void)
{
  g_test_summary("Utilities: it_hton64 puts the most significant byte first in memory and "
                 "it_ntoh64 undoes it");
  const uint64_t x = UINT64_C(0x0102030405060708);
  uint64_t n = it_hton64(x);
  const unsigned char want[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  g_assert_cmpmem(&n, sizeof(n), want, sizeof(want));
  g_assert_cmphex(it_ntoh64(n), ==, x);
  const uint64_t vals[] = { 0, 1, UINT64_MAX, UINT64_C(0x8000000000000000), UINT64_C(0x00ff00ff00ff00ff) };
  for (size_t i = 0; i < G_N_ELEMENTS(vals); i++) {
    g_assert_cmphex(it_ntoh64(it_hton64(vals[i])), ==, vals[i]);
    g_assert_cmphex(it_hton64(vals[i]), ==, it_ntoh64(vals[i]));
  }
}

/* ---------------------------------------------------------------------- */
/* Unsupported calls and the table of entry points                         */
/* ---------------------------------------------------------------------- */

typedef struct {
  conf_side_t *s;
  conf_buf_t *b;
} probe_ctx_t;

typedef it_status_t (*probe_fn)(probe_ctx_t *);

#define PROBE(fn, ...) static it_status_t probe_##fn(probe_ctx_t *c) { (void) c; __VA_ARGS__ }

PROBE(it_ep_ud_create, {
  it_ep_attributes_t a;
  conf_default_attr(&a);
  it_ep_handle_t ep;
  return it_ep_ud_create(c->s->pz, c->s->dto, c->s->dto, &a, 0, &ep);
})
PROBE(it_post_sendto, {
  it_lmr_triplet_t seg = conf_seg(c->b, 0, 16);
  it_dg_remote_ep_addr_t dst;
  memset(&dst, 0, sizeof(dst));
  return it_post_sendto(c->s->ep, &seg, 1, 1, IT_COMPLETION_FLAG, &dst);
})
PROBE(it_post_recvfrom, {
  it_lmr_triplet_t seg = conf_seg(c->b, 0, 16);
  return it_post_recvfrom(c->s->ep, &seg, 1, 1, IT_COMPLETION_FLAG);
})
PROBE(it_address_handle_create, {
  it_path_t path;
  conf_path(c->s, &path);
  it_addr_handle_t ah;
  return it_address_handle_create(c->s->pz, &path, IT_AH_PATH_COMPLETE, &ah);
})
PROBE(it_address_handle_free, { return it_address_handle_free(IT_NULL_HANDLE); })
PROBE(it_address_handle_modify, {
  it_addr_param_t p;
  memset(&p, 0, sizeof(p));
  return it_address_handle_modify(IT_NULL_HANDLE, IT_ADDR_PARAM_PATH, &p);
})
PROBE(it_address_handle_query, {
  it_addr_param_t p;
  return it_address_handle_query(IT_NULL_HANDLE, IT_ADDR_PARAM_ALL, &p);
})
PROBE(it_ud_service_request_handle_create, {
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(4791);
  it_path_t path;
  conf_path(c->s, &path);
  it_ud_svc_req_handle_t h;
  return it_ud_service_request_handle_create(&q, c->s->cm, &path, NULL, 0, &h);
})
PROBE(it_ud_service_request_handle_free, { return it_ud_service_request_handle_free(IT_NULL_HANDLE); })
PROBE(it_ud_service_request_handle_query, {
  it_ud_svc_req_param_t p;
  return it_ud_service_request_handle_query(IT_NULL_HANDLE, IT_UD_PARAM_ALL, &p);
})
PROBE(it_ud_service_request, { return it_ud_service_request(IT_NULL_HANDLE); })
PROBE(it_ud_service_reply, {
  it_remote_ep_info_t info = { .ud_ep_id = 1, .ud_ep_key = 2 };
  return it_ud_service_reply(1, IT_UD_SVC_EP_INFO_VALID, info, NULL, 0);
})
PROBE(it_handoff, {
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(4791);
  return it_handoff(&q, 0, 1);
})
PROBE(it_socket_convert, { return it_socket_convert(-1, c->s->ep, IT_SC_DEFAULT, NULL, 0); })
PROBE(it_srq_create, {
  it_srq_handle_t srq;
  return it_srq_create(c->s->pz, 1, 16, &srq);
})
PROBE(it_srq_free, { return it_srq_free(IT_NULL_HANDLE); })
PROBE(it_srq_modify, {
  it_srq_param_t p;
  memset(&p, 0, sizeof(p));
  p.low_watermark = 1;
  return it_srq_modify(IT_NULL_HANDLE, IT_SRQ_PARAM_LOW_WATERMARK, &p);
})
PROBE(it_srq_query, {
  it_srq_param_t p;
  return it_srq_query(IT_NULL_HANDLE, IT_SRQ_PARAM_ALL, &p);
})
PROBE(it_lmr_create_unlinked, {
  it_lmr_handle_t l;
  return it_lmr_create_unlinked(c->s->pz, 4, IT_LMR_FLAG_NONE, 0, &l);
})
PROBE(it_lmr_link, {
  it_rmr_context_t ctx;
  return it_lmr_link(c->b->lmr, c->b->data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                     c->s->ep, 1, IT_COMPLETION_FLAG, &ctx);
})
PROBE(it_lmr_unlink, { return it_lmr_unlink(c->b->lmr, c->s->ep, 1, IT_COMPLETION_FLAG); })
PROBE(it_mem_map, {
  it_io_addr_t io;
  size_t len;
  return it_mem_map(c->s->ia, c->b->data, 0, 4096, &io, &len);
})
PROBE(it_mem_unmap, { return it_mem_unmap(c->s->ia, NULL, 4096); })
PROBE(it_rmr_create10, {
  it_rmr_handle_t r;
  return it_rmr_create10(c->s->pz, &r);
})
PROBE(it_rmr_create20, {
  it_rmr_handle_t r;
  return it_rmr_create20(c->s->pz, IT_RMR_TYPE_DEFAULT, &r);
})
PROBE(it_rmr_free, { return it_rmr_free(IT_NULL_HANDLE); })
PROBE(it_rmr_query, {
  it_rmr_param_t p;
  return it_rmr_query(IT_NULL_HANDLE, IT_RMR_PARAM_ALL, &p);
})
PROBE(it_rmr_bind10, {
  it_rmr_context_t ctx;
  return it_rmr_bind10(IT_NULL_HANDLE, c->b->lmr, c->b->data, 64, IT_PRIV_REMOTE, c->s->ep, 1,
                       IT_COMPLETION_FLAG, &ctx);
})
PROBE(it_rmr_link, {
  it_rmr_context_t ctx;
  return it_rmr_link(IT_NULL_HANDLE, c->b->lmr, c->b->data, 64, IT_ADDR_MODE_ABSOLUTE,
                     IT_PRIV_REMOTE, c->s->ep, 1, IT_COMPLETION_FLAG, &ctx);
})
PROBE(it_rmr_unlink, { return it_rmr_unlink(IT_NULL_HANDLE, c->s->ep, 1, IT_COMPLETION_FLAG); })
PROBE(it_post_send_and_unlink, {
  it_lmr_triplet_t seg = conf_seg(c->b, 0, 16);
  return it_post_send_and_unlink(c->s->ep, &seg, 1, 1, IT_COMPLETION_FLAG, 0);
})
PROBE(it_post_rdma_read_to_rmr, {
  it_rmr_triplet_t seg;
  memset(&seg, 0, sizeof(seg));
  seg.length = 16;
  return it_post_rdma_read_to_rmr(c->s->ep, &seg, 1, 1, IT_COMPLETION_FLAG, 0, 0);
})

static const struct {
  const char *name;
  probe_fn fn;
} probes[] = {
#define P(fn) { #fn, probe_##fn }
  P(it_ep_ud_create), P(it_post_sendto), P(it_post_recvfrom),
  P(it_address_handle_create), P(it_address_handle_free), P(it_address_handle_modify),
  P(it_address_handle_query), P(it_ud_service_request_handle_create),
  P(it_ud_service_request_handle_free), P(it_ud_service_request_handle_query),
  P(it_ud_service_request), P(it_ud_service_reply), P(it_handoff), P(it_socket_convert),
  P(it_srq_create), P(it_srq_free), P(it_srq_modify), P(it_srq_query),
  P(it_lmr_create_unlinked), P(it_lmr_link), P(it_lmr_unlink), P(it_mem_map), P(it_mem_unmap),
  P(it_rmr_create10), P(it_rmr_create20), P(it_rmr_free), P(it_rmr_query), P(it_rmr_bind10),
  P(it_rmr_link), P(it_rmr_unlink), P(it_post_send_and_unlink), P(it_post_rdma_read_to_rmr),
#undef P
};

static gboolean
call_built(const char *name)
{
  for (size_t i = 0; i < itx_call_count(); i++)
    if (strcmp(itx_call_get(i)->name, name) == 0)
      return itx_call_get(i)->supported;
  g_error("%s is not in the table of calls", name);
  return FALSE;
}

static void
test_unsupported_calls(void)
{
  g_test_summary("Utilities: every call itx_call_get marks unsupported returns "
                 "IT_ERR_OP_NOT_SUPPORTED for plausible arguments and leaves the objects it "
                 "was given intact");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t b;
  conf_buf_new(&s, &b, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  probe_ctx_t c = { &s, &b };
  size_t unsupported = 0;
  for (size_t i = 0; i < itx_call_count(); i++) {
    const itx_call_info_t *ci = itx_call_get(i);
    g_assert_nonnull(ci);
    if (ci->supported)
      continue;
    unsupported++;
    probe_fn fn = NULL;
    for (size_t k = 0; k < G_N_ELEMENTS(probes); k++)
      if (strcmp(probes[k].name, ci->name) == 0)
        fn = probes[k].fn;
    if (fn == NULL)
      g_error("%s is marked unsupported but this suite has no probe for it", ci->name);
    it_status_t st = fn(&c);
    if (st != IT_ERR_OP_NOT_SUPPORTED)
      g_error("%s (marked unsupported) returned %s, expected IT_ERR_OP_NOT_SUPPORTED",
              ci->name, itx_status_name(st));
  }
  /* Since IT-API 2.1's last calls were built, the table may mark none. */
  g_test_message("%zu calls marked unsupported", unsupported);

  /* The named five, called directly, while the table says they are not
   * built (each gets its own tests once it is). */
  it_srq_handle_t srq;
  if (!call_built("it_srq_create"))
    conf_assert_status(it_srq_create(s.pz, 1, 16, &srq), IT_ERR_OP_NOT_SUPPORTED);
  it_rmr_handle_t rmr;
  if (!call_built("it_rmr_create20"))
    conf_assert_status(it_rmr_create20(s.pz, IT_RMR_TYPE_NARROW, &rmr), IT_ERR_OP_NOT_SUPPORTED);
  it_ep_attributes_t a;
  conf_default_attr(&a);
  it_ep_handle_t ud;
  if (!call_built("it_ep_ud_create"))
    conf_assert_status(it_ep_ud_create(s.pz, s.dto, s.dto, &a, 0, &ud), IT_ERR_OP_NOT_SUPPORTED);
  if (!call_built("it_socket_convert"))
    conf_assert_status(it_socket_convert(0, s.ep, IT_SC_NO_REQ_REP, NULL, 0), IT_ERR_OP_NOT_SUPPORTED);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(18515);
  if (!call_built("it_handoff"))
    conf_assert_status(it_handoff(&q, 0, 7), IT_ERR_OP_NOT_SUPPORTED);

  /* The objects handed to the probes are intact. */
  it_ep_param_t p;
  conf_ok(it_ep_query(s.ep, IT_EP_PARAM_ALL, &p));
  g_assert_cmpint(p.ep_state.rc, ==, IT_EP_STATE_UNCONNECTED);
  it_lmr_param_t lp;
  conf_ok(it_lmr_query(b.lmr, IT_LMR_PARAM_ALL, &lp));
  g_assert_true(lp.addr == b.data);
  conf_buf_free(&b);
  conf_side_close(&s);
}

static void
test_call_table(void)
{
  g_test_summary("Utilities: the itx_call table lists exactly 83 IT-API entry points, each "
                 "with a unique it_ name and an area; past the end itx_call_get returns NULL");
  g_assert_cmpuint(itx_call_count(), ==, 83);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (size_t i = 0; i < itx_call_count(); i++) {
    const itx_call_info_t *ci = itx_call_get(i);
    g_assert_nonnull(ci);
    g_assert_nonnull(ci->name);
    g_assert_nonnull(ci->area);
    g_assert_true(g_str_has_prefix(ci->name, "it_"));
    g_assert_cmpuint(strlen(ci->area), >, 0);
    if (!g_hash_table_add(seen, (gpointer) ci->name))
      g_error("%s is listed twice", ci->name);
  }
  g_assert_cmpuint(g_hash_table_size(seen), ==, 83);
  g_assert_null(itx_call_get(itx_call_count()));
  g_assert_null(itx_call_get((size_t) -1));
  /* A few calls the suite relies on are marked implemented. */
  static const char *const needed[] = { "it_ia_create", "it_ep_connect", "it_post_send",
                                        "it_post_recv", "it_get_handle_type" };
  for (size_t k = 0; k < G_N_ELEMENTS(needed); k++) {
    gboolean found = FALSE;
    for (size_t i = 0; i < itx_call_count(); i++) {
      const itx_call_info_t *ci = itx_call_get(i);
      if (strcmp(ci->name, needed[k]) == 0) {
        found = TRUE;
        g_assert_cmpint(ci->supported, ==, IT_TRUE);
      }
    }
    if (!found)
      g_error("%s is missing from the table", needed[k]);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/ia/interface-list", test_interface_list);
  g_test_add_func("/conformance/ia/create-versions", test_ia_create_versions);
  g_test_add_func("/conformance/ia/query", test_ia_query);
  g_test_add_func("/conformance/ia/pz/busy", test_pz_busy);
  g_test_add_func("/conformance/ia/handle/consumer-context", test_consumer_context);
  g_test_add_func("/conformance/ia/handle/type", test_handle_type);
  g_test_add_func("/conformance/ia/handle/stale-ep", test_stale_ep);
  g_test_add_func("/conformance/ia/handle/stale-pz-evd-lmr", test_stale_pz_evd_lmr);
  g_test_add_func("/conformance/ia/handle/garbage", test_garbage_handles);
  g_test_add_func("/conformance/ia/handle/reuse", test_handle_reuse);
  g_test_add_func("/conformance/ia/ep/query", test_ep_query);
  g_test_add_func("/conformance/ia/ep/modify", test_ep_modify);
  g_test_add_func("/conformance/ia/ep/create-errors", test_ep_create_errors);
  g_test_add_func("/conformance/ia/util/convert-net-addr", test_convert_net_addr);
  g_test_add_func("/conformance/ia/util/pathinfo-local", test_pathinfo_local);
  g_test_add_func("/conformance/ia/util/hton64", test_hton64);
  g_test_add_func("/conformance/ia/util/unsupported-calls", test_unsupported_calls);
  g_test_add_func("/conformance/ia/util/call-table", test_call_table);
  return g_test_run();
}
