// PEFT LoRA adapter directories (PeftAdapter.h).
#include "import/weights/PeftAdapter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>

using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {
namespace {

constexpr StringRef kPrefix = "base_model.model.";
constexpr StringRef kSuffixA = ".lora_A.weight";
constexpr StringRef kSuffixB = ".lora_B.weight";
// Longer patterns, and deeper nesting, are not module-name patterns; both
// bound PCRE2's compile-time work (the fuzzer feeds it anything).
constexpr size_t kMaxPatternBytes = 1024;
constexpr int kMaxPatternNesting = 32;
constexpr uint32_t kMatchLimit = 100000;
constexpr int64_t kMaxRank = 4096;

Error makeError(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string brief(const json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  os.flush();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

/// A compiled PCRE2 pattern with its match data.
class Regex {
public:
  /// `pattern` whole (fullmatch) when `full`, else anchored at the start.
  static Expected<std::unique_ptr<Regex>> compile(const std::string &pattern,
                                                  bool full,
                                                  const Twine &where) {
    int depth = 0, maxDepth = 0;
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] == '\\') {
        ++i;
        continue;
      }
      depth += pattern[i] == '(' ? 1 : pattern[i] == ')' ? -1 : 0;
      maxDepth = std::max(maxDepth, depth);
    }
    if (pattern.size() > kMaxPatternBytes || maxDepth > kMaxPatternNesting)
      return makeError(where + ": the pattern is too long or nests too deep "
                               "for a module-name pattern");
    int code = 0;
    PCRE2_SIZE offset = 0;
    uint32_t options = PCRE2_ANCHORED | (full ? PCRE2_ENDANCHORED : 0);
    pcre2_code *re =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                      pattern.size(), options, &code, &offset, nullptr);
    if (!re) {
      PCRE2_UCHAR text[256];
      pcre2_get_error_message(code, text, sizeof(text));
      return makeError(where + ": '" + pattern + "' is not a valid regex (" +
                       reinterpret_cast<const char *>(text) + " at offset " +
                       Twine(uint64_t(offset)) + ")");
    }
    std::unique_ptr<Regex> r(new Regex());
    r->code_ = re;
    r->data_ = pcre2_match_data_create_from_pattern(re, nullptr);
    r->context_ = pcre2_match_context_create(nullptr);
    if (!r->data_ || !r->context_)
      return makeError(where + ": out of memory compiling '" + pattern + "'");
    pcre2_set_match_limit(r->context_, kMatchLimit);
    pcre2_set_depth_limit(r->context_, kMatchLimit);
    r->pattern_ = pattern;
    r->where_ = where.str();
    return std::move(r);
  }
  ~Regex() {
    pcre2_match_context_free(context_);
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }

  /// Whether `s` matches; `group1` (optional) gets capture group 1.
  Expected<bool> match(StringRef s, std::string *group1 = nullptr) const {
    int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()),
                         s.size(), 0, 0, data_, context_);
    if (rc == PCRE2_ERROR_NOMATCH)
      return false;
    if (rc < 0)
      return makeError(where_ + ": matching '" + pattern_ + "' against '" + s +
                       "' takes too long (a pattern that backtracks "
                       "exponentially)");
    if (group1) {
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(data_);
      group1->clear();
      if (rc > 1 && ov[2] != PCRE2_UNSET)
        *group1 = s.substr(ov[2], ov[3] - ov[2]).str();
    }
    return true;
  }

private:
  Regex() = default;
  pcre2_code *code_ = nullptr;
  pcre2_match_data *data_ = nullptr;
  pcre2_match_context *context_ = nullptr;
  std::string pattern_, where_;
};

/// PEFT's module selection (target_modules, exclude_modules,
/// layers_to_transform / layers_pattern).
struct Selection {
  std::unique_ptr<Regex> targetRegex;  // target_modules as a string
  std::vector<std::string> targetList; // ... as a list
  std::unique_ptr<Regex> excludeRegex;
  std::vector<std::string> excludeList;
  std::optional<std::set<int64_t>> layers; // layers_to_transform
  std::vector<std::unique_ptr<Regex>> layerPatterns; // capture the index
  std::string describe;                    // "target_modules [...]"

  static bool inList(StringRef key, const std::vector<std::string> &list) {
    for (const std::string &t : list)
      if (key == t || key.ends_with("." + t))
        return true;
    return false;
  }

  Expected<bool> selects(StringRef key) const {
    if (excludeRegex) {
      auto m = excludeRegex->match(key);
      if (!m)
        return m.takeError();
      if (*m)
        return false;
    } else if (inList(key, excludeList)) {
      return false;
    }
    if (targetRegex)
      return targetRegex->match(key); // layers_to_transform is for lists
    if (!inList(key, targetList))
      return false;
    if (!layers)
      return true;
    for (const auto &p : layerPatterns) {
      std::string index;
      auto m = p->match(key, &index);
      if (!m)
        return m.takeError();
      if (*m)
        return !index.empty() &&
               layers->count(std::strtoll(index.c_str(), nullptr, 10)) > 0;
    }
    return false;
  }
};

/// rank_pattern / alpha_pattern: keys in file order.
struct Pattern {
  std::unique_ptr<Regex> regex;
  double value = 0;
};

class ConfigParser {
public:
  ConfigParser(const json::Object &o, StringRef file) : o_(o), file_(file) {}

  Error error(StringRef key, const Twine &what) const {
    return makeError(file_ + ": '" + key + "' " + what);
  }
  const json::Value *get(StringRef key) const {
    const json::Value *v = o_.get(key);
    return v && v->kind() != json::Value::Null ? v : nullptr;
  }
  Expected<bool> flag(StringRef key, bool dflt) const {
    const json::Value *v = get(key);
    if (!v)
      return dflt;
    if (auto b = v->getAsBoolean())
      return *b;
    return error(key, "must be true or false (got " + brief(*v) + ")");
  }
  Expected<double> number(StringRef key, bool required) const {
    const json::Value *v = get(key);
    if (!v) {
      if (required)
        return makeError(file_ + ": '" + key + "' is missing");
      return 0.0;
    }
    auto d = v->getAsNumber();
    if (!d || !std::isfinite(*d))
      return error(key, "must be a number (got " + brief(*v) + ")");
    return *d;
  }
  /// A string, or a list of strings; null or absent gives neither.
  Error stringOrList(StringRef key, std::optional<std::string> &str,
                     std::vector<std::string> &list, bool &present) const {
    present = false;
    const json::Value *v = get(key);
    if (!v)
      return Error::success();
    present = true;
    if (auto s = v->getAsString()) {
      str = s->str();
      return Error::success();
    }
    const json::Array *a = v->getAsArray();
    if (!a)
      return error(key, "must be a string (a regex) or a list of module names "
                        "(got " + brief(*v) + ")");
    for (const json::Value &e : *a) {
      auto s = e.getAsString();
      if (!s)
        return error(key, "must list module names as strings (got " +
                              brief(e) + ")");
      list.push_back(s->str());
    }
    return Error::success();
  }
  Error patterns(StringRef key, bool integers, std::vector<Pattern> &out) const {
    const json::Value *v = get(key);
    if (!v)
      return Error::success();
    const json::Object *obj = v->getAsObject();
    if (!obj)
      return error(key, "must be an object of pattern: value (got " + brief(*v) +
                            ")");
    // llvm::json::Object does not keep the file's order, which PEFT's
    // first-match rule depends on: take the keys in the order of the text.
    std::vector<std::pair<size_t, std::string>> keys;
    for (const auto &kv : *obj)
      keys.emplace_back(order(key, kv.first.str()), kv.first.str());
    std::sort(keys.begin(), keys.end());
    for (const auto &[pos, k] : keys) {
      const json::Value &val = *obj->get(k);
      auto d = val.getAsNumber();
      if (!d || !std::isfinite(*d) ||
          (integers && (*d < 1 || *d > kMaxRank || *d != std::floor(*d))))
        return error(key, "'" + k + "' must be " +
                              (integers ? "a rank in [1, 4096]" : "a number") +
                              " (got " + brief(val) + ")");
      Pattern p;
      auto re = Regex::compile("(.*\\.)?(" + k + ")$", false,
                               file_ + ": '" + key + "' key '" + k + "'");
      if (!re)
        return re.takeError();
      p.regex = std::move(*re);
      p.value = *d;
      out.push_back(std::move(p));
    }
    return Error::success();
  }
  void setText(StringRef text) { text_ = text; }

private:
  // Where the key `k` of object `field` first appears in the text (its
  // JSON-quoted spelling after the field's name), for file order.
  size_t order(StringRef field, const std::string &k) const {
    const size_t start = text_.find("\"" + field.str() + "\"");
    std::string quotedKey;
    llvm::raw_string_ostream os(quotedKey);
    os << json::Value(k);
    os.flush();
    const size_t at = text_.find(quotedKey, start == StringRef::npos ? 0 : start);
    return at == StringRef::npos ? ~size_t(0) : at;
  }

  const json::Object &o_;
  std::string file_;
  StringRef text_;
};

Expected<double> firstMatch(const std::vector<Pattern> &ps, StringRef key,
                            double dflt) {
  for (const Pattern &p : ps) {
    auto m = p.regex->match(key);
    if (!m)
      return m.takeError();
    if (*m)
      return p.value;
  }
  return dflt;
}

/// A safetensors file as a WeightSource (for readF32).
class FileSource final : public WeightSource {
public:
  explicit FileSource(const SafeTensorsFile &f) : f_(f) {}
  const TensorInfo *lookup(StringRef name) const override {
    return f_.lookup(name);
  }
  llvm::ArrayRef<uint8_t> data(const TensorInfo &t) const override {
    return f_.data(t);
  }
  StringRef description() const override { return f_.path(); }

private:
  const SafeTensorsFile &f_;
};

/// "q_proj, k_proj, ..." of the base: the distinct last components of its
/// projections, in order.
std::string projectionKinds(const AdapterBase &base) {
  std::vector<std::string> kinds;
  std::set<std::string> seen;
  for (const BaseProjection &p : base.projections) {
    StringRef module = StringRef(p.weight).drop_back(strlen(".weight"));
    std::string last =
        (module.contains('.') ? module.rsplit('.').second : module).str();
    if (seen.insert(last).second)
      kinds.push_back(last);
  }
  std::string s;
  for (const std::string &k : kinds)
    s += (s.empty() ? "" : ", ") + k;
  return s.empty() ? "none" : s;
}

std::string shapeOf(const TensorInfo &t) { return formatShape(t.shape); }

} // namespace

Expected<PeftAdapter> parsePeftAdapter(StringRef configText, StringRef configName,
                                       const SafeTensorsFile &tensors,
                                       const AdapterBase &base) {
  const std::string prefix = (configName + ": ").str();
  auto parsed = parseJson(configText, prefix);
  if (!parsed)
    return parsed.takeError();
  const json::Object *o = parsed->getAsObject();
  if (!o)
    return makeError(configName + ": not a JSON object (got " + brief(*parsed) +
                     ")");
  ConfigParser c(*o, configName);
  c.setText(configText);
  PeftAdapter out;
  out.configJson = configText.str();

  // What fmc does not run, said plainly.
  if (const json::Value *v = c.get("peft_type")) {
    auto s = v->getAsString();
    if (!s || *s != "LORA")
      return c.error("peft_type", "is " + brief(*v) +
                                      ": only LoRA adapters (\"LORA\") are supported");
  }
  auto dora = c.flag("use_dora", false);
  if (!dora)
    return dora.takeError();
  if (*dora)
    return c.error("use_dora", "is true: DoRA adapters (a learned magnitude "
                               "per output) are not supported, only LoRA "
                               "(W + s·B·A)");
  if (const json::Value *v = c.get("bias")) {
    auto s = v->getAsString();
    if (!s || *s != "none")
      return c.error("bias", "is " + brief(*v) +
                                 ": adapters that train biases are not "
                                 "supported (\"none\" only)");
  }
  auto loraBias = c.flag("lora_bias", false);
  if (!loraBias)
    return loraBias.takeError();
  if (*loraBias)
    return c.error("lora_bias", "is true: a bias on lora_B is not supported");
  auto fanInFanOut = c.flag("fan_in_fan_out", false);
  if (!fanInFanOut)
    return fanInFanOut.takeError();
  if (*fanInFanOut)
    return c.error("fan_in_fan_out",
                   "is true: Conv1D-style (transposed) weights are not supported");
  for (StringRef key : {"modules_to_save", "target_parameters"}) {
    std::optional<std::string> str;
    std::vector<std::string> list;
    bool present = false;
    if (Error e = c.stringOrList(key, str, list, present))
      return std::move(e);
    if (str || !list.empty())
      return c.error(key, "is not empty: adapters that " +
                              Twine(key == "modules_to_save"
                                        ? "replace whole modules"
                                        : "target raw parameters") +
                              " are not supported");
  }

  auto r = c.number("r", true);
  if (!r)
    return r.takeError();
  if (*r < 1 || *r > kMaxRank || *r != std::floor(*r))
    return c.error("r", "must be a rank in [1, 4096] (got " +
                            brief(json::Value(*r)) + ")");
  out.r = int64_t(*r);
  auto alpha = c.number("lora_alpha", true);
  if (!alpha)
    return alpha.takeError();
  out.alpha = *alpha;
  auto rslora = c.flag("use_rslora", false);
  if (!rslora)
    return rslora.takeError();
  out.rslora = *rslora;
  if (const json::Value *v = c.get("base_model_name_or_path")) {
    auto s = v->getAsString();
    if (!s)
      return c.error("base_model_name_or_path",
                     "must be a string (got " + brief(*v) + ")");
    out.baseModelNameOrPath = s->str();
  }

  Selection sel;
  {
    std::optional<std::string> str;
    bool present = false;
    if (Error e = c.stringOrList("target_modules", str, sel.targetList, present))
      return std::move(e);
    if (!present)
      return makeError(configName +
                       ": 'target_modules' is missing or null (PEFT's "
                       "per-architecture default): name the modules");
    if (str) {
      auto re = Regex::compile(*str, true, configName + ": 'target_modules'");
      if (!re)
        return re.takeError();
      sel.targetRegex = std::move(*re);
      sel.describe = "target_modules '" + *str + "'";
    } else {
      sel.describe = "target_modules [";
      for (size_t i = 0; i < sel.targetList.size(); ++i)
        sel.describe += (i ? ", " : "") + sel.targetList[i];
      sel.describe += "]";
    }
    str.reset();
    if (Error e = c.stringOrList("exclude_modules", str, sel.excludeList, present))
      return std::move(e);
    if (str) {
      auto re = Regex::compile(*str, true, configName + ": 'exclude_modules'");
      if (!re)
        return re.takeError();
      sel.excludeRegex = std::move(*re);
    }
  }
  if (const json::Value *v = c.get("layers_to_transform")) {
    std::set<int64_t> layers;
    auto add = [&](const json::Value &e) -> Error {
      auto i = e.getAsInteger();
      if (!i || *i < 0)
        return c.error("layers_to_transform",
                       "must be a layer index or a list of them (got " +
                           brief(e) + ")");
      layers.insert(*i);
      return Error::success();
    };
    if (const json::Array *a = v->getAsArray()) {
      for (const json::Value &e : *a)
        if (Error err = add(e))
          return std::move(err);
    } else if (Error err = add(*v)) {
      return std::move(err);
    }
    sel.layers = std::move(layers);
    std::optional<std::string> str;
    std::vector<std::string> list;
    bool present = false;
    if (Error e = c.stringOrList("layers_pattern", str, list, present))
      return std::move(e);
    if (str)
      list.push_back(*str);
    std::vector<std::string> patterns;
    for (const std::string &p : list)
      patterns.push_back(".*\\." + p + "\\.(\\d+)\\.");
    if (patterns.empty())
      patterns.push_back(".*\\.[^.]*\\.(\\d+)\\.");
    for (const std::string &p : patterns) {
      auto re = Regex::compile(p, false, configName + ": 'layers_pattern'");
      if (!re)
        return re.takeError();
      sel.layerPatterns.push_back(std::move(*re));
    }
  }
  std::vector<Pattern> rankPattern, alphaPattern;
  if (Error e = c.patterns("rank_pattern", true, rankPattern))
    return std::move(e);
  if (Error e = c.patterns("alpha_pattern", false, alphaPattern))
    return std::move(e);

  // The tensors: every one a lora_A or lora_B of a projection of the base
  // that the config selects.
  const std::string file = tensors.path().str();
  llvm::StringMap<size_t> projectionIndex;
  for (size_t i = 0; i < base.projections.size(); ++i)
    projectionIndex[StringRef(base.projections[i].weight).drop_back(
        strlen(".weight"))] = i;
  struct Pair {
    const TensorInfo *a = nullptr, *b = nullptr;
  };
  std::map<size_t, Pair> pairs; // by projection index
  for (const TensorInfo &t : tensors.tensors()) {
    StringRef name = t.name;
    const std::string where = file + ": tensor '" + t.name + "'";
    if (name.contains("lora_magnitude_vector"))
      return makeError(where + " is a DoRA magnitude: DoRA adapters are not "
                               "supported");
    if (name.contains("lora_embedding_"))
      return makeError(where + " is a LoRA on an embedding: not supported "
                               "(adapters update the projections)");
    const bool isA = name.ends_with(kSuffixA), isB = name.ends_with(kSuffixB);
    if (!name.starts_with(kPrefix) || (!isA && !isB))
      return makeError(where + " is not a LoRA weight fmc reads (expected " +
                       kPrefix + "<module>" + kSuffixA + " or " + kSuffixB + ")");
    StringRef module =
        name.drop_front(kPrefix.size()).drop_back(kSuffixA.size());
    auto it = projectionIndex.find(module);
    if (it == projectionIndex.end())
      return makeError(where + " updates module '" + module + "', which the " +
                       base.family + " base " + base.name +
                       " does not have as a projection (its projections: " +
                       projectionKinds(base) + ")");
    auto selected = sel.selects(module);
    if (!selected)
      return selected.takeError();
    if (!*selected)
      return makeError(where + " updates module '" + module + "', which " +
                       configName + "'s " + sel.describe + " does not select");
    Pair &p = pairs[it->second];
    (isA ? p.a : p.b) = &t;
  }

  // Every selected projection has both matrices, of its rank and shape.
  FileSource source(tensors);
  for (size_t i = 0; i < base.projections.size(); ++i) {
    const BaseProjection &proj = base.projections[i];
    const std::string module =
        StringRef(proj.weight).drop_back(strlen(".weight")).str();
    auto selected = sel.selects(module);
    if (!selected)
      return selected.takeError();
    auto found = pairs.find(i);
    if (!*selected)
      continue;
    const std::string nameA = kPrefix.str() + module + kSuffixA.str();
    const std::string nameB = kPrefix.str() + module + kSuffixB.str();
    if (found == pairs.end())
      return makeError(file + " has no " + nameA + " or " + nameB + ", but " +
                       configName + "'s " + sel.describe + " selects module '" +
                       module + "'");
    const Pair &p = found->second;
    if (!p.b)
      return makeError(file + ": tensor '" + nameA + "' has no lora_B (" +
                       nameB + " is missing)");
    if (!p.a)
      return makeError(file + ": tensor '" + nameB + "' has no lora_A (" +
                       nameA + " is missing)");
    auto rank = firstMatch(rankPattern, module, double(out.r));
    if (!rank)
      return rank.takeError();
    auto alphaM = firstMatch(alphaPattern, module, out.alpha);
    if (!alphaM)
      return alphaM.takeError();
    const int64_t r = int64_t(*rank);
    if (p.a->shape.size() != 2 || p.a->shape[0] != r || p.a->shape[1] != proj.in)
      return makeError(file + ": tensor '" + nameA + "' has shape " +
                       shapeOf(*p.a) + ", expected [" + Twine(r) + ", " +
                       Twine(proj.in) + "] (rank " + Twine(r) +
                       (rankPattern.empty() ? " from 'r'" : " from 'r'/'rank_pattern'") +
                       ", and the " + Twine(proj.in) + " inputs of " +
                       proj.weight + ")");
    if (p.b->shape.size() != 2 || p.b->shape[0] != proj.out || p.b->shape[1] != r)
      return makeError(file + ": tensor '" + nameB + "' has shape " +
                       shapeOf(*p.b) + ", expected [" + Twine(proj.out) + ", " +
                       Twine(r) + "] (the " + Twine(proj.out) + " outputs of " +
                       proj.weight + ", and rank " + Twine(r) + ")");
    LoraWeights l;
    l.module = module;
    l.weight = proj.weight;
    l.rank = r;
    l.in = proj.in;
    l.out = proj.out;
    l.alpha = *alphaM;
    l.scale = out.rslora ? l.alpha / std::sqrt(double(r)) : l.alpha / double(r);
    readF32(source, *p.a, l.a);
    readF32(source, *p.b, l.b);
    for (const std::vector<float> *v : {&l.a, &l.b})
      for (float x : *v)
        if (!std::isfinite(x))
          return makeError(file + ": tensor '" + (v == &l.a ? nameA : nameB) +
                           "' holds a value that is not finite");
    out.loras.push_back(std::move(l));
  }
  if (out.loras.empty())
    return makeError(configName + "'s " + sel.describe +
                     " selects no projection of the " + base.family + " base " +
                     base.name + " (its projections: " + projectionKinds(base) +
                     ")");
  return out;
}

Expected<PeftAdapter> readPeftAdapter(StringRef dir, const AdapterBase &base) {
  if (!llvm::sys::fs::is_directory(dir))
    return makeError(dir + ": not a directory (a PEFT adapter directory holds "
                           "adapter_config.json and adapter_model.safetensors)");
  llvm::SmallString<256> configPath(dir), tensorsPath(dir);
  llvm::sys::path::append(configPath, "adapter_config.json");
  llvm::sys::path::append(tensorsPath, "adapter_model.safetensors");
  auto config = llvm::MemoryBuffer::getFile(configPath, /*IsText=*/true);
  if (!config)
    return makeError(configPath + ": cannot read: " + config.getError().message());
  if (!llvm::sys::fs::exists(tensorsPath)) {
    llvm::SmallString<256> bin(dir);
    llvm::sys::path::append(bin, "adapter_model.bin");
    if (llvm::sys::fs::exists(bin))
      return makeError(bin + ": PyTorch pickles are not read: save the adapter "
                             "with safe_serialization=True "
                             "(adapter_model.safetensors)");
    return makeError(tensorsPath + ": missing");
  }
  auto tensors = SafeTensorsFile::open(tensorsPath);
  if (!tensors)
    return tensors.takeError();
  auto adapter = parsePeftAdapter((*config)->getBuffer(), configPath.str(),
                                  *tensors, base);
  if (!adapter)
    return adapter.takeError();
  adapter->dir = dir.str();
  StringRef trimmed = dir.rtrim("/");
  adapter->name = llvm::sys::path::filename(trimmed).str();
  return adapter;
}

Expected<AdapterArg> parseAdapterArg(StringRef text, StringRef option) {
  AdapterArg out;
  out.path = text.str();
  const size_t colon = text.rfind(':');
  if (colon == StringRef::npos)
    return out;
  StringRef path = text.take_front(colon), scale = text.drop_front(colon + 1);
  double value = 0;
  if (!scale.empty() && !scale.getAsDouble(value) && std::isfinite(value)) {
    out.path = path.str();
    out.scale = value;
    return out;
  }
  if (llvm::sys::fs::exists(text))
    return out; // a ':' in the path itself
  return makeError(option + " '" + text + "': the scale after ':' ('" + scale +
                   "') is not a number");
}

} // namespace fm::import
