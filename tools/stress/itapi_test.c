/*
 * itapi-test: the transaction and stress test of IT-API (after dapltest's
 * "-T T -V": several threads, several endpoints each, a random mix of
 * sends, RDMA Writes, RDMA Reads and atomics, every transfer validated).
 *
 *   itapi-test [-i IA] [-T threads] [-E endpoints-per-thread]
 *              [-D seconds | -n transactions] [-s max-size] [-w window]
 *              [--ops send,write,read[,atomic]] [--seed N] [--fault]
 *              [--json] [-v]
 *
 * Exit status: 0 when every transfer, completion and CM event checked out,
 * 1 when any error was found, 2 on bad usage.
 *
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"

#define MAX_PRINTED_ERRORS 40

atomic_uint_fast64_t itest_errors;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const op_names[OP_COUNT] = { "send", "write", "read", "atomic" };

double
itest_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *
itest_wr_name(itest_wr_kind_t k)
{
  static const char *const n[WR_KIND_COUNT] = {
    [WR_NONE] = "?", [WR_SEND] = "send", [WR_RECV] = "receive", [WR_WRITE] = "RDMA Write",
    [WR_READ] = "RDMA Read", [WR_READBACK] = "RDMA Read-back", [WR_FADD] = "fetch-and-add",
    [WR_CSWAP] = "compare-and-swap",
  };
  return (unsigned) k < WR_KIND_COUNT ? n[k] : "?";
}

const char *
itest_end_name(const itest_end_t *e, char *buf, size_t n)
{
  snprintf(buf, n, "thread %u pair %u %s EP %p", e->th->id, e->pair->index,
           e->side ? "passive" : "active", (void *) e->ep);
  return buf;
}

static void
verror(const itest_thread_t *th, const itest_end_t *e, uint64_t seq, const char *fmt, va_list ap)
{
  uint64_t n = atomic_fetch_add(&itest_errors, 1) + 1;
  if (n > MAX_PRINTED_ERRORS)
    return;
  char where[128], msg[768];
  if (e != NULL)
    itest_end_name(e, where, sizeof(where));
  else if (th != NULL)
    snprintf(where, sizeof(where), "thread %u", th->id);
  else
    snprintf(where, sizeof(where), "main");
  vsnprintf(msg, sizeof(msg), fmt, ap);
  pthread_mutex_lock(&print_lock);
  fprintf(stderr, "itapi-test: ERROR [%s, seq %" PRIu64 "%s%s]: %s\n", where, seq,
          th != NULL ? ", phase " : "", th != NULL ? th->phase : "", msg);
  if (n == MAX_PRINTED_ERRORS)
    fprintf(stderr, "itapi-test: further errors are counted, not printed\n");
  pthread_mutex_unlock(&print_lock);
}

void
itest_error(const itest_thread_t *th, const itest_end_t *e, uint64_t seq, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  verror(th, e, seq, fmt, ap);
  va_end(ap);
}

void
itest_call_error(const itest_thread_t *th, const itest_end_t *e, uint64_t seq, const char *call,
                 it_status_t st)
{
  itest_error(th, e, seq, "%s failed: %s (%s); detail: %s", call, itx_status_name(st),
              itx_status_message(st), itx_error_detail());
}

void
itest_fatal(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&print_lock);
  fprintf(stderr, "itapi-test: FATAL: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  pthread_mutex_unlock(&print_lock);
  va_end(ap);
  exit(1);
}

void
itest_log(const itest_config_t *cfg, const char *fmt, ...)
{
  if (!cfg->verbose)
    return;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&print_lock);
  fprintf(stderr, "itapi-test: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  pthread_mutex_unlock(&print_lock);
  va_end(ap);
}

static void
usage(FILE *f)
{
  fprintf(f,
    "usage: itapi-test [options]\n"
    "Transaction test of IT-API: T threads each own E connected endpoint pairs and keep a\n"
    "window of operations in flight on each end, validating every transfer, every\n"
    "completion (exactly one per work request) and every connection event.\n"
    "\n"
    "  -i, --ia NAME           interface adapter (default: the first listed)\n"
    "  -T, --threads N         worker threads (default 2)\n"
    "  -E, --endpoints N       endpoint pairs per thread (default 4)\n"
    "  -D, --duration SECONDS  run for this long (default 5)\n"
    "  -n, --transactions N    run this many operations in all instead\n"
    "  -s, --max-size BYTES    largest transfer (default 4096); sizes are random in\n"
    "                          1..max (0..max for sends)\n"
    "  -w, --window N          operations in flight per endpoint, 1..%d (default 8)\n"
    "      --ops LIST          comma-separated: send,write,read,atomic (default: all the\n"
    "                          IA supports)\n"
    "      --readback PERCENT  RDMA Writes also checked by an RDMA Read (default 25)\n"
"      --close HOW         who disconnects: mixed (active end of even pairs, passive\n"
    "                          end of odd ones; default), active, passive, or both (both\n"
    "                          ends at once)\n"
    "      --seed N            seed of sizes, data and the operation mix (default: clock)\n"
    "      --fault             midway, free one EP of a pair abruptly and check its peer\n"
    "                          gets IT_CM_MSG_CONN_BROKEN_EVENT and every outstanding\n"
    "                          work request completes (flushed; over non-IB transports\n"
    "                          possibly with a remote error) exactly once\n"
    "      --json              print the summary as JSON on stdout\n"
    "  -v, --verbose           say more\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 when no error was found, 1 otherwise, 2 on bad usage.\n",
    ITEST_MAX_WINDOW);
}

static bool
parse_u64(const char *s, uint64_t *out)
{
  char *end;
  if (s == NULL || *s == '\0' || *s == '-')
    return false;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end != '\0')
    return false;
  *out = v;
  return true;
}

static bool
parse_ops(const char *s, bool *en)
{
  for (int o = 0; o < OP_COUNT; o++)
    en[o] = false;
  char *dup = strdup(s), *save = NULL;
  bool ok = dup != NULL;
  for (char *t = dup ? strtok_r(dup, ",", &save) : NULL; t != NULL; t = strtok_r(NULL, ",", &save)) {
    int o;
    for (o = 0; o < OP_COUNT && strcmp(t, op_names[o]) != 0; o++)
      ;
    if (o == OP_COUNT) {
      fprintf(stderr, "itapi-test: --ops: unknown operation '%s' (send, write, read, atomic)\n", t);
      ok = false;
    } else {
      en[o] = true;
    }
  }
  free(dup);
  return ok;
}

#define USAGE_ERROR(...)                          \
  do {                                            \
    fprintf(stderr, "itapi-test: " __VA_ARGS__);  \
    fputc('\n', stderr);                          \
    usage(stderr);                                \
    exit(2);                                      \
  } while (0)

static void
parse_args(int argc, char **argv, itest_config_t *cfg, bool *ops_given)
{
  enum { O_OPS = 256, O_SEED, O_JSON, O_FAULT, O_READBACK, O_CLOSE };
  static const struct option longopts[] = {
    { "ia", required_argument, NULL, 'i' },
    { "threads", required_argument, NULL, 'T' },
    { "endpoints", required_argument, NULL, 'E' },
    { "duration", required_argument, NULL, 'D' },
    { "transactions", required_argument, NULL, 'n' },
    { "max-size", required_argument, NULL, 's' },
    { "window", required_argument, NULL, 'w' },
    { "ops", required_argument, NULL, O_OPS },
    { "seed", required_argument, NULL, O_SEED },
    { "readback", required_argument, NULL, O_READBACK },
    { "close", required_argument, NULL, O_CLOSE },
    { "json", no_argument, NULL, O_JSON },
    { "fault", no_argument, NULL, O_FAULT },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  bool dur_given = false;
  int c;
  uint64_t v;
  while ((c = getopt_long(argc, argv, "i:T:E:D:n:s:w:vh", longopts, NULL)) != -1) {
    switch (c) {
    case 'i': cfg->ia_name = optarg; break;
    case 'T':
      if (!parse_u64(optarg, &v) || v < 1 || v > 255)
        USAGE_ERROR("-T wants 1..255 threads, not '%s'", optarg);
      cfg->threads = (unsigned) v;
      break;
    case 'E':
      if (!parse_u64(optarg, &v) || v < 1 || v > 4096)
        USAGE_ERROR("-E wants 1..4096 endpoint pairs, not '%s'", optarg);
      cfg->eps = (unsigned) v;
      break;
    case 'D': {
      char *end;
      double d = strtod(optarg, &end);
      if (*end != '\0' || !(d > 0) || d > 1e6)
        USAGE_ERROR("-D wants a positive number of seconds, not '%s'", optarg);
      cfg->duration = d;
      dur_given = true;
      break;
    }
    case 'n':
      if (!parse_u64(optarg, &v) || v < 1)
        USAGE_ERROR("-n wants a positive count, not '%s'", optarg);
      cfg->transactions = v;
      break;
    case 's':
      if (!parse_u64(optarg, &v) || v < 8 || v > (1u << 24))
        USAGE_ERROR("-s wants 8..16777216 bytes, not '%s'", optarg);
      cfg->max_size = (uint32_t) v;
      break;
    case 'w':
      if (!parse_u64(optarg, &v) || v < 1 || v > ITEST_MAX_WINDOW)
        USAGE_ERROR("-w wants 1..%d, not '%s'", ITEST_MAX_WINDOW, optarg);
      cfg->window = (unsigned) v;
      break;
    case O_OPS:
      if (!parse_ops(optarg, cfg->op_enabled))
        USAGE_ERROR("--ops wants a comma-separated list of send, write, read, atomic");
      *ops_given = true;
      break;
    case O_SEED:
      if (!parse_u64(optarg, &v))
        USAGE_ERROR("--seed wants a number, not '%s'", optarg);
      cfg->seed = v;
      break;
    case O_READBACK:
      if (!parse_u64(optarg, &v) || v > 100)
        USAGE_ERROR("--readback wants 0..100, not '%s'", optarg);
      cfg->readback_pct = (unsigned) v;
      break;
    case O_CLOSE: {
      static const char *const how[] = { "mixed", "active", "passive", "both" };
      int h;
      for (h = 0; h < 4 && strcmp(optarg, how[h]) != 0; h++)
        ;
      if (h == 4)
        USAGE_ERROR("--close wants mixed, active, passive or both, not '%s'", optarg);
      cfg->close = (itest_close_t) h;
      break;
    }
    case O_JSON: cfg->json = true; break;
    case O_FAULT: cfg->fault = true; break;
    case 'v': cfg->verbose = true; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc)
    USAGE_ERROR("unexpected argument '%s'", argv[optind]);
  if (dur_given && cfg->transactions > 0)
    USAGE_ERROR("-D and -n exclude each other");
  if (cfg->transactions > 0)
    cfg->duration = 0;
  if (cfg->fault && cfg->eps * cfg->threads < 2)
    USAGE_ERROR("--fault needs at least two endpoint pairs in all, so the run can go on without one");
}

static void *
worker(void *arg)
{
  itest_thread_t *th = arg;
  itest_thread_setup(th);
  itest_run(th);
  itest_thread_teardown(th);
  atomic_store(&th->done, true);
  return NULL;
}

/* An affiliated event the --fault injection explains: over a non-IB
 * transport (iWARP: the survivor's requests meet the peer's Terminate), an
 * EP error event naming an EP of a fault pair, once that fault was
 * injected. */
static bool
async_fault_ok(const itest_config_t *cfg, itest_thread_t *ths, const it_event_t *ev)
{
  if (cfg->ib || ev->event_number < IT_ASYNC_AFF_EP_FAILURE ||
      ev->event_number > IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR)
    return false;
  for (unsigned i = 0; i < cfg->threads; i++) {
    itest_thread_t *th = &ths[i];
    if (!th->fault.enabled || !atomic_load_explicit(&th->fault_injected, memory_order_acquire))
      continue;
    if (ev->aff_async.cause.ep == th->fault_ep[0] || ev->aff_async.cause.ep == th->fault_ep[1]) {
      itest_log(cfg, "fault: thread %u: affiliated event %s for fault pair EP %p (accepted: not "
                "InfiniBand)", th->id, itx_event_name(ev->event_number), (void *) ev->aff_async.cause.ep);
      return true;
    }
  }
  return false;
}

/* Affiliated asynchronous events: none is expected in a clean run. */
static void
drain_async(const itest_config_t *cfg, itest_thread_t *ths, it_evd_handle_t evd, const char *side)
{
  it_event_t ev;
  it_status_t st;
  while ((st = it_evd_dequeue(evd, &ev)) == IT_SUCCESS)
    if (!async_fault_ok(cfg, ths, &ev))
      itest_error(NULL, NULL, 0, "affiliated asynchronous event %s on the %s IA (cause %p)",
                  itx_event_name(ev.event_number), side, (void *) ev.aff_async.cause.ep);
  if (st != IT_ERR_QUEUE_EMPTY)
    itest_call_error(NULL, NULL, 0, "it_evd_dequeue (affiliated EVD)", st);
}

static void
report(const itest_config_t *cfg, itest_thread_t *ths, double elapsed, const char *ia_name)
{
  itest_stats_t t;
  memset(&t, 0, sizeof(t));
  itest_fault_report_t f; /* all injected faults together */
  memset(&f, 0, sizeof(f));
  unsigned nfault = 0;
  for (unsigned i = 0; i < cfg->threads; i++) {
    const itest_stats_t *s = &ths[i].st;
    for (int o = 0; o < OP_COUNT; o++)
      t.ops[o] += s->ops[o];
    t.fadd += s->fadd;
    t.cswap += s->cswap;
    t.cswap_miss += s->cswap_miss;
    t.recv += s->recv;
    t.readback += s->readback;
    t.bytes += s->bytes;
    t.flushed += s->flushed;
    t.disconnects += s->disconnects;
    t.disconnects_expected += s->disconnects_expected;
    t.issued += s->issued;
    const itest_fault_report_t *g = &ths[i].fault;
    if (!g->enabled)
      continue;
    nfault++;
    f.enabled = true;
    f.triggered = (nfault == 1 || f.triggered) && g->triggered;
    f.verified = (nfault == 1 || f.verified) && g->verified;
    f.broken_event = (nfault == 1 || f.broken_event) && g->broken_event;
    f.survivor_outstanding += g->survivor_outstanding;
    f.survivor_flushed += g->survivor_flushed;
    f.victim_outstanding += g->victim_outstanding;
    f.victim_flushed += g->victim_flushed;
    f.error_cmpl += g->error_cmpl;
    f.tolerated_cm += g->tolerated_cm;
  }
  uint64_t trans = 0;
  for (int o = 0; o < OP_COUNT; o++)
    trans += t.ops[o];
  uint64_t errors = atomic_load(&itest_errors);
  double rate = elapsed > 0 ? trans / elapsed : 0, mbps = elapsed > 0 ? t.bytes / elapsed / 1e6 : 0;
  char opsbuf[64] = "";
  for (int o = 0; o < OP_COUNT; o++)
    if (cfg->op_enabled[o])
      snprintf(opsbuf + strlen(opsbuf), sizeof(opsbuf) - strlen(opsbuf), "%s%s", *opsbuf ? "," : "",
               op_names[o]);

  if (cfg->json) {
    printf("{\n  \"tool\": \"itapi-test\",\n  \"ia\": \"%s\",\n  \"threads\": %u,\n"
           "  \"endpoints_per_thread\": %u,\n  \"window\": %u,\n  \"max_size\": %u,\n"
           "  \"seed\": %" PRIu64 ",\n  \"seconds\": %.3f,\n",
           ia_name, cfg->threads, cfg->eps, cfg->window, cfg->max_size, cfg->seed, elapsed);
    printf("  \"ops_enabled\": [");
    bool first = true;
    for (int o = 0; o < OP_COUNT; o++)
      if (cfg->op_enabled[o]) {
        printf("%s\"%s\"", first ? "" : ", ", op_names[o]);
        first = false;
      }
    printf("],\n  \"transactions\": %" PRIu64 ",\n  \"bytes\": %" PRIu64 ",\n"
           "  \"rate_per_s\": %.1f,\n  \"mb_per_s\": %.2f,\n", trans, t.bytes, rate, mbps);
    printf("  \"ops\": {\"send\": %" PRIu64 ", \"write\": %" PRIu64 ", \"read\": %" PRIu64
           ", \"atomic\": %" PRIu64 "},\n", t.ops[OP_SEND], t.ops[OP_WRITE], t.ops[OP_READ],
           t.ops[OP_ATOMIC]);
    printf("  \"recv\": %" PRIu64 ",\n  \"readback\": %" PRIu64 ",\n  \"fetch_add\": %" PRIu64
           ",\n  \"cmp_swap\": %" PRIu64 ",\n  \"cmp_swap_miss\": %" PRIu64 ",\n"
           "  \"flushed\": %" PRIu64 ",\n  \"disconnect_events\": %" PRIu64 ",\n"
           "  \"disconnect_events_expected\": %" PRIu64 ",\n",
           t.recv, t.readback, t.fadd, t.cswap, t.cswap_miss, t.flushed, t.disconnects,
           t.disconnects_expected);
    printf("  \"fault\": {\"enabled\": %s, \"injected\": %u, \"triggered\": %s, \"verified\": %s, "
           "\"broken_event\": %s, \"survivor_outstanding\": %u, \"survivor_flushed\": %u, "
           "\"victim_outstanding\": %u, \"victim_flushed\": %u, \"error_completions\": %u, "
           "\"cm_events_queued_before_free\": %u},\n",
           cfg->fault ? "true" : "false", nfault, f.triggered ? "true" : "false",
           f.verified ? "true" : "false", f.broken_event ? "true" : "false",
           f.survivor_outstanding, f.survivor_flushed, f.victim_outstanding, f.victim_flushed,
           f.error_cmpl, f.tolerated_cm);
    printf("  \"errors\": %" PRIu64 ",\n  \"result\": \"%s\"\n}\n", errors, errors ? "FAIL" : "PASS");
    fflush(stdout);
    return;
  }
  printf("itapi-test: %s, %u thread(s) x %u endpoint pair(s), window %u, sizes up to %u bytes, "
         "ops %s, seed %" PRIu64 "\n", ia_name, cfg->threads, cfg->eps, cfg->window, cfg->max_size,
         opsbuf, cfg->seed);
  printf("  time          %10.2f s\n", elapsed);
  printf("  transactions  %10" PRIu64 "   %12.1f /s\n", trans, rate);
  printf("  bytes         %10" PRIu64 "   %12.2f MB/s\n", t.bytes, mbps);
  printf("  send          %10" PRIu64 "   (receives validated: %" PRIu64 ")\n", t.ops[OP_SEND], t.recv);
  printf("  rdma write    %10" PRIu64 "   (read back: %" PRIu64 ")\n", t.ops[OP_WRITE], t.readback);
  printf("  rdma read     %10" PRIu64 "\n", t.ops[OP_READ]);
  printf("  atomic        %10" PRIu64 "   (fetch-add %" PRIu64 ", cmp-swap %" PRIu64
         " of which %" PRIu64 " not matching)\n", t.ops[OP_ATOMIC], t.fadd, t.cswap, t.cswap_miss);
  printf("  flushed       %10" PRIu64 "   (at disconnect or fault)\n", t.flushed);
  printf("  disconnects   %10" PRIu64 " of %" PRIu64 " expected DISCONNECT events\n", t.disconnects,
         t.disconnects_expected);
  if (cfg->fault)
    printf("  fault         %s: %u EP(s) freed with %u/%u requests outstanding (own/peer); peer %s, "
           "flushed %u (peer) + %u (freed EP)%s\n", f.verified ? "verified" : "NOT verified",
           nfault, f.victim_outstanding, f.survivor_outstanding,
           f.broken_event ? "got BROKEN" : "got no BROKEN", f.survivor_flushed, f.victim_flushed,
           f.error_cmpl ? " (some with a remote error)" : "");
  printf("  errors        %10" PRIu64 "\n", errors);
  printf("%s\n", errors ? "FAIL" : "PASS");
  fflush(stdout);
}

int
main(int argc, char **argv)
{
  itest_config_t cfg = {
    .threads = 2, .eps = 4, .duration = 5, .max_size = 4096, .window = 8, .readback_pct = 25,
  };
  for (int o = 0; o < OP_COUNT; o++)
    cfg.op_enabled[o] = true;
  cfg.seed = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32);
  bool ops_given = false;
  parse_args(argc, argv, &cfg, &ops_given);

  it_interface_t ifs[16];
  size_t n = 16, total = 0;
  it_interface_list(ifs, &n, &total);
  if (n == 0)
    itest_fatal("no IT-API interface is available; see itapi-info for refused providers");
  static char ia_name[IT_INTERFACE_NAME_SIZE];
  snprintf(ia_name, sizeof(ia_name), "%s", cfg.ia_name ? cfg.ia_name : ifs[0].name);
  cfg.ia_name = ia_name;

  for (int side = 0; side < 2; side++) {
    it_status_t st = it_ia_create(cfg.ia_name, 2, 1, &cfg.ia[side]);
    if (st != IT_SUCCESS)
      itest_fatal("it_ia_create('%s') for the %s side failed: %s; detail: %s", cfg.ia_name,
                  side ? "passive" : "active", itx_status_name(st), itx_error_detail());
  }
  it_ia_info_t *info;
  it_status_t st = it_ia_query(cfg.ia[0], &info);
  if (st != IT_SUCCESS)
    itest_fatal("it_ia_query failed: %s; detail: %s", itx_status_name(st), itx_error_detail());
  cfg.three_way = info->three_way_handshake_support;
  cfg.disconnect_pdata = info->disconnect_private_data_len;
  cfg.ib = info->transport_type == IT_IB_TRANSPORT;
  cfg.at_sent = itx_ia_completion(cfg.ia[0]) == ITX_COMPLETION_SENT;
  if (cfg.op_enabled[OP_ATOMIC] && !info->atomic_support) {
    if (ops_given)
      fprintf(stderr, "itapi-test: IA '%s' has no atomics (it_ia_info_t.atomic_support): "
              "not testing them\n", cfg.ia_name);
    cfg.op_enabled[OP_ATOMIC] = false;
  }
  it_ia_info_free(info);
  bool any = false;
  for (int o = 0; o < OP_COUNT; o++)
    any |= cfg.op_enabled[o];
  if (!any)
    itest_fatal("no operation left to test");

  it_evd_handle_t aff[2];
  for (int side = 0; side < 2; side++) {
    st = it_evd_create(cfg.ia[side], IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 256, 1,
                       IT_NULL_HANDLE, &aff[side], NULL);
    if (st != IT_SUCCESS)
      itest_fatal("it_evd_create(affiliated) failed: %s; detail: %s", itx_status_name(st),
                  itx_error_detail());
  }
  if (!cfg.json)
    itest_log(&cfg, "seed %" PRIu64 " (rerun with --seed %" PRIu64 ")", cfg.seed, cfg.seed);

  itest_thread_t *ths = calloc(cfg.threads, sizeof(itest_thread_t));
  if (ths == NULL)
    itest_fatal("out of memory");
  for (unsigned i = 0; i < cfg.threads; i++) {
    itest_thread_t *th = &ths[i];
    th->cfg = &cfg;
    th->id = i;
    th->rng = itest_mix(cfg.seed ^ (0x5445535454485244ull + i));
    th->quota = cfg.transactions / cfg.threads + (i < cfg.transactions % cfg.threads);
    th->phase = "start";
    /* Thread 0 makes the survivor's sends wait when the victim goes, thread
     * 1 the victim's own (their flushes then name a freed EP); thread 1
     * only when it keeps other pairs running. */
    th->fault.enabled = cfg.fault && (i == 0 || (i == 1 && cfg.eps >= 2));
    th->fault.victim_side = (int) (itest_mix(cfg.seed ^ (0xfa17 + i)) & 1);
    th->fault.victim_holds = i == 0;
    atomic_init(&th->done, false);
    atomic_init(&th->fault_injected, false);
    if (pthread_create(&th->tid, NULL, worker, th) != 0)
      itest_fatal("pthread_create failed");
  }

  /* Watchdog: a run that does not end is a hang; say where it stands. */
  double t0 = itest_now();
  double limit = (cfg.duration > 0 ? cfg.duration : 300) + 60;
  for (;;) {
    bool all = true;
    for (unsigned i = 0; i < cfg.threads; i++)
      all &= atomic_load(&ths[i].done);
    drain_async(&cfg, ths, aff[0], "active");
    drain_async(&cfg, ths, aff[1], "passive");
    if (all)
      break;
    if (itest_now() - t0 > limit) {
      fprintf(stderr, "itapi-test: FATAL: the run did not end within %.0f s (hang):\n", limit);
      for (unsigned i = 0; i < cfg.threads; i++)
        fprintf(stderr, "  thread %u: phase %s\n", i, ths[i].phase);
      fflush(stderr);
      _exit(1);
    }
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
  }
  double elapsed = 0;
  for (unsigned i = 0; i < cfg.threads; i++) {
    pthread_join(ths[i].tid, NULL);
    double e = ths[i].t_stop - ths[i].t_start;
    if (e > elapsed)
      elapsed = e;
  }
  drain_async(&cfg, ths, aff[0], "active");
  drain_async(&cfg, ths, aff[1], "passive");
  for (unsigned i = 0; i < cfg.threads; i++)
    if (ths[i].fault.enabled && !ths[i].fault.verified)
      itest_error(&ths[i], NULL, 0, "--fault: the fault injection was %s", ths[i].fault.triggered ?
                  "not verified (see the errors above)" : "never triggered");
  for (int side = 0; side < 2; side++) {
    st = it_ia_free(cfg.ia[side]);
    if (st != IT_SUCCESS)
      itest_call_error(NULL, NULL, 0, "it_ia_free", st);
  }
  report(&cfg, ths, elapsed, cfg.ia_name);
  free(ths);
  return atomic_load(&itest_errors) ? 1 : 0;
}
