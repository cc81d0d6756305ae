// The public grammar API (fm/grammar.h) over the compiler front ends, the engine and the mask
// cache.
#include "fm/grammar.h"

#include "grammar/CharNfa.h"
#include "grammar/Engine.h"
#include "grammar/Gbnf.h"
#include "grammar/JsonRules.h"
#include "grammar/Regex.h"
#include "grammar/Schema.h"
#include "grammar/TokenMasks.h"

#include <cstdio>
#include <cstring>

namespace fm {

using namespace fm::grammar;

namespace {

Expected<Grammar> finish(Expected<Cfg> cfg, const std::string &what,
                         Grammar (*make)(std::shared_ptr<const CompiledGrammar>)) {
  if (!cfg)
    return cfg.status();
  auto compiled = compileCfg(*cfg, what);
  if (!compiled)
    return compiled.status();
  return make(std::make_shared<const CompiledGrammar>(std::move(*compiled)));
}

} // namespace

Expected<Grammar> Grammar::fromJsonSchema(std::string_view schema, GrammarMode mode) {
  return finish(compileJsonSchema(schema, mode), "schema",
                [](std::shared_ptr<const CompiledGrammar> g) { return Grammar(std::move(g)); });
}

Expected<Grammar> Grammar::fromGbnf(std::string_view text) {
  return finish(parseGbnf(text), "gbnf",
                [](std::shared_ptr<const CompiledGrammar> g) { return Grammar(std::move(g)); });
}

Expected<Grammar> Grammar::fromRegex(std::string_view pattern) {
  auto nfa = compileRegex(pattern, RegexMode::FullMatch);
  if (!nfa)
    return nfa.status();
  Cfg cfg;
  if (nfa->emptyLanguage()) {
    cfg.root = cfg.addRule("regex");
  } else {
    cfg.root = emitNfa(
        *nfa, cfg,
        [&cfg](const CpSet &s) -> const std::vector<std::vector<Sym>> & { return cfg.utf8Alts(s); },
        "regex");
    if (isTerminal(cfg.root))
      cfg.root = cfg.sequence({cfg.root, cfg.empty()}, "regex");
  }
  return finish(std::move(cfg), "regex",
                [](std::shared_ptr<const CompiledGrammar> g) { return Grammar(std::move(g)); });
}

Grammar Grammar::anyJson(GrammarMode mode) {
  Cfg cfg;
  JsonRules rules(cfg, mode);
  std::vector<Sym> seq = rules.ws();
  seq.push_back(rules.anyValue());
  std::vector<Sym> w = rules.ws();
  seq.insert(seq.end(), w.begin(), w.end());
  cfg.root = cfg.addRule("root");
  cfg.addAlt(cfg.root, seq);
  auto compiled = compileCfg(cfg, "json");
  return Grammar(std::make_shared<const CompiledGrammar>(std::move(*compiled)));
}

bool Grammar::isEmpty() const { return impl_->empty; }
size_t Grammar::ruleCount() const { return impl_->ruleCount(); }
size_t Grammar::symbolCount() const { return impl_->syms.size(); }

Expected<TokenMasker> TokenMasker::create(const Grammar &grammar, Vocabulary vocab) {
  for (int32_t e : vocab.eos)
    if (e < 0 || size_t(e) >= vocab.tokens.size())
      return Status::error("vocabulary: eos id " + std::to_string(e) + " is not a token id (" +
                           std::to_string(vocab.tokens.size()) + " tokens)");
  if (vocab.tokens.size() > size_t(INT32_MAX))
    return Status::error("vocabulary: too many tokens");
  return TokenMasker(std::make_shared<MaskCache>(grammar, std::move(vocab)));
}

size_t TokenMasker::precompute() { return impl_->precompute(); }
int32_t TokenMasker::vocabSize() const { return impl_->vocabSize(); }
size_t TokenMasker::maskWords() const { return impl_->maskWords(); }
size_t TokenMasker::cachedPositions() const { return impl_->cachedPositions(); }
size_t TokenMasker::cacheBytes() const { return impl_->cacheBytes(); }
const Grammar &TokenMasker::grammar() const { return impl_->grammar(); }

namespace grammar {

/// A matcher's state: its own arena of stack frames over the shared compiled grammar.
class MatcherState {
public:
  MatcherState(std::shared_ptr<const CompiledGrammar> g, std::shared_ptr<MaskCache> cache)
      : g_(std::move(g)), cache_(std::move(cache)), engine_(*g_, arena_) {
    engine_.initial(cur_);
  }

  size_t acceptBytes(std::string_view bytes) {
    if (finished_)
      return 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      engine_.step(cur_, uint8_t(bytes[i]), next_);
      if (next_.overflow)
        overflowed_ = true;
      if (!next_.alive())
        return i;
      std::swap(cur_, next_);
    }
    return bytes.size();
  }

  bool acceptToken(int32_t token, bool commit) {
    if (finished_ || !cache_ || token < 0 || token >= cache_->vocabSize())
      return false;
    if (cache_->isEos(token)) {
      if (!cur_.accepting)
        return false;
      finished_ = finished_ || commit;
      return true;
    }
    const std::string &bytes = cache_->vocab().tokens[size_t(token)];
    if (bytes.empty())
      return false;
    size_t mark = arena_.size();
    StackSet &a = scratchA_, &b = scratchB_;
    a = cur_;
    for (char c : bytes) {
      engine_.step(a, uint8_t(c), b);
      if (!b.alive()) {
        if (b.overflow && commit)
          overflowed_ = true;
        arena_.truncate(mark);
        return false;
      }
      std::swap(a, b);
    }
    if (commit)
      std::swap(cur_, a);
    else
      arena_.truncate(mark);
    return true;
  }

  MaskInfo fillMask(uint32_t *words) {
    MaskInfo info;
    if (!cache_)
      return info;
    size_t nWords = cache_->maskWords();
    std::memset(words, 0, nWords * sizeof(uint32_t));
    if (finished_)
      return info;
    for (int32_t top : cur_.tops) {
      const PositionMask &pm = cache_->entry(arena_.pos(top));
      if (!pm.acceptedBits.empty()) {
        for (size_t w = 0; w < nWords; ++w)
          words[w] |= pm.acceptedBits[w];
      } else {
        for (int32_t id : pm.acceptedIds)
          words[id >> 5] |= 1u << (id & 31);
      }
      if (pm.suffixes.size() > 1) {
        size_t mark = arena_.size();
        engine_.closeNode(arena_.parent(top), parentState_);
        const VocabTrie &t = pm.suffixes;
        walker_.walk(engine_, t, parentState_, [&](size_t i, const StackSet &st) {
          if (st.tops.empty() && !st.accepting)
            return;
          for (int32_t k = t.tokBegin[i]; k < t.tokBegin[i + 1]; ++k)
            words[t.tokIds[k] >> 5] |= 1u << (t.tokIds[k] & 31);
        });
        arena_.truncate(mark);
      }
    }
    if (cur_.accepting) {
      info.eosAllowed = true;
      for (int32_t e : cache_->vocab().eos)
        words[e >> 5] |= 1u << (e & 31);
    }
    int64_t count = 0;
    for (size_t w = 0; w < nWords; ++w)
      count += __builtin_popcount(words[w]);
    info.allowed = count;
    if (count == 1 && !info.eosAllowed)
      for (size_t w = 0; w < nWords; ++w)
        if (words[w]) {
          info.forced = int32_t(w * 32 + size_t(__builtin_ctz(words[w])));
          break;
        }
    return info;
  }

  std::string forcedBytes(size_t maxBytes) {
    std::string out;
    size_t mark = arena_.size();
    StackSet a = cur_, b;
    while (out.size() < maxBytes && !a.accepting && !finished_) {
      ByteSet next = engine_.nextBytes(a);
      int count = 0, which = -1;
      for (int k = 0; k < 256; ++k)
        if (next.test(uint8_t(k))) {
          ++count;
          which = k;
        }
      if (count != 1)
        break;
      engine_.step(a, uint8_t(which), b);
      std::swap(a, b);
      out += char(which);
    }
    arena_.truncate(mark);
    return out;
  }

  std::string describeExpected() const {
    if (overflowed_)
      return "nothing more: the grammar is too ambiguous here (more than " +
             std::to_string(Engine::kMaxLiveStacks) + " parses are live at once)";
    ByteSet next = engine_.nextBytes(cur_);
    std::string out;
    int ranges = 0;
    auto show = [](int b) {
      char buf[8];
      if (b == '\n')
        return std::string("'\\n'");
      if (b == '\t')
        return std::string("'\\t'");
      if (b == '\r')
        return std::string("'\\r'");
      if (b >= 0x20 && b < 0x7F)
        return "'" + std::string(1, char(b)) + "'";
      std::snprintf(buf, sizeof buf, "0x%02X", b);
      return std::string(buf);
    };
    for (int b = 0; b < 256; ++b) {
      if (!next.test(uint8_t(b)))
        continue;
      int e = b;
      while (e + 1 < 256 && next.test(uint8_t(e + 1)))
        ++e;
      if (ranges++ < 12)
        out += (out.empty() ? "" : ", ") + (e == b ? show(b) : show(b) + "-" + show(e));
      b = e;
    }
    if (ranges > 12)
      out += ", ...";
    if (cur_.accepting)
      out += out.empty() ? "end of input" : ", or end of input";
    return out.empty() ? "nothing (no continuation)" : out;
  }

  bool accepting() const { return !finished_ && cur_.accepting; }
  bool overflowed() const { return overflowed_; }
  bool finished() const { return finished_; }
  bool dead() const { return !finished_ && !cur_.alive(); }
  size_t stacks() const { return cur_.tops.size(); }

private:
  std::shared_ptr<const CompiledGrammar> g_;
  std::shared_ptr<MaskCache> cache_;
  StackArena arena_;
  mutable Engine engine_;
  StackSet cur_, next_, parentState_, scratchA_, scratchB_;
  TrieWalker walker_;
  bool finished_ = false;
  bool overflowed_ = false; // acceptBytes or acceptToken stopped at the live-stack cap

};

} // namespace grammar

GrammarMatcher::GrammarMatcher(const Grammar &grammar)
    : state_(std::make_unique<MatcherState>(grammar.shared(), nullptr)) {}
GrammarMatcher::GrammarMatcher(const TokenMasker &masker)
    : state_(std::make_unique<MatcherState>(masker.grammar().shared(), masker.shared())) {}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher &&) noexcept = default;
GrammarMatcher &GrammarMatcher::operator=(GrammarMatcher &&) noexcept = default;

size_t GrammarMatcher::acceptBytes(std::string_view bytes) { return state_->acceptBytes(bytes); }
bool GrammarMatcher::acceptToken(int32_t token) { return state_->acceptToken(token, true); }
bool GrammarMatcher::canAcceptToken(int32_t token) const {
  return state_->acceptToken(token, false);
}
bool GrammarMatcher::isAccepting() const { return state_->accepting(); }
bool GrammarMatcher::isFinished() const { return state_->finished(); }
bool GrammarMatcher::isDead() const { return state_->dead(); }
bool GrammarMatcher::isTooAmbiguous() const { return state_->overflowed(); }
MaskInfo GrammarMatcher::fillMask(uint32_t *words) { return state_->fillMask(words); }
std::string GrammarMatcher::forcedBytes(size_t maxBytes) const {
  return state_->forcedBytes(maxBytes);
}
std::string GrammarMatcher::describeExpected() const { return state_->describeExpected(); }
size_t GrammarMatcher::stackCount() const { return state_->stacks(); }

} // namespace fm
