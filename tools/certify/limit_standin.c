/*
 * A stand-in test program for check_limits.py: it plays conf-ia, telling
 * its waits to itapi-certify through cert_limit.h as a conformance test
 * does, and behaves as each test id says.
 *
 *   /conformance/ia/limit-hang        a wait of 1 s that never ends
 *   /conformance/ia/limit-child-hang  the same in a child process
 *   /conformance/ia/limit-steady      8 waits of 0.5 s each (limit 1 s): 4 s
 *   /conformance/ia/limit-dead-child  a child dies in a wait of 1 s; the
 *                                     test then takes 4 s and passes
 *   /conformance/ia/limit-outside     one short wait, then a hang outside
 *                                     any wait
 *   /conformance/ia/limit-nested      a wait of 1 s holding 8 waits of 0.5
 *                                     s each (limit 1 s), 0.2 s apart with
 *                                     no wait open: 5.6 s, and passes
 *   /conformance/ia/limit-stuck-loop  a wait of 1 s holding 2 waits of 0.5
 *                                     s, then a hang in it
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cert_limit.h"

static const char *const ids[] = {
  "/conformance/ia/limit-hang", "/conformance/ia/limit-child-hang", "/conformance/ia/limit-steady",
  "/conformance/ia/limit-dead-child", "/conformance/ia/limit-outside", "/conformance/ia/limit-nested",
  "/conformance/ia/limit-stuck-loop",
};

static void
hang(void)
{
  for (;;)
    pause();
}

/* A wait of @limit_us that lasts @us and ends. */
static void
wait_for(const char *what, gint64 limit_us, gint64 us)
{
  cert_limit_t w;
  cert_limit_begin(&w, what, limit_us);
  g_usleep((gulong) us);
  cert_limit_end(&w);
}

int
main(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "-l") == 0) {
    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++)
      printf("%s\n", ids[i]);
    return 0;
  }
  if (argc < 3 || strcmp(argv[1], "-p") != 0)
    return 2;
  const char *id = argv[2];
  printf("1..1\n");
  fflush(stdout);
  cert_limit_t w;
  if (strcmp(id, "/conformance/ia/limit-hang") == 0) {
    cert_limit_begin(&w, "a reply that never comes", G_USEC_PER_SEC);
    hang();
  } else if (strcmp(id, "/conformance/ia/limit-child-hang") == 0) {
    pid_t c = fork();
    if (c == 0) {
      cert_limit_begin(&w, "the child's reply that never comes", G_USEC_PER_SEC);
      hang();
    }
    waitpid(c, NULL, 0);
  } else if (strcmp(id, "/conformance/ia/limit-steady") == 0) {
    for (int i = 0; i < 8; i++)
      wait_for("one step of a steady test", G_USEC_PER_SEC, G_USEC_PER_SEC / 2);
  } else if (strcmp(id, "/conformance/ia/limit-dead-child") == 0) {
    pid_t c = fork();
    if (c == 0) {
      cert_limit_begin(&w, "what the child never got", G_USEC_PER_SEC);
      _exit(0);
    }
    waitpid(c, NULL, 0);
    for (int i = 0; i < 8; i++)
      wait_for("one step after the child died", G_USEC_PER_SEC, G_USEC_PER_SEC / 2);
  } else if (strcmp(id, "/conformance/ia/limit-nested") == 0 ||
             strcmp(id, "/conformance/ia/limit-stuck-loop") == 0) {
    gboolean hangs = strcmp(id, "/conformance/ia/limit-stuck-loop") == 0;
    cert_limit_begin(&w, "a loop of steps", G_USEC_PER_SEC);
    for (int i = 0; i < (hangs ? 2 : 8); i++) {
      /* Between two steps none is open: the time a loaded host keeps a
       * process from its next step, made long enough to be seen. */
      if (i > 0 && !hangs)
        g_usleep(G_USEC_PER_SEC / 5);
      wait_for("one step of the loop", G_USEC_PER_SEC, G_USEC_PER_SEC / 2);
    }
    if (hangs)
      hang();
    cert_limit_end(&w);
  } else if (strcmp(id, "/conformance/ia/limit-outside") == 0) {
    wait_for("a short step", G_USEC_PER_SEC, G_USEC_PER_SEC / 10);
    hang();
  } else {
    return 2;
  }
  printf("ok 1 %s\n", id);
  return 0;
}
