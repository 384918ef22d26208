/*
 * The waits of a conformance test, told to itapi-certify (cert_limit.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cert_limit.h"

/* The harness's socket, or -1: checked once per process image.  A forked
 * child inherits both the descriptor and this answer. */
static int channel = -1;
static gsize channel_once;
static guint64 next_id;

static int
channel_fd(void)
{
  if (g_once_init_enter(&channel_once)) {
    const char *v = g_getenv(CERT_LIMIT_ENV);
    unsigned long long ino = 0;
    int fd = -1;
    struct stat st;
    /* The number alone could name another file in a process that closed
     * the socket and opened something else: the inode must match too. */
    if (v != NULL && sscanf(v, "%d:%llu", &fd, &ino) == 2 && fd > 2 && fstat(fd, &st) == 0 &&
        S_ISSOCK(st.st_mode) && (unsigned long long) st.st_ino == ino)
      channel = fd;
    g_once_init_leave(&channel_once, 1);
  }
  return __atomic_load_n(&channel, __ATOMIC_RELAXED);
}

int
cert_limit_channel(void)
{
  return channel_fd();
}

/* One record; the harness gone (the test outlived it) ends the telling. */
static void
tell(const char *rec, size_t len)
{
  int fd = channel_fd();
  if (fd < 0)
    return;
  ssize_t r;
  do
    r = send(fd, rec, len, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    __atomic_store_n(&channel, -1, __ATOMIC_RELAXED);
}

static void
begin(cert_limit_t *w, const char *what, gint64 limit_us)
{
  gint64 now = g_get_monotonic_time();
  w->end = now + MAX(limit_us, 0);
  w->id = 0;
  if (channel_fd() < 0)
    return;
  w->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
  char rec[CERT_LIMIT_WHAT_MAX + 96];
  int n = snprintf(rec, sizeof rec, "B %d %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " ",
                   (int) getpid(), w->id, now, MAX(limit_us, 0));
  size_t len = (size_t) n;
  for (const char *c = what; *c != '\0' && len < (size_t) n + CERT_LIMIT_WHAT_MAX; c++)
    rec[len++] = *c == '\n' || *c == '\r' ? ' ' : *c;
  tell(rec, len);
}

void
cert_limit_begin(cert_limit_t *w, const char *what, gint64 limit_us)
{
  begin(w, what != NULL ? what : "(unnamed)", limit_us);
}

void
cert_limit_beginf(cert_limit_t *w, gint64 limit_us, const char *fmt, ...)
{
  if (channel_fd() < 0) {
    begin(w, "", limit_us);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  begin(w, what, limit_us);
}

gboolean
cert_limit_over(const cert_limit_t *w)
{
  return g_get_monotonic_time() >= w->end;
}

gint64
cert_limit_left(const cert_limit_t *w)
{
  return MAX(w->end - g_get_monotonic_time(), 0);
}

void
cert_limit_end(cert_limit_t *w)
{
  if (w->id == 0)
    return;
  char rec[64];
  int n = snprintf(rec, sizeof rec, "E %d %" G_GUINT64_FORMAT, (int) getpid(), w->id);
  tell(rec, (size_t) n);
  w->id = 0;
}
