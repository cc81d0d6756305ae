// The Attention command: causal GQA attention over a KV-cache slot, a
// device micro-kernel.
#include "commands/Command.h"

namespace fm::rt {
namespace {

std::string quoted(const flatbuffers::String *s) {
  return s ? "'" + s->str() + "'" : std::string("''");
}

// An i8 cache holds round(x / s): the attention over it names the 0-d f32
// scales s of K and V; an f32 cache has none.
Status checkKvScales(const VerifyContext &c, const fa::Attention &op,
                     const fa::KvCache &cache) {
  const std::pair<const char *, int32_t> scales[2] = {{"k_scale", op.k_scale()},
                                                      {"v_scale", op.v_scale()}};
  if (cache.dtype() != fa::DType::I8) {
    for (auto [what, index] : scales)
      if (index != -1)
        return c.fail(std::string(what) + " " + std::to_string(index) +
                      " is set but cache " + quoted(cache.name()) + " is " +
                      dtypeName(cache.dtype()) +
                      " (scales belong to i8 caches; -1 for none)");
    return Status::ok();
  }
  for (auto [what, index] : scales) {
    if (index < 0)
      return c.fail("attention over i8 cache " + quoted(cache.name()) +
                    " needs k_scale and v_scale (" + what + " is " +
                    std::to_string(index) + ")");
    if (std::string p = c.weightIndexProblem(static_cast<uint32_t>(index));
        !p.empty())
      return c.fail(std::string(what) + ": " + p);
    const fa::Weight *w = c.root().weights()->Get(static_cast<uint32_t>(index));
    if (w->dtype() != fa::DType::F32 || w->shape()->size() != 0)
      return c.fail(std::string(what) + " " +
                    c.weightName(static_cast<uint32_t>(index)) + " is " +
                    dtypeName(w->dtype()) + " " + shapeString(w->shape()) +
                    ", expected a 0-d f32 scale");
  }
  return Status::ok();
}

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::Attention &op = *command.op_as_Attention();
  if (op.heads() == 0 || op.kv_heads() == 0 || op.head_dim() == 0)
    return c.fail("heads, kv_heads and head_dim must be non-zero (" +
                  std::to_string(op.heads()) + ", " +
                  std::to_string(op.kv_heads()) + ", " +
                  std::to_string(op.head_dim()) + ")");
  if (op.heads() % op.kv_heads() != 0)
    return c.fail(std::to_string(op.heads()) + " heads are not a multiple of " +
                  std::to_string(op.kv_heads()) + " kv_heads");
  const u64 qWidth = u64(op.heads()) * op.head_dim();
  if (op.q()->width() != qWidth || op.out()->width() != qWidth)
    return c.fail("q width " + std::to_string(op.q()->width()) +
                  " and out width " + std::to_string(op.out()->width()) +
                  " must be heads * head_dim = " + std::to_string(qWidth));
  if (std::string p = c.cacheSlotProblem(op.cache(), op.slot()); !p.empty())
    return c.fail(p);
  const fa::KvCache *cache = c.root().caches()->Get(op.cache());
  if (cache->kv_heads() != op.kv_heads() || cache->head_dim() != op.head_dim())
    return c.fail("attention has " + std::to_string(op.kv_heads()) +
                  " kv_heads of " + std::to_string(op.head_dim()) +
                  " but cache " + quoted(cache->name()) + " has " +
                  std::to_string(cache->kv_heads()) + " of " +
                  std::to_string(cache->head_dim()));
  FM_RETURN_IF_ERROR(checkKvScales(c, op, *cache));
  FM_RETURN_IF_ERROR(c.buffer("q", *op.q(), c.rows()));
  FM_RETURN_IF_ERROR(c.buffer("out", *op.out(), c.rows()));
  if (mayOverlap(*op.q(), c.rows(), *op.out(), c.rows()))
    return c.fail("out buffer " + describe(*op.out()) + " overlaps q buffer " +
                  describe(*op.q()));
  return Status::ok();
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  const fa::Attention &op = *command.op_as_Attention();
  out.push_back({op.q(), false, rows, 0, 0, "q"});
  out.push_back({op.out(), true, rows, 0, 0, "out"});
  out.push_back({nullptr, false, 0, op.cache(), op.slot(), "cache"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::Attention &op = *command.op_as_Attention();
  hal::AttentionDesc d;
  d.q = c.rows(*op.q());
  d.out = c.rows(*op.out());
  d.k = c.cache(op.cache(), op.slot(), false);
  d.v = c.cache(op.cache(), op.slot(), true);
  d.heads = op.heads();
  d.kvHeads = op.kv_heads();
  d.headDim = op.head_dim();
  d.window = op.window();
  d.scale = op.scale();
  if (d.k.int8) {
    d.kScale = c.scalar(uint32_t(op.k_scale()));
    d.vScale = c.scalar(uint32_t(op.v_scale()));
  }
  d.maxRows = c.maxRows();
  return c.device().prepareAttention(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::Attention &op = *command.op_as_Attention();
  const std::string cache = c.cacheName(op.cache());
  out.text = bufferText(*op.q(), c.oneRow()) + " over @" + cache + "[" +
             std::to_string(op.slot()) + "] -> " +
             bufferText(*op.out(), c.oneRow()) + "  (" +
             std::to_string(op.heads()) + "/" + std::to_string(op.kv_heads()) +
             " heads x " + std::to_string(op.head_dim()) +
             (op.window() ? ", window " + std::to_string(op.window()) : "") +
             ")";
  out.json = JsonMembers()
                 .add("q", *op.q())
                 .add("out", *op.out())
                 .add("cache", cache)
                 .add("slot", op.slot())
                 .add("heads", op.heads())
                 .add("kv_heads", op.kv_heads())
                 .add("head_dim", op.head_dim())
                 .add("scale", op.scale())
                 .add("window", op.window())
                 .str();
}

} // namespace

extern const CommandKind kAttentionCommand = {
    fa::Op::Attention, "attention", verify, uses, build, describe};

} // namespace fm::rt
