// Jinja2's parser (jinja2/parser.py) for the statements and expressions chat
// templates use; anything else is a TemplateError naming the line.
#include "chat/Template.h"

namespace fm::chat {
namespace {

using K = Token::Kind;

struct Parser {
  std::vector<Token> toks;
  size_t p = 0;

  const Token &cur() const { return toks[p]; }
  const Token &peek(size_t n = 1) const {
    return toks[std::min(p + n, toks.size() - 1)];
  }
  [[noreturn]] void fail(const std::string &what) const {
    throw TemplateError(what, cur().line);
  }
  bool isName(const char *n) const {
    return cur().kind == K::Name && cur().text == n;
  }
  bool isOp(const char *o) const {
    return cur().kind == K::Op && cur().text == o;
  }
  bool skipName(const char *n) {
    if (!isName(n))
      return false;
    ++p;
    return true;
  }
  bool skipOp(const char *o) {
    if (!isOp(o))
      return false;
    ++p;
    return true;
  }
  void expectOp(const char *o) {
    if (!skipOp(o))
      fail(std::string("expected '") + o + "', got " + describe(cur()));
  }
  std::string expectName() {
    if (cur().kind != K::Name)
      fail("expected a name, got " + describe(cur()));
    return toks[p++].text;
  }
  void expectBlockEnd() {
    if (cur().kind != K::BlockEnd)
      fail("expected the end of the statement block, got " + describe(cur()));
    ++p;
  }
  static std::string describe(const Token &t) {
    switch (t.kind) {
    case K::Name:
      return "'" + t.text + "'";
    case K::Op:
      return "'" + t.text + "'";
    case K::String:
      return "a string";
    case K::Int:
    case K::Float:
      return "a number";
    case K::BlockEnd:
      return "'%}'";
    case K::VarEnd:
      return "'}}'";
    case K::End:
      return "the end of the template";
    default:
      return "template data";
    }
  }

  std::shared_ptr<Expr> node(Expr::Kind k) {
    auto e = std::make_shared<Expr>();
    e->kind = k;
    e->line = cur().line;
    return e;
  }

  // ---- statements --------------------------------------------------------

  /// Parses nodes until a block whose first name is in `ends` (left
  /// unconsumed at that name) or the end of the template.
  NodeList subparse(const std::vector<std::string> &ends) {
    NodeList out;
    while (true) {
      const Token &t = cur();
      if (t.kind == K::End) {
        if (!ends.empty())
          fail("unexpected end of template, expected '" + ends[0] + "'");
        return out;
      }
      if (t.kind == K::Data) {
        auto n = std::make_shared<Node>();
        n->kind = Node::Kind::Text;
        n->text = t.text;
        n->line = t.line;
        out.push_back(n);
        ++p;
        continue;
      }
      if (t.kind == K::VarBegin) {
        ++p;
        auto n = std::make_shared<Node>();
        n->kind = Node::Kind::Output;
        n->line = t.line;
        n->expr = expression();
        if (cur().kind != K::VarEnd)
          fail("expected the end of the print statement '}}', got " +
               describe(cur()));
        ++p;
        out.push_back(n);
        continue;
      }
      if (t.kind == K::BlockBegin) {
        const Token &kw = peek();
        if (kw.kind == K::Name)
          for (const std::string &e : ends)
            if (kw.text == e) {
              ++p; // leave the keyword current
              return out;
            }
        ++p;
        out.push_back(statement());
        continue;
      }
      fail("unexpected " + describe(t));
    }
  }

  std::shared_ptr<const Node> statement() {
    int line = cur().line;
    std::string kw = expectName();
    auto n = std::make_shared<Node>();
    n->line = line;
    if (kw == "if") {
      n->kind = Node::Kind::If;
      n->conditions.push_back(expression());
      expectBlockEnd();
      n->branches.push_back(subparse({"elif", "else", "endif"}));
      while (true) {
        std::string which = expectName();
        if (which == "elif") {
          n->conditions.push_back(expression());
          expectBlockEnd();
          n->branches.push_back(subparse({"elif", "else", "endif"}));
        } else if (which == "else") {
          expectBlockEnd();
          n->conditions.push_back(nullptr);
          n->branches.push_back(subparse({"endif"}));
          expectName();
          expectBlockEnd();
          break;
        } else {
          expectBlockEnd();
          break;
        }
      }
      return n;
    }
    if (kw == "for") {
      n->kind = Node::Kind::For;
      n->targets.push_back(expectName());
      while (skipOp(","))
        n->targets.push_back(expectName());
      if (!skipName("in"))
        fail("expected 'in' in a for loop");
      n->expr = expression(false);
      if (skipName("if"))
        n->filter = expression(false);
      if (isName("recursive"))
        fail("recursive for loops are not supported");
      expectBlockEnd();
      n->body = subparse({"else", "endfor"});
      if (expectName() == "else") {
        expectBlockEnd();
        n->elseBody = subparse({"endfor"});
        expectName();
      }
      expectBlockEnd();
      return n;
    }
    if (kw == "set") {
      std::string first = expectName();
      n->targets.push_back(first);
      if (skipOp(".")) {
        n->attributeTarget = true;
        n->targets.push_back(expectName());
      } else {
        while (skipOp(","))
          n->targets.push_back(expectName());
      }
      if (skipOp("=")) {
        n->kind = Node::Kind::Set;
        n->expr = expression();
        expectBlockEnd();
        return n;
      }
      if (n->attributeTarget || n->targets.size() != 1)
        fail("expected '=' after the set target");
      n->kind = Node::Kind::SetBlock;
      expectBlockEnd();
      n->body = subparse({"endset"});
      expectName();
      expectBlockEnd();
      return n;
    }
    if (kw == "macro") {
      n->kind = Node::Kind::Macro;
      n->name = expectName();
      expectOp("(");
      while (!skipOp(")")) {
        if (!n->params.empty())
          expectOp(",");
        n->params.push_back(expectName());
        n->defaults.push_back(skipOp("=") ? expression() : nullptr);
      }
      expectBlockEnd();
      n->body = subparse({"endmacro"});
      expectName();
      expectBlockEnd();
      return n;
    }
    if (kw == "break" || kw == "continue") {
      n->kind = kw == "break" ? Node::Kind::Break : Node::Kind::Continue;
      expectBlockEnd();
      return n;
    }
    if (kw == "generation") { // transformers' AssistantTracker: just the body
      n->kind = Node::Kind::Scope;
      expectBlockEnd();
      n->body = subparse({"endgeneration"});
      expectName();
      expectBlockEnd();
      return n;
    }
    fail("the '" + kw + "' statement is not supported by fmc's chat templates");
  }

  // ---- expressions -------------------------------------------------------

  ExprPtr expression(bool withCondition = true) {
    return withCondition ? condExpr() : orExpr();
  }

  ExprPtr condExpr() {
    ExprPtr e = orExpr();
    while (skipName("if")) {
      auto c = node(Expr::Kind::Cond);
      ExprPtr cond = orExpr();
      ExprPtr otherwise = skipName("else") ? condExpr() : nullptr;
      c->kids = {cond, e, otherwise};
      e = c;
    }
    return e;
  }
  ExprPtr orExpr() {
    ExprPtr e = andExpr();
    while (skipName("or")) {
      auto o = node(Expr::Kind::Or);
      o->kids = {e, andExpr()};
      e = o;
    }
    return e;
  }
  ExprPtr andExpr() {
    ExprPtr e = notExpr();
    while (skipName("and")) {
      auto a = node(Expr::Kind::And);
      a->kids = {e, notExpr()};
      e = a;
    }
    return e;
  }
  ExprPtr notExpr() {
    if (isName("not")) {
      auto n = node(Expr::Kind::Not);
      ++p;
      n->kids = {notExpr()};
      return n;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr first = math1();
    std::shared_ptr<Expr> c;
    while (true) {
      std::string op;
      if (cur().kind == K::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
           cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        ++p;
      } else if (isName("in")) {
        op = "in";
        ++p;
      } else if (isName("not") && peek().kind == K::Name && peek().text == "in") {
        op = "not in";
        p += 2;
      } else {
        break;
      }
      if (!c) {
        c = node(Expr::Kind::Compare);
        c->kids.push_back(first);
      }
      c->ops.push_back(op);
      c->kids.push_back(math1());
    }
    return c ? ExprPtr(c) : first;
  }
  ExprPtr binary(ExprPtr left, const std::string &op, ExprPtr right) {
    auto b = std::make_shared<Expr>();
    b->kind = Expr::Kind::Binary;
    b->line = left->line;
    b->name = op;
    b->kids = {left, right};
    return b;
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (isOp("+") || isOp("-")) {
      std::string op = toks[p++].text;
      e = binary(e, op, concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (skipOp("~"))
      e = binary(e, "~", math2());
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = pow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      std::string op = toks[p++].text;
      e = binary(e, op, pow());
    }
    return e;
  }
  ExprPtr pow() {
    ExprPtr e = unary();
    while (skipOp("**"))
      e = binary(e, "**", unary());
    return e;
  }
  ExprPtr unary(bool withFilter = true) {
    ExprPtr e;
    if (isOp("-") || isOp("+")) {
      auto u = node(Expr::Kind::Unary);
      u->name = toks[p++].text;
      u->kids = {unary(false)};
      e = u;
    } else {
      e = primary();
    }
    e = postfix(e);
    if (withFilter)
      e = filterExpr(e);
    return e;
  }
  ExprPtr primary() {
    const Token &t = cur();
    if (t.kind == K::Name) {
      auto c = node(Expr::Kind::Const);
      if (t.text == "true" || t.text == "True") {
        c->value = Value::boolean(true);
      } else if (t.text == "false" || t.text == "False") {
        c->value = Value::boolean(false);
      } else if (t.text == "none" || t.text == "None") {
        c->value = Value::none();
      } else {
        auto n = node(Expr::Kind::Name);
        n->name = t.text;
        ++p;
        return n;
      }
      ++p;
      return c;
    }
    if (t.kind == K::String) {
      auto c = node(Expr::Kind::Const);
      std::string s;
      while (cur().kind == K::String) // adjacent literals join
        s += toks[p++].text;
      c->value = Value::string(s);
      return c;
    }
    if (t.kind == K::Int || t.kind == K::Float) {
      auto c = node(Expr::Kind::Const);
      c->value = t.kind == K::Int ? Value::integer(t.i) : Value::number(t.f);
      ++p;
      return c;
    }
    if (skipOp("(")) {
      // A parenthesized expression or a tuple.
      auto tup = node(Expr::Kind::Tuple);
      bool comma = false;
      while (!skipOp(")")) {
        if (!tup->kids.empty()) {
          expectOp(",");
          comma = true;
          if (skipOp(")"))
            break;
        }
        tup->kids.push_back(expression());
      }
      if (tup->kids.size() == 1 && !comma)
        return tup->kids[0];
      return tup;
    }
    if (skipOp("[")) {
      auto l = node(Expr::Kind::List);
      while (!skipOp("]")) {
        if (!l->kids.empty()) {
          expectOp(",");
          if (skipOp("]"))
            break;
        }
        l->kids.push_back(expression());
      }
      return l;
    }
    if (skipOp("{")) {
      auto d = node(Expr::Kind::Dict);
      while (!skipOp("}")) {
        if (!d->kids.empty()) {
          expectOp(",");
          if (skipOp("}"))
            break;
        }
        d->kids.push_back(expression());
        expectOp(":");
        d->kids.push_back(expression());
      }
      return d;
    }
    fail("unexpected " + describe(t));
  }
  ExprPtr postfix(ExprPtr e) {
    while (true) {
      if (isOp(".")) {
        ++p;
        auto a = node(Expr::Kind::Attr);
        if (cur().kind == K::Int) { // x.0 is x[0]
          a->kind = Expr::Kind::Item;
          auto idx = node(Expr::Kind::Const);
          idx->value = Value::integer(cur().i);
          ++p;
          a->kids = {e, idx};
        } else {
          a->name = expectName();
          a->kids = {e};
        }
        e = a;
      } else if (isOp("[")) {
        ++p;
        e = subscript(e);
      } else if (isOp("(")) {
        e = call(e);
      } else {
        return e;
      }
    }
  }
  ExprPtr subscript(ExprPtr obj) {
    // obj[i] or obj[a:b:c]
    ExprPtr parts[3];
    int colons = 0;
    if (!isOp(":"))
      parts[0] = expression();
    while (colons < 2 && skipOp(":")) {
      ++colons;
      if (!isOp(":") && !isOp("]"))
        parts[colons] = expression();
    }
    expectOp("]");
    if (colons == 0) {
      auto it = node(Expr::Kind::Item);
      it->kids = {obj, parts[0]};
      return it;
    }
    auto sl = node(Expr::Kind::Slice);
    sl->kids = {obj, parts[0], parts[1], parts[2]};
    return sl;
  }
  void arguments(std::shared_ptr<Expr> &into) {
    expectOp("(");
    bool first = true;
    while (!skipOp(")")) {
      if (!first) {
        expectOp(",");
        if (skipOp(")"))
          break;
      }
      first = false;
      if (cur().kind == K::Name && peek().kind == K::Op && peek().text == "=") {
        std::string key = toks[p].text;
        p += 2;
        into->kwargs.emplace_back(key, expression());
      } else {
        if (!into->kwargs.empty())
          fail("a positional argument after a keyword argument");
        into->kids.push_back(expression());
      }
    }
  }
  ExprPtr call(ExprPtr callee) {
    auto c = node(Expr::Kind::Call);
    c->kids.push_back(callee);
    arguments(c);
    return c;
  }
  ExprPtr filterExpr(ExprPtr e) {
    while (true) {
      if (isOp("|")) {
        ++p;
        auto f = node(Expr::Kind::Filter);
        f->name = expectName();
        while (skipOp("."))
          f->name += "." + expectName();
        f->kids.push_back(e);
        if (isOp("("))
          arguments(f);
        e = f;
      } else if (isName("is")) {
        ++p;
        auto t = node(Expr::Kind::Test);
        t->negated = skipName("not");
        t->name = expectName();
        while (skipOp("."))
          t->name += "." + expectName();
        t->kids.push_back(e);
        if (isOp("(")) {
          arguments(t);
        } else if ((cur().kind == K::Name || cur().kind == K::String ||
                    cur().kind == K::Int || cur().kind == K::Float ||
                    isOp("(") || isOp("[") || isOp("{")) &&
                   !isName("else") && !isName("or") && !isName("and")) {
          if (isName("is"))
            fail("You cannot chain multiple tests with is");
          t->kids.push_back(postfix(primary()));
        }
        e = t;
      } else if (isOp("(")) {
        e = call(e);
      } else {
        return e;
      }
    }
  }
};

} // namespace

NodeList parse(const std::string &source) {
  Parser ps;
  ps.toks = lex(source);
  return ps.subparse({});
}

} // namespace fm::chat
