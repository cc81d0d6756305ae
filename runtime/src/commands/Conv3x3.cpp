// The Conv3x3 command: the vision-language adapter's 3x3 convolution with
// zero padding 1 over the patch grid (an unfold and a GEMM), a device
// micro-kernel.
#include "commands/Command.h"

namespace fm::rt {
namespace {

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::Conv3x3 &op = *command.op_as_Conv3x3();
  if (op.grid_h() == 0 || op.grid_w() == 0)
    return c.fail("the grid is empty (" + std::to_string(op.grid_h()) + "x" +
                  std::to_string(op.grid_w()) + ")");
  const int64_t cin = op.x()->width(), cout = op.y()->width();
  if (cin == 0 || cout == 0)
    return c.fail("x and y widths must be non-zero");
  if (std::string p = c.weightIndexProblem(op.weight()); !p.empty())
    return c.fail("conv weight: " + p);
  const fa::Weight *w = c.root().weights()->Get(op.weight());
  if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16)
    return c.fail("conv weight " + c.weightName(op.weight()) + " is " +
                  dtypeName(w->dtype()) + " (the 3x3 convolution reads f32 or f16)");
  const std::vector<int64_t> want = {cout, cin, 3, 3};
  if (std::vector<int64_t>(w->shape()->begin(), w->shape()->end()) != want)
    return c.fail("conv weight " + c.weightName(op.weight()) + " has shape " +
                  shapeString(w->shape()) + ", expected " + shapeString(want) +
                  " (y width, x width, 3, 3)");
  if (op.bias() < -1)
    return c.fail("bias " + std::to_string(op.bias()) +
                  " is invalid (a weight index, or -1 for none)");
  if (op.bias() >= 0)
    if (std::string p = f32WeightProblem(c, uint32_t(op.bias()), "conv bias",
                                         {cout});
        !p.empty())
      return c.fail(p);
  const u64 rows = u64(op.grid_h()) * op.grid_w();
  FM_RETURN_IF_ERROR(c.buffer("x", *op.x(), rows));
  FM_RETURN_IF_ERROR(c.buffer("y", *op.y(), rows));
  if (mayOverlap(*op.x(), rows, *op.y(), rows))
    return c.fail("y buffer " + describe(*op.y()) + " overlaps x buffer " +
                  describe(*op.x()));
  return Status::ok();
}

void uses(const fa::Command &command, u64, std::vector<Use> &out) {
  const fa::Conv3x3 &op = *command.op_as_Conv3x3();
  const u64 rows = u64(op.grid_h()) * op.grid_w();
  out.push_back({op.x(), false, rows, 0, 0, "x"});
  out.push_back({op.y(), true, rows, 0, 0, "y"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::Conv3x3 &op = *command.op_as_Conv3x3();
  hal::Conv3x3Desc d;
  d.x = c.rows(*op.x());
  d.y = c.rows(*op.y());
  d.gridH = op.grid_h();
  d.gridW = op.grid_w();
  d.weight = c.weight(op.weight());
  if (op.bias() >= 0)
    d.bias = c.weight(uint32_t(op.bias()));
  d.activations = c.activations();
  return c.device().prepareConv3x3(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::Conv3x3 &op = *command.op_as_Conv3x3();
  const std::string grid =
      std::to_string(op.grid_h()) + "x" + std::to_string(op.grid_w());
  out.text = "conv3x3 buf@" + std::to_string(op.x()->offset()) + "[" + grid +
             " grid x " + std::to_string(op.x()->width()) + "] * " +
             c.weightName(op.weight()) +
             (op.bias() >= 0 ? " + " + c.weightName(uint32_t(op.bias())) : "") +
             " -> buf@" + std::to_string(op.y()->offset());
  JsonMembers json;
  json.add("x", *op.x())
      .add("y", *op.y())
      .add("grid_h", op.grid_h())
      .add("grid_w", op.grid_w())
      .add("weight", c.weightName(op.weight()));
  if (op.bias() >= 0)
    json.add("bias", c.weightName(uint32_t(op.bias())));
  out.json = json.str();
}

} // namespace

extern const CommandKind kConv3x3Command = {fa::Op::Conv3x3, "conv3x3", verify,
                                            uses, build, describe};

} // namespace fm::rt
