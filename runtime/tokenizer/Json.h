// RapidJSON helpers for the tokenizer.json / tokenizer_config.json readers:
// typed field access whose errors name the file and the field path.
#pragma once

#include "fm/status.h"

#include <rapidjson/document.h>

#include <cstdint>
#include <string>

namespace fm::tok {

using JValue = rapidjson::Value;

/// A field path in a file, for messages: "tokenizer.json: model.merges[3]".
struct JPath {
  std::string file;
  std::string path;

  JPath operator/(const char *key) const {
    return {file, path.empty() ? std::string(key) : path + "." + key};
  }
  JPath operator[](size_t index) const {
    return {file, path + "[" + std::to_string(index) + "]"};
  }
  std::string str() const { return path.empty() ? file : file + ": " + path; }
  Status error(const std::string &what) const {
    return Status::error(str() + ": " + what);
  }
};

inline const char *jsonTypeName(const JValue &v) {
  switch (v.GetType()) {
  case rapidjson::kNullType:
    return "null";
  case rapidjson::kFalseType:
  case rapidjson::kTrueType:
    return "a boolean";
  case rapidjson::kObjectType:
    return "an object";
  case rapidjson::kArrayType:
    return "an array";
  case rapidjson::kStringType:
    return "a string";
  case rapidjson::kNumberType:
    return "a number";
  }
  return "?";
}

/// The member `key` of `obj`, or null when absent.
inline const JValue *jmember(const JValue &obj, const char *key) {
  if (!obj.IsObject())
    return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

inline Status jstring(const JValue &obj, const char *key, const JPath &at,
                      std::string *out, bool required) {
  const JValue *v = jmember(obj, key);
  if (!v || v->IsNull()) {
    if (required)
      return (at / key).error("missing (a string is required)");
    return Status::ok();
  }
  if (!v->IsString())
    return (at / key).error(std::string("must be a string, not ") +
                            jsonTypeName(*v));
  out->assign(v->GetString(), v->GetStringLength());
  return Status::ok();
}

inline Status jbool(const JValue &obj, const char *key, const JPath &at,
                    bool *out) {
  const JValue *v = jmember(obj, key);
  if (!v || v->IsNull())
    return Status::ok();
  if (!v->IsBool())
    return (at / key).error(std::string("must be true or false, not ") +
                            jsonTypeName(*v));
  *out = v->GetBool();
  return Status::ok();
}

inline Status jint(const JValue &obj, const char *key, const JPath &at,
                   int64_t *out, int64_t lo, int64_t hi) {
  const JValue *v = jmember(obj, key);
  if (!v || v->IsNull())
    return Status::ok();
  if (!v->IsInt64())
    return (at / key).error(std::string("must be an integer, not ") +
                            jsonTypeName(*v));
  int64_t x = v->GetInt64();
  if (x < lo || x > hi)
    return (at / key).error(std::to_string(x) + " is out of range [" +
                            std::to_string(lo) + ", " + std::to_string(hi) +
                            "]");
  *out = x;
  return Status::ok();
}

/// The "type" string of a component object.
inline Status jtype(const JValue &obj, const JPath &at, std::string *out) {
  if (!obj.IsObject())
    return at.error(std::string("must be an object, not ") +
                    jsonTypeName(obj));
  return jstring(obj, "type", at, out, true);
}

/// A "pattern": {"String": "..."} or {"Regex": "..."}; sets exactly one.
inline Status readPattern(const JValue &json, const JPath &at, std::string *literal,
                   std::string *regex, bool *isRegex) {
  const JValue *p = jmember(json, "pattern");
  JPath pat = at / "pattern";
  if (!p)
    return pat.error("missing (an object with \"String\" or \"Regex\")");
  if (p->IsString()) { // some writers put a bare string
    literal->assign(p->GetString(), p->GetStringLength());
    *isRegex = false;
    return Status::ok();
  }
  if (const JValue *s = jmember(*p, "String")) {
    if (!s->IsString())
      return (pat / "String").error("must be a string");
    literal->assign(s->GetString(), s->GetStringLength());
    *isRegex = false;
    return Status::ok();
  }
  if (const JValue *r = jmember(*p, "Regex")) {
    if (!r->IsString())
      return (pat / "Regex").error("must be a string");
    regex->assign(r->GetString(), r->GetStringLength());
    *isRegex = true;
    return Status::ok();
  }
  return pat.error("must have \"String\" or \"Regex\"");
}

} // namespace fm::tok
