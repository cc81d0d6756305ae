// Flash-style blocked attention for prefill (long prompts): the same
// contract as attention() (attention.h), but a block of query rows and all
// query heads of one KV head walk the keys together, so each block of K and
// V rows is read from memory once per query block instead of once per
// query row.
#pragma once

#include "kernels/attention.h"

namespace fm::kernels {

/// attention() computed by query blocks: out[s][h] as attention() defines
/// it (the same online softmax over blocks of keys, f32, no scratch beyond
/// the stack), up to f32 rounding: blocks of keys start at the query
/// block's first visible key rather than each row's. Work is split across
/// `pool` (may be null) by (query block, KV head). Worth it from a few
/// dozen query rows on (prefill); decode (S == 1) should call attention().
void attentionBlocked(const AttentionArgs &args, fm::rt::ThreadPool *pool);

/// attentionBlocked on an explicit instruction-set path, which must be
/// available (kernelIsaAvailable); Neon runs the generic source. For tests
/// and benchmarks.
void attentionBlockedOn(KernelIsa isa, const AttentionArgs &args,
                        fm::rt::ThreadPool *pool);

} // namespace fm::kernels
