#version 450
// y[r][c] = alpha · y[r][c] + beta · x[r][c] over rows × width (a zero
// alpha or beta skips its read, so stale NaNs do not leak): row copies, and
// the sums, zeroing and scale of an AllReduce.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint xOff, xStride, yOff, yStride; // floats
  uint width;
  float alpha, beta;
} pc;

void main() {
  uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
  if (c >= pc.width)
    return;
  uint at = pc.yOff + r * pc.yStride + c;
  float v = pc.beta != 0.0 ? pc.beta * x[pc.xOff + r * pc.xStride + c] : 0.0;
  y[at] = pc.alpha != 0.0 ? pc.alpha * y[at] + v : v;
}
