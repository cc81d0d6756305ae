#version 450
// MoE expert up projection: for the slots routed to one expert,
// h[slot][i] = silu(x · gate[i]) · (x · up[i]) with x the slot's row; for
// the shared expert (its own h binding), h[r][i] of every row r. Teams and MR slots per workgroup as in matmul.comp;
// workgroup (x, y) covers intermediate rows x * TEAMS .. and the slots
// y * MR .. of the expert's list (indirect dispatch: the plan sized it).
#include "common.glsl"

#define LANES 16u
#define TEAMS 4u
#define MR 8u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer Gw { WTYPE wg[]; };
layout(set = 0, binding = 2) readonly buffer Uw { WTYPE wu[]; };
layout(set = 0, binding = 3) readonly buffer L { uint list[]; };
layout(set = 0, binding = 4) readonly buffer F { uint first[]; };
layout(set = 0, binding = 5) writeonly buffer Hb { float hb[]; };

layout(push_constant) uniform Push {
  uint xOff, xStride;     // floats
  uint gateOff, upOff;    // elements (bytes) of row 0
  uint rowElems;          // elements (bytes) per weight row
  uint K, I;
  uint expert;            // its slots: list[first[e] .. first[e + 1])
  uint topK;              // row of slot s: s / topK
  uint sharedExpert;      // 1: the shared expert, on rows 0 .. M - 1
  uint M;
} pc;

shared float red[TEAMS * LANES * MR];

uint gRow[MR]; // the activation row of each of the workgroup's slots
uint gH[MR];   // and its h row

float xAt(uint i, uint k) { return x[pc.xOff + gRow[i] * pc.xStride + k]; }
#define XLOAD(i, k) xAt(i, k)
#include "dot.glsl"
DEFINE_DOT(dotGate, wg, XLOAD)
DEFINE_DOT(dotUp, wu, XLOAD)
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
      gRow[i] = at;
      gH[i] = at;
    } else {
      uint slot = list[begin + at];
      gRow[i] = slot / pc.topK;
      gH[i] = slot;
    }
  }
  float g[MR], u[MR];
  for (uint i = 0u; i < MR; ++i) {
    g[i] = 0.0;
    u[i] = 0.0;
  }
  if (n < pc.I && rows > 0u) {
    dotGate(pc.gateOff + n * pc.rowElems, pc.K, lane, rows, g);
    dotUp(pc.upOff + n * pc.rowElems, pc.K, lane, rows, u);
  }
  teamReduce(t, lane, g);
  float gs[MR];
  for (uint i = 0u; i < MR; ++i)
    gs[i] = red[t * MR + i];
  barrier();
  teamReduce(t, lane, u);
  if (lane == 0u && n < pc.I)
    for (uint i = 0u; i < MR; ++i)
      if (i < rows) {
        float gv = gs[i];
        hb[gH[i] * pc.I + n] = gv / (1.0 + exp(-gv)) * red[t * MR + i];
      }
}
