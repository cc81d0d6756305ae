// fmc's option checks (OptionChecks.h).
#include "OptionChecks.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdlib>

namespace fm::cli {

std::optional<int64_t> trainedContext(llvm::StringRef modelDir) {
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, "config.json");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return std::nullopt; // the import says why
  auto config = llvm::json::parse((*buffer)->getBuffer());
  if (!config) {
    llvm::consumeError(config.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *top = config->getAsObject();
  if (!top)
    return std::nullopt;
  for (const llvm::json::Object *o : {top, top->getObject("text_config")})
    if (o)
      if (std::optional<int64_t> n = o->getInteger("max_position_embeddings"))
        if (*n > 0)
          return n;
  return std::nullopt;
}

llvm::Expected<int64_t> importContext(llvm::StringRef modelDir, int64_t context,
                                      bool given) {
  std::optional<int64_t> trained = trainedContext(modelDir);
  if (!trained || context <= *trained)
    return context;
  if (given)
    return llvm::createStringError(llvm::formatv(
        "--context {0}: must be <= {1}, the max_position_embeddings of {2} "
        "(fmc's RoPE is unscaled: later positions were never trained)",
        context, *trained, modelDir));
  llvm::WithColor::note(llvm::errs(), "fmc")
      << llvm::formatv("--context {0}: the max_position_embeddings of {1} "
                       "(the default, {2}, is past it)\n",
                       *trained, modelDir, context);
  return *trained;
}

} // namespace fm::cli
