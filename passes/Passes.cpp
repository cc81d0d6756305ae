// Registration of the fm passes and pipelines.
#include "passes/Passes.h"

namespace mlir::fm {

void registerFmPassesAndPipelines() { registerFmPasses(); }

} // namespace mlir::fm
