// The LayerNorm command: LayerNorm with weight and bias over each row, a
// device micro-kernel (the image encoders' norms).
#include "commands/Command.h"

#include <cmath>

namespace fm::rt {
namespace {

bool sameBuffer(const fa::BufferRef &a, const fa::BufferRef &b) {
  return a.offset() == b.offset() && a.stride() == b.stride() &&
         a.width() == b.width();
}

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::LayerNorm &op = *command.op_as_LayerNorm();
  const int64_t width = op.x()->width();
  if (width == 0 || op.y()->width() != op.x()->width())
    return c.fail("x width " + std::to_string(op.x()->width()) + " and y width " +
                  std::to_string(op.y()->width()) +
                  " must be equal and non-zero");
  if (!(op.eps() > 0.0f) || !std::isfinite(op.eps()))
    return c.fail("eps " + std::to_string(op.eps()) + " must be positive");
  for (auto [role, index] : {std::pair<const char *, uint32_t>{"norm weight", op.weight()},
                             {"norm bias", op.bias()}})
    if (std::string p = f32WeightProblem(c, index, role, {width}); !p.empty())
      return c.fail(p + " (the row width)");
  FM_RETURN_IF_ERROR(c.buffer("x", *op.x(), c.rows()));
  FM_RETURN_IF_ERROR(c.buffer("y", *op.y(), c.rows()));
  if (!sameBuffer(*op.x(), *op.y()) &&
      mayOverlap(*op.x(), c.rows(), *op.y(), c.rows()))
    return c.fail("y buffer " + describe(*op.y()) + " overlaps x buffer " +
                  describe(*op.x()) + " (it may be x itself, not part of it)");
  return Status::ok();
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  const fa::LayerNorm &op = *command.op_as_LayerNorm();
  out.push_back({op.x(), false, rows, 0, 0, "x"});
  out.push_back({op.y(), true, rows, 0, 0, "y"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::LayerNorm &op = *command.op_as_LayerNorm();
  hal::LayerNormDesc d;
  d.x = c.rows(*op.x());
  d.y = c.rows(*op.y());
  d.weight = c.weight(op.weight());
  d.bias = c.weight(op.bias());
  d.eps = op.eps();
  return c.device().prepareLayerNorm(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::LayerNorm &op = *command.op_as_LayerNorm();
  char eps[32];
  std::snprintf(eps, sizeof eps, "%g", op.eps());
  out.text = "layer_norm(" + bufferText(*op.x(), c.oneRow()) + ") * " +
             c.weightName(op.weight()) + " + " + c.weightName(op.bias()) +
             " -> " + bufferText(*op.y(), c.oneRow()) + "  (eps=" + eps + ")";
  out.json = JsonMembers()
                 .add("x", *op.x())
                 .add("y", *op.y())
                 .add("weight", c.weightName(op.weight()))
                 .add("bias", c.weightName(op.bias()))
                 .add("eps", op.eps())
                 .str();
}

} // namespace

extern const CommandKind kLayerNormCommand = {
    fa::Op::LayerNorm, "layer_norm", verify, uses, build, describe};

} // namespace fm::rt
