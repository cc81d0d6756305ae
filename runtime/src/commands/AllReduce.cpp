// The AllReduce command: the collective at a track-block boundary.
#include "commands/Command.h"

#include <cstdio>

namespace fm::rt {
namespace {

bool sameBuffer(const fa::BufferRef &a, const fa::BufferRef &b) {
  return a.offset() == b.offset() && a.stride() == b.stride() &&
         a.width() == b.width();
}

// Placement (every rank, between blocks) is checked with the other
// placements by the loader.
Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::AllReduce &op = *command.op_as_AllReduce();
  FM_RETURN_IF_ERROR(c.buffer("out", *op.out(), c.rows()));
  if (op.inputs()->size() == 0)
    return c.fail("all-reduce has no inputs");
  if (op.input_ranks() && op.input_ranks()->size() != op.inputs()->size())
    return c.fail("all-reduce has " + std::to_string(op.inputs()->size()) +
                  " inputs but " + std::to_string(op.input_ranks()->size()) +
                  " input ranks");
  for (flatbuffers::uoffset_t i = 0; i < op.inputs()->size(); ++i) {
    const fa::BufferRef &in = *op.inputs()->Get(i);
    const std::string what = "input " + std::to_string(i);
    if (in.width() != op.out()->width())
      return c.fail(what + " width " + std::to_string(in.width()) +
                    " is not out width " + std::to_string(op.out()->width()));
    FM_RETURN_IF_ERROR(c.buffer(what.c_str(), in, c.rows()));
    if (op.input_ranks()) {
      const int32_t r = op.input_ranks()->Get(i);
      if (r < -1 || (r >= 0 && uint64_t(r) >= c.root().ranks()))
        return c.fail(what + " rank " + std::to_string(r) +
                      " is not -1 or a rank below " +
                      std::to_string(c.root().ranks()));
    }
    if (!sameBuffer(in, *op.out()) &&
        mayOverlap(in, c.rows(), *op.out(), c.rows()))
      return c.fail(what + " buffer " + describe(in) + " overlaps out buffer " +
                    describe(*op.out()) + " (an input is out itself or apart)");
  }
  return Status::ok();
}

void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  const fa::AllReduce &op = *command.op_as_AllReduce();
  for (const fa::BufferRef *in : *op.inputs())
    out.push_back({in, false, rows, 0, 0, "input"});
  out.push_back({op.out(), true, rows, 0, 0, "out"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::AllReduce &op = *command.op_as_AllReduce();
  hal::AllReduceDesc d;
  for (flatbuffers::uoffset_t i = 0; i < op.inputs()->size(); ++i) {
    const int32_t r = op.input_ranks() ? op.input_ranks()->Get(i) : -1;
    if (r < 0 || r == c.rank())
      d.inputs.push_back(c.rows(*op.inputs()->Get(i)));
  }
  d.out = c.rows(*op.out());
  d.scale = op.scale();
  d.comm = c.communicator();
  d.stats = c.collectiveStats();
  d.maxRows = c.maxRows();
  if (d.stats && d.comm && d.comm->size() > 1 && d.stats->transport.empty())
    d.stats->transport = "host"; // a device with its own transport says so
  return c.device().prepareAllReduce(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::AllReduce &op = *command.op_as_AllReduce();
  char scale[32];
  std::snprintf(scale, sizeof(scale), "%g", op.scale());
  std::string inputs, ins;
  for (flatbuffers::uoffset_t i = 0; i < op.inputs()->size(); ++i) {
    const int32_t r = op.input_ranks() ? op.input_ranks()->Get(i) : -1;
    inputs += (i ? ", " : "") + bufferText(*op.inputs()->Get(i), c.oneRow()) +
              (r >= 0 ? "@rank" + std::to_string(r) : "");
    ins += (i ? ", " : "") + JsonMembers::buffer(*op.inputs()->Get(i));
  }
  out.text = "sum over ranks of (" + inputs + ") -> " +
             bufferText(*op.out(), c.oneRow()) + ", x " + scale;
  out.json = JsonMembers()
                 .addRaw("inputs", "[" + ins + "]")
                 .add("out", *op.out())
                 .add("scale", op.scale())
                 .str();
}

} // namespace

extern const CommandKind kAllReduceCommand = {
    fa::Op::AllReduce, "all_reduce", verify, uses, build, describe};

} // namespace fm::rt
