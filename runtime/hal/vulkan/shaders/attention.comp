#version 450
// Causal grouped-query attention of the launch's query rows over one KV-cache
// slot (f32, or int8 with per-slot scales: KV8 = 1), with an optional local
// window: out[s][h] = softmax_j(scale · q[s][h] · k[j][g]) · v[j][g] over the
// positions j the query at position p = pos0 + s sees (j <= p, and
// p - window < j when window > 0), g = h / (H / KVH).
//
// A workgroup per (head, row): its 64 invocations score 64 keys at a time
// (one key each), keep a running maximum and sum (online softmax), and own
// every 64th output dimension for the V accumulation. Reductions go through
// shared memory, so the kernel does not depend on the subgroup width.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require

#ifndef KV8
#define KV8 0
#endif
#if KV8
#define KVTYPE int8_t
#else
#define KVTYPE float
#endif

#define T 64u
#define MAXD 512u
#define DPER (MAXD / T)
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };
layout(set = 0, binding = 2) readonly buffer Kc { KVTYPE kc[]; };
layout(set = 0, binding = 3) readonly buffer Vc { KVTYPE vc[]; };

layout(push_constant) uniform Push {
  uint qOff, qStride, oOff, oStride; // floats
  uint kOff, vOff;                   // elements of row 0 of the slot
  uint pos0, H, KVH, D, window;
  float scale;                       // includes the K scale of an int8 cache
  float vScale;                      // 1 for an f32 cache
} pc;

shared float qs[MAXD];
shared float ps[T];
shared float red[T];

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

void main() {
  uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  uint D = pc.D, p = pc.pos0 + s, g = h / (pc.H / pc.KVH);
  uint kvWidth = pc.KVH * D;
  for (uint d = t; d < D; d += T)
    qs[d] = q[pc.qOff + s * pc.qStride + h * D + d];
  barrier();

  uint lo = pc.window > 0u && p + 1u > pc.window ? p + 1u - pc.window : 0u;
  const float lowest = -3.402823466e38;
  float m = lowest, l = 0.0;
  float acc[DPER];
  for (uint i = 0u; i < DPER; ++i)
    acc[i] = 0.0;

  for (uint j0 = lo; j0 <= p; j0 += T) {
    uint j = j0 + t;
    float score = lowest;
    if (j <= p) {
      uint kRow = pc.kOff + j * kvWidth + g * D;
      float dotv = 0.0;
      for (uint d = 0u; d < D; ++d)
        dotv += qs[d] * float(kc[kRow + d]);
      score = dotv * pc.scale;
    }
    float mNew = max(m, maxAll(t, score));
    float alpha = exp(m - mNew);
    float pj = j <= p ? exp(score - mNew) : 0.0;
    ps[t] = pj;
    l = l * alpha + sumAll(t, pj); // sumAll's barriers publish ps
    uint n = min(T, p + 1u - j0);
    for (uint i = 0u; i < DPER; ++i) {
      uint d = t + i * T;
      if (d < D) {
        float a = acc[i] * alpha;
        uint vCol = pc.vOff + j0 * kvWidth + g * D + d;
        for (uint b = 0u; b < n; ++b)
          a += ps[b] * float(vc[vCol + b * kvWidth]);
        acc[i] = a;
      }
    }
    m = mNew;
    barrier(); // ps is rewritten by the next block
  }
  float inv = pc.vScale / l;
  for (uint i = 0u; i < DPER; ++i) {
    uint d = t + i * T;
    if (d < D)
      o[pc.oOff + s * pc.oStride + h * D + d] = acc[i] * inv;
  }
}
