// Loader tests: every rejection gives its exact message, and a valid small
// artifact loads and runs (the artifacts: MiniModels.h).
#include "ArtifactBuilder.h"
#include "MiniModels.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

namespace fm::test {
namespace {

using Cmd = ArtifactBuilder::Cmd;

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
  for (uint32_t version : {1u, 3u}) {
    ArtifactBuilder b;
    b.schemaVersion = version;
    b.vocab = 4;
    EXPECT_EQ(loadError(b.finish()),
              "model.fmb: schema version " + std::to_string(version) +
                  " is not supported (this runtime reads version 2): recompile "
                  "the model with this fmc");
  }
}

// A file written by the first fmc (schema version 1), whose fields this
// runtime would misread: the version is read through the header table
// before anything else, so the message is still the version's.
TEST(Loader, VersionOneFile) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);
  // v1's Artifact: schema_version (field 0) = 1, family (field 1) a string.
  auto family = fbb.CreateString("llama");
  const auto start = fbb.StartTable();
  fbb.AddElement<uint32_t>(4, 1, 0);
  fbb.AddOffset(6, family);
  const auto root = fbb.EndTable(start);
  fbb.FinishSizePrefixed(flatbuffers::Offset<void>(root), "FMB1");
  std::vector<uint8_t> file(fbb.GetBufferPointer(),
                            fbb.GetBufferPointer() + fbb.GetSize());
  EXPECT_EQ(loadError(file),
            "model.fmb: schema version 1 is not supported (this runtime reads "
            "version 2): recompile the model with this fmc");
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

TEST(Loader, WeightsDigest) {
  auto file = mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
    b.corruptWeightsDigest = true;
  });
  // Checked on demand only (it reads every weight byte).
  EXPECT_EQ(loadError(file, false), "(loaded)");
  const uint64_t start = ArtifactBuilder::dataStart(file);
  const format::Digest actual =
      format::digest(file.data() + start, file.size() - start);
  format::Digest stored = actual;
  stored[0] ^= 1;
  EXPECT_EQ(loadError(file, true),
            "model.fmb: weights digest mismatch: the data section hashes to " +
                format::hex(actual) + ", the artifact says " +
                format::hex(stored));
  // A flipped weight byte in a correctly sealed file.
  auto good = mini();
  EXPECT_EQ(loadError(good, true), "(loaded)");
  good[start + 5] ^= 0x10;
  EXPECT_EQ(loadError(good, false), "(loaded)");
  EXPECT_NE(loadError(good, true).find("weights digest mismatch"),
            std::string::npos);
}

// The program digest covers everything before the weights (the commands and
// the generated code) and is checked at every load.
TEST(Loader, ProgramDigest) {
  auto file = mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
    b.corruptProgramDigest = true;
  });
  EXPECT_EQ(loadError(file).rfind("model.fmb: corrupt: the program digest does "
                                  "not match (the commands or the executables "
                                  "changed): the file hashes to ",
                                  0),
            0u);
  // Any byte before the data section: a clean error, whatever it hits.
  auto good = mini();
  const uint64_t start = ArtifactBuilder::dataStart(good);
  for (uint64_t at = 0; at < start; ++at) {
    auto bad = good;
    bad[at] ^= 0x04;
    EXPECT_NE(loadError(bad), "(loaded)") << "byte " << at;
  }
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
            kCmd1 + "y buffer (offset 8, stride 16, width 4) overlaps x buffer "
                    "(offset 0, stride 16, width 4)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 4, 4), {}, buf(4, 4, 4), 4, 0, false, "lm_head");
            })),
            kCmd1 + "matmul has no weights");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
              c.push_back(b.matmul(buf(0, 4, 4), {m.W}, buf(6, 4, 4), 4, 4, false,
                                   "model.layers.0.mlp"));
            })),
            "model.fmb: program 'decode' command 2 (model.layers.0.mlp): y buffer "
            "(offset 24, stride 16, width 4) with 1 row ends at byte 40, past the "
            "arena of 32 bytes");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              uint32_t i8 = b.addRawWeight("q", {4, 4}, fa::DType::I8,
                                           std::vector<uint8_t>(16));
              c[1] = b.matmul(buf(0, 4, 4), {i8}, buf(4, 4, 4), 4, 4, false, "lm_head");
            })),
            kCmd1 + "weight 2 ('q') is i8 (matmul reads f32, f16, q2, q4 or q8 "
                    "weights)");
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
            kCmd1 + "y buffer (offset 12, stride 32, width 4) overlaps x buffer "
                    "(offset 0, stride 32, width 4)");
  // Width beyond stride.
  EXPECT_EQ(loadError(mini(
                [](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &c) {
                  c[0] = b.embed(m.E, buf(0, 2, 4), "model.embed_tokens");
                },
                2, 24)),
            "model.fmb: program 'decode' command 0 (model.embed_tokens): out buffer "
            "(offset 0, stride 8, width 4): width exceeds stride");
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
              b.addCache("kv16", 1, 1, 4, 16, fa::DType::F16);
            })),
            "model.fmb: cache 0 ('kv16'): dtype f16 is not supported (this runtime "
            "keeps f32 or i8 caches)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &) {
              b.addCache("kv", 1, 1, 4, 0);
            })),
            "model.fmb: cache 0 ('kv'): kv_heads, head_dim and capacity must be "
            "non-zero (1, 4, 0)");
}

TEST(Loader, QuantizedWeights) {
  // Loads and runs: logits = dequant(W) · dequant(E)[token].
  {
    auto file = qMini();
    ASSERT_EQ(loadError(file, /*verifyHash=*/true), "(loaded)");
    auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb");
    ASSERT_TRUE(model.isOk()) << model.message();
    Session session(*model, SessionOptions{1});
    auto logits = session.decode(3);
    ASSERT_TRUE(logits.isOk()) << logits.message();
    std::vector<float> e(128), w(128);
    auto unpack = [](const std::vector<float> &v, kernels::QuantFormat f,
                     float *out) {
      std::vector<uint8_t> packed(4 * kernels::packedRowBytes(f, 32));
      kernels::quantizeRows(v.data(), 4, 32, f, packed.data());
      for (int r = 0; r < 4; ++r)
        kernels::dequantizeRow(packed.data() + r * kernels::packedRowBytes(f, 32),
                               f, 32, out + 32 * r);
    };
    unpack(ramp(128, 0.25f), {4, 32, kernels::QuantGrid::Balanced}, e.data());
    unpack(ramp(128, -0.125f), {8, 32, kernels::QuantGrid::Affine}, w.data());
    for (int r = 0; r < 4; ++r) {
      double want = 0, mag = 0;
      for (int c = 0; c < 32; ++c) {
        want += double(w[32 * r + c]) * e[32 * 3 + c];
        mag += std::fabs(double(w[32 * r + c]) * e[32 * 3 + c]);
      }
      // Within the int8 rounding of x (<= mag / 254) and f32 rounding.
      EXPECT_NEAR((*logits)[r], want, mag / 254.0 + 1e-4) << "logit " << r;
    }
  }
  auto raw = [](const std::string &name, std::vector<int64_t> shape,
                fa::DType dtype, size_t bytes, uint32_t group,
                fa::QuantGrid grid = fa::QuantGrid::Balanced) {
    return [=](ArtifactBuilder &b, QMini &, std::vector<Cmd> &) {
      b.addRawWeight(name, shape, dtype, std::vector<uint8_t>(bytes), group, grid);
    };
  };
  EXPECT_EQ(loadError(qMini(raw("q1d", {64}, fa::DType::Q4, 36, 32))),
            "model.fmb: weight 4 ('q1d'): q4 weight has shape [64], expected "
            "2-D [rows, inputs]");
  EXPECT_EQ(loadError(qMini(raw("g48", {1, 96}, fa::DType::Q4, 52, 48))),
            "model.fmb: weight 4 ('g48'): q4 group 48 is not 32, 64 or 128");
  EXPECT_EQ(loadError(qMini(raw("g0", {1, 32}, fa::DType::Q2, 10, 0))),
            "model.fmb: weight 4 ('g0'): q2 group 0 is not 32, 64 or 128");
  EXPECT_EQ(loadError(qMini(raw("grid", {1, 32}, fa::DType::Q8, 34, 32,
                                static_cast<fa::QuantGrid>(7)))),
            "model.fmb: weight 4 ('grid'): q8 has unknown grid 7");
  EXPECT_EQ(loadError(qMini(raw("k48", {2, 48}, fa::DType::Q2, 26, 32))),
            "model.fmb: weight 4 ('k48'): q2 weight has 48 inputs per row, not "
            "a multiple of its group 32");
  EXPECT_EQ(loadError(qMini(raw("short", {2, 32}, fa::DType::Q4, 10, 32))),
            "model.fmb: weight 4 ('short'): size 10 bytes does not match shape "
            "[2, 32] of q4 (group 32, balanced: 36 bytes)");
  EXPECT_EQ(loadError(qMini(raw("aff", {1, 64}, fa::DType::Q8, 68, 64,
                                fa::QuantGrid::Affine))),
            "(loaded)");
  EXPECT_EQ(loadError(qMini(raw("aff", {1, 64}, fa::DType::Q8, 66, 64,
                                fa::QuantGrid::Affine))),
            "model.fmb: weight 4 ('aff'): size 66 bytes does not match shape "
            "[1, 64] of q8 (group 64, affine: 68 bytes)");
  // A row count whose size overflows: rejected, not wrapped.
  EXPECT_EQ(loadError(qMini(raw("huge", {int64_t(1) << 60, 32}, fa::DType::Q4,
                                36, 32))),
            "model.fmb: weight 4 ('huge'): shape [1152921504606846976, 32] is "
            "too large");
  EXPECT_EQ(loadError(qMini(raw("wide", {1, int64_t(1) << 40}, fa::DType::Q8,
                                64, 128))),
            "model.fmb: weight 4 ('wide'): size 64 bytes does not match shape "
            "[1, 1099511627776] of q8 (group 128, balanced: 1116691496960 "
            "bytes)");

  // Embed: a packed table with vocab rows.
  const std::string embedAt =
      "model.fmb: program 'decode' command 0 (model.embed_tokens): ";
  EXPECT_EQ(loadError(qMini([](ArtifactBuilder &b, QMini &, std::vector<Cmd> &c) {
              uint32_t t = b.addQuantWeight("big", 8, 32, ramp(256, 0.5f),
                                            {8, 32, kernels::QuantGrid::Balanced});
              c[0] = b.embed(t, buf(0, 32, 32), "model.embed_tokens");
            })),
            embedAt + "embedding table weight 4 ('big') has shape [8, 32], "
                      "expected [4, 32] (vocab_size, out width)");
  EXPECT_EQ(loadError(qMini([](ArtifactBuilder &b, QMini &, std::vector<Cmd> &c) {
              uint32_t t = b.addRawWeight("i8", {4, 32}, fa::DType::I8,
                                          std::vector<uint8_t>(128));
              c[0] = b.embed(t, buf(0, 32, 32), "model.embed_tokens");
            })),
            embedAt + "embedding table weight 4 ('i8') is i8 (embed reads f32, "
                      "f16, q2, q4 or q8)");
  // MatMul: each weight runs on its own dtype's kernel, so one command may
  // mix them (quant_test.cpp runs such commands).
  EXPECT_EQ(loadError(qMini([](ArtifactBuilder &b, QMini &m, std::vector<Cmd> &c) {
              uint32_t f = b.addWeight("f32", {4, 32}, ramp(128, 0.5f));
              c.push_back(b.matmul(buf(0, 32, 32), {m.W, f, m.E},
                                   buf(72, 12, 12), 32, 12, false, "mixed"));
            })),
            "(loaded)");
  EXPECT_EQ(loadError(qMini([](ArtifactBuilder &b, QMini &m, std::vector<Cmd> &c) {
              c[1] = b.matmul(buf(0, 32, 32), {m.W}, buf(64, 4, 4), 16, 4, false,
                              "lm_head");
            })),
            "model.fmb: program 'decode' command 1 (lm_head): weight 1 "
            "('lm_head.weight') has shape [4, 32], expected [rows, 16] (k = 16)");
}

TEST(Loader, Int8Cache) {
  auto attn = [](int32_t kScale, int32_t vScale,
                 fa::DType dtype = fa::DType::I8) {
    return [=](ArtifactBuilder &b, QMini &, std::vector<Cmd> &c) {
      b.addCache("kv8", 2, 1, 32, 16, dtype);
      c.push_back(b.attentionI8(buf(0, 32, 32), buf(72, 32, 32), 0, 1, 1, 1, 32,
                                0.125f, kScale, vScale, 0,
                                "model.layers.0.self_attn"));
    };
  };
  const std::string at =
      "model.fmb: program 'decode' command 2 (model.layers.0.self_attn): ";
  const int32_t KS = 2, VS = 3; // qMini's scales
  {
    auto file = qMini(attn(KS, VS));
    ASSERT_EQ(loadError(file), "(loaded)");
    auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb");
    ASSERT_TRUE(model.isOk()) << model.message();
    EXPECT_EQ((*model)->kvBytesPerToken(), 2 * 2 * 32);
    ASSERT_EQ((*model)->caches().size(), 1u);
    EXPECT_EQ((*model)->caches()[0].dtype, "i8");
    Session session(*model, SessionOptions{2});
    EXPECT_TRUE(session.prefill(std::vector<int32_t>{1, 2, 3}, true).isOk());
  }
  EXPECT_EQ(loadError(qMini(attn(-1, -1))),
            at + "attention over i8 cache 'kv8' needs k_scale and v_scale "
                 "(k_scale is -1)");
  EXPECT_EQ(loadError(qMini(attn(KS, -1))),
            at + "attention over i8 cache 'kv8' needs k_scale and v_scale "
                 "(v_scale is -1)");
  EXPECT_EQ(loadError(qMini(attn(99, VS))),
            at + "k_scale: weight index 99 out of range (4 weights)");
  EXPECT_EQ(loadError(qMini(attn(0, VS))),
            at + "k_scale weight 0 ('model.embed_tokens.weight') is q4 [4, 32], "
                 "expected a 0-d f32 scale");
  EXPECT_EQ(loadError(qMini([&](ArtifactBuilder &b, QMini &m, std::vector<Cmd> &c) {
              uint32_t s1 = b.addWeight("s1", {1}, {0.5f});
              attn(int32_t(m.KS), int32_t(s1))(b, m, c);
            })),
            at + "v_scale weight 4 ('s1') is f32 [1], expected a 0-d f32 scale");
  EXPECT_EQ(loadError(qMini([&](ArtifactBuilder &b, QMini &m, std::vector<Cmd> &c) {
              uint32_t h = b.addRawWeight("h", {}, fa::DType::F16, {0, 60});
              attn(int32_t(h), int32_t(m.VS))(b, m, c);
            })),
            at + "k_scale weight 4 ('h') is f16 [], expected a 0-d f32 scale");
  // Scales on an f32 cache are a mistake, not ignored.
  EXPECT_EQ(loadError(qMini(attn(KS, VS, fa::DType::F32))),
            at + "k_scale 2 is set but cache 'kv8' is f32 (scales belong to i8 "
                 "caches; -1 for none)");
  EXPECT_EQ(loadError(qMini(attn(-1, VS, fa::DType::F32))),
            at + "v_scale 3 is set but cache 'kv8' is f32 (scales belong to i8 "
                 "caches; -1 for none)");
  EXPECT_EQ(loadError(qMini(attn(-1, -1, fa::DType::F32))), "(loaded)");
}

TEST(Loader, QuantizedMoe) {
  for (bool shared : {false, true}) {
    auto file = qMoeMini(shared);
    ASSERT_EQ(loadError(file), "(loaded)");
    auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb");
    ASSERT_TRUE(model.isOk()) << model.message();
    EXPECT_GT((*model)->bitsPerWeight(), 2.0);
    Session session(*model, SessionOptions{2});
    auto logits = session.prefill(std::vector<int32_t>{1, 2, 3, 0}, true);
    ASSERT_TRUE(logits.isOk()) << logits.message();
    for (int64_t i = 0; i < logits->rows * logits->vocab; ++i)
      EXPECT_TRUE(std::isfinite(logits->data[i]));
  }
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
            "model.fmb: program 'decode' command 2: arg 0 buffer (offset 16, stride 16, "
            "width 8) with 1 row ends at byte 48, past the arena of 32 bytes");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {});
              c.push_back(b.dispatch(0, {}));
            })),
            "model.fmb: executable 0 (target 'cpu'): the image is empty");
}

// Executables per target: one each, all exporting one ordered function
// list, GPU launch metadata consistent with the dispatches.
TEST(Loader, Executables) {
  auto withDispatch = [](const std::function<void(ArtifactBuilder &)> &exes,
                         size_t args = 1) {
    return mini([&](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
      exes(b);
      std::vector<flatbuffers::Offset<fa::Arg>> a;
      for (size_t i = 0; i < args; ++i)
        a.push_back(b.bufferArg(buf(0, 4, 4)));
      c.push_back(b.dispatch(1, a, "model.norm"));
    });
  };
  // Two targets, one list: loads (the CPU one is used).
  EXPECT_EQ(loadError(withDispatch([](ArtifactBuilder &b) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f", "g"}, {1});
              b.addExecutable("vulkan", "spirv", "", {"f", "g"}, {3, 2, 2, 7}, 1);
            })),
            "(loaded)");
  EXPECT_EQ(loadError(withDispatch([](ArtifactBuilder &b) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f", "g"}, {1});
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f", "g"}, {1});
            })),
            "model.fmb: executable 1 (target 'cpu'): a second executable for "
            "this target");
  EXPECT_EQ(loadError(withDispatch([](ArtifactBuilder &b) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f", "g"}, {1});
              b.addExecutable("vulkan", "spirv", "", {"f"}, {3});
            })),
            "model.fmb: executable 1 (target 'vulkan'): exports 1 functions but "
            "the cpu executable exports 2");
  EXPECT_EQ(loadError(withDispatch([](ArtifactBuilder &b) {
              b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f", "g"}, {1});
              b.addExecutable("vulkan", "spirv", "", {"f", "h"}, {3});
            })),
            "model.fmb: executable 1 (target 'vulkan'): function 1 is 'h' but "
            "the cpu executable's is 'g'");
  EXPECT_EQ(loadError(withDispatch([](ArtifactBuilder &b) {
              b.addExecutable("", "elf-so", "", {"f", "g"}, {1});
            })),
            "model.fmb: executable 0 (target ''): the target is empty");
  EXPECT_EQ(loadError(withDispatch(
                [](ArtifactBuilder &b) {
                  b.setExecutable("elf-so", "x86_64-unknown-linux-gnu",
                                  {"f", "g"}, {1});
                  b.addExecutable("vulkan", "spirv", "", {"f", "g"}, {3}, 2);
                },
                /*args=*/1)),
            "model.fmb: program 'decode' command 2 (model.norm): dispatch of 'g' "
            "has 1 arguments but its vulkan function binds 2");
}

// A weight may carry a copy in a layout one target reads instead.
TEST(Loader, WeightVariants) {
  auto variant = [](const std::string &target, const std::string &layout,
                    size_t bytes) {
    return mini([=](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &) {
      b.addVariant(m.W, target, layout, std::vector<uint8_t>(bytes, 0));
    });
  };
  EXPECT_EQ(loadError(variant("cpu", "row-major", 64)), "(loaded)");
  EXPECT_EQ(loadError(variant("cpu", "", 64)),
            "model.fmb: weight 1 ('lm_head.weight') variant for 'cpu': a variant "
            "names its target and its layout");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &m, std::vector<Cmd> &) {
              b.addVariant(m.W, "cpu", "a", std::vector<uint8_t>(64));
              b.addVariant(m.W, "cpu", "b", std::vector<uint8_t>(64));
            })),
            "model.fmb: weight 1 ('lm_head.weight') variant for 'cpu': a second "
            "variant for this target");
  // Its bytes must lie in the data section like any weight's.
  auto file = variant("cpu", "row-major", 64);
  const uint64_t start = ArtifactBuilder::dataStart(file);
  file.resize(start + 128);
  EXPECT_EQ(loadError(file).rfind("model.fmb: truncated: data section ends at", 0),
            0u);
}

TEST(Loader, Programs) {
  EXPECT_EQ(loadError(mini({}, /*maxRows=*/0)), "model.fmb: program 'decode': max_rows is 0");
  EXPECT_EQ(loadError(mini({}, 1, /*arena=*/7)),
            "model.fmb: program 'decode': logits buffer (offset 16, stride 16, width 4) "
            "with 1 row ends at byte 32, past the arena of 28 bytes");
  EXPECT_EQ(loadError(mini({}, 2, 8)),
            "model.fmb: program 'decode': logits buffer (offset 16, stride 16, width 4) "
            "with 2 rows ends at byte 48, past the arena of 32 bytes");
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
              c.push_back(b.rawCommand(static_cast<fa::Op>(13)));
            })),
            "model.fmb: program 'decode' command 2: unknown op kind 13 (newer than "
            "this runtime?)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.copyLastRow(buf(0, 4, 4), buf(4, 4, 3), "model.norm"));
            })),
            "model.fmb: program 'decode' command 2 (model.norm): src width 4 differs "
            "from dst width 3");
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
            kMoe + "y buffer (offset 8, stride 16, width 4) overlaps x buffer "
                   "(offset 0, stride 16, width 4)");
  EXPECT_EQ(loadError(moeMini(replace([](ArtifactBuilder &b, MoeMini &m) {
              return b.moe(buf(0, 4, 4), buf(10, 4, 4), m.router, m.gate, m.up,
                           m.down, 2, true, false, {}, "model.layers.0.mlp");
            }))),
            kMoe + "y buffer (offset 40, stride 16, width 4) with 1 row ends at "
                   "byte 56, past the arena of 48 bytes");
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
            kMoe + "router weight 12 ('q') is i8 (moe reads f32, f16, q2, q4 or q8 "
                   "weights)");
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
              b.ranks = 0;
            })),
            "model.fmb: ranks is 0 (a model runs on at least one)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, -1, -1}))),
            at + "block 0 with track -1: a command of a track block names both");
  EXPECT_EQ(loadError(trackMini(place(1, {1, 0, -1}))),
            at + "block 1 out of range (1 track blocks)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 2, -1}))),
            at + "track 2 out of range (2 tracks)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 0, 1}))),
            at + "rank 1 out of range (the model is partitioned over 1 rank)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 0, 2}), 2)),
            at + "rank 2 out of range (the model is partitioned over 2 ranks)");
  EXPECT_EQ(loadError(trackMini(place(1, {0, 0, -2}))),
            at + "rank -2 is invalid (-1 or an index)");
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
            reduce + "an AllReduce runs on every rank (rank -1), not only on "
                     "rank 1");
  EXPECT_EQ(loadError(trackMini([](ArtifactBuilder &, Mini &, std::vector<Cmd> &c) {
              c.push_back(c[5]); // a second reference to the same table
            })),
            "(loaded)");
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, Mini &, std::vector<Cmd> &c) {
              c.push_back(b.allReduce(buf(4, 4, 8), 1.0f, "model.blocks.0"));
            })),
            "model.fmb: program 'decode' command 2 (model.blocks.0): out buffer "
            "(offset 16, stride 16, width 8) with 1 row ends at byte 48, past the "
            "arena of 32 bytes");
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
                 "(offset 40, stride 16, width 4), which overlaps y buffer (offset 32, "
                 "stride 16, width 4) of command 1 (model.blocks.0.tracks.0) of "
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
                 "(offset 32, stride 16, width 4), which overlaps y buffer (offset 32, "
                 "stride 16, width 4) of command 1 (model.blocks.0.tracks.0) of "
                 "track 0: the tracks of a block run concurrently and need "
                 "disjoint buffers");
  // On different ranks the two never share a process: allowed.
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
                 "(offset 64, stride 16, width 4), which overlaps y buffer (offset 64, "
                 "stride 16, width 4) of command 2 (model.blocks.0.tracks.0) of "
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

} // namespace
} // namespace fm::test
