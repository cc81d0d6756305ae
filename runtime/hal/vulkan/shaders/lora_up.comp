#version 450
// A LoRA adapter's up product (kernels/lora.h, LoraUp): y[m][n] += scale ·
// Σ_i t[m][tCol + i] · bt[i][n] for n < N, i < R (the rank), with bt = Bᵀ
// [R][N] in f16 (WKIND 1) or 8-bit balanced packed rows (WKIND 2: N bytes,
// then an f16 scale per QGROUP values). Bᵀ makes each rank a contiguous
// row, so invocation n reads column n of every row and no reduction is
// needed: one invocation per output column, MR activation rows each.
#include "common.glsl"

#define MR 8u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer T { float t[]; };
layout(set = 0, binding = 1) readonly buffer B { WTYPE bt[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint tOff, tStride, tCol; // floats
  uint yOff, yStride;       // floats; yOff includes the projection's column 0
  uint bOff;                // element (byte when packed) of bt's row 0
  uint rowElems;            // elements (bytes) per row of bt
  uint R, N, M;
  uint groupsX;             // workgroups in x (the rest folds into y)
  float scale;
} pc;

float btAt(uint i, uint n) {
  uint row = pc.bOff + i * pc.rowElems;
#if WKIND == 1
  return unpackHalf2x16(uint(bt[row + n])).x;
#else
  uint sAt = row + pc.N + 2u * (n / QGROUP);
  float s = halfOf(uint(bt[sAt]), uint(bt[sAt + 1u]));
  return (float(uint(bt[row + n])) - qcenter()) * s;
#endif
}

void main() {
  uint n = (gl_WorkGroupID.y * pc.groupsX + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
  uint m0 = gl_WorkGroupID.z * MR;
  if (n >= pc.N)
    return;
  uint rows = min(MR, pc.M - m0);
  float acc[MR];
  for (uint r = 0u; r < MR; ++r)
    acc[r] = 0.0;
  for (uint i = 0u; i < pc.R; ++i) {
    float b = btAt(i, n);
    for (uint r = 0u; r < MR; ++r)
      if (r < rows)
        acc[r] += t[pc.tOff + (m0 + r) * pc.tStride + pc.tCol + i] * b;
  }
  for (uint r = 0u; r < MR; ++r)
    if (r < rows) {
      uint at = pc.yOff + (m0 + r) * pc.yStride + n;
      y[at] += pc.scale * acc[r];
    }
}
