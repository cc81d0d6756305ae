// ConfigReader and SpecBuilder (ConfigReader.h): the field reader and the
// spec builder every family's config reader shares.
#include "import/ConfigReader.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

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

const json::Value *ConfigReader::get(StringRef key) const {
  const json::Value *v = obj_.get(key);
  return v && v->kind() != json::Value::Null ? v : nullptr;
}

Error ConfigReader::take() {
  std::string all;
  for (size_t i = 0; i < errors_.size(); ++i)
    all += (i ? "\n" : "") + errors_[i];
  errors_.clear();
  return makeError(all);
}

void ConfigReader::missing(StringRef key, StringRef when) {
  if (when.empty())
    error("missing field '" + key + "' (required for model_type '" + modelType_ + "')");
  else
    error("missing field '" + key + "' (required for model_type '" + modelType_ + "' " +
          when + ")");
}

int64_t ConfigReader::reqInt(StringRef key, int64_t min, StringRef when) {
  if (!get(key)) {
    missing(key, when);
    return 0;
  }
  return optInt(key, 0, min);
}

int64_t ConfigReader::optInt(StringRef key, int64_t def, int64_t min) {
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

double ConfigReader::optNumber(StringRef key, double def) {
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

bool ConfigReader::optBool(StringRef key, bool def) {
  const json::Value *v = get(key);
  if (!v)
    return def;
  if (auto b = v->getAsBoolean())
    return *b;
  error("field '" + key + "' must be true or false, got " + brief(*v));
  return def;
}

std::optional<std::string> ConfigReader::optString(StringRef key) {
  const json::Value *v = get(key);
  if (!v)
    return std::nullopt;
  if (auto s = v->getAsString())
    return s->str();
  error("field '" + key + "' must be a string, got " + brief(*v));
  return std::nullopt;
}

size_t ConfigReader::optChoice(StringRef key, llvm::ArrayRef<StringRef> choices, size_t def) {
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

const json::Array *ConfigReader::optArray(StringRef key) {
  const json::Value *v = get(key);
  if (!v)
    return nullptr;
  if (const json::Array *a = v->getAsArray())
    return a;
  error("field '" + key + "' must be a list, got " + brief(*v));
  return nullptr;
}

void ConfigReader::requireSilu() {
  if (auto act = optString("hidden_act"); act && *act != "silu" && *act != "swish")
    error("hidden_act '" + *act + "' is not supported (fmc implements SwiGLU with silu)");
}

void ConfigReader::requireFalse(StringRef key, StringRef why) {
  if (optBool(key, false))
    error(key + "=true is not supported (" + why + ")");
}

double ConfigReader::ropeTheta(double def, bool paramsReplaceTheta) {
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

std::string SpecBuilder::expect(std::string name, std::vector<int64_t> shape, std::string why) {
  spec_.expected.push_back({name, std::move(shape), std::move(why)});
  return name;
}

void SpecBuilder::norm(std::string &slot, std::string name, int64_t hidden, StringRef hiddenKey) {
  slot = expect(std::move(name), {hidden}, kv(hiddenKey, hidden));
}

void SpecBuilder::projections(AttentionSpec &a, const std::string &p, int64_t hidden, bool bias,
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

void SpecBuilder::swiglu(std::string &gate, std::string &up, std::string &down, const std::string &p,
            StringRef gateName, StringRef upName, StringRef downName, int64_t inter,
            StringRef interKey, int64_t hidden, StringRef hiddenKey) {
  std::string inWhy = kv(interKey, inter) + ", " + kv(hiddenKey, hidden);
  std::string outWhy = kv(hiddenKey, hidden) + ", " + kv(interKey, inter);
  gate = expect(p + gateName.str(), {inter, hidden}, inWhy);
  up = expect(p + upName.str(), {inter, hidden}, inWhy);
  down = expect(p + downName.str(), {hidden, inter}, outWhy);
}

void SpecBuilder::experts(FfnSpec &f, const std::string &router, StringRef expertsKey,
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

} // namespace fm::import
