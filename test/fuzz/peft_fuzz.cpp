// libFuzzer target: reading a PEFT adapter (import/weights/PeftAdapter.h)
// must accept or reject any adapter_config.json, and any safetensors file
// after a NUL byte in the input, without crashing or hanging (the module
// patterns are regexes: their size and PCRE2's match limits bound the
// work). Without a NUL, the tensors are a fixed adapter on layer 0's q_proj
// and v_proj of a two-layer llama-shaped base. Run in ctest as fuzz.peft.
#include "import/weights/PeftAdapter.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

fm::import::AdapterBase makeBase() {
  fm::import::AdapterBase b;
  b.family = "llama";
  b.name = "base.fmb";
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.projections.push_back({p + "self_attn.q_proj.weight", 8, 8});
    b.projections.push_back({p + "self_attn.k_proj.weight", 4, 8});
    b.projections.push_back({p + "self_attn.v_proj.weight", 4, 8});
    b.projections.push_back({p + "self_attn.o_proj.weight", 8, 8});
    b.projections.push_back({p + "mlp.gate_proj.weight", 16, 8});
    b.projections.push_back({p + "mlp.up_proj.weight", 16, 8});
    b.projections.push_back({p + "mlp.down_proj.weight", 8, 16});
  }
  return b;
}

// A safetensors file: rank-2 lora_A/lora_B of layer 0's q_proj and v_proj.
std::string makeTensors() {
  struct T {
    const char *name;
    int rows, cols;
  };
  const T ts[] = {
      {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", 2, 8},
      {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", 8, 2},
      {"base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight", 2, 8},
      {"base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight", 4, 2}};
  std::string header = "{", body;
  for (const T &t : ts) {
    const size_t begin = body.size(), n = size_t(t.rows) * t.cols;
    for (size_t i = 0; i < n; ++i) {
      const float v = 0.01f * float(i + 1);
      body.append(reinterpret_cast<const char *>(&v), 4);
    }
    header += std::string(header.size() > 1 ? "," : "") + "\"" + t.name +
              "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(t.rows) +
              "," + std::to_string(t.cols) + "],\"data_offsets\":[" +
              std::to_string(begin) + "," + std::to_string(body.size()) + "]}";
  }
  header += "}";
  const uint64_t n = header.size();
  std::string file(reinterpret_cast<const char *>(&n), 8);
  return file + header + body;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const fm::import::AdapterBase base = makeBase();
  static const std::string fixed = makeTensors();
  const char *bytes = reinterpret_cast<const char *>(data);
  const void *nul = std::memchr(bytes, 0, size);
  const size_t configSize = nul ? size_t(static_cast<const char *>(nul) - bytes) : size;
  const std::string config(bytes, configSize);
  // The tensors' bytes must outlive the parsed file: a copy per input.
  const std::string tensorBytes =
      nul ? std::string(bytes + configSize + 1, size - configSize - 1) : fixed;
  auto tensors = fm::import::SafeTensorsFile::parse(tensorBytes,
                                                    "adapter_model.safetensors");
  if (!tensors) {
    llvm::consumeError(tensors.takeError());
    return 0;
  }
  auto adapter = fm::import::parsePeftAdapter(config, "adapter_config.json",
                                              *tensors, base);
  if (!adapter) {
    llvm::consumeError(adapter.takeError());
    return 0;
  }
  // What it accepted is what the writers rely on.
  for (const fm::import::LoraWeights &l : adapter->loras)
    if (l.rank < 1 || l.a.size() != size_t(l.rank * l.in) ||
        l.b.size() != size_t(l.out * l.rank) || !(l.scale == l.scale))
      std::abort();
  return 0;
}
