// The runtime has no MLIR inside.
#include <mlir/IR/Builders.h>
#include "base/ThreadPool.h"
