// In-memory loading of generated CPU code: memfd + dlopen + dlsym.
#include "hal/cpu/CpuExecutable.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace fm::hal {

namespace {

#if defined(__linux__)

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__riscv)
constexpr uint16_t kHostMachine = EM_RISCV;
#elif defined(__i386__)
constexpr uint16_t kHostMachine = EM_386;
#elif defined(__arm__)
constexpr uint16_t kHostMachine = EM_ARM;
#else
constexpr uint16_t kHostMachine = 0; // Unknown: let dlopen decide.
#endif

std::string machineName(uint16_t machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86_64";
  case EM_AARCH64:
    return "aarch64";
  case EM_RISCV:
    return "riscv";
  case EM_386:
    return "i386";
  case EM_ARM:
    return "arm";
  }
  return "ELF machine " + std::to_string(machine);
}

using Ehdr = std::conditional_t<sizeof(void *) == 8, Elf64_Ehdr, Elf32_Ehdr>;

// Why an ELF image cannot be dlopen'ed here, or empty.
std::string elfProblem(const uint8_t *image, size_t size) {
  if (size < sizeof(Ehdr) || std::memcmp(image, ELFMAG, SELFMAG) != 0)
    return "the image is not an ELF file";
  constexpr unsigned char hostClass =
      sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
  if (image[EI_CLASS] != hostClass)
    return std::string("the image is ") +
           (image[EI_CLASS] == ELFCLASS64 ? "64" : "32") +
           "-bit, this machine runs " + (hostClass == ELFCLASS64 ? "64" : "32") +
           "-bit code";
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr unsigned char hostData = ELFDATA2LSB;
#else
  constexpr unsigned char hostData = ELFDATA2MSB;
#endif
  if (image[EI_DATA] != hostData)
    return "the image has the other byte order";
  Ehdr header;
  std::memcpy(&header, image, sizeof(header));
  if (kHostMachine != 0 && header.e_machine != kHostMachine)
    return "the image is " + machineName(header.e_machine) +
           " code, this machine is " + machineName(kHostMachine);
  if (header.e_type != ET_DYN)
    return "the image is not a shared object (ELF type " +
           std::to_string(header.e_type) + ")";
  return {};
}

bool writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// A file descriptor holding `image`, and the path to dlopen it by.
Status writeImage(const uint8_t *image, size_t size, const std::string &prefix,
                  int *fdOut, std::string *pathOut) {
  int fd = memfd_create("fm-executable", MFD_CLOEXEC);
  if (fd >= 0) {
    if (!writeAll(fd, image, size)) {
      int err = errno;
      ::close(fd);
      return Status::error(prefix + "cannot write the image to a memfd: " +
                           std::strerror(err));
    }
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (::access(path.c_str(), R_OK) == 0) {
      *fdOut = fd;
      *pathOut = path;
      return Status::ok();
    }
    ::close(fd); // No /proc: fall back to a file.
  }
  // A temporary file, removed when the executable is unloaded.
  const char *dir = std::getenv("TMPDIR");
  std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/fm-exe-XXXXXX";
  fd = mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0)
    return Status::error(prefix + "cannot create a file for the image (" +
                         tmpl + "): " + std::strerror(errno));
  if (!writeAll(fd, image, size)) {
    int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    return Status::error(prefix + "cannot write the image to " + tmpl + ": " +
                         std::strerror(err));
  }
  *fdOut = fd;
  *pathOut = tmpl;
  return Status::ok();
}

#endif // __linux__

} // namespace

Expected<std::unique_ptr<CpuExecutable>>
CpuExecutable::load(const fm::artifact::Executable &exe,
                    const std::string &artifactName) {
  const std::string triple = exe.triple() ? exe.triple()->str() : "";
  const std::string format = exe.format()->str();
  const std::string cannotRun =
      artifactName + ": executable for " + triple + " cannot run on this machine";
  if (format != "elf-so")
    return Status::error(cannotRun + " (format '" + format +
                         "'; this runtime loads 'elf-so')");
#if defined(__linux__)
  const uint8_t *image = exe.data()->data();
  const size_t size = exe.data()->size();
  if (std::string problem = elfProblem(image, size); !problem.empty())
    return Status::error(cannotRun + ": " + problem);

  std::unique_ptr<CpuExecutable> result(new CpuExecutable());
  std::string path;
  FM_RETURN_IF_ERROR(
      writeImage(image, size, artifactName + ": executable: ", &result->fd_, &path));
  dlerror();
  result->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (path.rfind("/proc/", 0) != 0)
    result->tempPath_ = path; // Unlinked after dlclose (see the header).
  if (!result->handle_) {
    const char *why = dlerror();
    return Status::error(artifactName + ": executable for " + triple +
                         " cannot be loaded: " + (why ? why : "dlopen failed"));
  }
  const auto *names = exe.functions();
  result->functions_.reserve(names->size());
  for (flatbuffers::uoffset_t i = 0; i < names->size(); ++i) {
    dlerror();
    const std::string name = names->Get(i)->name()->str();
    void *symbol = dlsym(result->handle_, name.c_str());
    if (!symbol)
      return Status::error(artifactName + ": executable: function " +
                           std::to_string(i) + " '" + name +
                           "' is not in the image");
    result->functions_.push_back(reinterpret_cast<Function>(symbol));
  }
  return result;
#else
  return Status::error(cannotRun + " (loading generated code needs Linux)");
#endif
}

CpuExecutable::~CpuExecutable() {
#if defined(__linux__)
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
  if (!tempPath_.empty())
    ::unlink(tempPath_.c_str());
#endif
}

} // namespace fm::hal
