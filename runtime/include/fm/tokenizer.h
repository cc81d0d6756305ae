// fm::Tokenizer: a Hugging Face tokenizer.json (+ tokenizer_config.json)
// that encodes text to exactly the ids HF's tokenizers give, decodes them
// back, and streams decoded text one token at a time.
#pragma once

#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fm {

using TokenId = int32_t;

namespace tok {
struct TokenizerImpl;
}

/// An added token of tokenizer.json ("added_tokens").
struct AddedTokenInfo {
  TokenId id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool singleWord = false;
  bool normalized = false;
};

/// Immutable once loaded; copies share it; encode/decode are thread-safe.
///
/// Supported (anything else is a load error naming the field): model BPE
/// (byte-level like GPT-2, Llama 3, Qwen, or SentencePiece-style with
/// byte_fallback/fuse_unk like Mistral, Gemma); normalizers NFC, NFD, NFKC,
/// NFKD, Prepend, Replace, Strip, Sequence; pre-tokenizers ByteLevel, Split,
/// Metaspace, Digits, Sequence; post-processors TemplateProcessing,
/// Bert/RobertaProcessing, ByteLevel, Sequence; decoders ByteLevel,
/// Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence.
class Tokenizer {
public:
  /// `path` is a tokenizer.json, or a directory holding tokenizer.json and
  /// optionally tokenizer_config.json.
  static Expected<Tokenizer> open(const std::string &path);
  /// From file contents; the names are what error messages call the files.
  /// `configJson` may be empty (no tokenizer_config.json).
  static Expected<Tokenizer>
  fromJson(std::string_view tokenizerJson, std::string_view configJson = {},
           const std::string &tokenizerName = "tokenizer.json",
           const std::string &configName = "tokenizer_config.json");

  /// The ids of `text`, as HF's encode(text, add_special_tokens=addSpecial):
  /// added-token text becomes that token, invalid UTF-8 is replaced by
  /// U+FFFD first. With `addSpecial`, the post-processor's tokens (BOS/EOS)
  /// are added. Fails only when a regex gives up (PCRE2 match limits).
  Expected<std::vector<TokenId>> encode(std::string_view text,
                                        bool addSpecial = false) const;

  /// The text of `ids`, as HF's decode(ids, skip_special_tokens=skipSpecial)
  /// without transformers' clean_up_tokenization_spaces (which is lossy):
  /// for a byte-level tokenizer, decode(encode(t)) == t for valid UTF-8 t.
  /// Fails on an id outside the vocabulary.
  Expected<std::string> decode(const std::vector<TokenId> &ids,
                               bool skipSpecial = false) const;

  /// One past the largest id of the vocabulary and the added tokens (what a
  /// model's embedding must cover).
  size_t vocabSize() const;
  /// Whether `id` names a token (vocabularies may have holes).
  bool hasId(TokenId id) const;
  /// The token's string as tokenizer.json writes it ("Ġthe", "▁the",
  /// "<0x0A>", "<|eot_id|>"); empty for an unknown id.
  const std::string &tokenString(TokenId id) const;
  /// The id of a token string (vocabulary or added token).
  std::optional<TokenId> tokenToId(std::string_view token) const;

  /// The bytes `id` contributes to decoded text: the decoders run on this
  /// token alone, keeping raw bytes (a byte-fallback or byte-level token
  /// gives its byte, not U+FFFD) and treating it as a token inside the text
  /// (not Metaspace's first-token rule, not a Strip of the whole text), so
  /// that concatenating tokenBytes of a sequence gives its decoded bytes
  /// (for Mistral/Llama-2-style decoders, before the text's one leading
  /// space is stripped). Empty for an unknown id. For the grammar engine.
  const std::string &tokenBytes(TokenId id) const;

  const std::vector<AddedTokenInfo> &addedTokens() const;
  bool isSpecial(TokenId id) const;

  /// From tokenizer_config.json (bos_token, eos_token, ...), resolved to
  /// ids; nullopt when absent or unknown.
  std::optional<TokenId> bosId() const;
  std::optional<TokenId> eosId() const;
  std::optional<TokenId> padId() const;
  std::optional<TokenId> unkId() const;
  /// The token strings, for chat templates ("" when absent).
  const std::string &bosToken() const;
  const std::string &eosToken() const;
  const std::string &padToken() const;
  const std::string &unkToken() const;
  /// tokenizer_config.json's chat_template ("" when none; the "default" one
  /// when it is a list of named templates).
  const std::string &chatTemplate() const;
  /// The file it came from, for messages.
  const std::string &name() const;

private:
  friend class StreamDecoder;
  std::shared_ptr<const tok::TokenizerImpl> impl_;
};

/// Token ids written as text: decimal integers separated by spaces, tabs,
/// commas or newlines ("1 17 42", "1,17,42", one per line), as fm-tokenize
/// prints them and fm-run --tokens takes them. An error names the item and
/// its byte offset in `what` ("'x' (byte 4 of stdin) is not a token id").
Expected<std::vector<TokenId>> parseTokenIds(std::string_view text,
                                             const std::string &what);

/// Decodes ids one at a time and hands out text as soon as it is whole:
/// never half a UTF-8 character. For ids whose bytes are valid UTF-8, the
/// concatenation of everything push() and finish() return equals
/// Tokenizer::decode of all the ids; invalid bytes come out as one U+FFFD
/// per maximal invalid subpart.
class StreamDecoder {
public:
  explicit StreamDecoder(const Tokenizer &tokenizer, bool skipSpecial = false);
  /// The text that `id` completes (possibly empty). Fails on an unknown id.
  Expected<std::string> push(TokenId id);
  /// The rest: an unfinished character at the end becomes U+FFFD.
  std::string finish();

private:
  std::string emit(bool final);
  std::shared_ptr<const tok::TokenizerImpl> impl_;
  bool skipSpecial_;
  bool first_ = true;
  size_t leadingCut_ = 0; // leading Strip characters removed so far
  bool pastStart_ = false;
  std::string pending_; // bytes not yet handed out
};

} // namespace fm
