// Runs the CUDA toolkit's ptxas -v on the PTX fmc emits and reads its
// report: errors fail the compile, register spills become fmc warnings.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace fm::nvvm {

/// What ptxas -v said about one kernel.
struct PtxasKernel {
  std::string name;
  int registers = 0;
  int spillStores = 0, spillLoads = 0; // bytes
  int stackBytes = 0;
};

/// ptxas -v's report on stderr, per kernel ("Function properties for X",
/// its spill line, "Used N registers").
std::vector<PtxasKernel> parsePtxasReport(llvm::StringRef report);

/// `ptxas -arch=<arch> -v` on `ptx`: the report per kernel, or an error
/// with ptxas's messages.
llvm::Expected<std::vector<PtxasKernel>> runPtxas(const std::string &ptxas,
                                                  const std::string &arch,
                                                  llvm::StringRef ptx);

} // namespace fm::nvvm
