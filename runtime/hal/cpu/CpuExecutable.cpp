// In-memory loading of generated CPU code: memfd + dlopen + dlsym.
#include "hal/cpu/CpuExecutable.h"

#include "hal/cpu/ElfImage.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(__linux__)
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace fm::hal {

namespace {

#if defined(__linux__)

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
  int fd = memfd_create("fm-executable", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd >= 0) {
    if (!writeAll(fd, image, size)) {
      int err = errno;
      ::close(fd);
      return Status::error(prefix + "cannot write the image to a memfd: " +
                           std::strerror(err));
    }
    // The checked bytes are what dlopen maps: nobody (another process that
    // opens /proc/PID/fd/N included) may change them from here on.
    (void)fcntl(fd, F_ADD_SEALS,
                F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
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
  if (format != "elf-so")
    return Status::error(artifactName + ": executable for " + triple +
                         " cannot run on this machine (format '" + format +
                         "'; this runtime loads 'elf-so')");
  // Checked and loaded from one private copy: the artifact's bytes may be
  // a mapping of a file that changes under us.
  std::vector<uint8_t> image(exe.data()->begin(), exe.data()->end());
  std::vector<std::string> functions;
  for (const auto *f : *exe.functions())
    functions.push_back(f->name()->str());
  return loadImage(image, functions,
                   artifactName + ": executable for " + triple);
}

Expected<std::unique_ptr<CpuExecutable>>
CpuExecutable::loadImage(const std::vector<uint8_t> &image,
                         const std::vector<std::string> &functions,
                         const std::string &what) {
#if defined(__linux__)
  if (std::string problem = elfMachineProblem(image.data(), image.size());
      !problem.empty())
    return Status::error(what + " cannot run on this machine: " + problem);
  if (std::string problem =
          elfImageProblem(image.data(), image.size(), functions);
      !problem.empty())
    return Status::error(what + " is corrupt: " + problem);

  std::unique_ptr<CpuExecutable> result(new CpuExecutable());
  std::string path;
  FM_RETURN_IF_ERROR(writeImage(image.data(), image.size(), what + ": ",
                                &result->fd_, &path));
  dlerror();
  result->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (path.rfind("/proc/", 0) != 0)
    result->tempPath_ = path; // Unlinked after dlclose (see the header).
  if (!result->handle_) {
    const char *why = dlerror();
    return Status::error(what + " cannot be loaded: " +
                         (why ? why : "dlopen failed"));
  }
  result->functions_.reserve(functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    dlerror();
    void *symbol = dlsym(result->handle_, functions[i].c_str());
    if (!symbol)
      return Status::error(what + ": function " + std::to_string(i) + " '" +
                           functions[i] + "' is not in the image");
    result->functions_.push_back(reinterpret_cast<Function>(symbol));
  }
  return result;
#else
  (void)image;
  (void)functions;
  return Status::error(what + " cannot run on this machine (loading "
                              "generated code needs Linux)");
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
