// peak_rss: runs a command and writes its peak resident set size, as the kernel reports it
// to wait4 (ru_maxrss, KiB), into a file. bench/run.py builds it into BUILD/bench/ and
// starts every measured process through it.
//
//   peak_rss OUT_FILE COMMAND [ARGS...]
//
// Why a separate program: Linux carries a process's RSS high-water mark across fork and
// execve, so a command started directly by Python (tens of MiB with numpy loaded) would
// report at least Python's size. Started from this small process, the figure is the
// command's own peak plus this program's few hundred KiB at most. The command's stdin,
// stdout and stderr are this program's; its exit status is passed on (128 + N when it is
// killed by signal N, as shells report it).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peak_rss OUT_FILE COMMAND [ARGS...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "peak_rss: fork failed: %s\n", std::strerror(errno));
    return 2;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    std::fprintf(stderr, "peak_rss: cannot run %s: %s\n", argv[2], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "peak_rss: wait4 failed: %s\n", std::strerror(errno));
      return 2;
    }
  }
  if (FILE* f = std::fopen(argv[1], "w")) {
    std::fprintf(f, "%ld\n", usage.ru_maxrss);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "peak_rss: cannot write %s: %s\n", argv[1], std::strerror(errno));
    return 2;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2;
}
