/*
 * kAL: the host-wide connection-qualifier space, pinned-memory
 * accounting (the kernel's CAP_IPC_LOCK rule, ITAPI_MEMLOCK_LIMIT) and the
 * mapping check of every registration.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sched.h>
#include <grp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include "kal.h"
#include "rnicpi_util.h"

static void no_cm(void *c, const rnicpi_cm_event_t *e) { (void) c; (void) e; }
static void no_cq(void *c, uint64_t q) { (void) c; (void) q; }
static void no_async(void *c, const rnicpi_async_event_t *e) { (void) c; (void) e; }
static const rnicpi_upcalls_t no_upcalls = { no_cm, no_cq, no_async };

static void
test_port_busy(void)
{
  g_test_summary("a reserved port is busy for a second reservation until released");
  uint32_t port = 0;
  kal_port_t *a = NULL, *b = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &a, NULL), ==, RNICPI_OK);
  g_assert_cmpuint(port, >=, 49152);
  uint32_t same = port;
  g_assert_cmpint(kal_port_reserve("kal-test", &same, &b, NULL), ==, RNICPI_EEXIST);
  g_assert_null(b);
  /* Another space does not collide. */
  g_assert_cmpint(kal_port_reserve("kal-test-other", &same, &b, NULL), ==, RNICPI_OK);
  kal_port_release(b);
  kal_port_release(a);
  g_assert_cmpint(kal_port_reserve("kal-test", &same, &b, NULL), ==, RNICPI_OK);
  kal_port_release(b);
}

static void
test_port_other_process(void)
{
  g_test_summary("a port held by one process is busy in another, and free once the holder dies");
  uint32_t port = 0;
  kal_port_t *a = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &a, NULL), ==, RNICPI_OK);
  pid_t pid = fork();
  if (pid == 0) {
    kal_port_t *b = NULL;
    uint32_t p = port;
    _exit(kal_port_reserve("kal-test", &p, &b, NULL) == RNICPI_EEXIST ? 0 : 1);
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
    char ok = kal_port_reserve("kal-test", &p, &b, NULL) == RNICPI_OK ? 'y' : 'n';
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
  g_assert_cmpint(kal_port_reserve("kal-test", &p, &c, NULL), ==, RNICPI_EEXIST);
  kill(pid, SIGKILL);
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_cmpint(kal_port_reserve("kal-test", &p, &c, NULL), ==, RNICPI_OK);
  kal_port_release(c);
  close(pipefd[0]);
  close(pipefd[1]);
}

/* A child that holds @port of space "kal-test" as uid @uid (when this
 * process may change it): through kal_port_reserve() when @how is 'k', or by
 * binding the abstract name itself and listening ('l') or not ('b'), as any
 * local user can; it says 'y' on @fd once it holds the name, then waits. */
static pid_t
spawn_holder(uint32_t port, uid_t uid, char how, int fd)
{
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid != 0)
    return pid;
  if (getuid() == 0 && uid != 0 && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
    _exit(2);
  char ok = 'n';
  if (how == 'k') {
    kal_port_t *r = NULL;
    uint32_t p = port;
    if (kal_port_reserve("kal-test", &p, &r, NULL) == RNICPI_OK)
      ok = 'y';
  } else {
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int n = g_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "itapi-conn-qual/kal-test/%u", port);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(s, (struct sockaddr *) &sa, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n)) == 0 &&
        (how != 'l' || listen(s, 1) == 0))
      ok = 'y';
  }
  if (write(fd, &ok, 1) != 1)
    _exit(2);
  pause();
  _exit(0);
}

static void
test_port_holder(void)
{
  g_test_summary("a refused reservation names its holder by SO_PEERCRED (pid and uid, here a "
                 "child of uid 65534 when run as root); a privileged port held by a process "
                 "without CAP_NET_BIND_SERVICE, or by a socket that does not listen, is said to "
                 "be bound outside the access layer");
  uid_t other = getuid() == 0 ? 65534 : getuid();
  static const struct {
    uint32_t port;
    char how;
    const char *says;
  } cases[] = {
    { 0, 'k', NULL },
    { 80, 'l', "without CAP_NET_BIND_SERVICE, so it bound the abstract name "
               "'itapi-conn-qual/kal-test/80' outside this access layer" },
    { 81, 'b', "a socket that does not listen holds it, which is no reservation of this access layer" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    uint32_t port = cases[i].port;
    if (port == 0) {
      kal_port_t *probe = NULL;
      g_assert_cmpint(kal_port_reserve("kal-test", &port, &probe, NULL), ==, RNICPI_OK);
      kal_port_release(probe);
    }
    int pipefd[2];
    g_assert_cmpint(pipe(pipefd), ==, 0);
    pid_t pid = spawn_holder(port, other, cases[i].how, pipefd[1]);
    char ok = 0;
    g_assert_cmpint(read(pipefd[0], &ok, 1), ==, 1);
    g_assert_cmpint(ok, ==, 'y');
    kal_port_t *r = NULL;
    char *why = NULL;
    uint32_t p = port;
    g_assert_cmpint(kal_port_reserve("kal-test", &p, &r, &why), ==, RNICPI_EEXIST);
    g_test_message("why: %s", why);
    g_autofree char *held = g_strdup_printf("connection qualifier %u cannot be reserved: ", port);
    g_assert_nonnull(strstr(why, held));
    if (cases[i].how != 'b') {
      g_autofree char *who = g_strdup_printf("process %d (uid %u) holds it", (int) pid, (unsigned) other);
      g_assert_nonnull(strstr(why, who));
    }
    if (cases[i].says != NULL && (other != 0 || cases[i].how == 'b'))
      g_assert_nonnull(strstr(why, cases[i].says));
    g_assert_nonnull(strstr(why, "; free it, or use another qualifier"));
    g_free(why);
    kill(pid, SIGKILL);
    int status;
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    close(pipefd[0]);
    close(pipefd[1]);
  }
}

static void
test_port_range(void)
{
  g_test_summary("ports above 65535 are refused");
  uint32_t port = 70000;
  kal_port_t *r = NULL;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, NULL), ==, RNICPI_EINVAL);
}

static gboolean set_cap(unsigned cap, gboolean on);
static gboolean has_cap(unsigned cap);

static void
test_port_privileged(void)
{
  g_test_summary("a port below net.ipv4.ip_unprivileged_port_start needs CAP_NET_BIND_SERVICE "
                 "(dropped here from the effective set when held): without it port 80 is "
                 "refused with RNICPI_EACCES and a sentence naming the port, the start and the "
                 "capability; the start itself and a chosen port are reserved; with it port 80 is");
  uint32_t start = rnicpi_unprivileged_port_start();
  if (start <= 80) {
    g_test_skip("net.ipv4.ip_unprivileged_port_start is 80 or less here: port 80 is not privileged");
    return;
  }
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  kal_port_t *r = NULL;
  char *why = NULL;
  uint32_t port = 80;
  if (has_cap(CAP_NET_BIND_SERVICE)) {
    g_assert_true(rnicpi_cap_effective(CAP_NET_BIND_SERVICE));
    g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, &why), ==, RNICPI_OK);
    g_assert_null(why);
    kal_port_release(r);
    r = NULL;
    g_assert_true(set_cap(CAP_NET_BIND_SERVICE, FALSE));
  } else {
    g_test_message("this process lacks CAP_NET_BIND_SERVICE: only the refusal is tested");
  }
  g_assert_false(has_cap(CAP_NET_BIND_SERVICE));
  g_assert_false(rnicpi_cap_effective(CAP_NET_BIND_SERVICE));

  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, &why), ==, RNICPI_EACCES);
  g_assert_null(r);
  g_assert_cmpuint(port, ==, 80);
  g_test_message("why: %s", why);
  g_autofree char *below = g_strdup_printf("connection qualifier 80 is below the host's unprivileged "
                                           "start %u (net.ipv4.ip_unprivileged_port_start)", start);
  g_assert_nonnull(strstr(why, below));
  g_assert_nonnull(strstr(why, "needs CAP_NET_BIND_SERVICE"));
  g_autofree char *todo = g_strdup_printf("use a qualifier of %u or above, or grant the capability", start);
  g_assert_nonnull(strstr(why, todo));
  g_clear_pointer(&why, g_free);
  port = start - 1;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, NULL), ==, RNICPI_EACCES);

  port = start;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, NULL), ==, RNICPI_OK);
  kal_port_release(r);
  port = 0;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, NULL), ==, RNICPI_OK);
  g_assert_cmpuint(port, >=, start);
  kal_port_release(r);
}

static void
test_port_privileged_userns(void)
{
  g_test_summary("as the kernel does, CAP_NET_BIND_SERVICE counts over the user namespace that "
                 "owns the network namespace: a process in a user namespace of its own has it "
                 "in its effective set yet is refused port 80, with a sentence saying so, until "
                 "it has a network namespace of that user namespace too");
  if (rnicpi_unprivileged_port_start() <= 80) {
    g_test_skip("net.ipv4.ip_unprivileged_port_start is 80 or less here: port 80 is not privileged");
    return;
  }
  if (!g_test_subprocess()) {
    /* Whether this host lets a process make one (kernel.unprivileged_userns_clone,
     * user.max_user_namespaces, a seccomp filter of a container). */
    pid_t pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0)
      _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
    int status = 0;
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      g_test_skip("this host refuses a user namespace (unshare(CLONE_NEWUSER))");
      return;
    }
    g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_assert_cmpint(unshare(CLONE_NEWUSER), ==, 0);
  g_assert_true(rnicpi_cap_effective(CAP_NET_BIND_SERVICE));
  kal_port_t *r = NULL;
  char *why = NULL;
  uint32_t port = 80;
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, &why), ==, RNICPI_EACCES);
  g_test_message("why: %s", why);
  g_assert_nonnull(strstr(why, "CAP_NET_BIND_SERVICE, which this process"));
  g_assert_nonnull(strstr(why, "it has it only in a user namespace of its own"));
  g_free(why);
  g_assert_cmpint(unshare(CLONE_NEWNET), ==, 0);
  g_assert_cmpint(kal_port_reserve("kal-test", &port, &r, NULL), ==, RNICPI_OK);
  kal_port_release(r);
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

/* Set or clear @cap in this process's effective set (it stays permitted,
 * so it can come back).  FALSE when capset(2) refuses. */
static gboolean
set_cap(unsigned cap, gboolean on)
{
  struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
  memset(d, 0, sizeof(d));
  if (syscall(SYS_capget, &h, d) != 0)
    return FALSE;
  if (on)
    d[CAP_TO_INDEX(cap)].effective |= CAP_TO_MASK(cap);
  else
    d[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
  return syscall(SYS_capset, &h, d) == 0;
}

/* Whether @cap is in this process's effective set, as /proc/self/status
 * says: another source than the capget(2) of the code under test. */
static gboolean
has_cap(unsigned cap)
{
  gboolean has = FALSE;
  g_assert_true(rnicpi_pid_cap_effective(getpid(), cap, &has));
  return has;
}

static gboolean
set_ipc_lock(gboolean on)
{
  return set_cap(CAP_IPC_LOCK, on);
}

static gboolean
has_ipc_lock(void)
{
  return has_cap(CAP_IPC_LOCK);
}

static void
set_memlock_rlimit(rlim_t bytes)
{
  struct rlimit rl;
  g_assert_cmpint(getrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);
  rl.rlim_cur = bytes;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < bytes)
    rl.rlim_max = bytes;
  g_assert_cmpint(setrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);
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

/* VmLck grew by @want KiB since @base, where mlock() locks at all (not
 * under a sanitizer's runtime, see mlock_locks). */
static void
assert_locked_kib(uint64_t base, uint64_t want)
{
  static int locks = -1;
  if (locks < 0)
    locks = mlock_locks();
  if (locks)
    g_assert_cmpuint(vm_locked_kib() - base, ==, want);
}

static void
test_pin_limit(void)
{
  g_test_summary("pinning past ITAPI_MEMLOCK_LIMIT fails with a sentence naming both numbers, the "
                 "variable and what to do");
  g_setenv("ITAPI_MEMLOCK_LIMIT", "65536", TRUE);
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  void *mem = aligned_alloc(page, 256 * 1024);
  kal_pin_t *pin = NULL;
  char *why = NULL;
  g_assert_cmpint(kal_pin(mem, 128 * 1024, KAL_PIN_LOCK, &pin, &why), ==, RNICPI_ELIMIT);
  g_assert_null(pin);
  g_assert_nonnull(why);
  g_test_message("why: %s", why);
  g_assert_nonnull(strstr(why, "131072 bytes"));
  g_assert_nonnull(strstr(why, "65536 bytes"));
  g_assert_nonnull(strstr(why, "raise ITAPI_MEMLOCK_LIMIT"));
  g_free(why);

  uint64_t pinned, limit;
  g_assert_cmpint(kal_pin(mem, 32 * 1024, KAL_PIN_LOCK, &pin, &why), ==, RNICPI_OK);
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(pinned, ==, 32 * 1024);
  g_assert_cmpuint(limit, ==, 65536);
  g_assert_cmpuint(pin->num_pages, ==, 32 * 1024 / page);
  g_assert_cmpuint(pin->first_page, ==, (uintptr_t) mem);
  g_assert_true(pin->locked);
  kal_unpin(pin);
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(pinned, ==, 0);
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  free(mem);
}

static void
test_pin_parse(void)
{
  g_test_summary("ITAPI_MEMLOCK_LIMIT is a whole number with an optional unit K/M/G/T, or "
                 "'unlimited'; anything else is refused with a sentence naming the variable, the "
                 "value and what is accepted, at start-up and at every pinning registration");
  static const struct { const char *text; uint64_t bytes; } good[] = {
    { "unlimited", UINT64_MAX }, { "UNLIMITED", UINT64_MAX }, { "0", 0 }, { "65536", 65536 },
    { "64M", UINT64_C(64) << 20 }, { "1g", UINT64_C(1) << 30 }, { "8k", 8192 },
    { "2T", UINT64_C(2) << 40 }, { "18446744073709551615", UINT64_MAX },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
    uint64_t v = 1;
    char *why = NULL;
    g_assert_cmpint(kal_memlock_parse(good[i].text, &v, &why), ==, RNICPI_OK);
    g_assert_cmpuint(v, ==, good[i].bytes);
    g_assert_null(why);
  }
  static const char *const bad[] = {
    "12x", "", " 64M", "64M ", "-1", "+5", "1.5G", "64MB", "M", "unlimitedx", "0x100",
    "18446744073709551616", "16777216T",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    uint64_t v = 7;
    char *why = NULL;
    g_assert_cmpint(kal_memlock_parse(bad[i], &v, &why), ==, RNICPI_EINVAL);
    g_assert_cmpuint(v, ==, 7);
    g_assert_nonnull(why);
    g_autofree char *quoted = g_strdup_printf("ITAPI_MEMLOCK_LIMIT='%s'", bad[i]);
    g_assert_nonnull(strstr(why, quoted));
    g_assert_nonnull(strstr(why, "'unlimited'"));
    g_assert_nonnull(strstr(why, "K, M, G or T"));
    g_free(why);
  }

  /* A registration that pins is refused with the same sentence; one that
   * does not pin does not depend on the variable. */
  g_setenv("ITAPI_MEMLOCK_LIMIT", "12x", TRUE);
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  void *mem = aligned_alloc(page, page);
  kal_pin_t *pin = NULL;
  char *why = NULL;
  g_assert_cmpint(kal_pin(mem, page, KAL_PIN_LOCK, &pin, &why), ==, RNICPI_EINVAL);
  g_assert_null(pin);
  g_assert_nonnull(strstr(why, "ITAPI_MEMLOCK_LIMIT='12x' is not a size"));
  g_clear_pointer(&why, g_free);
  g_assert_cmpint(kal_pin(mem, page, 0, &pin, &why), ==, RNICPI_OK);
  kal_unpin(pin);
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  free(mem);
}

static void
test_pin_parse_startup(void)
{
  g_test_summary("a bad ITAPI_MEMLOCK_LIMIT is reported when the kAL starts, naming the variable, "
                 "the value and what is accepted");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_MEMLOCK_LIMIT", "12x", TRUE);
    kal_init();
    return;
  }
  g_test_trap_subprocess(NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*ITAPI_MEMLOCK_LIMIT='12x' is not a size*'unlimited'*every registration that "
                            "pins memory is refused*");
}

static uint64_t
statm_rss_bytes(void)
{
  g_autofree char *statm = NULL;
  g_assert_true(g_file_get_contents("/proc/self/statm", &statm, NULL, NULL));
  unsigned long size = 0, rss = 0;
  g_assert_cmpint(sscanf(statm, "%lu %lu", &size, &rss), ==, 2);
  return (uint64_t) rss * (uint64_t) sysconf(_SC_PAGESIZE);
}

static void
test_pin_rlimit(void)
{
  g_test_summary("a process without CAP_IPC_LOCK (dropped here if it had it) is held to its "
                 "RLIMIT_MEMLOCK of 8 MiB, which the refusal names with what to do");
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  if (has_ipc_lock())
    g_assert_true(set_ipc_lock(FALSE));
  g_assert_false(has_ipc_lock());
  g_assert_false(kal_cap_ipc_lock());
  set_memlock_rlimit(8 * 1024 * 1024);
  size_t len = 16 * 1024 * 1024;
  void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true(mem != MAP_FAILED);
  uint64_t base = vm_locked_kib(), pinned, limit;
  kal_pin_t *pin = NULL;
  char *why = NULL;
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(limit, ==, 8 * 1024 * 1024);
  g_assert_cmpint(kal_pin(mem, len, KAL_PIN_LOCK | KAL_PIN_WRITE, &pin, &why), ==, RNICPI_ELIMIT);
  g_assert_null(pin);
  g_test_message("why: %s", why);
  g_assert_nonnull(strstr(why, "16777216 bytes"));
  g_assert_nonnull(strstr(why, "8388608 bytes, from RLIMIT_MEMLOCK"));
  g_assert_nonnull(strstr(why, "raise `ulimit -l`, run with CAP_IPC_LOCK"));
  g_clear_pointer(&why, g_free);
  assert_locked_kib(base, 0);
  g_assert_cmpint(kal_pin(mem, 4 * 1024 * 1024, KAL_PIN_LOCK, &pin, &why), ==, RNICPI_OK);
  assert_locked_kib(base, 4 * 1024);
  kal_unpin(pin);
  munmap(mem, len);
}

static void
test_pin_cap_ipc_lock(void)
{
  g_test_summary("the kernel's rule: with CAP_IPC_LOCK, 64 MiB pin under an 8 MiB RLIMIT_MEMLOCK; "
                 "ITAPI_MEMLOCK_LIMIT sets a quota even with the capability, or lifts it");
  if (!has_ipc_lock()) {
    g_test_skip("this process has no CAP_IPC_LOCK to test with (run as root)");
    return;
  }
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  g_assert_true(kal_cap_ipc_lock());
  set_memlock_rlimit(8 * 1024 * 1024);
  size_t big = 64 * 1024 * 1024;
  void *mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true(mem != MAP_FAILED);
  uint64_t base = vm_locked_kib(), pinned, limit;
  kal_pin_t *pin = NULL;
  char *why = NULL;
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(limit, ==, UINT64_MAX);
  g_assert_cmpint(kal_pin(mem, big, KAL_PIN_LOCK | KAL_PIN_WRITE, &pin, &why), ==, RNICPI_OK);
  g_assert_null(why);
  assert_locked_kib(base, big / 1024);
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(pinned, ==, big);
  kal_unpin(pin);
  assert_locked_kib(base, 0);

  g_setenv("ITAPI_MEMLOCK_LIMIT", "32M", TRUE);
  g_assert_cmpint(kal_pin(mem, big, KAL_PIN_LOCK, &pin, &why), ==, RNICPI_ELIMIT);
  g_assert_nonnull(strstr(why, "33554432 bytes, from ITAPI_MEMLOCK_LIMIT"));
  g_clear_pointer(&why, g_free);
  g_setenv("ITAPI_MEMLOCK_LIMIT", "unlimited", TRUE);
  g_assert_cmpint(kal_pin(mem, big, KAL_PIN_LOCK, &pin, &why), ==, RNICPI_OK);
  kal_unpin(pin);
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  munmap(mem, big);
}

static void
test_pin_no_lock(void)
{
  g_test_summary("without KAL_PIN_LOCK (a provider with RNICPI_CAP_NO_PIN), 1 GiB of fresh anonymous "
                 "memory is taken under a 64 KiB limit with nothing locked, accounted or faulted in");
  size_t big = (size_t) 1 << 30;
  void *mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  g_assert_true(mem != MAP_FAILED);
  g_setenv("ITAPI_MEMLOCK_LIMIT", "64K", TRUE);
  uint64_t locked = vm_locked_kib(), rss = statm_rss_bytes(), pinned, limit;
  kal_pin_t *pin = NULL;
  char *why = NULL;
  g_assert_cmpint(kal_pin(mem, big, KAL_PIN_WRITE, &pin, &why), ==, RNICPI_OK);
  g_assert_null(why);
  g_assert_false(pin->locked);
  g_assert_cmpuint(pin->bytes, ==, big);
  g_assert_cmpuint(pin->first_page, ==, (uintptr_t) mem);
  kal_pin_usage(&pinned, &limit);
  g_assert_cmpuint(pinned, ==, 0);
  g_assert_cmpuint(vm_locked_kib(), ==, locked);
  g_assert_cmpuint(statm_rss_bytes(), <, rss + 16 * 1024 * 1024);
  kal_unpin(pin);
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  munmap(mem, big);
}

static void
test_pin_providers(void)
{
  g_test_summary("vp/emul and vp/iwarp set no-pinning-needed (RNIC-PI 1.8); on every interface, "
                 "it_lmr_create of 1 GiB of fresh anonymous memory under a 64 KiB RLIMIT_MEMLOCK, "
                 "without CAP_IPC_LOCK, succeeds with nothing locked and RSS grown by under 64 MiB");
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_unsetenv("ITAPI_MEMLOCK_LIMIT");
  if (has_ipc_lock())
    g_assert_true(set_ipc_lock(FALSE));
  set_memlock_rlimit(64 * 1024);
  size_t big = (size_t) 1 << 30;
  g_assert_cmpuint(kal_iface_count(), >=, 1);
  for (size_t i = 0; i < kal_iface_count(); i++) {
    const kal_iface_t *f = kal_iface_get(i);
    if (strcmp(f->prov->name, "emul") != 0 && strcmp(f->prov->name, "iwarp") != 0)
      continue;
    rnicpi_caps_t caps;
    g_assert_cmpint(kal_iface_caps(f, &caps), ==, RNICPI_OK);
    g_assert_cmphex(caps.features & RNICPI_CAP_NO_PIN, ==, RNICPI_CAP_NO_PIN);

    it_ia_handle_t ia;
    it_pz_handle_t pz;
    it_lmr_handle_t lmr;
    g_assert_cmpint(it_ia_create(f->name, 2, 1, &ia), ==, IT_SUCCESS);
    g_assert_cmpint(it_pz_create(ia, &pz), ==, IT_SUCCESS);
    void *mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_assert_true(mem != MAP_FAILED);
    uint64_t locked = vm_locked_kib(), rss = statm_rss_bytes();
    it_status_t st = it_lmr_create(pz, mem, NULL, big, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_ALL & ~IT_PRIV_ATOMIC,
                                   IT_LMR_FLAG_NONE, 0, &lmr, NULL);
    g_test_message("%s: %s (%s); RSS %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT, f->name,
                   itx_status_name(st), itx_error_detail(), rss, statm_rss_bytes());
    g_assert_cmpstr(itx_status_name(st), ==, "IT_SUCCESS");
    g_assert_cmpuint(vm_locked_kib(), ==, locked);
    g_assert_cmpuint(statm_rss_bytes(), <, rss + 64 * 1024 * 1024);
    g_assert_cmpint(it_lmr_free(lmr), ==, IT_SUCCESS);
    munmap(mem, big);
    g_assert_cmpint(it_pz_free(pz), ==, IT_SUCCESS);
    g_assert_cmpint(it_ia_free(ia), ==, IT_SUCCESS);
  }
}

static void
test_pin_protections(void)
{
  g_test_summary("kal_pin refuses a read-only page for writing (EACCES), a PROT_NONE page for "
                 "anything (EACCES) and an unmapped page (ERANGE), naming the page and its offset; "
                 "read-only memory pins for reading");
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  /* rw | r- | --- | hole */
  unsigned char *m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true(m != MAP_FAILED);
  g_assert_cmpint(mprotect(m + page, page, PROT_READ), ==, 0);
  g_assert_cmpint(mprotect(m + 2 * page, page, PROT_NONE), ==, 0);
  g_assert_cmpint(munmap(m + 3 * page, page), ==, 0);
  kal_pin_t *pin = NULL;
  char *why = NULL;
  for (uint32_t lock = 0; lock <= KAL_PIN_LOCK; lock += KAL_PIN_LOCK) {
    g_assert_cmpint(kal_pin(m, page, lock | KAL_PIN_WRITE, &pin, &why), ==, RNICPI_OK);
    kal_unpin(pin);
    g_assert_cmpint(kal_pin(m + 10, 2 * page - 20, lock, &pin, &why), ==, RNICPI_OK);
    kal_unpin(pin);
    pin = NULL;
    g_assert_cmpint(kal_pin(m + 10, 2 * page - 20, lock | KAL_PIN_WRITE, &pin, &why), ==, RNICPI_EACCES);
    g_assert_null(pin);
    g_test_message("why: %s", why);
    g_autofree char *at = g_strdup_printf("the page at %p (byte %zu of the %zu-byte range at %p) is mapped "
                                          "read-only", (void *) (m + page), page - 10, 2 * page - 20,
                                          (void *) (m + 10));
    g_assert_nonnull(strstr(why, at));
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(kal_pin(m + page, 2 * page, lock, &pin, &why), ==, RNICPI_EACCES);
    g_assert_nonnull(strstr(why, "without read permission"));
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(kal_pin(m + 3 * page, page, lock, &pin, &why), ==, RNICPI_ERANGE);
    g_autofree char *hole = g_strdup_printf("the page at %p", (void *) (m + 3 * page));
    g_assert_nonnull(strstr(why, hole));
    g_assert_nonnull(strstr(why, "is not mapped"));
    g_clear_pointer(&why, g_free);
  }
  /* A string constant lives in a read-only mapping. */
  static const char rodata[] = "read-only data of the test";
  g_assert_cmpint(kal_mem_check(rodata, sizeof(rodata), false, NULL), ==, RNICPI_OK);
  g_assert_cmpint(kal_mem_check(rodata, sizeof(rodata), true, NULL), ==, RNICPI_EACCES);
  munmap(m, 3 * page);
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
  g_assert_cmpint(kal_pin(mem, 8 * page, KAL_PIN_LOCK, &a, &why), ==, RNICPI_OK);
  g_assert_cmpint(kal_pin(mem + 4 * page + 10, 8 * page - 20, KAL_PIN_LOCK, &b, &why), ==, RNICPI_OK);
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

static void
test_iface_providers(void)
{
  g_test_summary("kal_provider_get() walks the registry the interfaces came from: every "
                 "interface's provider is one of its usable entries, and the index past "
                 "kal_provider_count() is NULL");
  size_t n = kal_provider_count();
  g_assert_cmpuint(n, >=, 1);
  g_assert_null(kal_provider_get(n));
  for (size_t i = 0; i < kal_iface_count(); i++) {
    const kal_iface_t *f = kal_iface_get(i);
    size_t k = 0;
    while (k < n && (kal_provider_get(k)->refused || kal_provider_get(k)->prov != f->prov))
      k++;
    g_assert_cmpuint(k, <, n);
    g_assert_cmpstr(kal_provider_get(k)->name, ==, f->prov->name);
  }
}

static void
test_iface_caps(void)
{
  g_test_summary("kal_iface_caps() gives each interface's record as the device's own query, "
                 "completed for the provider's minor, with the transport the registry took; "
                 "a NULL argument is RNICPI_EINVAL");
  rnicpi_caps_t caps;
  g_assert_cmpuint(kal_iface_count(), >=, 1);
  g_assert_cmpint(kal_iface_caps(NULL, &caps), ==, RNICPI_EINVAL);
  g_assert_cmpint(kal_iface_caps(kal_iface_get(0), NULL), ==, RNICPI_EINVAL);
  for (size_t i = 0; i < kal_iface_count(); i++) {
    const kal_iface_t *f = kal_iface_get(i);
    rnicpi_dev_t *dev = NULL;
    rnicpi_caps_t own;
    g_assert_cmpint(f->prov->device->open(f->device, &no_upcalls, NULL, &dev), ==, RNICPI_OK);
    g_assert_cmpint(f->prov->device->query(dev, &own), ==, RNICPI_OK);
    f->prov->device->close(dev);
    rnicpi_caps_complete(f->prov, &own);
    memset(&caps, 0, sizeof(caps));
    g_assert_cmpint(kal_iface_caps(f, &caps), ==, RNICPI_OK);
    g_assert_cmpint(caps.transport, ==, f->transport);
    g_assert_cmpint(caps.transport, ==, own.transport);
    g_assert_cmphex(caps.features, ==, own.features);
    g_assert_cmpuint(caps.max_qp, ==, own.max_qp);
    g_assert_cmpuint(caps.max_qp, >, 0);
  }
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
  g_assert_cmpint(g_chmod(file, 0644), ==, 0);
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

static void
test_policy_unsafe(void)
{
  g_test_summary("host policy: a file another user could rewrite (writable by its group or "
                 "others, owned by another user, in a directory writable by others) refuses "
                 "every connection, naming the file, its owner and mode and the command that "
                 "mends it; 0644 of this user in a 0700 or a sticky 1777 directory is read");
  if (g_test_subprocess()) {
    char *why = NULL;
    const char *says = g_getenv("KAL_TEST_POLICY_SAYS");
    rnicpi_status_t st = verdict(KAL_POLICY_CONNECT, "127.0.0.1", 7001, &why);
    if (*says == '\0') {
      g_assert_cmpint(st, ==, RNICPI_OK);
      g_assert_cmpint(verdict(KAL_POLICY_CONNECT, "127.0.0.1", 7000, NULL), ==, RNICPI_EACCES);
    } else {
      g_assert_cmpint(st, ==, RNICPI_EACCES);
      if (strstr(why, says) == NULL)
        g_error("message '%s' lacks '%s'", why, says);
      g_assert_nonnull(strstr(why, "so another user could rewrite its rules"));
      g_assert_nonnull(strstr(why, "every connection is refused until it is mended"));
    }
    g_free(why);
    return;
  }
  g_autofree char *dir = g_dir_make_tmp("kal-policy-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "policy", NULL);
  g_assert_true(g_file_set_contents(file, "deny connect 127.0.0.0/8 port 7000\n", -1, NULL));
  unsigned me = (unsigned) geteuid();
  struct {
    mode_t file_mode, dir_mode;
    uid_t owner;
    char *says; /* "" when the file is read */
  } cases[] = {
    { 0644, 0700, me, g_strdup("") },
    { 0644, 01777, me, g_strdup("") },
    { 0664, 0700, me, g_strdup_printf("host policy %s is refused: it is writable by its group (mode 0664, "
                                      "owner uid %u)", file, me) },
    { 0646, 0700, me, g_strdup_printf("it is writable by others (mode 0646, owner uid %u)", me) },
    { 0666, 0700, me, g_strdup_printf("it is writable by its group and others (mode 0666, owner uid %u), so "
                                      "another user could rewrite its rules; every connection is refused "
                                      "until it is mended (`chmod go-w %s`)", me, file) },
    { 0644, 0777, me, g_strdup_printf("its directory %s is writable by its group and others (mode 0777, owner "
                                      "uid %u)", dir, me) },
    { 0644, 0700, 65534, g_strdup_printf("it is owned by uid 65534 (mode 0644), neither root nor this "
                                         "process's uid %u, so another user could rewrite its rules; every "
                                         "connection is refused until it is mended (`chown root %s`)", me, file) },
  };
  g_setenv("ITAPI_POLICY", file, TRUE);
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    if (cases[i].owner != me && (me != 0 || chown(file, cases[i].owner, (gid_t) -1) != 0)) {
      g_test_message("case %zu: the file cannot be given to uid %u here", i, (unsigned) cases[i].owner);
      continue;
    }
    g_assert_cmpint(g_chmod(file, (int) cases[i].file_mode), ==, 0);
    g_assert_cmpint(g_chmod(dir, (int) cases[i].dir_mode), ==, 0);
    g_setenv("KAL_TEST_POLICY_SAYS", cases[i].says, TRUE);
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    if (cases[i].owner != me)
      g_assert_cmpint(chown(file, me, (gid_t) -1), ==, 0);
  }
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    g_free(cases[i].says);
  g_unsetenv("ITAPI_POLICY");
  g_unsetenv("KAL_TEST_POLICY_SAYS");
  g_assert_cmpint(g_chmod(dir, 0700), ==, 0);
  g_unlink(file);
  g_rmdir(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/kal/port/busy", test_port_busy);
  g_test_add_func("/kal/port/other-process", test_port_other_process);
  g_test_add_func("/kal/port/holder", test_port_holder);
  g_test_add_func("/kal/port/range", test_port_range);
  g_test_add_func("/kal/port/privileged", test_port_privileged);
  g_test_add_func("/kal/port/privileged-userns", test_port_privileged_userns);
  g_test_add_func("/kal/pin/limit", test_pin_limit);
  g_test_add_func("/kal/pin/overlap", test_pin_overlap);
  g_test_add_func("/kal/pin/parse", test_pin_parse);
  g_test_add_func("/kal/pin/parse-at-startup", test_pin_parse_startup);
  g_test_add_func("/kal/pin/rlimit-without-cap", test_pin_rlimit);
  g_test_add_func("/kal/pin/cap-ipc-lock", test_pin_cap_ipc_lock);
  g_test_add_func("/kal/pin/no-lock", test_pin_no_lock);
  g_test_add_func("/kal/pin/protections", test_pin_protections);
  g_test_add_func("/kal/pin/providers", test_pin_providers);
  /* Before the registry starts provider threads: the file test sets the environment. */
  g_test_add_func("/kal/policy/file", test_policy_file);
  g_test_add_func("/kal/policy/unsafe", test_policy_unsafe);
  g_test_add_func("/kal/policy/rules", test_policy_rules);
  g_test_add_func("/kal/policy/broken", test_policy_broken);
  g_test_add_func("/kal/iface/registry", test_iface_registry);
  g_test_add_func("/kal/iface/providers", test_iface_providers);
  g_test_add_func("/kal/iface/caps", test_iface_caps);
  return g_test_run();
}
