#version 450
// MoE routing, one invocation per row: p = softmax(router logits) in f32,
// the top k taken as kernels/moe.cpp takes them (a strictly larger
// probability displaces, so ties keep the lower expert index), renormalized
// to sum 1 when normTopk. Writes the choices and their weights in rank
// order: sel[r * topK + j], wgt[r * topK + j].
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer R { float logits[]; };
layout(set = 0, binding = 1) writeonly buffer S { uint sel[]; };
layout(set = 0, binding = 2) writeonly buffer Wg { float wgt[]; };

layout(push_constant) uniform Push {
  uint M, E, topK, normTopk;
} pc;

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= pc.M)
    return;
  uint base = r * pc.E;
  float mx = logits[base];
  for (uint e = 1u; e < pc.E; ++e)
    mx = max(mx, logits[base + e]);
  float sum = 0.0;
  for (uint e = 0u; e < pc.E; ++e)
    sum += exp(logits[base + e] - mx);
  float inv = 1.0 / sum;
  float kept = 0.0;
  // The choices so far live in sel (written, then only compared).
  uint chosen[8];
  float weight[8];
  for (uint j = 0u; j < pc.topK; ++j) {
    int best = -1;
    float bestP = 0.0;
    for (uint e = 0u; e < pc.E; ++e) {
      bool taken = false;
      for (uint i = 0u; i < j; ++i)
        taken = taken || chosen[i] == e;
      float p = exp(logits[base + e] - mx) * inv;
      if (!taken && (best < 0 || p > bestP)) {
        best = int(e);
        bestP = p;
      }
    }
    chosen[j] = uint(best);
    weight[j] = bestP;
    kept += bestP;
  }
  for (uint j = 0u; j < pc.topK; ++j) {
    sel[r * pc.topK + j] = chosen[j];
    wgt[r * pc.topK + j] = pc.normTopk != 0u ? weight[j] / kept : weight[j];
  }
}
