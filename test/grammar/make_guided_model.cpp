// Test-only: writes a random-weight one-layer model (the executor tests' TinyModel shape:
// embed, attention over a KV cache, one projection, LM head) with a real tokenizer's vocabulary
// width, so that fm-run's guided generation runs end to end on a real model file.
// Usage: make_guided_model VOCAB KERNELS.so OUT.fmb
#include "ArtifactBuilder.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

using namespace fm::test;

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_guided_model VOCAB KERNELS.so OUT.fmb\n");
    return 2;
  }
  const uint32_t vocab = uint32_t(std::atol(argv[1]));
  constexpr uint32_t kHidden = 16, kHeads = 4, kKvHeads = 2, kHeadDim = 4,
                     kKv = kKvHeads * kHeadDim, kQkvStride = 32, kMaxRows = 8,
                     kCapacity = 2048;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto random = [&](size_t n, float scale) {
    std::vector<float> w(n);
    for (float &x : w)
      x = u(rng) * scale;
    return w;
  };
  ArtifactBuilder b;
  b.vocab = vocab;
  b.hidden = kHidden;
  const uint32_t E = b.addWeight("model.embed_tokens.weight", {vocab, kHidden},
                                 random(size_t(vocab) * kHidden, 1.0f));
  const uint32_t Q = b.addWeight("model.layers.0.self_attn.q_proj.weight", {kHidden, kHidden},
                                 random(kHidden * kHidden, 0.5f));
  const uint32_t K = b.addWeight("model.layers.0.self_attn.k_proj.weight", {kKv, kHidden},
                                 random(kKv * kHidden, 0.5f));
  const uint32_t V = b.addWeight("model.layers.0.self_attn.v_proj.weight", {kKv, kHidden},
                                 random(kKv * kHidden, 0.5f));
  const uint32_t O = b.addWeight("model.layers.0.self_attn.o_proj.weight", {kHidden, kHidden},
                                 random(kHidden * kHidden, 0.3f));
  const uint32_t L = b.addWeight("lm_head.weight", {vocab, kHidden},
                                 random(size_t(vocab) * kHidden, 0.3f));
  const uint32_t cache = b.addCache("kv", 1, kKvHeads, kHeadDim, kCapacity);
  std::ifstream so(argv[2], std::ios::binary);
  std::vector<uint8_t> kernels((std::istreambuf_iterator<char>(so)),
                               std::istreambuf_iterator<char>());
  if (kernels.empty()) {
    std::fprintf(stderr, "make_guided_model: cannot read %s\n", argv[2]);
    return 2;
  }
  b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"fmt_write_kv"}, kernels);

  const uint64_t R = kMaxRows;
  const uint64_t h = 0, qkv = 16 * R, attn = 64 * R, hl = 88 * R, logits = 88 * R + 16;
  const uint64_t arena = logits + uint64_t(vocab) * R;
  auto layer = [&](bool lastOnly) {
    std::vector<ArtifactBuilder::Cmd> cmds;
    const std::string sa = "model.layers.0.self_attn";
    cmds.push_back(b.embed(E, buf(h, kHidden, kHidden), "model.embed_tokens"));
    cmds.push_back(b.matmul(buf(h, kHidden, kHidden), {Q, K, V}, buf(qkv, kQkvStride, kQkvStride),
                            kHidden, kQkvStride, false, sa));
    cmds.push_back(b.dispatch(0,
                              {b.bufferArg(buf(qkv + 16, kQkvStride, kKv)),
                               b.bufferArg(buf(qkv + 24, kQkvStride, kKv)),
                               b.cacheArg(fa::ArgKind::CacheK, cache, 0),
                               b.cacheArg(fa::ArgKind::CacheV, cache, 0)},
                              sa));
    cmds.push_back(b.attention(buf(qkv, kQkvStride, kHidden), buf(attn, kHidden, kHidden), cache,
                               0, kHeads, kKvHeads, kHeadDim, 0.5f, 0, sa));
    cmds.push_back(b.matmul(buf(attn, kHidden, kHidden), {O}, buf(h, kHidden, kHidden), kHidden,
                            kHidden, /*accumulate=*/true, sa + ".o_proj"));
    if (lastOnly) {
      cmds.push_back(b.copyLastRow(buf(h, kHidden, kHidden), buf(hl, kHidden, kHidden),
                                   "model.norm"));
      cmds.push_back(b.matmul(buf(hl, kHidden, kHidden), {L}, buf(logits, vocab, vocab), kHidden,
                              vocab, false, "lm_head", /*lastRowOnly=*/true));
    } else {
      cmds.push_back(b.matmul(buf(h, kHidden, kHidden), {L}, buf(logits, vocab, vocab), kHidden,
                              vocab, false, "lm_head"));
    }
    return cmds;
  };
  b.addProgram("prefill", kMaxRows, arena, buf(logits, vocab, vocab), false, layer(false));
  b.addProgram("prefill_last", kMaxRows, arena, buf(logits, vocab, vocab), true, layer(true));
  b.addProgram("decode", 1, arena, buf(logits, vocab, vocab), false, layer(false));
  std::vector<uint8_t> file = b.finish();
  std::ofstream out(argv[3], std::ios::binary);
  out.write(reinterpret_cast<const char *>(file.data()), std::streamsize(file.size()));
  if (!out) {
    std::fprintf(stderr, "make_guided_model: cannot write %s\n", argv[3]);
    return 2;
  }
  return 0;
}
