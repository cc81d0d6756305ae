#version 450
// The adapter's average pooling (kernels/conv.h adapterAvgPool): output
// token (oy, ox) of the gOut × gOut grid is the mean of the k × k tokens
// from (oy·s, ox·s) of the g × g grid, per channel; summed in row-major
// order, then scaled by 1 / k².
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint xOff, xStride, yOff, yStride, width; // floats
  uint g, gOut, s, k;
} pc;

void main() {
  uint c = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
  if (c >= pc.width)
    return;
  uint oy = t / pc.gOut, ox = t % pc.gOut;
  float acc = 0.0;
  for (uint ky = 0u; ky < pc.k; ++ky)
    for (uint kx = 0u; kx < pc.k; ++kx)
      acc += x[pc.xOff + ((oy * pc.s + ky) * pc.g + ox * pc.s + kx) * pc.xStride + c];
  y[pc.yOff + t * pc.yStride + c] = acc * (1.0 / float(pc.k * pc.k));
}
