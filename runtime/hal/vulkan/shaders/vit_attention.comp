#version 450
// A ViT block's bidirectional attention (kernels/vit_attention.h states the
// semantics): global, or ViTDet windows of window × window patches over the
// grid zero-padded at the bottom/right (padded tokens take the qkv row
// `pad`, the qkv bias, or zeros, and are not masked), registers first in
// every window's keys, the decomposed relative-position bias on patch ×
// patch scores from the unscaled q, and each register's output the mean of
// its outputs over all windows, summed in window order.
//
// A workgroup per (token, head): its 64 invocations score 64 keys at a time
// (one each), keep a running maximum and sum (online softmax), and own
// every 64th output dimension for the V accumulation. Reductions go
// through shared memory, so nothing depends on the subgroup width.
#define T 64u
#define MAXD 256u
#define MAXS 256u
#define DPER (MAXD / T)
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Qkv { float qkv[]; };
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };
layout(set = 0, binding = 2) readonly buffer RelH { float relH[]; };
layout(set = 0, binding = 3) readonly buffer RelW { float relW[]; };
layout(set = 0, binding = 4) readonly buffer Pad { float pad[]; };

layout(push_constant) uniform Push {
  uint qOff, qStride, oOff, oStride; // floats
  uint R, gh, gw, H, D, window;
  uint relHOff, relWOff, padOff;     // floats of each table's element 0
  uint flags;                        // 1: rel-pos tables, 2: a pad row
  float scale;
} pc;

shared float qs[MAXD];
shared float ps[T];
shared float red[T];
shared float biasH[MAXS], biasW[MAXS];
// Where key b of the current block of 64 is: its qkv float, or a padded
// token (kPad: the pad row; kZero: zeros).
shared uint keyAt[T];
const uint kPad = 0xFFFFFFFEu, kZero = 0xFFFFFFFFu;

float maxAll(uint t, float v) {
  red[t] = v;
  barrier();
  for (uint step = T / 2u; step > 0u; step >>= 1) {
    if (t < step)
      red[t] = max(red[t], red[t + step]);
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

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

// Element `at` of the key part (part 1) or value part (part 2) of the key
// whose place is `where`.
float kv(uint where, uint part, uint at) {
  uint C = pc.H * pc.D;
  if (where == kZero)
    return 0.0;
  if (where == kPad)
    return pad[pc.padOff + part * C + at];
  return qkv[where + part * C + at];
}

void main() {
  uint tok = gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  uint D = pc.D, w = pc.window, R = pc.R, gh = pc.gh, gw = pc.gw;
  for (uint d = t; d < D; d += T)
    qs[d] = qkv[pc.qOff + tok * pc.qStride + h * D + d];

  uint Sh = w > 0u ? w : gh, Sw = w > 0u ? w : gw;
  uint nY = w > 0u ? (gh + w - 1u) / w : 1u, nX = w > 0u ? (gw + w - 1u) / w : 1u;
  bool isRegister = tok < R;
  bool rel = (pc.flags & 1u) != 0u && !isRegister;
  uint win0 = 0u, win1 = nY * nX, ly = 0u, lx = 0u;
  if (!isRegister) {
    uint i = tok - R, y = i / gw, x = i % gw;
    ly = w > 0u ? y % w : y;
    lx = w > 0u ? x % w : x;
    win0 = w > 0u ? (y / w) * nX + x / w : 0u;
    win1 = win0 + 1u;
  }
  barrier(); // qs
  if (rel) {
    // biasH[ky] = q · relH[ly − ky + Sh − 1], biasW[kx] likewise.
    for (uint ky = t; ky < Sh; ky += T) {
      uint row = pc.relHOff + (ly + Sh - 1u - ky) * D;
      float s = 0.0;
      for (uint d = 0u; d < D; ++d)
        s += qs[d] * relH[row + d];
      biasH[ky] = s;
    }
    for (uint kx = t; kx < Sw; kx += T) {
      uint row = pc.relWOff + (lx + Sw - 1u - kx) * D;
      float s = 0.0;
      for (uint d = 0u; d < D; ++d)
        s += qs[d] * relW[row + d];
      biasW[kx] = s;
    }
    barrier();
  }

  const float lowest = -3.402823466e38;
  float total[DPER];
  for (uint i = 0u; i < DPER; ++i)
    total[i] = 0.0;
  uint N = R + Sh * Sw;
  float meanWeight = isRegister && w > 0u ? 1.0 / float(nY * nX) : 1.0;
  for (uint win = win0; win < win1; ++win) {
    uint wy = win / nX, wx = win % nX;
    float m = lowest, l = 0.0;
    float acc[DPER];
    for (uint i = 0u; i < DPER; ++i)
      acc[i] = 0.0;
    for (uint j0 = 0u; j0 < N; j0 += T) {
      uint j = j0 + t;
      float score = lowest;
      if (j < N) {
        uint where;
        float bias = 0.0;
        if (j < R) {
          where = pc.qOff + j * pc.qStride;
        } else {
          uint kl = j - R, ky = kl / Sw, kx = kl % Sw;
          uint y = wy * Sh + ky, x = wx * Sw + kx;
          if (y < gh && x < gw)
            where = pc.qOff + (R + y * gw + x) * pc.qStride;
          else
            where = (pc.flags & 2u) != 0u ? kPad : kZero;
          if (rel)
            bias = biasH[ky] + biasW[kx];
        }
        keyAt[t] = where;
        float dotv = 0.0;
        for (uint d = 0u; d < D; ++d)
          dotv += qs[d] * kv(where, 1u, h * D + d);
        score = dotv * pc.scale + bias;
      }
      float mNew = max(m, maxAll(t, score));
      float alpha = exp(m - mNew);
      float pj = j < N ? exp(score - mNew) : 0.0;
      ps[t] = pj;
      l = l * alpha + sumAll(t, pj); // its barriers publish ps and keyAt
      uint n = min(T, N - j0);
      for (uint i = 0u; i < DPER; ++i) {
        uint d = t + i * T;
        if (d < D) {
          float a = acc[i] * alpha;
          for (uint b = 0u; b < n; ++b)
            a += ps[b] * kv(keyAt[b], 2u, h * D + d);
          acc[i] = a;
        }
      }
      m = mNew;
      barrier(); // ps and keyAt are rewritten by the next block
    }
    for (uint i = 0u; i < DPER; ++i)
      total[i] += acc[i] / l * meanWeight;
  }
  for (uint i = 0u; i < DPER; ++i) {
    uint d = t + i * T;
    if (d < D)
      o[pc.oOff + tok * pc.oStride + h * D + d] = total[i];
  }
}
