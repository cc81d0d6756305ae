// The shared pieces of every family's config reader: typed, error-collecting
// field access to a config.json object (ConfigReader) and the builder that
// appends layers and expected tensors to a ModelSpec (SpecBuilder). Each
// family (import/families/) turns its fields into a ModelSpec with them.
#pragma once

#include "import/ModelSpec.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace fm::import {

// Sizes fit in int32 so that products of two or three of them (projection
// shapes) cannot overflow int64.
inline constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
// A typo such as "num_hidden_layers": 100000000 must fail with a message, not
// by allocating a name for every tensor of a model that cannot exist.
inline constexpr uint64_t kMaxExpectedTensors = 4u << 20;

llvm::Error makeError(const llvm::Twine &msg);
/// The JSON text of `v`, and the same cut to 60 characters for messages.
std::string jsonText(const llvm::json::Value &v);
std::string brief(const llvm::json::Value &v);
/// Shortest decimal that reads back as `d` (1e-05 rather than 1.0000000000000001e-05).
std::string fmtDouble(double d);
/// "key=value", the way messages explain a shape.
std::string kv(llvm::StringRef key, int64_t v);

/// Reads typed fields from the config object, collecting every problem so one
/// run reports all missing or mistyped fields.
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &obj, std::string file,
               std::string modelType)
      : obj_(obj), file_(std::move(file)), modelType_(std::move(modelType)) {}

  /// The field, or null when absent or JSON null (HF writes `"head_dim": null`
  /// for "use the default").
  const llvm::json::Value *get(llvm::StringRef key) const;

  void error(const llvm::Twine &msg) { errors_.push_back(file_ + ": " + msg.str()); }
  bool ok() const { return errors_.empty(); }
  /// Every error so far, one per line; clears them.
  llvm::Error take();

  void missing(llvm::StringRef key, llvm::StringRef when = "");
  int64_t reqInt(llvm::StringRef key, int64_t min = 1, llvm::StringRef when = "");
  int64_t optInt(llvm::StringRef key, int64_t def, int64_t min = 1);
  double optNumber(llvm::StringRef key, double def);
  bool optBool(llvm::StringRef key, bool def);
  std::optional<std::string> optString(llvm::StringRef key);
  /// A one-of string field; returns the index into `choices`.
  size_t optChoice(llvm::StringRef key, llvm::ArrayRef<llvm::StringRef> choices,
                   size_t def);
  const llvm::json::Array *optArray(llvm::StringRef key);

  /// fmc's FFN is SwiGLU; another activation would compile to a wrong model.
  void requireSilu();
  /// Biases the ModelSpec has no slot for must not be silently dropped.
  void requireFalse(llvm::StringRef key, llvm::StringRef why);
  /// RoPE theta, from `rope_theta` or transformers 5's `rope_parameters`.
  /// Scaled RoPE variants (llama3, yarn, ...) change every frequency, so they
  /// are rejected rather than imported as plain RoPE. With
  /// `paramsReplaceTheta` (afm7, as MLX does) a rope_parameters object
  /// without rope_theta means the default, not the top-level rope_theta.
  double ropeTheta(double def, bool paramsReplaceTheta = false);

private:
  const llvm::json::Object &obj_;
  std::string file_, modelType_;
  std::vector<std::string> errors_;
};

/// Appends layers and expected tensors to a ModelSpec.
class SpecBuilder {
public:
  explicit SpecBuilder(ModelSpec &spec) : spec_(spec) {}

  /// Records that the checkpoint must hold `name` with `shape`; returns it.
  std::string expect(std::string name, std::vector<int64_t> shape, std::string why);
  void norm(std::string &slot, std::string name, int64_t hidden,
            llvm::StringRef hiddenKey);
  /// q/k/v/o projections of a standard (unfused) attention.
  void projections(AttentionSpec &a, const std::string &p, int64_t hidden,
                   bool bias, llvm::StringRef hiddenKey, llvm::StringRef headsKey,
                   llvm::StringRef kvKey);
  /// A SwiGLU FFN: gate/up [I, H], down [H, I].
  void swiglu(std::string &gate, std::string &up, std::string &down,
              const std::string &p, llvm::StringRef gateName,
              llvm::StringRef upName, llvm::StringRef downName, int64_t inter,
              llvm::StringRef interKey, int64_t hidden, llvm::StringRef hiddenKey);
  /// Router plus per-expert SwiGLU weights named `<p>experts.E.<gate|up|down>`.
  void experts(FfnSpec &f, const std::string &router, llvm::StringRef expertsKey,
               const std::string &p, llvm::StringRef gateName,
               llvm::StringRef upName, llvm::StringRef downName,
               llvm::StringRef interKey, int64_t hidden, llvm::StringRef hiddenKey);

private:
  ModelSpec &spec_;
};

void initAttention(AttentionSpec &a, int64_t heads, int64_t kvHeads,
                   int64_t headDim, RopeStyle rope, double theta);
/// Models without parallel tracks are one block with one track of all layers.
void singleTrack(ModelSpec &spec, std::vector<LayerSpec> layers);
/// The error for a config that implies more than kMaxExpectedTensors tensors.
llvm::Error tooManyTensors(llvm::StringRef file, uint64_t n);

} // namespace fm::import
