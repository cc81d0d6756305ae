// ModelConfig: config.json -> ModelSpec for each supported family, and the
// checkpoint-vs-config checker.
#include "ModelConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

namespace {

// Sizes fit in int32 so that products of two or three of them (projection
// shapes) cannot overflow int64.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
// A typo such as "num_hidden_layers": 100000000 must fail with a message, not
// by allocating a name for every tensor of a model that cannot exist.
constexpr uint64_t kMaxExpectedTensors = 4u << 20;

Error makeError(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string jsonText(const json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return os.str();
}

std::string brief(const json::Value &v) {
  std::string s = jsonText(v);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

/// Shortest decimal that reads back as `d` (1e-05 rather than 1.0000000000000001e-05).
std::string fmtDouble(double d) {
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  return buf;
}

std::string kv(StringRef key, int64_t v) { return (key + "=" + Twine(v)).str(); }

/// Reads typed fields from the config object, collecting every problem so one
/// run reports all missing or mistyped fields.
class Fields {
public:
  Fields(const json::Object &obj, std::string file, std::string modelType)
      : obj_(obj), file_(std::move(file)), modelType_(std::move(modelType)) {}

  /// The field, or null when absent or JSON null (HF writes `"head_dim": null`
  /// for "use the default").
  const json::Value *get(StringRef key) const {
    const json::Value *v = obj_.get(key);
    return v && v->kind() != json::Value::Null ? v : nullptr;
  }

  void error(const Twine &msg) { errors_.push_back(file_ + ": " + msg.str()); }
  bool ok() const { return errors_.empty(); }
  Error take() {
    std::string all;
    for (size_t i = 0; i < errors_.size(); ++i)
      all += (i ? "\n" : "") + errors_[i];
    errors_.clear();
    return makeError(all);
  }

  void missing(StringRef key, StringRef when = "") {
    if (when.empty())
      error("missing field '" + key + "' (required for model_type '" + modelType_ + "')");
    else
      error("missing field '" + key + "' (required for model_type '" + modelType_ + "' " +
            when + ")");
  }

  int64_t reqInt(StringRef key, int64_t min = 1, StringRef when = "") {
    if (!get(key)) {
      missing(key, when);
      return 0;
    }
    return optInt(key, 0, min);
  }

  int64_t optInt(StringRef key, int64_t def, int64_t min = 1) {
    const json::Value *v = get(key);
    if (!v)
      return def;
    std::optional<int64_t> i;
    if (auto d = v->getAsNumber(); d && std::fabs(*d) < 9.0e18) // getAsInteger is UB near 2^63
      i = v->getAsInteger();
    if (!i) {
      error("field '" + key + "' must be an integer, got " + brief(*v));
      return 0;
    }
    if (*i < min) {
      error("field '" + key + "' must be " + (min == 1 ? "positive" : "non-negative") +
            ", got " + Twine(*i));
      return 0;
    }
    if (*i > kMaxSize) {
      error("field '" + key + "' is " + Twine(*i) + ", more than fmc supports (" +
            Twine(kMaxSize) + ")");
      return 0;
    }
    return *i;
  }

  double optNumber(StringRef key, double def) {
    const json::Value *v = get(key);
    if (!v)
      return def;
    auto d = v->getAsNumber();
    if (!d || !std::isfinite(*d)) {
      error("field '" + key + "' must be a number, got " + brief(*v));
      return def;
    }
    if (*d <= 0) {
      error("field '" + key + "' must be positive, got " + fmtDouble(*d));
      return def;
    }
    return *d;
  }

  bool optBool(StringRef key, bool def) {
    const json::Value *v = get(key);
    if (!v)
      return def;
    if (auto b = v->getAsBoolean())
      return *b;
    error("field '" + key + "' must be true or false, got " + brief(*v));
    return def;
  }

  std::optional<std::string> optString(StringRef key) {
    const json::Value *v = get(key);
    if (!v)
      return std::nullopt;
    if (auto s = v->getAsString())
      return s->str();
    error("field '" + key + "' must be a string, got " + brief(*v));
    return std::nullopt;
  }

  /// A one-of string field; returns the index into `choices`.
  size_t optChoice(StringRef key, llvm::ArrayRef<StringRef> choices, size_t def) {
    auto s = optString(key);
    if (!s)
      return def;
    for (size_t i = 0; i < choices.size(); ++i)
      if (*s == choices[i])
        return i;
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i)
      list += (i ? ", " : "") + ("'" + choices[i] + "'").str();
    error("field '" + key + "' is '" + *s + "', expected one of " + list);
    return def;
  }

  const json::Array *optArray(StringRef key) {
    const json::Value *v = get(key);
    if (!v)
      return nullptr;
    if (const json::Array *a = v->getAsArray())
      return a;
    error("field '" + key + "' must be a list, got " + brief(*v));
    return nullptr;
  }

  /// fmc's FFN is SwiGLU; another activation would compile to a wrong model.
  void requireSilu() {
    if (auto act = optString("hidden_act"); act && *act != "silu" && *act != "swish")
      error("hidden_act '" + *act + "' is not supported (fmc implements SwiGLU with silu)");
  }

  /// Biases the ModelSpec has no slot for must not be silently dropped.
  void requireFalse(StringRef key, StringRef why) {
    if (optBool(key, false))
      error(key + "=true is not supported (" + why + ")");
  }

  /// RoPE theta, from `rope_theta` or transformers 5's `rope_parameters`.
  /// Scaled RoPE variants (llama3, yarn, ...) change every frequency, so they
  /// are rejected rather than imported as plain RoPE. With
  /// `paramsReplaceTheta` (afm7, as MLX does) a rope_parameters object
  /// without rope_theta means the default, not the top-level rope_theta.
  double ropeTheta(double def, bool paramsReplaceTheta = false) {
    double theta = optNumber("rope_theta", def);
    if (const json::Value *rp = get("rope_parameters")) {
      const json::Object *o = rp->getAsObject();
      if (!o) {
        error("field 'rope_parameters' must be an object, got " + brief(*rp));
      } else {
        if (auto type = o->getString("rope_type"); type && *type != "default")
          error("rope_parameters.rope_type '" + *type +
                "' is not supported (fmc implements unscaled RoPE)");
        if (const json::Value *t = o->get("rope_theta")) {
          auto d = t->getAsNumber();
          if (!d || !std::isfinite(*d) || *d <= 0)
            error("rope_parameters.rope_theta must be a positive number, got " + brief(*t));
          else
            theta = *d;
        } else if (paramsReplaceTheta) {
          theta = def;
        }
      }
    }
    if (const json::Value *rs = get("rope_scaling")) {
      const json::Object *o = rs->getAsObject();
      std::optional<StringRef> type;
      if (o) {
        type = o->getString("rope_type");
        if (!type)
          type = o->getString("type");
      }
      if (!type || *type != "default")
        error("rope_scaling " + brief(*rs) + " is not supported (fmc implements unscaled RoPE)");
    }
    return theta;
  }

private:
  const json::Object &obj_;
  std::string file_, modelType_;
  std::vector<std::string> errors_;
};

/// Appends layers and expected tensors to a ModelSpec.
class Builder {
public:
  explicit Builder(ModelSpec &spec) : spec_(spec) {}

  std::string expect(std::string name, std::vector<int64_t> shape, std::string why) {
    spec_.expected.push_back({name, std::move(shape), std::move(why)});
    return name;
  }

  void norm(std::string &slot, std::string name, int64_t hidden, StringRef hiddenKey) {
    slot = expect(std::move(name), {hidden}, kv(hiddenKey, hidden));
  }

  /// q/k/v/o projections of a standard (unfused) attention.
  void projections(AttentionSpec &a, const std::string &p, int64_t hidden, bool bias,
                   StringRef hiddenKey, StringRef headsKey, StringRef kvKey) {
    int64_t q = a.numHeads * a.headDim, kvd = a.numKvHeads * a.headDim;
    std::string qWhy = kv(headsKey, a.numHeads) + ", " + kv("head_dim", a.headDim);
    std::string kvWhy = kv(kvKey, a.numKvHeads) + ", " + kv("head_dim", a.headDim);
    a.q = expect(p + "q_proj.weight", {q, hidden}, qWhy);
    if (bias)
      a.qBias = expect(p + "q_proj.bias", {q}, qWhy);
    a.k = expect(p + "k_proj.weight", {kvd, hidden}, kvWhy);
    if (bias)
      a.kBias = expect(p + "k_proj.bias", {kvd}, kvWhy);
    a.v = expect(p + "v_proj.weight", {kvd, hidden}, kvWhy);
    if (bias)
      a.vBias = expect(p + "v_proj.bias", {kvd}, kvWhy);
    a.o = expect(p + "o_proj.weight", {hidden, q}, kv(hiddenKey, hidden) + ", " + qWhy);
  }

  /// A SwiGLU FFN: gate/up [I, H], down [H, I].
  void swiglu(std::string &gate, std::string &up, std::string &down, const std::string &p,
              StringRef gateName, StringRef upName, StringRef downName, int64_t inter,
              StringRef interKey, int64_t hidden, StringRef hiddenKey) {
    std::string inWhy = kv(interKey, inter) + ", " + kv(hiddenKey, hidden);
    std::string outWhy = kv(hiddenKey, hidden) + ", " + kv(interKey, inter);
    gate = expect(p + gateName.str(), {inter, hidden}, inWhy);
    up = expect(p + upName.str(), {inter, hidden}, inWhy);
    down = expect(p + downName.str(), {hidden, inter}, outWhy);
  }

  /// Router plus per-expert SwiGLU weights named `<p>experts.E.<gate|up|down>`.
  void experts(FfnSpec &f, const std::string &router, StringRef expertsKey,
               const std::string &p, StringRef gateName, StringRef upName,
               StringRef downName, StringRef interKey, int64_t hidden, StringRef hiddenKey) {
    f.router = expect(router, {f.numExperts, hidden},
                      kv(expertsKey, f.numExperts) + ", " + kv(hiddenKey, hidden));
    for (int64_t e = 0; e < f.numExperts; ++e) {
      std::string ep = p + "experts." + std::to_string(e) + ".";
      std::string g, u, d;
      swiglu(g, u, d, ep, gateName, upName, downName, f.intermediate, interKey, hidden,
             hiddenKey);
      f.expertGate.push_back(g);
      f.expertUp.push_back(u);
      f.expertDown.push_back(d);
    }
  }

private:
  ModelSpec &spec_;
};

void initAttention(AttentionSpec &a, int64_t heads, int64_t kvHeads, int64_t headDim,
                   RopeStyle rope, double theta) {
  a.numHeads = heads;
  a.numKvHeads = kvHeads;
  a.headDim = headDim;
  a.scale = 1.0 / std::sqrt(double(headDim));
  a.rope = rope;
  a.ropeTheta = theta;
}

/// Models without parallel tracks are one block with one track of all layers.
void singleTrack(ModelSpec &spec, std::vector<LayerSpec> layers) {
  spec.numTracks = 1;
  spec.numTrackBlocks = 1;
  spec.trackBlockDepth = int64_t(layers.size());
  spec.parallelTracks = false;
  spec.blocks.assign(1, TrackBlockSpec{});
  spec.blocks[0].tracks.push_back(std::move(layers));
}

Error tooManyTensors(StringRef file, uint64_t n) {
  return makeError(file + ": the config implies " + Twine(n) +
                   " tensors, more than fmc supports (" + Twine(kMaxExpectedTensors) +
                   "); check the layer and expert counts");
}

// --- llama, mixtral and qwen2_moe share llama's dense fields ---------------

struct LlamaDims {
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0,
          inter = 0;
  double eps = 1e-6, theta = 10000;
  bool tie = false;
};

void readLlamaFields(Fields &f, LlamaDims &d, double defEps, double defTheta) {
  d.vocab = f.reqInt("vocab_size");
  d.hidden = f.reqInt("hidden_size");
  d.layers = f.reqInt("num_hidden_layers");
  d.heads = f.reqInt("num_attention_heads");
  d.kvHeads = f.optInt("num_key_value_heads", 0); // HF: absent means MHA
  d.headDim = f.optInt("head_dim", 0);
  d.inter = f.reqInt("intermediate_size");
  d.eps = f.optNumber("rms_norm_eps", defEps);
  d.theta = f.ropeTheta(defTheta);
  d.tie = f.optBool("tie_word_embeddings", false);
  f.requireSilu();
}

/// Checks between fields, once each field has been read successfully.
void validateLlamaDims(Fields &f, LlamaDims &d) {
  if (!d.kvHeads)
    d.kvHeads = d.heads;
  if (!d.headDim) {
    if (d.hidden % d.heads)
      f.error("hidden_size=" + Twine(d.hidden) + " is not divisible by num_attention_heads=" +
              Twine(d.heads) + " (set head_dim explicitly)");
    d.headDim = d.hidden / d.heads;
  }
  if (d.heads % d.kvHeads)
    f.error("num_attention_heads=" + Twine(d.heads) +
            " is not divisible by num_key_value_heads=" + Twine(d.kvHeads));
}

void llamaEmbedding(Builder &b, ModelSpec &spec, const LlamaDims &d) {
  spec.vocabSize = d.vocab;
  spec.hiddenSize = d.hidden;
  spec.rmsEps = d.eps;
  spec.tieWordEmbeddings = d.tie;
  spec.embedding = b.expect("model.embed_tokens.weight", {d.vocab, d.hidden},
                            kv("vocab_size", d.vocab) + ", " + kv("hidden_size", d.hidden));
}

void llamaOutput(Builder &b, ModelSpec &spec, const LlamaDims &d) {
  b.norm(spec.finalNorm, "model.norm.weight", d.hidden, "hidden_size");
  if (!d.tie)
    spec.lmHead = b.expect("lm_head.weight", {d.vocab, d.hidden},
                           kv("vocab_size", d.vocab) + ", " + kv("hidden_size", d.hidden));
}

/// A llama-style layer up to (not including) its FFN weights.
LayerSpec llamaLayer(Builder &b, const LlamaDims &d, int64_t i, bool qkvBias,
                     int64_t window) {
  LayerSpec l;
  l.prefix = "model.layers." + std::to_string(i);
  l.index = i;
  initAttention(l.attn, d.heads, d.kvHeads, d.headDim, RopeStyle::Half, d.theta);
  if (window > 0) {
    l.attn.local = true;
    l.attn.window = window;
  }
  b.norm(l.attnNorm, l.prefix + ".input_layernorm.weight", d.hidden, "hidden_size");
  b.projections(l.attn, l.prefix + ".self_attn.", d.hidden, qkvBias, "hidden_size",
                "num_attention_heads", "num_key_value_heads");
  b.norm(l.ffnNorm, l.prefix + ".post_attention_layernorm.weight", d.hidden, "hidden_size");
  return l;
}

void denseLlamaFfn(Builder &b, LayerSpec &l, const LlamaDims &d) {
  l.ffn.intermediate = d.inter;
  b.swiglu(l.ffn.gate, l.ffn.up, l.ffn.down, l.prefix + ".mlp.", "gate_proj.weight",
           "up_proj.weight", "down_proj.weight", d.inter, "intermediate_size", d.hidden,
           "hidden_size");
}

Error buildLlama(Fields &f, ModelSpec &spec, StringRef file) {
  LlamaDims d;
  readLlamaFields(f, d, 1e-6, 10000);
  // An o_proj or MLP bias has no slot in ModelSpec: refuse rather than drop it.
  f.requireFalse("attention_bias", "fmc's llama has no attention projection biases");
  f.requireFalse("mlp_bias", "fmc's llama has no MLP biases");
  if (!f.ok())
    return f.take();
  validateLlamaDims(f, d);
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(d.layers) * 9 + 3; n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  Builder b(spec);
  llamaEmbedding(b, spec, d);
  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < d.layers; ++i) {
    LayerSpec l = llamaLayer(b, d, i, /*qkvBias=*/false, /*window=*/0);
    denseLlamaFfn(b, l, d);
    layers.push_back(std::move(l));
  }
  llamaOutput(b, spec, d);
  singleTrack(spec, std::move(layers));
  return Error::success();
}

Error buildMixtral(Fields &f, ModelSpec &spec, StringRef file) {
  LlamaDims d;
  // HF MixtralConfig's defaults, which differ from llama's.
  readLlamaFields(f, d, 1e-5, 1e6);
  int64_t experts = f.reqInt("num_local_experts");
  int64_t topK = f.reqInt("num_experts_per_tok");
  // Mixtral applies a sliding window to every layer when one is configured.
  int64_t window = f.optInt("sliding_window", 0);
  if (!f.ok())
    return f.take();
  validateLlamaDims(f, d);
  if (topK > experts)
    f.error("num_experts_per_tok=" + Twine(topK) + " exceeds num_local_experts=" +
            Twine(experts));
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(d.layers) * (7 + 3 * uint64_t(experts)) + 3;
      n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  Builder b(spec);
  llamaEmbedding(b, spec, d);
  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < d.layers; ++i) {
    LayerSpec l = llamaLayer(b, d, i, /*qkvBias=*/false, window);
    FfnSpec &ffn = l.ffn;
    ffn.moe = true;
    ffn.intermediate = d.inter;
    ffn.numExperts = experts;
    ffn.topK = topK;
    ffn.normTopK = true;
    std::string p = l.prefix + ".block_sparse_moe.";
    b.experts(ffn, p + "gate.weight", "num_local_experts", p, "w1.weight", "w3.weight",
              "w2.weight", "intermediate_size", d.hidden, "hidden_size");
    layers.push_back(std::move(l));
  }
  llamaOutput(b, spec, d);
  singleTrack(spec, std::move(layers));
  return Error::success();
}

Error buildQwen2Moe(Fields &f, ModelSpec &spec, StringRef file) {
  LlamaDims d;
  readLlamaFields(f, d, 1e-6, 10000);
  int64_t experts = f.reqInt("num_experts");
  int64_t topK = f.reqInt("num_experts_per_tok");
  int64_t moeInter = f.reqInt("moe_intermediate_size");
  int64_t sharedInter = f.reqInt("shared_expert_intermediate_size");
  bool normTopK = f.optBool("norm_topk_prob", false);
  int64_t step = f.optInt("decoder_sparse_step", 1);
  const json::Array *mlpOnly = f.optArray("mlp_only_layers");
  f.requireFalse("use_sliding_window",
                 "fmc does not implement qwen2_moe's per-layer sliding window");
  if (!f.ok())
    return f.take();
  validateLlamaDims(f, d);
  if (topK > experts)
    f.error("num_experts_per_tok=" + Twine(topK) + " exceeds num_experts=" + Twine(experts));
  std::vector<bool> denseOnly(size_t(d.layers), false);
  if (mlpOnly) {
    for (size_t i = 0; i < mlpOnly->size(); ++i) {
      const json::Value &v = (*mlpOnly)[i];
      auto n = v.getAsUINT64();
      if (!n || *n >= uint64_t(d.layers))
        f.error("mlp_only_layers[" + Twine(i) + "] must be a layer index below " +
                "num_hidden_layers=" + Twine(d.layers) + ", got " + brief(v));
      else
        denseOnly[*n] = true;
    }
  }
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(d.layers) * (16 + 3 * uint64_t(experts)) + 3;
      n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  Builder b(spec);
  llamaEmbedding(b, spec, d);
  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < d.layers; ++i) {
    LayerSpec l = llamaLayer(b, d, i, /*qkvBias=*/true, /*window=*/0);
    // Same rule as transformers' Qwen2MoeDecoderLayer.
    bool sparse = (i + 1) % step == 0 && !denseOnly[size_t(i)];
    if (!sparse) {
      denseLlamaFfn(b, l, d);
    } else {
      FfnSpec &ffn = l.ffn;
      ffn.moe = true;
      ffn.intermediate = moeInter;
      ffn.numExperts = experts;
      ffn.topK = topK;
      ffn.normTopK = normTopK;
      std::string p = l.prefix + ".mlp.";
      b.experts(ffn, p + "gate.weight", "num_experts", p, "gate_proj.weight",
                "up_proj.weight", "down_proj.weight", "moe_intermediate_size", d.hidden,
                "hidden_size");
      ffn.sharedIntermediate = sharedInter;
      b.swiglu(ffn.sharedGate, ffn.sharedUp, ffn.sharedDown, p + "shared_expert.",
               "gate_proj.weight", "up_proj.weight", "down_proj.weight", sharedInter,
               "shared_expert_intermediate_size", d.hidden, "hidden_size");
      ffn.sharedExpertGate = b.expect(p + "shared_expert_gate.weight", {1, d.hidden},
                                      "one gate logit, " + kv("hidden_size", d.hidden));
    }
    layers.push_back(std::move(l));
  }
  llamaOutput(b, spec, d);
  singleTrack(spec, std::move(layers));
  return Error::success();
}

// --- afm7 (Apple on-device model; layout of mlx_lm/models/afm7.py) ---------

Error buildAfm7(Fields &f, ModelSpec &spec, StringRef file) {
  int64_t vocab = f.reqInt("vocab_size");
  int64_t hidden = f.reqInt("hidden_dim");
  int64_t numLayers = f.reqInt("num_layers");
  int64_t reuse = f.reqInt("num_kv_reuse_layers", /*min=*/0);
  int64_t heads = f.reqInt("num_heads");
  int64_t kvHeads = f.reqInt("num_kv_heads");
  double factor = f.optNumber("hidden_dim_scale_factor", 3.25);
  double theta = f.ropeTheta(50000, /*paramsReplaceTheta=*/true);
  double eps = f.optNumber("rms_norm_eps", 1e-5);
  if (!f.ok())
    return f.take();
  if (hidden % heads)
    f.error("hidden_dim=" + Twine(hidden) + " is not divisible by num_heads=" + Twine(heads));
  if (heads % kvHeads)
    f.error("num_heads=" + Twine(heads) + " is not divisible by num_kv_heads=" +
            Twine(kvHeads));
  if (reuse >= numLayers)
    f.error("num_kv_reuse_layers=" + Twine(reuse) + " must be less than num_layers=" +
            Twine(numLayers) + " (reuse layers read the KV cache of the last regular layer)");
  // Python's int(hidden_dim * factor): the product in double, truncated.
  double ffnD = double(hidden) * factor;
  int64_t ffn = ffnD < double(kMaxSize) ? int64_t(ffnD) : 0;
  if (ffn < 1)
    f.error("int(hidden_dim * hidden_dim_scale_factor) = " + fmtDouble(std::trunc(ffnD)) +
            " is not a valid FFN size");
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(numLayers) * 11 + 2; n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  const int64_t headDim = hidden / heads;
  const int64_t regular = numLayers - reuse;
  const std::string hdWhy = "head_dim=hidden_dim/num_heads=" + std::to_string(headDim);
  const std::string qWhy = kv("num_heads", heads) + ", " + kv("head_dim", headDim);
  const std::string ffnKey =
      "int(hidden_dim*hidden_dim_scale_factor=" + fmtDouble(factor) + ")";

  spec.vocabSize = vocab;
  spec.hiddenSize = hidden;
  spec.rmsEps = eps;
  spec.tieWordEmbeddings = true; // the LM head is the embedding, transposed
  Builder b(spec);
  spec.embedding = b.expect("model.embedding.weight", {vocab, hidden},
                            kv("vocab_size", vocab) + ", " + kv("hidden_dim", hidden));

  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < numLayers; ++i) {
    const bool isReuse = i >= regular;
    LayerSpec l;
    l.prefix = isReuse ? "model.kv_reuse_layers." + std::to_string(i - regular)
                       : "model.layers." + std::to_string(i);
    l.index = i;
    AttentionSpec &a = l.attn;
    initAttention(a, heads, kvHeads, headDim, RopeStyle::Interleaved, theta);
    a.qkNorm = true; // q_norm/k_norm are nn.RMSNorm(head_dim): eps stays MLX's 1e-5
    b.norm(l.attnNorm, l.prefix + ".input_layernorm.weight", hidden, "hidden_dim");
    const std::string p = l.prefix + ".self_attn.";
    if (!isReuse) {
      a.kvFakeQuant = true;
      a.qkv = b.expect(p + "qkv_proj.weight", {(heads + 2 * kvHeads) * headDim, hidden},
                       kv("num_heads", heads) + ", " + kv("num_kv_heads", kvHeads) + ", " +
                           kv("head_dim", headDim));
    } else {
      // The cache it reads is already roped, normed and quantized.
      a.reuseKvOfLayer = regular - 1;
      a.q = b.expect(p + "q_proj.weight", {heads * headDim, hidden}, qWhy);
    }
    a.o = b.expect(p + "out_proj.weight", {hidden, heads * headDim},
                   kv("hidden_dim", hidden) + ", " + qWhy);
    a.qNorm = b.expect(p + "q_norm.weight", {headDim}, hdWhy);
    if (!isReuse) {
      a.kNorm = b.expect(p + "k_norm.weight", {headDim}, hdWhy);
      a.kScale = b.expect(p + "quant_key_scale", {}, "a per-layer scalar (0-d)");
      a.vScale = b.expect(p + "quant_value_scale", {}, "a per-layer scalar (0-d)");
    }
    l.ffn.intermediate = ffn;
    b.swiglu(l.ffn.gate, l.ffn.up, l.ffn.down, l.prefix + ".mlp.", "gate_proj.weight",
             "up_proj.weight", "down_proj.weight", ffn, ffnKey, hidden, "hidden_dim");
    b.norm(l.ffnNorm, l.prefix + ".post_attention_layernorm.weight", hidden, "hidden_dim");
    layers.push_back(std::move(l));
  }
  b.norm(spec.finalNorm, "model.output_norm.weight", hidden, "hidden_dim");
  singleTrack(spec, std::move(layers));
  return Error::success();
}

// --- pt_moe (parallel-track MoE; fmc's own layout) -------------------------

Error buildPtMoe(Fields &f, ModelSpec &spec, StringRef file) {
  int64_t vocab = f.reqInt("vocab_size");
  int64_t hidden = f.reqInt("hidden_size");
  int64_t tracks = f.reqInt("num_tracks");
  int64_t depth = f.reqInt("track_block_depth");
  int64_t blocks = f.reqInt("num_track_blocks");
  int64_t heads = f.reqInt("num_attention_heads");
  int64_t kvHeads = f.reqInt("num_key_value_heads");
  // Tracks are narrow (a share of the heads), so hidden/heads is no default.
  int64_t headDim = f.reqInt("head_dim");
  int64_t interval = f.optInt("moe_layer_interval", 0, /*min=*/0);
  // Only needed when some layer is dense (interval 1 makes every layer MoE).
  int64_t inter = interval != 1 ? f.reqInt("intermediate_size", 1, "when a layer is dense")
                                : f.optInt("intermediate_size", 0);
  bool globalRope = f.optBool("global_rope", true);
  double theta = f.ropeTheta(10000);
  RopeStyle style =
      f.optChoice("rope_style", {"half", "interleaved"}, 0) ? RopeStyle::Interleaved
                                                            : RopeStyle::Half;
  double eps = f.optNumber("rms_norm_eps", 1e-5);
  bool normTopK = f.optBool("norm_topk_prob", true);
  Combine combine =
      f.optChoice("track_combine", {"mean", "sum"}, 0) ? Combine::Sum : Combine::Mean;
  bool tie = f.optBool("tie_word_embeddings", false);

  // attention_pattern: the per-layer kinds, repeated over a track's layers.
  std::vector<bool> local;
  if (const json::Value *pv = f.get("attention_pattern")) {
    const json::Array *pa = pv->getAsArray();
    if (!pa || pa->empty())
      f.error("field 'attention_pattern' must be a non-empty list of \"local\" or "
              "\"global\", got " + brief(*pv));
    else
      for (size_t i = 0; i < pa->size(); ++i) {
        auto s = (*pa)[i].getAsString();
        if (s && (*s == "local" || *s == "global"))
          local.push_back(*s == "local");
        else
          f.error("attention_pattern[" + Twine(i) + "] must be \"local\" or \"global\", got " +
                  brief((*pa)[i]));
      }
  } else {
    local.push_back(false);
  }
  bool anyLocal = llvm::is_contained(local, true);
  int64_t window = anyLocal ? f.reqInt("sliding_window", 1, "when attention_pattern has "
                                                            "\"local\" layers")
                            : f.optInt("sliding_window", 0);

  int64_t experts = 0, topK = 0, moeInter = 0;
  if (interval > 0) {
    experts = f.reqInt("num_experts", 1, "when moe_layer_interval > 0");
    topK = f.reqInt("num_experts_per_tok", 1, "when moe_layer_interval > 0");
    moeInter = f.reqInt("moe_intermediate_size", 1, "when moe_layer_interval > 0");
  }
  if (!f.ok())
    return f.take();
  if (heads % kvHeads)
    f.error("num_attention_heads=" + Twine(heads) +
            " is not divisible by num_key_value_heads=" + Twine(kvHeads));
  if (topK > experts)
    f.error("num_experts_per_tok=" + Twine(topK) + " exceeds num_experts=" + Twine(experts));
  if (!f.ok())
    return f.take();
  // Four factors of up to 2^31 can overflow 64 bits: saturate instead.
  uint64_t n = 1;
  for (uint64_t factor : {uint64_t(tracks), uint64_t(depth), uint64_t(blocks),
                          8 + 3 * uint64_t(experts)})
    if (__builtin_mul_overflow(n, factor, &n))
      n = std::numeric_limits<uint64_t>::max();
  if (n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  spec.vocabSize = vocab;
  spec.hiddenSize = hidden;
  spec.rmsEps = eps;
  spec.numTracks = tracks;
  spec.trackBlockDepth = depth;
  spec.numTrackBlocks = blocks;
  spec.parallelTracks = true;
  spec.combine = combine;
  spec.tieWordEmbeddings = tie;
  Builder b(spec);
  spec.embedding = b.expect("model.embed_tokens.weight", {vocab, hidden},
                            kv("vocab_size", vocab) + ", " + kv("hidden_size", hidden));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    TrackBlockSpec block;
    for (int64_t t = 0; t < tracks; ++t) {
      std::vector<LayerSpec> track;
      for (int64_t li = 0; li < depth; ++li) {
        LayerSpec l;
        l.prefix = "model.blocks." + std::to_string(blk) + ".tracks." + std::to_string(t) +
                   ".layers." + std::to_string(li);
        l.index = blk * depth + li;
        bool isLocal = local[size_t(l.index % int64_t(local.size()))];
        // Global layers are NoPE unless global_rope asks for RoPE there too.
        RopeStyle rope = isLocal || globalRope ? style : RopeStyle::None;
        initAttention(l.attn, heads, kvHeads, headDim, rope, theta);
        if (isLocal) {
          l.attn.local = true;
          l.attn.window = window;
        }
        b.norm(l.attnNorm, l.prefix + ".input_layernorm.weight", hidden, "hidden_size");
        b.projections(l.attn, l.prefix + ".self_attn.", hidden, /*bias=*/false,
                      "hidden_size", "num_attention_heads", "num_key_value_heads");
        b.norm(l.ffnNorm, l.prefix + ".post_attention_layernorm.weight", hidden,
               "hidden_size");
        std::string p = l.prefix + ".mlp.";
        if (interval > 0 && l.index % interval == interval - 1) {
          FfnSpec &ffn = l.ffn;
          ffn.moe = true;
          ffn.intermediate = moeInter;
          ffn.numExperts = experts;
          ffn.topK = topK;
          ffn.normTopK = normTopK;
          b.experts(ffn, p + "router.weight", "num_experts", p, "gate_proj.weight",
                    "up_proj.weight", "down_proj.weight", "moe_intermediate_size", hidden,
                    "hidden_size");
        } else {
          l.ffn.intermediate = inter;
          b.swiglu(l.ffn.gate, l.ffn.up, l.ffn.down, p, "gate_proj.weight",
                   "up_proj.weight", "down_proj.weight", inter, "intermediate_size", hidden,
                   "hidden_size");
        }
        track.push_back(std::move(l));
      }
      block.tracks.push_back(std::move(track));
    }
    spec.blocks.push_back(std::move(block));
  }
  b.norm(spec.finalNorm, "model.norm.weight", hidden, "hidden_size");
  if (!tie)
    spec.lmHead = b.expect("lm_head.weight", {vocab, hidden},
                           kv("vocab_size", vocab) + ", " + kv("hidden_size", hidden));
  return Error::success();
}

} // namespace

const char *familyName(Family f) {
  switch (f) {
  case Family::Llama:
    return "llama";
  case Family::Afm7:
    return "afm7";
  case Family::PtMoe:
    return "pt_moe";
  case Family::Mixtral:
    return "mixtral";
  case Family::Qwen2Moe:
    return "qwen2_moe";
  }
  return "?";
}

const char *supportedModelTypes() { return "llama, afm7, pt_moe, mixtral, qwen2_moe"; }

std::optional<Family> familyFromModelType(StringRef modelType) {
  for (Family f : {Family::Llama, Family::Afm7, Family::PtMoe, Family::Mixtral,
                   Family::Qwen2Moe})
    if (modelType == familyName(f))
      return f;
  return std::nullopt;
}

Expected<ModelSpec> parseModelConfig(StringRef text, StringRef nameForErrors) {
  const std::string file = nameForErrors.str();
  auto root = parseJson(text, file + ": invalid JSON: ");
  if (!root)
    return root.takeError();
  const json::Object *obj = root->getAsObject();
  if (!obj)
    return makeError(file + ": expected a JSON object, got " + brief(*root));

  const json::Value *mt = obj->get("model_type");
  if (!mt)
    return makeError(file + ": missing field 'model_type' (fmc supports " +
                     supportedModelTypes() + ")");
  auto mts = mt->getAsString();
  if (!mts)
    return makeError(file + ": field 'model_type' must be a string, got " + brief(*mt));
  auto family = familyFromModelType(*mts);
  if (!family)
    return makeError(file + ": unsupported model_type '" + *mts + "' (fmc supports " +
                     supportedModelTypes() + ")");

  ModelSpec spec;
  spec.family = *family;
  spec.modelType = mts->str();
  for (const auto &kv : *obj)
    spec.config[kv.first.str()] = jsonText(kv.second);

  Fields fields(*obj, file, spec.modelType);
  auto build = [&]() -> Error {
    switch (*family) {
    case Family::Llama:
      return buildLlama(fields, spec, file);
    case Family::Afm7:
      return buildAfm7(fields, spec, file);
    case Family::PtMoe:
      return buildPtMoe(fields, spec, file);
    case Family::Mixtral:
      return buildMixtral(fields, spec, file);
    case Family::Qwen2Moe:
      return buildQwen2Moe(fields, spec, file);
    }
    return Error::success();
  };
  if (Error e = build())
    return e;
  return spec;
}

Expected<ModelSpec> readModelConfig(StringRef configPath) {
  auto buf = llvm::MemoryBuffer::getFile(configPath, /*IsText=*/true);
  if (!buf)
    return makeError(configPath + ": cannot open: " + buf.getError().message());
  return parseModelConfig((*buf)->getBuffer(), configPath);
}

Error checkWeights(const ModelSpec &spec, const WeightSet &weights,
                   std::vector<std::string> &warnings) {
  std::vector<std::string> errors;
  llvm::StringSet<> expected;
  for (const ExpectedTensor &e : spec.expected) {
    expected.insert(e.name);
    std::string why = e.why.empty() ? "" : " from " + e.why;
    const TensorInfo *t = weights.lookup(e.name);
    if (!t) {
      errors.push_back(e.name + ": missing (expected " + formatShape(e.shape) + why +
                       ") in " + weights.description().str());
      continue;
    }
    // WeightSet only admits the dtypes fmc computes with; this switch keeps
    // that contract visible if DType ever grows.
    switch (t->dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      break;
    }
    if (t->shape != e.shape) {
      std::string because = e.why.empty() ? "" : " (" + e.why + ")";
      errors.push_back(e.name + ": shape " + formatShape(t->shape) + ", expected " +
                       formatShape(e.shape) + because + " in " +
                       weights.displayName(*t).str());
    }
  }
  for (const TensorInfo *t : weights.all())
    if (!expected.contains(t->name))
      warnings.push_back("unused tensor '" + t->name + "' in " +
                         weights.displayName(*t).str());
  if (errors.empty())
    return Error::success();
  std::string all;
  for (size_t i = 0; i < errors.size(); ++i)
    all += (i ? "\n" : "") + errors[i];
  return makeError(all);
}

} // namespace fm::import
