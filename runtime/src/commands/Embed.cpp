// The Embed command: out = table[tokens].
#include "commands/Command.h"

namespace fm::rt {
namespace {

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::Embed &op = *command.op_as_Embed();
  if (std::string p = c.weightIndexProblem(op.table_weight()); !p.empty())
    return c.fail(p);
  const fa::Weight *w = c.root().weights()->Get(op.table_weight());
  const std::string table = "embedding table " + c.weightName(op.table_weight());
  if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16 &&
      !isQuantized(w->dtype()))
    return c.fail(table + " is " + dtypeName(w->dtype()) +
                  " (embed reads f32, f16, q2, q4 or q8)");
  if (w->shape()->size() != 2 || w->shape()->Get(0) != c.root().vocab_size() ||
      w->shape()->Get(1) != op.out()->width())
    return c.fail(table + " has shape " + shapeString(w->shape()) +
                  ", expected [" + std::to_string(c.root().vocab_size()) +
                  ", " + std::to_string(op.out()->width()) +
                  "] (vocab_size, out width)");
  return c.buffer("out", *op.out(), c.rows());
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  out.push_back({command.op_as_Embed()->out(), true, rows, 0, 0, "out"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::Embed &op = *command.op_as_Embed();
  hal::EmbedDesc d;
  d.table = c.weight(op.table_weight());
  d.out = c.rows(*op.out());
  return c.device().prepareEmbed(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::Embed &op = *command.op_as_Embed();
  const std::string table = c.weightName(op.table_weight());
  out.text = "table=" + table + " -> " + bufferText(*op.out(), c.oneRow());
  out.json = JsonMembers().add("table", table).add("out", *op.out()).str();
}

} // namespace

extern const CommandKind kEmbedCommand = {fa::Op::Embed, "embed", verify, uses,
                                          build, describe};

} // namespace fm::rt
