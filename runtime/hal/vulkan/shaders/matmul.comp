#version 450
// y[m][col0 + n] (+)= x[m] · w[n] for a block of weight rows (an nn.Linear
// [N][K] in f32, f16 or a packed low-bit format, dequantized here) and up to
// MR activation rows per workgroup; f32 activations and accumulation.
//
// A workgroup is TEAMS teams of LANES invocations; team j computes weight
// row (tile * TEAMS + j) for activation rows m0 .. m0 + MR - 1 (m0 =
// workgroup z * MR). Tiles beyond 65535 fold into the y dimension.
//
// With -DLORA=1 (the fused LoRA matmul, hal/vulkan/VulkanLora.cpp) the
// output stage also adds up to LORA_TERMS adapter terms: y[m][n] +=
// scale · Σ_r t[m][tCol + r] · bt[r][n - col0] for the term whose columns
// [col0, col0 + rows) hold n, with t = x·Aᵀ (the down products, run
// before) and bt = Bᵀ [R][rows] in f16 or 8-bit balanced packed rows. The
// team's lanes split the rank as they split K, so the reduction below sums
// both and y is written once.
#include "common.glsl"

#define LANES 16u
#define TEAMS 4u
#define MR 8u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { WTYPE w[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };
#ifdef LORA
#define LORA_TERMS 3
layout(set = 0, binding = 3) readonly buffer T { float t[]; };
// Bᵀ of term j at binding 4 + j, read as bytes (f16 as two), so that one
// variant serves both kinds and every binding has one element type.
layout(set = 0, binding = 4) readonly buffer B0 { uint8_t b0[]; };
layout(set = 0, binding = 5) readonly buffer B1 { uint8_t b1[]; };
layout(set = 0, binding = 6) readonly buffer B2 { uint8_t b2[]; };
struct LoraTerm {
  uint bOff;   // byte of bt's row 0 in its binding
  int col0;    // the term's first column, relative to this dispatch's
  uint rows;   // its columns (bt's row length)
  uint tColR;  // t's first column | rank << 16 (rank 0: no term)
  uint group;  // 0: f16 bt; else the 8-bit rows' group
  float scale;
};
#endif

layout(push_constant) uniform Push {
  uint xOff, xStride;  // floats
  uint yOff, yStride;  // floats; yOff includes the first column
  uint wOff;           // elements of W (bytes when packed) of row 0
  uint rowElems;       // elements (bytes) per weight row
  uint K, N, M;
  uint tilesX;         // workgroups in x
  uint accumulate;
#ifdef LORA
  uint tOff, tStride; // floats: t's row 0 for this dispatch, t's row length
  LoraTerm term[LORA_TERMS];
#endif
} pc;

shared float red[TEAMS * LANES * MR];

uint gM0; // the workgroup's first activation row
float xAt(uint i, uint k) { return x[pc.xOff + (gM0 + i) * pc.xStride + k]; }
#define XLOAD(i, k) xAt(i, k)
#include "dot.glsl"
DEFINE_DOT(dotRow, w, XLOAD)
DEFINE_TEAM_REDUCE(teamReduce, red)

#ifdef LORA
// bt[r][c] of a term in buffer BUF.
#define DEFINE_BT(NAME, BUF)                                                  \
  float NAME(LoraTerm tm, uint r, uint c) {                                   \
    if (tm.group == 0u) {                                                     \
      uint at = tm.bOff + r * 2u * tm.rows + 2u * c;                          \
      return halfOf(uint(BUF[at]), uint(BUF[at + 1u]));                       \
    }                                                                         \
    uint row = tm.bOff + r * (tm.rows + 2u * (tm.rows / tm.group));           \
    uint sAt = row + tm.rows + 2u * (c / tm.group);                           \
    float s = halfOf(uint(BUF[sAt]), uint(BUF[sAt + 1u]));                    \
    return (float(uint(BUF[row + c])) - 127.5) * s;                           \
  }
DEFINE_BT(bt0, b0)
DEFINE_BT(bt1, b1)
DEFINE_BT(bt2, b2)

// Adds this lane's share of the terms on column n to acc.
void loraAdd(uint n, uint lane, uint rows, inout float acc[MR]) {
  for (uint j = 0u; j < LORA_TERMS; ++j) {
    LoraTerm tm = pc.term[j];
    uint R = tm.tColR >> 16, tCol = tm.tColR & 0xffffu;
    int c = int(n) - tm.col0;
    if (R == 0u || c < 0 || uint(c) >= tm.rows)
      continue;
    for (uint r = lane; r < R; r += LANES) {
      float b = j == 0u ? bt0(tm, r, uint(c)) : j == 1u ? bt1(tm, r, uint(c)) : bt2(tm, r, uint(c));
      float sb = tm.scale * b;
      for (uint i = 0u; i < MR; ++i)
        if (i < rows)
          acc[i] += sb * t[pc.tOff + (gM0 + i) * pc.tStride + tCol + r];
    }
  }
}
#endif

void main() {
  uint t = gl_LocalInvocationID.x, lane = t % LANES, team = t / LANES;
  uint n = (gl_WorkGroupID.y * pc.tilesX + gl_WorkGroupID.x) * TEAMS + team;
  gM0 = gl_WorkGroupID.z * MR;
  uint rows = min(MR, pc.M - gM0);
  float acc[MR];
  for (uint i = 0u; i < MR; ++i)
    acc[i] = 0.0;
  if (n < pc.N)
    dotRow(pc.wOff + n * pc.rowElems, pc.K, lane, rows, acc);
#ifdef LORA
  if (n < pc.N)
    loraAdd(n, lane, rows, acc);
#endif
  teamReduce(t, lane, acc);
  if (lane == 0u && n < pc.N)
    for (uint i = 0u; i < MR; ++i)
      if (i < rows) {
        uint at = pc.yOff + (gM0 + i) * pc.yStride + n;
        float v = red[t * MR + i];
        y[at] = pc.accumulate != 0u ? y[at] + v : v;
      }
}
