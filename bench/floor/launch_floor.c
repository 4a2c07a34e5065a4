// The floor of a container-aware launch (issue 25): only the work no picker can skip. Both
// nvidia-smi queries run at once; beside them the engine is asked which containers exist and what
// each holds, over its socket (the list, then every inspect at once, one connection each) or
// through its CLI (`docker ps`, then one `docker inspect`); every answer is read whole; then the
// docker argv after `--` is exec'ed. No parsing beyond finding the containers' ids, no choice.
//
//   launch_floor SMI [--socket PATH | --cli DOCKER | --none | --safe LOCKDIR] -- ARGV...
//
// --safe is no engine with the work a picker shared by many users cannot skip either, as a
// reference for the launch without an engine (docs/performance.md): it reads the site's system
// file, takes the selection lock in LOCKDIR before the queries, looks the caller up (passwd),
// holds a reservation across the exec and sends an audit line to syslog.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

enum { kMaxContainers = 256, kIdLength = 64 };

static void die(const char* what) {
  perror(what);
  exit(125);
}

// Appends all of `fd` to `*buffer` (grown as needed); returns its length.
static size_t read_all(int fd, char** buffer, size_t length) {
  size_t capacity = length + 65536;
  *buffer = realloc(*buffer, capacity);
  for (;;) {
    if (capacity - length < 4096) *buffer = realloc(*buffer, capacity *= 2);
    const ssize_t n = read(fd, *buffer + length, capacity - length - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    length += (size_t)n;
  }
  (*buffer)[length] = '\0';
  return length;
}

// Starts argv with its stdout on a pipe; returns the pipe's read end.
static int spawn_reading(char* const argv[], pid_t* pid) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) die("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  if (posix_spawn(pid, argv[0], &actions, NULL, argv, environ) != 0) die(argv[0]);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  return out[0];
}

static int connect_to(const char* path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  strncpy(address.sun_path, path, sizeof address.sun_path - 1);
  if (fd < 0 || connect(fd, (struct sockaddr*)&address, sizeof address) != 0) die(path);
  return fd;
}

static void send_get(int fd, const char* target) {
  char request[512];
  const int n =
      snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n", target);
  if (write(fd, request, (size_t)n) != n) die("write");
}

// The ids in a container list (`"Id":"…"` in the API's JSON, one a line from `docker ps -q`).
static int ids_of(const char* text, int json, char ids[][kIdLength + 1]) {
  int count = 0;
  for (const char* p = text; count < kMaxContainers;) {
    if (json) {
      p = strstr(p, "\"Id\":\"");
      if (p == NULL) break;
      p += 6;
    } else {
      while (*p == '\n') ++p;
      if (*p == '\0') break;
    }
    const size_t n = strcspn(p, json ? "\"" : "\n");
    if (n == 0 || n > kIdLength) break;
    memcpy(ids[count], p, n);
    ids[count++][n] = '\0';
    p += n;
  }
  return count;
}

static void ask_socket(const char* socket_path) {
  char* list = NULL;
  const int fd = connect_to(socket_path);
  send_get(fd, "/containers/json");
  read_all(fd, &list, 0);
  close(fd);
  static char ids[kMaxContainers][kIdLength + 1];
  const int count = ids_of(list, 1, ids);
  struct pollfd fds[kMaxContainers];
  char* answers[kMaxContainers] = {0};
  size_t lengths[kMaxContainers] = {0};
  for (int i = 0; i < count; ++i) {
    char target[128];
    snprintf(target, sizeof target, "/containers/%.64s/json", ids[i]);
    fds[i].fd = connect_to(socket_path);
    fds[i].events = POLLIN;
    send_get(fds[i].fd, target);
    answers[i] = malloc(65536);
  }
  for (int open = count; open > 0;) {
    if (poll(fds, (nfds_t)count, 10000) <= 0) die("poll");
    for (int i = 0; i < count; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char chunk[65536];
      const ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
      if (n > 0) {
        answers[i] = realloc(answers[i], lengths[i] + (size_t)n + 1);
        memcpy(answers[i] + lengths[i], chunk, (size_t)n);
        lengths[i] += (size_t)n;
        continue;
      }
      close(fds[i].fd);
      fds[i].fd = -1;
      --open;
    }
  }
}

static void ask_cli(char* docker) {
  char* ps_argv[] = {docker, "ps", "--quiet", "--no-trunc", NULL};
  pid_t pid;
  char* list = NULL;
  int fd = spawn_reading(ps_argv, &pid);
  read_all(fd, &list, 0);
  close(fd);
  waitpid(pid, NULL, 0);
  static char ids[kMaxContainers][kIdLength + 1];
  const int count = ids_of(list, 0, ids);
  if (count == 0) return;
  char* inspect_argv[kMaxContainers + 3] = {docker, "inspect"};
  for (int i = 0; i < count; ++i) inspect_argv[2 + i] = ids[i];
  char* answer = NULL;
  fd = spawn_reading(inspect_argv, &pid);
  read_all(fd, &answer, 0);
  close(fd);
  waitpid(pid, NULL, 0);
}

// A lock file in `dir`, locked exclusively; close-on-exec unless it is to be kept across the exec.
static int lock_file(const char* dir, const char* name, int keep) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const int fd = open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | (keep ? 0 : O_CLOEXEC), 0640);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) die(path);
  return fd;
}

// The site's system file, whole, where there is one.
static void read_system_file(void) {
  const int fd = open("/etc/gpurun/config.json", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char* text = NULL;
  read_all(fd, &text, 0);
  free(text);
  close(fd);
}

// One line to syslog's socket, as the audit line goes (no answer waited for).
static void audit_line(const char* user) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  strncpy(address.sun_path, "/dev/log", sizeof address.sun_path - 1);
  char line[512];
  const int n = snprintf(line, sizeof line, "<13>gpurun: launch user=%s gpus=0", user);
  if (fd >= 0 && connect(fd, (struct sockaddr*)&address, sizeof address) == 0) (void)!send(fd, line, (size_t)n, 0);
  if (fd >= 0) close(fd);
}

int main(int argc, char** argv) {
  const int with_operand = argc > 2 && strcmp(argv[2], "--none") != 0;  // a mode with a path after it
  const int dashes = with_operand ? 4 : 3;                              // where `--` must be
  if (argc <= dashes + 1 || strcmp(argv[dashes], "--") != 0 ||
      (with_operand && strcmp(argv[2], "--socket") != 0 && strcmp(argv[2], "--cli") != 0 &&
       strcmp(argv[2], "--safe") != 0)) {
    fprintf(stderr, "usage: launch_floor SMI [--socket PATH | --cli DOCKER | --none | --safe LOCKDIR] -- ARGV...\n");
    return 2;
  }
  char** run_argv = argv + dashes + 1;
  char* gpu_argv[] = {argv[1], "--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu,mig.mode.current",
                      "--format=csv,noheader,nounits", NULL};
  char* apps_argv[] = {argv[1], "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits", NULL};
  const char* lock_dir = with_operand && strcmp(argv[2], "--safe") == 0 ? argv[3] : NULL;
  int selection = -1;
  if (lock_dir != NULL) {
    read_system_file();
    selection = lock_file(lock_dir, "select.lock", 0);
  }
  pid_t gpu_pid, apps_pid;
  const int gpu_fd = spawn_reading(gpu_argv, &gpu_pid);
  const int apps_fd = spawn_reading(apps_argv, &apps_pid);
  if (with_operand && strcmp(argv[2], "--socket") == 0) ask_socket(argv[3]);
  if (with_operand && strcmp(argv[2], "--cli") == 0) ask_cli(argv[3]);
  char* gpus = NULL;
  char* apps = NULL;
  read_all(gpu_fd, &gpus, 0);
  read_all(apps_fd, &apps, 0);
  waitpid(gpu_pid, NULL, 0);
  waitpid(apps_pid, NULL, 0);
  if (gpus[0] == '\0') return 125;  // no GPU: nothing to pick
  if (lock_dir != NULL) {
    const struct passwd* caller = getpwuid(getuid());
    lock_file(lock_dir, "gpu-0.lock", 1);  // held by docker while the job runs
    close(selection);
    audit_line(caller != NULL ? caller->pw_name : "?");
  }
  execv(run_argv[0], run_argv);
  die(run_argv[0]);
}
