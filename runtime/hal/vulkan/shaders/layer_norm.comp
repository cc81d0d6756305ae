#version 450
// LayerNorm with weight and bias over one row per workgroup, as
// kernels/pointwise.h: the mean first, then the mean squared deviation from
// it (biased variance), y = (x − mean) · (var + eps)^-½ · weight + bias.
// y may be x: each invocation reads its columns before it writes them, and
// the reductions go through shared memory (no subgroup width assumed).
#define T 64u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(set = 0, binding = 2) readonly buffer Wt { float w[]; };
layout(set = 0, binding = 3) readonly buffer Bs { float b[]; };

layout(push_constant) uniform Push {
  uint xOff, xStride, yOff, yStride, width; // floats
  uint wOff, bOff;                          // floats of weight[0], bias[0]
  float eps;
} pc;

shared float red[T];

float sumAll(uint t, float v) {
  red[t] = v;
  barrier();
  for (uint step = T / 2u; step > 0u; step >>= 1) {
    if (t < step)
      red[t] += red[t + step];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void main() {
  uint r = gl_WorkGroupID.x, t = gl_LocalInvocationID.x, C = pc.width;
  uint xr = pc.xOff + r * pc.xStride, yr = pc.yOff + r * pc.yStride;
  float s = 0.0;
  for (uint c = t; c < C; c += T)
    s += x[xr + c];
  float mean = sumAll(t, s) / float(C);
  float d2 = 0.0;
  for (uint c = t; c < C; c += T) {
    float d = x[xr + c] - mean;
    d2 += d * d;
  }
  float var = sumAll(t, d2) / float(C);
  float rstd = 1.0 / sqrt(var + pc.eps);
  for (uint c = t; c < C; c += T)
    y[yr + c] = (x[xr + c] - mean) * rstd * w[pc.wOff + c] + b[pc.bOff + c];
}
