/*
 * Conformance across users: one end of each cross-process test runs as an
 * unprivileged user and the other as root, and the root end watches what
 * both map.
 *
 * ITAPI_CONF_CHILD_USER=NAME: every child (conf_child_spawn) drops to NAME
 * between fork and exec; the tests' process stays root.
 *
 * ITAPI_CONF_PARENT_USER=NAME: the tests' process runs as NAME and its
 * children as root.  A process of another user cannot start a root
 * process, so the program, started as root, splits first thing
 * (conf_xuser_start): the root half stays behind as the spawner, which
 * starts, kills and reaps the children on request over a socket pair (the
 * children it started and no other process); the other half drops to NAME
 * and executes the program again, a process of NAME from its first
 * instruction, which runs the tests.  The spawner ends as it ended.
 *
 * The rule checked (issue 56): a process shares with a peer of another
 * user the connection's rings and nothing else.  The root process of each
 * pair reads the unprivileged peer's /proc/PID/maps and its own, every
 * 10 ms and whenever it hears a line from a peer (conf_hear), and fails when
 * either maps a memfd that the other user created, other than the memfd
 * that holds a connection's rings.  Who created a memfd is its inode's
 * owner, read through /proc/PID/map_files: a name can be chosen, an owner
 * cannot, and the test needs no list of what the peer made.  Reading
 * map_files takes CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), which the
 * root end has and the peer has not.
 *
 * Between the processes of one run (set here, read here):
 * ITAPI_CONF_XUSER_SPAWNER, the socket's descriptor in the tests' half;
 * in each root child ITAPI_CONF_XUSER_PEER, the pid of the tests' half it
 * watches, ITAPI_CONF_XUSER_REPORT_FD, the program's stderr, on which it
 * says what broke the rule (its own stderr is a file its parent shows only
 * when the child fails), and ITAPI_CONF_XUSER_TEST, the test it serves.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"

extern char **environ;

/* The memfd vp/emul keeps a connection's rings in, which both processes of
 * a connection map whoever they are (doc/provider-emul.md). */
#define XUSER_RINGS_MEMFD "itapi-emul-conn"
/* How often the root end looks at the maps between the lines it hears. */
#define XUSER_WATCH_US 10000
/* The longest request the spawner takes: a child's command line and its
 * whole environment. */
#define SPAWNER_MSG_MAX (256 * 1024)

typedef enum { XUSER_OFF, XUSER_CHILD, XUSER_PARENT } xuser_mode_t;

typedef struct {
  xuser_mode_t mode;
  const char *var; /* the variable that set it */
  char *name;
  uid_t uid;
  gid_t gid;
} xuser_t;

static const xuser_t *
xuser(void)
{
  static gsize once;
  static xuser_t x;
  if (g_once_init_enter(&once)) {
    const char *child = g_getenv("ITAPI_CONF_CHILD_USER"), *parent = g_getenv("ITAPI_CONF_PARENT_USER");
    child = child != NULL && *child != '\0' ? child : NULL;
    parent = parent != NULL && *parent != '\0' ? parent : NULL;
    if (child != NULL && parent != NULL)
      g_error("ITAPI_CONF_CHILD_USER=%s and ITAPI_CONF_PARENT_USER=%s are both set: set one, the user "
              "that runs one end of each cross-process test (the other end runs as root)", child, parent);
    x.mode = child != NULL ? XUSER_CHILD : parent != NULL ? XUSER_PARENT : XUSER_OFF;
    x.var = child != NULL ? "ITAPI_CONF_CHILD_USER" : "ITAPI_CONF_PARENT_USER";
    if (x.mode != XUSER_OFF) {
      x.name = g_strdup(child != NULL ? child : parent);
      struct passwd *pw = getpwnam(x.name);
      if (pw == NULL)
        g_error("%s=%s: no such user (as root: useradd -r -M -s /usr/sbin/nologin %s)", x.var, x.name,
                x.name);
      if (pw->pw_uid == 0)
        g_error("%s=%s: that user is root; the test needs an unprivileged one", x.var, x.name);
      x.uid = pw->pw_uid;
      x.gid = pw->pw_gid;
    }
    g_once_init_leave(&once, 1);
  }
  return &x;
}

gboolean
conf_xuser_on(void)
{
  return xuser()->mode != XUSER_OFF;
}

/* Become @x's user for good: no supplementary groups, its group, and its
 * uid as the real, effective and saved one.  Raw system calls: in a child
 * of a threaded process only the forking thread exists, and glibc's
 * setuid() would wait for the others.  0, or the errno that stopped it. */
static int
xuser_drop(const xuser_t *x)
{
  if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, x->gid, x->gid, x->gid) != 0 ||
      syscall(SYS_setresuid, x->uid, x->uid, x->uid) != 0)
    return errno;
  return getuid() == x->uid && geteuid() == x->uid && getgid() == x->gid ? 0 : EPERM;
}

/* The write end of the pipe of the fork under way (fork_lock): a child
 * that cannot drop to the user writes the errno there. */
static GMutex fork_lock;
static int fork_sync = -1;

int
conf_xuser_child_drop(void)
{
  const xuser_t *x = xuser();
  if (x->mode != XUSER_CHILD)
    return 0;
  int e = xuser_drop(x);
  if (e != 0 && write(fork_sync, &e, sizeof e) != (ssize_t) sizeof e)
    dprintf(STDERR_FILENO, "%s=%s: the child (pid %d) cannot become uid %u gid %u: %s\n", x->var, x->name,
            (int) getpid(), (unsigned) x->uid, (unsigned) x->gid, strerror(e));
  return e;
}

pid_t
conf_xuser_fork(void)
{
  const xuser_t *x = xuser();
  if (x->mode != XUSER_CHILD)
    return fork();
  /* Until it executes the program, the child holds the parent's mappings
   * (its region table among them): it is watched from its exec on, which
   * closes its end of this pipe. */
  int sync[2];
  g_mutex_lock(&fork_lock);
  g_assert_cmpint(pipe2(sync, O_CLOEXEC), ==, 0);
  fork_sync = sync[1];
  pid_t pid = fork();
  if (pid == 0)
    return 0;
  close(sync[1]);
  int e = 0;
  ssize_t n;
  while ((n = read(sync[0], &e, sizeof e)) < 0 && errno == EINTR)
    ;
  close(sync[0]);
  fork_sync = -1;
  g_mutex_unlock(&fork_lock);
  if (n == (ssize_t) sizeof e)
    g_error("%s=%s: the child (pid %d) cannot become uid %u gid %u: %s", x->var, x->name, (int) pid,
            (unsigned) x->uid, (unsigned) x->gid, g_strerror(e));
  if (pid > 0)
    conf_xuser_watch(pid);
  return pid;
}

/* ---- the maps rule ---- */

static GMutex peers_lock;
static GArray *peers;          /* pid_t: the unprivileged processes watched (peers_lock) */
static GMutex check_lock;      /* one check at a time; guards recorded */
static GHashTable *recorded;   /* ITAPI_CONF_XUSER_MAPS_LOG: the mappings written already */

/* Append to @bad each memfd mapping of process @pid (0: this one) that
 * breaks the rule: in the unprivileged peer one the other user created; in
 * this root process one the unprivileged user created. */
static void
maps_scan(pid_t pid, GString *bad, unsigned *nbad)
{
  const xuser_t *x = xuser();
  g_autofree char *dir = pid != 0 ? g_strdup_printf("/proc/%d", (int) pid) : g_strdup("/proc/self");
  g_autofree char *path = g_strconcat(dir, "/maps", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return; /* it ended */
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l != NULL; l++) {
    const char *m = strstr(*l, " /memfd:");
    if (m == NULL)
      continue;
    g_autofree char *name = g_strdup(m + strlen(" /memfd:"));
    char *deleted = g_strrstr(name, " (deleted)");
    if (deleted != NULL)
      *deleted = '\0';
    if (strcmp(name, XUSER_RINGS_MEMFD) == 0)
      continue;
    g_autofree char *range = g_strndup(*l, strcspn(*l, " "));
    g_autofree char *file = g_strdup_printf("%s/map_files/%s", dir, range);
    struct stat st;
    if (stat(file, &st) != 0) {
      if (errno == EPERM || errno == EACCES)
        g_error("%s=%s: cannot tell who made the memfd of %s (%s: %s); the root end needs "
                "CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE to read /proc/PID/map_files",
                x->var, x->name, *l, file, g_strerror(errno));
      continue; /* unmapped meanwhile, or the process ended */
    }
    gboolean foreign = pid != 0 ? st.st_uid != x->uid : st.st_uid == x->uid;
    if (!foreign)
      continue;
    if (recorded != NULL) {
      g_autofree char *key = g_strdup_printf("%d %s %lu", (int) pid, range, (unsigned long) st.st_ino);
      if (g_hash_table_contains(recorded, key))
        continue;
      g_hash_table_add(recorded, g_steal_pointer(&key));
    }
    g_auto(GStrv) cols = g_strsplit_set(*l, " ", -1);
    g_autofree char *line = NULL;
    for (char **c = cols; *c != NULL; c++)
      if (**c != '\0') {
        char *was = line;
        line = line != NULL ? g_strconcat(line, " ", *c, NULL) : g_strdup(*c);
        g_free(was);
      }
    g_string_append_printf(bad, "%s%s %d (uid %u) maps a memfd of uid %u: %s", *nbad > 0 ? "; " : "",
                           pid != 0 ? "the unprivileged process" : "this root process",
                           pid != 0 ? (int) pid : (int) getpid(), pid != 0 ? (unsigned) x->uid : 0u,
                           (unsigned) st.st_uid, line);
    (*nbad)++;
  }
}

/* Where this process is, for a recorded line: the test it runs, or the
 * child it is. */
static char *
check_where(void)
{
  const char *test = g_test_get_path();
  if (test != NULL && *test != '\0')
    return g_strdup(test);
  const char *parent_test = g_getenv("ITAPI_CONF_XUSER_TEST");
  return g_strdup_printf("%s, a root child (pid %d)", parent_test != NULL ? parent_test : "no test",
                         (int) getpid());
}

void
conf_xuser_check(const char *when, gint64 gap_us)
{
  static gint64 last_end; /* (check_lock) */
  g_mutex_lock(&peers_lock);
  g_autoptr(GArray) now = peers != NULL && peers->len > 0 ? g_array_copy(peers) : NULL;
  g_mutex_unlock(&peers_lock);
  if (now == NULL)
    return;
  g_mutex_lock(&check_lock);
  if (gap_us > 0 && g_get_monotonic_time() - last_end < gap_us) {
    g_mutex_unlock(&check_lock);
    return;
  }
  const char *log = g_getenv("ITAPI_CONF_XUSER_MAPS_LOG");
  if (log != NULL && *log != '\0' && recorded == NULL)
    recorded = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GString *bad = g_string_new(NULL);
  unsigned nbad = 0;
  for (guint i = 0; i < now->len; i++)
    maps_scan(g_array_index(now, pid_t, i), bad, &nbad);
  maps_scan(0, bad, &nbad);
  if (nbad > 0 && recorded != NULL) {
    /* A record for diagnosis, not a verdict: every mapping once. */
    g_autofree char *where = check_where();
    FILE *f = fopen(log, "a");
    if (f == NULL)
      g_error("ITAPI_CONF_XUSER_MAPS_LOG=%s: %s", log, g_strerror(errno));
    fprintf(f, "%s (%s): %s\n", where, when, bad->str);
    fclose(f);
  } else if (nbad > 0) {
    const char *report = g_getenv("ITAPI_CONF_XUSER_REPORT_FD");
    if (report != NULL) {
      g_autofree char *where = check_where();
      dprintf(atoi(report), "conf: %s: ERROR: across users (%s=%s, seen %s): %s\n", where, xuser()->var,
              xuser()->name, when, bad->str);
    }
    g_error("across users (%s=%s, seen %s): %u mapping%s break%s the rule that a peer of another user "
            "shares the connection's rings (memfd %s) and nothing else: %s", xuser()->var, xuser()->name,
            when, nbad, nbad > 1 ? "s" : "", nbad > 1 ? "" : "s", XUSER_RINGS_MEMFD, bad->str);
  }
  g_string_free(bad, TRUE);
  last_end = g_get_monotonic_time();
  g_mutex_unlock(&check_lock);
}

static gpointer
watch_run(gpointer data)
{
  (void) data;
  for (;;) {
    g_usleep(XUSER_WATCH_US);
    conf_xuser_check("by the 10 ms watch", 0);
  }
  return NULL;
}

void
conf_xuser_watch(pid_t pid)
{
  static gsize started;
  g_mutex_lock(&peers_lock);
  if (peers == NULL)
    peers = g_array_new(FALSE, FALSE, sizeof(pid_t));
  g_array_append_val(peers, pid);
  g_mutex_unlock(&peers_lock);
  if (g_once_init_enter(&started)) {
    g_thread_unref(g_thread_new("xuser-watch", watch_run, NULL));
    g_once_init_leave(&started, 1);
  }
}

static void
xuser_unwatch(pid_t pid)
{
  g_mutex_lock(&peers_lock);
  for (guint i = 0; peers != NULL && i < peers->len; i++)
    if (g_array_index(peers, pid_t, i) == pid)
      g_array_remove_index_fast(peers, i--);
  g_mutex_unlock(&peers_lock);
}

/* ---- the spawner (ITAPI_CONF_PARENT_USER) ---- */

/* In the tests' process of ITAPI_CONF_PARENT_USER: the socket to the root
 * spawner (-1 otherwise), one request and its answer at a time. */
static int spawner_fd = -1;
static GMutex spawner_lock;

/* A request's fields, each ended by a NUL, in one message with @nfds
 * descriptors. */
static char *
spawner_ask(GPtrArray *fields, const int *fds, int nfds)
{
  GString *m = g_string_new(NULL);
  for (guint i = 0; i < fields->len; i++)
    g_string_append_len(m, fields->pdata[i], (gssize) strlen(fields->pdata[i]) + 1);
  struct iovec iov = { m->str, m->len };
  union {
    char buf[CMSG_SPACE(3 * sizeof(int))];
    struct cmsghdr align;
  } cm;
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  g_assert_cmpint(nfds, <=, 3);
  if (nfds > 0) {
    memset(&cm, 0, sizeof cm);
    mh.msg_control = cm.buf;
    mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  char reply[256];
  g_mutex_lock(&spawner_lock);
  ssize_t sent = sendmsg(spawner_fd, &mh, MSG_NOSIGNAL);
  int e = errno;
  ssize_t n = sent == (ssize_t) m->len ? recv(spawner_fd, reply, sizeof reply - 1, 0) : -1;
  e = sent == (ssize_t) m->len ? errno : e;
  g_mutex_unlock(&spawner_lock);
  if (n <= 0)
    g_error("ITAPI_CONF_PARENT_USER: the root spawner did not answer a request of %zu bytes (%s: %s)",
            m->len, (char *) fields->pdata[0], n == 0 ? "it closed the socket" : g_strerror(e));
  g_string_free(m, TRUE);
  reply[n] = '\0';
  return g_strdup(reply);
}

pid_t
conf_xuser_spawn(const char *const *argv, int in, int out, int err, const char *env_name,
                 const char *env_value)
{
  if (spawner_fd < 0)
    return 0;
  g_autoptr(GPtrArray) f = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(f, g_strdup("spawn"));
  for (int i = 0; argv[i] != NULL; i++)
    g_ptr_array_add(f, g_strdup(argv[i]));
  g_ptr_array_add(f, g_strdup("")); /* the end of the command line, then the environment */
  size_t name_len = env_name != NULL ? strlen(env_name) : 0;
  for (char **e = environ; *e != NULL; e++)
    if (env_name == NULL || strncmp(*e, env_name, name_len) != 0 || (*e)[name_len] != '=')
      g_ptr_array_add(f, g_strdup(*e));
  if (env_name != NULL)
    g_ptr_array_add(f, g_strdup_printf("%s=%s", env_name, env_value));
  if (g_test_get_path() != NULL)
    g_ptr_array_add(f, g_strdup_printf("ITAPI_CONF_XUSER_TEST=%s", g_test_get_path()));
  int fds[3] = { in, out, err };
  g_autofree char *r = spawner_ask(f, fds, 3);
  int pid = 0;
  if (sscanf(r, "pid %d", &pid) != 1 || pid <= 0)
    g_error("ITAPI_CONF_PARENT_USER: the root spawner did not start %s: %s", argv[0], r);
  return (pid_t) pid;
}

/* The spawner's answer to one request (@f: its @n fields, @fds: the
 * descriptors that came with it, each closed here). */
static char *
spawner_answer(char **f, int n, int *fds, int nfds, GHashTable *kids, pid_t tests)
{
  int pid = 0, sig = 0;
  if (n >= 3 && strcmp(f[0], "spawn") == 0 && nfds == 3) {
    int end = 1;
    while (end < n && f[end][0] != '\0')
      end++;
    if (end == n || end == 1)
      return g_strdup("error: a spawn request with no command line");
    f[end] = NULL; /* argv: f[1] .. f[end - 1]; the environment follows */
    char *peer = g_strdup_printf("ITAPI_CONF_XUSER_PEER=%d", (int) tests);
    GPtrArray *env = g_ptr_array_new();
    for (int i = end + 1; i < n; i++)
      g_ptr_array_add(env, f[i]);
    g_ptr_array_add(env, peer);
    g_ptr_array_add(env, NULL);
    pid_t c = fork();
    if (c == 0) {
      /* This program's stderr, which the tests' runner reads, for the
       * child's verdict on the maps (conf_xuser_check): the child's own
       * stderr is a file its parent shows only when it fails to reap it. */
      int report = dup(STDERR_FILENO);
      env->pdata[env->len - 1] = g_strdup_printf("ITAPI_CONF_XUSER_REPORT_FD=%d", report);
      g_ptr_array_add(env, NULL);
      for (int i = 0; i < 3; i++)
        dup2(fds[i], i); /* dup2 clears the close-on-exec flag the descriptors came with */
      execve(f[1], &f[1], (char **) env->pdata);
      dprintf(STDERR_FILENO, "the root spawner cannot execute %s: %s\n", f[1], strerror(errno));
      _exit(127);
    }
    int e = errno;
    g_ptr_array_free(env, TRUE);
    g_free(peer);
    if (c < 0)
      return g_strdup_printf("error: fork: %s", g_strerror(e));
    g_hash_table_add(kids, GINT_TO_POINTER(c));
    return g_strdup_printf("pid %d", (int) c);
  }
  if (n == 1 && sscanf(f[0], "kill %d %d", &pid, &sig) == 2) {
    if (!g_hash_table_contains(kids, GINT_TO_POINTER(pid)))
      return g_strdup_printf("error: pid %d is no child of the spawner", pid);
    return kill(pid, sig) == 0 ? g_strdup("ok") : g_strdup_printf("error: kill: %s", g_strerror(errno));
  }
  if (n == 1 && sscanf(f[0], "wait %d", &pid) == 1) {
    if (!g_hash_table_contains(kids, GINT_TO_POINTER(pid)))
      return g_strdup_printf("error: pid %d is no child of the spawner", pid);
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      g_hash_table_remove(kids, GINT_TO_POINTER(pid));
      return g_strdup_printf("exited %d", st);
    }
    return r == 0 ? g_strdup("running") : g_strdup_printf("error: waitpid: %s", g_strerror(errno));
  }
  return g_strdup_printf("error: no such request (%s, %d fields, %d descriptors)", f[0], n, nfds);
}

/* The spawner's life: answer the tests' process @tests on @fd until it
 * ends, then end as it did. */
static void G_GNUC_NORETURN
spawner_serve(int fd, pid_t tests)
{
  GHashTable *kids = g_hash_table_new(NULL, NULL);
  char *buf = g_malloc(SPAWNER_MSG_MAX);
  for (;;) {
    struct iovec iov = { buf, SPAWNER_MSG_MAX };
    union {
      char buf[CMSG_SPACE(3 * sizeof(int))];
      struct cmsghdr align;
    } cm;
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                         .msg_controllen = sizeof cm.buf };
    ssize_t len = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (len < 0 && errno == EINTR)
      continue;
    if (len <= 0)
      break; /* the tests' process ended */
    int fds[3] = { -1, -1, -1 }, nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        nfds = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        nfds = MIN(nfds, 3);
        memcpy(fds, CMSG_DATA(c), (size_t) nfds * sizeof(int));
      }
    g_autoptr(GPtrArray) f = g_ptr_array_new();
    for (ssize_t i = 0; i < len && buf[len - 1] == '\0'; i += (ssize_t) strlen(buf + i) + 1)
      g_ptr_array_add(f, buf + i);
    g_autofree char *r = f->len > 0 ? spawner_answer((char **) f->pdata, (int) f->len, fds, nfds, kids, tests)
                                    : g_strdup("error: an empty request");
    for (int i = 0; i < nfds; i++)
      close(fds[i]);
    if (send(fd, r, strlen(r), MSG_NOSIGNAL) < 0)
      break;
  }
  int st = 0;
  while (waitpid(tests, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFSIGNALED(st)) {
    signal(WTERMSIG(st), SIG_DFL);
    raise(WTERMSIG(st));
  }
  _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

void
conf_xuser_start(char **argv)
{
  const char *fd = g_getenv("ITAPI_CONF_XUSER_SPAWNER");
  const char *peer = g_getenv("ITAPI_CONF_XUSER_PEER");
  const xuser_t *x = xuser();
  if (fd != NULL) {
    /* The tests' half, executed again by the spawner's fork. */
    spawner_fd = atoi(fd);
    fcntl(spawner_fd, F_SETFD, FD_CLOEXEC);
    g_unsetenv("ITAPI_CONF_XUSER_SPAWNER");
    if (x->mode != XUSER_PARENT || getuid() != x->uid || geteuid() != x->uid)
      g_error("ITAPI_CONF_XUSER_SPAWNER is set, but this process runs as uid %u, not as "
              "ITAPI_CONF_PARENT_USER's user", (unsigned) getuid());
    return;
  }
  if (peer != NULL) {
    /* A root child of the unprivileged tests' process: watch it. */
    if (x->mode != XUSER_PARENT || getuid() != 0)
      g_error("ITAPI_CONF_XUSER_PEER=%s: this child runs as uid %u, not as root under "
              "ITAPI_CONF_PARENT_USER", peer, (unsigned) getuid());
    conf_xuser_watch((pid_t) atoi(peer));
    return;
  }
  if (x->mode != XUSER_PARENT)
    return;
  if (getuid() != 0 || geteuid() != 0)
    g_error("ITAPI_CONF_PARENT_USER=%s: the program must start as root (its children run as root), not "
            "as uid %u", x->name, (unsigned) geteuid());
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  int sv[2];
  if (exe == NULL || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0)
    g_error("ITAPI_CONF_PARENT_USER: no socket pair for the spawner: %s", g_strerror(errno));
  fcntl(sv[0], F_SETFD, FD_CLOEXEC);
  pid_t spawner = getpid();
  fflush(NULL);
  pid_t tests = fork();
  if (tests < 0)
    g_error("ITAPI_CONF_PARENT_USER: fork: %s", g_strerror(errno));
  if (tests > 0) {
    close(sv[1]);
    spawner_serve(sv[0], tests);
  }
  close(sv[0]);
  int e = xuser_drop(x);
  if (e != 0)
    g_error("ITAPI_CONF_PARENT_USER=%s: cannot become uid %u gid %u: %s", x->name, (unsigned) x->uid,
            (unsigned) x->gid, g_strerror(e));
  /* The spawner's death ends this process (a new uid cleared the signal). */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != spawner)
    _exit(1);
  g_autofree char *fdnum = g_strdup_printf("%d", sv[1]);
  g_setenv("ITAPI_CONF_XUSER_SPAWNER", fdnum, TRUE);
  execv(exe, argv);
  g_error("ITAPI_CONF_PARENT_USER=%s: cannot execute %s as uid %u: %s (can that user reach it?)", x->name,
          exe, (unsigned) x->uid, g_strerror(errno));
}

/* ---- waiting for and killing a child ---- */

gboolean
conf_child_wait(const conf_child_t *c, gboolean block, int *status)
{
  for (;;) {
    int st = 0;
    pid_t r;
    if (spawner_fd >= 0) {
      g_autoptr(GPtrArray) f = g_ptr_array_new_with_free_func(g_free);
      g_ptr_array_add(f, g_strdup_printf("wait %d", (int) c->pid));
      g_autofree char *a = spawner_ask(f, NULL, 0);
      if (sscanf(a, "exited %d", &st) == 1)
        r = c->pid;
      else if (strcmp(a, "running") == 0)
        r = 0;
      else
        g_error("ITAPI_CONF_PARENT_USER: the root spawner cannot wait for child %d: %s", (int) c->pid, a);
    } else {
      r = waitpid(c->pid, &st, block ? 0 : WNOHANG);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        g_error("waitpid of child %d: %s", (int) c->pid, g_strerror(errno));
    }
    if (r == c->pid) {
      xuser_unwatch(c->pid);
      *status = st;
      return TRUE;
    }
    if (!block)
      return FALSE;
    g_usleep(10000);
  }
}

void
conf_child_kill(pid_t pid, int sig)
{
  if (spawner_fd < 0) {
    kill(pid, sig);
    return;
  }
  g_autoptr(GPtrArray) f = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(f, g_strdup_printf("kill %d %d", (int) pid, sig));
  g_autofree char *a = spawner_ask(f, NULL, 0);
  if (strcmp(a, "ok") != 0)
    g_error("ITAPI_CONF_PARENT_USER: the root spawner did not send signal %d to child %d: %s", sig,
            (int) pid, a);
}

