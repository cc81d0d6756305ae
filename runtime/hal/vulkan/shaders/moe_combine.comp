#version 450
// MoE combine: y[r] (+)= Σ_j wgt[r][j] · o[r * topK + j] (choices in rank
// order, as kernels/moe.cpp adds them), then + sigmoid(g[r]) · o[M * topK + r]
// with a shared expert.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Ob { float ob[]; };
layout(set = 0, binding = 1) readonly buffer Wg { float wgt[]; };
layout(set = 0, binding = 2) readonly buffer G { float gate[]; };
layout(set = 0, binding = 3) buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint yOff, yStride; // floats
  uint K, topK, M;
  uint accumulate, sharedExpert;
} pc;

void main() {
  uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
  if (c >= pc.K)
    return;
  uint at = pc.yOff + r * pc.yStride + c;
  float v = pc.accumulate != 0u ? y[at] : 0.0;
  for (uint j = 0u; j < pc.topK; ++j) {
    uint slot = r * pc.topK + j;
    v += wgt[slot] * ob[slot * pc.K + c];
  }
  if (pc.sharedExpert != 0u) {
    float g = 1.0 / (1.0 + exp(-gate[r]));
    v += g * ob[(pc.M * pc.topK + r) * pc.K + c];
  }
  y[at] = v;
}
