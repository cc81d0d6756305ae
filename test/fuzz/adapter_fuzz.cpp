// libFuzzer target: the .fmba loader and the binding of an adapter to a
// model must accept or reject any bytes without crashing, and an adapter
// they accept must run in sessions (attached, stacked, switched, detached)
// without touching memory outside what they verified (ASan watches).
//
// Built by test/fuzz/CMakeLists.txt against instrumented variants of the
// runtime's libraries, run in ctest as fuzz.fmba. The base is LoraBase
// (test/unit/runtime/AdapterBuilder.h), the model the seeds were written
// for: build/bin/fm-test-artifacts fmba-corpus test/fuzz/corpus/fmba
#include "AdapterBuilder.h"

#include "fm/adapter.h"
#include "fm/runtime.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

std::shared_ptr<fm::Model> base() {
  static std::shared_ptr<fm::Model> model = [] {
    const std::vector<uint8_t> file = fm::test::LoraBase().build();
    fm::LoadOptions o;
    o.loadExecutable = false;
    auto m = fm::Model::loadFromBuffer(file.data(), file.size(), "base.fmb", o);
    return m ? *m : nullptr;
  }();
  return model;
}

void exercise(const std::shared_ptr<fm::Model> &model,
              const std::shared_ptr<fm::Adapter> &adapter, int threads) {
  fm::SessionOptions o;
  o.threads = threads;
  o.adapters = {{adapter, 1.0f}};
  fm::Session s(model, o);
  if (!s.status())
    return;
  const std::vector<int32_t> tokens = {1, 7, 3, 19, 0};
  (void)s.prefill(tokens, /*allLogits=*/true, 0);
  (void)s.decode(2);
  (void)s.setAdapters({{adapter, 0.5f}, {adapter, -1.0f}});
  (void)s.reset();
  (void)s.prefill(tokens, false, 1);
  (void)s.setAdapters({});
  (void)s.decode(4);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::shared_ptr<fm::Model> model = base();
  if (!model)
    __builtin_trap(); // the base must load
  fm::AdapterFile::Options options;
  // Mutated bytes would all stop at the digest: skip it to reach the checks
  // behind it (the digest itself is tested in fm_adapter_test).
  options.checkDigest = false;
  auto adapter =
      fm::Adapter::loadFromBuffer(model, data, size, "fuzz.fmba", options);
  if (!adapter)
    return 0;
  exercise(model, *adapter, 1);
  exercise(model, *adapter, 2);
  return 0;
}
