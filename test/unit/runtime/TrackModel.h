// A small parallel-track MoE model (PT-MoE shaped) for the executor tests,
// built as an artifact and as a plain double-precision reference:
//
//   x = embed[tokens]
//   for each of 2 blocks:                         (a track section)
//     for each of 4 tracks t (independent):
//       qkv = x · [Wq; Wk; Wv]ᵀ, K/V to the track's cache slot (dispatch)
//       r_t = x + Wo · attention(q)               (identity matmul + o_proj)
//       s_t = r_t + moe_t(r_t)                    (identity matmul + Moe)
//     x = Σ partial sums of s_t, AllReduce, × 1/4 (the block's one sync)
//   logits = lm_head · x
//
// Partitioned for 2 ranks, tracks 0-1 run on rank 0 and 2-3 on rank 1;
// each rank sums its tracks into x and the AllReduce adds the two.
#pragma once

#include "ArtifactBuilder.h"
#include "kernels/moe_reference.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fm::test {

struct TrackModel {
  static constexpr uint32_t kVocab = 40;
  static constexpr uint32_t kHidden = 16;
  static constexpr uint32_t kTracks = 4;
  static constexpr uint32_t kBlocks = 2;
  static constexpr uint32_t kHeads = 4, kKvHeads = 2, kHeadDim = 4;
  static constexpr uint32_t kKv = kKvHeads * kHeadDim; // 8
  static constexpr uint32_t kQkvStride = 32; // as test_kernels.cpp bakes in
  static constexpr uint32_t kExperts = 4, kTopK = 2, kInter = 8;
  static constexpr uint32_t kSharedInter = 6; // block 1 only

  struct Options {
    uint32_t ranks = 1;
    /// Emit a section's commands layer by layer across the tracks (else
    /// track by track).
    bool interleave = false;
    uint32_t maxRows = 8;
    uint32_t capacity = 32;
  };

  struct Track {
    std::vector<float> wq, wk, wv, wo;
    kernels::reference::Moe moe;
  };
  std::vector<float> embed, lm, identity;
  std::vector<Track> tracks; // [block * kTracks + track]

  explicit TrackModel(uint32_t seed = 11) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<float> &w, size_t n, float scale) {
      w.resize(n);
      for (float &x : w)
        x = u(rng) * scale;
    };
    fill(embed, kVocab * kHidden, 1.0f);
    fill(lm, kVocab * kHidden, 0.3f);
    identity.assign(kHidden * kHidden, 0.0f);
    for (uint32_t i = 0; i < kHidden; ++i)
      identity[i * kHidden + i] = 1.0f;
    tracks.resize(kBlocks * kTracks);
    for (uint32_t i = 0; i < tracks.size(); ++i) {
      Track &t = tracks[i];
      fill(t.wq, kHidden * kHidden, 0.5f);
      fill(t.wk, kKv * kHidden, 0.5f);
      fill(t.wv, kKv * kHidden, 0.5f);
      fill(t.wo, kHidden * kHidden, 0.3f);
      kernels::reference::Moe &m = t.moe;
      m.hidden = kHidden;
      m.intermediate = kInter;
      m.topK = kTopK;
      m.normTopk = true;
      fill(m.router, kExperts * kHidden, 1.0f);
      m.experts.resize(kExperts);
      for (auto &e : m.experts) {
        fill(e.gate, kInter * kHidden, 0.4f);
        fill(e.up, kInter * kHidden, 0.4f);
        fill(e.down, kHidden * kInter, 0.4f);
      }
      if (i / kTracks == 1) {
        m.sharedIntermediate = kSharedInter;
        fill(m.shared.gate, kSharedInter * kHidden, 0.4f);
        fill(m.shared.up, kSharedInter * kHidden, 0.4f);
        fill(m.shared.down, kHidden * kSharedInter, 0.4f);
        fill(m.sharedExpertGate, kHidden, 0.5f);
      }
    }
  }

  float scale() const { return 1.0f / std::sqrt(float(kHeadDim)); }

  /// The rank that runs track t (-1: every rank, when not partitioned).
  static int32_t rankOf(uint32_t t, uint32_t ranks) {
    return ranks > 1 ? int32_t(t / (kTracks / ranks)) : -1;
  }

  std::vector<uint8_t> build(const Options &o,
                             const std::vector<uint8_t> &kernelsSo) const {
    ArtifactBuilder b;
    b.vocab = kVocab;
    b.hidden = kHidden;
    b.layers = kBlocks;
    b.ranks = o.ranks;
    b.numTracks = kTracks;
    b.numTrackBlocks = kBlocks;
    const uint32_t E = b.addWeight("model.embed_tokens.weight",
                                   {kVocab, kHidden}, embed);
    const uint32_t L = b.addWeight("lm_head.weight", {kVocab, kHidden}, lm);
    const uint32_t Id = b.addWeight("test.identity", {kHidden, kHidden}, identity);
    struct TrackWeights {
      uint32_t q, k, v, o, router;
      std::vector<uint32_t> gate, up, down;
      ArtifactBuilder::SharedExpert shared;
    };
    std::vector<TrackWeights> tw(tracks.size());
    for (uint32_t i = 0; i < tracks.size(); ++i) {
      const Track &t = tracks[i];
      const std::string p = "model.blocks." + std::to_string(i / kTracks) +
                            ".tracks." + std::to_string(i % kTracks) +
                            ".layers.0.";
      TrackWeights &w = tw[i];
      w.q = b.addWeight(p + "self_attn.q_proj.weight", {kHidden, kHidden}, t.wq);
      w.k = b.addWeight(p + "self_attn.k_proj.weight", {kKv, kHidden}, t.wk);
      w.v = b.addWeight(p + "self_attn.v_proj.weight", {kKv, kHidden}, t.wv);
      w.o = b.addWeight(p + "self_attn.o_proj.weight", {kHidden, kHidden}, t.wo);
      w.router = b.addWeight(p + "mlp.router.weight", {kExperts, kHidden},
                             t.moe.router);
      for (uint32_t e = 0; e < kExperts; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        const auto &ex = t.moe.experts[e];
        w.gate.push_back(b.addWeight(x + "gate_proj.weight", {kInter, kHidden}, ex.gate));
        w.up.push_back(b.addWeight(x + "up_proj.weight", {kInter, kHidden}, ex.up));
        w.down.push_back(b.addWeight(x + "down_proj.weight", {kHidden, kInter}, ex.down));
      }
      if (t.moe.sharedIntermediate > 0) {
        const auto &sh = t.moe.shared;
        w.shared.gate = int32_t(b.addWeight(p + "mlp.shared_expert.gate_proj.weight",
                                            {kSharedInter, kHidden}, sh.gate));
        w.shared.up = int32_t(b.addWeight(p + "mlp.shared_expert.up_proj.weight",
                                          {kSharedInter, kHidden}, sh.up));
        w.shared.down = int32_t(b.addWeight(p + "mlp.shared_expert.down_proj.weight",
                                            {kHidden, kSharedInter}, sh.down));
        w.shared.expertGate =
            int32_t(b.addWeight(p + "mlp.shared_expert_gate.weight", {1, kHidden},
                                t.moe.sharedExpertGate));
      }
    }
    const uint32_t cache =
        b.addCache("kv", kBlocks * kTracks, kKvHeads, kHeadDim, o.capacity);
    b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"fmt_write_kv"},
                    kernelsSo);

    auto program = [&](const std::string &phase, uint32_t R) {
      const uint64_t x = 0, tracksBase = 16 * R, perTrack = 80 * R;
      const uint64_t logits = tracksBase + kTracks * perTrack;
      const uint64_t arena = logits + uint64_t(kVocab) * R;
      auto qkv = [&](uint32_t t) { return tracksBase + t * perTrack; };
      auto attn = [&](uint32_t t) { return qkv(t) + 32 * R; };
      auto res = [&](uint32_t t) { return attn(t) + 16 * R; };
      auto out = [&](uint32_t t) { return res(t) + 16 * R; };
      const fa::BufferRef h = buf(x, kHidden, kHidden);

      std::vector<ArtifactBuilder::Cmd> cmds;
      b.placement = {};
      cmds.push_back(b.embed(E, h, "model.embed_tokens"));
      for (uint32_t blk = 0; blk < kBlocks; ++blk) {
        // One track's layer, as steps that can be interleaved.
        constexpr int kSteps = 7;
        auto step = [&](uint32_t t, int i) {
          const TrackWeights &w = tw[blk * kTracks + t];
          const uint32_t slot = blk * kTracks + t;
          const std::string layer = "model.blocks." + std::to_string(blk) +
                                    ".tracks." + std::to_string(t) + ".layers.0";
          b.placement = {int32_t(blk), int32_t(t), rankOf(t, o.ranks)};
          const fa::BufferRef r = buf(res(t), kHidden, kHidden);
          const fa::BufferRef s = buf(out(t), kHidden, kHidden);
          switch (i) {
          case 0:
            cmds.push_back(b.matmul(h, {w.q, w.k, w.v},
                                    buf(qkv(t), kQkvStride, kQkvStride), kHidden,
                                    kQkvStride, false, layer + ".self_attn"));
            break;
          case 1:
            cmds.push_back(b.dispatch(
                0,
                {b.bufferArg(buf(qkv(t) + 16, kQkvStride, kKv)),
                 b.bufferArg(buf(qkv(t) + 24, kQkvStride, kKv)),
                 b.cacheArg(fa::ArgKind::CacheK, cache, slot),
                 b.cacheArg(fa::ArgKind::CacheV, cache, slot)},
                layer + ".self_attn"));
            break;
          case 2:
            cmds.push_back(b.attention(buf(qkv(t), kQkvStride, kHidden),
                                       buf(attn(t), kHidden, kHidden), cache,
                                       slot, kHeads, kKvHeads, kHeadDim, scale(),
                                       0, layer + ".self_attn"));
            break;
          case 3:
            cmds.push_back(b.matmul(h, {Id}, r, kHidden, kHidden, false,
                                    layer + ".residual"));
            break;
          case 4:
            cmds.push_back(b.matmul(buf(attn(t), kHidden, kHidden), {w.o}, r,
                                    kHidden, kHidden, true,
                                    layer + ".self_attn.o_proj"));
            break;
          case 5:
            cmds.push_back(b.matmul(r, {Id}, s, kHidden, kHidden, false,
                                    layer + ".residual"));
            break;
          case 6:
            cmds.push_back(b.moe(r, s, w.router, w.gate, w.up, w.down, kTopK,
                                 true, true, w.shared, layer + ".mlp"));
            break;
          }
        };
        if (o.interleave) {
          for (int i = 0; i < kSteps; ++i)
            for (uint32_t t = 0; t < kTracks; ++t)
              step(t, i);
        } else {
          for (uint32_t t = 0; t < kTracks; ++t)
            for (int i = 0; i < kSteps; ++i)
              step(t, i);
        }
        // Each rank's partial sum of its tracks, into x; then the sync.
        const std::string blockName = "model.blocks." + std::to_string(blk);
        for (uint32_t t = 0; t < kTracks; ++t) {
          const int32_t rank = rankOf(t, o.ranks);
          const bool first = t == 0 || rankOf(t - 1, o.ranks) != rank;
          b.placement = {-1, -1, rank};
          cmds.push_back(b.matmul(buf(out(t), kHidden, kHidden), {Id}, h,
                                  kHidden, kHidden, !first,
                                  blockName + ".partial_sum"));
        }
        b.placement = {};
        cmds.push_back(b.allReduce(h, 1.0f / kTracks, blockName + ".combine"));
      }
      b.placement = {};
      cmds.push_back(b.matmul(h, {L}, buf(logits, kVocab, kVocab), kHidden,
                              kVocab, false, "lm_head"));
      b.addProgram(phase, R, arena, buf(logits, kVocab, kVocab), false, cmds);
    };
    program("prefill", o.maxRows);
    program("decode", 1);
    return b.finish();
  }

  /// Teacher-forced logits of every position: [n][vocab].
  std::vector<float> reference(const std::vector<int32_t> &tokens) const {
    const size_t n = tokens.size();
    auto linear = [](const std::vector<float> &w, const double *x, size_t rows,
                     size_t k, double *y) {
      for (size_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (size_t c = 0; c < k; ++c)
          acc += double(w[r * k + c]) * x[c];
        y[r] = acc;
      }
    };
    std::vector<double> x(n * kHidden);
    for (size_t p = 0; p < n; ++p)
      for (size_t c = 0; c < kHidden; ++c)
        x[p * kHidden + c] = embed[size_t(tokens[p]) * kHidden + c];
    for (uint32_t blk = 0; blk < kBlocks; ++blk) {
      std::vector<double> next(n * kHidden, 0.0);
      for (uint32_t t = 0; t < kTracks; ++t) {
        const Track &tr = tracks[blk * kTracks + t];
        std::vector<double> q(n * kHidden), k(n * kKv), v(n * kKv);
        for (size_t p = 0; p < n; ++p) {
          linear(tr.wq, &x[p * kHidden], kHidden, kHidden, &q[p * kHidden]);
          linear(tr.wk, &x[p * kHidden], kKv, kHidden, &k[p * kKv]);
          linear(tr.wv, &x[p * kHidden], kKv, kHidden, &v[p * kKv]);
        }
        for (size_t p = 0; p < n; ++p) {
          std::vector<double> a(kHidden, 0.0);
          for (uint32_t hd = 0; hd < kHeads; ++hd) {
            const uint32_t g = hd / (kHeads / kKvHeads);
            std::vector<double> s(p + 1);
            double mx = -1e300;
            for (size_t j = 0; j <= p; ++j) {
              double dot = 0;
              for (uint32_t d = 0; d < kHeadDim; ++d)
                dot += q[p * kHidden + hd * kHeadDim + d] *
                       k[j * kKv + g * kHeadDim + d];
              s[j] = dot * scale();
              mx = std::max(mx, s[j]);
            }
            double sum = 0;
            for (double &e : s)
              sum += (e = std::exp(e - mx));
            for (uint32_t d = 0; d < kHeadDim; ++d) {
              double acc = 0;
              for (size_t j = 0; j <= p; ++j)
                acc += s[j] / sum * v[j * kKv + g * kHeadDim + d];
              a[hd * kHeadDim + d] = acc;
            }
          }
          std::vector<double> o(kHidden);
          linear(tr.wo, a.data(), kHidden, kHidden, o.data());
          std::vector<float> r(kHidden), s(kHidden);
          for (uint32_t c = 0; c < kHidden; ++c)
            s[c] = r[c] = float(x[p * kHidden + c] + o[c]);
          tr.moe.run(r.data(), 1, s.data(), /*accumulate=*/true);
          for (uint32_t c = 0; c < kHidden; ++c)
            next[p * kHidden + c] += s[c];
        }
      }
      for (double &e : next)
        e /= kTracks;
      x = next;
    }
    std::vector<float> out(n * kVocab);
    for (size_t p = 0; p < n; ++p) {
      std::vector<double> l(kVocab);
      linear(lm, &x[p * kHidden], kVocab, kHidden, l.data());
      for (uint32_t c = 0; c < kVocab; ++c)
        out[p * kVocab + c] = float(l[c]);
    }
    return out;
  }
};

} // namespace fm::test
