/*
 * cert-rnicpi: device discovery and the capability record, protection
 * domains, memory registration and memory for buffers (rnicpi_device_ops_t,
 * rnicpi_mem_ops_t), and the port's events.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cert.h"

/* ---- device ----------------------------------------------------------- */

static void
test_device_list(cert_t *f, gconstpointer data)
{
  (void) f;
  (void) data;
  g_test_summary("device_ops.list: reports at least one device with a non-empty name, and with a "
                 "capacity of 0 still says how many exist");
  char names[8][RNICPI_DEVICE_NAME_MAX];
  memset(names, 0, sizeof(names));
  size_t count = G_N_ELEMENTS(names);
  cert_ok(DEV->list(names, &count));
  g_assert_cmpuint(count, >=, 1);
  for (size_t i = 0; i < MIN(count, G_N_ELEMENTS(names)); i++) {
    g_assert_cmpuint(strnlen(names[i], sizeof(names[i])), >, 0);
    g_assert_cmpuint(strnlen(names[i], sizeof(names[i])), <, sizeof(names[i]));
  }
  char unused[1][RNICPI_DEVICE_NAME_MAX];
  size_t none = 0;
  cert_ok(DEV->list(unused, &none));
  g_assert_cmpuint(none, ==, count);
}

static void
test_device_open(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("device_ops.open: the first listed device opens, its base object carries the "
                 "context given to open and the provider that owns it; an unknown name is "
                 "RNICPI_ENOENT");
  static const rnicpi_upcalls_t none_up = { 0 };
  rnicpi_dev_t *bad = NULL;
  cert_cmpst(DEV->open("no-such-rnic-device", &none_up, NULL, &bad), RNICPI_ENOENT);
  g_assert_null(bad);

  g_assert_true(f->dev->al_ctx == (void *) f);
  /* rnicpi_dev_t.prov: "provider that owns the device". */
  g_assert_nonnull(f->dev->prov);
  g_assert_cmpstr(f->dev->prov->name, ==, cert_prov->name);
}

static void
test_device_query(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("device_ops.query: the record has this ABI's size, a valid transport and path "
                 "format, at least one address, and non-zero limits for every advertised feature");
  const rnicpi_caps_t *c = &f->caps;
  g_assert_cmpuint(c->size, ==, sizeof(rnicpi_caps_t));
  g_assert_true(c->transport == RNICPI_TRANSPORT_IB || c->transport == RNICPI_TRANSPORT_IWARP);
  g_assert_true(c->path_format == RNICPI_PATH_IP || c->path_format == RNICPI_PATH_GID);
  g_assert_cmpuint(c->num_ports, >=, 1);
  g_assert_cmpuint(c->num_addrs, >=, 1);
  g_assert_cmpuint(c->num_addrs, <=, G_N_ELEMENTS(c->addrs));
  for (uint32_t i = 0; i < c->num_addrs; i++)
    g_assert_true(c->addrs[i].ss_family == AF_INET || c->addrs[i].ss_family == AF_INET6);

  /* Every device has domains, regions, CQs and QPs with at least one SGE. */
  g_assert_cmpuint(c->max_pd, >, 0);
  g_assert_cmpuint(c->max_mr, >, 0);
  g_assert_cmpuint(c->max_mr_size, >, 0);
  g_assert_cmpuint(c->max_cq, >, 0);
  g_assert_cmpuint(c->max_cqe, >, 0);
  g_assert_cmpuint(c->max_qp, >, 0);
  g_assert_cmpuint(c->max_qp_wr, >, 0);
  g_assert_cmpuint(c->max_send_sge, >, 0);
  g_assert_cmpuint(c->max_recv_sge, >, 0);
  g_assert_cmpuint(c->max_msg_size, >, 0);
  if (c->features & RNICPI_CAP_RC) {
    /* RC carries RDMA Write and Read. */
    g_assert_cmpuint(c->max_rdma_write_sge, >, 0);
    g_assert_cmpuint(c->max_rdma_read_sge, >, 0);
    g_assert_cmpuint(c->max_ird, >, 0);
    g_assert_cmpuint(c->max_ord, >, 0);
  }
  if (c->features & RNICPI_CAP_SRQ)
    g_assert_cmpuint(c->max_srq, >, 0);
  if (c->features & RNICPI_CAP_UD) {
    g_assert_cmpuint(c->pdata_ud_req, >, 0);
    g_assert_cmpuint(c->pdata_ud_rep, >, 0);
  }
  if (c->features & RNICPI_CAP_IRD_ORD_NEGOTIATED) {
    g_assert_cmpuint(c->max_ird, >, 0);
    g_assert_cmpuint(c->max_ord, >, 0);
  }
  /* No private data limit may exceed what an event can carry. */
  g_assert_cmpuint(c->pdata_connect, <=, RNICPI_MAX_PDATA);
  g_assert_cmpuint(c->pdata_accept, <=, RNICPI_MAX_PDATA);
  g_assert_cmpuint(c->pdata_reject, <=, RNICPI_MAX_PDATA);
  g_assert_cmpuint(c->pdata_disconnect, <=, RNICPI_MAX_PDATA);
  g_assert_cmpuint(c->pdata_ud_req, <=, RNICPI_MAX_PDATA);
  g_assert_cmpuint(c->pdata_ud_rep, <=, RNICPI_MAX_PDATA);

  /* Every advertised feature has a name. */
  for (int bit = 0; bit < 64; bit++)
    if (c->features & (UINT64_C(1) << bit))
      g_test_message("feature %s", rnicpi_cap_name(UINT64_C(1) << bit));
}

/* ---- pd --------------------------------------------------------------- */

static void
test_pd_alloc_free(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("device_ops.pd_alloc/pd_free: domains are distinct, belong to the device, and "
                 "free without objects");
  rnicpi_pd_t *pd[4];
  for (int i = 0; i < 4; i++) {
    cert_ok(DEV->pd_alloc(f->dev, &pd[i]));
    g_assert_nonnull(pd[i]);
    g_assert_true(pd[i]->dev == f->dev);
    for (int j = 0; j < i; j++)
      g_assert_true(pd[i] != pd[j]);
  }
  for (int i = 0; i < 4; i++)
    cert_ok(DEV->pd_free(pd[i]));
}

static void
test_pd_free_busy(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("device_ops.pd_free: a domain with a registered region is RNICPI_EBUSY and stays "
                 "usable; once the region is gone it frees");
  rnicpi_pd_t *pd;
  cert_buf_t b;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_buf_new(pd, &b, 256, RNICPI_ACCESS_LOCAL_WRITE);
  cert_cmpst(DEV->pd_free(pd), RNICPI_EBUSY);
  /* Still usable: another registration in it works. */
  cert_buf_t b2;
  cert_buf_new(pd, &b2, 64, RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_free(&b2);
  cert_cmpst(DEV->pd_free(pd), RNICPI_EBUSY);
  cert_buf_free(&b);
  cert_ok(DEV->pd_free(pd));
}

/* ---- mr --------------------------------------------------------------- */

static void
test_mr_reg_dereg(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mr_reg/mr_dereg: a region has non-zero keys, belongs to its domain, "
                 "and deregisters");
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  uint32_t access[] = {
    RNICPI_ACCESS_LOCAL_READ,
    RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE,
    RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE,
  };
  for (size_t i = 0; i < G_N_ELEMENTS(access); i++) {
    cert_buf_t b;
    cert_buf_new(pd, &b, 4096, access[i]);
    g_assert_true(b.mr->pd == pd);
    g_assert_cmphex(b.mr->lkey, !=, 0);
    g_assert_cmphex(b.mr->rkey, !=, 0);
    cert_buf_free(&b);
  }
  cert_ok(DEV->pd_free(pd));
}

static void
test_mr_distinct_keys(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mr_reg: 64 registrations of one buffer give 64 distinct rkeys and 64 "
                 "distinct lkeys");
  enum { N = 64 };
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  g_autofree uint8_t *buf = g_malloc0(8192);
  rnicpi_mr_t *mr[N];
  rnicpi_mr_attr_t attr = {
    .addr = buf, .length = 8192, .iova = (uint64_t) (uintptr_t) buf,
    .access = RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ,
  };
  for (int i = 0; i < N; i++) {
    cert_ok(MEM->mr_reg(pd, &attr, &mr[i]));
    g_assert_cmphex(mr[i]->rkey, !=, 0);
    for (int j = 0; j < i; j++) {
      g_assert_cmphex(mr[i]->rkey, !=, mr[j]->rkey);
      g_assert_cmphex(mr[i]->lkey, !=, mr[j]->lkey);
    }
  }
  for (int i = 0; i < N; i++)
    cert_ok(MEM->mr_dereg(mr[i]));
  cert_ok(DEV->pd_free(pd));
}

/* An R_Key (the RETH's field, IBTA) and an STag (RFC 5040, RFC 5041) are
 * 32 bits on the wire, and so are the keys of verbs (ibv_mr.rkey) and of
 * DAT (DAT_RMR_CONTEXT): a device of either transport whose keys were
 * wider could not be driven by a consumer of those interfaces. */
static void
test_mr_key_width(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mr_reg: on an InfiniBand or iWARP device every region's lkey and rkey "
                 "fit in 32 bits, the width of an R_Key and of an STag");
  enum { N = 16 };
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_buf_t b[N];
  for (int i = 0; i < N; i++) {
    cert_buf_new(pd, &b[i], 4096, RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE |
                                  RNICPI_ACCESS_REMOTE_READ);
    g_test_message("region %d: lkey 0x%" G_GINT64_MODIFIER "x, rkey 0x%" G_GINT64_MODIFIER "x",
                   i, b[i].mr->lkey, b[i].mr->rkey);
    g_assert_cmphex(b[i].mr->lkey, <=, UINT32_MAX);
    g_assert_cmphex(b[i].mr->rkey, <=, UINT32_MAX);
  }
  for (int i = 0; i < N; i++)
    cert_buf_free(&b[i]);
  cert_ok(DEV->pd_free(pd));
}

static void
test_mr_invalid(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mr_reg: a NULL address or a zero length is RNICPI_EINVAL and "
                 "registers nothing (the domain still frees)");
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  uint8_t buf[64];
  rnicpi_mr_t *mr = NULL;
  rnicpi_mr_attr_t null_addr = { .addr = NULL, .length = 64, .access = RNICPI_ACCESS_LOCAL_WRITE };
  cert_cmpst(MEM->mr_reg(pd, &null_addr, &mr), RNICPI_EINVAL);
  g_assert_null(mr);
  rnicpi_mr_attr_t zero_len = { .addr = buf, .length = 0, .iova = (uint64_t) (uintptr_t) buf,
                                .access = RNICPI_ACCESS_LOCAL_WRITE };
  cert_cmpst(MEM->mr_reg(pd, &zero_len, &mr), RNICPI_EINVAL);
  g_assert_null(mr);
  cert_ok(DEV->pd_free(pd));
}

static void
test_mr_no_key_reuse(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mr_dereg: registering again after a deregistration never hands out a "
                 "key of an earlier region, so a stale key cannot reach new memory");
  enum { N = 32 };
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  g_autofree uint8_t *buf = g_malloc0(4096);
  rnicpi_mr_attr_t attr = {
    .addr = buf, .length = 4096, .iova = (uint64_t) (uintptr_t) buf,
    .access = RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE,
  };
  uint64_t old_r[N], old_l[N];
  for (int i = 0; i < N; i++) {
    rnicpi_mr_t *mr;
    cert_ok(MEM->mr_reg(pd, &attr, &mr));
    for (int j = 0; j < i; j++) {
      g_assert_cmphex(mr->rkey, !=, old_r[j]);
      g_assert_cmphex(mr->lkey, !=, old_l[j]);
    }
    old_r[i] = mr->rkey;
    old_l[i] = mr->lkey;
    cert_ok(MEM->mr_dereg(mr));
  }
  cert_ok(DEV->pd_free(pd));
}

static void
test_mr_size_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mr_reg: a length above caps.max_mr_size is refused with RNICPI_ELIMIT "
                 "(the memory is never touched, so the buffer can be small)");
  if (f->caps.max_mr_size == UINT64_MAX) {
    g_test_skip("max_mr_size is UINT64_MAX: no length lies above it");
    return;
  }
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  g_autofree uint8_t *buf = g_malloc0(64);
  rnicpi_mr_t *mr = NULL;
  rnicpi_mr_attr_t attr = { .addr = buf, .length = f->caps.max_mr_size + 1,
                            .iova = (uint64_t) (uintptr_t) buf,
                            .access = RNICPI_ACCESS_LOCAL_WRITE };
  rnicpi_status_t st = MEM->mr_reg(pd, &attr, &mr);
  if (st == RNICPI_OK) /* leave the device clean even when the check fails */
    cert_ok(MEM->mr_dereg(mr));
  cert_cmpst(st, RNICPI_ELIMIT);
  cert_ok(DEV->pd_free(pd));
}

/* ---- memory for buffers (ABI 1.10) -------------------------------------- */

static void
test_mem_alloc(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mem_ops.mem_alloc, when the provider has it: whole pages, page-aligned, "
                 "zero-filled and writable, registrable with remote rights, given back by "
                 "mem_free; a size no process can map is RNICPI_ENOMEM with errno set");
  size_t page = (size_t) sysconf(_SC_PAGESIZE), len = 3 * page;
  uint8_t *p = NULL;
  uint64_t ctx = 0;
  rnicpi_status_t st = MEM->mem_alloc(f->dev, len, (void **) &p, &ctx);
  if (st == RNICPI_ENOTSUP) {
    g_test_skip("no mem_alloc (RNIC-PI 1.10): applications get ordinary memory from the access "
                "layer");
    return;
  }
  cert_ok(st);
  g_assert_nonnull(p);
  g_assert_cmpuint((uintptr_t) p % page, ==, 0);
  for (size_t i = 0; i < len; i++)
    if (p[i] != 0)
      g_error("byte %zu of fresh memory from mem_alloc is 0x%02x", i, p[i]);
  memset(p, 0x5a, len);
  rnicpi_pd_t *pd;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  rnicpi_mr_t *mr = NULL;
  rnicpi_mr_attr_t attr = { .addr = p, .length = len, .iova = (uint64_t) (uintptr_t) p,
                            .access = RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE |
                                      RNICPI_ACCESS_REMOTE_READ };
  cert_ok(MEM->mr_reg(pd, &attr, &mr));
  cert_ok(MEM->mr_dereg(mr));
  cert_ok(DEV->pd_free(pd));
  MEM->mem_free(p, len, ctx);

  /* 1 EiB of whole pages: past any address space. */
  void *q = NULL;
  errno = 0;
  st = MEM->mem_alloc(f->dev, (size_t) 1 << 60, &q, &ctx);
  if (st == RNICPI_OK)
    MEM->mem_free(q, (size_t) 1 << 60, ctx);
  cert_cmpst(st, RNICPI_ENOMEM);
  g_assert_cmpint(errno, !=, 0);
}

/* ---- port events ------------------------------------------------------- */

/* Run @p cmd (a shell command line) to completion: TRUE when it exited 0,
 * else FALSE having said what it printed. */
static gboolean
port_cmd(const char *what, const char *cmd)
{
  g_autofree char *out = NULL, *err_out = NULL;
  g_autoptr(GError) err = NULL;
  int status = 0;
  g_autofree char *argv0 = g_strdup("/bin/sh");
  char *argv[] = { argv0, (char *) "-c", (char *) cmd, NULL };
  if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err_out, &status, &err)) {
    g_test_message("%s: cannot run \"%s\": %s", what, cmd, err->message);
    return FALSE;
  }
  if (!g_spawn_check_wait_status(status, &err)) {
    g_test_message("%s: \"%s\" failed (%s): %s%s", what, cmd, err->message, out, err_out);
    return FALSE;
  }
  return TRUE;
}

static void
test_port_events(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("async_event upcall: RNICPI_ASYNC_PORT_DOWN when the device's port goes down "
                 "($RNICPI_CERT_PORT_DOWN_CMD, e.g. `ip link set dummy0 down` for an rxe device "
                 "on dummy0) and RNICPI_ASYNC_PORT_ACTIVE when it comes up again "
                 "($RNICPI_CERT_PORT_UP_CMD), each within 5 s; the device still makes a "
                 "protection domain and a CQ after; skipped without both commands");
  const char *down = g_getenv("RNICPI_CERT_PORT_DOWN_CMD"), *up = g_getenv("RNICPI_CERT_PORT_UP_CMD");
  if (down == NULL || up == NULL || *down == '\0' || *up == '\0') {
    g_test_skip("set RNICPI_CERT_PORT_DOWN_CMD and RNICPI_CERT_PORT_UP_CMD to commands that take "
                "the device's port down and up again");
    return;
  }
  /* Up again whatever came, so that the tests after this one have their
   * port; the events are asserted once it is. */
  gboolean downed = port_cmd("port down", down);
  g_autofree rnicpi_async_event_t *ev_down =
    downed ? cert_poll_async(f, RNICPI_ASYNC_PORT_DOWN, 0, CERT_TIMEOUT_MS) : NULL;
  gboolean upped = port_cmd("port up", up);
  g_autofree rnicpi_async_event_t *ev_up =
    upped ? cert_poll_async(f, RNICPI_ASYNC_PORT_ACTIVE, 0, CERT_TIMEOUT_MS) : NULL;
  g_assert_true(downed && upped);
  if (ev_down == NULL)
    g_test_message("no RNICPI_ASYNC_PORT_DOWN within %d ms of \"%s\"", CERT_TIMEOUT_MS, down);
  if (ev_up == NULL)
    g_test_message("no RNICPI_ASYNC_PORT_ACTIVE within %d ms of \"%s\"", CERT_TIMEOUT_MS, up);
  g_assert_nonnull(ev_down);
  g_assert_nonnull(ev_up);
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *cq = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(QUE->cq_create(f->dev, 4, 0xc1, &cq));
  cert_ok(QUE->cq_destroy(cq));
  cert_ok(DEV->pd_free(pd));
}

/* ---- no-pinning-needed -------------------------------------------------- */

/* A file in @dir whose pages the kernel can reclaim without swap (a disk's
 * page cache, not tmpfs or ramfs), unlinked; -1 where there is none. */
static int
reclaim_file(const char *dir)
{
  struct statfs st;
  if (statfs(dir, &st) != 0 || st.f_type == TMPFS_MAGIC || st.f_type == RAMFS_MAGIC)
    return -1;
  return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/* A region of @len bytes (whole pages) of a shared mapping of such a
 * file, registered; FALSE, the test skipped, where no file can be made. */
static gboolean
reclaim_buf_new(rnicpi_pd_t *pd, cert_buf_t *b, size_t len, uint32_t access)
{
  memset(b, 0, sizeof(*b));
  b->fd = reclaim_file(g_get_tmp_dir());
  if (b->fd < 0)
    b->fd = reclaim_file(".");
  if (b->fd < 0) {
    cert_skipf("no file on a disk to map in %s or the working directory (tmpfs and ramfs "
               "pages are reclaimed only to swap)", g_get_tmp_dir());
    return FALSE;
  }
  g_assert_cmpint(ftruncate(b->fd, (off_t) len), ==, 0);
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
  if (m == MAP_FAILED)
    g_error("a shared mapping of %zu bytes of a file: mmap: %s", len, g_strerror(errno));
  b->mem = b->data = m;
  b->len = b->map_len = len;
  /* MADV_PAGEOUT came with Linux 5.4; an older kernel has no way to ask
   * for the reclaim the test needs. */
  if (madvise(m, len, MADV_PAGEOUT) != 0 && errno == EINVAL) {
    cert_skipf("madvise(MADV_PAGEOUT) is refused (EINVAL): this kernel cannot be asked to "
               "reclaim pages (Linux 5.4 or later can)");
    cert_buf_free(b);
    return FALSE;
  }
  rnicpi_mr_attr_t attr = { .addr = b->data, .length = len,
                            .iova = (uint64_t) (uintptr_t) b->data, .access = access };
  cert_ok(MEM->mr_reg(pd, &attr, &b->mr));
  return TRUE;
}

/* Fill @b with the pattern of @seed, write it back to its file and have
 * the kernel reclaim its pages, as it may reclaim any page nobody locked:
 * the next touch reads the same bytes into other pages.  Returns how many
 * pages stayed resident, and counts those it asked to reclaim in
 * @asked. */
static size_t
reclaim_fill(cert_buf_t *b, uint8_t seed, size_t *asked)
{
  cert_buf_fill(b, seed);
  g_assert_cmpint(msync(b->data, b->len, MS_SYNC), ==, 0);
  g_assert_cmpint(madvise(b->data, b->len, MADV_PAGEOUT), ==, 0);
  size_t page = (size_t) sysconf(_SC_PAGESIZE), resident = 0;
  unsigned char vec[8];
  g_assert_cmpuint(b->len / page, <=, G_N_ELEMENTS(vec));
  g_assert_cmpint(mincore(b->data, b->len, vec), ==, 0);
  for (size_t i = 0; i < b->len / page; i++)
    resident += vec[i] & 1;
  *asked += b->len / page;
  return resident;
}

static void
test_mr_no_pin_reclaim(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("no-pinning-needed: the provider keeps registered memory reachable that "
                 "nobody locked: with the pages of two registered regions (shared mappings "
                 "of a file on a disk) reclaimed by the kernel (madvise MADV_PAGEOUT) before "
                 "each transfer, a Send, an RDMA Write and an RDMA Read move the bytes the "
                 "process sees there, and the bytes they place are the ones it then reads");
  /* cert-rnicpi locks no pages, as the access layer does not where the bit
   * is set.  A device that reaches memory through the pages it found at
   * registration, pinned by nobody, goes on using those once the kernel
   * has reclaimed them and the process reads its bytes into others: it
   * sends stale bytes and places into pages the process no longer sees.
   * A driver's pin (ib_umem) keeps the kernel from reclaiming them. */
  if (!cert_require(f, RNICPI_CAP_NO_PIN) || !cert_require_reads(f))
    return;
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  uint32_t len = (uint32_t) MIN(page, f->caps.max_msg_size);
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  if (!reclaim_buf_new(pr.a.pd, &src, 2 * page,
                       RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | cert_sink_access(f)))
    goto free_pair;
  if (!reclaim_buf_new(pr.p.pd, &dst, 2 * page,
                       RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                         RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE))
    goto free_src;

  /* A Send from reclaimed pages into a receive of reclaimed pages. */
  size_t asked = 0;
  size_t resident = reclaim_fill(&src, 21, &asked) + reclaim_fill(&dst, 22, &asked);
  cert_post_recv(pr.p.qp, &dst, 0, len, 0xd0);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, len, 0xd1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0xd0);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, len);
  wc = cert_wc(pr.a.scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&dst, 0, len, 21);

  /* An RDMA Write of them into the peer's reclaimed second page. */
  resident += reclaim_fill(&src, 23, &asked) + reclaim_fill(&dst, 24, &asked);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, len, 0xd2, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, page), dst.mr->rkey);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xd2);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_placed(f, &pr, cert_raddr(&dst, 0), dst.mr->rkey);
  cert_buf_check(&dst, page, len, 23);
  cert_buf_check(&dst, 0, len, 24);

  /* An RDMA Read of the peer's reclaimed pages into reclaimed ones here. */
  resident += reclaim_fill(&src, 25, &asked) + reclaim_fill(&dst, 26, &asked);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &src, page, len, 0xd3, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 0), dst.mr->rkey);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xd3);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  for (size_t i = 0; i < len; i++)
    g_assert_cmphex(src.data[page + i], ==, cert_pattern(26, i));
  cert_buf_check(&src, 0, len, 25);
  cert_assert_cq_quiet(pr.p.rcq);
  if (resident != 0)
    g_test_message("%zu of the %zu pages the test had reclaimed stayed resident (pinned by "
                   "the device's driver, or kept by the kernel): the transfers from and into "
                   "those did not meet other pages", resident, asked);

  cert_buf_free(&dst);
free_src:
  cert_buf_free(&src);
free_pair:
  cert_pair_free(&pr);
}

void
cert_register_device(void)
{
  cert_add("/rnicpi/device/list", test_device_list);
  cert_add("/rnicpi/device/open", test_device_open);
  cert_add("/rnicpi/device/query", test_device_query);
  cert_add("/rnicpi/device/port-events", test_port_events);
  cert_add("/rnicpi/pd/alloc-free", test_pd_alloc_free);
  cert_add("/rnicpi/pd/free-busy", test_pd_free_busy);
  cert_add("/rnicpi/mr/reg-dereg", test_mr_reg_dereg);
  cert_add("/rnicpi/mr/distinct-keys", test_mr_distinct_keys);
  cert_add("/rnicpi/mr/invalid", test_mr_invalid);
  cert_add("/rnicpi/mr/key-width", test_mr_key_width);
  cert_add("/rnicpi/mr/no-key-reuse", test_mr_no_key_reuse);
  cert_add("/rnicpi/mr/size-limit", test_mr_size_limit);
  cert_add("/rnicpi/mr/no-pin-reclaim", test_mr_no_pin_reclaim);
  cert_add("/rnicpi/mem/alloc", test_mem_alloc);
}
