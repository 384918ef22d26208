/*
 * Conformance: scale.  Many connected endpoint pairs in one process, and
 * across two processes, each moving verified data; the setup time and the
 * memory per endpoint are reported (g_test_message, and on stdout as
 * "scale: ..." lines for scripts).
 *
 *   ITAPI_SCALE_PAIRS      pairs in one process (default 1000)
 *   ITAPI_SCALE_XPAIRS     pairs across two processes (default 64)
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"

#define MSG 64

static long
rss_kib(void)
{
  g_autofree char *status = NULL;
  if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL))
    return 0;
  const char *l = strstr(status, "VmRSS:");
  return l != NULL ? (long) g_ascii_strtoll(l + 6, NULL, 10) : 0;
}

/* One side of many endpoints: shared EVDs sized for all of them. */
typedef struct {
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto, cm, req;
  it_ep_handle_t *ep;
  conf_buf_t buf;
  size_t n;
} many_t;

static void
many_open(many_t *m, size_t n)
{
  memset(m, 0, sizeof(*m));
  m->n = n;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &m->ia));
  conf_ok(it_pz_create(m->ia, &m->pz));
  conf_ok(it_evd_create(m->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * n + 16, 1,
                        IT_NULL_HANDLE, &m->dto, NULL));
  conf_ok(it_evd_create(m->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * n + 16, 1,
                        IT_NULL_HANDLE, &m->cm, NULL));
  conf_ok(it_evd_create(m->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, n + 16, 1,
                        IT_NULL_HANDLE, &m->req, NULL));
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.max_request_dtos = 2;
  a.max_recv_dtos = 2;
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  m->ep = g_new0(it_ep_handle_t, n);
  for (size_t i = 0; i < n; i++)
    conf_ok(it_ep_rc_create(m->pz, m->dto, m->dto, m->cm, IT_EP_NO_FLAG, &a, &m->ep[i]));
  /* One region for all: MSG bytes per endpoint. */
  conf_side_t shim = { .ia = m->ia, .pz = m->pz };
  conf_buf_new(&shim, &m->buf, n * MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
}

static void
many_close(many_t *m)
{
  conf_buf_free(&m->buf);
  conf_ok(it_ia_free(m->ia));
  g_free(m->ep);
}

static void
fill_msg(unsigned char *p, size_t pair)
{
  for (size_t i = 0; i < MSG; i++)
    p[i] = (unsigned char) (pair * 131 + i * 7 + 3);
}

static void
check_msg(const unsigned char *p, size_t pair)
{
  for (size_t i = 0; i < MSG; i++)
    if (p[i] != (unsigned char) (pair * 131 + i * 7 + 3))
      g_error("pair %zu: byte %zu is 0x%02x", pair, i, p[i]);
}

/* Map an event's EP handle back to its index. */
static size_t
index_of(const many_t *m, it_ep_handle_t ep, GHashTable *idx)
{
  gpointer v = g_hash_table_lookup(idx, ep);
  if (v == NULL)
    g_error("an event names EP %p, which is not one of the %zu", (void *) ep, m->n);
  return GPOINTER_TO_SIZE(v) - 1;
}

static GHashTable *
index_table(const many_t *m)
{
  GHashTable *h = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (size_t i = 0; i < m->n; i++)
    g_hash_table_insert(h, m->ep[i], GSIZE_TO_POINTER(i + 1));
  return h;
}

static void
test_pairs_in_process(void)
{
  size_t n = conf_env_count("ITAPI_SCALE_PAIRS", 1000);
  g_test_summary("Scale: many connected endpoint pairs in one process (ITAPI_SCALE_PAIRS, default "
                 "1000), each carrying a verified message; setup time and memory per endpoint "
                 "reported");
  long rss0 = rss_kib();
  gint64 t0 = g_get_monotonic_time();
  many_t a, p;
  many_open(&a, n);
  many_open(&p, n);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  it_listen_handle_t lh;
  conf_ok(it_listen_create(p.ia, 0, p.req, IT_LISTEN_NO_FLAG, &q, &lh));
  it_path_t path;
  conf_side_t shim = { .ia = a.ia };
  conf_path(&shim, &path);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));

  /* Receives first (the passive EPs take the requests in arrival order, so
   * each passive EP gets one receive before it is accepted). */
  for (size_t i = 0; i < n; i++) {
    it_lmr_triplet_t t = conf_seg(&p.buf, i * MSG, MSG);
    conf_ok(it_post_recv(p.ep[i], &t, 1, i, IT_COMPLETION_FLAG));
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t tag = (uint32_t) i;
    conf_ok(it_ep_connect(a.ep[i], &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, (unsigned char *) &tag,
                          sizeof(tag)));
  }
  /* Passive EP j serves the request whose private data names active i. */
  size_t *peer_of = g_new0(size_t, n);
  for (size_t j = 0; j < n; j++) {
    it_event_t ev = conf_wait(p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
    uint32_t tag;
    memcpy(&tag, ev.conn_req.private_data, sizeof(tag));
    g_assert_cmpuint(tag, <, n);
    peer_of[j] = tag;
    conf_ok(it_ep_accept(p.ep[j], ev.conn_req.cn_est_id, NULL, 0));
  }
  for (size_t k = 0; k < n; k++) {
    conf_wait(a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    conf_wait(p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  }
  gint64 t_setup = g_get_monotonic_time() - t0;
  long rss1 = rss_kib();

  for (size_t i = 0; i < n; i++) {
    fill_msg(a.buf.data + i * MSG, i);
    it_lmr_triplet_t t = conf_seg(&a.buf, i * MSG, MSG);
    conf_ok(it_post_send(a.ep[i], &t, 1, i, IT_COMPLETION_FLAG));
  }
  GHashTable *pidx = index_table(&p), *aidx = index_table(&a);
  gboolean *got = g_new0(gboolean, n);
  for (size_t k = 0; k < n; k++) {
    it_event_t ev = conf_wait(p.dto, IT_DTO_RC_RECV_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    size_t j = index_of(&p, ev.dto_cmpl.ep, pidx);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, j);
    g_assert_false(got[j]);
    got[j] = TRUE;
    check_msg(p.buf.data + j * MSG, peer_of[j]);
    ev = conf_wait(a.dto, IT_DTO_SEND_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, index_of(&a, ev.dto_cmpl.ep, aidx));
  }
  conf_assert_empty(p.dto);
  conf_assert_empty(a.dto);
  gint64 t_all = g_get_monotonic_time() - t0;
  g_autofree char *line = g_strdup_printf(
      "scale: %zu pairs in one process on %s: setup %.1f ms (%.1f us per endpoint), all data %.1f ms, "
      "memory %ld KiB (%.2f KiB per endpoint)", n, conf_ia_name(), t_setup / 1000.0,
      t_setup / (2.0 * n), t_all / 1000.0, rss1 - rss0, (rss1 - rss0) / (2.0 * n));
  g_test_message("%s", line);
  g_hash_table_unref(pidx);
  g_hash_table_unref(aidx);
  g_free(got);
  g_free(peer_of);
  conf_ok(it_listen_free(lh));
  many_close(&a);
  many_close(&p);
}

/* The child of the cross-process test: listens, accepts n, checks every
 * message, answers "ok" once all arrived, then waits for the disconnects. */
static int
child_accept(int to_parent, size_t n)
{
  many_t p;
  many_open(&p, n);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  it_listen_handle_t lh;
  conf_ok(it_listen_create(p.ia, 0, p.req, IT_LISTEN_NO_FLAG, &q, &lh));
  uint16_t port = ntohs(q.conn_qual.port);
  if (write(to_parent, &port, sizeof(port)) != sizeof(port))
    return 3;
  for (size_t i = 0; i < n; i++) {
    it_lmr_triplet_t t = conf_seg(&p.buf, i * MSG, MSG);
    conf_ok(it_post_recv(p.ep[i], &t, 1, i, IT_COMPLETION_FLAG));
  }
  size_t *peer_of = g_new0(size_t, n);
  for (size_t j = 0; j < n; j++) {
    it_event_t ev = conf_wait(p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
    uint32_t tag;
    memcpy(&tag, ev.conn_req.private_data, sizeof(tag));
    peer_of[j] = tag;
    conf_ok(it_ep_accept(p.ep[j], ev.conn_req.cn_est_id, NULL, 0));
  }
  GHashTable *idx = index_table(&p);
  for (size_t k = 0; k < n; k++)
    conf_wait(p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  for (size_t k = 0; k < n; k++) {
    it_event_t ev = conf_wait(p.dto, IT_DTO_RC_RECV_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    size_t j = index_of(&p, ev.dto_cmpl.ep, idx);
    check_msg(p.buf.data + j * MSG, peer_of[j]);
  }
  char ok = 'k';
  if (write(to_parent, &ok, 1) != 1)
    return 3;
  for (size_t k = 0; k < n; k++)
    conf_wait(p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_hash_table_unref(idx);
  g_free(peer_of);
  conf_ok(it_listen_free(lh));
  many_close(&p);
  return 0;
}

static void
test_pairs_across_processes(void)
{
  size_t n = conf_env_count("ITAPI_SCALE_XPAIRS", 64);
  g_test_summary("Scale: endpoint pairs across two processes (ITAPI_SCALE_XPAIRS, default 64), each "
                 "carrying a verified message, then disconnected");
  int pipefd[2];
  g_assert_cmpint(pipe(pipefd), ==, 0);
  gint64 t0 = g_get_monotonic_time();
  /* The child runs the program anew (fork alone would leave it without the
   * provider threads this process already started). */
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *fdarg = g_strdup_printf("%d", pipefd[1]);
  g_autofree char *narg = g_strdup_printf("%zu", n);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    execl(self, self, "--scale-child", fdarg, narg, (char *) NULL);
    _exit(127);
  }
  close(pipefd[1]);
  uint16_t port = 0;
  g_assert_cmpint(read(pipefd[0], &port, sizeof(port)), ==, (int) sizeof(port));
  many_t a;
  many_open(&a, n);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(port);
  it_path_t path;
  conf_side_t shim = { .ia = a.ia };
  conf_path(&shim, &path);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  for (size_t i = 0; i < n; i++) {
    uint32_t tag = (uint32_t) i;
    conf_ok(it_ep_connect(a.ep[i], &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, (unsigned char *) &tag,
                          sizeof(tag)));
  }
  for (size_t k = 0; k < n; k++)
    conf_wait(a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  gint64 t_setup = g_get_monotonic_time() - t0;
  for (size_t i = 0; i < n; i++) {
    fill_msg(a.buf.data + i * MSG, i);
    it_lmr_triplet_t t = conf_seg(&a.buf, i * MSG, MSG);
    conf_ok(it_post_send(a.ep[i], &t, 1, i, IT_COMPLETION_FLAG));
  }
  for (size_t k = 0; k < n; k++) {
    it_event_t ev = conf_wait(a.dto, IT_DTO_SEND_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  }
  char ok = 0;
  g_assert_cmpint(read(pipefd[0], &ok, 1), ==, 1); /* the child checked every message */
  g_assert_cmpint(ok, ==, 'k');
  for (size_t i = 0; i < n; i++)
    conf_ok(it_ep_disconnect(a.ep[i], NULL, 0));
  for (size_t k = 0; k < n; k++)
    conf_wait(a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  g_autofree char *line = g_strdup_printf("scale: %zu pairs across two processes on %s: setup %.1f ms "
                                          "(%.1f us per pair)", n, conf_ia_name(), t_setup / 1000.0,
                                          t_setup / (double) n);
  g_test_message("%s", line);
  close(pipefd[0]);
  many_close(&a);
}

int
main(int argc, char **argv)
{
  if (argc == 4 && strcmp(argv[1], "--scale-child") == 0) {
    conf_child_watchdog_start(); /* never outlive a stuck parent by much */
    return child_accept(atoi(argv[2]), (size_t) g_ascii_strtoull(argv[3], NULL, 10));
  }
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/scale/pairs-in-process", test_pairs_in_process);
  g_test_add_func("/conformance/scale/pairs-across-processes", test_pairs_across_processes);
  return g_test_run();
}
