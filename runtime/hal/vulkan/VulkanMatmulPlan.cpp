// The matmul's dispatches (VulkanMatmulPlan.h).
#include "hal/vulkan/VulkanMatmulPlan.h"

namespace fm::hal::vk {

Expected<std::vector<MatmulPart>> planMatmul(const VulkanContext &ctx, const MatmulDesc &d) {
  // Blocks of adjacent weights in one layout.
  struct Block {
    const WeightDesc *w;
    WeightBinding b;
    int64_t rows, col0;
    uint64_t bytes;
  };
  std::vector<Block> blocks;
  int64_t col = 0;
  for (const WeightDesc &w : d.weights) {
    WeightBinding b(w);
    const int64_t rows = w.shape[0];
    if (!blocks.empty() && blocks.back().w->buffer == w.buffer &&
        blocks.back().w->offset + blocks.back().bytes == w.offset && blocks.back().b.sameAs(b)) {
      blocks.back().rows += rows;
      blocks.back().bytes += w.bytes;
    } else {
      blocks.push_back({&w, b, rows, col, w.bytes});
    }
    col += rows;
  }
  // Activation rows per binding.
  const int64_t mChunk = std::min(rowsPerBinding(ctx, d.x), rowsPerBinding(ctx, d.y));
  if (mChunk <= 0)
    return Status::error("vulkan: matmul activation rows exceed one binding");
  std::vector<MatmulPart> parts;
  for (const Block &blk : blocks) {
    const uint32_t rowElems = blk.b.rowElems(*blk.w, d.k);
    const uint64_t rowBytes = uint64_t(rowElems) * blk.b.elemSize;
    const uint64_t room = ctx.maxRange() - ctx.offsetAlignment();
    if (rowBytes > room)
      return Status::error("vulkan: a row of weight '" + blk.w->name +
                           "' exceeds one storage-buffer binding");
    const int64_t nChunk = int64_t(room / rowBytes);
    for (int64_t n0 = 0; n0 < blk.rows; n0 += nChunk) {
      const int64_t n = std::min(nChunk, blk.rows - n0);
      auto w = bindRange(ctx, vbuf(blk.w->buffer), blk.w->offset + uint64_t(n0) * rowBytes,
                         uint64_t(n) * rowBytes, blk.b.elemSize, "weight '" + blk.w->name + "'");
      if (!w)
        return w.status();
      for (int64_t m0 = 0; m0 < d.maxRows; m0 += mChunk) {
        const int64_t m = std::min(mChunk, d.maxRows - m0);
        auto x = bindRows(ctx, d.x, m0, m, "matmul input");
        auto y = bindRows(ctx, d.y, m0, m, "matmul output");
        if (!x)
          return x.status();
        if (!y)
          return y.status();
        MatmulPart part(*blk.w);
        part.x = *x;
        part.wr = *w;
        part.y = *y;
        part.m0 = m0;
        part.rows = m;
        part.col = blk.col0 + n0;
        part.n = n;
        part.push = {x->elem,
                     uint32_t(d.x.stride),
                     y->elem + uint32_t(blk.col0 + n0),
                     uint32_t(d.y.stride),
                     w->elem,
                     rowElems,
                     uint32_t(d.k),
                     uint32_t(n),
                     0,
                     0,
                     d.accumulate ? 1u : 0u};
        foldTiles(ceilDiv(uint64_t(n), kTeams), &part.gx, &part.gy);
        part.push.tilesX = part.gx;
        parts.push_back(part);
      }
    }
  }
  return parts;
}

MatmulPart narrowPart(const MatmulPart &p, int64_t col, int64_t n) {
  MatmulPart q = p;
  const uint32_t skip = uint32_t(col - p.col);
  q.col = col;
  q.n = n;
  q.push.wOff += skip * p.push.rowElems;
  q.push.yOff += skip;
  q.push.N = uint32_t(n);
  foldTiles(ceilDiv(uint64_t(n), kTeams), &q.gx, &q.gy);
  q.push.tilesX = q.gx;
  return q;
}

} // namespace fm::hal::vk
