// The PatchEmbed command: an image encoder's patch embedding (Conv2d with
// stride = kernel as one GEMM over the unfolded patches), the position
// table and the register tokens, a device micro-kernel.
#include "commands/Command.h"

namespace fm::rt {
namespace {

u64 patches(const fa::PatchEmbed &op) {
  return u64(op.height() / op.patch()) * (op.width() / op.patch());
}

// Rows of out: the registers, then the patches.
u64 registers(const VerifyContext &c, const fa::PatchEmbed &op) {
  if (op.registers() < 0)
    return 0;
  const fa::Weight *w = c.root().weights()->Get(uint32_t(op.registers()));
  return w->shape()->size() == 2 ? static_cast<u64>(w->shape()->Get(0)) : 0;
}

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::PatchEmbed &op = *command.op_as_PatchEmbed();
  if (op.channels() == 0 || op.height() == 0 || op.width() == 0 ||
      op.patch() == 0)
    return c.fail("channels, height, width and patch must be non-zero (" +
                  std::to_string(op.channels()) + ", " +
                  std::to_string(op.height()) + ", " +
                  std::to_string(op.width()) + ", " +
                  std::to_string(op.patch()) + ")");
  if (op.height() % op.patch() != 0 || op.width() % op.patch() != 0)
    return c.fail("a " + std::to_string(op.height()) + "x" +
                  std::to_string(op.width()) + " image is not a whole number of " +
                  std::to_string(op.patch()) + "x" + std::to_string(op.patch()) +
                  " patches");
  const u64 imageFloats = u64(op.channels()) * op.height() * op.width();
  if (op.image()->width() != imageFloats)
    return c.fail("image buffer width " + std::to_string(op.image()->width()) +
                  " is not channels x height x width = " +
                  std::to_string(imageFloats));
  const int64_t dim = op.out()->width(), p = op.patch();
  if (dim == 0)
    return c.fail("out width is 0");
  if (std::string e = f32WeightProblem(c, op.weight(), "patch weight",
                                       {dim, int64_t(op.channels()), p, p});
      !e.empty())
    return c.fail(e + " (out width, channels, patch, patch)");
  if (std::string e = f32WeightProblem(c, op.bias(), "patch bias", {dim});
      !e.empty())
    return c.fail(e);
  if (op.pos() < -1 || op.registers() < -1)
    return c.fail("pos and registers are weight indices, or -1 for none");
  if (op.pos() >= 0)
    if (std::string e = f32FloatsProblem(c, uint32_t(op.pos()), "position table",
                                         patches(op) * u64(dim));
        !e.empty())
      return c.fail(e + " (" + std::to_string(patches(op)) + " patches x " +
                    std::to_string(dim) + ")");
  if (op.registers() >= 0) {
    const uint32_t index = uint32_t(op.registers());
    if (std::string e = c.weightIndexProblem(index); !e.empty())
      return c.fail("registers: " + e);
    const fa::Weight *w = c.root().weights()->Get(index);
    if (w->shape()->size() != 2 || w->shape()->Get(0) < 1)
      return c.fail("registers " + c.weightName(index) + " has shape " +
                    shapeString(w->shape()) + ", expected [registers, " +
                    std::to_string(dim) + "]");
    if (std::string e = f32WeightProblem(c, index, "registers",
                                         {w->shape()->Get(0), dim});
        !e.empty())
      return c.fail(e);
  }
  const u64 rows = registers(c, op) + patches(op);
  FM_RETURN_IF_ERROR(c.buffer("image", *op.image(), 1));
  FM_RETURN_IF_ERROR(c.buffer("out", *op.out(), rows));
  if (mayOverlap(*op.image(), 1, *op.out(), rows))
    return c.fail("out buffer " + describe(*op.out()) +
                  " overlaps the image buffer " + describe(*op.image()));
  return Status::ok();
}

void uses(const fa::Command &command, u64, std::vector<Use> &out) {
  const fa::PatchEmbed &op = *command.op_as_PatchEmbed();
  // Registers are not known without the weights table: patches bound it
  // from below, and encode_image programs have no track sections.
  out.push_back({op.image(), false, 1, 0, 0, "image"});
  out.push_back({op.out(), true, patches(op), 0, 0, "out"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::PatchEmbed &op = *command.op_as_PatchEmbed();
  hal::PatchEmbedDesc d;
  d.image = c.rows(*op.image());
  d.out = c.rows(*op.out());
  d.channels = op.channels();
  d.height = op.height();
  d.width = op.width();
  d.patch = op.patch();
  d.weight = c.weight(op.weight());
  d.bias = c.weight(op.bias());
  if (op.pos() >= 0)
    d.pos = c.weight(uint32_t(op.pos()));
  if (op.registers() >= 0)
    d.registers = c.weight(uint32_t(op.registers()));
  return c.device().preparePatchEmbed(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::PatchEmbed &op = *command.op_as_PatchEmbed();
  const std::string size = std::to_string(op.channels()) + "x" +
                           std::to_string(op.height()) + "x" +
                           std::to_string(op.width());
  out.text = "image[" + size + "] patches " + std::to_string(op.patch()) +
             "x" + std::to_string(op.patch()) + " x " +
             c.weightName(op.weight()) + "^T + " + c.weightName(op.bias());
  if (op.pos() >= 0)
    out.text += " + " + c.weightName(uint32_t(op.pos()));
  if (op.registers() >= 0)
    out.text += ", after " + c.weightName(uint32_t(op.registers()));
  out.text += " -> buf@" + std::to_string(op.out()->offset());
  JsonMembers json;
  json.add("image", *op.image())
      .add("out", *op.out())
      .add("channels", op.channels())
      .add("height", op.height())
      .add("width", op.width())
      .add("patch", op.patch())
      .add("weight", c.weightName(op.weight()))
      .add("bias", c.weightName(op.bias()));
  if (op.pos() >= 0)
    json.add("pos", c.weightName(uint32_t(op.pos())));
  if (op.registers() >= 0)
    json.add("registers", c.weightName(uint32_t(op.registers())));
  out.json = json.str();
}

} // namespace

extern const CommandKind kPatchEmbedCommand = {
    fa::Op::PatchEmbed, "patch_embed", verify, uses, build, describe};

} // namespace fm::rt
