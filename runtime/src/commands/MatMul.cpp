// The MatMul command: y (+)= x · concat(weights)ᵀ, a device micro-kernel.
#include "commands/Command.h"

namespace fm::rt {
namespace {

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
  out.text = bufferText(*op.x(), c.oneRow()) + " x [" + list + "]^T " +
             (op.accumulate() ? "+-> " : "-> ") +
             bufferText(*op.y(), c.oneRow()) + "  (k=" + std::to_string(op.k()) +
             ", n=" + std::to_string(op.n()) + ")";
  out.json = JsonMembers()
                 .add("x", *op.x())
                 .add("y", *op.y())
                 .add("weights", names)
                 .add("k", op.k())
                 .add("n", op.n())
                 .add("accumulate", op.accumulate())
                 .str();
}

} // namespace

extern const CommandKind kMatMulCommand = {fa::Op::MatMul, "matmul", verify,
                                           uses, build, describe};

} // namespace fm::rt
