/*
 * itapi-perf: latency and bandwidth of an IT-API interface, written only
 * against <it_api.h> and <itx.h>.
 *
 * A client drives, a server follows.  Both exchange their buffer's
 * address and remote context in the connection private data; then, for
 * every test and size, the client sends a RUN control message (test, size,
 * iterations), the server prepares (posts receives, fills its sources) and
 * answers READY, and the data phase runs.  Between chunks nothing is timed.
 *
 * Loopback (the default) runs the server in a thread of this process with
 * its own IA; -s and -c split the two sides into processes.
 *
 *   itapi_perf.c   command line and main
 *   perf_side.c    errors, data patterns, completions, set-up
 *   perf_server.c  the server's part of each test
 *   perf_client.c  the client's timed loops, warm-up, duration
 *   perf_report.c  statistics and output
 *   perf_rate.c    -T: the message rate of several threads side by side
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void
resolve(const char *host, it_net_addr_t *out)
{
  struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
  int rc = getaddrinfo(host, NULL, &hints, &ai);
  if (rc != 0)
    die("client: cannot resolve '%s': %s", host, gai_strerror(rc));
  memset(out, 0, sizeof(*out));
  if (ai->ai_family == AF_INET) {
    out->addr_type = IT_IPV4;
    out->addr.ipv4 = ((struct sockaddr_in *) (void *) ai->ai_addr)->sin_addr;
  } else {
    out->addr_type = IT_IPV6;
    out->addr.ipv6 = ((struct sockaddr_in6 *) (void *) ai->ai_addr)->sin6_addr;
  }
  freeaddrinfo(ai);
}

static void
usage(FILE *f)
{
  fprintf(f,
"Usage: itapi-perf [options]                 loopback: server and client threads\n"
"       itapi-perf -T N [options]            message rate of N threads, each with its\n"
"                                            own endpoint pair (send_bw, write_bw)\n"
"       itapi-perf -s [options]              server: waits for one client\n"
"       itapi-perf -c ADDR [options]         client: runs the tests against ADDR\n"
"\n"
"Latency and bandwidth of an IT-API interface. The client chooses the tests;\n"
"a server takes them from the client and needs only -s, -i, -p.\n"
"\n"
"Tests (-t, comma-separated, default all):\n"
"  send_lat   send/receive ping-pong; half a round trip\n"
"  write_lat  RDMA Write ping-pong, arrival seen by polling the target's last\n"
"             byte (as perftest's write_lat); with -e, notification by a Send:\n"
"             each Write is followed by a zero-length Send whose receive the\n"
"             peer waits for with it_evd_wait; half a round trip\n"
"  read_lat   one RDMA Read per sample\n"
"  send_bw    a window of sends; the server grants receive credits\n"
"  write_bw   a window of RDMA Writes\n"
"  read_bw    a window of RDMA Reads\n"
"  all        every test above\n"
"\n"
"Options:\n"
"  -t, --test LIST        tests to run (default all)\n"
"  -S, --size LIST|A:B    message sizes in bytes: a list (8,64,4K) or a sweep of\n"
"                         powers of two (8:1M); K, M, G suffixes (default 8,4K,64K)\n"
"  -n, --iters N          timed iterations (messages for bandwidth); default 1000\n"
"                         for latency, 5000 for bandwidth, fewer above 256K/1M\n"
"  -D, --duration SEC     run each test and size for SEC seconds instead of -n\n"
"  -w, --warmup N         untimed iterations before each (default 10%% of -n)\n"
"  -W, --window N         bandwidth: operations in flight (default 32)\n"
"      --signal N         bandwidth: request a completion every N posts (default\n"
"                         window/4); the last post of a run is always signaled\n"
"  -T, --threads N        message-rate mode: N threads of this process, each with\n"
"                         an endpoint pair of its own on the interface, run\n"
"                         send_bw and write_bw (default %d bytes, %.0f s each:\n"
"                         -S, -n, -D change that) side by side; the rate is all\n"
"                         their messages over the longest thread's time\n"
"      --xproc            with -T: the receiving end of each pair in a second\n"
"                         process (this program run again), which sleeps\n"
"                         between completions: every connection crosses\n"
"                         processes; nothing is verified\n"
"      --ud               with -T: each thread's pair is two unreliable-datagram\n"
"                         endpoints, and the test ud_bw: datagrams sent through\n"
"                         an address handle, each received (the interface must\n"
"                         offer the UD service: emul0, emul-ib0)\n"
"      --srq              with -T: the receiving end of each thread's pair takes\n"
"                         its receives from an SRQ of its own (it_srq_create)\n"
"      --rmr              with -T: an RMR (it_rmr_create20) of a protection zone\n"
"                         of its own stays allocated on the interface while the\n"
"                         threads run: traffic that names no RMR should not pay\n"
"                         for one existing (vp/emul changes windows under its\n"
"                         process-wide lock)\n"
"  -e, --event            wait for completions with it_evd_wait instead of\n"
"                         busy-polling it_evd_dequeue\n"
"      --complete-first   send_lat and write_lat: take each ping's (and pong's)\n"
"                         completion before waiting for the answer, as Debian's\n"
"                         dtest does in its RDMA Write ping-pong; by default the\n"
"                         completion is taken after the answer has come\n"
"      --no-verify        latency tests: do not check the data of each iteration\n"
"                         (bandwidth tests never check, it would distort them)\n"
"  -s, --server           server mode\n"
"  -c, --client ADDR      client mode: connect to ADDR (name, IPv4 or IPv6)\n"
"  -p, --port P           server port (default %d; loopback: chosen by the provider)\n"
"  -i, --interface NAME   IT-API interface (default the first of it_interface_list)\n"
"      --timeout SEC      fail when the peer owes an answer (a completion, a\n"
"                         control message, a connection event) and gives none\n"
"                         for SEC seconds (default 30). The server's wait for\n"
"                         the client's next test has no deadline: it lasts\n"
"                         through a one-sided test (write_bw, read_bw,\n"
"                         read_lat), in which the client works alone, and ends\n"
"                         when the connection is lost\n"
"      --mem itx|shared|private\n"
"                         where the buffers come from: itx_mem_alloc (default:\n"
"                         what the provider reaches fastest; vp/emul maps it\n"
"                         into its peer process), a shared memfd made here, or\n"
"                         private memory (aligned_alloc, as malloc); give it to\n"
"                         both server and client\n"
"      --json             one JSON object with an array of results\n"
"      --csv              CSV with a header line\n"
"  -h, --help             this text\n"
"\n"
"Output: latency in microseconds (min, median, average, 99th and 99.9th\n"
"percentiles, max; JSON and CSV add the standard deviation); bandwidth in\n"
"GB/s (1e9 bytes/s) and millions of messages per second. A progress line is\n"
"drawn on stderr when it is a terminal and a test runs longer than 2 s.\n"
"Each latency sample is timed with the TSC where the kernel's clocksource is\n"
"tsc (as perftest and UCX), else CLOCK_MONOTONIC; ITAPI_PERF_CLOCK=monotonic\n"
"forces the latter, ITAPI_PERF_CLOCK=tsc the former (perftest always reads the\n"
"TSC). The table header names the clock.\n"
"Errors name the failing IT-API call, its status and itx_error_detail().\n",
          RATE_SIZE, 1.0, DEFAULT_PORT);
}

static bool
parse_u64(const char *s, uint64_t *out, bool suffixes)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *s == '-')
    return false;
  unsigned shift = 0;
  if (suffixes && *end) {
    switch (*end) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    default: return false;
    }
    end++;
  }
  if (*end || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *out = (uint64_t) v << shift;
  return true;
}

static void
parse_sizes(config_t *cfg, const char *arg)
{
  char *copy = strdup(arg), *save = NULL;
  const char *colon = strchr(arg, ':');
  cfg->nsizes = 0;
  if (colon) {
    uint64_t lo, hi;
    *strchr(copy, ':') = '\0';
    if (!parse_u64(copy, &lo, true) || !parse_u64(copy + (colon - arg) + 1, &hi, true) || lo == 0 ||
        lo > hi)
      die("bad size sweep '%s': want FROM:TO, e.g. 8:1M", arg);
    for (uint64_t v = lo; v <= hi && cfg->nsizes < MAX_SIZES; v *= 2)
      cfg->sizes[cfg->nsizes++] = v;
  } else {
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      uint64_t v;
      if (!parse_u64(tok, &v, true) || v == 0)
        die("bad message size '%s' (a positive number, K/M/G suffixes allowed)", tok);
      if (cfg->nsizes == MAX_SIZES)
        die("at most %d message sizes", MAX_SIZES);
      cfg->sizes[cfg->nsizes++] = v;
    }
  }
  for (size_t i = 0; i < cfg->nsizes; i++)
    if (cfg->sizes[i] > (1ull << 32) - 1)
      die("message size %zu exceeds the 4 GiB - 1 of an IT-API segment", cfg->sizes[i]);
  if (cfg->nsizes == 0)
    die("no message size in '%s'", arg);
  free(copy);
}

static unsigned
parse_tests(const char *arg)
{
  char *copy = strdup(arg), *save = NULL;
  unsigned mask = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    unsigned i;
    if (strcmp(tok, "all") == 0) {
      mask |= (1u << NTESTS) - 1;
      continue;
    }
    for (i = 0; i < NTESTS && strcmp(tok, tests[i].name) != 0; i++)
      ;
    if (i == NTESTS)
      die("unknown test '%s' (send_lat, write_lat, read_lat, send_bw, write_bw, read_bw, all)", tok);
    mask |= 1u << i;
  }
  free(copy);
  if (mask == 0)
    die("no test in '%s'", arg);
  return mask;
}

static double
parse_seconds(const char *arg, const char *opt)
{
  char *end;
  double v = strtod(arg, &end);
  if (end == arg || *end || !(v > 0))
    die("%s wants a positive number of seconds, got '%s'", opt, arg);
  return v;
}

static uint64_t
parse_count(const char *arg, const char *opt, uint64_t min, uint64_t max)
{
  uint64_t v;
  if (!parse_u64(arg, &v, true) || v < min || v > max)
    die("%s wants a number from %llu to %llu, got '%s'", opt, (unsigned long long) min,
        (unsigned long long) max, arg);
  return v;
}

static void
parse_args(config_t *cfg, int argc, char **argv)
{
  enum { OPT_SIGNAL = 256, OPT_NO_VERIFY, OPT_TIMEOUT, OPT_JSON, OPT_CSV, OPT_MEM, OPT_XPROC,
         OPT_XPROC_PEER, OPT_UD, OPT_RMR, OPT_SRQ, OPT_COMPLETE_FIRST };
  static const struct option longs[] = {
    { "test", required_argument, NULL, 't' },     { "size", required_argument, NULL, 'S' },
    { "iters", required_argument, NULL, 'n' },    { "duration", required_argument, NULL, 'D' },
    { "warmup", required_argument, NULL, 'w' },   { "window", required_argument, NULL, 'W' },
    { "signal", required_argument, NULL, OPT_SIGNAL },
    { "event", no_argument, NULL, 'e' },          { "no-verify", no_argument, NULL, OPT_NO_VERIFY },
    { "server", no_argument, NULL, 's' },         { "client", required_argument, NULL, 'c' },
    { "port", required_argument, NULL, 'p' },     { "interface", required_argument, NULL, 'i' },
    { "timeout", required_argument, NULL, OPT_TIMEOUT }, { "mem", required_argument, NULL, OPT_MEM },
    { "json", no_argument, NULL, OPT_JSON },      { "csv", no_argument, NULL, OPT_CSV },
    { "threads", required_argument, NULL, 'T' },  { "xproc", no_argument, NULL, OPT_XPROC },
    { "xproc-peer", no_argument, NULL, OPT_XPROC_PEER }, { "ud", no_argument, NULL, OPT_UD },
    { "rmr", no_argument, NULL, OPT_RMR },        { "srq", no_argument, NULL, OPT_SRQ },
    { "complete-first", no_argument, NULL, OPT_COMPLETE_FIRST },
    { "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 },
  };
  int opt;
  bool tests_given = false, sizes_given = false;
  while ((opt = getopt_long(argc, argv, "t:S:n:D:w:W:esc:p:i:T:h", longs, NULL)) != -1) {
    switch (opt) {
    case 't': cfg->test_mask = parse_tests(optarg); tests_given = true; break;
    case 'S': parse_sizes(cfg, optarg); sizes_given = true; break;
    case 'T': cfg->threads = (unsigned) parse_count(optarg, "-T", 1, 256); break;
    case 'n': cfg->iters = parse_count(optarg, "-n", 1, 1ull << 40); break;
    case 'D': cfg->duration = parse_seconds(optarg, "-D"); break;
    case 'w': cfg->warmup = (int64_t) parse_count(optarg, "--warmup", 0, 1ull << 40); break;
    case 'W': cfg->window = (uint32_t) parse_count(optarg, "--window", 1, 4096); break;
    case OPT_SIGNAL: cfg->signal_every = (uint32_t) parse_count(optarg, "--signal", 1, 4096); break;
    case 'e': cfg->event = true; break;
    case OPT_NO_VERIFY: cfg->verify = false; break;
    case OPT_COMPLETE_FIRST: cfg->complete_first = true; break;
    case 's': cfg->mode = MODE_SERVER; break;
    case 'c': cfg->mode = MODE_CLIENT; cfg->peer = optarg; break;
    case 'p': cfg->port = (int) parse_count(optarg, "--port", 1, 65535); break;
    case 'i': cfg->ia_name = optarg; break;
    case OPT_TIMEOUT: cfg->timeout = parse_seconds(optarg, "--timeout"); break;
    case OPT_MEM:
      for (cfg->mem = MEM_ITX; cfg->mem <= MEM_PRIVATE; cfg->mem++)
        if (strcmp(optarg, mem_kind_names[cfg->mem]) == 0)
          break;
      if (cfg->mem > MEM_PRIVATE)
        die("--mem takes 'itx', 'shared' or 'private', not '%s'", optarg);
      break;
    case OPT_XPROC: cfg->xproc = true; break;
    case OPT_XPROC_PEER: cfg->xproc_peer = true; break;
    case OPT_UD: cfg->ud = true; break;
    case OPT_RMR: cfg->rmr = true; break;
    case OPT_SRQ: cfg->srq = true; break;
    case OPT_JSON: cfg->json = true; break;
    case OPT_CSV: cfg->csv = true; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc)
    die("unexpected argument '%s' (see --help)", argv[optind]);
  if (cfg->json && cfg->csv)
    die("--json and --csv exclude each other");
  if ((cfg->xproc || cfg->xproc_peer) && cfg->threads == 0)
    die("--xproc goes with -T: it puts the receiving end of each thread's pair in a second process");
  if (cfg->srq && (cfg->threads == 0 || cfg->xproc || cfg->ud))
    die("--srq goes with -T (and not --xproc or --ud): it gives the receiving end of each thread's "
        "pair, in this process, an SRQ of its own");
  if (cfg->complete_first && cfg->threads > 0)
    die("--complete-first goes with the latency tests send_lat and write_lat, not -T");
  if (cfg->rmr && cfg->threads == 0)
    die("--rmr goes with -T: it keeps an RMR allocated while the threads run");
  if (cfg->ud && (cfg->threads == 0 || cfg->xproc))
    die("--ud goes with -T (and not --xproc): it makes each thread's pair two datagram endpoints "
        "of this process");
  if (cfg->threads > 0) {
    if (cfg->mode != MODE_LOOPBACK)
      die("-T runs every endpoint pair in this process: it takes no -s or -c");
    if (cfg->event)
      die("-T measures busy-polled message rates: it takes no -e");
    if (cfg->ud && tests_given)
      die("-T --ud runs ud_bw only: it takes no -t");
    if (!tests_given)
      cfg->test_mask = RATE_TESTS;
    else if (cfg->test_mask & ~RATE_TESTS)
      die("-T runs send_bw and write_bw only (and ud_bw with --ud)");
    if (!sizes_given) {
      cfg->sizes[0] = RATE_SIZE;
      cfg->nsizes = 1;
    }
  }
  if (cfg->signal_every == 0)
    cfg->signal_every = cfg->window / 4 ? cfg->window / 4 : 1;
  /* A window without a signaled WR in it could never drain. */
  if (cfg->signal_every > cfg->window)
    die("--signal %u exceeds --window %u: the window would fill with unsignaled posts",
        cfg->signal_every, cfg->window);
}

int
main(int argc, char **argv)
{
  config_t cfg = { .test_mask = (1u << NTESTS) - 1, .sizes = { 8, 4096, 65536 }, .nsizes = 3,
                   .warmup = -1, .window = 32, .verify = true, .mode = MODE_LOOPBACK,
                   .port = -1, .timeout = 30 };
  parse_args(&cfg, argc, argv);
  lat_clock_init();
  cfg.progress = isatty(STDERR_FILENO);

  it_interface_t ifs[16];
  size_t n = 16, total = 0;
  it_interface_list(ifs, &n, &total);
  if (n == 0)
    die("no IT-API interface is available; itapi-info lists the providers and why any was refused");
  if (cfg.ia_name == NULL) {
    cfg.ia_name = ifs[0].name;
  } else {
    size_t i;
    for (i = 0; i < n && strcmp(ifs[i].name, cfg.ia_name) != 0; i++)
      ;
    if (i == n)
      die("no interface named '%s' (itapi-info lists them)", cfg.ia_name);
  }

  if (cfg.threads > 0)
    return cfg.ud ? ud_rate_run(&cfg) : rate_run(&cfg);
  if (cfg.mode == MODE_SERVER) {
    server_run(&cfg, NULL);
    return 0;
  }
  if (cfg.mode == MODE_CLIENT) {
    it_net_addr_t addr;
    resolve(cfg.peer, &addr);
    return client_run(&cfg, &addr, cfg.port >= 0 ? cfg.port : DEFAULT_PORT);
  }

  /* Loopback: the server thread listens on its own IA. */
  rendezvous_t rv = { .cfg = &cfg, .port = -1 };
  pthread_mutex_init(&rv.lock, NULL);
  pthread_cond_init(&rv.cond, NULL);
  pthread_t server;
  if (pthread_create(&server, NULL, server_thread, &rv) != 0)
    die("cannot start the server thread");
  pthread_mutex_lock(&rv.lock);
  while (rv.port < 0)
    pthread_cond_wait(&rv.cond, &rv.lock);
  pthread_mutex_unlock(&rv.lock);

  int rc = client_run(&cfg, NULL, rv.port);
  pthread_join(server, NULL);
  return rc;
}
