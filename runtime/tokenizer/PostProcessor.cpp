// The post-processors of tokenizer.json (HF tokenizers/src/processors/),
// single-sequence form.
#include "tokenizer/PostProcessor.h"

#include <map>
#include <string>

namespace fm::tok {
namespace {

/// The ids around the sequence: what TemplateProcessing's "single" and
/// Bert/Roberta's cls/sep amount to for one sequence.
class Wrap : public PostProcessor {
public:
  Wrap(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t> &ids) const override {
    if (!prefix_.empty())
      ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }

private:
  std::vector<int32_t> prefix_, suffix_;
};

class Nothing : public PostProcessor {
public:
  void process(std::vector<int32_t> &) const override {}
};

class Sequence : public PostProcessor {
public:
  explicit Sequence(std::vector<std::shared_ptr<const PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  void process(std::vector<int32_t> &ids) const override {
    for (const auto &p : parts_)
      p->process(ids);
  }

private:
  std::vector<std::shared_ptr<const PostProcessor>> parts_;
};

Status readIdPair(const JValue &json, const char *key, const JPath &at,
                  int32_t *id) {
  const JValue *v = jmember(json, key);
  JPath p = at / key;
  if (!v || !v->IsArray() || v->Size() != 2 || !(*v)[0].IsString() ||
      !(*v)[1].IsUint())
    return p.error("must be [\"token\", id]");
  *id = static_cast<int32_t>((*v)[1].GetUint());
  return Status::ok();
}

} // namespace

std::shared_ptr<const PostProcessor>
PostProcessor::wrap(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
  return std::make_shared<Wrap>(std::move(prefix), std::move(suffix));
}

Expected<std::shared_ptr<const PostProcessor>>
PostProcessor::fromJson(const JValue &json, const JPath &at) {
  std::string type;
  FM_RETURN_IF_ERROR(jtype(json, at, &type));
  using Ptr = std::shared_ptr<const PostProcessor>;
  if (type == "ByteLevel")
    return Ptr(std::make_shared<Nothing>());
  if (type == "TemplateProcessing") {
    // special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
    std::map<std::string, std::vector<int32_t>> specials;
    if (const JValue *st = jmember(json, "special_tokens")) {
      if (!st->IsObject())
        return (at / "special_tokens").error("must be an object");
      for (auto it = st->MemberBegin(); it != st->MemberEnd(); ++it) {
        JPath p = at / "special_tokens" / it->name.GetString();
        const JValue *ids = jmember(it->value, "ids");
        if (!ids || !ids->IsArray())
          return (p / "ids").error("must be an array of ids");
        std::vector<int32_t> v;
        for (rapidjson::SizeType i = 0; i < ids->Size(); ++i) {
          if (!(*ids)[i].IsUint() || (*ids)[i].GetUint() > 0x7FFFFFFFu)
            return (p / "ids")[i].error("must be a token id");
          v.push_back(static_cast<int32_t>((*ids)[i].GetUint()));
        }
        specials[it->name.GetString()] = std::move(v);
      }
    }
    const JValue *single = jmember(json, "single");
    JPath sp = at / "single";
    if (!single || !single->IsArray())
      return sp.error("must be an array");
    std::vector<int32_t> prefix, suffix;
    bool seenSequence = false;
    for (rapidjson::SizeType i = 0; i < single->Size(); ++i) {
      const JValue &item = (*single)[i];
      if (const JValue *s = jmember(item, "SpecialToken")) {
        std::string name;
        FM_RETURN_IF_ERROR(jstring(*s, "id", sp[i] / "SpecialToken", &name, true));
        auto found = specials.find(name);
        if (found == specials.end())
          return (sp[i] / "SpecialToken" / "id")
              .error("'" + name + "' is not in " + (at / "special_tokens").path);
        auto &dst = seenSequence ? suffix : prefix;
        dst.insert(dst.end(), found->second.begin(), found->second.end());
      } else if (jmember(item, "Sequence")) {
        if (seenSequence)
          return sp[i].error("a second Sequence in a single template");
        seenSequence = true;
      } else {
        return sp[i].error("must be {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
    }
    if (!seenSequence)
      return sp.error("has no Sequence");
    return Ptr(std::make_shared<Wrap>(std::move(prefix), std::move(suffix)));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    int32_t cls, sep;
    FM_RETURN_IF_ERROR(readIdPair(json, "cls", at, &cls));
    FM_RETURN_IF_ERROR(readIdPair(json, "sep", at, &sep));
    return Ptr(std::make_shared<Wrap>(std::vector<int32_t>{cls},
                                      std::vector<int32_t>{sep}));
  }
  if (type == "Sequence") {
    const JValue *list = jmember(json, "processors");
    if (!list || !list->IsArray())
      return (at / "processors").error("must be an array");
    std::vector<Ptr> parts;
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      auto part = fromJson((*list)[i], (at / "processors")[i]);
      if (!part)
        return part.status();
      parts.push_back(std::move(*part));
    }
    return Ptr(std::make_shared<Sequence>(std::move(parts)));
  }
  return (at / "type")
      .error("post-processor '" + type +
             "' is not supported (TemplateProcessing, BertProcessing, "
             "RobertaProcessing, ByteLevel, Sequence are)");
}

} // namespace fm::tok
