/*
 * Conformance: local memory regions (IT-API LMR area): the three bindings
 * of it_lmr_create, query, privilege changes, argument checks, the memlock
 * limit (the kernel's CAP_IPC_LOCK rule, pinning only where the IA needs
 * it), read-only memory refused write rights, flush/refresh and the unguessability of remote contexts; IT-API
 * 2.1 unlinked LMRs (link, unlink, relink, priv_ops_enable), it_mem_map
 * and registration from I/O buffer lists.
 *
 * SPDX-License-Identifier: MIT
 */
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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
  conf_placed(&p->a, it_make_rdma_addr_absolute(dst->data + off), ctx);
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
  it_event_t ev = conf_write_refused(&p.a, 3);
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
                 "an I/O buffer list of no known type (IT_ERR_INVALID_IOBL) and a bad PZ (IT_ERR_INVALID_PZ)");
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
                                     IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_IOBL);
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

static uint64_t
proc_status_kib(const char *field)
{
  g_autofree char *status = NULL;
  g_assert_true(g_file_get_contents("/proc/self/status", &status, NULL, NULL));
  const char *l = strstr(status, field);
  g_assert_nonnull(l);
  return g_ascii_strtoull(l + strlen(field), NULL, 10);
}

static uint64_t
rss_bytes(void)
{
  g_autofree char *statm = NULL;
  g_assert_true(g_file_get_contents("/proc/self/statm", &statm, NULL, NULL));
  unsigned long size = 0, rss = 0;
  g_assert_cmpint(sscanf(statm, "%lu %lu", &size, &rss), ==, 2);
  return (uint64_t) rss * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* Whether the IA of @s locks registered memory: a fresh 64 KiB region
 * raises VmLck (RNIC-PI "no-pinning-needed" clear). */
static gboolean
ia_pins(conf_side_t *s)
{
  size_t len = 64 * 1024;
  void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true(mem != MAP_FAILED);
  uint64_t before = proc_status_kib("VmLck:");
  it_lmr_handle_t h;
  conf_ok(it_lmr_create(s->pz, mem, NULL, len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &h,
                        NULL));
  gboolean pins = proc_status_kib("VmLck:") > before;
  conf_ok(it_lmr_free(h));
  munmap(mem, len);
  return pins;
}

/* Read or change CAP_IPC_LOCK in this process's effective set. */
static gboolean
ipc_lock(int set)
{
  struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
  memset(d, 0, sizeof(d));
  g_assert_cmpint(syscall(SYS_capget, &h, d), ==, 0);
  if (set == 0)
    d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
  if (set >= 0)
    g_assert_cmpint(syscall(SYS_capset, &h, d), ==, 0);
  return (d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK)) != 0;
}

static void
set_memlock(rlim_t bytes)
{
  struct rlimit rl;
  g_assert_cmpint(getrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);
  rl.rlim_cur = bytes;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < bytes)
    rl.rlim_max = bytes;
  g_assert_cmpint(setrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);
}

static void
test_memlock(void)
{
  g_test_summary("IT-API LMR: in a process without CAP_IPC_LOCK under a 1 MiB RLIMIT_MEMLOCK, "
                 "registering 4 MiB on an IA that pins fails with IT_ERR_RESOURCES and a detail naming "
                 "the memlock limit and both byte counts (512 KiB still registers); on an IA that needs "
                 "no pinning it succeeds with nothing locked");
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  ipc_lock(0);
  set_memlock(MEMLOCK_LIMIT);

  conf_side_t s;
  conf_side_open(&s, NULL);
  gboolean pins = ia_pins(&s);
  size_t big = 4 * 1024 * 1024, small = 512 * 1024;
  void *mem = aligned_alloc(4096, big);
  g_assert_nonnull(mem);
  memset(mem, 0, big);
  it_lmr_handle_t h = IT_NULL_HANDLE;
  uint64_t locked = proc_status_kib("VmLck:");
  it_status_t st = it_lmr_create(s.pz, mem, NULL, big, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE,
                                 0, &h, NULL);
  if (pins) {
    g_assert_cmpstr(itx_status_name(st), ==, itx_status_name(IT_ERR_RESOURCES));
    g_autofree char *detail = g_strdup(itx_error_detail());
    g_test_message("detail: %s", detail);
    g_assert_nonnull(strstr(detail, "memlock"));
    g_assert_nonnull(strstr(detail, "1048576"));
    g_assert_nonnull(strstr(detail, "4194304"));
    conf_ok(it_lmr_create(s.pz, mem, NULL, small, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0,
                          &h, NULL));
  } else {
    g_assert_cmpstr(itx_status_name(st), ==, itx_status_name(IT_SUCCESS));
    g_assert_cmpuint(proc_status_kib("VmLck:"), ==, locked);
  }
  conf_ok(it_lmr_free(h));
  conf_side_close(&s);
  free(mem);
}

static void
test_large(void)
{
  g_test_summary("IT-API LMR: under a stock 8 MiB RLIMIT_MEMLOCK, 64 MiB register (on an IA that pins, "
                 "in a process with CAP_IPC_LOCK, the kernel's rule) and a peer's RDMA Write lands at "
                 "both ends of the region");
  if (!g_test_subprocess()) {
    conf_side_t s;
    conf_side_open(&s, NULL);
    gboolean pins = ia_pins(&s);
    conf_side_close(&s);
    if (pins && !conf_require(ipc_lock(-1), "CAP_IPC_LOCK (the IA pins registered memory)"))
      return;
    g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  set_memlock(8 * 1024 * 1024);
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  size_t big = 64 * 1024 * 1024;
  conf_buf_t dst, src;
  buf_alloc(&dst, big);
  conf_ok(it_lmr_create(p.p.pz, dst.data, NULL, big, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, IT_LMR_FLAG_NONE, 0,
                        &dst.lmr, &dst.ctx));
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  write_and_check(&p, &src, &dst, dst.ctx, 0, 4096, 1);
  write_and_check(&p, &src, &dst, dst.ctx, big - 4096, 4096, 2);
  conf_ok(it_lmr_free(dst.lmr));
  free(dst.mem);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

static void
test_lazy(void)
{
  g_test_summary("IT-API LMR: on an IA that needs no pinning, registering 1 GiB of fresh anonymous "
                 "memory faults none of it in (RSS grows by less than 64 MiB)");
  conf_side_t s;
  conf_side_open(&s, NULL);
  if (!conf_require(!ia_pins(&s), "no-pinning-needed (the IA pins registered memory, which faults it in)")) {
    conf_side_close(&s);
    return;
  }
  size_t big = (size_t) 1 << 30;
  void *mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  g_assert_true(mem != MAP_FAILED);
  uint64_t rss = rss_bytes();
  it_lmr_handle_t h;
  it_rmr_context_t ctx;
  conf_ok(it_lmr_create(s.pz, mem, NULL, big, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, IT_LMR_FLAG_NONE, 0, &h, &ctx));
  g_test_message("RSS %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " bytes", rss, rss_bytes());
  g_assert_cmpuint(rss_bytes(), <, rss + 64 * 1024 * 1024);
  conf_ok(it_lmr_free(h));
  munmap(mem, big);
  conf_side_close(&s);
}

static gboolean require_iobl(conf_side_t *s);

/* A string constant: in a read-only mapping of the program. */
static const char rodata[] = "IT-API read-only test data in .rodata";

/* Whether the refusal detail names the address @a and the right @right. */
static void
assert_refusal(it_status_t st, const void *a, const char *right)
{
  g_assert_cmpstr(itx_status_name(st), ==, itx_status_name(IT_ERR_ACCESS));
  g_autofree char *at = g_strdup_printf("%p", a);
  const char *detail = itx_error_detail();
  g_test_message("detail: %s", detail);
  g_assert_nonnull(strstr(detail, at));
  g_assert_nonnull(strstr(detail, right));
  g_assert_nonnull(strstr(detail, "read-only"));
}

static void
test_read_only(void)
{
  g_test_summary("IT-API LMR: read-only memory (PROT_READ, .rodata) with a write right is refused at "
                 "registration with IT_ERR_ACCESS naming the address and the right, in every binding, "
                 "from an I/O buffer list and by it_lmr_modify; an unmapped page is "
                 "IT_ERR_INVALID_ADDRESS; with read rights only it registers and a peer's RDMA Read "
                 "of it moves the right bytes");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  size_t pg = (size_t) sysconf(_SC_PAGESIZE), len = 2 * pg;
  unsigned char *ro = mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true(ro != MAP_FAILED);
  for (size_t i = 0; i < len; i++)
    ro[i] = (unsigned char) (i * 31 + 7);
  g_assert_cmpint(mprotect(ro, len, PROT_READ), ==, 0);
  g_assert_cmpint(munmap(ro + len, pg), ==, 0);
  it_lmr_handle_t h = IT_NULL_HANDLE;
  it_rmr_context_t ctx;

  assert_refusal(it_lmr_create21(p.p.pz, ro, NULL, len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL_READ |
                                 IT_PRIV_REMOTE_WRITE, IT_LMR_FLAG_NONE, 0, &h, &ctx), ro, "IT_PRIV_REMOTE_WRITE");
  assert_refusal(it_lmr_create20(p.p.pz, ro + 100, len - 100, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                                 IT_LMR_FLAG_NONE, 0, &h, &ctx), ro + 100, "IT_PRIV_LOCAL_WRITE");
  assert_refusal(it_lmr_create10(p.p.pz, ro, len, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE, 0, &h, &ctx),
                 ro, "IT_PRIV_LOCAL_WRITE | IT_PRIV_REMOTE_WRITE");
  assert_refusal(it_lmr_create(p.p.pz, (void *) rodata, NULL, sizeof(rodata), IT_ADDR_MODE_ABSOLUTE,
                               IT_PRIV_REMOTE_WRITE, IT_LMR_FLAG_NONE, 0, &h, &ctx), rodata,
                 "IT_PRIV_REMOTE_WRITE");
  g_assert_true(h == IT_NULL_HANDLE);
  /* A range that runs past the mapping into a hole. */
  conf_assert_status(it_lmr_create(p.p.pz, ro + pg, NULL, 2 * pg, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL_READ,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), IT_ERR_INVALID_ADDRESS);
  g_assert_nonnull(strstr(itx_error_detail(), "is not mapped"));

  /* Read rights only: registered, and a peer's RDMA Read gets the bytes. */
  conf_ok(it_lmr_create(p.p.pz, ro, NULL, len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_READ,
                        IT_LMR_FLAG_NONE, 0, &h, &ctx));
  conf_buf_t sink;
  conf_buf_new(&p.a, &sink, len, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t l = conf_seg(&sink, 0, len - 10);
  conf_ok(it_post_rdma_read(p.a.ep, &l, 1, 1, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(ro + 10), ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpmem(sink.data, len - 10, ro + 10, len - 10);
  conf_buf_check_guards(&sink);
  /* Adding a write right later is refused the same way, and changes nothing. */
  it_lmr_param_t prm = { .privs = IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_READ | IT_PRIV_REMOTE_WRITE };
  assert_refusal(it_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, &prm), ro, "IT_PRIV_REMOTE_WRITE");
  conf_ok(it_lmr_query(h, IT_LMR_PARAM_ALL, &prm));
  g_assert_cmphex(prm.privs, ==, IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_READ);
  conf_ok(it_lmr_free(h));

  /* From an I/O buffer list: it_mem_map takes read-only memory; the
   * registration with a write right is refused. */
  if (require_iobl(&p.p)) {
    it_io_addr_t io;
    size_t mlen;
    conf_ok(it_mem_map(p.p.ia, ro, 0, len, &io, &mlen));
    it_io_addr_t pages[2] = { io, (it_io_addr_t) ((char *) io + pg) };
    it_iobl_t iobl = { .iobl_type = IT_IOBL_PAGE_LIST, .num_elts = 2, .fbo = 0 };
    iobl.list.ce_list.list_elt = pages;
    iobl.list.ce_list.elt_len = pg;
    assert_refusal(it_lmr_create21(p.p.pz, NULL, &iobl, len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                                   IT_LMR_FLAG_NONE, 0, &h, &ctx), ro, "IT_PRIV_LOCAL_WRITE | IT_PRIV_REMOTE_WRITE");
    conf_ok(it_lmr_create21(p.p.pz, NULL, &iobl, len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_READ,
                            IT_LMR_FLAG_NONE, 0, &h, &ctx));
    conf_ok(it_lmr_free(h));
    conf_ok(it_mem_unmap(p.p.ia, io, mlen));
  }
  conf_buf_free(&sink);
  munmap(ro, len);
  conf_pair_close(&p);
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

/* ---- IT-API 2.1: unlinked LMRs, I/O address mapping, IOBL registration ---- */

static gboolean
require_link(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = info->lmr_link_support;
  it_ia_info_free(info);
  return conf_require(ok, "unlinked LMRs (lmr_link_support)");
}

static gboolean
require_iobl(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = (info->iobl_types_supported & (IT_IOBL_PAGE_LIST | IT_IOBL_VE_PAGE_LIST)) ==
                (IT_IOBL_PAGE_LIST | IT_IOBL_VE_PAGE_LIST);
  it_ia_info_free(info);
  return conf_require(ok, "I/O buffer lists (iobl_types_supported)");
}

/* conf_pair_open with EPs that have priv_ops_enable. */
static void
pair_open_priv(conf_pair_t *p)
{
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.priv_ops_enable = IT_TRUE;
  conf_pair_open2(p, &a, &a);
}

/* A connected pair (with privileged operations on when @priv) whose
 * passive IA links unlinked LMRs; FALSE, the test skipped, where it does
 * not. */
static gboolean
link_pair(conf_pair_t *p, gboolean priv)
{
  if (priv)
    pair_open_priv(p);
  else
    conf_pair_open(p);
  if (!require_link(&p->p)) {
    conf_pair_close(p);
    return FALSE;
  }
  conf_pair_connect(p, NULL, 0, NULL, 0);
  return TRUE;
}

static void
test_unlinked_link_unlink(void)
{
  g_test_summary("IT-API 2.1 unlinked LMR: it_lmr_create_unlinked, it_lmr_link by a work request "
                 "completing with IT_LMR_LINK_CMPL_EVENT and a new context the peer RDMA-writes through, "
                 "it_lmr_unlink, a relink with another context, the old context refused");
  conf_pair_t p;
  if (!link_pair(&p, TRUE))
    return;
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  buf_alloc(&dst, 4096);
  it_lmr_handle_t lmr;
  conf_ok(it_lmr_create_unlinked(p.p.pz, 4, IT_LMR_FLAG_NONE, 0, &lmr));
  it_lmr_param_t prm;
  conf_ok(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &prm));
  g_assert_cmpint(prm.linked, ==, IT_FALSE);
  g_assert_cmpuint(prm.iobl_num_elts, ==, 4);
  it_rmr_context_t ctx1 = 0, ctx2 = 0;
  conf_ok(it_lmr_link(lmr, dst.data, NULL, dst.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                      IT_COMPLETION_FLAG, &ctx1));
  conf_dto(p.p.dto, IT_LMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_ok(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &prm));
  g_assert_cmpint(prm.linked, ==, IT_TRUE);
  g_assert_cmphex(prm.rmr_context, ==, ctx1);
  g_assert_true(prm.addr == dst.data);
  g_assert_cmpuint(prm.length, ==, dst.len);
  write_and_check(&p, &src, &dst, ctx1, 100, 1000, 2);
  /* A linked LMR takes no second link. */
  it_rmr_context_t dummy;
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 9,
                                 IT_COMPLETION_FLAG, &dummy), IT_ERR_LMR_BUSY);
  conf_ok(it_lmr_unlink(lmr, p.p.ep, 3, IT_COMPLETION_FLAG));
  conf_dto(p.p.dto, IT_LMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  conf_ok(it_lmr_query(lmr, IT_LMR_PARAM_LINKED, &prm));
  g_assert_cmpint(prm.linked, ==, IT_FALSE);
  /* Relink: a new context; the data path works through it. */
  conf_ok(it_lmr_link(lmr, dst.data, NULL, 2048, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 4,
                      IT_COMPLETION_FLAG, &ctx2));
  conf_dto(p.p.dto, IT_LMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 4);
  g_assert_cmphex(ctx2, !=, ctx1);
  write_and_check(&p, &src, &dst, ctx2, 0, 512, 5);
  /* The old context is refused: the write fails and nothing lands. */
  memset(dst.data, 0, dst.len);
  it_lmr_triplet_t s = conf_seg(&src, 0, 64);
  conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 6, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(dst.data), ctx1));
  conf_write_refused(&p.a, 6);
  for (size_t i = 0; i < 64; i++)
    g_assert_cmpuint(dst.data[i], ==, 0);
  conf_ok(it_lmr_free(lmr));
  conf_assert_status(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &prm), IT_ERR_INVALID_LMR);
  conf_buf_free(&src);
  free(dst.mem);
  conf_pair_close(&p);
}

static void
test_unlinked_priv_ops(void)
{
  g_test_summary("IT-API 2.1 unlinked LMR: it_lmr_link and it_lmr_unlink on an EP created without "
                 "priv_ops_enable return IT_ERR_PRIV_OPS_UNAVAILABLE and post nothing");
  conf_pair_t p;
  if (!link_pair(&p, FALSE))
    return;
  conf_buf_t dst;
  buf_alloc(&dst, 4096);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_ok(it_lmr_create_unlinked(p.p.pz, 1, IT_LMR_FLAG_NONE, 0, &lmr));
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_PRIV_OPS_UNAVAILABLE);
  conf_assert_status(it_lmr_unlink(lmr, p.p.ep, 2, IT_COMPLETION_FLAG), IT_ERR_PRIV_OPS_UNAVAILABLE);
  conf_assert_empty(p.p.dto);
  conf_ok(it_lmr_free(lmr));
  free(dst.mem);
  conf_pair_close(&p);
}

static void
test_unlinked_bad_args(void)
{
  g_test_summary("IT-API 2.1 unlinked LMR: argument checks of it_lmr_create_unlinked, it_lmr_link "
                 "and it_lmr_unlink, each reported synchronously with nothing posted");
  conf_pair_t p;
  if (!link_pair(&p, TRUE))
    return;
  conf_buf_t dst, reg;
  buf_alloc(&dst, 3 * 4096);
  conf_buf_new(&p.p, &reg, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_assert_status(it_lmr_create_unlinked(p.p.pz, 0, IT_LMR_FLAG_NONE, 0, &lmr), IT_ERR_INVALID_IOBL);
  conf_assert_status(it_lmr_create_unlinked(p.p.pz, 1, IT_LMR_FLAG_NONE, 0, NULL), IT_ERR_FAULT);
  conf_assert_status(it_lmr_create_unlinked((it_pz_handle_t) p.p.ep, 1, IT_LMR_FLAG_NONE, 0, &lmr),
                     IT_ERR_INVALID_PZ);
  conf_assert_status(it_lmr_create_unlinked(p.p.pz, 1, (it_lmr_flag_t) 0x100, 0, &lmr), IT_ERR_INVALID_FLAGS);
  conf_ok(it_lmr_create_unlinked(p.p.pz, 1, IT_LMR_FLAG_NONE, 0, &lmr));
  /* Three pages do not fit a capacity of one element. */
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 3 * 4096, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_RESOURCE_LMR_LENGTH);
  conf_assert_status(it_lmr_link(lmr, NULL, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_ADDRESS);
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 0, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_LENGTH);
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_UNLINK_LOCAL_SINK, &ctx), IT_ERR_INVALID_DTO_FLAGS);
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, NULL), IT_ERR_FAULT);
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, (it_addr_mode_t) 9, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_ADDR_MODE);
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, (it_mem_priv_t) 0x100, p.p.ep,
                                 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_PRIVS);
  conf_assert_status(it_lmr_link(reg.lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                                 (it_ep_handle_t) p.p.pz, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_EP);
  conf_assert_status(it_lmr_unlink(lmr, p.p.ep, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  conf_assert_status(it_lmr_unlink(reg.lmr, p.p.ep, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  /* An EP of another PZ. */
  conf_assert_status(it_lmr_link(lmr, dst.data, NULL, 64, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.a.ep, 1,
                                 IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_PZ);
  conf_assert_empty(p.p.dto);
  conf_ok(it_lmr_free(lmr));
  conf_buf_free(&reg);
  free(dst.mem);
  conf_pair_close(&p);
}

static void
test_mem_map(void)
{
  g_test_summary("IT-API 2.1 it_mem_map/it_mem_unmap: a range maps to the I/O address of its first byte "
                 "and its whole length, unmaps once; argument checks");
  conf_side_t s;
  conf_side_open(&s, NULL);
  if (!require_iobl(&s)) {
    conf_side_close(&s);
    return;
  }
  conf_buf_t b;
  buf_alloc(&b, 2 * 4096);
  it_io_addr_t io = NULL;
  size_t mlen = 0;
  conf_ok(it_mem_map(s.ia, b.data + 10, 0, 5000, &io, &mlen));
  g_assert_true((void *) io == (void *) (b.data + 10));
  g_assert_cmpuint(mlen, ==, 5000);
  conf_assert_status(it_mem_unmap(s.ia, io, 4999), IT_ERR_INVALID_LENGTH);
  conf_assert_status(it_mem_unmap(s.ia, (it_io_addr_t) (b.data + 11), 5000), IT_ERR_INVALID_ADDRESS);
  conf_ok(it_mem_unmap(s.ia, io, mlen));
  conf_assert_status(it_mem_unmap(s.ia, io, mlen), IT_ERR_INVALID_ADDRESS);
  conf_ok(it_mem_map(s.ia, b.data, (uint64_t) getpid(), 4096, &io, &mlen));
  conf_ok(it_mem_unmap(s.ia, io, mlen));
  conf_assert_status(it_mem_map(s.ia, NULL, 0, 4096, &io, &mlen), IT_ERR_INVALID_ADDRESS);
  conf_assert_status(it_mem_map(s.ia, b.data, 0, 0, &io, &mlen), IT_ERR_INVALID_LENGTH);
  conf_assert_status(it_mem_map(s.ia, b.data, 0, 4096, NULL, &mlen), IT_ERR_FAULT);
  conf_assert_status(it_mem_map(s.ia, b.data, 0, 4096, &io, NULL), IT_ERR_FAULT);
  conf_assert_status(it_mem_map(s.ia, b.data, (uint64_t) getpid() + 1, 4096, &io, &mlen), IT_ERR_NO_PERMISSION);
  conf_assert_status(it_mem_map((it_ia_handle_t) s.pz, b.data, 0, 4096, &io, &mlen), IT_ERR_INVALID_IA);
  conf_assert_status(it_mem_unmap((it_ia_handle_t) s.pz, io, 4096), IT_ERR_INVALID_IA);
  /* A mapping left behind goes with its IA. */
  conf_ok(it_mem_map(s.ia, b.data, 0, 4096, &io, &mlen));
  conf_side_close(&s);
  free(b.mem);
}

static void
test_iobl(void)
{
  g_test_summary("IT-API 2.1 I/O buffer lists: it_lmr_create21 from a page list of mapped I/O addresses "
                 "with a first-byte offset serves a peer's RDMA Write and, through addr.io triplets, a "
                 "local RDMA Write source; a variable-length list links an unlinked LMR; discontiguous "
                 "and unmapped lists are refused with IT_ERR_INVALID_IOBL");
  conf_pair_t p;
  pair_open_priv(&p);
  if (!require_iobl(&p.p)) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  size_t pg = (size_t) sysconf(_SC_PAGESIZE);
  conf_buf_t b, src, back;
  buf_alloc(&b, 4 * pg);
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &back, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  it_io_addr_t io;
  size_t mlen;
  conf_ok(it_mem_map(p.p.ia, b.data, 0, 4 * pg, &io, &mlen));
  it_io_addr_t pages[3] = {
    (it_io_addr_t) ((char *) io), (it_io_addr_t) ((char *) io + pg), (it_io_addr_t) ((char *) io + 2 * pg),
  };
  it_iobl_t iobl = { .iobl_type = IT_IOBL_PAGE_LIST, .num_elts = 3, .fbo = 100 };
  iobl.list.ce_list.list_elt = pages;
  iobl.list.ce_list.elt_len = pg;
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  conf_ok(it_lmr_create21(p.p.pz, NULL, &iobl, 2 * pg, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, IT_LMR_FLAG_NONE, 0,
                          &lmr, &ctx));
  it_lmr_param_t prm;
  conf_ok(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &prm));
  g_assert_cmpint(prm.iobl_type, ==, IT_IOBL_PAGE_LIST);
  g_assert_cmpuint(prm.iobl_num_elts, ==, 3);
  g_assert_true(prm.addr == (void *) (b.data + 100));
  /* The peer writes at I/O addresses (here: the mapped virtual addresses). */
  conf_buf_fill(&src, 11);
  it_lmr_triplet_t s = conf_seg(&src, 0, 3000);
  conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 1, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute((char *) io + 100 + 1000), ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_placed(&p.a, it_make_rdma_addr_absolute((char *) io + 100 + 1000), ctx);
  g_assert_cmpmem(b.data + 1100, 3000, src.data, 3000);
  /* Outside the registered bytes: refused. */
  /* Local use: an addr.io triplet as an RDMA Write source. */
  it_lmr_triplet_t t = { .lmr = lmr, .length = 3000 };
  t.addr.io = (it_io_addr_t) ((char *) io + 1100);
  conf_ok(it_post_rdma_write(p.p.ep, &t, 1, 2, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(back.data),
                             back.ctx));
  conf_dto(p.p.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_placed(&p.p, it_make_rdma_addr_absolute(back.data), back.ctx);
  g_assert_cmpmem(back.data, 3000, src.data, 3000);
  /* Refused lists. */
  it_lmr_handle_t bad;
  it_io_addr_t holes[2] = { pages[0], pages[2] };
  it_iobl_t disc = iobl;
  disc.num_elts = 2;
  disc.list.ce_list.list_elt = holes;
  conf_assert_status(it_lmr_create21(p.p.pz, NULL, &disc, 100, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                                     IT_LMR_FLAG_NONE, 0, &bad, NULL), IT_ERR_INVALID_IOBL);
  conf_buf_t um;
  buf_alloc(&um, pg);
  it_io_addr_t unmapped[1] = { (it_io_addr_t) um.data };
  it_iobl_t unm = { .iobl_type = IT_IOBL_PAGE_LIST, .num_elts = 1 };
  unm.list.ce_list.list_elt = unmapped;
  unm.list.ce_list.elt_len = pg;
  conf_assert_status(it_lmr_create21(p.p.pz, NULL, &unm, 100, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                                     IT_LMR_FLAG_NONE, 0, &bad, NULL), IT_ERR_INVALID_IOBL);
  it_iobl_t badtype = iobl;
  badtype.iobl_type = (it_iobl_type_t) 0x80;
  conf_assert_status(it_lmr_create21(p.p.pz, NULL, &badtype, 100, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                                     IT_LMR_FLAG_NONE, 0, &bad, NULL), IT_ERR_INVALID_IOBL);
  conf_assert_status(it_lmr_create21(p.p.pz, NULL, &iobl, 3 * pg, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                                     IT_LMR_FLAG_NONE, 0, &bad, NULL), IT_ERR_INVALID_LENGTH);
  /* A variable-length list links an unlinked LMR. */
  if (require_link(&p.p)) {
    it_iobl_ve_elt_t ve[2] = {
      { .io_addr = (it_io_addr_t) ((char *) io + 3 * pg), .elt_len = 512 },
      { .io_addr = (it_io_addr_t) ((char *) io + 3 * pg + 512), .elt_len = 1024 },
    };
    it_iobl_t vl = { .iobl_type = IT_IOBL_VE_PAGE_LIST, .num_elts = 2, .fbo = 0 };
    vl.list.ve_list.list_elt = ve;
    it_lmr_handle_t ul;
    it_rmr_context_t uctx;
    conf_ok(it_lmr_create_unlinked(p.p.pz, 2, IT_LMR_FLAG_NONE, 0, &ul));
    conf_ok(it_lmr_link(ul, NULL, &vl, 1536, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET, p.p.ep, 3, IT_COMPLETION_FLAG,
                        &uctx));
    conf_dto(p.p.dto, IT_LMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 3);
    it_lmr_triplet_t w = conf_seg(&src, 0, 1536);
    conf_ok(it_post_rdma_write(p.a.ep, &w, 1, 4, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute((char *) io + 3 * pg), uctx));
    conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 4);
    conf_placed(&p.a, it_make_rdma_addr_absolute((char *) io + 3 * pg), uctx);
    g_assert_cmpmem(b.data + 3 * pg, 1536, src.data, 1536);
    conf_ok(it_lmr_query(ul, IT_LMR_PARAM_ALL, &prm));
    g_assert_cmpint(prm.iobl_type, ==, IT_IOBL_VE_PAGE_LIST);
    conf_ok(it_lmr_unlink(ul, p.p.ep, 5, IT_COMPLETION_FLAG));
    conf_dto(p.p.dto, IT_LMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 5);
    conf_ok(it_lmr_free(ul));
  }
  conf_ok(it_lmr_free(lmr));
  conf_ok(it_mem_unmap(p.p.ia, io, mlen));
  conf_buf_free(&src);
  conf_buf_free(&back);
  free(b.mem);
  free(um.mem);
  conf_pair_close(&p);
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
  g_test_add_func("/conformance/lmr/large-64m", test_large);
  g_test_add_func("/conformance/lmr/unpinned-1g", test_lazy);
  g_test_add_func("/conformance/lmr/read-only", test_read_only);
  g_test_add_func("/conformance/lmr/flush-refresh", test_flush_refresh);
  g_test_add_func("/conformance/lmr/keys-distinct", test_keys_distinct);
  g_test_add_func("/conformance/lmr/unlinked/link-unlink", test_unlinked_link_unlink);
  g_test_add_func("/conformance/lmr/unlinked/priv-ops", test_unlinked_priv_ops);
  g_test_add_func("/conformance/lmr/unlinked/bad-args", test_unlinked_bad_args);
  g_test_add_func("/conformance/lmr/mem-map", test_mem_map);
  g_test_add_func("/conformance/lmr/iobl", test_iobl);
  return g_test_run();
}
