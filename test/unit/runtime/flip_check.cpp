// fm_flip_check: the loader with its program digest skipped (as the fuzzers
// run it), on copies of an artifact with one byte changed, so that the
// checks behind the digest meet every corruption: the FlatBuffer verifier,
// the command checks, the ELF check and (for an image the check accepts)
// dlopen and dlsym of every function, never calling one. Each offset runs in
// a child process; a signal or an unexpected exit fails it.
//
//   fm_flip_check ARTIFACT OFFSET:XOR...
//
// Prints one line per offset (offset, result: "error", "loaded" or
// "executable-loaded", and the first error) and a summary; exits 1 when any
// offset crashed.
#include "fm/artifact.h"
#include "hal/cpu/CpuExecutable.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

// 0: error, 1: loaded (no executable), 2: executable loaded.
int check(const std::vector<uint8_t> &file, std::string *error) {
  fm::ArtifactFile::Options o;
  o.checkProgramDigest = false;
  auto a = fm::ArtifactFile::fromBuffer(file.data(), file.size(), "flipped.fmb", o);
  if (!a) {
    *error = a.message();
    return 0;
  }
  const fm::artifact::Executable *exe = (*a)->executable("cpu");
  if (!exe)
    return 1;
  auto loaded = fm::hal::CpuExecutable::load(*exe, "flipped.fmb");
  if (!loaded) {
    *error = loaded.message();
    return 0;
  }
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fm_flip_check ARTIFACT OFFSET:XOR...\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<uint8_t> original((std::istreambuf_iterator<char>(in)),
                                      std::istreambuf_iterator<char>());
  if (original.empty()) {
    std::fprintf(stderr, "fm_flip_check: cannot read %s\n", argv[1]);
    return 2;
  }
  int counts[3] = {0, 0, 0}, crashes = 0;
  for (int i = 2; i < argc; ++i) {
    unsigned long long offset = 0;
    unsigned x = 0;
    if (std::sscanf(argv[i], "%llu:%u", &offset, &x) != 2 ||
        offset >= original.size() || x == 0 || x > 255) {
      std::fprintf(stderr, "fm_flip_check: bad offset '%s'\n", argv[i]);
      return 2;
    }
    int pipefd[2];
    if (pipe(pipefd) != 0)
      return 2;
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      std::vector<uint8_t> file = original;
      file[offset] ^= static_cast<uint8_t>(x);
      std::string error;
      const int result = check(file, &error);
      error = error.substr(0, 200);
      (void)!write(pipefd[1], error.data(), error.size());
      _exit(10 + result);
    }
    close(pipefd[1]);
    char buffer[256];
    ssize_t n = read(pipefd[0], buffer, sizeof(buffer) - 1);
    close(pipefd[0]);
    buffer[n > 0 ? n : 0] = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    const char *names[3] = {"error", "loaded", "executable-loaded"};
    if (WIFEXITED(status) && WEXITSTATUS(status) >= 10 && WEXITSTATUS(status) <= 12) {
      const int r = WEXITSTATUS(status) - 10;
      ++counts[r];
      std::printf("%llu %s %s\n", offset, names[r], buffer);
    } else {
      ++crashes;
      std::printf("%llu CRASH %s %d\n", offset,
                  WIFSIGNALED(status) ? "signal" : "exit",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
  }
  std::printf("fm_flip_check: %d errors, %d loaded, %d with the executable "
              "loaded, %d crashes\n",
              counts[0], counts[1], counts[2], crashes);
  return crashes ? 1 : 0;
}
