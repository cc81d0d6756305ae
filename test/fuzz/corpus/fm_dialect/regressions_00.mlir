// Regression tests for verifier bugs found in review (negative sizes through unsigned getters, dynamic sizes printed as numbers, reuse before a later track, misplaced caches, duplicate phases, ...). Each case is named after the bug it pins.

// Bug 1 (unsigned I64Attr getters): getVocabSize()/getHiddenSize() return uint64_t, so "<= 0" only catches 0 and a negative size is accepted.
fm.model @m attributes {family = "llama", vocab_size = -5 : i64, hidden_size = 64 : i64} {
}
