// fm::Grammar, fm::TokenMasker and fm::GrammarMatcher: guided generation. A JSON Schema, a GBNF grammar
// or a regex compiles to a pushdown automaton over bytes; a matcher follows it and gives token masks.
#pragma once

#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fm {

namespace grammar {
struct CompiledGrammar;
class MaskCache;
class MatcherState;
} // namespace grammar

/// What a JSON-Schema grammar admits. Generation wants one canonical spelling per value (the model
/// never wastes tokens on whitespace and always writes properties in the schema's order); a
/// checker must accept every JSON text that validates.
enum class GrammarMode {
  /// No whitespace, properties in schema order, canonical string escapes; where the schema is
  /// silent, nothing extra (no additionalProperties next to `properties`, no items after
  /// `prefixItems`).
  Generate,
  /// JSON-Schema validation: any JSON whitespace, any property order, any string escape, `1.0`
  /// as an integer, absent additionalProperties/items admit anything.
  Check,
};

/// An immutable compiled grammar over bytes; cheap to copy (shared). Every matcher and mask
/// cache built from it shares the one compiled form.
class Grammar {
public:
  /// A JSON Schema (draft 2020-12 subset). An unsupported keyword is an error naming it and its
  /// JSON pointer; a malformed document is an error with line and column.
  static Expected<Grammar> fromJsonSchema(std::string_view schema,
                                          GrammarMode mode = GrammarMode::Generate);
  /// llama.cpp's GBNF (rules `name ::= ...`, start rule `root`); errors carry line:column.
  static Expected<Grammar> fromGbnf(std::string_view text);
  /// An ECMA-262 regex (no backreferences or lookaround) that must match the whole text.
  static Expected<Grammar> fromRegex(std::string_view pattern);
  /// Any JSON value (RFC 8259); in Check mode with surrounding whitespace.
  static Grammar anyJson(GrammarMode mode = GrammarMode::Check);

  /// True when the grammar admits no text at all (e.g. the schema `false`).
  bool isEmpty() const;
  /// Size of the compiled form, for reports.
  size_t ruleCount() const;
  size_t symbolCount() const;

  const grammar::CompiledGrammar &compiled() const { return *impl_; }
  std::shared_ptr<const grammar::CompiledGrammar> shared() const { return impl_; }

private:
  explicit Grammar(std::shared_ptr<const grammar::CompiledGrammar> impl)
      : impl_(std::move(impl)) {}
  std::shared_ptr<const grammar::CompiledGrammar> impl_;
};

/// A tokenizer's vocabulary as the grammar sees it: the bytes each token id decodes to
/// (byte-level BPE and byte-fallback tokens alike; a token may end inside a UTF-8 character),
/// and the end-of-sequence ids. A token with no bytes (a special token) is never allowed, except
/// an eos id, which is allowed exactly when the text so far is a complete match.
struct Vocabulary {
  std::vector<std::string> tokens;
  std::vector<int32_t> eos;
};

/// The token masks of one grammar over one vocabulary. For every grammar position that can be
/// the top of the stack it caches which tokens are accepted whatever lies below (a bitset or id
/// list) and which depend on the stack below (a small trie of their remainders, walked at mask
/// time): the XGrammar / llguidance approach. Filled lazily, or all at once by precompute();
/// thread-safe, shared by the matchers built from it.
class TokenMasker {
public:
  static Expected<TokenMasker> create(const Grammar &grammar, Vocabulary vocab);

  /// Fills the cache of every position reachable in the grammar (what a server does once per
  /// schema, so that no mask call pays for a cache miss). Returns how many positions it filled.
  size_t precompute();

  int32_t vocabSize() const;
  /// 32-bit words of a mask: (vocabSize + 31) / 32.
  size_t maskWords() const;
  /// Positions cached so far and their memory, for reports.
  size_t cachedPositions() const;
  size_t cacheBytes() const;

  const Grammar &grammar() const;
  std::shared_ptr<grammar::MaskCache> shared() const { return impl_; }

private:
  explicit TokenMasker(std::shared_ptr<grammar::MaskCache> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<grammar::MaskCache> impl_;
};

/// What fillMask() found besides the bits.
struct MaskInfo {
  /// Number of allowed token ids (eos ids included).
  int64_t allowed = 0;
  bool eosAllowed = false;
  /// The one allowed token when exactly one non-eos token is allowed and eos is not: the
  /// caller may append it without running the model (fast-forward); else -1.
  int32_t forced = -1;
};

/// Follows a grammar forwards over bytes or tokens. It never needs to roll back: a token or
/// byte that does not fit is refused and leaves the state as it was.
class GrammarMatcher {
public:
  /// Byte-level use (checking text).
  explicit GrammarMatcher(const Grammar &grammar);
  /// Token-level use: masks and acceptToken.
  explicit GrammarMatcher(const TokenMasker &masker);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher &&) noexcept;
  GrammarMatcher &operator=(GrammarMatcher &&) noexcept;

  /// Feeds bytes until one does not fit; returns how many were consumed (all of them on
  /// success). The state is left after the last consumed byte.
  size_t acceptBytes(std::string_view bytes);
  /// Feeds a whole token or nothing. An eos id is accepted only in an accepting state and
  /// finishes the matcher.
  bool acceptToken(int32_t token);
  /// Whether acceptToken(token) would succeed, without changing the state.
  bool canAcceptToken(int32_t token) const;

  /// The input so far is a complete match (eos would be allowed).
  bool isAccepting() const;
  /// eos was accepted: nothing more is allowed.
  bool isFinished() const;
  /// No continuation exists (only after a refused feed of a grammar that is empty).
  bool isDead() const;

  /// A feed was refused because the grammar is too ambiguous there: more than 4096 parses
  /// would be live at once (e.g. `root ::= .+++++++++`). describeExpected() then says so.
  bool isTooAmbiguous() const;

  /// Writes the allowed-token bitmask (bit i of word i/32 set = token i allowed) into `words`,
  /// which has TokenMasker::maskWords() words. Only for token-level matchers. The mask is exact
  /// with one exception: a token whose feed passes the live-stack cap is allowed here and then
  /// refused by acceptToken, which sets isTooAmbiguous() (the mask is a union over the parses,
  /// cached per parse; their count is only known by feeding).
  MaskInfo fillMask(uint32_t *words);

  /// The bytes every continuation must start with (up to `maxBytes`): what a caller can append
  /// without sampling. Empty when there is a choice or the state is accepting.
  std::string forcedBytes(size_t maxBytes = 256) const;
  /// Human-readable set of the bytes allowed next ("'\"', '}', end of input"), for errors.
  std::string describeExpected() const;

  /// Number of parallel stacks (ambiguity), for tests and reports.
  size_t stackCount() const;

private:
  std::unique_ptr<grammar::MatcherState> state_;
};

} // namespace fm
