// A RapidJSON SAX filter in front of a Document: model.vocab and model.merges
// of tokenizer.json (Llama 3: 128k members, 280k merges, most of the file)
// go into flat arrays of views into the in-situ buffer instead of the DOM.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace fm::tok {

/// What the filter took out of the first top-level "model" object. The DOM
/// keeps an empty object / array in their place; the views point into the
/// in-situ parsed text and live as long as it.
struct ModelCapture {
  struct VocabEntry {
    const char *token;
    uint32_t length;
    int64_t id; // as written; -1 when the value is no integer (refused later)
  };
  struct MergeEntry {
    const char *a, *b; // b null: the "a b" form, a holds the whole string
    uint32_t na, nb;
  };
  bool haveVocab = false, haveMerges = false;
  std::vector<VocabEntry> vocab;
  std::vector<MergeEntry> merges;
  /// The first merges element that is neither "a b" nor ["a", "b"], or -1.
  int64_t badMerge = -1;
};

/// Forwards every event to `doc` except the members of model.vocab and the
/// elements of model.merges (only when they are an object and an array).
class ModelCaptureHandler {
public:
  using Ch = char;
  ModelCaptureHandler(rapidjson::Document &doc, ModelCapture &out)
      : doc_(doc), out_(out) {}

  bool Null() { return scalar() ? doc_.Null() : value(-1); }
  bool Bool(bool b) { return scalar() ? doc_.Bool(b) : value(-1); }
  bool Int(int i) { return scalar() ? doc_.Int(i) : value(i); }
  bool Uint(unsigned u) { return scalar() ? doc_.Uint(u) : value(u); }
  bool Int64(int64_t i) { return scalar() ? doc_.Int64(i) : value(i); }
  bool Uint64(uint64_t u) {
    if (scalar())
      return doc_.Uint64(u);
    return value(u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                     ? -1
                     : static_cast<int64_t>(u));
  }
  bool Double(double d) { return scalar() ? doc_.Double(d) : value(-1); }
  bool RawNumber(const Ch *s, rapidjson::SizeType n, bool copy) {
    return scalar() ? doc_.RawNumber(s, n, copy) : value(-1);
  }
  bool String(const Ch *s, rapidjson::SizeType n, bool copy) {
    switch (mode_) {
    case Mode::Forward:
      return doc_.String(s, n, copy);
    case Mode::Vocab:
      if (nested_)
        return true;
      return value(-1);
    case Mode::Merges:
      if (nested_ == 0) {
        out_.merges.push_back({s, nullptr, n, 0});
      } else if (nested_ == 1 && pairCount_ < 2) {
        pair_[pairCount_] = s;
        pairLength_[pairCount_] = n;
        ++pairCount_;
      } else {
        pairBad_ = true;
      }
      return true;
    }
    return true;
  }
  bool Key(const Ch *s, rapidjson::SizeType n, bool copy) {
    if (mode_ == Mode::Vocab) {
      if (nested_ == 0) {
        key_ = s;
        keyLength_ = n;
      }
      return true;
    }
    if (mode_ == Mode::Merges)
      return true; // inside an object element: a bad merge anyway
    if (depth_ == 1)
      rootKeyIsModel_ = n == 5 && std::memcmp(s, "model", 5) == 0;
    if (inModel_ && depth_ == 2) {
      // Only the first of duplicate keys: the one the DOM's FindMember finds.
      modelKey_ = 0;
      if (n == 5 && std::memcmp(s, "vocab", 5) == 0 && !vocabKeySeen_)
        modelKey_ = 1, vocabKeySeen_ = true;
      else if (n == 6 && std::memcmp(s, "merges", 6) == 0 && !mergesKeySeen_)
        modelKey_ = 2, mergesKeySeen_ = true;
    }
    return doc_.Key(s, n, copy);
  }
  bool StartObject() {
    if (mode_ != Mode::Forward)
      return open(false);
    if (depth_ == 1 && rootKeyIsModel_ && !modelSeen_) {
      modelSeen_ = inModel_ = true;
    } else if (inModel_ && depth_ == 2 && modelKey_ == 1) {
      out_.haveVocab = true;
      mode_ = Mode::Vocab;
      nested_ = 0;
    }
    ++depth_;
    modelKey_ = 0;
    return doc_.StartObject();
  }
  bool EndObject(rapidjson::SizeType members) {
    if (mode_ != Mode::Forward && nested_)
      return close();
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Forward;
      members = 0;
    }
    --depth_;
    if (inModel_ && depth_ == 1)
      inModel_ = false;
    return doc_.EndObject(members);
  }
  bool StartArray() {
    if (mode_ != Mode::Forward)
      return open(true);
    if (inModel_ && depth_ == 2 && modelKey_ == 2) {
      out_.haveMerges = true;
      mode_ = Mode::Merges;
      nested_ = 0;
    }
    ++depth_;
    modelKey_ = 0;
    return doc_.StartArray();
  }
  bool EndArray(rapidjson::SizeType elements) {
    if (mode_ != Mode::Forward && nested_)
      return close();
    if (mode_ == Mode::Merges) {
      mode_ = Mode::Forward;
      elements = 0;
    }
    --depth_;
    return doc_.EndArray(elements);
  }

private:
  enum class Mode { Forward, Vocab, Merges };

  /// Whether a scalar goes to the DOM; else value() records it.
  bool scalar() const { return mode_ == Mode::Forward; }
  /// A vocabulary id (or -1: not an integer), or a scalar inside merges.
  bool value(int64_t id) {
    if (mode_ == Mode::Vocab) {
      if (nested_ == 0)
        out_.vocab.push_back({key_, keyLength_, id < 0 ? -1 : id});
    } else if (nested_ == 0) {
      badMerge();
    } else {
      pairBad_ = true;
    }
    return true;
  }
  void badMerge() {
    if (out_.badMerge < 0)
      out_.badMerge = static_cast<int64_t>(out_.merges.size());
    out_.merges.push_back({"", nullptr, 0, 0}); // keeps the indices
  }
  // A container inside a vocabulary value or a merges element.
  bool open(bool array) {
    if (nested_ == 0) {
      if (mode_ == Mode::Vocab) {
        out_.vocab.push_back({key_, keyLength_, -1});
      } else {
        pairCount_ = 0;
        pairBad_ = !array;
      }
    } else if (mode_ == Mode::Merges) {
      pairBad_ = true;
    }
    ++nested_;
    return true;
  }
  bool close() {
    if (--nested_ == 0 && mode_ == Mode::Merges) {
      if (pairBad_ || pairCount_ != 2)
        badMerge();
      else
        out_.merges.push_back({pair_[0], pair_[1], pairLength_[0], pairLength_[1]});
    }
    return true;
  }

  rapidjson::Document &doc_;
  ModelCapture &out_;
  Mode mode_ = Mode::Forward;
  int depth_ = 0;              // open containers forwarded to the DOM
  bool rootKeyIsModel_ = false, modelSeen_ = false, inModel_ = false;
  bool vocabKeySeen_ = false, mergesKeySeen_ = false;
  int modelKey_ = 0;           // 1: the last key in model was vocab, 2: merges
  int nested_ = 0;             // containers open inside the captured member
  const char *key_ = nullptr;
  uint32_t keyLength_ = 0;
  const char *pair_[2] = {nullptr, nullptr};
  uint32_t pairLength_[2] = {0, 0};
  int pairCount_ = 0;
  bool pairBad_ = false;
};

} // namespace fm::tok
