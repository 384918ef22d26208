/*
 * vp/emul: a thread that waits for one QP's long copy to end (a
 * disconnect, a reset, a destroy: emul_qp_wait_copy) holds back that QP's
 * next copies alone; the process's other connections go on copying with
 * the fabric lock let go (issue 26, point 5).
 *
 * Two connections, each to a child process of its own, by cross-memory
 * attach (ITAPI_EMUL_MAP=0: no region is mapped here).  Every
 * process_vm_writev() call is watched (-Wl,--wrap): the first, of an RDMA
 * Write of LEN bytes on connection A, is held until the test lets it go.
 * Meanwhile another thread waits for that copy: a disconnect of A
 * (emul_qp_wait_copy), or the free of the region A's Write reads from,
 * which waits for the reference the copy holds on it (emul_mr_release).
 * Then an RDMA Write of LEN bytes on connection B
 * must complete, its attach calls made with no fabric lock held.  Then
 * A's copy is let go, the waiter returns, A's Write completes, and each
 * child checks the bytes that landed in its region.
 *
 * In process, a Write's copy is held on a page of its source made
 * inaccessible (a fault, with the locks let go) while the region it
 * writes into is freed: the free waits for the copy's reference.
 *
 * Before, any such waiter (emul_fabric.copy_waiters) sent every attach
 * call of the process under the fabric lock until it had its turn; and
 * it_evd_wait, which claimed its EVD's waiter slot under the access
 * layer's object lock, waited behind the disconnect holding that lock.
 *
 * SPDX-License-Identifier: MIT
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"
#include "emul.h"
#include "emul_ring.h"

#define LEN (256u << 10)
#define LINE_MS 20000
#define SEED_A 3
#define SEED_B 5

/* ---- the watch on process_vm_writev ---- */

static gint hold_next;   /* the next call is held (set by the test) */
static gint held;        /* a call is held now */
static gint release;     /* let the held call go */
static gint locked;      /* calls made under the fabric lock since armed */
static gint calls;

ssize_t __real_process_vm_writev(pid_t pid, const struct iovec *l, unsigned long nl,
                                 const struct iovec *r, unsigned long nr, unsigned long flags);
ssize_t
__wrap_process_vm_writev(pid_t pid, const struct iovec *l, unsigned long nl, const struct iovec *r,
                         unsigned long nr, unsigned long flags)
{
  g_atomic_int_inc(&calls);
  if (emul_fabric_mine)
    g_atomic_int_inc(&locked);
  if (g_atomic_int_compare_and_exchange(&hold_next, 1, 0)) {
    g_atomic_int_set(&held, 1);
    gint64 end = g_get_monotonic_time() + 4 * CONF_TIMEOUT_US;
    while (!g_atomic_int_get(&release) && g_get_monotonic_time() < end)
      g_usleep(1000);
    g_atomic_int_set(&held, 0);
  }
  return __real_process_vm_writev(pid, l, nl, r, nr, flags);
}

/* ---- the child: a target region ---- */

static int
child(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_t t;
  conf_buf_new(&s, &t, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  memset(t.data, 0, LEN);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) t.data, (guint64) t.ctx);
  fflush(stdout);
  g_autofree char *cmd = conf_hear(STDIN_FILENO, 4 * LINE_MS);
  unsigned seed = 0;
  g_assert_nonnull(cmd);
  if (strcmp(cmd, "disc") == 0) {
    /* The parent's Write is still copying into t: end the connection
     * under it, then check what landed all the same. */
    conf_ok(it_ep_disconnect(s.ep, NULL, 0));
    g_free(cmd);
    cmd = conf_hear(STDIN_FILENO, 4 * LINE_MS);
    g_assert_nonnull(cmd);
  }
  g_assert_cmpint(sscanf(cmd, "check %u", &seed), ==, 1);
  conf_buf_check(&t, 0, LEN, seed);
  conf_buf_check_guards(&t);
  printf("landed\n");
  fflush(stdout);
  g_free(conf_hear(STDIN_FILENO, LINE_MS));  /* "bye", or the parent gone */
  conf_buf_free(&t);
  conf_side_close(&s);
  return 0;
}

/* ---- the parent ---- */

static const char *self;

typedef struct {
  conf_side_t s;
  conf_child_t c;
  conf_buf_t src;
  guint64 addr, ctx;
  emul_qp_t *qp;
} conn_t;

/* @k connected to a child of its own, its source filled with @seed. */
static void
conn_open(conn_t *k, unsigned seed)
{
  conf_side_open(&k->s, NULL);
  const char *args[] = { "--child", NULL };
  k->c = conf_child_spawn(self, args, "emul-copy-waiters", NULL, NULL);
  it_conn_qual_t q = conf_child_hear_port(&k->c, LINE_MS);
  emul_fabric_lock();
  GList *before = g_list_copy(emul_ring_conns);
  emul_fabric_unlock();
  conf_ok(conf_connect(&k->s, k->s.ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(k->s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_autofree char *ml = conf_hear(k->c.from, LINE_MS);
  g_assert_nonnull(ml);
  g_assert_cmpint(sscanf(ml, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &k->addr, &k->ctx), ==, 2);
  conf_buf_new(&k->s, &k->src, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&k->src, seed);
  /* This connection's QP: the one new in the list. */
  emul_fabric_lock();
  for (GList *i = emul_ring_conns; i != NULL; i = i->next)
    if (g_list_find(before, i->data) == NULL)
      k->qp = ((emul_xconn_t *) i->data)->qp;
  gboolean cma = k->qp != NULL && k->qp->x->cma_out;
  emul_fabric_unlock();
  g_list_free(before);
  g_assert_nonnull(k->qp);
  g_assert_true(cma);
}

static void
conn_write(conn_t *k, it_dto_cookie_t cookie)
{
  it_lmr_triplet_t t = conf_seg(&k->src, 0, LEN);
  conf_ok(it_post_rdma_write(k->s.ep, &t, 1, cookie, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute((void *) (uintptr_t) k->addr),
                             (it_rmr_context_t) k->ctx));
}

/* The child checks that its region holds @seed's bytes, and ends. */
static void
conn_check_close(conn_t *k, unsigned seed)
{
  conf_say(k->c.to, "check %u\n", seed);
  g_autofree char *ok = conf_hear(k->c.from, 4 * LINE_MS);
  g_assert_cmpstr(ok, ==, "landed");
  conf_say(k->c.to, "bye\n");
  conf_child_reap(&k->c);
  conf_buf_free(&k->src);
  conf_side_close(&k->s);
}

/* A's Write, from a thread of its own: the copy runs in the posting
 * thread, held in the watch. */
static gpointer
write_run(gpointer k)
{
  conn_write(k, 1);
  return NULL;
}

/* @k's Write from a thread of its own, its attach call held in the watch
 * (asserted within a timeout); join the thread once the call is let go. */
static GThread *
write_held(conn_t *k)
{
  g_atomic_int_set(&hold_next, 1);
  GThread *t = g_thread_new("write-held", write_run, k);
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  while (!g_atomic_int_get(&held) && g_get_monotonic_time() < end)
    g_usleep(1000);
  g_assert_true(g_atomic_int_get(&held));
  return t;
}

static gpointer
disconnect_run(gpointer ep)
{
  return GINT_TO_POINTER(it_ep_disconnect(ep, NULL, 0));
}

static gpointer
lmr_free_run(gpointer lmr)
{
  return GINT_TO_POINTER(it_lmr_free(lmr));
}

/* The region of this process whose memory holds @at (fabric lock held). */
static emul_mr_t *
region_of(const void *at)
{
  const uint8_t *p = at;
  for (uint32_t i = 1; i < emul_fabric.mr_len; i++) {
    emul_mr_t *mr = emul_fabric.mr_tab[i];
    if (mr != NULL && mr->mw == NULL && !mr->fr && p >= mr->addr && p < mr->addr + mr->length)
      return mr;
  }
  return NULL;
}

/* A region being freed, watched from outside: its slot, and its PD's
 * object count, which mr_dereg lowers once it no longer waits, just
 * before it frees the region (the access layer's it_lmr_free returns
 * later still, after posts in flight). */
typedef struct {
  emul_mr_t *mr;
  uint32_t idx;
  emul_pd_t *pd;
  gint nobj;
} watch_t;

static void
watch_set(watch_t *v, emul_mr_t *mr)
{
  v->mr = mr;
  v->idx = mr->index;
  v->pd = mr->pd;
  v->nobj = g_atomic_int_get(&mr->pd->nobj);
}

/* The references left to @v's region, or -1 once mr_dereg has returned
 * (fabric lock held: it reads the region only while the dereg still
 * waits under or for that lock). */
static gint
watch_ref(const watch_t *v)
{
  if (g_atomic_int_get(&v->pd->nobj) != v->nobj)
    return -1;
  return g_atomic_int_get(&v->mr->ref);
}

/* Until @v's region has left the table and its dereg either waits for
 * the one reference left (the table's was put) or returned, for up to a
 * timeout: the references left, -1 (returned), or -2 (neither came). */
static gint
watch_released(const watch_t *v)
{
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  for (;;) {
    emul_fabric_lock();
    gboolean gone = emul_fabric.mr_tab[v->idx] != v->mr;
    gint ref = watch_ref(v);
    emul_fabric_unlock();
    if (gone && ref <= 1)
      return ref;
    if (g_get_monotonic_time() > end)
      return -2;
    g_usleep(1000);
  }
}

/* Until *@count (fabric lock) reaches 1, for up to a timeout. */
static gboolean
waiting(const guint *count)
{
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  for (;;) {
    emul_fabric_lock();
    guint w = *count;
    emul_fabric_unlock();
    if (w >= 1)
      return TRUE;
    if (g_get_monotonic_time() > end)
      return FALSE;
    g_usleep(1000);
  }
}

typedef enum { BY_DISCONNECT, BY_DEREG } wait_kind_t;

/* A's Write held in its attach call; a thread that waits for it (@kind:
 * a disconnect of A, waiting for A's copies; the free of the region A's
 * Write reads from, waiting for the copy's reference to it); meanwhile
 * B's Write must complete with no attach call under the fabric lock. */
static void
test_other_qp_unlocked(gconstpointer data)
{
  wait_kind_t kind = GPOINTER_TO_INT(data);
  g_atomic_int_set(&release, 0);
  conn_t a, b;
  conn_open(&a, SEED_A);
  conn_open(&b, SEED_B);
  watch_t src = { 0 };
  emul_fabric_lock();
  emul_mr_t *mr = region_of(a.src.data);
  if (mr != NULL)
    watch_set(&src, mr);
  emul_fabric_unlock();
  g_assert_nonnull(mr);

  /* A's Write, its attach call held (in the posting thread). */
  g_atomic_int_set(&locked, 0);
  GThread *wa = write_held(&a);
  g_assert_cmpint(g_atomic_int_get(&locked), ==, 0);

  /* The thread that waits for that copy. */
  GThread *t;
  const char *who;
  if (kind == BY_DISCONNECT) {
    t = g_thread_new("disconnect", disconnect_run, a.s.ep);
    g_assert_true(waiting(&a.qp->copy_waiters));
    who = "a disconnect of connection A";
  } else {
    /* The copy holds the region (the table's reference and its own);
     * the free waits for the copy's. */
    emul_fabric_lock();
    gint ref = watch_ref(&src);
    emul_fabric_unlock();
    g_assert_cmpint(ref, ==, 2);
    t = g_thread_new("lmr-free", lmr_free_run, a.src.lmr);
    g_assert_cmpint(watch_released(&src), ==, 1);
    who = "an it_lmr_free of the region A's Write reads from";
  }

  /* B's Write goes on meanwhile, its attach calls with no fabric lock. */
  int before = g_atomic_int_get(&calls);
  conn_write(&b, 2);
  conf_dto(b.s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  g_assert_cmpint(g_atomic_int_get(&calls), >, before);
  if (!g_atomic_int_get(&held))
    g_error("connection B's Write completed only once A's copy was let go: %s, which waits for "
            "A's copy, held up B's completion", who);
  int under = g_atomic_int_get(&locked);
  if (under != 0)
    g_error("%d attach calls of connection B's Write were made under the fabric lock while %s "
            "waited for A's copy", under, who);

  if (kind == BY_DEREG) {
    emul_fabric_lock();
    gint ref = watch_ref(&src);
    emul_fabric_unlock();
    if (ref != 1)
      g_error("the region A's held copy reads from was deregistered before the copy ended");
  }

  /* A's copy let go: the waiter returns, A's Write completes. */
  g_atomic_int_set(&release, 1);
  g_thread_join(wa);
  conf_ok((it_status_t) GPOINTER_TO_INT(g_thread_join(t)));
  conf_dto(a.s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  if (kind == BY_DEREG)
    a.src.lmr = IT_NULL_HANDLE;  /* freed above */
  conn_check_close(&a, SEED_A);
  conn_check_close(&b, SEED_B);
}

/* The peer ends the connection while A's Write is in its attach call:
 * the copy ends whole, so the Write completes successfully. */
static void
test_peer_disconnect_during_copy(void)
{
  g_test_summary("the peer process disconnects while an RDMA Write's attach call is held, and "
                 "its DISC is taken meanwhile (the QP flushed under the copy); once the copy "
                 "ends whole, the Write completes successfully, not flushed, and the peer finds "
                 "every byte in its region");
  g_atomic_int_set(&release, 0);
  conn_t a;
  conn_open(&a, SEED_A);
  GThread *wa = write_held(&a);
  conf_say(a.c.to, "disc\n");
  /* Until the peer's DISC has flushed the QP under the held copy. */
  gboolean flushed = FALSE;
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  while (!flushed && g_get_monotonic_time() < end) {
    emul_fabric_lock();
    flushed = a.qp->xcopy_flushed;
    emul_fabric_unlock();
    if (!flushed)
      g_usleep(1000);
  }
  g_atomic_int_set(&release, 1);
  g_thread_join(wa);
  g_assert_true(flushed);
  conf_dto(a.s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_wait(a.s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conn_check_close(&a, SEED_A);
}

/* ---- an in-process copy held ---- */

/* A page of the source of an in-process Write is made inaccessible: the
 * copy, with its locks let go, faults on it, and the handler holds it
 * there until the test lets it go, then gives the page back and the copy
 * goes on from where it stopped. */
static uint8_t *fault_page;
static gint fault_held;
static struct sigaction fault_old;

static void
fault_hold(int sig, siginfo_t *si, void *uc)
{
  (void) uc;
  uint8_t *at = si->si_addr;
  if (at < fault_page || at >= fault_page + 4096) {
    sigaction(sig, &fault_old, NULL);  /* not ours: fault again, as without the watch */
    return;
  }
  g_atomic_int_set(&fault_held, 1);
  struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };
  for (int n = 0; !g_atomic_int_get(&release) && n < 4 * LINE_MS; n++)
    nanosleep(&ms, NULL);
  mprotect(fault_page, 4096, PROT_READ | PROT_WRITE);
  g_atomic_int_set(&fault_held, 0);
}

typedef struct {
  conf_pair_t *p;
  conf_buf_t *src, *dst;
} local_write_t;

static gpointer
local_write_run(gpointer arg)
{
  local_write_t *lw = arg;
  it_lmr_triplet_t t = conf_seg(lw->src, 0, LEN);
  return GINT_TO_POINTER(it_post_rdma_write(lw->p->a.ep, &t, 1, 1, IT_COMPLETION_FLAG,
                                            it_make_rdma_addr_absolute(lw->dst->data),
                                            (it_rmr_context_t) lw->dst->ctx));
}

/* seeded defect E43 (the removal's wait for references taken out) fails
 * this at once: the dereg returns while the copy still writes. */
static void
test_dereg_beside_local_copy(void)
{
  g_test_summary("an in-process RDMA Write of 256 KiB is held in its copy (a fault on a page "
                 "of its source, with the locks let go) while the region it writes into is "
                 "freed: the region leaves the table, its dereg waits for the copy's reference "
                 "to it and returns only after the copy ended; the Write completes successfully "
                 "with every byte in place");
  g_atomic_int_set(&release, 0);
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, SEED_A);
  watch_t w = { 0 };
  emul_fabric_lock();
  emul_mr_t *mr = region_of(dst.data);
  if (mr != NULL)
    watch_set(&w, mr);
  emul_fabric_unlock();
  g_assert_nonnull(mr);

  /* The Write, held in its copy on a page in the middle of its source. */
  fault_page = src.mem + CONF_GUARD + LEN / 2;  /* page-aligned: src.mem is */
  struct sigaction sa = { .sa_sigaction = fault_hold, .sa_flags = SA_SIGINFO };
  sigemptyset(&sa.sa_mask);
  g_assert_cmpint(sigaction(SIGSEGV, &sa, &fault_old), ==, 0);
  g_assert_cmpint(mprotect(fault_page, 4096, PROT_NONE), ==, 0);
  local_write_t lw = { .p = &p, .src = &src, .dst = &dst };
  GThread *wt = g_thread_new("local-write", local_write_run, &lw);
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  while (!g_atomic_int_get(&fault_held) && g_get_monotonic_time() < end)
    g_usleep(1000);
  g_assert_cmpint(g_atomic_int_get(&fault_held), ==, 1);

  /* The copy holds the target (the table's reference and its own); its
   * free waits for the copy's, and still does a while later. */
  emul_fabric_lock();
  gint ref = watch_ref(&w);
  emul_fabric_unlock();
  g_assert_cmpint(ref, ==, 2);
  GThread *ft = g_thread_new("lmr-free", lmr_free_run, dst.lmr);
  g_assert_cmpint(watch_released(&w), ==, 1);
  g_usleep(50000);
  emul_fabric_lock();
  ref = watch_ref(&w);
  emul_fabric_unlock();
  if (ref != 1)
    g_error("the region a held in-process copy writes into was deregistered before the copy "
            "ended (references left: %d, -1: mr_dereg returned)", ref);

  /* The copy let go: it ends, the dereg returns, the Write completes. */
  g_atomic_int_set(&release, 1);
  conf_ok((it_status_t) GPOINTER_TO_INT(g_thread_join(wt)));
  conf_ok((it_status_t) GPOINTER_TO_INT(g_thread_join(ft)));
  g_assert_cmpint(sigaction(SIGSEGV, &fault_old, NULL), ==, 0);
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_buf_check(&dst, 0, LEN, SEED_A);
  dst.lmr = IT_NULL_HANDLE;  /* freed above */
  conf_buf_free(&dst);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

int
main(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "--child") == 0)
    return child();
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/emul/copy-waiters/beside-disconnect", GINT_TO_POINTER(BY_DISCONNECT),
                       test_other_qp_unlocked);
  g_test_add_data_func("/emul/copy-waiters/beside-dereg", GINT_TO_POINTER(BY_DEREG),
                       test_other_qp_unlocked);
  g_test_add_func("/emul/copy-waiters/peer-disconnect", test_peer_disconnect_during_copy);
  g_test_add_func("/emul/copy-waiters/dereg-beside-local-copy", test_dereg_beside_local_copy);
  return g_test_run();
}
