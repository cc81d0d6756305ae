// A plain double-precision ViT attention (docs/vit.md), written the long
// way: the padded grid is materialized, every window is its own list of
// tokens, and every score is an explicit sum. The reference that
// vitAttention is tested against; its ablation switches give the wrong
// semantics that the tests must be able to tell apart.
#pragma once

#include "kernels/vit_attention.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace fm::kernels::reference {

/// Deliberately wrong variants (all false: the real semantics).
struct VitAblation {
  bool maskPaddedKeys = false;       ///< leave padded tokens out of the keys
  bool registersFromFirstWindow = false; ///< no mean: window 0's output
  bool relFromScaledQ = false;       ///< bias from scale · q
};

/// out[t][h·D + d] for the args' tokens, as doubles ([R + gh·gw][H·D]).
inline std::vector<double> vitAttention(const VitAttentionArgs &a,
                                        VitAblation ab = {}) {
  const int64_t R = a.registers, gh = a.gridH, gw = a.gridW, H = a.H, D = a.D;
  const int64_t C = H * D, ld = a.ldQkv ? a.ldQkv : 3 * C;
  const int64_t w = a.window;
  const int64_t Sh = w ? w : gh, Sw = w ? w : gw;
  const int64_t nY = w ? (gh + w - 1) / w : 1, nX = w ? (gw + w - 1) / w : 1;
  const bool rel = a.relPosH != nullptr;
  std::vector<double> out((R + gh * gw) * C, 0.0);

  struct Token {
    const float *row; // null: a padded token without padQkv (zeros)
    bool padded;
    int64_t ly, lx;   // window-local position; -1 for a register
    int64_t t;        // output row, -1 for padding
  };
  for (int64_t wy = 0; wy < nY; ++wy)
    for (int64_t wx = 0; wx < nX; ++wx) {
      std::vector<Token> tokens;
      for (int64_t r = 0; r < R; ++r)
        tokens.push_back({a.qkv + r * ld, false, -1, -1, r});
      for (int64_t ly = 0; ly < Sh; ++ly)
        for (int64_t lx = 0; lx < Sw; ++lx) {
          const int64_t y = wy * Sh + ly, x = wx * Sw + lx;
          if (y < gh && x < gw) {
            const int64_t t = R + y * gw + x;
            tokens.push_back({a.qkv + t * ld, false, ly, lx, t});
          } else {
            tokens.push_back({a.padQkv, true, ly, lx, -1});
          }
        }
      auto part = [&](const Token &tk, int which, int64_t h, int64_t d) {
        return tk.row ? double(tk.row[which * C + h * D + d]) : 0.0;
      };
      for (const Token &q : tokens) {
        if (q.padded)
          continue; // cropped
        for (int64_t h = 0; h < H; ++h) {
          std::vector<double> s;
          std::vector<const Token *> keys;
          for (const Token &k : tokens) {
            if (ab.maskPaddedKeys && k.padded)
              continue;
            double dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += part(q, 0, h, d) * part(k, 1, h, d);
            double score = a.scale * dot;
            if (rel && q.ly >= 0 && k.ly >= 0) {
              const float *th = a.relPosH + (q.ly - k.ly + Sh - 1) * D;
              const float *tw = a.relPosW + (q.lx - k.lx + Sw - 1) * D;
              double qs = ab.relFromScaledQ ? a.scale : 1.0;
              for (int64_t d = 0; d < D; ++d)
                score += qs * part(q, 0, h, d) * (double(th[d]) + double(tw[d]));
            }
            s.push_back(score);
            keys.push_back(&k);
          }
          double mx = s[0];
          for (double v : s)
            mx = v > mx ? v : mx;
          double z = 0;
          for (double &v : s) {
            v = std::exp(v - mx);
            z += v;
          }
          const bool isRegister = q.ly < 0;
          double weight = 1.0;
          if (isRegister && w)
            weight = ab.registersFromFirstWindow
                         ? (wy == 0 && wx == 0 ? 1.0 : 0.0)
                         : 1.0 / double(nY * nX);
          for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (size_t j = 0; j < keys.size(); ++j)
              acc += s[j] / z * part(*keys[j], 2, h, d);
            out[q.t * C + h * D + d] += weight * acc;
          }
        }
      }
    }
  return out;
}

} // namespace fm::kernels::reference
