/*
 * Conformance suite fixture.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"

const char *
conf_ia_name(void)
{
  static char name[IT_INTERFACE_NAME_SIZE];
  const char *env = g_getenv("ITAPI_CONF_IA");
  if (env != NULL && *env != '\0')
    return env;
  if (name[0] == '\0') {
    it_interface_t ifs[16];
    size_t n = G_N_ELEMENTS(ifs), total = 0;
    it_interface_list(ifs, &n, &total);
    if (n == 0)
      g_error("no IT-API interface to test; run itapi-info to see refused providers");
    g_strlcpy(name, ifs[0].name, sizeof(name));
  }
  return name;
}

size_t
conf_env_count(const char *name, size_t def)
{
  const char *v = g_getenv(name);
  return v != NULL && *v != '\0' ? (size_t) g_ascii_strtoull(v, NULL, 10) : def;
}

unsigned
conf_beside_rounds(void)
{
  return (unsigned) MAX(MIN(conf_env_count("ITAPI_BESIDE_ROUNDS", 8), 1000), 1);
}

gint64
conf_wait_us(void)
{
  static gsize once;
  static gint64 us;
  if (g_once_init_enter(&once)) {
    us = (gint64) MAX(MIN(conf_env_count("ITAPI_CONF_WAIT_S", 5), 3600), 1) * G_USEC_PER_SEC;
    g_once_init_leave(&once, 1);
  }
  return us;
}

void
conf_default_attr(it_ep_attributes_t *a)
{
  memset(a, 0, sizeof(*a));
  a->max_dto_payload_size = 1 << 20;
  a->max_request_dtos = 64;
  a->max_recv_dtos = 64;
  a->max_send_segments = 4;
  a->max_recv_segments = 4;
  a->srv.rc.rdma_read_enable = IT_TRUE;
  a->srv.rc.rdma_write_enable = IT_TRUE;
  a->srv.rc.max_rdma_read_segments = 1;
  a->srv.rc.max_rdma_write_segments = 4;
  a->srv.rc.rdma_read_ird = 4;
  a->srv.rc.rdma_read_ord = 4;
}

void
conf_side_open(conf_side_t *s, const it_ep_attributes_t *attr)
{
  conf_side_open_on(s, conf_ia_name(), attr);
}

void
conf_side_open_on(conf_side_t *s, const char *iface, const it_ep_attributes_t *attr)
{
  it_ep_attributes_t def;
  memset(s, 0, sizeof(*s));
  conf_ok(it_ia_create(iface, 2, 1, &s->ia));
  conf_ok(it_pz_create(s->ia, &s->pz));
  conf_ok(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 256, 1,
                        IT_NULL_HANDLE, &s->dto, NULL));
  conf_ok(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1,
                        IT_NULL_HANDLE, &s->cm, NULL));
  conf_ok(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1,
                        IT_NULL_HANDLE, &s->req, NULL));
  conf_ok(it_evd_create(s->ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1,
                        IT_NULL_HANDLE, &s->aff, NULL));
  if (attr == NULL) {
    conf_default_attr(&def);
    attr = &def;
  }
  conf_ok(it_ep_rc_create(s->pz, s->dto, s->dto, s->cm, IT_EP_NO_FLAG, attr, &s->ep));
}

void
conf_side_close(conf_side_t *s)
{
  if (s->ia != IT_NULL_HANDLE)
    conf_ok(it_ia_free(s->ia));
  memset(s, 0, sizeof(*s));
}

void
conf_pair_open(conf_pair_t *p)
{
  conf_pair_open2(p, NULL, NULL);
}

void
conf_pair_open2(conf_pair_t *p, const it_ep_attributes_t *aa, const it_ep_attributes_t *pa)
{
  memset(p, 0, sizeof(*p));
  conf_side_open(&p->a, aa);
  conf_side_open(&p->p, pa);
  p->qual.type = IT_IANA_PORT;
  conf_ok(it_listen_create(p->p.ia, 0, p->p.req, IT_LISTEN_NO_FLAG, &p->qual, &p->lh));
  g_assert_cmpint(p->qual.type, ==, IT_IANA_PORT);
  g_assert_cmpuint(ntohs(p->qual.conn_qual.port), !=, 0);
}

gboolean
conf_self_addr_of(conf_side_t *s, it_net_addr_type_t type, it_net_addr_t *out)
{
  it_ia_info_t *info = conf_info(s);
  gboolean found = FALSE;
  for (size_t i = 0; !found && info->num_spigots > 0 && i < info->spigot_info[0].num_net_addr; i++) {
    if (info->spigot_info[0].net_addr[i].addr_type == type) {
      *out = info->spigot_info[0].net_addr[i];
      found = TRUE;
    }
  }
  it_ia_info_free(info);
  return found;
}

it_net_addr_t
conf_self_addr(conf_side_t *s)
{
  /* The interface's own first address: an RNIC (or rdma_cm over rxe and
   * siw) reaches its peers only through the addresses of its port, and
   * 127.0.0.1 is none of them. */
  it_net_addr_t a = { .addr_type = IT_IPV4 };
  a.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  it_ia_info_t *info = conf_info(s);
  if (info->num_spigots > 0 && info->spigot_info[0].num_net_addr > 0)
    a = info->spigot_info[0].net_addr[0];
  it_ia_info_free(info);
  return a;
}

char *
conf_addr_str(const it_net_addr_t *a)
{
  char buf[INET6_ADDRSTRLEN];
  if (a->addr_type == IT_IPV4)
    return g_strdup(inet_ntop(AF_INET, &a->addr.ipv4, buf, sizeof(buf)));
  if (a->addr_type == IT_IPV6)
    return g_strdup(inet_ntop(AF_INET6, &a->addr.ipv6, buf, sizeof(buf)));
  if (a->addr_type == IT_IB_GID)
    return g_strdup_printf("GID %s", inet_ntop(AF_INET6, &a->addr.gid, buf, sizeof(buf)));
  return g_strdup_printf("(address type %d)", (int) a->addr_type);
}

gboolean
conf_addr_equal(const it_net_addr_t *a, const it_net_addr_t *b)
{
  if (a->addr_type != b->addr_type)
    return FALSE;
  switch (a->addr_type) {
  case IT_IPV4: return a->addr.ipv4.s_addr == b->addr.ipv4.s_addr;
  case IT_IPV6: return memcmp(&a->addr.ipv6, &b->addr.ipv6, sizeof(a->addr.ipv6)) == 0;
  case IT_IB_GID: return memcmp(&a->addr.gid, &b->addr.gid, sizeof(a->addr.gid)) == 0;
  default: return FALSE;
  }
}

void
conf_path_to(conf_side_t *s, const it_net_addr_t *addr, it_path_t *path)
{
  size_t n = 1, total = 0;
  it_status_t st = it_get_pathinfo(s->ia, 0, addr, &n, &total, path);
  if (st != IT_SUCCESS) {
    g_autofree char *to = conf_addr_str(addr);
    g_error("it_get_pathinfo on IA '%s', spigot 0, to %s returned %s (%s); the suite connects to "
            "the first address the interface lists (itapi-info shows them): check that address "
            "is up, or test another interface with ITAPI_CONF_IA",
            conf_ia_name(), to, itx_status_name(st), itx_error_detail());
  }
  if (n != 1 || total < 1) {
    g_autofree char *to = conf_addr_str(addr);
    g_error("it_get_pathinfo on IA '%s', spigot 0, to %s gave %zu paths of %zu; expected one: "
            "the interface must reach the addresses it lists", conf_ia_name(), to, n, total);
  }
}

void
conf_path(conf_side_t *s, it_path_t *path)
{
  it_net_addr_t self = conf_self_addr(s);
  conf_path_to(s, &self, path);
}

it_status_t
conf_connect(conf_side_t *s, it_ep_handle_t ep, const it_conn_qual_t *q, it_cn_est_flags_t flags,
             const void *pd, size_t len)
{
  it_path_t path;
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_path(s, &path);
  return it_ep_connect(ep, &path, &ca, q, flags, pd, len);
}

void
conf_pair_connect(conf_pair_t *p, const void *cpd, size_t clen, const void *apd, size_t alen)
{
  conf_ok(conf_connect(&p->a, p->a.ep, &p->qual, IT_CONNECT_FLAG_TWO_WAY, cpd, clen));
  it_event_t ev = conf_wait(p->p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  if (clen > 0) {
    g_assert_true(ev.conn_req.private_data_present);
    g_assert_cmpmem(ev.conn_req.private_data, clen, cpd, clen);
  }
  conf_ok(it_ep_accept(p->p.ep, ev.conn_req.cn_est_id, apd, alen));
  ev = conf_wait(p->a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p->a.ep);
  if (alen > 0) {
    g_assert_true(ev.conn.private_data_present);
    g_assert_cmpmem(ev.conn.private_data, alen, apd, alen);
  }
  ev = conf_wait(p->p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p->p.ep);
}

void
conf_pair_close(conf_pair_t *p)
{
  conf_side_close(&p->a);
  conf_side_close(&p->p);
}

it_ep_state_rc_t
conf_ep_state(it_ep_handle_t ep)
{
  it_ep_param_t p;
  conf_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &p));
  return p.ep_state.rc;
}

it_status_t
conf_evd_wait_at(it_evd_handle_t evd, uint64_t timeout, it_event_t *ev, size_t *more, const char *where)
{
  if (timeout == IT_TIMEOUT_INFINITE || timeout == 0)
    return it_evd_wait(evd, timeout, ev, more);
  cert_limit_t w;
  cert_limit_beginf(&w, (gint64) MIN(timeout, (uint64_t) G_MAXINT64), "an event (it_evd_wait at %s)", where);
  it_status_t st = it_evd_wait(evd, timeout, ev, more);
  cert_limit_end(&w);
  return st;
}

void
conf_await_flag(const volatile gint *flag, const char *what)
{
  cert_limit_t w;
  cert_limit_begin(&w, what, CONF_TIMEOUT_US);
  while (!g_atomic_int_get(flag) && !cert_limit_over(&w))
    g_thread_yield();
  cert_limit_end(&w);
  if (!g_atomic_int_get(flag))
    g_error("%s: not within %" G_GINT64_FORMAT " ms", what, CONF_TIMEOUT_US / 1000);
}

it_event_t
conf_wait(it_evd_handle_t evd, it_event_type_t want)
{
  it_event_t ev;
  size_t more = 0;
  conf_child_waiting(itx_event_name(want));
  cert_limit_t w;
  cert_limit_beginf(&w, CONF_TIMEOUT_US, "%s (it_evd_wait)", itx_event_name(want));
  it_status_t st = it_evd_wait(evd, CONF_TIMEOUT_US, &ev, &more);
  cert_limit_end(&w);
  conf_child_waiting(NULL);
  if (st != IT_SUCCESS)
    g_error("waiting for %s: %s (%s)", itx_event_name(want), itx_status_name(st), itx_error_detail());
  conf_child_progress();
  /* Every connection event, data completions at most once a millisecond. */
  conf_xuser_check("on an event taken",
                   (ev.event_number & IT_EVENT_STREAM_MASK) == IT_DTO_EVENT_STREAM ? 1000 : 0);
  if (ev.event_number != want)
    g_error("expected %s, got %s", itx_event_name(want), itx_event_name(ev.event_number));
  return ev;
}

void
conf_assert_empty(it_evd_handle_t evd)
{
  it_event_t ev;
  g_usleep(20000);
  it_status_t st = it_evd_dequeue(evd, &ev);
  if (st != IT_ERR_QUEUE_EMPTY)
    g_error("expected no event, got %s (status %s)", itx_event_name(ev.event_number), itx_status_name(st));
}

it_dto_cmpl_event_t
conf_dto(it_evd_handle_t evd, it_event_type_t want, it_dto_status_t status, it_dto_cookie_t cookie)
{
  it_event_t ev = conf_wait(evd, want);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, status);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, cookie);
  return ev.dto_cmpl;
}

gboolean
conf_refusal_ok(conf_side_t *s, it_event_type_t type, it_dto_status_t got, it_dto_status_t want)
{
  if (got == want)
    return TRUE;
  /* Where a completion means transmission, the peer's refusal of a Send or
   * Write (a Terminate) may come after the request completed, or flush it.
   * A local error is found before anything is sent: no latitude there. */
  return (type == IT_DTO_SEND_CMPL_EVENT || type == IT_DTO_RDMA_WRITE_CMPL_EVENT) &&
         (want == IT_DTO_ERR_REMOTE_ACCESS || want == IT_DTO_ERR_REMOTE_RESPONDER) &&
         (got == IT_DTO_SUCCESS || got == IT_DTO_ERR_FLUSHED) &&
         itx_ia_completion(s->ia) == ITX_COMPLETION_SENT;
}

it_dto_cmpl_event_t
conf_dto_refused(conf_side_t *s, it_event_type_t want, it_dto_status_t status, it_dto_cookie_t cookie)
{
  it_event_t ev = conf_wait(s->dto, want);
  if (!conf_refusal_ok(s, want, ev.dto_cmpl.dto_status, status))
    g_error("%s (cookie 0x%" G_GINT64_MODIFIER "x) completed with %s, expected %s%s",
            itx_event_name(want), (guint64) ev.dto_cmpl.cookie,
            itx_dto_status_name(ev.dto_cmpl.dto_status), itx_dto_status_name(status),
            itx_ia_completion(s->ia) == ITX_COMPLETION_SENT ? " (or success, or flushed)" : "");
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, cookie);
  return ev.dto_cmpl;
}

it_event_t
conf_write_refused(conf_side_t *s, it_dto_cookie_t cookie)
{
  conf_dto_refused(s, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, cookie);
  return conf_wait(s->cm, IT_CM_MSG_CONN_BROKEN_EVENT);
}

void
conf_placed(conf_side_t *s, it_rdma_addr_t addr, it_rmr_context_t ctx)
{
  if (itx_ia_completion(s->ia) == ITX_COMPLETION_PLACED)
    return;
  /* A zero-length RDMA Read: the peer answers it only after it placed
   * everything sent before it (RFC 5040 5.5, IBTA 9.5). */
  conf_ok(it_post_rdma_read(s->ep, NULL, 0, CONF_PLACED_COOKIE, IT_COMPLETION_FLAG, addr, ctx));
  conf_dto(s->dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, CONF_PLACED_COOKIE);
}

void
conf_buf_new(conf_side_t *s, conf_buf_t *b, size_t len, it_mem_priv_t privs, it_addr_mode_t mode)
{
  memset(b, 0, sizeof(*b));
  b->len = len;
  b->mem = aligned_alloc(4096, CONF_GUARD * 2 + ((len + 4095) / 4096) * 4096);
  g_assert_nonnull(b->mem);
  memset(b->mem, CONF_GUARD_BYTE, CONF_GUARD * 2 + len);
  b->data = b->mem + CONF_GUARD;
  memset(b->data, 0, len);
  conf_ok(it_lmr_create(s->pz, b->data, NULL, len, mode, privs, IT_LMR_FLAG_NONE, 0, &b->lmr, &b->ctx));
}

void
conf_buf_free(conf_buf_t *b)
{
  if (b->lmr != IT_NULL_HANDLE)
    it_lmr_free(b->lmr); /* may already be gone with its IA */
  free(b->mem);
  memset(b, 0, sizeof(*b));
}

unsigned char
conf_pattern_byte(size_t i, unsigned seed)
{
  return (unsigned char) (i * 31 + seed * 7 + 1);
}

/* conf_pattern_byte repeats every 256 bytes: the fill copies, and the
 * check compares, a block of whole periods (byte by byte, a 32 MiB check
 * took seconds in the lab VM's emulated CPU, eight times a test). */
#define PATTERN_BLOCK 4096

static void
pattern_block(unsigned char p[PATTERN_BLOCK], unsigned seed)
{
  for (size_t j = 0; j < PATTERN_BLOCK; j++)
    p[j] = conf_pattern_byte(j, seed);
}

size_t
conf_first_not(const unsigned char *p, size_t len, unsigned char v)
{
  unsigned char block[PATTERN_BLOCK];
  memset(block, v, sizeof(block));
  for (size_t i = 0; i < len; i += PATTERN_BLOCK) {
    size_t n = MIN((size_t) PATTERN_BLOCK, len - i);
    if (memcmp(p + i, block, n) == 0)
      continue;
    for (size_t k = i; k < i + n; k++)
      if (p[k] != v)
        return k;
  }
  return len;
}

gint64
conf_status_kb(const char *field)
{
  g_autofree char *s = NULL;
  g_assert_true(g_file_get_contents("/proc/self/status", &s, NULL, NULL));
  const char *p = strstr(s, field);
  g_assert_nonnull(p);
  return g_ascii_strtoll(p + strlen(field), NULL, 10);
}

void
conf_peak_reset(void)
{
  FILE *f = fopen("/proc/self/clear_refs", "w");
  g_assert_nonnull(f);
  fputs("5\n", f);
  fclose(f);
}

void
conf_buf_fill(conf_buf_t *b, unsigned seed)
{
  unsigned char p[PATTERN_BLOCK];
  pattern_block(p, seed);
  for (size_t i = 0; i < b->len; i += PATTERN_BLOCK)
    memcpy(b->data + i, p, MIN((size_t) PATTERN_BLOCK, b->len - i));
}

void
conf_buf_check(const conf_buf_t *b, size_t off, size_t len, unsigned seed)
{
  unsigned char p[PATTERN_BLOCK];
  pattern_block(p, seed);
  for (size_t i = 0; i < len; i += PATTERN_BLOCK) {
    size_t n = MIN((size_t) PATTERN_BLOCK, len - i);
    if (memcmp(b->data + off + i, p, n) == 0)
      continue;
    for (size_t k = i; k < i + n; k++) {
      unsigned char want = conf_pattern_byte(k, seed);
      if (b->data[off + k] != want)
        g_error("byte %zu (offset %zu) is 0x%02x, expected 0x%02x", k, off + k, b->data[off + k], want);
    }
  }
}

gpointer
conf_rdma_post_run(gpointer post)
{
  conf_rdma_post_t *p = post;
  if (p->read)
    conf_ok(it_post_rdma_read(p->ep, &p->local, 1, p->cookie, IT_COMPLETION_FLAG, p->remote, p->ctx));
  else
    conf_ok(it_post_rdma_write(p->ep, &p->local, 1, p->cookie, IT_COMPLETION_FLAG, p->remote, p->ctx));
  return NULL;
}

unsigned char
conf_landing_peek(const unsigned char *p)
{
#ifdef ITAPI_TSAN_GLIB_H
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
  unsigned char v = __atomic_load_n(p, __ATOMIC_RELAXED);
#ifdef ITAPI_TSAN_GLIB_H
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
  return v;
}

void
conf_buf_check_guards(const conf_buf_t *b)
{
  for (size_t i = 0; i < CONF_GUARD; i++) {
    if (b->mem[i] != CONF_GUARD_BYTE)
      g_error("guard byte %zu before the region changed to 0x%02x", CONF_GUARD - i, b->mem[i]);
    if (b->data[b->len + i] != CONF_GUARD_BYTE)
      g_error("guard byte %zu after the region changed to 0x%02x", i, b->data[b->len + i]);
  }
}

it_lmr_triplet_t
conf_seg(const conf_buf_t *b, size_t off, size_t len)
{
  it_lmr_triplet_t t = { .lmr = b->lmr, .addr.abs = b->data + off, .length = len };
  return t;
}

gboolean
conf_require(gboolean cond, const char *what)
{
  /* itapi-certify reads this line: a note when present, the skip's reason
   * when not. */
  g_autofree char *msg = g_strdup_printf("needs capability: %s", what);
  if (cond)
    g_test_message("%s", msg);
  else
    g_test_skip(msg);
  return cond;
}

it_ia_info_t *
conf_info(conf_side_t *s)
{
  it_ia_info_t *info = NULL;
  conf_ok(it_ia_query(s->ia, &info));
  return info;
}

it_mem_priv_t
conf_sink_privs(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  it_mem_priv_t p = IT_PRIV_LOCAL | (info->rdma_read_requires_remote_write ? IT_PRIV_REMOTE_WRITE : 0);
  it_ia_info_free(info);
  return p;
}

gboolean
conf_probe_atomics(it_ep_attributes_t *attr, gboolean *iwarp)
{
  conf_side_t probe;
  conf_side_open(&probe, NULL);
  it_ia_info_t *info = conf_info(&probe);
  gboolean ok = info->atomic_support;
  if (iwarp != NULL)
    *iwarp = info->transport_type == IT_IWARP_TCP_TRANSPORT;
  it_ia_info_free(info);
  conf_side_close(&probe);
  if (attr != NULL) {
    conf_default_attr(attr);
    attr->srv.rc.atomics_enable = ok;
  }
  return ok;
}

it_transport_type_t
conf_transport(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  it_transport_type_t t = info->transport_type;
  it_ia_info_free(info);
  return t;
}

it_dg_remote_ep_addr_t
conf_ud_reply_to(it_pz_handle_t pz, const it_all_dto_cmpl_event_t *d, uint32_t qkey)
{
  it_dg_remote_ep_addr_t to = { .type = IT_DG_TYPE_IB_UD };
  conf_ok(it_address_handle_create(pz, &d->src_path, 0, &to.addr.ud.addr));
  to.addr.ud.ep_info.ud_ep_id = d->ud_ep_id;
  to.addr.ud.ep_info.ud_ep_key = qkey;
  return to;
}

int
conf_key_changes(uint64_t key, gboolean key_byte, conf_key_change_t *out)
{
  int n = 0;
  if (key_byte) {
    uint8_t kb = (uint8_t) key;
    const uint8_t vals[] = { (uint8_t) (kb + 1), (uint8_t) (kb - 1), (uint8_t) (kb ^ 0x80),
                             (uint8_t) ~kb, (uint8_t) (kb ^ 0x5a) };
    for (size_t i = 0; i < G_N_ELEMENTS(vals); i++, n++) {
      out[n].mask = (uint8_t) (vals[i] ^ kb);
      g_snprintf(out[n].what, sizeof(out[n].what), "key byte 0x%02x -> 0x%02x", kb, vals[i]);
    }
    return n;
  }
  /* A provider whose keys are 32 bits wide may never see higher ones. */
  int width = (key >> 32) != 0 ? 64 : 32;
  for (int b = 8; b < width; b++, n++) {
    out[n].mask = UINT64_C(1) << b;
    g_snprintf(out[n].what, sizeof(out[n].what), "bit %d flipped", b);
  }
  return n;
}

conf_child_t
conf_child_spawn(const char *exe, const char *const *args, const char *name,
                 const char *env_name, const char *env_value)
{
  conf_child_t c = { 0 };
  int in[2], out[2];
  g_assert_cmpint(pipe2(in, O_CLOEXEC), ==, 0);
  g_assert_cmpint(pipe2(out, O_CLOEXEC), ==, 0);
  g_snprintf(c.err, sizeof(c.err), "%s/%s-%d.err", g_get_tmp_dir(), name, (int) getpid());
  const char *argv[16] = { exe };
  for (int i = 0; args[i] != NULL && i + 2 < (int) G_N_ELEMENTS(argv); i++)
    argv[i + 1] = args[i];
  int e = open(c.err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  c.pid = conf_xuser_spawn(argv, in[0], out[1], e, env_name, env_value);
  if (c.pid == 0)
    c.pid = conf_xuser_fork();
  g_assert_cmpint(c.pid, >=, 0);
  if (c.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    if (e >= 0)
      dup2(e, 2);
    if (env_name != NULL)
      setenv(env_name, env_value, 1);
    if (conf_xuser_child_drop() != 0)
      _exit(126);
    execv(exe, (char *const *) argv);
    _exit(127);
  }
  if (e >= 0)
    close(e);
  close(in[0]);
  close(out[1]);
  c.to = in[1];
  c.from = out[0];
  return c;
}

it_listen_handle_t
conf_child_listen(conf_side_t *s)
{
  it_listen_handle_t lh;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(s->ia, 0, s->req, IT_LISTEN_NO_FLAG, &q, &lh));
  printf("port %u\n", (unsigned) ntohs(q.conn_qual.port));
  fflush(stdout);
  return lh;
}

void
conf_say(int fd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *s = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  size_t n = strlen(s);
  conf_xuser_check("on a line said", 0);
  g_assert_cmpint(write(fd, s, n), ==, (ssize_t) n);
}

char *
conf_hear(int fd, int timeout_ms)
{
  GString *s = g_string_new(NULL);
  cert_limit_t w;
  cert_limit_beginf(&w, (gint64) timeout_ms * 1000, "a line from the peer process (descriptor %d)", fd);
  for (;;) {
    struct pollfd p = { fd, POLLIN, 0 };
    int left = (int) (cert_limit_left(&w) / 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0)
      break;
    char ch;
    if (read(fd, &ch, 1) != 1)
      break;
    if (ch == '\n') {
      cert_limit_end(&w);
      conf_xuser_check("on a line heard", 0);
      return g_string_free(s, FALSE);
    }
    g_string_append_c(s, ch);
  }
  cert_limit_end(&w);
  g_string_free(s, TRUE);
  return NULL;
}

it_conn_qual_t
conf_child_hear_port(conf_child_t *c, int timeout_ms)
{
  g_autofree char *pl = conf_hear(c->from, timeout_ms);
  unsigned port = 0;
  if (pl == NULL || sscanf(pl, "port %u", &port) != 1 || port == 0 || port > 65535)
    g_error("child %d said no port within %d ms (line: %s; its stderr: %s)", (int) c->pid, timeout_ms,
            pl != NULL ? pl : "none", c->err);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  return q;
}

void
conf_child_connect_mr(conf_child_t *c, conf_side_t *s, const it_ep_attributes_t *attr,
                      int timeout_ms, guint64 *addr, guint64 *ctx)
{
  it_conn_qual_t q = conf_child_hear_port(c, timeout_ms);
  conf_side_open(s, attr);
  conf_ok(conf_connect(s, s->ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(s->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_autofree char *ml = conf_hear(c->from, timeout_ms);
  g_assert_nonnull(ml);
  g_assert_cmpint(sscanf(ml, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, addr, ctx), ==, 2);
}

void
conf_child_reap(conf_child_t *c)
{
  int status = 0;
  g_assert_true(conf_child_wait(c, TRUE, &status));
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  unlink(c->err);
  close(c->to);
  close(c->from);
}

/* ---- a child's watchdog ---- */

static unsigned watchdog_s;    /* 0: not a child, no watchdog */
static char watchdog_msg[160]; /* written from the signal handler */
/* What the child waits for (conf_wait), NULL between waits: the line the
 * watchdog writes tells a stuck parent (the child waits for a line or an
 * event within its 5 s) from a stuck child (a call that never returned). */
static const char *watchdog_waiting;
/* gdb's command line for this process's threads' stacks, made when the
 * watchdog starts (the handler only forks and execs); NULL without gdb. */
static char *watchdog_gdb_argv[16];
static char watchdog_pid[24];

/* Fill @argv (room for @n) with the gdb command line that prints each
 * thread's stack of process @pid (conf_gdb_stacks, the watchdog); FALSE,
 * @argv untouched, where gdb is not installed. */
static gboolean
gdb_argv(char **argv, size_t n, const char *pid)
{
  static char *gdb;
  if (gdb == NULL && (gdb = g_find_program_in_path("gdb")) == NULL)
    return FALSE;
  const char *const a[] = { gdb, "-nx", "-batch", "-p", pid, "-ex", "set print frame-arguments none",
                            "-ex", "thread apply all bt -frame-info short-location", NULL };
  g_assert(G_N_ELEMENTS(a) <= n);
  for (size_t i = 0; i < G_N_ELEMENTS(a); i++)
    argv[i] = (char *) a[i];
  return TRUE;
}

void
conf_gdb_stacks(pid_t pid, int fd)
{
  char *argv[16], p[24];
  g_snprintf(p, sizeof p, "%d", (int) pid);
  if (!gdb_argv(argv, G_N_ELEMENTS(argv), p)) {
    dprintf(fd, "[no gdb here: install it (apt-get install gdb) for the threads' stacks]\n");
    return;
  }
  pid_t g = fork();
  if (g == 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    alarm(30); /* a gdb that hangs ends */
    execv(argv[0], argv);
    _exit(127);
  }
  if (g > 0)
    waitpid(g, NULL, 0);
}

/* The watchdog's lines (async-signal-safe). */
static void
watchdog_say(void)
{
  ssize_t n = write(STDERR_FILENO, watchdog_msg, strlen(watchdog_msg));
  const char *w = __atomic_load_n(&watchdog_waiting, __ATOMIC_RELAXED);
  static const char was[] = "[it was waiting for ",
                    notw[] = "[it was in no conf_wait: did a call of its own not return?]\n";
  if (w != NULL) {
    n = write(STDERR_FILENO, was, sizeof was - 1);
    n = write(STDERR_FILENO, w, strlen(w));
    n = write(STDERR_FILENO, "]\n", 2);
  } else {
    n = write(STDERR_FILENO, notw, sizeof notw - 1);
  }
  (void) n;
}

static void
watchdog_fired(int sig)
{
  watchdog_say();
  signal(sig, SIG_DFL);
  if (watchdog_gdb_argv[0] != NULL) {
    /* Raw fork and exec (async-signal-safe; a sanitizer's fork interceptor
     * may take locks a stuck thread holds); gdb's output onto stderr, not
     * the stdout the parent reads lines from. */
    alarm(40); /* a gdb that hangs ends this process all the same */
    pid_t g = (pid_t) syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (g == 0) {
      dup2(STDERR_FILENO, STDOUT_FILENO);
      static char *const env[] = { "PATH=/usr/bin:/bin", "HOME=/tmp", NULL };
      execve(watchdog_gdb_argv[0], watchdog_gdb_argv, env);
      _exit(127);
    }
    if (g > 0)
      waitpid(g, NULL, 0);
    watchdog_say(); /* again after the stacks: the parent quotes the end */
  }
  raise(sig);
}

void
conf_child_watchdog_start(void)
{
  const char *env = g_getenv("CONF_XPROC_WATCHDOG_S");
  watchdog_s = env != NULL && atoi(env) > 0 ? (unsigned) atoi(env) : CONF_CHILD_WATCHDOG_S;
  g_snprintf(watchdog_msg, sizeof watchdog_msg,
             "[the child's watchdog: no event for %u s, so the parent is taken to be stuck: SIGALRM]\n",
             watchdog_s);
  g_snprintf(watchdog_pid, sizeof watchdog_pid, "%d", (int) getpid());
  if (gdb_argv(watchdog_gdb_argv, G_N_ELEMENTS(watchdog_gdb_argv), watchdog_pid))
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* gdb, a descendant, may attach */
  signal(SIGALRM, watchdog_fired);
  alarm(watchdog_s);
}

void
conf_child_waiting(const char *what)
{
  __atomic_store_n(&watchdog_waiting, what, __ATOMIC_RELAXED);
}

void
conf_child_progress(void)
{
  static gint64 armed_at;
  if (watchdog_s == 0)
    return;
  gint64 now = g_get_monotonic_time();  /* vDSO: no system call */
  if (now - armed_at >= G_USEC_PER_SEC) {
    alarm(watchdog_s);
    armed_at = now;
  }
}
