/*
 * kAL: the host-wide connection-qualifier space and pinned-memory
 * accounting.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
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

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/kal/port/busy", test_port_busy);
  g_test_add_func("/kal/port/other-process", test_port_other_process);
  g_test_add_func("/kal/port/range", test_port_range);
  g_test_add_func("/kal/pin/limit", test_pin_limit);
  g_test_add_func("/kal/pin/overlap", test_pin_overlap);
  g_test_add_func("/kal/iface/registry", test_iface_registry);
  return g_test_run();
}
