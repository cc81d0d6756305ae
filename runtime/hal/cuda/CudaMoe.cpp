// The CUDA device's Moe command: the router matmul on the GPU, its logits
// back to the host for the routing (MoePlan.h: the CPU Moe's exact
// softmax / top-k / slot order), the plan's tables up, then each expert
// with rows on only its rows, gathered into one dense block per expert
// (tokens sorted by expert): gate and up, SiLU·up, down, as matvecs for
// few rows and tensor-core GEMMs from kGemmMinRows rows (CudaLinear.h);
// then the combine in rank order and the sigmoid-gated shared expert.
// The host's routing costs one stream synchronization per MoE layer, which
// also ends the queue's recorded segment (CudaQueue::synchronize).
//
// A decode step (one row), and any launch of no more slots than experts
// (M·k <= E: a few rows of speculative decoding or a short chunk), routes
// on the device instead, without leaving it: fm_moe_route runs the same
// rule (kernels/moe_route.h, compiled as device code) into a choice and
// weight per slot, and grouped matvecs (kernels/matvec.cu) take slot s's
// expert weights from a device table of the experts' pointers, so a step
// reads only the chosen experts' weights (at most E experts' worth, what
// the host's routing reads when every expert is chosen, with each expert
// on too few rows for the tensor cores) and stays one recorded segment
// (one CUDA graph) through every MoE layer.
// That needs every expert of a projection in one kind and format (what
// fmc writes); otherwise decode routes on the host too.
#include "hal/cuda/CudaDevice.h"
#include "hal/cuda/CudaLinear.h"
#include "hal/cuda/MoePlan.h"

#include <algorithm>

namespace fm::hal::cuda {
namespace {

class MoeKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(CudaDevice &dev, const MoeDesc &d) {
    std::unique_ptr<MoeKernel> k(new MoeKernel(dev, d));
    FM_RETURN_IF_ERROR(k->init(d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    auto &q = static_cast<CudaQueue &>(queue);
    FM_RETURN_IF_ERROR(q.enter());
    const DriverApi &api = dev_.api();
    const int64_t M = l.rows, K = K_, I = I_, E = int64_t(gate_.size()), k = topK_;
    if (M <= 0)
      return Status::ok();
    if (M > maxRows_)
      return Status::error("cuda: MoE launch of " + std::to_string(M) +
                           " rows, planned for " + std::to_string(maxRows_));
    router_.run(q, x_, xStride_, logits_->ptr(), E, M, false);
    if (M <= deviceRows_ && grouped_[0].fn) {
      runRoutedOnDevice(q, M);
      return runShared(q, M);
    }
    // The routing is the host's: the segment so far (the router included)
    // runs and is waited for, and the launches below start the next one.
    FM_RETURN_IF_ERROR(q.synchronize("MoE router logits"));
    FM_RETURN_IF_ERROR(check(api,
                             api.cuMemcpyDtoH(hostLogits_.data(), logits_->ptr(),
                                              size_t(M * E) * sizeof(float)),
                             "cuMemcpyDtoH (MoE router logits)"));
    planMoe(hostLogits_.data(), M, E, k, normTopk_, plan_);
    const size_t slots = size_t(M * k);
    FM_RETURN_IF_ERROR(check(api,
                             api.cuMemcpyHtoD(slotRow_->ptr(), plan_.slotRow.data(),
                                              slots * 4),
                             "cuMemcpyHtoD (MoE slots)"));
    FM_RETURN_IF_ERROR(check(api,
                             api.cuMemcpyHtoD(rowSlot_->ptr(), plan_.rowSlot.data(),
                                              slots * 4),
                             "cuMemcpyHtoD (MoE slots)"));
    FM_RETURN_IF_ERROR(check(api,
                             api.cuMemcpyHtoD(rowWeight_->ptr(), plan_.rowWeight.data(),
                                              slots * 4),
                             "cuMemcpyHtoD (MoE weights)"));
    for (int64_t e = 0; e < E; ++e) {
      const int first = plan_.first[e];
      const int64_t n = plan_.first[e + 1] - first;
      if (n == 0)
        continue; // an expert without rows costs nothing
      LaunchParams g;
      g.add(x_).add(xStride_).add(slotRow_->ptr()).add(first).add(xg_->ptr())
          .add(int(K));
      dev_.launch(gather_, {unsigned(n)}, {256}, g, q);
      const CUdeviceptr xg = xg_->ptr() + CUdeviceptr(first * K * 4);
      const CUdeviceptr hg = hg_->ptr() + CUdeviceptr(first * I * 4);
      const CUdeviceptr hu = hu_->ptr() + CUdeviceptr(first * I * 4);
      const CUdeviceptr o = o_->ptr() + CUdeviceptr(first * K * 4);
      swiglu(q, gate_[e], up_[e], down_[e], xg, K, hg, hu, I, o, n);
    }
    LaunchParams c;
    c.add(o_->ptr()).add(int(K)).add(rowSlot_->ptr()).add(rowWeight_->ptr())
        .add(int(k)).add(y_).add(yStride_).add(int(accumulate_));
    dev_.launch(combine_, {unsigned(M)}, {256}, c, q);
    return runShared(q, M);
  }

private:
  /// The most rows routed on the device: fm_moe_route is one thread,
  /// looping over the rows.
  static constexpr int64_t kMaxDeviceRoutedRows = 16;

  /// One projection of every expert as the grouped matvec reads it: the
  /// kernel for their kind and format, and the device table of their
  /// weights' addresses.
  struct Grouped {
    CUfunction fn = nullptr;
    std::unique_ptr<CudaBuffer> table;
    bool dp4a = false; // int8 x (packed experts under QActivations::Int8)
  };

  /// Records the routing (fm_moe_route), the experts' gate and up, SiLU·up
  /// and down on each slot (the grouped matvecs), and the combine, for M
  /// rows of M·k slots: nothing leaves the device.
  void runRoutedOnDevice(CudaQueue &q, int64_t M) const {
    const int64_t E = int64_t(gate_.size()), k = topK_, slots = M * k;
    LaunchParams r;
    r.add(logits_->ptr()).add(int(M)).add(int(E)).add(int(k)).add(int(normTopk_))
        .add(probs_->ptr()).add(stamp_->ptr()).add(stamp_->ptr() + CUdeviceptr(E * 4))
        .add(choice_->ptr()).add(rowWeight_->ptr());
    dev_.launch(route_, {1}, {32}, r, q);
    // gate and up read slot s's row s / k of x; down reads h row s itself.
    // With int8 activations (packed experts) the rows are rounded first
    // (fm_quantize_x_q8, xq_) and the dp4a variants read them.
    const CUdeviceptr xq = xq_ ? xq_->ptr() : 0;
    auto quantize = [&](CUdeviceptr x, int64_t xStride, int64_t rows, int64_t inputs) {
      LaunchParams p;
      p.add(x).add(xStride).add(int(inputs)).add(xq).add(xq + CUdeviceptr(rows * inputs));
      dev_.launch(quantize_, {unsigned((inputs / 32 + 7) / 8), unsigned(rows)}, {256}, p, q);
    };
    auto grouped = [&](const Grouped &g, CUdeviceptr x, int64_t xStride, int64_t perRow,
                       int64_t xRows, CUdeviceptr y, int64_t n, int64_t inputs) {
      LaunchParams p;
      p.add(g.table->ptr()).add(choice_->ptr()).add(int(perRow));
      if (g.dp4a)
        p.add(xq).add(xq + CUdeviceptr(xRows * inputs));
      else
        p.add(x).add(xStride);
      p.add(y).add(n).add(int(n)).add(int(inputs));
      dev_.launch(g.fn, {unsigned((n + 7) / 8), unsigned(slots)}, {256}, p, q);
    };
    if (grouped_[0].dp4a || grouped_[1].dp4a)
      quantize(x_, xStride_, M, K_);
    grouped(grouped_[0], x_, xStride_, k, M, hg_->ptr(), I_, K_);
    grouped(grouped_[1], x_, xStride_, k, M, hu_->ptr(), I_, K_);
    LaunchParams p;
    p.add(hg_->ptr()).add(I_).add(hu_->ptr()).add(I_).add(hg_->ptr()).add(I_).add(int(I_));
    dev_.launch(silu_, {unsigned(slots)}, {256}, p, q);
    if (grouped_[2].dp4a)
      quantize(hg_->ptr(), I_, slots, I_);
    grouped(grouped_[2], hg_->ptr(), I_, 1, slots, o_->ptr(), K_, I_);
    // Slot r·k + j is row r's choice j: the identity slot table.
    LaunchParams c;
    c.add(o_->ptr()).add(int(K_)).add(identity_->ptr()).add(rowWeight_->ptr()).add(int(k))
        .add(y_).add(yStride_).add(int(accumulate_));
    dev_.launch(combine_, {unsigned(M)}, {256}, c, q);
  }

  /// The shared expert, on every row, gated by sigmoid(x · gᵀ), added to y.
  Status runShared(CudaQueue &q, int64_t M) const {
    if (!hasShared_)
      return Status::ok();
    sharedExpertGate_.run(q, x_, xStride_, sharedLogit_->ptr(), 1, M, false);
    swiglu(q, *sharedGate_, *sharedUp_, *sharedDown_, x_, xStride_, sharedHg_->ptr(),
           sharedHu_->ptr(), sharedI_, sharedO_->ptr(), M);
    LaunchParams a;
    a.add(sharedO_->ptr()).add(int(K_)).add(sharedLogit_->ptr()).add(y_).add(yStride_);
    dev_.launch(addGated_, {unsigned(M)}, {256}, a, q);
    return Status::ok();
  }

  MoeKernel(CudaDevice &dev, const MoeDesc &d)
      : dev_(dev), x_(devicePtr(d.x.buffer, d.x.offset)),
        y_(devicePtr(d.y.buffer, d.y.offset)), xStride_(d.x.stride),
        yStride_(d.y.stride), K_(d.x.width), topK_(d.topK),
        maxRows_(std::max<int64_t>(1, d.maxRows)), normTopk_(d.normTopk),
        accumulate_(d.accumulate), hasShared_(d.hasShared) {}

  /// Records o[n][K] = down(silu(gate(x)) · up(x)) for n rows of x.
  void swiglu(CudaQueue &q, const Linear &gate, const Linear &up, const Linear &down,
              CUdeviceptr x, int64_t xStride, CUdeviceptr hg, CUdeviceptr hu, int64_t I,
              CUdeviceptr o, int64_t n) const {
    const CUdeviceptr xq = xq_ ? xq_->ptr() : 0; // int8 activations: their scratch
    gate.runInt8(q, x, xStride, hg, I, n, false, xq);
    up.runInt8(q, x, xStride, hu, I, n, false, xq);
    LaunchParams p;
    p.add(hg).add(I).add(hu).add(I).add(hg).add(I).add(int(I));
    dev_.launch(silu_, {unsigned(n)}, {256}, p, q);
    down.runInt8(q, hg, I, o, K_, n, false, xq);
  }

  Status init(const MoeDesc &d) {
    const int64_t E = int64_t(d.gate.size());
    if (E < 1 || d.up.size() != d.gate.size() || d.down.size() != d.gate.size())
      return Status::error("cuda: MoE needs as many gate, up and down weights as experts (" +
                           std::to_string(E) + " gate)");
    if (topK_ < 1 || topK_ > E)
      return Status::error("cuda: MoE top_k " + std::to_string(topK_) + " outside 1.." +
                           std::to_string(E));
    I_ = d.gate.front().shape[0];
    auto fn = [&](const char *name, CUfunction &out) -> Status {
      auto f = dev_.function(name);
      if (!f)
        return f.status();
      out = *f;
      return Status::ok();
    };
    FM_RETURN_IF_ERROR(fn("fm_moe_gather", gather_));
    FM_RETURN_IF_ERROR(fn("fm_moe_combine", combine_));
    FM_RETURN_IF_ERROR(fn("fm_moe_add_gated", addGated_));
    FM_RETURN_IF_ERROR(fn("fm_silu_mul", silu_));
    // QActivations::Int8 rounds the experts' x to one int8 digit per 32
    // inputs (the dp4a matvecs, as the Matmul kernel); the other choices
    // keep f32 x.
    int8_ = d.activations == kernels::QActivations::Int8;
    auto linear = [&](const WeightDesc &w, Linear &out,
                      bool tensorCores = true) -> Status {
      auto l = Linear::make(dev_, w, tensorCores, int8_ && tensorCores);
      if (!l)
        return l.status();
      out = *l;
      return Status::ok();
    };
    // The router on the f32-activation matvec whatever its rows: routing
    // must choose the CPU's experts (CudaLinear.h).
    FM_RETURN_IF_ERROR(linear(d.router, router_, false));
    gate_.resize(size_t(E));
    up_.resize(size_t(E));
    down_.resize(size_t(E));
    for (int64_t e = 0; e < E; ++e) {
      FM_RETURN_IF_ERROR(linear(d.gate[e], gate_[e]));
      FM_RETURN_IF_ERROR(linear(d.up[e], up_[e]));
      FM_RETURN_IF_ERROR(linear(d.down[e], down_[e]));
    }
    const int64_t M = maxRows_, slots = M * topK_;
    auto alloc = [&](uint64_t bytes, std::unique_ptr<CudaBuffer> &out) -> Status {
      auto b = dev_.allocateDevice(bytes);
      if (!b)
        return b.status();
      out = std::move(*b);
      return Status::ok();
    };
    FM_RETURN_IF_ERROR(alloc(uint64_t(M * E) * 4, logits_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots) * 4, slotRow_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots) * 4, rowSlot_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots) * 4, rowWeight_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots * K_) * 4, xg_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots * I_) * 4, hg_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots * I_) * 4, hu_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots * K_) * 4, o_));
    hostLogits_.resize(size_t(M * E));
    if (int8_) {
      // The rounded rows of the widest matvec input: up to maxRows·k slots
      // (or maxRows rows of the shared expert) of K or I inputs.
      const int64_t inputs = std::max({K_, I_, d.hasShared ? d.sharedGate.shape[0] : 0});
      FM_RETURN_IF_ERROR(alloc(uint64_t(slots * inputs) + uint64_t(slots * (inputs / 32)) * 4, xq_));
      FM_RETURN_IF_ERROR(fn("fm_quantize_x_q8", quantize_));
    }
    FM_RETURN_IF_ERROR(initDeviceRouting(d, alloc));
    if (hasShared_) {
      sharedI_ = d.sharedGate.shape[0];
      sharedGate_.reset(new Linear);
      sharedUp_.reset(new Linear);
      sharedDown_.reset(new Linear);
      FM_RETURN_IF_ERROR(linear(d.sharedGate, *sharedGate_));
      FM_RETURN_IF_ERROR(linear(d.sharedUp, *sharedUp_));
      FM_RETURN_IF_ERROR(linear(d.sharedDown, *sharedDown_));
      FM_RETURN_IF_ERROR(linear(d.sharedExpertGate, sharedExpertGate_));
      FM_RETURN_IF_ERROR(alloc(uint64_t(M) * 4, sharedLogit_));
      FM_RETURN_IF_ERROR(alloc(uint64_t(M * sharedI_) * 4, sharedHg_));
      FM_RETURN_IF_ERROR(alloc(uint64_t(M * sharedI_) * 4, sharedHu_));
      FM_RETURN_IF_ERROR(alloc(uint64_t(M * K_) * 4, sharedO_));
    }
    return Status::ok();
  }

  /// The grouped matvecs' tables and the routing's scratch, where every
  /// expert of each projection shares one kind and format (else decode
  /// routes on the host: grouped_[0].fn stays null).
  template <class Alloc> Status initDeviceRouting(const MoeDesc &d, Alloc &alloc) {
    const std::vector<WeightDesc> *projections[3] = {&d.gate, &d.up, &d.down};
    std::string names[3];
    for (int p = 0; p < 3; ++p) {
      const WeightDesc &w0 = projections[p]->front();
      for (const WeightDesc &w : *projections[p])
        if (w.kind != w0.kind || (w.kind == WeightKind::Quant &&
                                  (w.format.bits != w0.format.bits ||
                                   w.format.group != w0.format.group ||
                                   w.format.grid != w0.format.grid)))
          return Status::ok(); // mixed: the host routes every launch
      names[p] = w0.kind == WeightKind::F32   ? std::string("fm_matvec_grouped_f32")
                 : w0.kind == WeightKind::F16 ? std::string("fm_matvec_grouped_f16")
                 : int8_ ? qKernelName("fm_qmatvec_grouped_dp4a", w0.format)
                         : qKernelName("fm_qmatvec_grouped", w0.format);
    }
    const int64_t E = int64_t(d.gate.size()), k = topK_;
    // Launches of at most E slots: one row at least (a decode step).
    deviceRows_ = std::max<int64_t>(1, std::min({E / k, maxRows_, kMaxDeviceRoutedRows}));
    const int64_t slots = deviceRows_ * k;
    auto route = dev_.function("fm_moe_route");
    if (!route)
      return route.status();
    route_ = *route;
    FM_RETURN_IF_ERROR(alloc(uint64_t(deviceRows_ * E) * 4, probs_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(2 * E) * 4, stamp_)); // stamp, then count
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots) * 4, choice_));
    FM_RETURN_IF_ERROR(alloc(uint64_t(slots) * 4, identity_));
    std::vector<int32_t> identity(static_cast<size_t>(slots));
    for (int64_t s = 0; s < slots; ++s)
      identity[size_t(s)] = int32_t(s);
    FM_RETURN_IF_ERROR(dev_.upload(*identity_, 0, identity.data(), identity.size() * 4));
    for (int p = 0; p < 3; ++p) {
      auto fn = dev_.function(names[p].c_str());
      if (!fn)
        return fn.status();
      std::vector<uint64_t> table;
      for (const WeightDesc &w : *projections[p])
        table.push_back(devicePtr(w.buffer, w.offset));
      FM_RETURN_IF_ERROR(alloc(table.size() * 8, grouped_[p].table));
      FM_RETURN_IF_ERROR(
          dev_.upload(*grouped_[p].table, 0, table.data(), table.size() * 8));
      grouped_[p].dp4a = int8_ && projections[p]->front().kind == WeightKind::Quant;
      grouped_[p].fn = *fn; // last: set means ready
    }
    return Status::ok();
  }

  CudaDevice &dev_;
  CUdeviceptr x_, y_;
  int64_t xStride_, yStride_, K_, topK_, maxRows_;
  int64_t deviceRows_ = 0; // launches of at most this many rows route on the device
  int64_t I_ = 0, sharedI_ = 0;
  bool normTopk_, accumulate_, hasShared_;
  CUfunction gather_ = nullptr, combine_ = nullptr, addGated_ = nullptr, silu_ = nullptr;
  Linear router_, sharedExpertGate_;
  std::vector<Linear> gate_, up_, down_;
  std::unique_ptr<Linear> sharedGate_, sharedUp_, sharedDown_;
  // Device scratch, sized for maxRows: the router logits, the plan's
  // tables, and per slot the gathered x, the gate/up products and the
  // expert's output; the shared expert's per row.
  std::unique_ptr<CudaBuffer> logits_, slotRow_, rowSlot_, rowWeight_, xg_, hg_, hu_, o_;
  std::unique_ptr<CudaBuffer> sharedLogit_, sharedHg_, sharedHu_, sharedO_;
  mutable std::vector<float> hostLogits_;
  mutable MoePlan plan_;
  // Device routing (decode): gate, up, down; the routing's scratch
  // (probabilities, stamp and count), each slot's expert, the identity slot
  // table of the combine.
  Grouped grouped_[3];
  CUfunction route_ = nullptr;
  std::unique_ptr<CudaBuffer> probs_, stamp_, choice_, identity_;
  // QActivations::Int8: the rounded rows (int8, then a scale per 32).
  bool int8_ = false;
  CUfunction quantize_ = nullptr;
  std::unique_ptr<CudaBuffer> xq_;
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeMoeKernel(CudaDevice &dev, const MoeDesc &d) {
  return MoeKernel::make(dev, d);
}

} // namespace fm::hal::cuda
