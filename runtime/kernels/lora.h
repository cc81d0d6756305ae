// The rank-r side path of a matmul with LoRA adapters attached:
// y += s · B·(A·x), as two skinny products on f16 or 8-bit packed matrices,
// with a runtime choice between the generic, AVX2 and AVX-512 paths.
#pragma once

#include "kernels/isa.h"

#include <cstddef>
#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// A row-major LoRA matrix of `rows` rows of `cols` values: IEEE binary16,
/// or (q8) the 8-bit balanced packed rows of qformat.h in groups of `group`
/// (cols a multiple of it): value = (q - 127.5) · s per group.
struct LoraMatrix {
  const void *data = nullptr;
  int64_t rows = 0, cols = 0;
  bool q8 = false;
  int group = 32;
};

/// One down product: t[m][tCol + i] = Σ_k x[m][k] · a[i][k] for i < a.rows
/// (a.cols = K, the inputs of x). Several A matrices of one input (the
/// stacked projections of a fused matmul, several adapters) are one call.
struct LoraDown {
  LoraMatrix a;
  int64_t tCol = 0;
};

/// One up product: y[m][n] += scale · Σ_i t[m][tCol + i] · bt[i][n] for
/// n < bt.cols, i < bt.rows (the rank): bt is Bᵀ, so each rank adds one
/// contiguous row of bt to y, and no horizontal sums are needed.
struct LoraUp {
  int64_t tCol = 0;
  LoraMatrix bt;
  float *y = nullptr; // column 0 of this projection's outputs, row 0
  float scale = 1.0f;
};

/// Every down product of `parts` over x[M][K] (rows ldx floats apart) into
/// t (rows ldt floats apart). t must not overlap x or the matrices. `pool`
/// may be null (single-threaded).
void loraDown(const float *x, int64_t M, int64_t ldx, float *t, int64_t ldt,
              const LoraDown *parts, size_t count, fm::rt::ThreadPool *pool);

/// Every up product of `parts` from t (rows ldt apart) into their y (rows
/// ldy apart). Parts with the same y (several adapters on one projection)
/// must be consecutive and as wide; they are added in their order. Other
/// parts' outputs must not overlap, nor t.
void loraUp(const float *t, int64_t M, int64_t ldt, int64_t ldy,
            const LoraUp *parts, size_t count, fm::rt::ThreadPool *pool);

/// loraDown split for callers that schedule its work across threads
/// themselves (the fused LoRA matmul of hal/cpu/CpuLora.cpp): the parts'
/// rows of A are numbered in units of loraDownUnitRows, part after part;
/// loraDownUnits counts them and loraDownRange computes the t columns of
/// units [u0, u1) on the calling thread (best path).
int64_t loraDownUnits(const LoraDown *parts, size_t count);
void loraDownRange(const float *x, int64_t M, int64_t ldx, float *t,
                   int64_t ldt, const LoraDown *parts, size_t count,
                   int64_t u0, int64_t u1);

/// The up product of one part restricted to its columns [n0, n1) (n0 a
/// multiple of 64 or n1 == bt.cols), on the calling thread (best path).
void loraUpColumns(const float *t, int64_t M, int64_t ldt, int64_t ldy,
                   const LoraUp &part, int64_t n0, int64_t n1);

/// The name of the path loraDown/loraUp use, e.g. "avx512".
const char *loraPathName();

/// loraDown/loraUp on an explicit path, which must be available
/// (kernelIsaAvailable; NEON builds run the generic path); for tests and
/// benchmarks.
void loraDownOn(KernelIsa path, const float *x, int64_t M, int64_t ldx,
                float *t, int64_t ldt, const LoraDown *parts, size_t count,
                fm::rt::ThreadPool *pool);
void loraUpOn(KernelIsa path, const float *t, int64_t M, int64_t ldt,
              int64_t ldy, const LoraUp *parts, size_t count,
              fm::rt::ThreadPool *pool);

/// Bytes of a LoRA matrix of `rows` x `cols` (f16, or q8 packed rows).
size_t loraMatrixBytes(int64_t rows, int64_t cols, bool q8, int group);

} // namespace fm::kernels
