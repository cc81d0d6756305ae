// Renders every (template, case) of chat_oracle.py's output with
// fm::ChatTemplate and compares byte for byte (an expected error must be an
// error too, with the same message for raise_exception).
//
//   chat_template_check ORACLE.json
#include "fm/chat_template.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace {

std::string escaped(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ORACLE.json\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  if (doc.HasParseError() || !doc.IsArray()) {
    std::fprintf(stderr, "%s: not the oracle's JSON\n", argv[1]);
    return 1;
  }
  std::map<std::string, std::pair<int, int>> perTemplate; // agree, total
  int failures = 0;
  for (const auto &e : doc.GetArray()) {
    std::string name = e["template"].GetString(), kase = e["case"].GetString();
    auto &count = perTemplate[name];
    ++count.second;
    fm::Expected<fm::ChatTemplate> t =
        fm::ChatTemplate::compile(e["source"].GetString(), name);
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    e["context"].Accept(w);
    fm::ChatTemplateOptions options;
    options.now = 1722002709; // the oracle's clock
    fm::Expected<std::string> got =
        t ? t->renderJson(buf.GetString(), options) : fm::Expected<std::string>(t.status());
    bool ok;
    std::string want;
    if (e.HasMember("output")) {
      want = e["output"].GetString();
      ok = got && *got == want;
    } else {
      want = std::string("error: ") + e["error"].GetString();
      ok = !got && got.message().find(e["error"].GetString()) != std::string::npos;
    }
    if (ok) {
      ++count.first;
      continue;
    }
    ++failures;
    std::fprintf(stderr, "%s / %s differs:\n  python: %s\n  fmc:    %s\n",
                 name.c_str(), kase.c_str(), escaped(want).c_str(),
                 got ? escaped(*got).c_str() : ("error: " + got.message()).c_str());
  }
  for (const auto &kv : perTemplate)
    std::printf("chat template %-10s %d/%d renders equal python3-jinja2's\n",
                kv.first.c_str(), kv.second.first, kv.second.second);
  return failures ? 1 : 0;
}
