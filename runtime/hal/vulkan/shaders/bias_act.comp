#version 450
// The epilogue of an image encoder's matmul (shaders/matmul.comp wrote
// x·Wᵀ, or added it to y): y[r][c] = act(y[r][c] + bias[c]) over rows ×
// width, the activation one of the GELU family of kernels/pointwise.h with
// the same formulas (erf by the XLA/Eigen rational approximation, the
// sigmoids from e^-|z|).
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) buffer Y { float y[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };

layout(push_constant) uniform Push {
  uint yOff, yStride, width; // floats
  uint bOff;                 // float of bias[0]
  uint hasBias;
  uint act;                  // 0 none, 1 gelu (erf), 2 gelu_tanh, 3 quick_gelu
} pc;

float erfApprox(float x) {
  x = clamp(x, -4.0, 4.0);
  float x2 = x * x;
  float p = -2.72614225801306e-10;
  p = p * x2 + 2.77068142495902e-08;
  p = p * x2 + -2.10102402082508e-06;
  p = p * x2 + -5.69250639462346e-05;
  p = p * x2 + -7.34990630326855e-04;
  p = p * x2 + -2.95459980854025e-03;
  p = p * x2 + -1.60960333262415e-02;
  float q = -1.45660718464996e-05;
  q = q * x2 + -2.13374055278905e-04;
  q = q * x2 + -1.68282697438203e-03;
  q = q * x2 + -7.37332916720468e-03;
  q = q * x2 + -1.42647390514189e-02;
  return x * p / q;
}

float sigmoid(float z) {
  float e = exp(-abs(z));
  float inv = 1.0 / (1.0 + e);
  return z >= 0.0 ? inv : e * inv;
}

void main() {
  uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
  if (c >= pc.width)
    return;
  uint at = pc.yOff + r * pc.yStride + c;
  float v = y[at];
  if (pc.hasBias != 0u)
    v += b[pc.bOff + c];
  if (pc.act == 1u) {
    v = 0.5 * v * (1.0 + erfApprox(v * 0.70710678118654752));
  } else if (pc.act == 2u) {
    float u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    v = v * sigmoid(2.0 * u);
  } else if (pc.act == 3u) {
    v = v * sigmoid(1.702 * v);
  }
  y[at] = v;
}
