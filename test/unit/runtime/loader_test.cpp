// Loader tests: every rejection gives its exact message, and a valid small
// artifact loads and runs. Also writes the fuzzer's seed corpus when
// FM_FMB_CORPUS_DIR is set.
#include "ArtifactBuilder.h"
#include "TinyModel.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

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
}

} // namespace
} // namespace fm::test
