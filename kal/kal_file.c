/*
 * kAL: reading a file of host settings (the connection policy, the stack's
 * configuration) that only root or this process's user can have written.
 *
 * Settings another user could rewrite are no settings: as sshd's
 * StrictModes does, the file must be owned by root or by this process's
 * user and writable by neither its group nor others, and so must its
 * directory, where a sticky one (/tmp) is let through: nobody else may
 * replace a file in it.  The checks are made on the file opened and read
 * (fstat, and its directory through /proc/self/fd), so a rename between
 * check and read changes nothing.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "kal.h"

/* Why @st (of @what, the file or its directory @name) lets another user
 * rewrite it, with the command that mends it in @fix; NULL when it does
 * not. */
static char *
unsafe_why(const struct stat *st, const char *what, const char *name, gboolean dir, char **fix)
{
  uid_t me = geteuid();
  unsigned mode = (unsigned) (st->st_mode & 07777);
  if (st->st_uid != 0 && st->st_uid != me) {
    *fix = g_strdup_printf("chown root %s", name);
    return g_strdup_printf("%s is owned by uid %u (mode %04o), neither root nor this process's uid %u",
                           what, (unsigned) st->st_uid, mode, (unsigned) me);
  }
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(dir && (st->st_mode & S_ISVTX))) {
    *fix = g_strdup_printf("chmod go-w %s", name);
    return g_strdup_printf("%s is writable by %s (mode %04o, owner uid %u)", what,
                           !(st->st_mode & S_IWOTH) ? "its group" : !(st->st_mode & S_IWGRP) ? "others"
                           : "its group and others", mode, (unsigned) st->st_uid);
  }
  return NULL;
}

static rnicpi_status_t
unreadable(int err, char **bad)
{
  *bad = g_strdup_printf("cannot be read (%s)", g_strerror(err));
  return err == ENOENT ? RNICPI_ENOENT : RNICPI_EIO;
}

/* The contents of @path, opened as @fd, once the file and its directory
 * pass the checks. */
static rnicpi_status_t
read_checked(const char *path, int fd, char **text, char **bad, char **fix)
{
  struct stat st;
  if (fstat(fd, &st) != 0)
    return unreadable(errno, bad);
  if (!S_ISREG(st.st_mode)) {
    *bad = g_strdup("is not a regular file");
    return RNICPI_EIO;
  }
  char *why = unsafe_why(&st, "it", path, FALSE, fix);
  if (why == NULL) {
    /* The directory of the file opened, wherever a link led. */
    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", fd);
    g_autofree char *real = g_file_read_link(self, NULL);
    g_autofree char *dir = g_path_get_dirname(real != NULL ? real : path);
    g_autofree char *what = g_strdup_printf("its directory %s", dir);
    if (stat(dir, &st) == 0)
      why = unsafe_why(&st, what, dir, TRUE, fix);
  }
  if (why != NULL) {
    *bad = why;
    return RNICPI_EACCES;
  }
  GString *s = g_string_new(NULL);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      g_string_append_len(s, buf, n);
  if (n < 0) {
    int err = errno;
    g_string_free(s, TRUE);
    return unreadable(err, bad);
  }
  *text = g_string_free(s, FALSE);
  return RNICPI_OK;
}

rnicpi_status_t
kal_file_read_private(const char *path, char **text, char **bad, char **fix)
{
  *bad = NULL;
  *fix = NULL;
  /* Not blocked by a FIFO: read_checked() refuses anything but a file. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return unreadable(errno, bad);
  rnicpi_status_t st = read_checked(path, fd, text, bad, fix);
  close(fd);
  return st;
}
