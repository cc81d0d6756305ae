// The artifact writer is target-independent.
#include "targets/Target.h"
#include "targets/cpu/GroupCodegen.h"
