#version 450
// The patch embedding of an image encoder (hal/Device.h PatchEmbedDesc):
// output row t < R is register t; row R + i is patch i (row-major over the
// grid of patch × patch patches of the [channels][H][W] image), flattened
// as (channel, row, column) and multiplied by weight [dim][channels·patch²]
// + bias (+ pos[i]). A workgroup per output row: the patch is gathered into
// shared memory once, then each invocation computes every 64th column.
#define T 64u
#define MAXK 1024u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Img { float img[]; };
layout(set = 0, binding = 1) readonly buffer Wt { float w[]; };
layout(set = 0, binding = 2) readonly buffer Bs { float b[]; };
layout(set = 0, binding = 3) readonly buffer Pos { float pos[]; };
layout(set = 0, binding = 4) readonly buffer Reg { float reg[]; };
layout(set = 0, binding = 5) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
  uint imgOff, oOff, oStride;      // floats
  uint channels, H, W, p, dim, R;
  uint wOff, bOff, posOff, regOff; // floats of each weight's element 0
  uint hasPos;
} pc;

shared float taps[MAXK];

void main() {
  uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  uint outRow = pc.oOff + row * pc.oStride;
  if (row < pc.R) {
    for (uint c = t; c < pc.dim; c += T)
      o[outRow + c] = reg[pc.regOff + row * pc.dim + c];
    return;
  }
  uint i = row - pc.R, gw = pc.W / pc.p;
  uint py = i / gw, px = i % gw, pp = pc.p * pc.p, K = pc.channels * pp;
  for (uint k = t; k < K; k += T) {
    uint ch = k / pp, rr = (k % pp) / pc.p, cc = k % pc.p;
    taps[k] = img[pc.imgOff + (ch * pc.H + py * pc.p + rr) * pc.W + px * pc.p + cc];
  }
  barrier();
  for (uint c = t; c < pc.dim; c += T) {
    uint wr = pc.wOff + c * K;
    float acc = 0.0;
    for (uint k = 0u; k < K; ++k)
      acc += taps[k] * w[wr + k];
    acc += b[pc.bOff + c];
    if (pc.hasPos != 0u)
      acc += pos[pc.posOff + i * pc.dim + c];
    o[outRow + c] = acc;
  }
}
