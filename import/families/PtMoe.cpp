// pt_moe: parallel-track MoE (fmc's own layout, docs/pt_moe.md).
#include "import/families/Families.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
#include <cmath>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

Error buildPtMoe(ConfigReader &f, ModelSpec &spec, StringRef file) {
  int64_t vocab = f.reqInt("vocab_size");
  int64_t hidden = f.reqInt("hidden_size");
  int64_t tracks = f.reqInt("num_tracks");
  int64_t depth = f.reqInt("track_block_depth");
  int64_t blocks = f.reqInt("num_track_blocks");
  int64_t heads = f.reqInt("num_attention_heads");
  int64_t kvHeads = f.reqInt("num_key_value_heads");
  // Tracks are narrow (a share of the heads), so hidden/heads is no default.
  int64_t headDim = f.reqInt("head_dim");
  int64_t interval = f.optInt("moe_layer_interval", 0, /*min=*/0);
  // Only needed when some layer is dense (interval 1 makes every layer MoE).
  int64_t inter = interval != 1 ? f.reqInt("intermediate_size", 1, "when a layer is dense")
                                : f.optInt("intermediate_size", 0);
  bool globalRope = f.optBool("global_rope", true);
  double theta = f.ropeTheta(10000);
  RopeStyle style =
      f.optChoice("rope_style", {"half", "interleaved"}, 0) ? RopeStyle::Interleaved
                                                            : RopeStyle::Half;
  double eps = f.optNumber("rms_norm_eps", 1e-5);
  bool normTopK = f.optBool("norm_topk_prob", true);
  Combine combine =
      f.optChoice("track_combine", {"mean", "sum"}, 0) ? Combine::Sum : Combine::Mean;
  bool tie = f.optBool("tie_word_embeddings", false);

  // attention_pattern: the per-layer kinds, repeated over a track's layers.
  std::vector<bool> local;
  if (const json::Value *pv = f.get("attention_pattern")) {
    const json::Array *pa = pv->getAsArray();
    if (!pa || pa->empty())
      f.error("field 'attention_pattern' must be a non-empty list of \"local\" or "
              "\"global\", got " + brief(*pv));
    else
      for (size_t i = 0; i < pa->size(); ++i) {
        auto s = (*pa)[i].getAsString();
        if (s && (*s == "local" || *s == "global"))
          local.push_back(*s == "local");
        else
          f.error("attention_pattern[" + Twine(i) + "] must be \"local\" or \"global\", got " +
                  brief((*pa)[i]));
      }
  } else {
    local.push_back(false);
  }
  bool anyLocal = llvm::is_contained(local, true);
  int64_t window = anyLocal ? f.reqInt("sliding_window", 1, "when attention_pattern has "
                                                            "\"local\" layers")
                            : f.optInt("sliding_window", 0);

  int64_t experts = 0, topK = 0, moeInter = 0;
  if (interval > 0) {
    experts = f.reqInt("num_experts", 1, "when moe_layer_interval > 0");
    topK = f.reqInt("num_experts_per_tok", 1, "when moe_layer_interval > 0");
    moeInter = f.reqInt("moe_intermediate_size", 1, "when moe_layer_interval > 0");
  }
  if (!f.ok())
    return f.take();
  if (heads % kvHeads)
    f.error("num_attention_heads=" + Twine(heads) +
            " is not divisible by num_key_value_heads=" + Twine(kvHeads));
  // RoPE rotates pairs: an odd head_dim only where no layer uses it.
  bool anyRope = globalRope;
  for (int64_t i = 0; i < std::min<int64_t>(int64_t(local.size()), depth * blocks); ++i)
    anyRope = anyRope || local[size_t(i)];
  if (anyRope && headDim % 2)
    f.error("head_dim=" + Twine(headDim) + " is odd, but RoPE rotates pairs of "
            "dimensions (rope_style '" + (style == RopeStyle::Half ? "half" : "interleaved") +
            "'" + (globalRope ? ", global_rope" : "") + ")");
  if (topK > experts)
    f.error("num_experts_per_tok=" + Twine(topK) + " exceeds num_experts=" + Twine(experts));
  if (!f.ok())
    return f.take();
  // Four factors of up to 2^31 can overflow 64 bits: saturate instead.
  uint64_t n = 1;
  for (uint64_t factor : {uint64_t(tracks), uint64_t(depth), uint64_t(blocks),
                          8 + 3 * uint64_t(experts)})
    if (__builtin_mul_overflow(n, factor, &n))
      n = std::numeric_limits<uint64_t>::max();
  if (n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  spec.vocabSize = vocab;
  spec.hiddenSize = hidden;
  spec.rmsEps = eps;
  spec.numTracks = tracks;
  spec.trackBlockDepth = depth;
  spec.numTrackBlocks = blocks;
  spec.parallelTracks = true;
  spec.combine = combine;
  spec.tieWordEmbeddings = tie;
  SpecBuilder b(spec);
  spec.embedding = b.expect("model.embed_tokens.weight", {vocab, hidden},
                            kv("vocab_size", vocab) + ", " + kv("hidden_size", hidden));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    TrackBlockSpec block;
    for (int64_t t = 0; t < tracks; ++t) {
      std::vector<LayerSpec> track;
      for (int64_t li = 0; li < depth; ++li) {
        LayerSpec l;
        l.prefix = "model.blocks." + std::to_string(blk) + ".tracks." + std::to_string(t) +
                   ".layers." + std::to_string(li);
        l.index = blk * depth + li;
        bool isLocal = local[size_t(l.index % int64_t(local.size()))];
        // Global layers are NoPE unless global_rope asks for RoPE there too.
        RopeStyle rope = isLocal || globalRope ? style : RopeStyle::None;
        initAttention(l.attn, heads, kvHeads, headDim, rope, theta);
        if (isLocal) {
          l.attn.local = true;
          l.attn.window = window;
        }
        b.norm(l.attnNorm, l.prefix + ".input_layernorm.weight", hidden, "hidden_size");
        b.projections(l.attn, l.prefix + ".self_attn.", hidden, /*bias=*/false,
                      "hidden_size", "num_attention_heads", "num_key_value_heads");
        b.norm(l.ffnNorm, l.prefix + ".post_attention_layernorm.weight", hidden,
               "hidden_size");
        std::string p = l.prefix + ".mlp.";
        if (interval > 0 && l.index % interval == interval - 1) {
          FfnSpec &ffn = l.ffn;
          ffn.moe = true;
          ffn.intermediate = moeInter;
          ffn.numExperts = experts;
          ffn.topK = topK;
          ffn.normTopK = normTopK;
          b.experts(ffn, p + "router.weight", "num_experts", p, "gate_proj.weight",
                    "up_proj.weight", "down_proj.weight", "moe_intermediate_size", hidden,
                    "hidden_size");
        } else {
          l.ffn.intermediate = inter;
          b.swiglu(l.ffn.gate, l.ffn.up, l.ffn.down, p, "gate_proj.weight",
                   "up_proj.weight", "down_proj.weight", inter, "intermediate_size", hidden,
                   "hidden_size");
        }
        track.push_back(std::move(l));
      }
      block.tracks.push_back(std::move(track));
    }
    spec.blocks.push_back(std::move(block));
  }
  b.norm(spec.finalNorm, "model.norm.weight", hidden, "hidden_size");
  if (!tie)
    spec.lmHead = b.expect("lm_head.weight", {vocab, hidden},
                           kv("vocab_size", vocab) + ", " + kv("hidden_size", hidden));
  return Error::success();
}

} // namespace fm::import
