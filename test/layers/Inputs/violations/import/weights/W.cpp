// The weights I/O is below the dialects.
#include "dialects/fm/IR/FmOps.h"
