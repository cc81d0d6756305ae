// The VitAttention command: bidirectional attention of a ViT block, global
// or in ViTDet windows, with the decomposed relative-position bias and
// Register-Window registers (docs/vit.md), a device micro-kernel.
#include "commands/Command.h"

#include <algorithm>
#include <cmath>

namespace fm::rt {
namespace {

u64 tokens(const fa::VitAttention &op) {
  return u64(op.registers()) + u64(op.grid_h()) * op.grid_w();
}

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::VitAttention &op = *command.op_as_VitAttention();
  if (op.grid_h() == 0 || op.grid_w() == 0 || op.heads() == 0 ||
      op.head_dim() == 0)
    return c.fail("grid_h, grid_w, heads and head_dim must be non-zero (" +
                  std::to_string(op.grid_h()) + ", " +
                  std::to_string(op.grid_w()) + ", " +
                  std::to_string(op.heads()) + ", " +
                  std::to_string(op.head_dim()) + ")");
  // A window wider than both sides of the grid is one window of mostly
  // padding (fm.vit_attention refuses it); bounding it here keeps a crafted
  // artifact's window^2 from wrapping the kernels' token counts.
  if (u64(op.window()) > std::max(u64(op.grid_h()), u64(op.grid_w())))
    return c.fail("window " + std::to_string(op.window()) +
                  " is larger than the " + std::to_string(op.grid_h()) + "x" +
                  std::to_string(op.grid_w()) + " grid (at most its larger side)");
  // On a thin grid the larger side still allows windows whose padding is
  // most of the work (4096x1 with window 4096: 16.7M keys for 4096 tokens);
  // the padded windows may cover at most 4x the grid, which every window up
  // to the smaller side meets (ceil(g/w)*w < 2g).
  if (const u64 w = op.window(); w > 0) {
    const u64 gh = op.grid_h(), gw = op.grid_w();
    // In double: exact below 2^53, and the 4x margin makes rounding moot.
    const double padded =
        double((gh + w - 1) / w * w) * double((gw + w - 1) / w * w);
    if (padded > 4.0 * double(gh) * double(gw))
      return c.fail("window " + std::to_string(w) + " pads the " +
                    std::to_string(gh) + "x" + std::to_string(gw) +
                    " grid to more than 4x its positions");
  }
  if (!std::isfinite(op.scale()))
    return c.fail("scale is not finite");
  const int64_t hd = op.head_dim(), width = int64_t(op.heads()) * hd;
  if (op.qkv()->width() != u64(3 * width))
    return c.fail("qkv width " + std::to_string(op.qkv()->width()) +
                  " is not 3 x heads x head_dim = " + std::to_string(3 * width));
  if (op.out()->width() != u64(width))
    return c.fail("out width " + std::to_string(op.out()->width()) +
                  " is not heads x head_dim = " + std::to_string(width));
  if ((op.rel_pos_h() >= 0) != (op.rel_pos_w() >= 0) || op.rel_pos_h() < -1 ||
      op.rel_pos_w() < -1 || op.pad_qkv() < -1)
    return c.fail("rel_pos_h and rel_pos_w are both weight indices or both "
                  "-1, pad_qkv a weight index or -1");
  if (op.rel_pos_h() >= 0) {
    // S: the window, or the grid's side on a global layer.
    const int64_t sh = op.window() ? op.window() : op.grid_h(),
                  sw = op.window() ? op.window() : op.grid_w();
    if (std::string p = f32WeightProblem(c, uint32_t(op.rel_pos_h()), "rel_pos_h",
                                         {2 * sh - 1, hd});
        !p.empty())
      return c.fail(p + " (2 x " + std::to_string(sh) + " - 1 positions)");
    if (std::string p = f32WeightProblem(c, uint32_t(op.rel_pos_w()), "rel_pos_w",
                                         {2 * sw - 1, hd});
        !p.empty())
      return c.fail(p + " (2 x " + std::to_string(sw) + " - 1 positions)");
  }
  if (op.pad_qkv() >= 0)
    if (std::string p = f32WeightProblem(c, uint32_t(op.pad_qkv()), "pad_qkv",
                                         {3 * width});
        !p.empty())
      return c.fail(p);
  const u64 rows = tokens(op);
  FM_RETURN_IF_ERROR(c.buffer("qkv", *op.qkv(), rows));
  FM_RETURN_IF_ERROR(c.buffer("out", *op.out(), rows));
  if (mayOverlap(*op.qkv(), rows, *op.out(), rows))
    return c.fail("out buffer " + describe(*op.out()) + " overlaps qkv buffer " +
                  describe(*op.qkv()));
  return Status::ok();
}

void uses(const fa::Command &command, u64, std::vector<Use> &out) {
  const fa::VitAttention &op = *command.op_as_VitAttention();
  out.push_back({op.qkv(), false, tokens(op), 0, 0, "qkv"});
  out.push_back({op.out(), true, tokens(op), 0, 0, "out"});
}

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::VitAttention &op = *command.op_as_VitAttention();
  hal::VitAttentionDesc d;
  d.qkv = c.rows(*op.qkv());
  d.out = c.rows(*op.out());
  d.registers = op.registers();
  d.gridH = op.grid_h();
  d.gridW = op.grid_w();
  d.heads = op.heads();
  d.headDim = op.head_dim();
  d.window = op.window();
  d.scale = op.scale();
  if (op.rel_pos_h() >= 0) {
    d.relPosH = c.weight(uint32_t(op.rel_pos_h()));
    d.relPosW = c.weight(uint32_t(op.rel_pos_w()));
  }
  if (op.pad_qkv() >= 0)
    d.padQkv = c.weight(uint32_t(op.pad_qkv()));
  return c.device().prepareVitAttention(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::VitAttention &op = *command.op_as_VitAttention();
  const std::string grid =
      std::to_string(op.grid_h()) + "x" + std::to_string(op.grid_w());
  out.text = "vit_attention buf@" + std::to_string(op.qkv()->offset()) + " -> buf@" +
             std::to_string(op.out()->offset()) + "  (" +
             std::to_string(op.registers()) + " registers + " + grid + " grid, " +
             std::to_string(op.heads()) + "h x " + std::to_string(op.head_dim()) +
             ", " +
             (op.window() ? "window " + std::to_string(op.window()) : "global") +
             (op.rel_pos_h() >= 0 ? ", rel-pos" : "") + ")";
  JsonMembers json;
  json.add("qkv", *op.qkv())
      .add("out", *op.out())
      .add("registers", op.registers())
      .add("grid_h", op.grid_h())
      .add("grid_w", op.grid_w())
      .add("heads", op.heads())
      .add("head_dim", op.head_dim())
      .add("scale", op.scale())
      .add("window", op.window());
  if (op.rel_pos_h() >= 0)
    json.add("rel_pos_h", c.weightName(uint32_t(op.rel_pos_h())))
        .add("rel_pos_w", c.weightName(uint32_t(op.rel_pos_w())));
  if (op.pad_qkv() >= 0)
    json.add("pad_qkv", c.weightName(uint32_t(op.pad_qkv())));
  out.json = json.str();
}

} // namespace

extern const CommandKind kVitAttentionCommand = {
    fa::Op::VitAttention, "vit_attention", verify, uses, build, describe};

} // namespace fm::rt
