/*
 * lab-siw-probe: what a kernel RDMA device does with zero-based regions,
 * remote rights, a Write to a dead key and RLIMIT_MEMLOCK, over plain
 * libibverbs and librdmacm, without the project's providers: the evidence
 * behind the siw lines of conformance/deviations/siw0.txt (doc/lab.md).
 *
 *   lab-siw-probe ADDR CASE   one connection to itself on the device that
 *                             holds ADDR; the client does one RDMA Write
 *                             or Read of the server's region and prints
 *                             its completion, the server what landed
 *   lab-siw-probe -m DEVICE   register 64 MiB under an 8 MiB RLIMIT_MEMLOCK
 *   lab-siw-probe -w ADDR destroy|error
 *                             a connect the server leaves unanswered, then
 *                             withdrawn as vp/ib ends it at its timeout: the
 *                             client's QP to ERROR and its id destroyed
 *                             (destroy: how long rdma_destroy_id takes), or
 *                             its QP to ERROR alone (error); then the server
 *                             accepts: what each side sees
 *
 * CASE:
 *   zb-local-offset   the client's region is zero-based (iova 0), its
 *                     segment names offset 0x80
 *   zb-local-va       the same region, the segment at its virtual address
 *   zb-remote-offset  the server's region is zero-based, the Write goes to
 *                     offset 0x40
 *   read-no-right     a Read of a region registered without remote read
 *   write-qp-no-right a Write to a queue pair whose rights lack remote write
 *   dead-key-small    a 256-byte Write with a key that names no region
 *   dead-key-big      the same with 1 MiB
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define PROBE_LEN (4u << 20)
#define PROBE_PORT 7471

typedef struct {
  uint64_t raddr;
  uint32_t rkey;
} probe_offer_t;

static const char *probe_addr, *probe_case;
static pthread_barrier_t probe_bar;

static _Noreturn void
probe_die(const char *what)
{
  fprintf(stderr, "lab-siw-probe: %s: %s\n", what, strerror(errno));
  exit(2);
}

static int
probe_is(const char *c)
{
  return strcmp(probe_case, c) == 0;
}

static int
probe_iwarp(struct rdma_cm_id *id)
{
  return id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

/* Move @qp to @state with what rdma_cm computed for @id, and @access as
 * its rights (vp/ib's way: rdma_cm leaves a QP it did not create alone). */
static void
probe_qp_to(struct ibv_qp *qp, struct rdma_cm_id *id, enum ibv_qp_state state, unsigned access)
{
  struct ibv_qp_attr a;
  int mask = 0;
  memset(&a, 0, sizeof(a));
  a.qp_state = state;
  if (rdma_init_qp_attr(id, &a, &mask) != 0)
    probe_die("rdma_init_qp_attr");
  if (state == IBV_QPS_INIT)
    a.qp_access_flags = access;
  if (ibv_modify_qp(qp, &a, mask) != 0)
    probe_die("ibv_modify_qp");
}

static struct ibv_qp *
probe_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq, unsigned access)
{
  struct ibv_qp_init_attr ia = {
    .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
  };
  struct ibv_qp *qp = ibv_create_qp(pd, &ia);
  if (qp == NULL)
    probe_die("ibv_create_qp");
  if (probe_iwarp(id)) {
    /* iWARP: INIT here; the connection moves it on (iw_cm). */
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .qp_access_flags = access };
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) != 0)
      probe_die("ibv_modify_qp INIT");
  } else {
    probe_qp_to(qp, id, IBV_QPS_INIT, access);
  }
  return qp;
}

static void *
probe_server(void *arg)
{
  (void) arg;
  struct rdma_cm_id *lid, *id;
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PROBE_PORT) };
  inet_pton(AF_INET, probe_addr, &sa.sin_addr);
  if (rdma_create_id(NULL, &lid, NULL, RDMA_PS_TCP) != 0)
    probe_die("rdma_create_id");
  if (rdma_bind_addr(lid, (struct sockaddr *) &sa) != 0)
    probe_die("rdma_bind_addr");
  if (rdma_listen(lid, 1) != 0)
    probe_die("rdma_listen");
  pthread_barrier_wait(&probe_bar);
  if (rdma_get_request(lid, &id) != 0)
    probe_die("rdma_get_request");
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
  if (pd == NULL || cq == NULL)
    probe_die("server pd or cq");
  unsigned qp_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  unsigned mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (probe_is("write-qp-no-right"))
    qp_access = IBV_ACCESS_REMOTE_READ;
  if (probe_is("read-no-right"))
    mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  struct ibv_qp *qp = probe_qp(id, pd, cq, qp_access);
  char *buf = aligned_alloc(4096, PROBE_LEN);
  if (buf == NULL)
    probe_die("aligned_alloc");
  memset(buf, 0x22, PROBE_LEN);
  uint64_t iova = probe_is("zb-remote-offset") ? 0 : (uintptr_t) buf;
  struct ibv_mr *mr = ibv_reg_mr_iova2(pd, buf, PROBE_LEN, iova, mr_access);
  if (mr == NULL)
    probe_die("server ibv_reg_mr_iova2");
  if (!probe_iwarp(id)) {
    probe_qp_to(qp, id, IBV_QPS_RTR, qp_access);
    probe_qp_to(qp, id, IBV_QPS_RTS, qp_access);
  }
  probe_offer_t offer = { .raddr = iova + 64, .rkey = mr->rkey };
  struct rdma_conn_param cp = {
    .private_data = &offer, .private_data_len = sizeof(offer),
    .responder_resources = 1, .initiator_depth = 1, .qp_num = qp->qp_num,
  };
  if (rdma_accept(id, &cp) != 0)
    probe_die("rdma_accept");
  pthread_barrier_wait(&probe_bar); /* the client's request completed */
  usleep(300000);
  for (size_t i = 0; i < PROBE_LEN; i++) {
    if (buf[i] == 0x11) {
      printf("server: the client's data landed at offset %zu\n", i);
      return NULL;
    }
  }
  printf("server: nothing landed\n");
  return NULL;
}

static int
probe_memlock(const char *name)
{
  struct rlimit rl = { 8u << 20, 8u << 20 };
  if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
    probe_die("setrlimit");
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  for (int i = 0; i < n; i++) {
    if (strcmp(ibv_get_device_name(list[i]), name) != 0)
      continue;
    struct ibv_context *ctx = ibv_open_device(list[i]);
    struct ibv_pd *pd = ctx != NULL ? ibv_alloc_pd(ctx) : NULL;
    if (pd == NULL)
      probe_die("ibv_open_device or ibv_alloc_pd");
    size_t big = 64u << 20;
    char *m = aligned_alloc(4096, big);
    if (m == NULL)
      probe_die("aligned_alloc");
    memset(m, 1, big);
    struct ibv_mr *mr = ibv_reg_mr(pd, m, big, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    printf("%s: 64 MiB under an 8 MiB RLIMIT_MEMLOCK, euid %d: %s\n", name, (int) geteuid(),
           mr != NULL ? "registered" : strerror(errno));
    return 0;
  }
  fprintf(stderr, "lab-siw-probe: no device %s\n", name);
  return 1;
}

/* The next event of @ch within @ms, printed with @who; 0 if none came. */
static int
probe_next_event(struct rdma_event_channel *ch, const char *who, int ms)
{
  struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
  struct rdma_cm_event *e;
  if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(ch, &e) != 0) {
    printf("%s: no event within %d ms\n", who, ms);
    return 0;
  }
  printf("%s: %s, status %d\n", who, rdma_event_str(e->event), e->status);
  rdma_ack_cm_event(e);
  return 1;
}

static double
probe_ms(const struct timespec *a, const struct timespec *b)
{
  return (double) (b->tv_sec - a->tv_sec) * 1e3 + (double) (b->tv_nsec - a->tv_nsec) / 1e6;
}

/* The server's half of -w: a request it leaves unanswered until the
 * client has withdrawn it, then accepts. */
static void *
probe_withdraw_server(void *arg)
{
  (void) arg;
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *lid;
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PROBE_PORT + 1) };
  inet_pton(AF_INET, probe_addr, &sa.sin_addr);
  if (ch == NULL || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) != 0)
    probe_die("server rdma_create_id");
  if (rdma_bind_addr(lid, (struct sockaddr *) &sa) != 0 || rdma_listen(lid, 1) != 0)
    probe_die("server rdma_listen");
  pthread_barrier_wait(&probe_bar); /* listening */
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(ch, &e) != 0 || e->event != RDMA_CM_EVENT_CONNECT_REQUEST)
    probe_die("server: no connection request");
  struct rdma_cm_id *id = e->id;
  rdma_ack_cm_event(e);
  printf("server: the request came; left unanswered\n");
  pthread_barrier_wait(&probe_bar); /* the request is here */
  pthread_barrier_wait(&probe_bar); /* the client withdrew it */
  struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };
  int mask = 0;
  if (!probe_iwarp(id) && rdma_init_qp_attr(id, &qa, &mask) != 0) {
    printf("server: the request is gone (rdma_init_qp_attr: %s)\n", strerror(errno));
    return NULL;
  }
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
  if (pd == NULL || cq == NULL)
    probe_die("server pd or cq");
  struct ibv_qp *qp = probe_qp(id, pd, cq, IBV_ACCESS_REMOTE_WRITE);
  if (!probe_iwarp(id)) {
    probe_qp_to(qp, id, IBV_QPS_RTR, IBV_ACCESS_REMOTE_WRITE);
    probe_qp_to(qp, id, IBV_QPS_RTS, IBV_ACCESS_REMOTE_WRITE);
  }
  struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .qp_num = qp->qp_num };
  int rc = rdma_accept(id, &cp);
  printf("server: rdma_accept of the withdrawn request: %s\n", rc == 0 ? "ok" : strerror(errno));
  while (rc == 0 && probe_next_event(ch, "server", 12000))
    ;
  return NULL;
}

static int
probe_withdraw(int destroy)
{
  pthread_t server;
  pthread_create(&server, NULL, probe_withdraw_server, NULL);
  pthread_barrier_wait(&probe_bar);
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *id;
  struct rdma_cm_event *e;
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PROBE_PORT + 1) };
  inet_pton(AF_INET, probe_addr, &sa.sin_addr);
  if (ch == NULL || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)
    probe_die("rdma_create_id");
  if (rdma_resolve_addr(id, NULL, (struct sockaddr *) &sa, 2000) != 0 ||
      rdma_get_cm_event(ch, &e) != 0 || e->event != RDMA_CM_EVENT_ADDR_RESOLVED)
    probe_die("rdma_resolve_addr");
  rdma_ack_cm_event(e);
  if (rdma_resolve_route(id, 2000) != 0 || rdma_get_cm_event(ch, &e) != 0 ||
      e->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
    probe_die("rdma_resolve_route");
  rdma_ack_cm_event(e);
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
  if (pd == NULL || cq == NULL)
    probe_die("client pd or cq");
  struct ibv_qp *qp = probe_qp(id, pd, cq, IBV_ACCESS_REMOTE_WRITE);
  struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .qp_num = qp->qp_num };
  if (rdma_connect(id, &cp) != 0)
    probe_die("rdma_connect");
  pthread_barrier_wait(&probe_bar); /* the server has the request */
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != 0)
    probe_die("ibv_modify_qp ERR");
  printf("client: QP in ERROR\n");
  if (destroy) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rdma_destroy_id(id);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("client: rdma_destroy_id of the pending connect took %.0f ms\n", probe_ms(&t0, &t1));
  }
  pthread_barrier_wait(&probe_bar); /* withdrawn: the server accepts */
  while (!destroy && probe_next_event(ch, "client", 12000))
    ;
  pthread_join(server, NULL);
  return 0;
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "-m") == 0)
    return probe_memlock(argv[2]);
  if (argc == 4 && strcmp(argv[1], "-w") == 0) {
    probe_addr = argv[2];
    pthread_barrier_init(&probe_bar, NULL, 2);
    return probe_withdraw(strcmp(argv[3], "destroy") == 0);
  }
  if (argc != 3) {
    fprintf(stderr, "usage: lab-siw-probe ADDR CASE | lab-siw-probe -m DEVICE | "
                    "lab-siw-probe -w ADDR destroy|error\n");
    return 1;
  }
  probe_addr = argv[1];
  probe_case = argv[2];
  pthread_barrier_init(&probe_bar, NULL, 2);
  pthread_t server;
  pthread_create(&server, NULL, probe_server, NULL);
  pthread_barrier_wait(&probe_bar);

  struct rdma_cm_id *id;
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PROBE_PORT) };
  inet_pton(AF_INET, probe_addr, &sa.sin_addr);
  if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) != 0)
    probe_die("rdma_create_id");
  if (rdma_resolve_addr(id, NULL, (struct sockaddr *) &sa, 2000) != 0)
    probe_die("rdma_resolve_addr");
  if (rdma_resolve_route(id, 2000) != 0)
    probe_die("rdma_resolve_route");
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
  if (pd == NULL || cq == NULL)
    probe_die("client pd or cq");
  unsigned access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  struct ibv_qp *qp = probe_qp(id, pd, cq, access);
  char *buf = aligned_alloc(4096, PROBE_LEN);
  if (buf == NULL)
    probe_die("aligned_alloc");
  memset(buf, 0x11, PROBE_LEN);
  int zero_based = probe_is("zb-local-offset") || probe_is("zb-local-va");
  struct ibv_mr *mr = ibv_reg_mr_iova2(pd, buf, PROBE_LEN, zero_based ? 0 : (uintptr_t) buf,
                                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == NULL)
    probe_die("client ibv_reg_mr_iova2");
  struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .qp_num = qp->qp_num };
  if (rdma_connect(id, &cp) != 0)
    probe_die("rdma_connect");
  probe_offer_t offer;
  memcpy(&offer, id->event->param.conn.private_data, sizeof(offer));
  if (!probe_iwarp(id)) {
    /* IB: the reply came (CONNECT_RESPONSE); RTR, RTS, then the RTU. */
    probe_qp_to(qp, id, IBV_QPS_RTR, access);
    probe_qp_to(qp, id, IBV_QPS_RTS, access);
    if (rdma_establish(id) != 0)
      probe_die("rdma_establish");
  }

  int read = probe_is("read-no-right");
  int dead = probe_is("dead-key-small") || probe_is("dead-key-big");
  if (read)
    memset(buf, 0, PROBE_LEN);
  struct ibv_sge sge = {
    .addr = probe_is("zb-local-offset") ? 0x80 : (uintptr_t) buf + 0x80,
    .length = probe_is("dead-key-big") ? 1u << 20 : 256,
    .lkey = mr->lkey,
  };
  struct ibv_send_wr wr = {
    .wr_id = 1, .sg_list = &sge, .num_sge = 1,
    .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
    .send_flags = IBV_SEND_SIGNALED,
    .wr.rdma = { .remote_addr = offer.raddr, .rkey = dead ? offer.rkey ^ 0x100 : offer.rkey },
  }, *bad = NULL;
  printf("client (%s): RDMA %s of %u bytes, segment at 0x%llx (region at %p, iova %s), "
         "remote 0x%llx, key 0x%x\n", probe_case, read ? "Read" : "Write", sge.length,
         (unsigned long long) sge.addr, (void *) buf, zero_based ? "0" : "its address",
         (unsigned long long) wr.wr.rdma.remote_addr, wr.wr.rdma.rkey);
  if (ibv_post_send(qp, &wr, &bad) != 0)
    probe_die("ibv_post_send");
  struct ibv_wc wc;
  int n = 0;
  for (int i = 0; i < 3000 && n == 0; i++) {
    n = ibv_poll_cq(cq, 1, &wc);
    if (n == 0)
      usleep(1000);
  }
  if (n == 1)
    printf("client: completion %s (%d)\n", ibv_wc_status_str(wc.status), (int) wc.status);
  else
    printf("client: no completion within 3 s\n");
  if (read)
    printf("client: the sink's first byte after the Read: 0x%02x (the server's is 0x22)\n",
           (unsigned) (unsigned char) buf[0x80]);
  pthread_barrier_wait(&probe_bar);
  pthread_join(server, NULL);
  return 0;
}
