// Tools use the public runtime headers only.
#include "fm/runtime.h"
#include "src/Executor.h"
