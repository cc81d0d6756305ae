// fm-run --adapter FILE[:scale]: the LoRA adapters a session runs with, for --tokens and the
// text modes alike.
#pragma once

#include "fm/adapter.h"
#include "fm/runtime.h"
#include "fm/status.h"

#include <memory>
#include <string>
#include <vector>

namespace fmrun {

/// Loads every "FILE[:scale]" of --adapter for `model` (the scale after the last ':' when it is
/// a number; a path that itself holds a ':' and exists is taken whole). The leader says on
/// stderr what each adapter holds. Errors name the value or the file.
fm::Expected<std::vector<fm::AdapterUse>> loadAdapters(const std::shared_ptr<fm::Model> &model,
                                                       const std::vector<std::string> &values,
                                                       bool leader);

} // namespace fmrun
