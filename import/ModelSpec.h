// ModelSpec: a checkpoint's architecture, normalized across model families.
//
// The config reader (ModelConfig.cpp) turns a family's config.json into a
// ModelSpec; the checker compares it with the tensors that the safetensors
// files hold; the IR emitter (Importer.cpp) turns it into fm IR. Nothing here
// depends on MLIR.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fm::import {

enum class Family { Llama, Afm7, PtMoe, Mixtral, Qwen2Moe, FmVit, FmVlm };
enum class RopeStyle { None, Half, Interleaved };
enum class Combine { Mean, Sum };

const char *familyName(Family f); // "llama", "afm7", ..., "fm_vit", "fm_vlm"

/// One tensor that the config implies, with the shape it must have. `why`
/// explains the shape in config terms for error messages, e.g.
/// "num_key_value_heads=2, head_dim=32".
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape; // empty = 0-d scalar
  std::string why;
};

struct AttentionSpec {
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
  double scale = 0;            // softmax scale, head_dim ** -0.5
  RopeStyle rope = RopeStyle::Half;
  double ropeTheta = 10000;
  bool local = false;          // sliding window: query i sees keys j, i-window < j <= i
  int64_t window = 0;
  bool qkNorm = false;         // afm7: q_norm/k_norm (RMSNorm over head_dim) after RoPE
  double qkNormEps = 1e-5;
  bool kvFakeQuant = false;    // afm7: K/V fake-quantized to int8 with per-layer scalars
  int64_t reuseKvOfLayer = -1; // >= 0: no K/V projections, attends over that layer's cache
  // Weight names; empty when absent.
  std::string q, k, v, o, qkv;            // qkv = fused [q; k; v] rows (afm7)
  std::string qBias, kBias, vBias;        // qwen2_moe
  std::string qNorm, kNorm, kScale, vScale;
};

struct FfnSpec {
  bool moe = false;
  int64_t intermediate = 0;   // dense FFN, or the per-expert FFN when moe
  // Dense: gate/up/down. MoE: router [experts, hidden] and per-expert weights.
  std::string gate, up, down;
  std::string router;
  int64_t numExperts = 0, topK = 0;
  bool normTopK = true;       // renormalize the top-k softmax weights to sum 1
  std::vector<std::string> expertGate, expertUp, expertDown;
  // qwen2_moe shared expert (always on), scaled by sigmoid(shared_expert_gate . x).
  int64_t sharedIntermediate = 0;
  std::string sharedGate, sharedUp, sharedDown, sharedExpertGate;
};

struct LayerSpec {
  std::string prefix;          // checkpoint prefix, e.g. "model.layers.12"
  int64_t index = 0;           // layer index within its track (b*D + l), or in the model
  std::string attnNorm, ffnNorm;
  AttentionSpec attn;
  FfnSpec ffn;
};

/// A track block: `tracks[t]` holds the `depth` layers of track t. Models
/// without parallel tracks are one block with one track holding all layers.
struct TrackBlockSpec {
  std::vector<std::vector<LayerSpec>> tracks;
};

/// The MLP activations of a ViT (docs/vit.md).
enum class VitActivation { Gelu, GeluTanh, QuickGelu };

/// One pre-LN ViT block (an encoder block, or one of the adapter's
/// transformer layers): weight names, empty when absent.
struct VitBlockSpec {
  std::string prefix;  // "vision.blocks.3", "adapter.blocks.0"
  int64_t index = 0;   // the fm layer number (adapter blocks continue the encoder's)
  bool global = true;  // global attention, else a ViTDet window layer
  std::string norm1Weight, norm1Bias, qkv, qkvBias, proj, projBias;
  std::string relPosH, relPosW; // rel_pos
  std::string norm2Weight, norm2Bias, fc1, fc1Bias, fc2, fc2Bias;
};

/// An fm_vit image encoder and its vision-language adapter (docs/vit.md).
struct VisionSpec {
  int64_t imageSize = 0, patchSize = 0, grid = 0; // grid g = image / patch
  int64_t hidden = 0, heads = 0, headDim = 0, intermediate = 0;
  int64_t window = 0, registers = 0;
  double eps = 1e-6;
  VitActivation activation = VitActivation::Gelu;
  bool qkvBias = true, relPos = false;
  std::vector<VitBlockSpec> blocks;
  std::string patchWeight, patchBias, posEmbed, registerTokens, normWeight,
      normBias;
  // The adapter.
  int64_t lmHidden = 0, outGrid = 0;
  std::vector<VitBlockSpec> adapterBlocks;
  std::string adapterLinear, adapterLinearBias, adapterConv, adapterConvBias;
  // Preprocessing of image files.
  double mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
  bool bilinear = false; // else bicubic
  int64_t numTokens() const { return outGrid * outGrid; }
};

struct ModelSpec {
  Family family = Family::Llama;
  /// fm_vlm: the family of its decoder (text_config).
  Family textFamily = Family::Llama;
  /// Whether there is a decoder (not for fm_vit) and an image encoder
  /// (fm_vit, fm_vlm).
  bool hasDecoder = true, hasVision = false;
  VisionSpec vision;
  /// fm_vlm: the image placeholder token.
  int64_t imageTokenIndex = -1;
  std::string modelType;       // config "model_type" (or the family name)
  int64_t vocabSize = 0, hiddenSize = 0;
  double rmsEps = 1e-5;
  int64_t numTracks = 1, trackBlockDepth = 0, numTrackBlocks = 1;
  bool parallelTracks = false; // pt_moe: emit fm.track_block even for T = 1
  Combine combine = Combine::Mean;
  bool tieWordEmbeddings = false;
  std::string embedding, finalNorm, lmHead; // lmHead empty when tied
  std::vector<TrackBlockSpec> blocks;
  /// Every tensor the config implies, in checkpoint order of appearance.
  std::vector<ExpectedTensor> expected;
  /// The config as read (flat key -> JSON text), kept as model metadata.
  std::map<std::string, std::string> config;
  int64_t numLayersPerTrack() const { return numTrackBlocks * trackBlockDepth; }
};

} // namespace fm::import
