#version 450
// y[m][col0 + n] (+)= x[m] · w[n] for a block of weight rows (an nn.Linear
// [N][K] in f32, f16 or a packed low-bit format, dequantized here) and up to
// MR activation rows per workgroup; f32 activations and accumulation.
//
// A workgroup is TEAMS teams of LANES invocations; team j computes weight
// row (tile * TEAMS + j) for activation rows m0 .. m0 + MR - 1 (m0 =
// workgroup z * MR). Tiles beyond 65535 fold into the y dimension.
#include "common.glsl"

#define LANES 16u
#define TEAMS 4u
#define MR 8u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { WTYPE w[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint xOff, xStride;  // floats
  uint yOff, yStride;  // floats; yOff includes the first column
  uint wOff;           // elements of W (bytes when packed) of row 0
  uint rowElems;       // elements (bytes) per weight row
  uint K, N, M;
  uint tilesX;         // workgroups in x
  uint accumulate;
} pc;

shared float red[TEAMS * LANES * MR];

uint gM0; // the workgroup's first activation row
float xAt(uint i, uint k) { return x[pc.xOff + (gM0 + i) * pc.xStride + k]; }
#define XLOAD(i, k) xAt(i, k)
#include "dot.glsl"
DEFINE_DOT(dotRow, w, XLOAD)
DEFINE_TEAM_REDUCE(teamReduce, red)

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
  teamReduce(t, lane, acc);
  if (lane == 0u && n < pc.N)
    for (uint i = 0u; i < MR; ++i)
      if (i < rows) {
        uint at = pc.yOff + (gM0 + i) * pc.yStride + n;
        float v = red[t * MR + i];
        y[at] = pc.accumulate != 0u ? y[at] + v : v;
      }
}
