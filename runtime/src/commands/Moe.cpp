// The Moe command: top-k routed SwiGLU experts (and a shared expert), a
// device micro-kernel.
#include "commands/Command.h"

#include "kernels/moe.h"

namespace fm::rt {
namespace {

bool anyQuantized(const fa::Artifact &root, const fa::Moe &op) {
  auto quantized = [&](int64_t index) {
    return index >= 0 && uint64_t(index) < root.weights()->size() &&
           isQuantized(root.weights()->Get(uint32_t(index))->dtype());
  };
  bool any = quantized(op.router()) || quantized(op.shared_gate()) ||
             quantized(op.shared_up()) || quantized(op.shared_down()) ||
             quantized(op.shared_expert_gate());
  for (const auto *list : {op.gate(), op.up(), op.down()})
    for (uint32_t index : *list)
      any |= quantized(index);
  return any;
}

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::Moe &op = *command.op_as_Moe();
  const fa::Artifact &root = c.root();
  const u64 rows = c.rows();
  const u64 K = op.x()->width(), E = op.gate()->size();
  if (E == 0)
    return c.fail("moe has no experts");
  if (op.up()->size() != E || op.down()->size() != E)
    return c.fail("moe has " + std::to_string(E) + " gate, " +
                  std::to_string(op.up()->size()) + " up and " +
                  std::to_string(op.down()->size()) +
                  " down weights: every expert needs one of each");
  if (op.top_k() == 0 || op.top_k() > E)
    return c.fail("top_k " + std::to_string(op.top_k()) + " is not in 1.." +
                  std::to_string(E) + " (" + std::to_string(E) + " experts)");
  if (K == 0)
    return c.fail("x width is 0");
  if (op.y()->width() != K)
    return c.fail("y width " + std::to_string(op.y()->width()) +
                  " is not x width " + std::to_string(K));

  // Without quantized weights the float Moe kernel runs, which reads every
  // weight in the router's dtype; with any, the device's packed Moe runs,
  // which takes each weight in its own dtype.
  const bool quantized = anyQuantized(root, op);

  fa::DType dtype = fa::DType::F32;
  auto weight = [&](const std::string &role, int64_t index, u64 rowsWanted,
                    u64 colsWanted, const std::string &meaning) -> Status {
    if (std::string p = c.weightIndexProblem(static_cast<uint32_t>(index));
        !p.empty())
      return c.fail(role + ": " + p);
    const fa::Weight *w = root.weights()->Get(static_cast<uint32_t>(index));
    const std::string what = role + " " + c.weightName(static_cast<uint32_t>(index));
    if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16 &&
        !isQuantized(w->dtype()))
      return c.fail(what + " is " + dtypeName(w->dtype()) +
                    " (moe reads f32, f16, q2, q4 or q8 weights)");
    if (!quantized && w->dtype() != dtype)
      return c.fail(what + " is " + dtypeName(w->dtype()) +
                    " but the router is " + dtypeName(dtype));
    const auto *shape = w->shape();
    if (shape->size() != 2 || u64(shape->Get(0)) != rowsWanted ||
        u64(shape->Get(1)) != colsWanted)
      return c.fail(what + " has shape " + shapeString(shape) + ", expected [" +
                    std::to_string(rowsWanted) + ", " +
                    std::to_string(colsWanted) + "] (" + meaning + ")");
    return Status::ok();
  };
  if (std::string p = c.weightIndexProblem(op.router()); !p.empty())
    return c.fail("router: " + p);
  dtype = root.weights()->Get(op.router())->dtype();
  FM_RETURN_IF_ERROR(weight("router", op.router(), E, K, "experts, x width"));

  if (std::string p = c.weightIndexProblem(op.gate()->Get(0)); !p.empty())
    return c.fail("expert 0 gate: " + p);
  const fa::Weight *gate0 = root.weights()->Get(op.gate()->Get(0));
  if (gate0->shape()->size() != 2 || gate0->shape()->Get(0) <= 0)
    return c.fail("expert 0 gate " + c.weightName(op.gate()->Get(0)) +
                  " has shape " + shapeString(gate0->shape()) +
                  ", expected [intermediate, " + std::to_string(K) +
                  "] with intermediate > 0");
  const u64 I = gate0->shape()->Get(0);
  for (u64 e = 0; e < E; ++e) {
    const std::string expert = "expert " + std::to_string(e);
    const auto i = static_cast<flatbuffers::uoffset_t>(e);
    FM_RETURN_IF_ERROR(weight(expert + " gate", op.gate()->Get(i), I, K,
                              "intermediate, x width"));
    FM_RETURN_IF_ERROR(
        weight(expert + " up", op.up()->Get(i), I, K, "intermediate, x width"));
    FM_RETURN_IF_ERROR(weight(expert + " down", op.down()->Get(i), K, I,
                              "x width, intermediate"));
  }

  const int32_t shared[4] = {op.shared_gate(), op.shared_up(), op.shared_down(),
                             op.shared_expert_gate()};
  const char *sharedNames[4] = {"shared_gate", "shared_up", "shared_down",
                                "shared_expert_gate"};
  int present = 0;
  for (int i = 0; i < 4; ++i) {
    if (shared[i] < -1)
      return c.fail(std::string(sharedNames[i]) + " " +
                    std::to_string(shared[i]) +
                    " is invalid (-1 or a weight index)");
    present += shared[i] >= 0;
  }
  u64 sharedI = 0;
  if (present != 0 && present != 4) {
    std::string given;
    for (int i = 0; i < 4; ++i)
      if (shared[i] >= 0)
        given += std::string(given.empty() ? "" : ", ") + sharedNames[i];
    return c.fail("a shared expert needs all of shared_gate, shared_up, "
                  "shared_down and shared_expert_gate (given: " +
                  given + ")");
  }
  if (present == 4) {
    if (std::string p = c.weightIndexProblem(shared[0]); !p.empty())
      return c.fail("shared gate: " + p);
    const fa::Weight *sg = root.weights()->Get(shared[0]);
    if (sg->shape()->size() != 2 || sg->shape()->Get(0) <= 0)
      return c.fail("shared gate " + c.weightName(shared[0]) + " has shape " +
                    shapeString(sg->shape()) + ", expected [intermediate, " +
                    std::to_string(K) + "] with intermediate > 0");
    sharedI = sg->shape()->Get(0);
    FM_RETURN_IF_ERROR(weight("shared gate", shared[0], sharedI, K,
                              "shared intermediate, x width"));
    FM_RETURN_IF_ERROR(weight("shared up", shared[1], sharedI, K,
                              "shared intermediate, x width"));
    FM_RETURN_IF_ERROR(weight("shared down", shared[2], K, sharedI,
                              "x width, shared intermediate"));
    FM_RETURN_IF_ERROR(
        weight("shared expert gate", shared[3], 1, K, "1, x width"));
  }

  FM_RETURN_IF_ERROR(c.buffer("x", *op.x(), rows));
  FM_RETURN_IF_ERROR(c.buffer("y", *op.y(), rows));
  if (mayOverlap(*op.x(), rows, *op.y(), rows))
    return c.fail("y buffer " + describe(*op.y()) + " overlaps x buffer " +
                  describe(*op.x()));
  kernels::MoeShape shape;
  shape.rows = static_cast<int64_t>(rows);
  shape.hidden = static_cast<int64_t>(K);
  shape.experts = static_cast<int64_t>(E);
  shape.intermediate = static_cast<int64_t>(I);
  shape.topK = op.top_k();
  shape.sharedIntermediate = static_cast<int64_t>(sharedI);
  // Both Moe paths route and combine in kernels::moe's scratch (the
  // device's per-thread matmul scratch on top is checked where the session
  // knows its threads: hal::Device::prepareMoe).
  const u64 scratch = kernels::moeScratchFloats(shape);
  if (scratch > kernels::kMoeMaxScratchFloats)
    return c.fail("moe needs " + std::to_string(scratch) +
                  " floats of scratch, more than this runtime allocates");
  return Status::ok();
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  const fa::Moe &op = *command.op_as_Moe();
  out.push_back({op.x(), false, rows, 0, 0, "x"});
  out.push_back({op.y(), true, rows, 0, 0, "y"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::Moe &op = *command.op_as_Moe();
  hal::MoeDesc d;
  d.x = c.rows(*op.x());
  d.y = c.rows(*op.y());
  d.router = c.weight(op.router());
  for (uint32_t w : *op.gate())
    d.gate.push_back(c.weight(w));
  for (uint32_t w : *op.up())
    d.up.push_back(c.weight(w));
  for (uint32_t w : *op.down())
    d.down.push_back(c.weight(w));
  if (op.shared_gate() >= 0) {
    d.hasShared = true;
    d.sharedGate = c.weight(op.shared_gate());
    d.sharedUp = c.weight(op.shared_up());
    d.sharedDown = c.weight(op.shared_down());
    d.sharedExpertGate = c.weight(op.shared_expert_gate());
  }
  d.topK = op.top_k();
  d.normTopk = op.norm_topk();
  d.accumulate = op.accumulate();
  d.maxRows = c.maxRows();
  d.activations = c.activations();
  d.threads = c.threads();
  return c.device().prepareMoe(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::Moe &op = *command.op_as_Moe();
  out.text = bufferText(*op.x(), c.oneRow()) + " router " +
             c.weightName(op.router()) + ", " +
             std::to_string(op.gate()->size()) + " experts top-" +
             std::to_string(op.top_k()) +
             (op.norm_topk() ? " (renormalized)" : "") +
             (op.shared_gate() >= 0 ? " + shared expert" : "") +
             (op.accumulate() ? " +-> " : " -> ") +
             bufferText(*op.y(), c.oneRow());
  out.json = JsonMembers()
                 .add("x", *op.x())
                 .add("y", *op.y())
                 .add("router", c.weightName(op.router()))
                 .add("experts", static_cast<int64_t>(op.gate()->size()))
                 .add("top_k", op.top_k())
                 .add("norm_topk", op.norm_topk())
                 .add("accumulate", op.accumulate())
                 .str();
}

} // namespace

extern const CommandKind kMoeCommand = {fa::Op::Moe, "moe", verify, uses,
                                        build, describe};

} // namespace fm::rt
