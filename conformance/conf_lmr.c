/*
 * Conformance: local memory regions (IT-API LMR area): the three bindings
 * of it_lmr_create, query, privilege changes, argument checks, the memlock
 * limit, flush/refresh and the unguessability of remote contexts.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "conf.h"

#define assert_handle_eq(a, b) \
  g_assert_cmphex((guint64) (uintptr_t) (a), ==, (guint64) (uintptr_t) (b))

#define PRIV_TARGET (IT_PRIV_LOCAL | IT_PRIV_REMOTE)

/* The guarded layout of conf_buf_new, without registering. */
static void
buf_alloc(conf_buf_t *b, size_t len)
{
  memset(b, 0, sizeof(*b));
  b->len = len;
  b->mem = aligned_alloc(4096, CONF_GUARD * 2 + ((len + 4095) / 4096) * 4096);
  g_assert_nonnull(b->mem);
  memset(b->mem, CONF_GUARD_BYTE, CONF_GUARD * 2 + len);
  b->data = b->mem + CONF_GUARD;
  memset(b->data, 0, len);
}

/* RDMA Write @len bytes of @src (seed 7) to @dst at @off and check. */
static void
write_and_check(conf_pair_t *p, conf_buf_t *src, conf_buf_t *dst, it_rmr_context_t ctx, size_t off,
                size_t len, it_dto_cookie_t cookie)
{
  conf_buf_fill(src, 7);
  it_lmr_triplet_t s = conf_seg(src, 0, len);
  conf_ok(it_post_rdma_write(p->a.ep, &s, 1, cookie, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(dst->data + off), ctx));
  conf_dto(p->a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, cookie);
  g_assert_cmpmem(dst->data + off, len, src->data, len);
  conf_buf_check_guards(dst);
}

typedef enum { BIND_10, BIND_20, BIND_21 } binding_t;

static void
test_bindings(gconstpointer data)
{
  binding_t b = (binding_t) GPOINTER_TO_INT(data);
  g_test_summary("IT-API LMR: it_lmr_create10/20/21 each register memory that works as an RDMA "
                 "Write target; a NULL rmr_context is allowed and the context can be queried");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst, dst2;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  buf_alloc(&dst, 4096);
  buf_alloc(&dst2, 4096);
  it_rmr_context_t ctx = 0;
  switch (b) {
  case BIND_10:
    conf_ok(it_lmr_create10(p.p.pz, dst.data, dst.len, PRIV_TARGET, IT_LMR_FLAG_NONE, 0, &dst.lmr, &ctx));
    conf_ok(it_lmr_create10(p.p.pz, dst2.data, dst2.len, PRIV_TARGET, IT_LMR_FLAG_NONE, 0, &dst2.lmr, NULL));
    break;
  case BIND_20:
    conf_ok(it_lmr_create20(p.p.pz, dst.data, dst.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, IT_LMR_FLAG_NONE,
                            0, &dst.lmr, &ctx));
    conf_ok(it_lmr_create20(p.p.pz, dst2.data, dst2.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                            IT_LMR_FLAG_NONE, 0, &dst2.lmr, NULL));
    break;
  case BIND_21:
  default:
    conf_ok(it_lmr_create21(p.p.pz, dst.data, NULL, dst.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                            IT_LMR_FLAG_NONE, 0, &dst.lmr, &ctx));
    conf_ok(it_lmr_create21(p.p.pz, dst2.data, NULL, dst2.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                            IT_LMR_FLAG_NONE, 0, &dst2.lmr, NULL));
    break;
  }
  write_and_check(&p, &src, &dst, ctx, 1000, 2000, 1);
  it_lmr_param_t prm;
  conf_ok(it_lmr_query(dst2.lmr, IT_LMR_PARAM_RMR_CONTEXT, &prm));
  g_assert_cmphex(prm.rmr_context, !=, ctx);
  write_and_check(&p, &src, &dst2, prm.rmr_context, 0, 4096, 2);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_buf_free(&dst2);
  conf_pair_close(&p);
}

static void
test_query(void)
{
  g_test_summary("IT-API LMR: it_lmr_query returns the registered addr, length, privileges, mode, "
                 "PZ, IA and rmr_context; actual_addr is page-aligned at or below addr and "
                 "actual_length covers the region");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t b;
  buf_alloc(&b, 3 * 4096);
  void *addr = b.data + 100;
  it_length_t len = 2 * 4096;   /* spans three pages */
  it_rmr_context_t ctx = 0;
  it_mem_priv_t privs = IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_READ;
  conf_ok(it_lmr_create(s.pz, addr, NULL, len, IT_ADDR_MODE_ABSOLUTE, privs, IT_LMR_FLAG_NONE, 0, &b.lmr, &ctx));
  it_lmr_param_t prm;
  memset(&prm, 0x5a, sizeof(prm));
  conf_ok(it_lmr_query(b.lmr, IT_LMR_PARAM_ALL, &prm));
  g_assert_true(prm.addr == addr);
  g_assert_cmpuint(prm.length, ==, len);
  g_assert_cmphex(prm.privs, ==, privs);
  g_assert_cmpint(prm.addr_mode, ==, IT_ADDR_MODE_ABSOLUTE);
  assert_handle_eq(prm.pz, s.pz);
  assert_handle_eq(prm.ia, s.ia);
  g_assert_cmphex(prm.rmr_context, ==, ctx);
  uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
  uintptr_t actual = (uintptr_t) prm.actual_addr;
  g_assert_cmphex(actual % page, ==, 0);
  g_assert_cmphex(actual, <=, (uintptr_t) addr);
  g_assert_cmpuint(actual + prm.actual_length, >=, (uintptr_t) addr + len);
  g_assert_cmpuint(prm.actual_length, <, len + 2 * page);

  /* Single fields, by their own masks. */
  it_lmr_param_t one;
  memset(&one, 0, sizeof(one));
  conf_ok(it_lmr_query(b.lmr, IT_LMR_PARAM_LENGTH | IT_LMR_PARAM_ADDR, &one));
  g_assert_true(one.addr == addr);
  g_assert_cmpuint(one.length, ==, len);

  /* A relative region reports its mode. */
  it_ia_info_t *info = conf_info(&s);
  gboolean rel = info->addr_mode_relative_support;
  it_ia_info_free(info);
  if (rel) {
    it_lmr_handle_t r;
    conf_ok(it_lmr_create(s.pz, b.data, NULL, 4096, IT_ADDR_MODE_RELATIVE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0,
                          &r, NULL));
    conf_ok(it_lmr_query(r, IT_LMR_PARAM_ALL, &prm));
    g_assert_cmpint(prm.addr_mode, ==, IT_ADDR_MODE_RELATIVE);
    g_assert_true(prm.addr == b.data);
    conf_ok(it_lmr_free(r));
  }
  conf_ok(it_lmr_free(b.lmr));
  conf_assert_status(it_lmr_query(b.lmr, IT_LMR_PARAM_ALL, &prm), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_free(b.lmr), IT_ERR_INVALID_LMR);
  b.lmr = IT_NULL_HANDLE;
  conf_buf_free(&b);
  conf_side_close(&s);
}

static void
test_modify_privs(void)
{
  g_test_summary("IT-API LMR: it_lmr_modify of IT_LMR_PARAM_MEM_PRIV grants and revokes remote "
                 "write (a write after revoking completes IT_DTO_ERR_REMOTE_ACCESS and lands "
                 "nothing); other masks give IT_ERR_INVALID_MASK");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 1024, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 1024, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);

  it_lmr_param_t prm;
  memset(&prm, 0, sizeof(prm));
  prm.privs = PRIV_TARGET;
  prm.length = 1; /* must be ignored: only the privileges are selected */
  conf_ok(it_lmr_modify(dst.lmr, IT_LMR_PARAM_MEM_PRIV, &prm));
  it_lmr_param_t q;
  conf_ok(it_lmr_query(dst.lmr, IT_LMR_PARAM_ALL, &q));
  g_assert_cmphex(q.privs, ==, PRIV_TARGET);
  g_assert_cmpuint(q.length, ==, 1024);
  write_and_check(&p, &src, &dst, dst.ctx, 0, 1024, 1);

  /* Masks that select anything but the privileges. */
  static const it_lmr_param_mask_t bad[] = {
    IT_LMR_PARAM_LENGTH, IT_LMR_PARAM_ADDR, IT_LMR_PARAM_PZ, IT_LMR_PARAM_RMR_CONTEXT,
    IT_LMR_PARAM_MEM_PRIV | IT_LMR_PARAM_LENGTH,
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
    conf_assert_status(it_lmr_modify(dst.lmr, bad[i], &prm), IT_ERR_INVALID_MASK);

  prm.privs = IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ;
  conf_ok(it_lmr_modify(dst.lmr, IT_LMR_PARAM_MEM_PRIV, &prm));
  conf_ok(it_lmr_query(dst.lmr, IT_LMR_PARAM_MEM_PRIV, &q));
  g_assert_cmphex(q.privs, ==, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ);
  unsigned char before[1024];
  memcpy(before, dst.data, sizeof(before));
  conf_buf_fill(&src, 99);
  it_lmr_triplet_t s = conf_seg(&src, 0, 1024);
  conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 3, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(dst.data),
                             dst.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 3);
  it_event_t ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  assert_handle_eq(ev.conn.ep, p.a.ep);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  assert_handle_eq(ev.conn.ep, p.p.ep);
  g_assert_cmpmem(dst.data, 1024, before, 1024);
  conf_buf_check_guards(&dst);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_bad_args(void)
{
  g_test_summary("IT-API LMR: it_lmr_create refuses length 0 (IT_ERR_INVALID_LENGTH), a NULL "
                 "address (IT_ERR_INVALID_ADDRESS), privileges 0x100 (IT_ERR_INVALID_PRIVS), "
                 "address mode 7 (IT_ERR_INVALID_ADDR_MODE), unknown flags (IT_ERR_INVALID_FLAGS), "
                 "an I/O buffer list (IT_ERR_OP_NOT_SUPPORTED) and a bad PZ (IT_ERR_INVALID_PZ)");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t b;
  buf_alloc(&b, 4096);
  it_lmr_handle_t h = IT_NULL_HANDLE;
  it_rmr_context_t ctx = 0;
  conf_assert_status(it_lmr_create(s.pz, b.data, NULL, 0, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_LENGTH);
  conf_assert_status(it_lmr_create(s.pz, NULL, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_ADDRESS);
  conf_assert_status(it_lmr_create(s.pz, b.data, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, (it_mem_priv_t) 0x100,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_PRIVS);
  conf_assert_status(it_lmr_create(s.pz, b.data, NULL, 4096, (it_addr_mode_t) 7, IT_PRIV_LOCAL,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_ADDR_MODE);
  conf_assert_status(it_lmr_create(s.pz, b.data, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                   (it_lmr_flag_t) 0x100, 0, &h, &ctx), IT_ERR_INVALID_FLAGS);
  conf_assert_status(it_lmr_create10(s.pz, b.data, 4096, (it_mem_priv_t) 0x100, IT_LMR_FLAG_NONE, 0, &h, &ctx),
                     IT_ERR_INVALID_PRIVS);
  conf_assert_status(it_lmr_create20(s.pz, b.data, 4096, (it_addr_mode_t) 7, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE,
                                     0, &h, &ctx), IT_ERR_INVALID_ADDR_MODE);
  it_io_addr_t pages[1] = { 0 };
  it_iobl_t iobl;
  memset(&iobl, 0, sizeof(iobl));
  iobl.list.ce_list.list_elt = pages;
  iobl.list.ce_list.elt_len = 4096;
  iobl.num_elts = 1;
  conf_assert_status(it_lmr_create21(s.pz, NULL, &iobl, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                     IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_OP_NOT_SUPPORTED);
  conf_assert_status(it_lmr_create(IT_NULL_HANDLE, b.data, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_PZ);
  conf_assert_status(it_lmr_create((it_pz_handle_t) s.ia, b.data, NULL, 4096, IT_ADDR_MODE_ABSOLUTE,
                                   IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_PZ);
  /* The same arguments with the error removed succeed. */
  conf_ok(it_lmr_create(s.pz, b.data, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0,
                        &b.lmr, &ctx));
  conf_buf_check_guards(&b);
  conf_buf_free(&b);
  conf_side_close(&s);
}

#define MEMLOCK_LIMIT (1024 * 1024)

static void
test_memlock(void)
{
  g_test_summary("IT-API LMR: under a 1 MiB RLIMIT_MEMLOCK, registering 4 MiB fails with "
                 "IT_ERR_RESOURCES and a detail naming the memlock limit and both byte counts; "
                 "512 KiB still registers");
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  struct rlimit rl;
  g_assert_cmpint(getrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);
  rl.rlim_cur = MEMLOCK_LIMIT;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < MEMLOCK_LIMIT)
    rl.rlim_max = MEMLOCK_LIMIT;
  g_assert_cmpint(setrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);

  conf_side_t s;
  conf_side_open(&s, NULL);
  size_t big = 4 * 1024 * 1024, small = 512 * 1024;
  void *mem = aligned_alloc(4096, big);
  g_assert_nonnull(mem);
  memset(mem, 0, big);
  it_lmr_handle_t h = IT_NULL_HANDLE;
  it_status_t st = it_lmr_create(s.pz, mem, NULL, big, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE,
                                 0, &h, NULL);
  g_assert_cmpstr(itx_status_name(st), ==, itx_status_name(IT_ERR_RESOURCES));
  g_autofree char *detail = g_strdup(itx_error_detail());
  g_test_message("detail: %s", detail);
  g_assert_nonnull(strstr(detail, "memlock"));
  g_assert_nonnull(strstr(detail, "1048576"));
  g_assert_nonnull(strstr(detail, "4194304"));
  conf_ok(it_lmr_create(s.pz, mem, NULL, small, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0,
                        &h, NULL));
  conf_ok(it_lmr_free(h));
  conf_side_close(&s);
  free(mem);
}

static void
test_flush_refresh(void)
{
  g_test_summary("IT-API LMR: it_lmr_flush_to_mem and it_lmr_refresh_from_mem succeed on valid "
                 "triplets and return IT_ERR_INVALID_LMR for a freed LMR");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t a, b;
  conf_buf_new(&s, &a, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &b, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t t[2] = { conf_seg(&a, 0, 4096), conf_seg(&b, 100, 200) };
  conf_ok(it_lmr_flush_to_mem(t, 2));
  conf_ok(it_lmr_refresh_from_mem(t, 2));
  conf_ok(it_lmr_flush_to_mem(t, 1));
  conf_ok(it_lmr_refresh_from_mem(&t[1], 1));
  conf_ok(it_lmr_free(b.lmr));
  b.lmr = IT_NULL_HANDLE;
  conf_assert_status(it_lmr_flush_to_mem(t, 2), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_refresh_from_mem(t, 2), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_flush_to_mem(&t[1], 1), IT_ERR_INVALID_LMR);
  conf_ok(it_lmr_flush_to_mem(t, 1));
  conf_buf_free(&a);
  conf_buf_free(&b);
  conf_side_close(&s);
}

#define NKEYS 64

static void
check_distinct(const it_rmr_context_t *k, size_t n)
{
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (k[i] == k[j])
        g_error("registrations %zu and %zu got the same rmr_context 0x%016" G_GINT64_MODIFIER "x", i, j,
                (guint64) k[i]);
}

static void
test_keys_distinct(void)
{
  g_test_summary("IT-API LMR: 64 registrations of the same buffer, alive together or one after "
                 "another (each freed first), all get distinct rmr_contexts");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t b;
  buf_alloc(&b, 4096);
  it_rmr_context_t live[NKEYS], seq[NKEYS];
  it_lmr_handle_t h[NKEYS];
  for (size_t i = 0; i < NKEYS; i++)
    conf_ok(it_lmr_create(s.pz, b.data, NULL, b.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, IT_LMR_FLAG_NONE, 0,
                          &h[i], &live[i]));
  check_distinct(live, NKEYS);
  for (size_t i = 0; i < NKEYS; i++)
    conf_ok(it_lmr_free(h[i]));
  for (size_t i = 0; i < NKEYS; i++) {
    it_lmr_handle_t one;
    conf_ok(it_lmr_create(s.pz, b.data, NULL, b.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, IT_LMR_FLAG_NONE, 0,
                          &one, &seq[i]));
    conf_ok(it_lmr_free(one));
  }
  check_distinct(seq, NKEYS);
  /* No key handed out after a free repeats one given before it. */
  for (size_t i = 0; i < NKEYS; i++)
    for (size_t j = 0; j < NKEYS; j++)
      g_assert_cmphex(seq[i], !=, live[j]);
  conf_buf_free(&b);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/conformance/lmr/create/v10", GINT_TO_POINTER(BIND_10), test_bindings);
  g_test_add_data_func("/conformance/lmr/create/v20", GINT_TO_POINTER(BIND_20), test_bindings);
  g_test_add_data_func("/conformance/lmr/create/v21", GINT_TO_POINTER(BIND_21), test_bindings);
  g_test_add_func("/conformance/lmr/query", test_query);
  g_test_add_func("/conformance/lmr/modify-privs", test_modify_privs);
  g_test_add_func("/conformance/lmr/bad-args", test_bad_args);
  g_test_add_func("/conformance/lmr/memlock", test_memlock);
  g_test_add_func("/conformance/lmr/flush-refresh", test_flush_refresh);
  g_test_add_func("/conformance/lmr/keys-distinct", test_keys_distinct);
  return g_test_run();
}
