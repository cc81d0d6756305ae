// The CopyLastRow command: the chunk's last row of src into row 0 of dst.
#include "commands/Command.h"

namespace fm::rt {
namespace {

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::CopyLastRow &op = *command.op_as_CopyLastRow();
  if (op.src()->width() != op.dst()->width())
    return c.fail("src width " + std::to_string(op.src()->width()) +
                  " differs from dst width " + std::to_string(op.dst()->width()));
  FM_RETURN_IF_ERROR(c.buffer("src", *op.src(), c.rows()));
  // The copy is a memmove: src and dst may overlap.
  return c.buffer("dst", *op.dst(), 1);
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  const fa::CopyLastRow &op = *command.op_as_CopyLastRow();
  out.push_back({op.src(), false, rows, 0, 0, "src"});
  out.push_back({op.dst(), true, 1, 0, 0, "dst"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::CopyLastRow &op = *command.op_as_CopyLastRow();
  hal::CopyRowDesc d;
  d.src = c.rows(*op.src());
  d.dst = c.rows(*op.dst());
  return c.device().prepareCopyRow(d);
}

void describe(const DescribeContext &, const fa::Command &command,
              CommandText &out) {
  const fa::CopyLastRow &op = *command.op_as_CopyLastRow();
  out.text = bufferText(*op.src(), false) + " last row -> " +
             bufferText(*op.dst(), true);
  out.json = JsonMembers().add("src", *op.src()).add("dst", *op.dst()).str();
}

} // namespace

extern const CommandKind kCopyLastRowCommand = {
    fa::Op::CopyLastRow, "copy_last_row", verify, uses, build, describe};

} // namespace fm::rt
