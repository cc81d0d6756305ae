// The MatMul command: y = act(x · concat(weights)ᵀ + bias) (+ y), a device
// micro-kernel.
#include "commands/Command.h"

namespace fm::rt {
namespace {

const char *activationName(fa::Activation a) {
  switch (a) {
  case fa::Activation::None:
    return "none";
  case fa::Activation::Gelu:
    return "gelu";
  case fa::Activation::GeluTanh:
    return "gelu_tanh";
  case fa::Activation::QuickGelu:
    return "quick_gelu";
  }
  return "?";
}

hal::Activation halActivation(fa::Activation a) {
  switch (a) {
  case fa::Activation::Gelu:
    return hal::Activation::Gelu;
  case fa::Activation::GeluTanh:
    return hal::Activation::GeluTanh;
  case fa::Activation::QuickGelu:
    return hal::Activation::QuickGelu;
  case fa::Activation::None:
    break;
  }
  return hal::Activation::None;
}

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::MatMul &op = *command.op_as_MatMul();
  if (op.weights()->size() == 0)
    return c.fail("matmul has no weights");
  // Each weight runs on the kernel of its own dtype (f32, f16 or a packed
  // format), so the weights of one command may differ in dtype.
  u64 totalRows = 0;
  for (uint32_t index : *op.weights()) {
    if (std::string p = c.weightIndexProblem(index); !p.empty())
      return c.fail(p);
    const fa::Weight *w = c.root().weights()->Get(index);
    if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16 &&
        !isQuantized(w->dtype()))
      return c.fail(c.weightName(index) + " is " + dtypeName(w->dtype()) +
                    " (matmul reads f32, f16, q2, q4 or q8 weights)");
    if (w->shape()->size() != 2 || w->shape()->Get(1) != op.k())
      return c.fail(c.weightName(index) + " has shape " +
                    shapeString(w->shape()) + ", expected [rows, " +
                    std::to_string(op.k()) + "] (k = " + std::to_string(op.k()) +
                    ")");
    const u64 rows = static_cast<u64>(w->shape()->Get(0));
    totalRows = totalRows > ~u64(0) - rows ? ~u64(0) : totalRows + rows;
  }
  if (totalRows != op.n())
    return c.fail("the weights have " + std::to_string(totalRows) +
                  " rows in all but n is " + std::to_string(op.n()));
  if (op.x()->width() != op.k())
    return c.fail("x width " + std::to_string(op.x()->width()) + " is not k " +
                  std::to_string(op.k()));
  if (op.y()->width() != op.n())
    return c.fail("y width " + std::to_string(op.y()->width()) + " is not n " +
                  std::to_string(op.n()));
  if (op.bias() < -1)
    return c.fail("bias " + std::to_string(op.bias()) +
                  " is invalid (a weight index, or -1 for none)");
  if (op.bias() >= 0)
    if (std::string p = f32WeightProblem(c, uint32_t(op.bias()), "bias",
                                         {int64_t(op.n())});
        !p.empty())
      return c.fail(p + " (n = " + std::to_string(op.n()) + ")");
  if (op.activation() > fa::Activation::MAX)
    return c.fail("unknown activation " +
                  std::to_string(static_cast<unsigned>(op.activation())));
  if (op.activation() != fa::Activation::None && op.accumulate())
    return c.fail(std::string("an accumulating matmul cannot apply ") +
                  activationName(op.activation()) +
                  " (the activation would see the sum)");
  FM_RETURN_IF_ERROR(c.buffer("x", *op.x(), c.rows()));
  FM_RETURN_IF_ERROR(c.buffer("y", *op.y(), c.rows()));
  if (mayOverlap(*op.x(), c.rows(), *op.y(), c.rows()))
    return c.fail("y buffer " + describe(*op.y()) + " overlaps x buffer " +
                  describe(*op.x()));
  return Status::ok();
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  const fa::MatMul &op = *command.op_as_MatMul();
  out.push_back({op.x(), false, rows, 0, 0, "x"});
  out.push_back({op.y(), true, rows, 0, 0, "y"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::MatMul &op = *command.op_as_MatMul();
  hal::MatmulDesc d;
  d.x = c.rows(*op.x());
  d.y = c.rows(*op.y());
  d.k = op.k();
  d.n = op.n();
  d.accumulate = op.accumulate();
  int64_t col = 0;
  for (uint32_t index : *op.weights()) {
    d.weights.push_back(c.weight(index));
    const int64_t rows = d.weights.back().shape[0];
    c.loraTerms(index, col, rows, d.lora); // the session's adapters, if any
    col += rows;
  }
  if (op.bias() >= 0)
    d.bias = c.weight(uint32_t(op.bias()));
  d.activation = halActivation(op.activation());
  d.maxRows = c.maxRows();
  d.activations = c.activations();
  return c.device().prepareMatmul(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::MatMul &op = *command.op_as_MatMul();
  std::vector<std::string> names;
  for (uint32_t index : *op.weights())
    names.push_back(c.weightName(index));
  std::string list;
  for (const std::string &n : names)
    list += (list.empty() ? "" : ", ") + n;
  const std::string bias = op.bias() >= 0 ? c.weightName(op.bias()) : "";
  out.text = bufferText(*op.x(), c.oneRow()) + " x [" + list + "]^T " +
             (bias.empty() ? "" : "+ " + bias + " ") +
             (op.activation() != fa::Activation::None
                  ? std::string("then ") + activationName(op.activation()) + " "
                  : "") +
             (op.accumulate() ? "+-> " : "-> ") +
             bufferText(*op.y(), c.oneRow()) + "  (k=" + std::to_string(op.k()) +
             ", n=" + std::to_string(op.n()) + ")";
  JsonMembers json;
  json.add("x", *op.x())
      .add("y", *op.y())
      .add("weights", names)
      .add("k", op.k())
      .add("n", op.n())
      .add("accumulate", op.accumulate());
  if (!bias.empty())
    json.add("bias", bias);
  if (op.activation() != fa::Activation::None)
    json.add("activation", activationName(op.activation()));
  out.json = json.str();
}

} // namespace

extern const CommandKind kMatMulCommand = {fa::Op::MatMul, "matmul", verify,
                                           uses, build, describe};

} // namespace fm::rt
