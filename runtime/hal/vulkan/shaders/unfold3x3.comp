#version 450
// The unfolded taps of a 3x3 convolution with zero padding 1 over a gh × gw
// grid of tokens (kernels/conv.h conv3x3Unfold): cols[t][i·9 + dy·3 + dx] =
// x[(ty + dy − 1)·gw + tx + dx − 1][i], 0 outside the grid: the order of
// weight.reshape(Cout, Cin·9), so the matmul kernel multiplies them.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Cols { float cols[]; };

layout(push_constant) uniform Push {
  uint xOff, xStride, colsOff; // floats
  uint gh, gw, cin;
} pc;

void main() {
  uint k = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y, K = pc.cin * 9u;
  if (k >= K)
    return;
  uint i = k / 9u, tap = k % 9u;
  int sy = int(t / pc.gw) + int(tap / 3u) - 1, sx = int(t % pc.gw) + int(tap % 3u) - 1;
  float v = 0.0;
  if (sy >= 0 && sy < int(pc.gh) && sx >= 0 && sx < int(pc.gw))
    v = x[pc.xOff + (uint(sy) * pc.gw + uint(sx)) * pc.xStride + i];
  cols[pc.colsOff + t * K + k] = v;
}
