// The previous quantizer (one scale candidate at a time), kept as a
// reference: tests check that quantizeRows packs the same bytes, and
// bench/kernels/quantize_bench.cpp times both in one run. Linked into tests
// and benchmarks only, never into fm_kernels.
#pragma once

#include "kernels/quantize.h"

namespace fm::kernels::reference {

/// quantizeRows as of commit f564f54: the same contract and results.
QuantError quantizeRowsReference(const float *w, int64_t N, int64_t K,
                                 QuantFormat f, uint8_t *out);

} // namespace fm::kernels::reference
