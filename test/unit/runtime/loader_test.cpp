// Loader tests: every rejection gives its exact message, and a valid small
// artifact loads and runs. Also writes the fuzzer's seed corpus when
// FM_FMB_CORPUS_DIR is set.
#include "ArtifactBuilder.h"
#include "TinyModel.h"
#include "TrackModel.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>

namespace fm::test {
namespace {

using Cmd = ArtifactBuilder::Cmd;

struct Mini {
  uint32_t E = 0, W = 0;
};

// vocab 4, hidden 4, program 'decode' (1 row, arena 8):
//   0: Embed E -> h (0..3)      1: MatMul h · Wᵀ -> logits (4..7)
// logits = W · E[token].
using Tweak = std::function<void(ArtifactBuilder &, Mini &, std::vector<Cmd> &)>;

std::vector<float> miniE() {
  return {1, 2, 3, 4, 0, 1, 0, 1, -1, 0, 2, 0, 5, 5, 5, 5};
}
std::vector<float> miniW() {
  return {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1};
}

std::vector<uint8_t> mini(const Tweak &tweak = {}, uint32_t maxRows = 1,
                          uint64_t arena = 8) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  Mini m;
  m.E = b.addWeight("model.embed_tokens.weight", {4, 4}, miniE());
  m.W = b.addWeight("lm_head.weight", {4, 4}, miniW());
  std::vector<Cmd> cmds;
  cmds.push_back(b.embed(m.E, buf(0, 4, 4), "model.embed_tokens"));
  cmds.push_back(b.matmul(buf(0, 4, 4), {m.W}, buf(4, 4, 4), 4, 4, false, "lm_head"));
  if (tweak)
    tweak(b, m, cmds);
  b.addProgram("decode", maxRows, arena, buf(4, 4, 4), false, cmds);
  return b.finish();
}

std::string loadError(const std::vector<uint8_t> &file, bool verifyHash = false) {
  LoadOptions options;
  options.verifyHash = verifyHash;
  options.loadExecutable = false;
  auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb", options);
  return model ? std::string("(loaded)") : model.message();
}

const std::string kCmd1 = "model.fmb: program 'decode' command 1 (lm_head): ";

TEST(Loader, ValidMiniModelRuns) {
  auto file = mini();
  ASSERT_EQ(loadError(file, /*verifyHash=*/true), "(loaded)");
  auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb");
  ASSERT_TRUE(model.isOk());
  Session session(*model, SessionOptions{1});
  auto logits = session.decode(2); // E[2] = [-1, 0, 2, 0]
  ASSERT_TRUE(logits.isOk()) << logits.message();
  EXPECT_EQ((*logits)[0], -1.0f);
  EXPECT_EQ((*logits)[1], 0.0f);
  EXPECT_EQ((*logits)[2], 2.0f);
  EXPECT_EQ((*logits)[3], 1.0f);
  EXPECT_EQ(session.position(), 1);
  // No KV cache: no context limit.
  EXPECT_EQ((*model)->contextLength(), 0);
}

TEST(Loader, FileFraming) {
  EXPECT_EQ(loadError({}), "model.fmb: not an fmc artifact (the file has only 0 bytes)");
  EXPECT_EQ(loadError({1, 2, 3}),
            "model.fmb: not an fmc artifact (the file has only 3 bytes)");
  std::string text = "hello, this is not an artifact at all";
  EXPECT_EQ(loadError(std::vector<uint8_t>(text.begin(), text.end())),
            "model.fmb: not an fmc artifact (bad identifier)");

  auto file = mini();
  auto bad = file;
  bad[8] = 'X';
  EXPECT_EQ(loadError(bad), "model.fmb: not an fmc artifact (bad identifier)");

  uint32_t n;
  std::memcpy(&n, file.data(), 4);
  bad.assign(file.begin(), file.begin() + 100);
  EXPECT_EQ(loadError(bad), "model.fmb: truncated: the FlatBuffer ends at " +
                                std::to_string(4 + n) +
                                " but the file has 100 bytes");

  const uint64_t start = ArtifactBuilder::dataStart(file);
  ASSERT_EQ(file.size(), start + 128); // two 64-byte weights
  bad.assign(file.begin(), file.end() - 64);
  EXPECT_EQ(loadError(bad), "model.fmb: truncated: data section ends at " +
                                std::to_string(start + 128) + " but the file has " +
                                std::to_string(start + 64) + " bytes");

  // The root offset pointing past the FlatBuffer.
  bad = file;
  uint32_t huge = 0x7ffffff0;
  std::memcpy(bad.data() + 4, &huge, 4);
  EXPECT_EQ(loadError(bad), "model.fmb: corrupt: the FlatBuffer fails verification");

  // A size prefix beyond the 2 GiB FlatBuffer limit is "truncated" first.
  bad = file;
  uint32_t big = 0xfffffff0;
  std::memcpy(bad.data(), &big, 4);
  EXPECT_NE(loadError(bad).find("truncated: the FlatBuffer ends at"), std::string::npos);
}

TEST(Loader, SchemaVersion) {
  ArtifactBuilder b;
  b.schemaVersion = 2;
  b.vocab = 4;
  EXPECT_EQ(loadError(b.finish()),
            "model.fmb: schema version 2 is not supported (this runtime reads version 1)");
}

TEST(Loader, Weights) {
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &) {
              b.overrideWeightOffset(m.W, 65);
            })),
            "model.fmb: weight 1 ('lm_head.weight'): offset 65 is not a multiple of 64");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &) {
              b.overrideWeightOffset(m.W, 128);
            })),
            "model.fmb: weight 1 ('lm_head.weight'): bytes [128, 192) lie outside "
            "the data section (128 bytes)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &) {
              b.overrideWeightOffset(m.W, 0xffffffffffffffc0ull);
            })),
            "model.fmb: weight 1 ('lm_head.weight'): bytes [18446744073709551552, "
            "18446744073709551615) lie outside the data section (128 bytes)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &) {
              b.overrideWeightSize(m.W, 32);
            })),
            "model.fmb: weight 1 ('lm_head.weight'): size 32 bytes does not match "
            "shape [4, 4] of f32 (64 bytes)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.addWeight("neg", {-1, 4}, {});
            })),
            "model.fmb: weight 2 ('neg'): shape [-1, 4] has a negative dimension");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.addRawWeight("odd", {4}, static_cast<fa::DType>(9), {1, 2, 3, 4});
            })),
            "model.fmb: weight 2 ('odd'): unknown dtype 9");
  // The data section itself must be in the file.
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.dataSizeOverride = 1 << 20;
            })).rfind("model.fmb: truncated: data section ends at", 0),
            0u);
}

TEST(Loader, ContentHash) {
  auto file = mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
    b.hashOverride = true;
    b.hash = 1;
  });
  EXPECT_EQ(loadError(file, false), "(loaded)");
  const uint64_t start = ArtifactBuilder::dataStart(file);
  uint64_t hash = rt::fnv1a64(file.data() + start, file.size() - start);
  char want[128];
  std::snprintf(want, sizeof(want),
                "model.fmb: content hash mismatch: data section hashes to %016llx, "
                "the artifact says 0000000000000001",
                static_cast<unsigned long long>(hash));
  EXPECT_EQ(loadError(file, true), want);
}

TEST(Loader, MatMul) {
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 4), {99}, buf(4, 4, 4), 4, 4, false,
                              "model.layers.3.self_attn");
            })),
            "model.fmb: program 'decode' command 1 (model.layers.3.self_attn): "
            "weight index 99 out of range (2 weights)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 4), {m.W}, buf(4, 4, 4), 4, 5, false, "lm_head");
            })),
            kCmd1 + "the weights have 4 rows in all but n is 5");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 3), {m.W}, buf(4, 4, 4), 4, 4, false, "lm_head");
            })),
            kCmd1 + "x width 3 is not k 4");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 4), {m.W}, buf(4, 4, 4), 3, 4, false, "lm_head");
            })),
            kCmd1 + "weight 1 ('lm_head.weight') has shape [4, 4], expected [rows, 3] (k = 3)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 4), {m.W}, buf(2, 4, 4), 4, 4, false, "lm_head");
            })),
            kCmd1 + "y buffer (offset 2, stride 4, width 4) overlaps x buffer "
                    "(offset 0, stride 4, width 4)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 4), {}, buf(4, 4, 4), 4, 0, false, "lm_head");
            })),
            kCmd1 + "matmul has no weights");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c.push_back(b.matmul(buf(0, 4, 4), {m.W}, buf(6, 4, 4), 4, 4, false,
                                   "model.layers.0.mlp"));
            })),
            "model.fmb: program 'decode' command 2 (model.layers.0.mlp): y buffer "
            "(offset 6, stride 4, width 4) with 1 row ends at float 10, past the "
            "arena of 8 floats");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              uint32_t i8 = b.addRawWeight("q", {4, 4}, fa::DType::I8,
                                           std::vector<uint8_t>(16));
              c[1] = b.matmul(buf(0, 4, 4), {i8}, buf(4, 4, 4), 4, 4, false, "lm_head");
            })),
            kCmd1 + "weight 2 ('q') is i8 (matmul reads f32 or f16 weights)");
}

TEST(Loader, BufferColumnSlicesMayShareRows) {
  // x and y are column slices of rows of 8 floats: no float in common.
  auto file = mini(
      [](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
        c[0] = b.embed(m.E, buf(0, 8, 4));
        c[1] = b.matmul(buf(0, 8, 4), {m.W}, buf(4, 8, 4), 4, 4);
        c.push_back(b.matmul(buf(0, 8, 4), {m.W}, buf(16, 4, 4), 4, 4));
      },
      /*maxRows=*/2, /*arena=*/24);
  // The logits (4, 4, 4) of 2 rows also fit: loads.
  EXPECT_EQ(loadError(file), "(loaded)");
  // Same stride, overlapping columns.
  EXPECT_EQ(loadError(mini(
                [](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
                  c[0] = b.embed(m.E, buf(0, 8, 4));
                  c[1] = b.matmul(buf(0, 8, 4), {m.W}, buf(3, 8, 4), 4, 4, false, "lm_head");
                },
                2, 24)),
            kCmd1 + "y buffer (offset 3, stride 8, width 4) overlaps x buffer "
                    "(offset 0, stride 8, width 4)");
  // Width beyond stride.
  EXPECT_EQ(loadError(mini(
                [](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
                  c[0] = b.embed(m.E, buf(0, 2, 4), "model.embed_tokens");
                },
                2, 24)),
            "model.fmb: program 'decode' command 0 (model.embed_tokens): out buffer "
            "(offset 0, stride 2, width 4): width exceeds stride");
}

TEST(Loader, Embed) {
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c[0] = b.embed(7, buf(0, 4, 4), "model.embed_tokens");
            })),
            "model.fmb: program 'decode' command 0 (model.embed_tokens): weight "
            "index 7 out of range (2 weights)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c[0] = b.embed(m.E, buf(0, 4, 3), "model.embed_tokens");
            })),
            "model.fmb: program 'decode' command 0 (model.embed_tokens): embedding "
            "table weight 0 ('model.embed_tokens.weight') has shape [4, 4], "
            "expected [4, 3] (vocab_size, out width)");
}

TEST(Loader, Attention) {
  auto attn = [](uint32_t cache, uint32_t slot, uint32_t heads, uint32_t kvHeads,
                 uint32_t headDim) {
    return [=](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
      b.addCache("kv", 2, 1, 4, 16);
      c.push_back(b.attention(buf(0, 4, heads * headDim), buf(4, 4, heads * headDim),
                              cache, slot, heads, kvHeads, headDim, 0.5f, 0,
                              "model.layers.0.self_attn"));
    };
  };
  const std::string at = "model.fmb: program 'decode' command 2 (model.layers.0.self_attn): ";
  EXPECT_EQ(loadError(mini(attn(0, 1, 1, 1, 4))), "(loaded)");
  EXPECT_EQ(loadError(mini(attn(3, 0, 1, 1, 4))), at + "cache index 3 out of range (1 caches)");
  EXPECT_EQ(loadError(mini(attn(0, 2, 1, 1, 4))),
            at + "slot 2 out of range (cache 'kv' has 2 slots)");
  EXPECT_EQ(loadError(mini(attn(0, 0, 3, 2, 1))), at + "3 heads are not a multiple of 2 kv_heads");
  EXPECT_EQ(loadError(mini(attn(0, 0, 2, 2, 2))),
            at + "attention has 2 kv_heads of 2 but cache 'kv' has 1 of 4");
  EXPECT_EQ(loadError(mini(attn(0, 0, 0, 1, 4))),
            at + "heads, kv_heads and head_dim must be non-zero (0, 1, 4)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.addCache("kv", 1, 1, 4, 16);
              c.push_back(b.attention(buf(0, 4, 4), buf(4, 4, 8), 0, 0, 1, 1, 4, 1.0f));
            })),
            "model.fmb: program 'decode' command 2: q width 4 and out width 8 must be "
            "heads * head_dim = 4");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.addCache("kv8", 1, 1, 4, 16, fa::DType::I8);
            })),
            "model.fmb: cache 0 ('kv8'): dtype i8 is not supported (this runtime "
            "keeps f32 caches)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.addCache("kv", 1, 1, 4, 0);
            })),
            "model.fmb: cache 0 ('kv'): kv_heads, head_dim and capacity must be "
            "non-zero (1, 4, 0)");
}

TEST(Loader, Dispatch) {
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.dispatch(0, {b.bufferArg(buf(0, 4, 4))}));
            })),
            "model.fmb: program 'decode' command 2: dispatch needs an executable but "
            "the artifact has none");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {1});
              c.push_back(b.dispatch(5, {b.bufferArg(buf(0, 4, 4))}, "model.norm"));
            })),
            "model.fmb: program 'decode' command 2 (model.norm): function index 5 out "
            "of range (1 functions)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {1});
              c.push_back(b.dispatch(0, {b.bufferArg(buf(0, 4, 4)), b.weightArg(2)}));
            })),
            "model.fmb: program 'decode' command 2: arg 1: weight index 2 out of "
            "range (2 weights)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {1});
              c.push_back(b.dispatch(0, {b.cacheArg(fa::ArgKind::CacheV, 0, 0)}));
            })),
            "model.fmb: program 'decode' command 2: arg 0: cache index 0 out of "
            "range (0 caches)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {1});
              c.push_back(b.dispatch(0, {b.cacheArg(fa::ArgKind::Buffer, 0, 0)}));
            })),
            "model.fmb: program 'decode' command 2: arg 0 is a buffer without a "
            "buffer ref");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {1});
              c.push_back(b.dispatch(0, {b.bufferArg(buf(4, 4, 8))}));
            })),
            "model.fmb: program 'decode' command 2: arg 0 buffer (offset 4, stride 4, "
            "width 8) with 1 row ends at float 12, past the arena of 8 floats");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {});
              c.push_back(b.dispatch(0, {}));
            })),
            "model.fmb: executable: the image is empty");
}

TEST(Loader, Programs) {
  EXPECT_EQ(loadError(mini({}, /*maxRows=*/0)), "model.fmb: program 'decode': max_rows is 0");
  EXPECT_EQ(loadError(mini({}, 1, /*arena=*/7)),
            "model.fmb: program 'decode': logits buffer (offset 4, stride 4, width 4) "
            "with 1 row ends at float 8, past the arena of 7 floats");
  EXPECT_EQ(loadError(mini({}, 2, 8)),
            "model.fmb: program 'decode': logits buffer (offset 4, stride 4, width 4) "
            "with 2 rows ends at float 12, past the arena of 8 floats");
  {
    ArtifactBuilder b;
    b.vocab = 4;
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false, {});
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false, {});
    EXPECT_EQ(loadError(b.finish()),
              "model.fmb: program 'decode': a second program with this phase");
  }
  {
    ArtifactBuilder b;
    b.vocab = 5;
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false, {});
    EXPECT_EQ(loadError(b.finish()),
              "model.fmb: program 'decode': logits width 4 is not vocab_size 5");
  }
  {
    ArtifactBuilder b;
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false, {});
    EXPECT_EQ(loadError(b.finish()), "model.fmb: vocab_size is 0");
  }
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.rawCommand(fa::Op::NONE));
            })),
            "model.fmb: program 'decode' command 2: command has no op");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.rawCommand(static_cast<fa::Op>(9)));
            })),
            "model.fmb: program 'decode' command 2: unknown op kind 9 (newer than "
            "this runtime?)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.copyLastRow(buf(0, 4, 4), buf(4, 4, 3), "model.norm"));
            })),
            "model.fmb: program 'decode' command 2 (model.norm): src width 4 differs "
            "from dst width 3");
}

// A Moe between embed and lm_head: vocab 4, hidden 4, 3 experts of
// intermediate 2 (gate and up back to back), top-2; `maxRows` rows.
//   0: Embed -> h (0..3)   1: Moe h -> m (8..11)   2: MatMul m · Wᵀ -> logits
struct MoeMini {
  uint32_t E = 0, W = 0, router = 0;
  std::vector<uint32_t> gate, up, down;
  SharedExpert shared;
};
using MoeTweak =
    std::function<void(ArtifactBuilder &, MoeMini &, std::vector<Cmd> &)>;

std::vector<uint8_t> moeMini(const MoeTweak &tweak = {}, bool withShared = false,
                             uint32_t maxRows = 1) {
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
  std::vector<Cmd> cmds;
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

const std::string kMoe = "model.fmb: program 'decode' command 1 (model.layers.0.mlp): ";

TEST(Loader, Moe) {
  EXPECT_EQ(loadError(moeMini()), "(loaded)");
  EXPECT_EQ(loadError(moeMini({}, /*withShared=*/true, /*maxRows=*/3)), "(loaded)");
  auto replace = [](auto make) {
    return [make](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
      c[1] = make(b, m);
    };
  };
  // Weight counts and top_k.
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate,
                           {m.up[0], m.up[1]}, m.down, 2, true, false, {},
                           "model.layers.0.mlp");
            }))),
            kMoe + "moe has 3 gate, 2 up and 3 down weights: every expert needs "
                   "one of each");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, {}, {}, {}, 1,
                           true, false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "moe has no experts");
  for (uint32_t k : {0u, 4u})
    EXPECT_EQ(loadError(moeMini(replace([k](ArtifactBuilder &b, MoeMini &m) {
                return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                             m.down, k, true, false, {}, "model.layers.0.mlp");
              }))),
              kMoe + "top_k " + std::to_string(k) + " is not in 1..3 (3 experts)");
  // Shapes.
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.gate[0], m.gate, m.up,
                           m.down, 2, true, false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "router weight 3 ('mlp.experts.0.gate_proj.weight') has shape "
                   "[2, 4], expected [3, 4] (experts, x width)");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router,
                           {m.gate[0], m.gate[1], m.down[2]}, m.up, m.down, 2, true,
                           false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "expert 2 gate weight 11 ('mlp.experts.2.down_proj.weight') has "
                   "shape [4, 2], expected [2, 4] (intermediate, x width)");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                           {m.down[0], m.up[1], m.down[2]}, 2, true, false, {},
                           "model.layers.0.mlp");
            }))),
            kMoe + "expert 1 down weight 7 ('mlp.experts.1.up_proj.weight') has "
                   "shape [2, 4], expected [4, 2] (x width, intermediate)");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                           {m.down[0], 99, m.down[2]}, 2, true, false, {},
                           "model.layers.0.mlp");
            }))),
            kMoe + "expert 1 down: weight index 99 out of range (12 weights)");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(8, 4, 3), m.router, m.gate, m.up,
                           m.down, 2, true, false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "y width 3 is not x width 4");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(2, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "y buffer (offset 2, stride 4, width 4) overlaps x buffer "
                   "(offset 0, stride 4, width 4)");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(10, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "y buffer (offset 10, stride 4, width 4) with 1 row ends at "
                   "float 14, past the arena of 12 floats");
  // Dtypes.
  EXPECT_EQ(loadError(moeMini([](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
              uint32_t h = b.addRawWeight("half", {2, 4}, fa::DType::F16,
                                          std::vector<uint8_t>(16));
              c[1] = b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router,
                           {m.gate[0], h, m.gate[2]}, m.up, m.down, 2, true, false,
                           {}, "model.layers.0.mlp");
            })),
            kMoe + "expert 1 gate weight 12 ('half') is f16 but the router is f32");
  EXPECT_EQ(loadError(moeMini([](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
              uint32_t q = b.addRawWeight("q", {3, 4}, fa::DType::I8,
                                          std::vector<uint8_t>(12));
              c[1] = b.moe(buf(0, 4, 4), buf(8, 4, 4), q, m.gate, m.up, m.down, 2,
                           true, false, {}, "model.layers.0.mlp");
            })),
            kMoe + "router weight 12 ('q') is i8 (moe reads f32 or f16 weights)");
  // The shared expert: all four or none, with consistent shapes.
  EXPECT_EQ(loadError(moeMini([](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
              SharedExpert partial = m.shared;
              partial.expertGate = -1;
              c[1] = b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, partial, "model.layers.0.mlp");
            }, true)),
            kMoe + "a shared expert needs all of shared_gate, shared_up, shared_down "
                   "and shared_expert_gate (given: shared_gate, shared_up, "
                   "shared_down)");
  EXPECT_EQ(loadError(moeMini([](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
              SharedExpert wrong = m.shared;
              wrong.down = m.shared.up;
              c[1] = b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, wrong, "model.layers.0.mlp");
            }, true)),
            kMoe + "shared down weight 13 ('mlp.shared_expert.up_proj.weight') has "
                   "shape [3, 4], expected [4, 3] (x width, shared intermediate)");
  EXPECT_EQ(loadError(moeMini([](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
              SharedExpert wrong = m.shared;
              wrong.expertGate = m.router;
              c[1] = b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, wrong, "model.layers.0.mlp");
            }, true)),
            kMoe + "shared expert gate weight 2 ('mlp.router.weight') has shape "
                   "[3, 4], expected [1, 4] (1, x width)");
  EXPECT_EQ(loadError(moeMini([](ArtifactBuilder &b, MoeMini &m, std::vector<Cmd> &c) {
              SharedExpert wrong = m.shared;
              wrong.gate = -3;
              c[1] = b.moe(buf(0, 4, 4), buf(8, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, wrong, "model.layers.0.mlp");
            }, true)),
            kMoe + "shared_gate -3 is invalid (-1 or a weight index)");
}

TEST(Loader, MoeRuns) {
  // The loaded mini Moe runs (values are checked in the kernel tests).
  for (bool shared : {false, true}) {
    auto file = moeMini({}, shared, 3);
    auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb");
    ASSERT_TRUE(model.isOk()) << model.message();
    Session session(*model, SessionOptions{2});
    auto logits = session.prefill(std::vector<int32_t>{1, 2, 3, 0}, true);
    ASSERT_TRUE(logits.isOk()) << logits.message();
    for (int64_t i = 0; i < logits->rows * logits->vocab; ++i)
      EXPECT_TRUE(std::isfinite(logits->data[i]));
  }
}

// Two tracks of block 0: track t computes h · W -> its buffer at 8 + 4t;
// then a partial sum (block -1) and an AllReduce. `tweak` may change the
// artifact fields or the commands (index 1, 2: the tracks; 5: the reduce).
std::vector<uint8_t> trackMini(const Tweak &tweak = {}, uint32_t devices = 1,
                               uint64_t arena = 16) {
  return mini(
      [&](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
        b.numTracks = 2;
        b.numTrackBlocks = 1;
        b.devices = devices;
        const auto lm = c[1];
        c.pop_back();
        for (int32_t t = 0; t < 2; ++t) {
          b.placement = {0, t, devices > 1 ? t : -1};
          c.push_back(b.matmul(buf(0, 4, 4), {m.W}, buf(8 + 4 * t, 4, 4), 4, 4,
                               false, "model.blocks.0.tracks." + std::to_string(t)));
        }
        b.placement = {-1, -1, devices > 1 ? 0 : -1};
        c.push_back(b.matmul(buf(8, 4, 4), {m.W}, buf(0, 4, 4), 4, 4, false));
        b.placement = {-1, -1, devices > 1 ? 1 : -1};
        c.push_back(b.matmul(buf(12, 4, 4), {m.W}, buf(0, 4, 4), 4, 4,
                             devices == 1));
        b.placement = {};
        c.push_back(b.allReduce(buf(0, 4, 4), 0.5f, "model.blocks.0"));
        c.push_back(lm);
        if (tweak)
          tweak(b, m, c);
      },
      1, arena);
}

TEST(Loader, TrackPlacement) {
  EXPECT_EQ(loadError(trackMini()), "(loaded)");
  EXPECT_EQ(loadError(trackMini({}, 2)), "(loaded)");
  auto place = [](int index, ArtifactBuilder::Placement p) {
    return [=](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
      b.placement = p;
      c[index] = b.matmul(buf(0, 4, 4), {m.W}, buf(8, 4, 4), 4, 4, false,
                          "model.blocks.0.tracks.0");
      b.placement = {};
    };
  };
  const std::string at =
      "model.fmb: program 'decode' command 1 (model.blocks.0.tracks.0): ";
  EXPECT_EQ(loadError(trackMini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.devices = 0;
            })),
            "model.fmb: devices is 0 (a model runs on at least one)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, -1, -1}))),
            at + "block 0 with track -1: a command of a track block names both");
  EXPECT_EQ(loadError(trackMini(place(1, {1, 0, -1}))),
            at + "block 1 out of range (1 track blocks)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 2, -1}))),
            at + "track 2 out of range (2 tracks)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 0, 1}))),
            at + "device 1 out of range (the model is partitioned for 1 device)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 0, 2}), 2)),
            at + "device 2 out of range (the model is partitioned for 2 devices)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 0, -2}))),
            at + "device -2 is invalid (-1 or an index)");
  EXPECT_EQ(loadError(trackMini(place(1, {-5, 0, -1}))),
            at + "block -5 is invalid (-1 or an index)");
  const std::string reduce = "model.fmb: program 'decode' command 5 (model.blocks.0): ";
  EXPECT_EQ(loadError(trackMini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.placement = {0, 1, -1};
              c[5] = b.allReduce(buf(0, 4, 4), 0.5f, "model.blocks.0");
              b.placement = {};
            })),
            reduce + "an AllReduce cannot be inside track block 0: collectives run "
                     "between blocks");
  EXPECT_EQ(loadError(trackMini(
                [](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
                  b.placement = {-1, -1, 1};
                  c[5] = b.allReduce(buf(0, 4, 4), 0.5f, "model.blocks.0");
                  b.placement = {};
                },
                2)),
            reduce + "an AllReduce runs on every rank (device -1), not only on "
                     "device 1");
  EXPECT_EQ(loadError(trackMini([](ArtifactBuilder &, Mini &, std::vector<Cmd> &c) {
              c.push_back(c[5]); // a second reference to the same table
            })),
            "(loaded)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.allReduce(buf(4, 4, 8), 1.0f, "model.blocks.0"));
            })),
            "model.fmb: program 'decode' command 2 (model.blocks.0): buffer buffer "
            "(offset 4, stride 4, width 8) with 1 row ends at float 12, past the "
            "arena of 8 floats");
}

TEST(Loader, TrackBuffersAreDisjoint) {
  const std::string at = "model.fmb: program 'decode' block 0: ";
  // Track 1 writes track 0's output.
  EXPECT_EQ(loadError(trackMini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              b.placement = {0, 1, -1};
              c[2] = b.matmul(buf(0, 4, 4), {m.W}, buf(10, 4, 4), 4, 4, false,
                              "model.blocks.0.tracks.1");
              b.placement = {};
            })),
            at + "command 2 (model.blocks.0.tracks.1) of track 1 writes y buffer "
                 "(offset 10, stride 4, width 4), which overlaps y buffer (offset 8, "
                 "stride 4, width 4) of command 1 (model.blocks.0.tracks.0) of "
                 "track 0: the tracks of a block run concurrently and need "
                 "disjoint buffers");
  // Track 1 reads what track 0 writes.
  EXPECT_EQ(loadError(trackMini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              b.placement = {0, 1, -1};
              c[2] = b.matmul(buf(8, 4, 4), {m.W}, buf(12, 4, 4), 4, 4, false,
                              "model.blocks.0.tracks.1");
              b.placement = {};
            })),
            at + "command 2 (model.blocks.0.tracks.1) of track 1 reads x buffer "
                 "(offset 8, stride 4, width 4), which overlaps y buffer (offset 8, "
                 "stride 4, width 4) of command 1 (model.blocks.0.tracks.0) of "
                 "track 0: the tracks of a block run concurrently and need "
                 "disjoint buffers");
  // On different devices the two never share a process: allowed.
  EXPECT_EQ(loadError(trackMini(
                [](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
                  b.placement = {0, 1, 1};
                  c[2] = b.matmul(buf(0, 4, 4), {m.W}, buf(8, 4, 4), 4, 4, false,
                                  "model.blocks.0.tracks.1");
                  b.placement = {};
                },
                2)),
            "(loaded)");
  // A track reads what it wrote; both read the block input h. Then track 1's
  // second output lands on track 0's.
  auto chain = [](uint64_t secondOut) {
    return [=](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
      b.placement = {0, 0, -1};
      c.insert(c.begin() + 2, b.matmul(buf(8, 4, 4), {m.W}, buf(16, 4, 4), 4, 4,
                                       false, "model.blocks.0.tracks.0"));
      b.placement = {0, 1, -1};
      c.insert(c.begin() + 4, b.matmul(buf(12, 4, 4), {m.W}, buf(secondOut, 4, 4),
                                       4, 4, false, "model.blocks.0.tracks.1"));
      b.placement = {};
    };
  };
  EXPECT_EQ(loadError(trackMini(chain(20), 1, 32)), "(loaded)");
  EXPECT_EQ(loadError(trackMini(chain(16), 1, 32)),
            at + "command 4 (model.blocks.0.tracks.1) of track 1 writes y buffer "
                 "(offset 16, stride 4, width 4), which overlaps y buffer (offset 16, "
                 "stride 4, width 4) of command 2 (model.blocks.0.tracks.0) of "
                 "track 0: the tracks of a block run concurrently and need "
                 "disjoint buffers");
  // A cache slot used by two tracks (slot 1), and then by one (slots 0, 1).
  auto attend = [](uint32_t slot1) {
    return [=](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
      b.addCache("kv", 2, 1, 4, 16);
      b.placement = {0, 0, -1};
      c.insert(c.begin() + 3,
               b.attention(buf(0, 4, 4), buf(16, 4, 4), 0, 1, 1, 1, 4, 0.5f, 0,
                           "model.blocks.0.tracks.0.self_attn"));
      b.placement = {0, 1, -1};
      c.insert(c.begin() + 4,
               b.attention(buf(0, 4, 4), buf(20, 4, 4), 0, slot1, 1, 1, 4, 0.5f, 0,
                           "model.blocks.0.tracks.1.self_attn"));
      b.placement = {};
    };
  };
  EXPECT_EQ(loadError(trackMini(attend(0), 1, 32)), "(loaded)");
  EXPECT_EQ(loadError(trackMini(attend(1), 1, 32)),
            at + "command 4 (model.blocks.0.tracks.1.self_attn) of track 1 uses "
                 "cache 0 slot 1 of command 3 (model.blocks.0.tracks.0.self_attn) "
                 "of track 0: the tracks of a block run concurrently and need "
                 "their own caches");
}

// Writes seed artifacts for test/fuzz/fmb_loader_fuzz.cpp:
//   FM_FMB_CORPUS_DIR=test/fuzz/corpus/fmb fm_runtime_test --gtest_filter=Loader.WriteCorpus
TEST(Loader, WriteCorpus) {
  const char *dir = std::getenv("FM_FMB_CORPUS_DIR");
  if (!dir)
    GTEST_SKIP() << "set FM_FMB_CORPUS_DIR to write the seed corpus";
  auto write = [&](const std::string &name, const std::vector<uint8_t> &bytes) {
    std::ofstream out(std::string(dir) + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    ASSERT_TRUE(out.good()) << name;
  };
  write("mini.fmb", mini());
  write("mini_attention.fmb", mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
          b.addCache("kv", 2, 1, 4, 16);
          c.push_back(b.attention(buf(0, 4, 4), buf(4, 4, 4), 0, 1, 1, 1, 4, 0.5f, 2,
                                  "model.layers.0.self_attn"));
          c.push_back(b.copyLastRow(buf(4, 4, 4), buf(0, 4, 4), "model.norm"));
        }));
  write("mini_rows.fmb", mini(
                             [](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
                               c[0] = b.embed(m.E, buf(0, 8, 4));
                               c[1] = b.matmul(buf(0, 8, 4), {m.W}, buf(4, 8, 4), 4, 4);
                               c.push_back(b.matmul(buf(0, 8, 4), {m.W, m.E},
                                                    buf(16, 8, 8), 4, 8, true, "", true));
                             },
                             2, 32));
  // The tiny model, with a tiny stand-in image (the fuzzer never dlopens).
  TinyModel tiny;
  TinyModel::Options o;
  o.maxRows = 4;
  o.capacity = 8;
  write("tiny.fmb", tiny.build(o, {0x7f, 'E', 'L', 'F'}));
  o.fusedQkv = false;
  o.attnStride = 20;
  o.gapAfterWq = true;
  write("tiny_split.fmb", tiny.build(o, {0x7f, 'E', 'L', 'F'}));
  // Moe (with and without a shared expert), track sections and AllReduce.
  write("mini_moe.fmb", moeMini());
  write("mini_moe_shared.fmb", moeMini({}, /*withShared=*/true, /*maxRows=*/3));
  write("mini_tracks.fmb", trackMini());
  write("mini_tracks_d2.fmb", trackMini({}, /*devices=*/2));
  TrackModel tracks;
  TrackModel::Options to;
  to.maxRows = 4;
  to.capacity = 8;
  to.interleave = true;
  write("tracks.fmb", tracks.build(to, {0x7f, 'E', 'L', 'F'}));
  to.devices = 2;
  to.interleave = false;
  write("tracks_d2.fmb", tracks.build(to, {0x7f, 'E', 'L', 'F'}));
}

} // namespace
} // namespace fm::test
