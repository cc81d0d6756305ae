#version 450
// out[c] = table[token][c] for one looked-up row: f32, f16 or a packed
// low-bit row (dequantized). One dispatch per token: the host knows the
// tokens when it records the command buffer, and a table larger than one
// storage-buffer range is bound through the window that holds the row.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer T { WTYPE table[]; };
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
  uint rowOff; // elements (bytes when packed) of the row in the binding
  uint outOff; // floats
  uint width;
} pc;

void main() {
  uint c = gl_GlobalInvocationID.x;
  if (c >= pc.width)
    return;
  float v;
  if (WKIND == 0) {
    v = float(table[pc.rowOff + c]);
  } else if (WKIND == 1) {
    v = unpackHalf2x16(uint(table[pc.rowOff + c])).x;
  } else {
    // Input c: unit c / U, byte (c % U) % unitBytes, plane (c % U) / unitBytes.
    uint u = c / QUNIT, i = c % QUNIT;
    uint byte = uint(table[pc.rowOff + u * QUNIT_BYTES + i % QUNIT_BYTES]);
    float q = float((byte >> (QBITS * (i / QUNIT_BYTES))) & QMASK);
    uint g = c / QGROUP, groups = pc.width / QGROUP;
    uint sAt = pc.rowOff + quantBytes(pc.width) + 2u * g;
    float s = halfOf(uint(table[sAt]), uint(table[sAt + 1u]));
    if (QAFFINE) {
      uint mAt = sAt + 2u * groups;
      v = q * s + halfOf(uint(table[mAt]), uint(table[mAt + 1u]));
    } else {
      v = (q - qcenter()) * s;
    }
  }
  o[pc.outOff + c] = v;
}
