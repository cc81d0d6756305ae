#version 450
// MoE expert down projection: o[slot][k] = h[slot] · down[k] for the slots
// of one expert; for the shared expert o[M * topK + r][k] = h[r] · down[k]
// of every row r (h is then the shared expert's binding); see moe_up.comp.
#include "common.glsl"

#define LANES 16u
#define TEAMS 4u
#define MR 8u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Hb { float hb[]; };
layout(set = 0, binding = 1) readonly buffer Dw { WTYPE wd[]; };
layout(set = 0, binding = 2) readonly buffer L { uint list[]; };
layout(set = 0, binding = 3) readonly buffer F { uint first[]; };
layout(set = 0, binding = 4) writeonly buffer Ob { float ob[]; };

layout(push_constant) uniform Push {
  uint downOff;   // elements (bytes) of row 0
  uint rowElems;  // elements (bytes) per weight row
  uint I, K;      // inputs (intermediate), outputs (hidden)
  uint expert, topK, sharedExpert, M;
} pc;

shared float red[TEAMS * LANES * MR];

uint gH[MR], gO[MR]; // each slot's h row and o row

float hAt(uint i, uint k) { return hb[gH[i] * pc.I + k]; }
#define XLOAD(i, k) hAt(i, k)
#include "dot.glsl"
DEFINE_DOT(dotDown, wd, XLOAD)
DEFINE_TEAM_REDUCE(teamReduce, red)

void main() {
  uint t = gl_LocalInvocationID.x, lane = t % LANES, team = t / LANES;
  uint n = gl_WorkGroupID.x * TEAMS + team;
  uint begin, count;
  if (pc.sharedExpert != 0u) {
    begin = 0u;
    count = pc.M;
  } else {
    begin = first[pc.expert];
    count = first[pc.expert + 1u] - begin;
  }
  uint s0 = gl_WorkGroupID.y * MR;
  uint rows = s0 < count ? min(MR, count - s0) : 0u;
  for (uint i = 0u; i < MR; ++i) {
    uint at = s0 + min(i, max(rows, 1u) - 1u);
    if (pc.sharedExpert != 0u) {
      gH[i] = at;
      gO[i] = pc.M * pc.topK + at;
    } else {
      gH[i] = gO[i] = list[begin + at];
    }
  }
  float acc[MR];
  for (uint i = 0u; i < MR; ++i)
    acc[i] = 0.0;
  if (n < pc.K && rows > 0u)
    dotDown(pc.downOff + n * pc.rowElems, pc.I, lane, rows, acc);
  teamReduce(t, lane, acc);
  if (lane == 0u && n < pc.K)
    for (uint i = 0u; i < MR; ++i)
      if (i < rows)
        ob[gO[i] * pc.K + n] = red[t * MR + i];
}
