// Ptxas.h: ptxas -v on a temporary PTX file, its stderr parsed.
#include "targets/cuda/Ptxas.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace fm::nvvm {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The integer before `unit` in `line` ("24 bytes spill stores" → 24).
int numberBefore(llvm::StringRef line, llvm::StringRef unit) {
  size_t at = line.find(unit);
  if (at == llvm::StringRef::npos)
    return 0;
  llvm::StringRef head = line.substr(0, at).rtrim();
  size_t start = head.find_last_not_of("0123456789");
  llvm::StringRef digits = start == llvm::StringRef::npos ? head : head.substr(start + 1);
  int v = 0;
  return digits.getAsInteger(10, v) ? 0 : v;
}

} // namespace

std::vector<PtxasKernel> parsePtxasReport(llvm::StringRef report) {
  std::vector<PtxasKernel> kernels;
  llvm::SmallVector<llvm::StringRef> lines;
  report.split(lines, '\n');
  PtxasKernel *current = nullptr;
  for (llvm::StringRef line : lines) {
    constexpr llvm::StringLiteral kProps = "Function properties for ";
    if (size_t at = line.find(kProps); at != llvm::StringRef::npos) {
      kernels.push_back({line.substr(at + kProps.size()).trim().str()});
      current = &kernels.back();
      continue;
    }
    if (!current)
      continue;
    if (line.contains("spill stores")) {
      current->stackBytes = numberBefore(line, "bytes stack frame");
      current->spillStores = numberBefore(line, "bytes spill stores");
      current->spillLoads = numberBefore(line, "bytes spill loads");
    } else if (line.contains("Used ") && line.contains(" registers")) {
      current->registers = numberBefore(line, " registers");
    }
  }
  return kernels;
}

llvm::Expected<std::vector<PtxasKernel>> runPtxas(const std::string &ptxas,
                                                  const std::string &arch,
                                                  llvm::StringRef ptx) {
  llvm::SmallString<128> in, out, log;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fmc-cuda", "ptx", in))
    return error("cannot create a temporary file for ptxas: " + ec.message());
  llvm::FileRemover removeIn(in);
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fmc-cuda", "cubin", out))
    return error("cannot create a temporary file for ptxas: " + ec.message());
  llvm::FileRemover removeOut(out);
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fmc-cuda", "log", log))
    return error("cannot create a temporary file for ptxas: " + ec.message());
  llvm::FileRemover removeLog(log);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return error("cannot write " + in + ": " + ec.message());
    os << ptx;
  }
  std::string archFlag = "-arch=" + arch;
  llvm::SmallVector<llvm::StringRef> args = {ptxas, archFlag, "-v", "-o", out, in};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &message);
  auto text = llvm::MemoryBuffer::getFile(log);
  std::string report = text ? (*text)->getBuffer().str() : std::string();
  if (rc != 0)
    return error(ptxas + " -arch=" + arch + " failed" +
                 (message.empty() ? "" : " (" + message + ")") +
                 (report.empty() ? "" : ":\n" + report));
  return parsePtxasReport(report);
}

} // namespace fm::nvvm
