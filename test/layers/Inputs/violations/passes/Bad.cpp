// passes may not reach up to the target interface.
#include "dialects/fm/IR/FmOps.h"
#include "targets/Target.h"
