// The tokenizer embedded in an artifact (fm/artifact.h, fmb.fbs
// TokenizerFiles): its load-time checks, and parsing it on demand.
#include "fm/artifact.h"

#include <string>

namespace fm {

namespace fa = fm::artifact;

namespace {

/// The tokenizer_config.json beside `tokenizerJson` (a path), for messages.
std::string configBeside(const std::string &tokenizerJson) {
  const size_t slash = tokenizerJson.find_last_of('/');
  return (slash == std::string::npos ? std::string()
                                     : tokenizerJson.substr(0, slash + 1)) +
         "tokenizer_config.json";
}

} // namespace

Status ArtifactFile::verifyTokenizer() const {
  const fa::TokenizerFiles *t = root_->tokenizer();
  if (!t)
    return Status::ok();
  if (t->tokenizer_json()->size() == 0)
    return Status::error(name_ + ": tokenizer: tokenizer_json is empty");
  if (const auto *ids = t->stop_ids())
    for (flatbuffers::uoffset_t i = 0; i < ids->size(); ++i)
      if (ids->Get(i) < 0 || uint64_t(ids->Get(i)) >= root_->vocab_size())
        return Status::error(name_ + ": tokenizer: stop_ids[" +
                             std::to_string(i) + "] = " +
                             std::to_string(ids->Get(i)) +
                             " is out of range (vocab_size " +
                             std::to_string(root_->vocab_size()) + ")");
  return Status::ok();
}

Expected<Tokenizer> ArtifactFile::tokenizer() const {
  const fa::TokenizerFiles *t = root_->tokenizer();
  if (!t)
    return Status::error(name_ + " has no tokenizer: compile it with a "
                                 "tokenizer.json beside the checkpoint, or "
                                 "fmc compile --tokenizer FILE");
  const std::string source =
      t->source() && t->source()->size() ? t->source()->str() : "tokenizer.json";
  const std::string_view json(t->tokenizer_json()->data(),
                              t->tokenizer_json()->size());
  const std::string_view config =
      t->config_json() ? std::string_view(t->config_json()->data(),
                                          t->config_json()->size())
                       : std::string_view();
  return Tokenizer::fromJson(json, config, name_ + ": embedded " + source,
                             name_ + ": embedded " + configBeside(source));
}

std::vector<int32_t> ArtifactFile::stopIds() const {
  const fa::TokenizerFiles *t = root_->tokenizer();
  if (!t || !t->stop_ids())
    return {};
  return std::vector<int32_t>(t->stop_ids()->begin(), t->stop_ids()->end());
}

} // namespace fm
