// The AvgPool command: the vision-language adapter's average pooling of the
// patch grid to out_grid x out_grid tokens, a device micro-kernel.
#include "commands/Command.h"

namespace fm::rt {
namespace {

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::AvgPool &op = *command.op_as_AvgPool();
  if (op.out_grid() < 1 || op.out_grid() > op.grid())
    return c.fail("out_grid " + std::to_string(op.out_grid()) +
                  " must be in [1, grid " + std::to_string(op.grid()) + "]");
  if (op.x()->width() == 0 || op.y()->width() != op.x()->width())
    return c.fail("x width " + std::to_string(op.x()->width()) + " and y width " +
                  std::to_string(op.y()->width()) +
                  " must be equal and non-zero");
  const u64 in = u64(op.grid()) * op.grid(), outRows = u64(op.out_grid()) * op.out_grid();
  FM_RETURN_IF_ERROR(c.buffer("x", *op.x(), in));
  FM_RETURN_IF_ERROR(c.buffer("y", *op.y(), outRows));
  if (mayOverlap(*op.x(), in, *op.y(), outRows))
    return c.fail("y buffer " + describe(*op.y()) + " overlaps x buffer " +
                  describe(*op.x()));
  return Status::ok();
}

void uses(const fa::Command &command, u64, std::vector<Use> &out) {
  const fa::AvgPool &op = *command.op_as_AvgPool();
  out.push_back({op.x(), false, u64(op.grid()) * op.grid(), 0, 0, "x"});
  out.push_back({op.y(), true, u64(op.out_grid()) * op.out_grid(), 0, 0, "y"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::AvgPool &op = *command.op_as_AvgPool();
  hal::AvgPoolDesc d;
  d.x = c.rows(*op.x());
  d.y = c.rows(*op.y());
  d.grid = op.grid();
  d.outGrid = op.out_grid();
  return c.device().prepareAvgPool(d);
}

void describe(const DescribeContext &, const fa::Command &command,
              CommandText &out) {
  const fa::AvgPool &op = *command.op_as_AvgPool();
  const std::string g = std::to_string(op.grid()),
                    o = std::to_string(op.out_grid());
  out.text = "avg_pool buf@" + std::to_string(op.x()->offset()) + "[" + g + "x" +
             g + " grid] -> buf@" + std::to_string(op.y()->offset()) + "[" + o +
             "x" + o + "] (width " + std::to_string(op.x()->width()) + ")";
  out.json = JsonMembers()
                 .add("x", *op.x())
                 .add("y", *op.y())
                 .add("grid", op.grid())
                 .add("out_grid", op.out_grid())
                 .str();
}

} // namespace

extern const CommandKind kAvgPoolCommand = {fa::Op::AvgPool, "avg_pool", verify,
                                            uses, build, describe};

} // namespace fm::rt
