// A parsed chat template: Jinja2's lexer (with HF's trim_blocks and
// lstrip_blocks), and the syntax tree of the subset chat templates use.
#pragma once

#include "chat/Value.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fm::chat {

/// A template that cannot be parsed or rendered; `line` is 1-based (0: none).
struct TemplateError : std::runtime_error {
  TemplateError(const std::string &what, int line)
      : std::runtime_error(what), line(line) {}
  int line;
};

struct Token {
  enum class Kind { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name,
                    String, Int, Float, Op, End };
  Kind kind;
  std::string text; // Data, Name, String (unescaped), Op
  int64_t i = 0;
  double f = 0;
  int line = 1;
};

/// Jinja2's Lexer with trim_blocks=True, lstrip_blocks=True and
/// keep_trailing_newline=False, as transformers compiles chat templates.
std::vector<Token> lex(const std::string &source);

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  enum class Kind { Const, Name, Attr, Item, Slice, Call, Filter, Test, Unary,
                    Binary, Compare, And, Or, Not, Cond, List, Tuple, Dict };
  Kind kind;
  int line = 0;
  Value value;      // Const
  std::string name; // Name, Attr, Filter, Test, Unary/Binary operator
  std::vector<ExprPtr> kids;
  std::vector<std::string> ops; // Compare: one per kids[1..]
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false; // Test: "is not"
};

struct Node;
using NodeList = std::vector<std::shared_ptr<const Node>>;

struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break,
                    Continue, Scope };
  Kind kind;
  int line = 0;
  std::string text;                 // Text
  ExprPtr expr;                     // Output, For (iterable), Set (value)
  std::vector<ExprPtr> conditions;  // If: one per branch (null: else)
  std::vector<NodeList> branches;   // If
  std::vector<std::string> targets; // For/Set names; Set "ns.attr" is {ns, attr}
  bool attributeTarget = false;     // Set ns.attr
  ExprPtr filter;                   // For ... if filter
  NodeList body, elseBody;          // For, SetBlock, Macro, Scope
  std::string name;                 // Macro
  std::vector<std::string> params;  // Macro
  std::vector<ExprPtr> defaults;    // Macro (null: required)
};

/// Parses `source` into its top-level nodes.
NodeList parse(const std::string &source);

} // namespace fm::chat
