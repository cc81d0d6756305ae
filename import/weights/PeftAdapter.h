// PeftAdapter: reads a PEFT LoRA adapter directory (adapter_config.json +
// adapter_model.safetensors, as Hugging Face PEFT's save_pretrained writes
// it) against the projections of one base model, for `fmc compile-adapter`
// (a .fmba) and `fmc compile --merge-adapter` (W + s·B·A).
//
// PEFT's rules, followed exactly where fmc supports the feature:
//  - target_modules: a string is a regex the whole module name must match
//    (re.fullmatch); a list matches a module equal to an entry or ending in
//    "." + entry; exclude_modules the same way; layers_to_transform (with
//    layers_pattern) keeps the modules of those layer indices.
//  - rank_pattern / alpha_pattern: the first key k (in file order) for which
//    the module matches (.*\.)?(k)$ gives its r / lora_alpha.
//  - s = lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora.
//  - tensors base_model.model.<module>.lora_A.weight [r, in] and
//    .lora_B.weight [out, r] for every selected module of the base.
// Not supported, with an error that says so: use_dora, bias other than
// "none", modules_to_save, fan_in_fan_out, target_parameters, lora_bias,
// peft_type other than LORA, LoRA on embeddings. Regexes are PCRE2 (the
// syntax of Python's re for the patterns PEFT configs use) with match
// limits. Every error names the file and the field or tensor.
#pragma once

#include "import/weights/SafeTensors.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fm::import {

/// A projection of the base that an adapter may update: its weight
/// [out, in] (a matmul weight, not an embedding table).
struct BaseProjection {
  std::string weight; // "model.layers.0.self_attn.q_proj.weight"
  int64_t out = 0, in = 0;
};

/// The base as the adapter reader sees it.
struct AdapterBase {
  std::string family; // "llama", "afm7": for messages
  std::string name;   // "model.fmb", or the checkpoint directory
  /// In the base's order (its matmuls' stacked weights consecutive).
  std::vector<BaseProjection> projections;
};

/// One LoRA pair, read as f32.
struct LoraWeights {
  std::string module; // "model.layers.0.self_attn.q_proj"
  std::string weight; // the base weight it updates: module + ".weight"
  int64_t rank = 0, in = 0, out = 0;
  double alpha = 0, scale = 0;
  std::vector<float> a; // lora_A [rank][in]
  std::vector<float> b; // lora_B [out][rank]
};

struct PeftAdapter {
  std::string dir;        // as given
  std::string name;       // the directory's last component
  std::string configJson; // adapter_config.json as read
  std::string baseModelNameOrPath;
  int64_t r = 0;
  double alpha = 0;
  bool rslora = false;
  /// In the order of AdapterBase::projections.
  std::vector<LoraWeights> loras;
};

/// Reads `dir` (adapter_config.json, adapter_model.safetensors) against
/// `base`.
llvm::Expected<PeftAdapter> readPeftAdapter(llvm::StringRef dir,
                                            const AdapterBase &base);

/// The same from a config's text and an opened safetensors file (named
/// `configName` and tensors.path() in messages); for tests and the fuzzer.
llvm::Expected<PeftAdapter> parsePeftAdapter(llvm::StringRef configText,
                                             llvm::StringRef configName,
                                             const SafeTensorsFile &tensors,
                                             const AdapterBase &base);

/// "name[:scale]" (the scale a float) into its parts; a name whose text
/// after the last ':' is not a number is all name (scale 1).
struct AdapterArg {
  std::string path;
  double scale = 1.0;
};
llvm::Expected<AdapterArg> parseAdapterArg(llvm::StringRef text,
                                           llvm::StringRef option);

} // namespace fm::import
