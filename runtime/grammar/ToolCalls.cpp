// fm::parseTools: an OpenAI-style tools list as the JSON Schema of one call,
// {"name": <one of the tools>, "arguments": <that tool's parameters>}.
#include "fm/guided.h"

#include "grammar/Json.h"

#include <cstdio>
#include <set>

namespace fm {

namespace {

using grammar::JsonValue;

void writeString(const std::string &s, std::string &out) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += '"';
}

// Writes `v` as JSON. Inside a schema (`schema`), a "$ref" keyword that points into the
// document ("#...") is moved under `refBase`, where the tool's parameters now live; values
// that are data, not schemas (const, enum, default, examples), are written as they are.
void write(const JsonValue &v, std::string &out, const std::string &refBase, bool schema) {
  switch (v.type) {
  case JsonValue::Null:
    out += "null";
    return;
  case JsonValue::Bool:
    out += v.boolean ? "true" : "false";
    return;
  case JsonValue::Number:
    out += v.text;
    return;
  case JsonValue::String:
    writeString(v.text, out);
    return;
  case JsonValue::Array:
    out += '[';
    for (size_t i = 0; i < v.items.size(); ++i) {
      if (i)
        out += ',';
      write(v.items[i], out, refBase, schema);
    }
    out += ']';
    return;
  case JsonValue::Object:
    out += '{';
    for (size_t i = 0; i < v.members.size(); ++i) {
      const auto &[key, value] = v.members[i];
      if (i)
        out += ',';
      writeString(key, out);
      out += ':';
      if (schema && key == "$ref" && value.type == JsonValue::String && !value.text.empty() &&
          value.text[0] == '#') {
        writeString(refBase + value.text.substr(1), out);
        continue;
      }
      const bool data = key == "const" || key == "enum" || key == "default" || key == "examples";
      write(value, out, refBase, schema && !data);
    }
    out += '}';
    return;
  }
}

} // namespace

Expected<ToolSet> parseTools(std::string_view toolsJson, const std::string &what) {
  auto doc = grammar::parseJson(toolsJson, what);
  if (!doc)
    return doc.status();
  auto err = [&](const std::string &ptr, const std::string &msg) {
    return Status::error(what + ": " + (ptr.empty() ? std::string("(root)") : ptr) + ": " + msg);
  };
  const JsonValue *list = &*doc;
  std::string base;
  if (list->type == JsonValue::Object) { // a request body: {"tools": [...], ...}
    list = doc->get("tools");
    base = "/tools";
    if (!list)
      return err("", "expected a list of tools (or an object with \"tools\")");
  }
  if (list->type != JsonValue::Array)
    return err(base, "expected a list of tools");
  if (list->items.empty())
    return err(base, "the list of tools is empty");
  ToolSet set;
  std::set<std::string> seen;
  std::string defs, branches;
  for (size_t i = 0; i < list->items.size(); ++i) {
    const JsonValue &item = list->items[i];
    std::string ptr = base + "/" + std::to_string(i);
    if (item.type != JsonValue::Object)
      return err(ptr, "expected a tool object");
    const JsonValue *fn = &item;
    if (const JsonValue *type = item.get("type")) {
      if (type->type != JsonValue::String || type->text != "function")
        return err(ptr + "/type", "only \"function\" tools are supported");
    }
    if (const JsonValue *f = item.get("function")) {
      if (f->type != JsonValue::Object)
        return err(ptr + "/function", "expected an object");
      fn = f;
      ptr += "/function";
    } else if (item.get("type")) {
      return err(ptr, "a \"function\" tool needs a \"function\" object");
    }
    const JsonValue *name = fn->get("name");
    if (!name)
      return err(ptr, "a tool needs a \"name\"");
    if (name->type != JsonValue::String || name->text.empty())
      return err(ptr + "/name", "expected a non-empty string");
    if (!seen.insert(name->text).second)
      return err(ptr + "/name", "tool '" + name->text + "' is listed twice");
    set.names.push_back(name->text);
    const JsonValue *params = fn->get("parameters");
    if (params && params->type != JsonValue::Object && params->type != JsonValue::Bool)
      return err(ptr + "/parameters", "expected a JSON Schema (an object or a boolean)");
    const std::string def = "tool" + std::to_string(i);
    defs += (defs.empty() ? "" : ",") + std::string("\"") + def + "\":";
    if (params)
      write(*params, defs, "#/$defs/" + def, true);
    else
      defs += "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";
    std::string branch = "{\"type\":\"object\",\"properties\":{\"name\":{\"const\":";
    writeString(name->text, branch);
    branch += "},\"arguments\":{\"$ref\":\"#/$defs/" + def +
              "\"}},\"required\":[\"name\",\"arguments\"],\"additionalProperties\":false}";
    branches += (branches.empty() ? "" : ",") + branch;
    set.parameterPointers.push_back(params ? ptr + "/parameters" : ptr);
  }
  set.callSchema = "{\"$defs\":{" + defs + "},\"anyOf\":[" + branches + "]}";
  return set;
}

std::string toolSchemaMessage(const ToolSet &tools, const std::string &what,
                              const std::string &message) {
  // "schema /$defs/tool3/properties/x: ..." -> "tools.json: /3/function/parameters/properties/x: ..."
  const std::string prefix = "schema /$defs/tool";
  if (message.compare(0, prefix.size(), prefix) != 0)
    return what + ": " + message;
  size_t i = prefix.size(), j = i;
  while (j < message.size() && message[j] >= '0' && message[j] <= '9')
    ++j;
  if (j == i)
    return what + ": " + message;
  size_t tool = std::stoul(message.substr(i, j - i));
  if (tool >= tools.parameterPointers.size())
    return what + ": " + message;
  return what + ": " + tools.parameterPointers[tool] + message.substr(j);
}

} // namespace fm
