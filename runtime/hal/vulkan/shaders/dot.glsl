// dot_<W>(row, ...): accumulates, for MR activation rows, the products of
// one weight row of buffer W (of the kind WKIND) with the rows: acc[i] +=
// Σ_k w[row][k] · x_i[k]. The lanes of a team of LANES invocations split
// the row (f32/f16: every LANES-th input; packed: every LANES-th group), and
// the caller reduces the team's partial sums.
//
// Expanded once per weight buffer (GLSL cannot pass a buffer to a function):
//   DEFINE_DOT(name, wbuf, xload) with xload(i, k) the f32 input k of
//   activation row i.
#define DEFINE_DOT(NAME, WBUF, XLOAD)                                         \
  void NAME(uint rowStart, uint K, uint lane, uint rows, inout float acc[MR]) { \
    if (WKIND != 2) {                                                         \
      for (uint k = lane; k < K; k += LANES) {                                \
        float wv = WKIND == 0 ? float(WBUF[rowStart + k])                     \
                              : unpackHalf2x16(uint(WBUF[rowStart + k])).x;   \
        for (uint i = 0u; i < MR; ++i)                                        \
          if (i < rows)                                                       \
            acc[i] += wv * XLOAD(i, k);                                       \
      }                                                                       \
      return;                                                                 \
    }                                                                         \
    uint groups = K / QGROUP;                                                 \
    uint scales = rowStart + quantBytes(K);                                   \
    for (uint g = lane; g < groups; g += LANES) {                             \
      float sq[MR], sx[MR];                                                   \
      for (uint i = 0u; i < MR; ++i) {                                        \
        sq[i] = 0.0;                                                          \
        sx[i] = 0.0;                                                          \
      }                                                                       \
      for (uint u = 0u; u < QGROUP / QUNIT; ++u) {                            \
        uint k0 = g * QGROUP + u * QUNIT;                                     \
        uint q0 = rowStart + k0 * QBITS / 8u;                                 \
        for (uint b = 0u; b < QUNIT_BYTES; ++b) {                             \
          uint byte = uint(WBUF[q0 + b]);                                     \
          for (uint j = 0u; j < QPLANES; ++j) {                               \
            float q = float((byte >> (QBITS * j)) & QMASK);                   \
            uint k = k0 + j * QUNIT_BYTES + b;                                \
            for (uint i = 0u; i < MR; ++i)                                    \
              if (i < rows) {                                                 \
                float xv = XLOAD(i, k);                                       \
                sq[i] += q * xv;                                              \
                sx[i] += xv;                                                  \
              }                                                               \
          }                                                                   \
        }                                                                     \
      }                                                                       \
      uint sAt = scales + 2u * g;                                             \
      float s = halfOf(uint(WBUF[sAt]), uint(WBUF[sAt + 1u]));                \
      float m = -qcenter() * s;                                                 \
      if (QAFFINE) {                                                          \
        uint mAt = scales + 2u * groups + 2u * g;                             \
        m = halfOf(uint(WBUF[mAt]), uint(WBUF[mAt + 1u]));                    \
      }                                                                       \
      for (uint i = 0u; i < MR; ++i)                                          \
        if (i < rows)                                                         \
          acc[i] += s * sq[i] + m * sx[i];                                    \
    }                                                                         \
  }

// Sums each team's LANES partial sums (red: [TEAMS * LANES][MR] floats,
// invocation t at t * MR); the team's lane 0 then holds the totals in
// red[team * LANES * MR + i]. Every invocation of the workgroup calls it.
#define DEFINE_TEAM_REDUCE(NAME, RED)                                         \
  void NAME(uint t, uint lane, inout float acc[MR]) {                         \
    for (uint i = 0u; i < MR; ++i)                                            \
      RED[t * MR + i] = acc[i];                                               \
    barrier();                                                                \
    for (uint step = LANES / 2u; step > 0u; step >>= 1) {                     \
      if (lane < step)                                                        \
        for (uint i = 0u; i < MR; ++i)                                        \
          RED[t * MR + i] += RED[(t + step) * MR + i];                        \
      barrier();                                                              \
    }                                                                         \
  }
