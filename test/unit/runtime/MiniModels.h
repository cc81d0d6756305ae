// The loader tests' small hand-built artifacts (mini, qMini, qMoeMini,
// moeMini, trackMini), each with a tweak hook to break one part on purpose;
// also the .fmb seeds that fm-test-artifacts writes for the loader fuzzer.
#pragma once

#include "ArtifactBuilder.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fm::test {

// A program's commands, as a tweak receives them.
using Cmds = std::vector<ArtifactBuilder::Cmd>;

// vocab 4, hidden 4, program 'decode' (1 row, arena 8):
//   0: Embed E -> h (0..3)      1: MatMul h · Wᵀ -> logits (4..7)
// logits = W · E[token].
struct Mini {
  uint32_t E = 0, W = 0;
};
using Tweak = std::function<void(ArtifactBuilder &, Mini &, Cmds &)>;

inline std::vector<float> miniE() {
  return {1, 2, 3, 4, 0, 1, 0, 1, -1, 0, 2, 0, 5, 5, 5, 5};
}
inline std::vector<float> miniW() {
  return {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1};
}

inline std::vector<uint8_t> mini(const Tweak &tweak = {}, uint32_t maxRows = 1,
                                 uint64_t arena = 8) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  Mini m;
  m.E = b.addWeight("model.embed_tokens.weight", {4, 4}, miniE());
  m.W = b.addWeight("lm_head.weight", {4, 4}, miniW());
  Cmds cmds;
  cmds.push_back(b.embed(m.E, buf(0, 4, 4), "model.embed_tokens"));
  cmds.push_back(b.matmul(buf(0, 4, 4), {m.W}, buf(4, 4, 4), 4, 4, false, "lm_head"));
  if (tweak)
    tweak(b, m, cmds);
  b.addProgram("decode", maxRows, arena, buf(4, 4, 4), false, cmds);
  return b.finish();
}

// Packed weights: vocab 4, hidden 32, program 'decode' (2 rows, arena 136):
//   0: Embed E (q4, group 32) -> h (0..63)
//   1: MatMul h · Wᵀ (W q8, group 32, affine) -> logits (64..71)
// and, with an i8 cache 'kv8' (2 slots of 1 x 32, capacity 16) and its
// scales KS, VS (0-d f32), attention h -> 72..135 where a test adds it.
struct QMini {
  uint32_t E = 0, W = 0, KS = 0, VS = 0;
};
using QTweak = std::function<void(ArtifactBuilder &, QMini &, Cmds &)>;

inline std::vector<float> ramp(size_t n, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = step * float(int(i % 11) - 5);
  return v;
}

inline std::vector<uint8_t> qMini(const QTweak &tweak = {}) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 32;
  QMini m;
  m.E = b.addQuantWeight("model.embed_tokens.weight", 4, 32, ramp(128, 0.25f),
                         {4, 32, kernels::QuantGrid::Balanced});
  m.W = b.addQuantWeight("lm_head.weight", 4, 32, ramp(128, -0.125f),
                         {8, 32, kernels::QuantGrid::Affine});
  m.KS = b.addScalar("model.layers.0.self_attn.k_scale", 0.05f);
  m.VS = b.addScalar("model.layers.0.self_attn.v_scale", 0.02f);
  Cmds cmds;
  cmds.push_back(b.embed(m.E, buf(0, 32, 32), "model.embed_tokens"));
  cmds.push_back(b.matmul(buf(0, 32, 32), {m.W}, buf(64, 4, 4), 32, 4, false,
                          "lm_head"));
  if (tweak)
    tweak(b, m, cmds);
  b.addProgram("decode", 2, 136, buf(64, 4, 4), false, cmds);
  return b.finish();
}

// A Moe with packed experts between embed and lm_head: vocab 4, hidden 32,
// 3 experts of intermediate 32 (q4 gate and up back to back, q8 down),
// top-2, f32 router; a q2 shared expert with `withShared`; 3 rows.
//   0: Embed -> h (0..95)   1: Moe h -> m (96..191)   2: MatMul -> logits
inline std::vector<uint8_t> qMoeMini(bool withShared) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 32;
  const kernels::QuantFormat q4{4, 32, kernels::QuantGrid::Balanced};
  const kernels::QuantFormat q8{8, 32, kernels::QuantGrid::Affine};
  const kernels::QuantFormat q2{2, 32, kernels::QuantGrid::Affine};
  uint32_t E = b.addWeight("model.embed_tokens.weight", {4, 32}, ramp(128, 0.25f));
  uint32_t W = b.addWeight("lm_head.weight", {4, 32}, ramp(128, 0.125f));
  uint32_t router = b.addWeight("mlp.gate.weight", {3, 32}, ramp(96, 0.5f));
  std::vector<uint32_t> gate, up, down;
  for (int e = 0; e < 3; ++e) {
    const std::string x = "mlp.experts." + std::to_string(e) + ".";
    gate.push_back(b.addQuantWeight(x + "gate_proj.weight", 32, 32,
                                    ramp(1024, 0.05f * (e + 1)), q4));
    up.push_back(b.addQuantWeight(x + "up_proj.weight", 32, 32,
                                  ramp(1024, -0.04f), q4));
    down.push_back(b.addQuantWeight(x + "down_proj.weight", 32, 32,
                                    ramp(1024, 0.03f), q8));
  }
  SharedExpert shared;
  if (withShared) {
    shared.gate = int32_t(b.addQuantWeight("mlp.shared_expert.gate_proj.weight",
                                           64, 32, ramp(2048, 0.05f), q2));
    shared.up = int32_t(b.addQuantWeight("mlp.shared_expert.up_proj.weight", 64,
                                         32, ramp(2048, 0.04f), q2));
    shared.down = int32_t(b.addQuantWeight("mlp.shared_expert.down_proj.weight",
                                           32, 64, ramp(2048, 0.03f), q2));
    shared.expertGate = int32_t(
        b.addWeight("mlp.shared_expert_gate.weight", {1, 32}, ramp(32, 0.1f)));
  }
  Cmds cmds = {
      b.embed(E, buf(0, 32, 32), "model.embed_tokens"),
      b.moe(buf(0, 32, 32), buf(96, 32, 32), router, gate, up, down, 2, true,
            false, shared, "model.layers.0.mlp"),
      b.matmul(buf(96, 32, 32), {W}, buf(192, 4, 4), 32, 4, false, "lm_head")};
  b.addProgram("prefill", 3, 204, buf(192, 4, 4), false, cmds);
  return b.finish();
}

// A Moe between embed and lm_head: vocab 4, hidden 4, 3 experts of
// intermediate 2 (gate and up back to back), top-2; `maxRows` rows.
//   0: Embed -> h (0..3)   1: Moe h -> m (8..11)   2: MatMul m · Wᵀ -> logits
struct MoeMini {
  uint32_t E = 0, W = 0, router = 0;
  std::vector<uint32_t> gate, up, down;
  SharedExpert shared;
};
using MoeTweak = std::function<void(ArtifactBuilder &, MoeMini &, Cmds &)>;

inline std::vector<uint8_t> moeMini(const MoeTweak &tweak = {},
                                    bool withShared = false, uint32_t maxRows = 1) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  MoeMini m;
  m.E = b.addWeight("model.embed_tokens.weight", {4, 4}, miniE());
  m.W = b.addWeight("lm_head.weight", {4, 4}, miniW());
  auto ramp = [](size_t n, float step) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = step * float(int(i % 7) - 3);
    return v;
  };
  m.router = b.addWeight("mlp.router.weight", {3, 4}, ramp(12, 0.5f));
  for (int e = 0; e < 3; ++e) {
    const std::string x = "mlp.experts." + std::to_string(e) + ".";
    m.gate.push_back(b.addWeight(x + "gate_proj.weight", {2, 4}, ramp(8, 0.25f)));
    m.up.push_back(b.addWeight(x + "up_proj.weight", {2, 4}, ramp(8, -0.125f)));
    m.down.push_back(b.addWeight(x + "down_proj.weight", {4, 2}, ramp(8, 0.5f)));
  }
  if (withShared) {
    m.shared.gate = int32_t(b.addWeight("mlp.shared_expert.gate_proj.weight", {3, 4},
                                        ramp(12, 0.25f)));
    m.shared.up = int32_t(b.addWeight("mlp.shared_expert.up_proj.weight", {3, 4},
                                      ramp(12, 0.5f)));
    m.shared.down = int32_t(b.addWeight("mlp.shared_expert.down_proj.weight", {4, 3},
                                        ramp(12, -0.25f)));
    m.shared.expertGate = int32_t(
        b.addWeight("mlp.shared_expert_gate.weight", {1, 4}, ramp(4, 1.0f)));
  }
  const uint64_t R = maxRows;
  Cmds cmds;
  cmds.push_back(b.embed(m.E, buf(0, 4, 4), "model.embed_tokens"));
  cmds.push_back(b.moe(buf(0, 4, 4), buf(8 * R, 4, 4), m.router, m.gate, m.up,
                       m.down, 2, true, false, m.shared, "model.layers.0.mlp"));
  cmds.push_back(b.matmul(buf(8 * R, 4, 4), {m.W}, buf(4 * R, 4, 4), 4, 4, false,
                          "lm_head"));
  if (tweak)
    tweak(b, m, cmds);
  b.addProgram("decode", maxRows, 12 * R, buf(4 * R, 4, 4), false, cmds);
  return b.finish();
}

// Two tracks of block 0: track t computes h · W -> its buffer at 8 + 4t;
// then a partial sum (block -1) and an AllReduce. `tweak` may change the
// artifact fields or the commands (index 1, 2: the tracks; 5: the reduce).
inline std::vector<uint8_t> trackMini(const Tweak &tweak = {}, uint32_t ranks = 1,
                                      uint64_t arena = 16) {
  return mini(
      [&](ArtifactBuilder &b, Mini &m, Cmds &c) {
        b.numTracks = 2;
        b.numTrackBlocks = 1;
        b.ranks = ranks;
        const auto lm = c[1];
        c.pop_back();
        for (int32_t t = 0; t < 2; ++t) {
          b.placement = {0, t, ranks > 1 ? t : -1};
          c.push_back(b.matmul(buf(0, 4, 4), {m.W}, buf(8 + 4 * t, 4, 4), 4, 4,
                               false, "model.blocks.0.tracks." + std::to_string(t)));
        }
        b.placement = {-1, -1, ranks > 1 ? 0 : -1};
        c.push_back(b.matmul(buf(8, 4, 4), {m.W}, buf(0, 4, 4), 4, 4, false));
        b.placement = {-1, -1, ranks > 1 ? 1 : -1};
        c.push_back(b.matmul(buf(12, 4, 4), {m.W}, buf(0, 4, 4), 4, 4,
                             ranks == 1));
        b.placement = {};
        c.push_back(b.allReduce(buf(0, 4, 4), 0.5f, "model.blocks.0"));
        c.push_back(lm);
        if (tweak)
          tweak(b, m, c);
      },
      1, arena);
}

} // namespace fm::test
