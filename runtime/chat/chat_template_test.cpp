// Unit tests of the chat template engine: what python3-jinja2 gives for
// small templates (worked out with it by hand), errors with line numbers,
// and the limits that keep a hostile template from running away.
#include "fm/chat_template.h"

#include <gtest/gtest.h>

namespace {

std::string render(const std::string &src, const std::string &json = "{}") {
  auto t = fm::ChatTemplate::compile(src);
  EXPECT_TRUE(t.isOk()) << t.message();
  if (!t)
    return "";
  auto out = t->renderJson(json);
  EXPECT_TRUE(out.isOk()) << out.message();
  return out ? *out : "";
}

std::string error(const std::string &src, const std::string &json = "{}") {
  auto t = fm::ChatTemplate::compile(src, "tpl");
  if (!t)
    return t.message();
  fm::ChatTemplateOptions o;
  o.maxSteps = 200'000; // keeps the runaway cases below short
  auto out = t->renderJson(json, o);
  return out ? "(no error)" : out.message();
}

TEST(ChatTemplate, WhitespaceControlAsTransformersSetsIt) {
  // trim_blocks + lstrip_blocks, and one trailing newline dropped.
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\n  y\n"), "  x\n  y");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(render("a\n{{ 1 }}\nb"), "a\n1\nb");
  EXPECT_EQ(render("a {#- c -#} b"), "ab");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
}

TEST(ChatTemplate, ScopesLikeJinja) {
  // A set inside a loop stays in its iteration; namespace carries out.
  EXPECT_EQ(render("{% for i in range(3) %}{% if i == 1 %}{% set x = 5 %}{% endif %}"
                   "[{{ x }}]{% endfor %}{{ x }}"),
            "[][5][]");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2] %}"
                   "{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "3");
}

TEST(ChatTemplate, PythonPrinting) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.0] }}"), "[1, 'a', None, True, 1.0]");
  EXPECT_EQ(render("{{ 1e-5 }} {{ 123456789012345678.0 }} {{ 0.5 }}"),
            "1e-05 1.2345678901234568e+17 0.5");
  EXPECT_EQ(render("{{ x.y }}", R"({"x": {}})"), "");
}

TEST(ChatTemplate, MessagesApi) {
  auto t = fm::ChatTemplate::compile(
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}"
      "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}");
  ASSERT_TRUE(t.isOk());
  fm::ChatTemplateOptions o;
  o.bosToken = "<s>";
  auto out = t->render({{"user", " hi "}}, o);
  ASSERT_TRUE(out.isOk()) << out.message();
  EXPECT_EQ(*out, "<s><user>hi<assistant>");
}

TEST(ChatTemplate, ErrorsNameTheLine) {
  EXPECT_EQ(error("a\n{% if x %}\nb"),
            "tpl line 3: unexpected end of template, expected 'elif'");
  EXPECT_EQ(error("{% include 'x' %}"),
            "tpl line 1: the 'include' statement is not supported by fmc's chat templates");
  EXPECT_EQ(error("\n\n{{ raise_exception('roles must alternate') }}"),
            "tpl line 3: roles must alternate");
  EXPECT_EQ(error("{{ x.y.z }}", R"({"x": {}})"),
            "tpl line 1: 'dict object' has no attribute 'y'");
  EXPECT_EQ(error("{{ 'a' + 1 }}"),
            "tpl line 1: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(error("{{ 1 "), "tpl line 1: unexpected end of template, expected '}}'");
}

TEST(ChatTemplate, HostileTemplatesStop) {
  EXPECT_NE(error("{% for i in range(1000000000) %}{% endfor %}").find("too long"),
            std::string::npos);
  EXPECT_NE(error("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}")
                .find("runs too long"),
            std::string::npos);
  EXPECT_NE(error("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").find("nest deeper"),
            std::string::npos);
  EXPECT_NE(error("{{ 'x' * 1000000000000 }}").find("output limit"), std::string::npos);
}

} // namespace
