/*
 * kAL: the host-wide connection-qualifier space and pinned-memory
 * accounting.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kal.h"

static void
test_port_busy(void)
{
  g_test_summary("a reserved port is busy for a second reservation until released");
  uint32_t port = 0;
  kal_port_t *a = NULL, *b = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &a), ==, RNICPI_OK);
  g_assert_cmpuint(port, >=, 49152);
  uint32_t same = port;
  g_assert_cmpint(kal_port_reserve("kal-test", &same, &b), ==, RNICPI_EEXIST);
  g_assert_null(b);
  /* Another space does not collide. */
  g_assert_cmpint(kal_port_reserve("kal-test-other", &same, &b), ==, RNICPI_OK);
  kal_port_release(b);
  kal_port_release(a);
  g_assert_cmpint(kal_port_reserve("kal-test", &same, &b), ==, RNICPI_OK);
  kal_port_release(b);
}

static void
test_port_other_process(void)
{
  g_test_summary("a port held by one process is busy in another, and free once the holder dies");
  uint32_t port = 0;
  kal_port_t *a = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &a), ==, RNICPI_OK);
  pid_t pid = fork();
  if (pid == 0) {
    kal_port_t *b = NULL;
    uint32_t p = port;
    _exit(kal_port_reserve("kal-test", &p, &b) == RNICPI_EEXIST ? 0 : 1);
  }
  int status;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  kal_port_release(a);

  /* A holder that dies frees the port without releasing it. */
  int pipefd[2];
  g_assert_cmpint(pipe(pipefd), ==, 0);
  pid = fork();
  if (pid == 0) {
    kal_port_t *b = NULL;
    uint32_t p = port;
    char ok = kal_port_reserve("kal-test", &p, &b) == RNICPI_OK ? 'y' : 'n';
    if (write(pipefd[1], &ok, 1) != 1)
      _exit(2);
    pause();
    _exit(0);
  }
  char ok = 0;
  g_assert_cmpint(read(pipefd[0], &ok, 1), ==, 1);
  g_assert_cmpint(ok, ==, 'y');
  uint32_t p = port;
  kal_port_t *c = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &p, &c), ==, RNICPI_EEXIST);
  kill(pid, SIGKILL);
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_cmpint(kal_port_reserve("kal-test", &p, &c), ==, RNICPI_OK);
  kal_port_release(c);
  close(pipefd[0]);
  close(pipefd[1]);
}

static void
test_port_range(void)
{
  g_test_summary("ports above 65535 are refused");
  uint32_t port = 70000;
  kal_port_t *r = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r), ==, RNICPI_EINVAL);
}

static uint64_t
vm_locked_kib(void)
{
  g_autofree char *status = NULL;
  g_assert_true(g_file_get_contents("/proc/self/status", &status, NULL, NULL));
  const char *l = strstr(status, "VmLck:");
  g_assert_nonnull(l);
  return g_ascii_strtoull(l + 6, NULL, 10);
}

/* Whether mlock() locks pages here: the sanitizers' runtimes (ASan, TSan,
 * LSan) intercept mlock, munlock and mlockall and make them no-ops that
 * return 0, so VmLck never moves in a sanitizer build. */
static gboolean
mlock_locks(void)
{
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  void *probe = aligned_alloc(page, page);
  g_assert_nonnull(probe);
  memset(probe, 1, page);
  uint64_t before = vm_locked_kib();
  gboolean locks = mlock(probe, page) == 0 && vm_locked_kib() > before;
  munlock(probe, page);
  free(probe);
  return locks;
}

static void
test_pin_limit(void)
{
  g_test_summary("pinning past the limit fails with a sentence naming both numbers");
  g_setenv("ITAPI_MEMLOCK_LIMIT", "65536", TRUE);
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  void *mem = aligned_alloc(page, 256 * 1024);
  kal_pin_t *pin = NULL;
  char *why = NULL;
  g_assert_cmpint(kal_pin(mem, 128 * 1024, &pin, &why), ==, RNICPI_ELIMIT);
  g_assert_null(pin);
  g_assert_nonnull(why);
  g_assert_nonnull(strstr(why, "131072 bytes"));
  g_assert_nonnull(strstr(why, "65536 bytes"));
  g_assert_nonnull(strstr(why, "ulimit -l"));
  g_free(why);

  uint64_t pinned, limit;
  g_assert_cmpint(kal_pin(mem, 32 * 1024, &pin, &why), ==, RNICPI_OK);
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(pinned, ==, 32 * 1024);
  g_assert_cmpuint(limit, ==, 65536);
  g_assert_cmpuint(pin->num_pages, ==, 32 * 1024 / page);
  g_assert_cmpuint(pin->first_page, ==, (uintptr_t) mem);
  kal_unpin(pin);
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(pinned, ==, 0);
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  free(mem);
}

static void
test_pin_overlap(void)
{
  g_test_summary("pages two registrations share stay locked until the last one goes");
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  if (!mlock_locks()) {
    g_test_skip("mlock() does not lock pages in this process (a sanitizer's runtime makes it a "
                "no-op), so VmLck cannot show what kal_pin locked");
    return;
  }
  unsigned char *mem = aligned_alloc(page, 16 * page);
  memset(mem, 1, 16 * page);
  uint64_t base = vm_locked_kib();
  kal_pin_t *a = NULL, *b = NULL;
  char *why = NULL;
  /* a: pages 0-7, b: pages 4-11 (unaligned start and end) */
  g_assert_cmpint(kal_pin(mem, 8 * page, &a, &why), ==, RNICPI_OK);
  g_assert_cmpint(kal_pin(mem + 4 * page + 10, 8 * page - 20, &b, &why), ==, RNICPI_OK);
  g_assert_cmpuint(b->num_pages, ==, 8);
  g_assert_cmpuint(vm_locked_kib() - base, ==, 12 * page / 1024);
  kal_unpin(a);
  g_assert_cmpuint(vm_locked_kib() - base, ==, 8 * page / 1024);
  kal_unpin(b);
  g_assert_cmpuint(vm_locked_kib(), ==, base);
  free(mem);
}

static void
test_iface_registry(void)
{
  g_test_summary("the interface registry lists emul0 and finds it by name only");
  g_assert_cmpuint(kal_iface_count(), >=, 1);
  const kal_iface_t *f = kal_iface_find("emul0");
  g_assert_nonnull(f);
  g_assert_cmpstr(f->prov->name, ==, "emul");
  g_assert_null(kal_iface_find("emul9"));
  g_assert_null(kal_iface_find(NULL));
  g_assert_null(kal_iface_get(kal_iface_count()));
}

/* A verdict of the policy for one peer, with the reason when refused. */
static rnicpi_status_t
verdict(kal_policy_dir_t dir, const char *addr, uint32_t port, char **why)
{
  struct sockaddr_storage ss = { 0 };
  struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
  if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1)
    s4->sin_family = AF_INET;
  else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1)
    s6->sin6_family = AF_INET6;
  else
    g_assert_not_reached();
  return kal_policy_check(dir, (struct sockaddr *) &ss, port, why);
}

static void
test_policy_rules(void)
{
  g_test_summary("host policy: first matching rule decides by direction, prefix and port range; "
                 "IPv4-mapped peers meet IPv4 rules; a refusal names the file, line and rule");
  const char *rules =
    "# lab policy\n"
    "\n"
    "allow accept 10.1.2.3            # one host of the denied net\n"
    "deny  accept 10.0.0.0/8\n"
    "deny  connect 192.168.7.0/25 port 4000-4099\n"
    "deny  any  fd00::/8\n"
    "\tdeny any any port 22\n";
  g_assert_cmpint(kal_policy_load(rules, "lab.policy", NULL), ==, RNICPI_OK);
  char *why = NULL;
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "10.1.2.3", 5000, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "10.1.2.4", 5000, &why), ==, RNICPI_EACCES);
  g_assert_nonnull(strstr(why, "lab.policy, line 4 ('deny accept 10.0.0.0/8')"));
  g_assert_nonnull(strstr(why, "10.1.2.4 listener port 5000"));
  g_clear_pointer(&why, g_free);
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "10.1.2.4", 5000, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "::ffff:10.9.9.9", 5000, NULL), ==, RNICPI_EACCES);
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "11.0.0.1", 5000, NULL), ==, RNICPI_OK);
  /* /25: .0-.127 only; ports 4000-4099 only. */
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "192.168.7.127", 4099, NULL), ==, RNICPI_EACCES);
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "192.168.7.128", 4099, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "192.168.7.1", 4100, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "192.168.7.1", 3999, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "fd12::1", 80, NULL), ==, RNICPI_EACCES);
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "fe80::1", 80, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "fe80::1", 22, &why), ==, RNICPI_EACCES);
  g_assert_nonnull(strstr(why, "line 7 ('deny any any port 22')"));
  g_clear_pointer(&why, g_free);
  /* No rules: everything passes. */
  g_assert_cmpint(kal_policy_load(NULL, NULL, NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_ACCEPT, "10.1.2.4", 22, NULL), ==, RNICPI_OK);
}

static void
test_policy_broken(void)
{
  g_test_summary("host policy: a line that is not a rule is reported with its number and the "
                 "policy refuses everything until a good one is loaded");
  static const struct {
    const char *text, *says;
  } bad[] = {
    { "allow connect 1.2.3.4\npermit any any\n", "line 2: 'permit' is neither allow nor deny" },
    { "deny sideways any\n", "direction 'sideways'" },
    { "deny any 10.0.0.0/33\n", "'10.0.0.0/33' is not an address" },
    { "deny any 10.0.0.300\n", "'10.0.0.300' is not an address" },
    { "deny any any port 0\n", "'0' is not a port" },
    { "deny any any port 90-80\n", "'90-80' is not a port" },
    { "deny any any port 1-2-3\n", "'1-2-3' is not a port" },
    { "deny any any ports 80\n", "'ports' follows the address" },
    { "deny any\n", "needs a verdict, a direction and an address" },
    { "deny any any port 80 and more\n", "too many words" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    char *why = NULL;
    g_assert_cmpint(kal_policy_load(bad[i].text, "t.policy", &why), ==, RNICPI_EINVAL);
    g_assert_nonnull(why);
    if (strstr(why, bad[i].says) == NULL)
      g_error("policy '%s': message '%s' lacks '%s'", bad[i].text, why, bad[i].says);
    g_free(why);
    why = NULL;
    g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "127.0.0.1", 80, &why), ==, RNICPI_EACCES);
    g_assert_nonnull(strstr(why, "every connection is refused until the file is fixed"));
    g_free(why);
  }
  g_assert_cmpint(kal_policy_load("allow any any\n", "t.policy", NULL), ==, RNICPI_OK);
  g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "127.0.0.1", 80, NULL), ==, RNICPI_OK);
  g_assert_cmpint(kal_policy_load(NULL, NULL, NULL), ==, RNICPI_OK);
}

static void
test_policy_file(void)
{
  g_test_summary("host policy: ITAPI_POLICY names the file read at the first check; a file "
                 "that cannot be read refuses everything and says so");
  if (g_test_subprocess()) {
    char *why = NULL;
    const char *mode = g_getenv("KAL_TEST_POLICY_MODE");
    rnicpi_status_t st = verdict(KAL_POLICY_CONNECT, "127.0.0.1", 7000, &why);
    if (strcmp(mode, "file") == 0) {
      g_assert_cmpint(st, ==, RNICPI_EACCES);
      g_assert_nonnull(strstr(why, "line 1 ('deny connect 127.0.0.0/8 port 7000')"));
      g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "127.0.0.1", 7001, NULL), ==, RNICPI_OK);
    } else {
      g_assert_cmpint(st, ==, RNICPI_EACCES);
      g_assert_nonnull(strstr(why, "cannot be read"));
    }
    g_free(why);
    return;
  }
  g_autofree char *dir = g_dir_make_tmp("kal-policy-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "policy", NULL);
  g_assert_true(g_file_set_contents(file, "deny connect 127.0.0.0/8 port 7000\n", -1, NULL));
  g_autofree char *missing = g_build_filename(dir, "absent", NULL);
  const char *modes[][2] = { { "file", file }, { "missing", missing } };
  for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
    /* The child inherits the environment: it reads the file at its first check. */
    g_setenv("ITAPI_POLICY", modes[i][1], TRUE);
    g_setenv("KAL_TEST_POLICY_MODE", modes[i][0], TRUE);
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
  }
  g_unsetenv("ITAPI_POLICY");
  g_unsetenv("KAL_TEST_POLICY_MODE");
  g_unlink(file);
  g_rmdir(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/kal/port/busy", test_port_busy);
  g_test_add_func("/kal/port/other-process", test_port_other_process);
  g_test_add_func("/kal/port/range", test_port_range);
  g_test_add_func("/kal/pin/limit", test_pin_limit);
  g_test_add_func("/kal/pin/overlap", test_pin_overlap);
  /* Before the registry starts provider threads: the file test sets the environment. */
  g_test_add_func("/kal/policy/file", test_policy_file);
  g_test_add_func("/kal/policy/rules", test_policy_rules);
  g_test_add_func("/kal/policy/broken", test_policy_broken);
  g_test_add_func("/kal/iface/registry", test_iface_registry);
  return g_test_run();
}
