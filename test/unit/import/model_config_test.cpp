// Unit tests for config.json -> ModelSpec (all five families) and for the
// checkpoint checker's messages.
#include "import/ModelConfig.h"
#include "ImportTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fm::import;
using namespace fm::import::test;

namespace {

// hidden 128, 4 heads of 32, 2 KV heads, FFN 64, 4 layers.
const char *kLlama = R"({
  "model_type": "llama", "architectures": ["LlamaForCausalLM"],
  "vocab_size": 100, "hidden_size": 128, "num_hidden_layers": 4,
  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64,
  "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
  "head_dim": null
})";

ModelSpec parseOk(const std::string &json) {
  auto spec = parseModelConfig(json, "config.json");
  EXPECT_TRUE(bool(spec)) << errorText(spec.takeError());
  return spec ? std::move(*spec) : ModelSpec{};
}

std::string parseErr(const std::string &json) {
  return errorText(parseModelConfig(json, "config.json"));
}

/// kLlama with `extra` fields merged in (later keys win in llvm::json).
std::string llamaWith(const std::string &extra) {
  std::string s = kLlama;
  return s.substr(0, s.rfind('}')) + ", " + extra + "}";
}

const ExpectedTensor *findExpected(const ModelSpec &spec, const std::string &name) {
  for (const ExpectedTensor &e : spec.expected)
    if (e.name == name)
      return &e;
  return nullptr;
}

std::vector<int64_t> expectedShape(const ModelSpec &spec, const std::string &name) {
  const ExpectedTensor *e = findExpected(spec, name);
  EXPECT_NE(e, nullptr) << name;
  return e ? e->shape : std::vector<int64_t>{-1};
}

const std::vector<LayerSpec> &onlyTrack(const ModelSpec &spec) {
  static const std::vector<LayerSpec> none;
  EXPECT_EQ(spec.blocks.size(), 1u);
  if (spec.blocks.size() != 1 || spec.blocks[0].tracks.size() != 1)
    return none;
  return spec.blocks[0].tracks[0];
}

using Shape = std::vector<int64_t>;

// --- llama ----------------------------------------------------------------

TEST(ModelConfigLlama, FillsSpec) {
  ModelSpec spec = parseOk(kLlama);
  EXPECT_EQ(spec.family, Family::Llama);
  EXPECT_STREQ(familyName(spec.family), "llama");
  EXPECT_EQ(spec.modelType, "llama");
  EXPECT_EQ(spec.vocabSize, 100);
  EXPECT_EQ(spec.hiddenSize, 128);
  EXPECT_DOUBLE_EQ(spec.rmsEps, 1e-5);
  EXPECT_FALSE(spec.parallelTracks);
  EXPECT_EQ(spec.numTracks, 1);
  EXPECT_EQ(spec.numTrackBlocks, 1);
  EXPECT_EQ(spec.trackBlockDepth, 4);
  EXPECT_EQ(spec.numLayersPerTrack(), 4);
  EXPECT_FALSE(spec.tieWordEmbeddings);
  EXPECT_EQ(spec.embedding, "model.embed_tokens.weight");
  EXPECT_EQ(spec.finalNorm, "model.norm.weight");
  EXPECT_EQ(spec.lmHead, "lm_head.weight");

  const auto &layers = onlyTrack(spec);
  ASSERT_EQ(layers.size(), 4u);
  const LayerSpec &l = layers[3];
  EXPECT_EQ(l.prefix, "model.layers.3");
  EXPECT_EQ(l.index, 3);
  EXPECT_EQ(l.attnNorm, "model.layers.3.input_layernorm.weight");
  EXPECT_EQ(l.ffnNorm, "model.layers.3.post_attention_layernorm.weight");
  EXPECT_EQ(l.attn.numHeads, 4);
  EXPECT_EQ(l.attn.numKvHeads, 2);
  EXPECT_EQ(l.attn.headDim, 32); // hidden_size / num_attention_heads
  EXPECT_DOUBLE_EQ(l.attn.scale, 1.0 / std::sqrt(32.0));
  EXPECT_EQ(l.attn.rope, RopeStyle::Half);
  EXPECT_DOUBLE_EQ(l.attn.ropeTheta, 500000.0);
  EXPECT_FALSE(l.attn.local);
  EXPECT_FALSE(l.attn.qkNorm);
  EXPECT_EQ(l.attn.reuseKvOfLayer, -1);
  EXPECT_EQ(l.attn.q, "model.layers.3.self_attn.q_proj.weight");
  EXPECT_EQ(l.attn.o, "model.layers.3.self_attn.o_proj.weight");
  EXPECT_TRUE(l.attn.qkv.empty());
  EXPECT_TRUE(l.attn.qBias.empty());
  EXPECT_FALSE(l.ffn.moe);
  EXPECT_EQ(l.ffn.intermediate, 64);
  EXPECT_EQ(l.ffn.down, "model.layers.3.mlp.down_proj.weight");

  EXPECT_EQ(spec.expected.size(), 1u + 4 * 9 + 2);
  EXPECT_EQ(spec.expected.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(spec.expected.back().name, "lm_head.weight");
  EXPECT_EQ(expectedShape(spec, "model.embed_tokens.weight"), (Shape{100, 128}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.q_proj.weight"), (Shape{128, 128}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.k_proj.weight"), (Shape{64, 128}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.o_proj.weight"), (Shape{128, 128}));
  EXPECT_EQ(expectedShape(spec, "model.layers.2.mlp.up_proj.weight"), (Shape{64, 128}));
  EXPECT_EQ(expectedShape(spec, "model.layers.2.mlp.down_proj.weight"), (Shape{128, 64}));
  EXPECT_EQ(expectedShape(spec, "model.norm.weight"), (Shape{128}));
  EXPECT_EQ(findExpected(spec, "model.layers.0.self_attn.k_proj.weight")->why,
            "num_key_value_heads=2, head_dim=32");

  EXPECT_EQ(spec.config.at("model_type"), "\"llama\"");
  EXPECT_EQ(spec.config.at("hidden_size"), "128");
  EXPECT_EQ(spec.config.at("architectures"), "[\"LlamaForCausalLM\"]");
  EXPECT_EQ(spec.config.at("head_dim"), "null");
}

TEST(ModelConfigLlama, DefaultsAndTiedEmbeddings) {
  ModelSpec spec = parseOk(R"({"model_type":"llama","vocab_size":10,"hidden_size":64,
      "num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,
      "head_dim":16,"tie_word_embeddings":true})");
  EXPECT_DOUBLE_EQ(spec.rmsEps, 1e-6);
  EXPECT_TRUE(spec.tieWordEmbeddings);
  EXPECT_TRUE(spec.lmHead.empty());
  EXPECT_EQ(findExpected(spec, "lm_head.weight"), nullptr);
  const LayerSpec &l = onlyTrack(spec).at(0);
  EXPECT_EQ(l.attn.numKvHeads, 2); // absent num_key_value_heads: one KV head per head
  EXPECT_EQ(l.attn.headDim, 16);   // explicit head_dim wins over hidden/heads
  EXPECT_DOUBLE_EQ(l.attn.ropeTheta, 10000);
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.q_proj.weight"), (Shape{32, 64}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.o_proj.weight"), (Shape{64, 32}));
}

TEST(ModelConfigLlama, RopeParametersGiveTheta) {
  ModelSpec spec = parseOk(llamaWith(R"("rope_parameters":{"rope_type":"default",
      "rope_theta":1234.5})"));
  EXPECT_DOUBLE_EQ(onlyTrack(spec).at(0).attn.ropeTheta, 1234.5);
}

TEST(ModelConfigErrors, MissingField) {
  EXPECT_EQ(parseErr(R"({"model_type":"llama","vocab_size":10,"num_hidden_layers":1,
      "num_attention_heads":2,"intermediate_size":8})"),
            "config.json: missing field 'hidden_size' (required for model_type 'llama')");
  // Every missing field at once, one per line.
  EXPECT_EQ(parseErr(R"({"model_type":"llama","vocab_size":10,"num_attention_heads":2})"),
            "config.json: missing field 'hidden_size' (required for model_type 'llama')\n"
            "config.json: missing field 'num_hidden_layers' (required for model_type 'llama')\n"
            "config.json: missing field 'intermediate_size' (required for model_type 'llama')");
}

TEST(ModelConfigErrors, BadJsonAndModelType) {
  std::string err = parseErr("{\"model_type\": \"llama\",");
  EXPECT_EQ(err.rfind("config.json: invalid JSON: ", 0), 0u) << err;
  EXPECT_EQ(parseErr("[1]"), "config.json: expected a JSON object, got [1]");
  EXPECT_EQ(parseErr("{}"), "config.json: missing field 'model_type' (fmc supports llama, "
                            "afm7, pt_moe, mixtral, qwen2_moe, fm_vit, fm_vlm)");
  EXPECT_EQ(parseErr(R"({"model_type":"gpt2"})"),
            "config.json: unsupported model_type 'gpt2' (fmc supports llama, afm7, pt_moe, "
            "mixtral, qwen2_moe, fm_vit, fm_vlm)");
  EXPECT_EQ(parseErr(R"({"model_type":3})"),
            "config.json: field 'model_type' must be a string, got 3");
}

TEST(ModelConfigErrors, WrongTypesAndRanges) {
  EXPECT_EQ(parseErr(llamaWith(R"("hidden_size":"128")")),
            "config.json: field 'hidden_size' must be an integer, got \"128\"");
  EXPECT_EQ(parseErr(llamaWith(R"("hidden_size":128.5)")),
            "config.json: field 'hidden_size' must be an integer, got 128.5");
  EXPECT_EQ(parseErr(llamaWith(R"("num_hidden_layers":0)")),
            "config.json: field 'num_hidden_layers' must be positive, got 0");
  EXPECT_EQ(parseErr(llamaWith(R"("vocab_size":-5)")),
            "config.json: field 'vocab_size' must be positive, got -5");
  EXPECT_EQ(parseErr(llamaWith(R"("vocab_size":1e19)")),
            "config.json: field 'vocab_size' must be an integer, got 1e+19");
  EXPECT_EQ(parseErr(llamaWith(R"("rms_norm_eps":"small")")),
            "config.json: field 'rms_norm_eps' must be a number, got \"small\"");
  EXPECT_EQ(parseErr(llamaWith(R"("rope_theta":0)")),
            "config.json: field 'rope_theta' must be positive, got 0");
  EXPECT_EQ(parseErr(llamaWith(R"("tie_word_embeddings":1)")),
            "config.json: field 'tie_word_embeddings' must be true or false, got 1");
  EXPECT_EQ(parseErr(llamaWith(R"("hidden_size":3000000000)")),
            "config.json: field 'hidden_size' is 3000000000, more than fmc supports "
            "(2147483647)");
}

TEST(ModelConfigErrors, InconsistentSizes) {
  EXPECT_EQ(parseErr(llamaWith(R"("num_key_value_heads":3)")),
            "config.json: num_attention_heads=4 is not divisible by num_key_value_heads=3");
  EXPECT_EQ(parseErr(llamaWith(R"("hidden_size":130)")),
            "config.json: hidden_size=130 is not divisible by num_attention_heads=4 (set "
            "head_dim explicitly)");
  std::string err = parseErr(llamaWith(R"("num_hidden_layers":2000000000)"));
  EXPECT_EQ(err.rfind("config.json: the config implies 18000000003 tensors, more than fmc "
                      "supports",
                      0),
            0u)
      << err;
}

TEST(ModelConfigErrors, UnsupportedVariants) {
  EXPECT_EQ(parseErr(llamaWith(R"("rope_scaling":{"rope_type":"llama3","factor":8.0})")),
            "config.json: rope_scaling {\"factor\":8,\"rope_type\":\"llama3\"} is not "
            "supported (fmc implements unscaled RoPE)");
  EXPECT_EQ(parseErr(llamaWith(R"("rope_parameters":{"rope_type":"yarn"})")),
            "config.json: rope_parameters.rope_type 'yarn' is not supported (fmc implements "
            "unscaled RoPE)");
  EXPECT_EQ(parseErr(llamaWith(R"("hidden_act":"gelu")")),
            "config.json: hidden_act 'gelu' is not supported (fmc implements SwiGLU with silu)");
  EXPECT_EQ(parseErr(llamaWith(R"("attention_bias":true)")),
            "config.json: attention_bias=true is not supported (fmc's llama has no attention "
            "projection biases)");
  // Explicit defaults are fine.
  EXPECT_EQ(parseErr(llamaWith(R"("rope_scaling":null,"attention_bias":false)")), "");
}

TEST(ModelConfigFile, ReadsFromDisk) {
  TempDir dir;
  dir.write("config.json", kLlama);
  auto spec = readModelConfig(dir.file("config.json"));
  ASSERT_TRUE(bool(spec)) << errorText(spec.takeError());
  EXPECT_EQ(spec->numLayersPerTrack(), 4);

  dir.write("config.json", R"({"model_type":"llama"})");
  std::string err = errorText(readModelConfig(dir.file("config.json")));
  EXPECT_EQ(err.rfind(dir.file("config.json") + ": missing field 'vocab_size'", 0), 0u) << err;

  err = errorText(readModelConfig(dir.file("absent.json")));
  EXPECT_EQ(err.rfind(dir.file("absent.json") + ": cannot open: ", 0), 0u) << err;
}

// --- afm7 -----------------------------------------------------------------

// The upstream tiny test shape: vocab 1000, hidden 256, 16 layers (8 reuse),
// 8 heads, 4 KV heads.
const char *kAfm7 = R"({
  "model_type": "afm7", "vocab_size": 1000, "hidden_dim": 256, "num_layers": 16,
  "num_kv_reuse_layers": 8, "num_heads": 8, "num_kv_heads": 4,
  "rope_parameters": {"rope_theta": 500000}
})";

TEST(ModelConfigAfm7, FillsSpec) {
  ModelSpec spec = parseOk(kAfm7);
  EXPECT_EQ(spec.family, Family::Afm7);
  EXPECT_STREQ(familyName(spec.family), "afm7");
  EXPECT_EQ(spec.hiddenSize, 256);
  EXPECT_DOUBLE_EQ(spec.rmsEps, 1e-5);
  EXPECT_TRUE(spec.tieWordEmbeddings);
  EXPECT_TRUE(spec.lmHead.empty());
  EXPECT_EQ(spec.embedding, "model.embedding.weight");
  EXPECT_EQ(spec.finalNorm, "model.output_norm.weight");
  EXPECT_EQ(spec.trackBlockDepth, 16);
  const auto &layers = onlyTrack(spec);
  ASSERT_EQ(layers.size(), 16u);

  const LayerSpec &reg = layers[7];
  EXPECT_EQ(reg.prefix, "model.layers.7");
  EXPECT_EQ(reg.index, 7);
  EXPECT_EQ(reg.attn.headDim, 32);
  EXPECT_DOUBLE_EQ(reg.attn.scale, 1.0 / std::sqrt(32.0));
  EXPECT_EQ(reg.attn.rope, RopeStyle::Interleaved);
  EXPECT_DOUBLE_EQ(reg.attn.ropeTheta, 500000);
  EXPECT_TRUE(reg.attn.qkNorm);
  EXPECT_TRUE(reg.attn.kvFakeQuant);
  EXPECT_EQ(reg.attn.reuseKvOfLayer, -1);
  EXPECT_EQ(reg.attn.qkv, "model.layers.7.self_attn.qkv_proj.weight");
  EXPECT_TRUE(reg.attn.q.empty());
  EXPECT_EQ(reg.attn.o, "model.layers.7.self_attn.out_proj.weight");
  EXPECT_EQ(reg.attn.kNorm, "model.layers.7.self_attn.k_norm.weight");
  EXPECT_EQ(reg.attn.kScale, "model.layers.7.self_attn.quant_key_scale");
  EXPECT_EQ(reg.attn.vScale, "model.layers.7.self_attn.quant_value_scale");
  EXPECT_EQ(reg.ffn.intermediate, 832); // int(256 * 3.25)

  const LayerSpec &reuse = layers[8];
  EXPECT_EQ(reuse.prefix, "model.kv_reuse_layers.0");
  EXPECT_EQ(reuse.index, 8);
  EXPECT_EQ(reuse.attn.reuseKvOfLayer, 7);
  EXPECT_EQ(reuse.attn.q, "model.kv_reuse_layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(reuse.attn.qNorm, "model.kv_reuse_layers.0.self_attn.q_norm.weight");
  EXPECT_EQ(reuse.attn.o, "model.kv_reuse_layers.0.self_attn.out_proj.weight");
  EXPECT_TRUE(reuse.attn.k.empty());
  EXPECT_TRUE(reuse.attn.v.empty());
  EXPECT_TRUE(reuse.attn.qkv.empty());
  EXPECT_TRUE(reuse.attn.kNorm.empty());
  EXPECT_TRUE(reuse.attn.kScale.empty());
  EXPECT_FALSE(reuse.attn.kvFakeQuant);
  EXPECT_EQ(reuse.ffn.up, "model.kv_reuse_layers.0.mlp.up_proj.weight");
  EXPECT_EQ(layers[15].prefix, "model.kv_reuse_layers.7");

  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.qkv_proj.weight"),
            (Shape{(8 + 2 * 4) * 32, 256}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.q_norm.weight"), (Shape{32}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.self_attn.quant_key_scale"), Shape{});
  EXPECT_EQ(expectedShape(spec, "model.kv_reuse_layers.3.self_attn.q_proj.weight"),
            (Shape{256, 256}));
  EXPECT_EQ(expectedShape(spec, "model.kv_reuse_layers.3.mlp.gate_proj.weight"),
            (Shape{832, 256}));
  EXPECT_EQ(expectedShape(spec, "model.embedding.weight"), (Shape{1000, 256}));
  EXPECT_EQ(findExpected(spec, "model.kv_reuse_layers.0.self_attn.k_proj.weight"), nullptr);
  EXPECT_EQ(spec.expected.size(), 1u + 8 * 11 + 8 * 8 + 1);
}

TEST(ModelConfigAfm7, DefaultsAndErrors) {
  ModelSpec spec = parseOk(R"({"model_type":"afm7","vocab_size":10,"hidden_dim":64,
      "num_layers":2,"num_kv_reuse_layers":0,"num_heads":2,"num_kv_heads":1,
      "hidden_dim_scale_factor":2.5})");
  EXPECT_DOUBLE_EQ(onlyTrack(spec).at(0).attn.ropeTheta, 50000);
  EXPECT_EQ(onlyTrack(spec).at(1).prefix, "model.layers.1");
  EXPECT_EQ(onlyTrack(spec).at(1).ffn.intermediate, 160);

  EXPECT_EQ(parseErr(R"({"model_type":"afm7","vocab_size":10,"hidden_dim":64,"num_layers":2,
      "num_kv_reuse_layers":2,"num_heads":2,"num_kv_heads":1})"),
            "config.json: num_kv_reuse_layers=2 must be less than num_layers=2 (reuse layers "
            "read the KV cache of the last regular layer)");
  EXPECT_EQ(parseErr(R"({"model_type":"afm7","vocab_size":10,"num_layers":2,
      "num_kv_reuse_layers":-1,"num_heads":2,"num_kv_heads":1})"),
            "config.json: missing field 'hidden_dim' (required for model_type 'afm7')\n"
            "config.json: field 'num_kv_reuse_layers' must be non-negative, got -1");
}

// --- pt_moe ---------------------------------------------------------------

// 2 blocks x 2 tracks x depth 4; pattern 3 local + 1 global; MoE every 2nd layer.
const char *kPtMoe = R"({
  "model_type": "pt_moe", "vocab_size": 50, "hidden_size": 64,
  "num_tracks": 2, "track_block_depth": 4, "num_track_blocks": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
  "intermediate_size": 96,
  "attention_pattern": ["local", "local", "local", "global"], "sliding_window": 8,
  "global_rope": false, "rope_theta": 20000, "rope_style": "interleaved",
  "rms_norm_eps": 1e-6, "moe_layer_interval": 2, "num_experts": 4,
  "num_experts_per_tok": 2, "moe_intermediate_size": 32, "track_combine": "sum",
  "tie_word_embeddings": true
})";

TEST(ModelConfigPtMoe, FillsTracksPatternAndMoe) {
  ModelSpec spec = parseOk(kPtMoe);
  EXPECT_EQ(spec.family, Family::PtMoe);
  EXPECT_STREQ(familyName(spec.family), "pt_moe");
  EXPECT_TRUE(spec.parallelTracks);
  EXPECT_EQ(spec.numTracks, 2);
  EXPECT_EQ(spec.trackBlockDepth, 4);
  EXPECT_EQ(spec.numTrackBlocks, 2);
  EXPECT_EQ(spec.numLayersPerTrack(), 8);
  EXPECT_EQ(spec.combine, Combine::Sum);
  EXPECT_TRUE(spec.lmHead.empty());
  EXPECT_DOUBLE_EQ(spec.rmsEps, 1e-6);
  ASSERT_EQ(spec.blocks.size(), 2u);
  ASSERT_EQ(spec.blocks[1].tracks.size(), 2u);
  ASSERT_EQ(spec.blocks[1].tracks[1].size(), 4u);

  const LayerSpec &l = spec.blocks[1].tracks[1][2];
  EXPECT_EQ(l.prefix, "model.blocks.1.tracks.1.layers.2");
  EXPECT_EQ(l.index, 6); // b*D + l
  EXPECT_EQ(l.attn.q, "model.blocks.1.tracks.1.layers.2.self_attn.q_proj.weight");
  EXPECT_EQ(l.attn.headDim, 16);
  EXPECT_DOUBLE_EQ(l.attn.scale, 0.25);

  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 2; ++t)
      for (int i = 0; i < 4; ++i) {
        const LayerSpec &layer = spec.blocks[b].tracks[t][i];
        bool global = layer.index % 4 == 3;
        EXPECT_EQ(layer.attn.local, !global) << layer.prefix;
        EXPECT_EQ(layer.attn.window, global ? 0 : 8) << layer.prefix;
        EXPECT_EQ(layer.attn.rope, global ? RopeStyle::None : RopeStyle::Interleaved)
            << layer.prefix;
        EXPECT_EQ(layer.ffn.moe, layer.index % 2 == 1) << layer.prefix;
      }

  const LayerSpec &moe = spec.blocks[0].tracks[1][1];
  EXPECT_TRUE(moe.ffn.moe);
  EXPECT_EQ(moe.ffn.numExperts, 4);
  EXPECT_EQ(moe.ffn.topK, 2);
  EXPECT_TRUE(moe.ffn.normTopK);
  EXPECT_EQ(moe.ffn.intermediate, 32);
  EXPECT_EQ(moe.ffn.router, "model.blocks.0.tracks.1.layers.1.mlp.router.weight");
  ASSERT_EQ(moe.ffn.expertDown.size(), 4u);
  EXPECT_EQ(moe.ffn.expertDown[3], "model.blocks.0.tracks.1.layers.1.mlp.experts.3.down_proj.weight");
  EXPECT_TRUE(moe.ffn.gate.empty());
  const LayerSpec &dense = spec.blocks[0].tracks[1][0];
  EXPECT_FALSE(dense.ffn.moe);
  EXPECT_EQ(dense.ffn.intermediate, 96);
  EXPECT_EQ(dense.ffn.gate, "model.blocks.0.tracks.1.layers.0.mlp.gate_proj.weight");

  EXPECT_EQ(expectedShape(spec, "model.blocks.0.tracks.1.layers.1.mlp.router.weight"),
            (Shape{4, 64}));
  EXPECT_EQ(expectedShape(spec, "model.blocks.0.tracks.1.layers.1.mlp.experts.0.up_proj.weight"),
            (Shape{32, 64}));
  EXPECT_EQ(expectedShape(spec,
                          "model.blocks.0.tracks.1.layers.1.mlp.experts.0.down_proj.weight"),
            (Shape{64, 32}));
  EXPECT_EQ(expectedShape(spec, "model.blocks.1.tracks.0.layers.0.self_attn.k_proj.weight"),
            (Shape{16, 64}));
  EXPECT_EQ(expectedShape(spec, "model.blocks.1.tracks.0.layers.0.self_attn.o_proj.weight"),
            (Shape{64, 32}));
}

TEST(ModelConfigPtMoe, DefaultsAreGlobalDenseMeanWithRope) {
  ModelSpec spec = parseOk(R"({"model_type":"pt_moe","vocab_size":50,"hidden_size":64,
      "num_tracks":1,"track_block_depth":2,"num_track_blocks":1,"num_attention_heads":2,
      "num_key_value_heads":2,"head_dim":32,"intermediate_size":96})");
  EXPECT_TRUE(spec.parallelTracks); // even with one track
  EXPECT_EQ(spec.combine, Combine::Mean);
  EXPECT_EQ(spec.lmHead, "lm_head.weight");
  const LayerSpec &l = spec.blocks.at(0).tracks.at(0).at(1);
  EXPECT_FALSE(l.attn.local);
  EXPECT_EQ(l.attn.rope, RopeStyle::Half); // global_rope defaults to true
  EXPECT_FALSE(l.ffn.moe);
}

TEST(ModelConfigPtMoe, Errors) {
  std::string base = kPtMoe;
  auto with = [&](const std::string &extra) {
    return parseErr(base.substr(0, base.rfind('}')) + ", " + extra + "}");
  };
  EXPECT_EQ(with(R"("attention_pattern":["local","sliding"])"),
            "config.json: attention_pattern[1] must be \"local\" or \"global\", got "
            "\"sliding\"");
  EXPECT_EQ(with(R"("attention_pattern":[])"),
            "config.json: field 'attention_pattern' must be a non-empty list of \"local\" or "
            "\"global\", got []");
  EXPECT_EQ(with(R"("sliding_window":null)"),
            "config.json: missing field 'sliding_window' (required for model_type 'pt_moe' "
            "when attention_pattern has \"local\" layers)");
  EXPECT_EQ(with(R"("sliding_window":0)"),
            "config.json: field 'sliding_window' must be positive, got 0");
  EXPECT_EQ(with(R"("num_experts_per_tok":5)"),
            "config.json: num_experts_per_tok=5 exceeds num_experts=4");
  EXPECT_EQ(with(R"("num_experts":null)"),
            "config.json: missing field 'num_experts' (required for model_type 'pt_moe' when "
            "moe_layer_interval > 0)");
  EXPECT_EQ(with(R"("track_combine":"max")"),
            "config.json: field 'track_combine' is 'max', expected one of 'mean', 'sum'");
  EXPECT_EQ(with(R"("rope_style":"neox")"),
            "config.json: field 'rope_style' is 'neox', expected one of 'half', 'interleaved'");
  EXPECT_EQ(with(R"("head_dim":null)"),
            "config.json: missing field 'head_dim' (required for model_type 'pt_moe')");
  std::string err = with(R"("num_tracks":2000000000,"num_experts":2000000000)");
  EXPECT_EQ(err.rfind("config.json: the config implies", 0), 0u) << err;
  // Every layer MoE: no dense FFN size needed.
  EXPECT_EQ(with(R"("moe_layer_interval":1,"intermediate_size":null)"), "");
}

// --- mixtral --------------------------------------------------------------

TEST(ModelConfigMixtral, EveryLayerIsMoe) {
  ModelSpec spec = parseOk(R"({"model_type":"mixtral","vocab_size":32,"hidden_size":64,
      "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "intermediate_size":112,"num_local_experts":8,"num_experts_per_tok":2,
      "sliding_window":null})");
  EXPECT_EQ(spec.family, Family::Mixtral);
  EXPECT_STREQ(familyName(spec.family), "mixtral");
  EXPECT_DOUBLE_EQ(spec.rmsEps, 1e-5); // MixtralConfig's defaults
  const auto &layers = onlyTrack(spec);
  ASSERT_EQ(layers.size(), 2u);
  for (const LayerSpec &l : layers) {
    EXPECT_TRUE(l.ffn.moe);
    EXPECT_EQ(l.ffn.numExperts, 8);
    EXPECT_EQ(l.ffn.topK, 2);
    EXPECT_TRUE(l.ffn.normTopK);
    EXPECT_EQ(l.ffn.intermediate, 112);
    EXPECT_FALSE(l.attn.local);
    EXPECT_DOUBLE_EQ(l.attn.ropeTheta, 1e6);
  }
  const FfnSpec &f = layers[1].ffn;
  EXPECT_EQ(f.router, "model.layers.1.block_sparse_moe.gate.weight");
  ASSERT_EQ(f.expertGate.size(), 8u);
  EXPECT_EQ(f.expertGate[5], "model.layers.1.block_sparse_moe.experts.5.w1.weight");
  EXPECT_EQ(f.expertUp[5], "model.layers.1.block_sparse_moe.experts.5.w3.weight");
  EXPECT_EQ(f.expertDown[5], "model.layers.1.block_sparse_moe.experts.5.w2.weight");
  EXPECT_EQ(expectedShape(spec, "model.layers.1.block_sparse_moe.gate.weight"), (Shape{8, 64}));
  EXPECT_EQ(expectedShape(spec, "model.layers.1.block_sparse_moe.experts.5.w2.weight"),
            (Shape{64, 112}));
  EXPECT_EQ(findExpected(spec, "model.layers.1.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(spec.expected.size(), 1u + 2 * (7 + 8 * 3) + 2);

  ModelSpec windowed = parseOk(R"({"model_type":"mixtral","vocab_size":32,"hidden_size":64,
      "num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":112,
      "num_local_experts":2,"num_experts_per_tok":1,"sliding_window":4096})");
  EXPECT_TRUE(onlyTrack(windowed).at(0).attn.local);
  EXPECT_EQ(onlyTrack(windowed).at(0).attn.window, 4096);

  EXPECT_EQ(parseErr(R"({"model_type":"mixtral","vocab_size":32,"hidden_size":64,
      "num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":112,
      "num_experts_per_tok":1})"),
            "config.json: missing field 'num_local_experts' (required for model_type "
            "'mixtral')");
}

// --- qwen2_moe ------------------------------------------------------------

TEST(ModelConfigQwen2Moe, SparseStepMlpOnlyLayersAndSharedExpert) {
  ModelSpec spec = parseOk(R"({"model_type":"qwen2_moe","vocab_size":40,"hidden_size":64,
      "num_hidden_layers":6,"num_attention_heads":4,"num_key_value_heads":2,
      "intermediate_size":128,"num_experts":4,"num_experts_per_tok":2,
      "moe_intermediate_size":16,"shared_expert_intermediate_size":48,
      "decoder_sparse_step":2,"mlp_only_layers":[3]})");
  EXPECT_EQ(spec.family, Family::Qwen2Moe);
  EXPECT_STREQ(familyName(spec.family), "qwen2_moe");
  EXPECT_DOUBLE_EQ(spec.rmsEps, 1e-6);
  const auto &layers = onlyTrack(spec);
  ASSERT_EQ(layers.size(), 6u);
  // Sparse when (i + 1) % 2 == 0 and i not in mlp_only_layers: layers 1 and 5.
  std::vector<bool> moe;
  for (const LayerSpec &l : layers)
    moe.push_back(l.ffn.moe);
  EXPECT_EQ(moe, (std::vector<bool>{false, true, false, false, false, true}));

  const LayerSpec &s = layers[1];
  EXPECT_EQ(s.attn.qBias, "model.layers.1.self_attn.q_proj.bias");
  EXPECT_EQ(s.attn.kBias, "model.layers.1.self_attn.k_proj.bias");
  EXPECT_EQ(s.attn.vBias, "model.layers.1.self_attn.v_proj.bias");
  EXPECT_FALSE(s.ffn.normTopK); // norm_topk_prob defaults to false
  EXPECT_EQ(s.ffn.intermediate, 16);
  EXPECT_EQ(s.ffn.router, "model.layers.1.mlp.gate.weight");
  EXPECT_EQ(s.ffn.expertUp.at(3), "model.layers.1.mlp.experts.3.up_proj.weight");
  EXPECT_EQ(s.ffn.sharedIntermediate, 48);
  EXPECT_EQ(s.ffn.sharedGate, "model.layers.1.mlp.shared_expert.gate_proj.weight");
  EXPECT_EQ(s.ffn.sharedDown, "model.layers.1.mlp.shared_expert.down_proj.weight");
  EXPECT_EQ(s.ffn.sharedExpertGate, "model.layers.1.mlp.shared_expert_gate.weight");
  EXPECT_EQ(layers[3].ffn.intermediate, 128);
  EXPECT_EQ(layers[3].ffn.gate, "model.layers.3.mlp.gate_proj.weight");

  EXPECT_EQ(expectedShape(spec, "model.layers.1.self_attn.q_proj.bias"), (Shape{64}));
  EXPECT_EQ(expectedShape(spec, "model.layers.1.self_attn.k_proj.bias"), (Shape{32}));
  EXPECT_EQ(expectedShape(spec, "model.layers.1.mlp.shared_expert.up_proj.weight"),
            (Shape{48, 64}));
  EXPECT_EQ(expectedShape(spec, "model.layers.1.mlp.shared_expert_gate.weight"),
            (Shape{1, 64}));
  EXPECT_EQ(expectedShape(spec, "model.layers.5.mlp.experts.0.down_proj.weight"),
            (Shape{64, 16}));
  EXPECT_EQ(expectedShape(spec, "model.layers.0.mlp.down_proj.weight"), (Shape{64, 128}));

  EXPECT_EQ(parseErr(R"({"model_type":"qwen2_moe","vocab_size":40,"hidden_size":64,
      "num_hidden_layers":6,"num_attention_heads":4,"intermediate_size":128,"num_experts":4,
      "num_experts_per_tok":2,"moe_intermediate_size":16,
      "shared_expert_intermediate_size":48,"mlp_only_layers":[6]})"),
            "config.json: mlp_only_layers[0] must be a layer index below "
            "num_hidden_layers=6, got 6");
}

// --- checkWeights ---------------------------------------------------------

std::vector<FakeTensor> checkpointFor(const ModelSpec &spec) {
  std::vector<FakeTensor> out;
  for (const ExpectedTensor &e : spec.expected)
    out.push_back({e.name, e.shape, "BF16"});
  return out;
}

TEST(CheckWeights, AcceptsMatchingCheckpointsOfEveryFamily) {
  for (const char *config : {kLlama, kAfm7, kPtMoe}) {
    ModelSpec spec = parseOk(config);
    TempDir dir;
    dir.write("model.safetensors", makeSafetensors(checkpointFor(spec)));
    auto ws = WeightSet::openDirectory(dir.path());
    ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
    std::vector<std::string> warnings;
    EXPECT_EQ(errorText(checkWeights(spec, *ws, warnings)), "") << spec.modelType;
    EXPECT_TRUE(warnings.empty());
  }
}

TEST(CheckWeights, ReportsEveryProblemAndUnusedTensors) {
  ModelSpec spec = parseOk(kLlama);
  std::vector<FakeTensor> tensors;
  for (FakeTensor &t : checkpointFor(spec)) {
    if (t.name == "model.layers.3.mlp.up_proj.weight")
      continue;
    if (t.name == "model.layers.3.self_attn.k_proj.weight")
      t.shape = {256, 128};
    if (t.name == "model.norm.weight")
      t.shape = {};
    tensors.push_back(t);
  }
  tensors.push_back({"foo", {3}, "F32"});
  TempDir dir;
  dir.write("model.safetensors", makeSafetensors(tensors));
  auto ws = WeightSet::openDirectory(dir.path());
  ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
  std::vector<std::string> warnings;
  EXPECT_EQ(errorText(checkWeights(spec, *ws, warnings)),
            "model.layers.3.self_attn.k_proj.weight: shape [256, 128], expected [64, 128] "
            "(num_key_value_heads=2, head_dim=32) in model.safetensors\n"
            "model.layers.3.mlp.up_proj.weight: missing (expected [64, 128] from "
            "intermediate_size=64, hidden_size=128) in model.safetensors\n"
            "model.norm.weight: shape [], expected [128] (hidden_size=128) in "
            "model.safetensors");
  EXPECT_EQ(warnings, (std::vector<std::string>{"unused tensor 'foo' in model.safetensors"}));
}

TEST(CheckWeights, NamesShardsAndWarnsAboutUntiedHead) {
  ModelSpec spec = parseOk(kAfm7);
  std::vector<FakeTensor> all = checkpointFor(spec), first, second;
  for (size_t i = 0; i < all.size(); ++i)
    (i < all.size() / 2 ? first : second).push_back(all[i]);
  second.pop_back();                                // drop model.output_norm.weight
  second.push_back({"lm_head.weight", {1000, 256}}); // afm7 ties the head
  TempDir dir;
  dir.write("a.safetensors", makeSafetensors(first));
  dir.write("b.safetensors", makeSafetensors(second));
  auto ws = WeightSet::openDirectory(dir.path());
  ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
  std::vector<std::string> warnings;
  EXPECT_EQ(errorText(checkWeights(spec, *ws, warnings)),
            "model.output_norm.weight: missing (expected [256] from hidden_dim=256) in "
            "a.safetensors, b.safetensors");
  EXPECT_EQ(warnings, (std::vector<std::string>{"unused tensor 'lm_head.weight' in b.safetensors"}));
}

} // namespace

// RoPE rotates pairs of dimensions: an odd head_dim is the config reader's
// error, not a verifier's (found by fuzz.model_config).
TEST(ModelConfigErrors, OddHeadDimWithRope) {
  EXPECT_EQ(parseErr(llamaWith(R"("head_dim":17)")),
            "config.json: head_dim=17 is odd, but RoPE rotates pairs of dimensions");
  EXPECT_EQ(parseErr(R"({"model_type":"pt_moe","vocab_size":50,"hidden_size":64,
      "num_tracks":1,"track_block_depth":2,"num_track_blocks":1,"num_attention_heads":2,
      "num_key_value_heads":2,"head_dim":33,"intermediate_size":96})"),
            "config.json: head_dim=33 is odd, but RoPE rotates pairs of dimensions "
            "(rope_style 'half', global_rope)");
  // Without RoPE anywhere (NoPE global layers only) an odd head_dim is fine.
  ModelSpec spec = parseOk(R"({"model_type":"pt_moe","vocab_size":50,"hidden_size":64,
      "num_tracks":1,"track_block_depth":2,"num_track_blocks":1,"num_attention_heads":2,
      "num_key_value_heads":2,"head_dim":33,"intermediate_size":96,"global_rope":false})");
  EXPECT_EQ(spec.blocks.at(0).tracks.at(0).at(0).attn.rope, RopeStyle::None);
}
