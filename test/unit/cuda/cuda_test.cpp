// The CUDA device against the runtime's plain C++ reference kernels.
//  - NoDriver.*: where libcuda.so.1 is absent (every machine without an
//    NVIDIA driver), the device is listed as built in but absent with the
//    reason, and opening it or loading a model on it is a clear error.
//  - Gpu.*: each kernel on the GPU (HAL kernels through CudaDevice, row
//    kernels launched directly) against qmatmulOn(Generic), attentionOn
//    (Generic), dequantizeRow and plain loops; an artifact's logits on cuda
//    against the CPU device's. Print "skipped: no CUDA device" and skip
//    without a GPU. With FM_CUDA_EMULATE set (runtime.cuda.emulated) they
//    run on the block emulator instead (emu/CudaEmu.h): the kernels' own
//    source on host threads behind an emulated driver.
//  - CudaPtx.*: the launch metadata of generated code (fmc --target cuda)
//    read and checked against the PTX's .entry parameter lists, with no
//    driver: hand-made executables, and the artifact that
//    FM_CUDA_TEST_GENERATED_FMB names (test/targets/cuda.test).
//  - DISABLED_Bench.*: achieved bandwidth of the matvec kernels against a
//    device-to-device copy measured beside them (scripts/gpu-check.sh).
#include "ArtifactBuilder.h"
#include "CudaEmu.h"
#include "fm/artifact.h"
#include "fm/runtime.h"
#include "hal/Registry.h"
#include "hal/cuda/CudaDevice.h"
#include "hal/cuda/CudaExecutable.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/qmatmul.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <random>
#include <tuple>

namespace fm::hal::cuda {
namespace {

using kernels::QuantFormat;
using kernels::QuantGrid;

bool driverInstalled() {
  static const bool present = [] {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib != nullptr; // left loaded: the device may use it
  }();
  return present;
}

// ---------------------------------------------------------------------------
// No driver
// ---------------------------------------------------------------------------

#define SKIP_WITH_DRIVER()                                                     \
  if (driverInstalled())                                                       \
  GTEST_SKIP() << "a CUDA driver is installed here (the Gpu tests apply)"

TEST(NoDriver, ListedAsAbsentWithTheReason) {
  SKIP_WITH_DRIVER();
  bool found = false;
  for (const fm::DeviceInfo &d : probeDevices()) {
    if (d.name != "cuda")
      continue;
    found = true;
    EXPECT_TRUE(d.builtIn);
    EXPECT_FALSE(d.present);
    EXPECT_FALSE(d.hardware);
    EXPECT_EQ(d.description.rfind("no CUDA driver here (", 0), 0u)
        << d.description;
    EXPECT_NE(d.description.find("libcuda.so.1"), std::string::npos)
        << d.description;
  }
  EXPECT_TRUE(found);
}

TEST(NoDriver, OpeningIsAClearError) {
  SKIP_WITH_DRIVER();
  auto d = openDevice("cuda");
  ASSERT_FALSE(d.isOk());
  EXPECT_EQ(d.message().rfind("device 'cuda' is not available here: no CUDA "
                              "driver here (",
                              0),
            0u)
      << d.message();
}

// vocab 4, hidden 4: logits = W · E[token], no generated code, so any
// device can run it.
std::vector<uint8_t> tinyModel() {
  test::ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  const uint32_t E = b.addWeight("e", {4, 4}, {1, 2, 3, 4, 0, 1, 0, 1, -1, 0,
                                               2, 0, 5, 5, 5, 5});
  const uint32_t W = b.addWeight("w", {4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
                                               0, 1, 1, 1, 1});
  b.addProgram("decode", 1, 8, test::buf(4, 4, 4), false,
               {b.embed(E, test::buf(0, 4, 4)),
                b.matmul(test::buf(0, 4, 4), {W}, test::buf(4, 4, 4), 4, 4)});
  return b.finish();
}

TEST(NoDriver, LoadingOnCudaIsAClearErrorAndTheDefaultIsTheCpu) {
  SKIP_WITH_DRIVER();
  const std::vector<uint8_t> file = tinyModel();
  LoadOptions o;
  o.device = "cuda";
  auto model = Model::loadFromBuffer(file.data(), file.size(), "m.fmb", o);
  ASSERT_FALSE(model.isOk());
  EXPECT_EQ(model.message().rfind("m.fmb: device 'cuda' is not available "
                                  "here: no CUDA driver here (",
                                  0),
            0u)
      << model.message();
  o.device = "";
  auto cpu = Model::loadFromBuffer(file.data(), file.size(), "m.fmb", o);
  ASSERT_TRUE(cpu.isOk()) << cpu.message();
  EXPECT_EQ((*cpu)->device(), "cpu");
  // For fm-run's check (ctest runtime.cuda.fm-run): the same artifact.
  if (const char *path = std::getenv("FM_CUDA_TEST_FMB")) {
    std::FILE *out = std::fopen(path, "wb");
    ASSERT_TRUE(out) << path;
    EXPECT_EQ(std::fwrite(file.data(), 1, file.size(), out), file.size());
    std::fclose(out);
  }
}

// ---------------------------------------------------------------------------
// Generated code's metadata (no driver needed)
// ---------------------------------------------------------------------------

/// PTX with one entry per (name, buffers, words), in the form MLIR's NVPTX
/// backend writes.
std::string ptxWith(const std::vector<std::tuple<std::string, int, int>> &entries) {
  std::string ptx = "//\n.version 8.0\n.target sm_80\n.address_size 64\n\n";
  for (const auto &[name, buffers, words] : entries) {
    ptx += ".visible .entry " + name + "(\n";
    int n = 0;
    for (int i = 0; i < buffers * 5 + words; ++i, ++n)
      ptx += std::string(n ? ",\n" : "") + "\t.param ." +
             (i < buffers * 5 ? (i % 5 < 2 ? "u64 .ptr .global .align 1 " : "u64 ")
                              : "u32 ") +
             name + "_param_" + std::to_string(n);
    ptx += "\n)\n.reqntid 64, 1, 1\n{\n\tret;\n}\n";
  }
  return ptx;
}

/// A "ptx" executable of one function `name` with `buffers` bindings and
/// the push constants `push`, over `ptx`; parsed back.
struct HandMade {
  flatbuffers::FlatBufferBuilder fbb;
  const artifact::Executable *exe = nullptr;
  HandMade(const std::string &ptx, const std::string &name, int buffers,
           const std::vector<std::string> &push, std::vector<uint32_t> wg = {64, 1, 1},
           const std::string &format = "ptx") {
    std::vector<flatbuffers::Offset<artifact::Binding>> bindings;
    for (int i = 0; i < buffers; ++i)
      bindings.push_back(artifact::CreateBinding(fbb, 0, uint32_t(i)));
    std::vector<flatbuffers::Offset<artifact::PushConstant>> pcs;
    for (size_t i = 0; i < push.size(); ++i)
      pcs.push_back(artifact::CreatePushConstantDirect(fbb, push[i].c_str(), 4 * i, 4));
    std::vector<flatbuffers::Offset<artifact::Function>> fns = {
        artifact::CreateFunctionDirect(fbb, name.c_str(), &wg, &bindings, &pcs)};
    std::vector<uint8_t> data(ptx.begin(), ptx.end());
    fbb.Finish(artifact::CreateExecutableDirect(fbb, "cuda", format.c_str(),
                                                "nvptx64-nvidia-cuda", "sm_80", &data, &fns));
    exe = flatbuffers::GetRoot<artifact::Executable>(fbb.GetBufferPointer());
  }
};

TEST(CudaPtx, EntryParameterLists) {
  const std::string ptx = ptxWith({{"fmk_k1_entry", 1, 2}, {"fmk_k1", 2, 0}});
  auto k1 = ptxEntryParams(ptx, "fmk_k1_entry");
  ASSERT_TRUE(k1.isOk()) << k1.message();
  EXPECT_EQ(*k1, (std::vector<uint32_t>{8, 8, 8, 8, 8, 4, 4}));
  // A name that is a prefix of another entry's is its own entry.
  auto prefix = ptxEntryParams(ptx, "fmk_k1");
  ASSERT_TRUE(prefix.isOk()) << prefix.message();
  EXPECT_EQ(prefix->size(), 10u);
  auto none = ptxEntryParams(ptx, "fmk_k2_entry");
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.message(), "the PTX has no .entry fmk_k2_entry");
  auto odd = ptxEntryParams(".version 8.0\n.entry f(\n.param .align 8 .b8 f_param_0[16]\n)",
                            "f");
  ASSERT_FALSE(odd.isOk());
  EXPECT_NE(odd.message().find("of no 32- or 64-bit scalar type"), std::string::npos)
      << odd.message();
}

TEST(CudaPtx, MetadataMatchingThePtxIsRead) {
  HandMade m(ptxWith({{"fmk_k0_entry", 3, 2}}), "fmk_k0_entry", 3, {"rows", "pos"});
  auto fns = readPtxFunctions(*m.exe, "m.fmb");
  ASSERT_TRUE(fns.isOk()) << fns.message();
  ASSERT_EQ(fns->size(), 1u);
  const PtxFunction &f = (*fns)[0];
  EXPECT_EQ(f.name, "fmk_k0_entry");
  EXPECT_EQ(f.buffers, 3u);
  EXPECT_EQ(f.block, (std::array<uint32_t, 3>{64, 1, 1}));
  EXPECT_EQ(f.push, (std::vector<PtxFunction::Push>{PtxFunction::Push::Rows,
                                                    PtxFunction::Push::Pos}));
}

TEST(CudaPtx, MetadataThatDisagreesIsRefused) {
  const std::string ptx = ptxWith({{"fmk_k0_entry", 3, 2}});
  auto message = [](const HandMade &m) {
    auto fns = readPtxFunctions(*m.exe, "m.fmb");
    return fns.isOk() ? std::string("accepted") : fns.message();
  };
  EXPECT_EQ(message(HandMade(ptx, "fmk_k0_entry", 2, {"rows", "pos"})),
            "m.fmb: cuda executable: function 0 'fmk_k0_entry': the PTX entry takes 17 "
            "parameters, the metadata describes 12 (2 buffers of 5, 2 32-bit words)");
  EXPECT_EQ(message(HandMade(ptx, "fmk_k0_entry", 3, {"rows"})),
            "m.fmb: cuda executable: function 0 'fmk_k0_entry': the PTX entry takes 17 "
            "parameters, the metadata describes 16 (3 buffers of 5, 1 32-bit words)");
  EXPECT_EQ(message(HandMade(ptx, "fmk_k9_entry", 3, {"rows", "pos"})),
            "m.fmb: cuda executable: function 0 'fmk_k9_entry': the PTX has no .entry "
            "fmk_k9_entry");
  EXPECT_EQ(message(HandMade(ptx, "fmk_k0_entry", 3, {"rows", "offset.0"})),
            "m.fmb: cuda executable: function 0 'fmk_k0_entry': unknown push constant "
            "'offset.0' (this device passes rows and pos)");
  EXPECT_EQ(message(HandMade(ptx, "fmk_k0_entry", 3, {"rows", "pos"}, {2048, 1, 1})),
            "m.fmb: cuda executable: function 0 'fmk_k0_entry': workgroup of 2048 threads "
            "(a CUDA block has 1 to 1024)");
  EXPECT_EQ(message(HandMade(ptx, "fmk_k0_entry", 3, {"rows", "pos"}, {64, 1})),
            "m.fmb: cuda executable: function 0 'fmk_k0_entry': needs a workgroup_size "
            "[x, y, z]");
  EXPECT_EQ(message(HandMade(ptx, "fmk_k0_entry", 3, {"rows", "pos"}, {64, 1, 1}, "spirv")),
            "m.fmb: cuda executable: format 'spirv' (this device loads 'ptx')");
  EXPECT_EQ(message(HandMade("\x03\x02#\x07 binary", "fmk_k0_entry", 3, {"rows", "pos"})),
            "m.fmb: cuda executable: the image is not PTX text (11 bytes)");
}

// What fmc --target cpu,cuda wrote (test/targets/cuda.test sets the path):
// every function the CPU executable exports, in its order, with metadata
// that matches its PTX entry.
TEST(CudaPtx, CompiledArtifactLoadsWithoutADriver) {
  const char *path = std::getenv("FM_CUDA_TEST_GENERATED_FMB");
  if (!path)
    GTEST_SKIP() << "FM_CUDA_TEST_GENERATED_FMB names no artifact (test/targets/cuda.test)";
  auto file = ArtifactFile::open(path, {});
  ASSERT_TRUE(file.isOk()) << file.message();
  const artifact::Executable *cuda = (*file)->executable("cuda");
  const artifact::Executable *cpu = (*file)->executable("cpu");
  ASSERT_TRUE(cuda && cpu) << path << " needs a cpu and a cuda executable";
  auto fns = readPtxFunctions(*cuda, path);
  ASSERT_TRUE(fns.isOk()) << fns.message();
  ASSERT_EQ(fns->size(), cpu->functions()->size());
  ASSERT_GT(fns->size(), 0u);
  for (size_t i = 0; i < fns->size(); ++i) {
    const PtxFunction &f = (*fns)[i];
    EXPECT_EQ(f.name, cpu->functions()->Get(i)->name()->str());
    EXPECT_GT(f.buffers, 0u) << f.name;
    EXPECT_EQ(f.block, (std::array<uint32_t, 3>{64, 1, 1})) << f.name;
    EXPECT_EQ(f.push, (std::vector<PtxFunction::Push>{PtxFunction::Push::Rows,
                                                      PtxFunction::Push::Pos}))
        << f.name;
  }
  std::printf("%s: %zu generated CUDA kernels, metadata matches the PTX\n", path,
              fns->size());
}

// The GPU a process opens: FM_CUDA_DEVICE, else its rank on the node
// modulo the GPUs (one per MPI rank), else 0; a bad FM_CUDA_DEVICE is an
// error naming it. No driver needed.
TEST(CudaOrdinal, FromTheEnvironment) {
  auto with = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char *name) -> const char * {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(*defaultOrdinal(4, with({})), 0);
  EXPECT_EQ(*defaultOrdinal(4, with({{"OMPI_COMM_WORLD_LOCAL_RANK", "2"}})), 2);
  EXPECT_EQ(*defaultOrdinal(4, with({{"OMPI_COMM_WORLD_LOCAL_RANK", "5"}})), 1);
  EXPECT_EQ(*defaultOrdinal(2, with({{"MPI_LOCALRANKID", "3"}})), 1);
  EXPECT_EQ(*defaultOrdinal(8, with({{"SLURM_LOCALID", "7"}})), 7);
  EXPECT_EQ(*defaultOrdinal(4, with({{"FM_CUDA_DEVICE", "3"}, {"SLURM_LOCALID", "1"}})), 3);
  for (const char *bad : {"4", "-1", "one", "1x", ""}) {
    auto o = defaultOrdinal(4, with({{"FM_CUDA_DEVICE", bad}}));
    ASSERT_FALSE(o.isOk()) << bad;
    EXPECT_NE(o.message().find("FM_CUDA_DEVICE='" + std::string(bad) +
                               "' is not a GPU ordinal below 4"),
              std::string::npos)
        << o.message();
  }
}

// ---------------------------------------------------------------------------
// On a GPU
// ---------------------------------------------------------------------------

class Gpu : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    fm_cuda_emu::installIfAsked(); // runtime.cuda.emulated
    auto d = CudaDevice::open(0);
    if (d) {
      device_ = d->release();
      std::printf("cuda: %s, peak DRAM %.0f GB/s\n",
                  device_->description().c_str(), device_->peakGBps());
    } else {
      why_ = d.message();
    }
  }
  void SetUp() override {
    if (!device_)
      GTEST_SKIP() << "skipped: no CUDA device (" << why_ << ")";
    auto q = device_->createQueue({});
    ASSERT_TRUE(q.isOk()) << q.message();
    queue_ = std::move(*q);
  }

  CudaDevice &dev() { return *device_; }

  std::unique_ptr<Buffer> upload(const void *data, uint64_t bytes) {
    auto b = dev().allocate(bytes, MemorySpace::Device);
    EXPECT_TRUE(b.isOk()) << b.message();
    if (!b)
      return nullptr;
    if (bytes)
      EXPECT_TRUE(dev().upload(**b, 0, data, bytes).isOk());
    return std::move(*b);
  }
  template <typename T> std::unique_ptr<Buffer> upload(const std::vector<T> &v) {
    return upload(v.data(), v.size() * sizeof(T));
  }
  std::vector<float> download(const Buffer &b, size_t floats,
                              uint64_t offset = 0) {
    std::vector<float> out(floats);
    Status s = dev().download(b, offset, out.data(), floats * sizeof(float));
    EXPECT_TRUE(s.isOk()) << s.message();
    return out;
  }
  void run(const Expected<std::unique_ptr<Kernel>> &k, const Launch &l) {
    ASSERT_TRUE(k.isOk()) << k.message();
    Status s = (*k)->run(*queue_, l);
    ASSERT_TRUE(s.isOk()) << s.message();
    s = cudaQueue().synchronize("the kernel under test");
    ASSERT_TRUE(s.isOk()) << s.message();
  }
  CudaQueue &cudaQueue() { return static_cast<CudaQueue &>(*queue_); }
  CUstream stream() { return cudaQueue().stream(); }
  void checkQuantMatvec(QuantFormat f, int64_t M, int64_t K, int64_t N,
                        kernels::QActivations act, uint64_t lead);
  /// Decode with and without CUDA graphs, of a dense model or a MoE one.
  void checkDecodeGraphs(bool moe);

  static CudaDevice *device_;
  static std::string why_;
  std::unique_ptr<Queue> queue_;
};
CudaDevice *Gpu::device_ = nullptr;
std::string Gpu::why_;

std::vector<float> randoms(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

std::string formatName(QuantFormat f) {
  return "q" + std::to_string(f.bits) + "g" + std::to_string(f.group) +
         (f.grid == QuantGrid::Affine ? "a" : "b");
}

// y = x · wᵀ through the HAL for M rows, against qmatmulOn(Generic, F32).
// The weight sits at `lead` bytes into its buffer (2: misaligned rows).
void Gpu::checkQuantMatvec(QuantFormat f, int64_t M, int64_t K, int64_t N,
                           kernels::QActivations act, uint64_t lead) {
  CudaDevice &dev = *device_;
  const std::vector<float> wf = randoms(size_t(N * K), 11, 0.05f);
  const size_t rowBytes = kernels::packedRowBytes(f, K);
  std::vector<uint8_t> packed(lead + N * rowBytes);
  kernels::quantizeRows(wf.data(), N, K, f, packed.data() + lead);
  const int64_t xStride = K + 8; // strided activations
  std::vector<float> x = randoms(size_t(M * xStride), 12);
  std::vector<float> want(size_t(M * N));
  kernels::qmatmulOn(kernels::KernelIsa::Generic, kernels::QActivations::F32,
                     x.data(), 1, K, packed.data() + lead, f, N, want.data(),
                     false, nullptr);
  for (int64_t m = 1; m < M; ++m)
    kernels::qmatmulOn(kernels::KernelIsa::Generic, kernels::QActivations::F32,
                       x.data() + m * xStride, 1, K, packed.data() + lead, f, N,
                       want.data() + m * N, false, nullptr);
  // Error bounds from the dequantized weights: f32 rounding, plus for the
  // int8 activations (one digit per 32 inputs) |w| · a / 2 per input.
  std::vector<float> row(static_cast<size_t>(K));
  std::vector<double> bound(size_t(M * N));
  for (int64_t n = 0; n < N; ++n) {
    kernels::dequantizeRow(packed.data() + lead + n * rowBytes, f, K, row.data());
    for (int64_t m = 0; m < M; ++m) {
      double s = 0, q = 0;
      const float *xr = x.data() + m * xStride;
      for (int64_t b = 0; b < K; b += 32) {
        float amax = 0;
        for (int i = 0; i < 32; ++i)
          amax = std::max(amax, std::fabs(xr[b + i]));
        for (int i = 0; i < 32; ++i) {
          s += std::fabs(row[b + i] * xr[b + i]);
          q += std::fabs(row[b + i]) * amax / 127.0 / 2.0;
        }
      }
      bound[m * N + n] = 1e-5 * s + 1e-6 +
                         (act == kernels::QActivations::Int8 ? q : 0.0);
    }
  }
  auto wbuf = upload(packed.data(), packed.size());
  auto xbuf = upload(x.data(), x.size() * 4);
  auto ybuf = upload(std::vector<float>(size_t(M * N), 0.5f));
  MatmulDesc d;
  d.x = {xbuf.get(), 0, xStride, K};
  d.y = {ybuf.get(), 0, N, N};
  d.k = K;
  d.n = N;
  d.maxRows = M;
  d.activations = act;
  WeightDesc w;
  w.buffer = wbuf.get();
  w.offset = lead;
  w.bytes = N * rowBytes;
  w.kind = WeightKind::Quant;
  w.format = f;
  w.shape = {N, K};
  d.weights = {w};
  for (bool accumulate : {false, true}) {
    d.accumulate = accumulate;
    run(dev.prepareMatmul(d), Launch{M, 0, nullptr});
    const std::vector<float> got = download(*ybuf, size_t(M * N));
    int bad = 0;
    for (int64_t i = 0; i < M * N; ++i) {
      // accumulate: onto the previous result (the overwrite run's).
      const double ref = accumulate ? 2.0 * want[i] : want[i];
      const double tol = accumulate ? 2.0 * bound[i] : bound[i];
      if (!(std::fabs(got[i] - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << formatName(f) << " " << kernels::qActivationsName(act)
                      << " M=" << M << " K=" << K << " lead=" << lead
                      << (accumulate ? " accumulate" : "") << " y[" << i
                      << "] = " << got[i] << ", want " << ref << " ± " << tol;
    }
  }
}

TEST_F(Gpu, QuantMatvecEveryFormat) {
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine})
        for (auto act : {kernels::QActivations::F32, kernels::QActivations::Int8})
          for (int64_t M : {1, 3})
            for (uint64_t lead : {0, 2}) {
              const QuantFormat f{bits, group, grid};
              checkQuantMatvec(f, M, 384, 37, act, lead);
            }
}

// Two weights stacked into one y (a fused projection), f32 and f16 rows.
TEST_F(Gpu, DenseMatvecTwoWeights) {
  const int64_t K = 100, N0 = 9, N1 = 13, N = N0 + N1, M = 2;
  const std::vector<float> w0 = randoms(size_t(N0 * K), 1);
  const std::vector<float> w1f = randoms(size_t(N1 * K), 2);
  std::vector<uint16_t> w1(w1f.size());
  std::vector<float> w1r(w1f.size());
  for (size_t i = 0; i < w1.size(); ++i) {
    w1[i] = kernels::floatToHalf(w1f[i]);
    w1r[i] = kernels::halfToFloat(w1[i]);
  }
  const std::vector<float> x = randoms(size_t(M * K), 3);
  std::vector<uint8_t> bytes(w0.size() * 4 + w1.size() * 2);
  std::memcpy(bytes.data(), w0.data(), w0.size() * 4);
  std::memcpy(bytes.data() + w0.size() * 4, w1.data(), w1.size() * 2);
  auto wbuf = upload(bytes.data(), bytes.size());
  auto xbuf = upload(x);
  auto ybuf = upload(std::vector<float>(size_t(M * N), 0.0f));
  MatmulDesc d;
  d.x = {xbuf.get(), 0, K, K};
  d.y = {ybuf.get(), 0, N, N};
  d.k = K;
  d.n = N;
  d.maxRows = M;
  WeightDesc a;
  a.buffer = wbuf.get();
  a.bytes = w0.size() * 4;
  a.kind = WeightKind::F32;
  a.shape = {N0, K};
  WeightDesc b = a;
  b.offset = a.bytes;
  b.bytes = w1.size() * 2;
  b.kind = WeightKind::F16;
  b.shape = {N1, K};
  d.weights = {a, b};
  run(dev().prepareMatmul(d), Launch{M, 0, nullptr});
  const std::vector<float> got = download(*ybuf, size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float *w = n < N0 ? w0.data() + n * K : w1r.data() + (n - N0) * K;
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += double(w[k]) * x[m * K + k];
        mag += std::fabs(double(w[k]) * x[m * K + k]);
      }
      EXPECT_NEAR(got[m * N + n], ref, 1e-5 * mag + 1e-6) << m << "," << n;
    }
}

TEST_F(Gpu, EmbedEveryKind) {
  const int64_t vocab = 50, width = 256;
  const std::vector<float> table = randoms(size_t(vocab * width), 5);
  const std::vector<int32_t> tokens = {3, 49, 0, 3, 17};
  const int64_t rows = int64_t(tokens.size()), stride = width + 4;
  struct Case {
    WeightKind kind;
    QuantFormat f;
  };
  std::vector<Case> cases = {{WeightKind::F32, {}}, {WeightKind::F16, {}}};
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine})
        cases.push_back({WeightKind::Quant, {bits, group, grid}});
  for (const Case &c : cases) {
    std::vector<uint8_t> bytes;
    std::vector<float> want(size_t(rows * width));
    if (c.kind == WeightKind::F32) {
      bytes.resize(table.size() * 4);
      std::memcpy(bytes.data(), table.data(), bytes.size());
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(&want[r * width], &table[tokens[r] * width], width * 4);
    } else if (c.kind == WeightKind::F16) {
      bytes.resize(table.size() * 2);
      for (size_t i = 0; i < table.size(); ++i) {
        const uint16_t h = kernels::floatToHalf(table[i]);
        std::memcpy(&bytes[2 * i], &h, 2);
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < width; ++i)
          want[r * width + i] =
              kernels::halfToFloat(kernels::floatToHalf(table[tokens[r] * width + i]));
    } else {
      const size_t rb = kernels::packedRowBytes(c.f, width);
      bytes.resize(vocab * rb);
      kernels::quantizeRows(table.data(), vocab, width, c.f, bytes.data());
      for (int64_t r = 0; r < rows; ++r)
        kernels::dequantizeRow(bytes.data() + tokens[r] * rb, c.f, width,
                               &want[r * width]);
    }
    auto tbuf = upload(bytes.data(), bytes.size());
    auto obuf = upload(std::vector<float>(size_t(rows * stride), 0.0f));
    EmbedDesc d;
    d.table.buffer = tbuf.get();
    d.table.bytes = bytes.size();
    d.table.kind = c.kind;
    d.table.format = c.f;
    d.table.shape = {vocab, width};
    d.out = {obuf.get(), 0, stride, width};
    run(dev().prepareEmbed(d), Launch{rows, 0, tokens.data()});
    const std::vector<float> got = download(*obuf, size_t(rows * stride));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < width; ++i)
        ASSERT_NEAR(got[r * stride + i], want[r * width + i],
                    1e-6f * std::fabs(want[r * width + i]))
            << (c.kind == WeightKind::Quant ? formatName(c.f) : "dense")
            << " row " << r << " col " << i;
  }
}

struct AttnCase {
  int64_t heads, kvHeads, dim, rows, pos, window, capacity;
  bool int8;
};

TEST_F(Gpu, AttentionAgainstTheCpuKernel) {
  const AttnCase cases[] = {
      {8, 2, 64, 1, 700, 0, 1024, false},   // decode, several splits, GQA 4
      {8, 2, 64, 1, 700, 0, 1024, true},    // int8 cache
      {4, 4, 128, 5, 37, 0, 64, false},     // prefill rows, MHA
      {6, 2, 40, 3, 300, 100, 512, false},  // window, odd head size
      {2, 1, 256, 1, 0, 0, 8, true},        // first token, widest head
      {16, 8, 128, 1, 5000, 0, 8192, false} // long cache: 64 splits
  };
  for (const AttnCase &c : cases) {
    const int64_t width = c.heads * c.dim, kvWidth = c.kvHeads * c.dim;
    const int64_t filled = c.pos + c.rows;
    const std::vector<float> q = randoms(size_t(c.rows * width), 21);
    const std::vector<float> kf = randoms(size_t(c.capacity * kvWidth), 22);
    const std::vector<float> vf = randoms(size_t(c.capacity * kvWidth), 23);
    const float kScale = 3.0f / 127, vScale = 2.5f / 127;
    std::vector<int8_t> k8(kf.size()), v8(vf.size());
    for (size_t i = 0; i < kf.size(); ++i) {
      k8[i] = int8_t(std::max(-127.0f, std::min(127.0f, std::rint(kf[i] / kScale))));
      v8[i] = int8_t(std::max(-127.0f, std::min(127.0f, std::rint(vf[i] / vScale))));
    }
    kernels::AttentionArgs a;
    a.q = q.data();
    a.S = c.rows;
    a.pos0 = c.pos;
    a.H = c.heads;
    a.KVH = c.kvHeads;
    a.D = c.dim;
    a.scale = 1.0f / std::sqrt(float(c.dim));
    a.window = c.window;
    a.k = c.int8 ? static_cast<const void *>(k8.data()) : kf.data();
    a.v = c.int8 ? static_cast<const void *>(v8.data()) : vf.data();
    a.capacity = c.capacity;
    a.int8 = c.int8;
    a.kScale = kScale;
    a.vScale = vScale;
    std::vector<float> want(size_t(c.rows * width));
    a.out = want.data();
    kernels::attentionOn(kernels::KernelIsa::Generic, a, nullptr);
    ASSERT_LE(filled, c.capacity);

    auto qbuf = upload(q);
    auto kbuf = c.int8 ? upload(k8) : upload(kf);
    auto vbuf = c.int8 ? upload(v8) : upload(vf);
    auto obuf = upload(std::vector<float>(size_t(c.rows * width), -1.0f));
    AttentionDesc d;
    d.q = {qbuf.get(), 0, width, width};
    d.out = {obuf.get(), 0, width, width};
    d.k = {kbuf.get(), 0, c.capacity, kvWidth, c.int8};
    d.v = {vbuf.get(), 0, c.capacity, kvWidth, c.int8};
    d.heads = c.heads;
    d.kvHeads = c.kvHeads;
    d.headDim = c.dim;
    d.window = c.window;
    d.scale = a.scale;
    d.kScale = kScale;
    d.vScale = vScale;
    d.maxRows = c.rows;
    run(dev().prepareAttention(d), Launch{c.rows, c.pos, nullptr});
    const std::vector<float> got = download(*obuf, size_t(c.rows * width));
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= 2e-5f + 2e-4f * std::fabs(want[i])) &&
          bad++ < 5)
        ADD_FAILURE() << "H=" << c.heads << " KVH=" << c.kvHeads
                      << " D=" << c.dim << " rows=" << c.rows
                      << " pos=" << c.pos << " window=" << c.window
                      << (c.int8 ? " int8" : "") << ": out[" << i
                      << "] = " << got[i] << ", want " << want[i];
  }
}

// The row kernels (kernels/rows.cu), launched directly against plain loops
// (the runtime has no C++ RMSNorm/RoPE/SiLU kernels: the compiler generates
// them for the CPU).
TEST_F(Gpu, RowKernels) {
  const int rows = 3, width = 4096, stride = width + 32;
  const std::vector<float> x = randoms(size_t(rows * stride), 31);
  const std::vector<float> w = randoms(size_t(width), 32);
  const std::vector<float> up = randoms(size_t(rows * stride), 33);
  auto xb = upload(x), wb = upload(w), ub = upload(up);
  auto ob = upload(std::vector<float>(size_t(rows * stride), 0.0f));
  auto ptr = [](const std::unique_ptr<Buffer> &b) { return devicePtr(b.get(), 0); };
  auto launch = [&](const char *name, Dim3 grid, Dim3 block, LaunchParams &p) {
    auto fn = dev().function(name);
    ASSERT_TRUE(fn.isOk()) << fn.message();
    dev().launch(*fn, grid, block, p, cudaQueue()); // run by the download after
  };
  {
    const float eps = 1e-5f;
    LaunchParams p;
    p.add(ptr(xb)).add(int64_t(stride)).add(ptr(wb)).add(ptr(ob))
        .add(int64_t(stride)).add(width).add(eps);
    launch("fm_rmsnorm", {rows}, {1024}, p);
    const std::vector<float> got = download(*ob, size_t(rows * stride));
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int c = 0; c < width; ++c)
        ss += double(x[r * stride + c]) * x[r * stride + c];
      const double inv = 1.0 / std::sqrt(ss / width + eps);
      for (int c = 0; c < width; ++c) {
        const double ref = x[r * stride + c] * inv * w[c];
        ASSERT_NEAR(got[r * stride + c], ref, 1e-5 * std::fabs(ref) + 1e-6)
            << "rmsnorm " << r << "," << c;
      }
    }
  }
  {
    LaunchParams p;
    p.add(ptr(xb)).add(int64_t(stride)).add(ptr(ub)).add(int64_t(stride))
        .add(ptr(ob)).add(int64_t(stride)).add(width);
    launch("fm_silu_mul", {rows}, {256}, p);
    const std::vector<float> got = download(*ob, size_t(rows * stride));
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < width; ++c) {
        const double g = x[r * stride + c];
        const double ref = g / (1.0 + std::exp(-g)) * up[r * stride + c];
        ASSERT_NEAR(got[r * stride + c], ref, 1e-5 * std::fabs(ref) + 1e-6)
            << "silu_mul " << r << "," << c;
      }
  }
  {
    const int heads = 32, dim = 128; // 4096 wide
    const int64_t pos0 = 1000;
    const float theta = 500000.0f;
    LaunchParams p;
    p.add(ptr(xb)).add(int64_t(stride)).add(heads).add(dim).add(pos0).add(theta);
    launch("fm_rope", {rows}, {64}, p);
    const std::vector<float> got = download(*xb, size_t(rows * stride));
    for (int r = 0; r < rows; ++r)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < dim / 2; ++i) {
          const double ang =
              double(pos0 + r) * std::pow(double(theta), -2.0 * i / dim);
          const double a = x[r * stride + h * dim + i],
                       b = x[r * stride + h * dim + i + dim / 2];
          const double ra = a * std::cos(ang) - b * std::sin(ang);
          const double rb = b * std::cos(ang) + a * std::sin(ang);
          // f32 angles of ~1e3 rad: a few 1e-4 absolute.
          ASSERT_NEAR(got[r * stride + h * dim + i], ra, 1e-3)
              << "rope " << r << "," << h << "," << i;
          ASSERT_NEAR(got[r * stride + h * dim + i + dim / 2], rb, 1e-3)
              << "rope " << r << "," << h << "," << i;
        }
  }
}

// The tensor-core GEMM (kernels/gemm.cu) for every packed format, M and N
// not multiples of the 64 x 64 tile, against f64 sums over the CPU's
// dequantizeRow of the same bytes; the operands are rounded to f16 by the
// kernel, so the bound is relative to the sum of |x · w|.
TEST_F(Gpu, TensorCoreGemmEveryFormat) {
  const int M = 70, N = 100, K = 256;
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine}) {
        const QuantFormat f{bits, group, grid};
        SCOPED_TRACE(formatName(f));
        const std::vector<float> x = randoms(size_t(M) * K, 41), w = randoms(size_t(N) * K, 42);
        const size_t rowBytes = kernels::packedRowBytes(f, K);
        std::vector<uint8_t> packed(size_t(N) * rowBytes);
        kernels::quantizeRows(w.data(), N, K, f, packed.data());
        std::vector<float> wdq(size_t(N) * K);
        for (int n = 0; n < N; ++n)
          kernels::dequantizeRow(packed.data() + n * rowBytes, f, K, wdq.data() + size_t(n) * K);
        auto xb = upload(x), wb = upload(packed);
        auto yb = upload(std::vector<float>(size_t(M) * N, 1.0f));
        LaunchParams p;
        p.add(devicePtr(xb.get(), 0)).add(int64_t(K)).add(devicePtr(wb.get(), 0))
            .add(devicePtr(yb.get(), 0)).add(int64_t(N)).add(M).add(N).add(K).add(1);
        auto fn = dev().function(("fm_qgemm_mma_" + formatName(f)).c_str());
        ASSERT_TRUE(fn.isOk()) << fn.message();
        dev().launch(*fn, {unsigned((N + 63) / 64), unsigned((M + 63) / 64)}, {256}, p,
                     cudaQueue());
        const std::vector<float> got = download(*yb, size_t(M) * N);
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double ref = 1.0, mag = 0.0; // accumulate onto the 1.0 already there
            for (int k = 0; k < K; ++k) {
              ref += double(x[size_t(m) * K + k]) * wdq[size_t(n) * K + k];
              mag += std::fabs(double(x[size_t(m) * K + k]) * wdq[size_t(n) * K + k]);
            }
            ASSERT_NEAR(got[size_t(m) * N + n], ref, 2e-3 * mag + 1e-5) << m << "," << n;
          }
      }
}

TEST_F(Gpu, CopyRowAndAllReduceOnOneRank) {
  const int64_t rows = 4, width = 300, stride = 320;
  const std::vector<float> a = randoms(size_t(rows * stride), 41);
  const std::vector<float> b = randoms(size_t(rows * stride), 42);
  auto ab = upload(a), bb = upload(b);
  auto ob = upload(std::vector<float>(size_t(rows * stride), 7.0f));
  AllReduceDesc d;
  d.inputs = {{ab.get(), 0, stride, width}, {bb.get(), 0, stride, width}};
  d.out = {ob.get(), 0, stride, width};
  d.scale = 0.5f;
  d.maxRows = rows;
  CollectiveStats stats;
  d.stats = &stats;
  run(dev().prepareAllReduce(d), Launch{rows, 0, nullptr});
  std::vector<float> got = download(*ob, size_t(rows * stride));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      ASSERT_FLOAT_EQ(got[r * stride + c],
                      0.5f * (a[r * stride + c] + b[r * stride + c]));
  EXPECT_EQ(stats.allReduces, 1);
  CopyRowDesc cr;
  cr.src = {ab.get(), 0, stride, width};
  cr.dst = {ob.get(), 0, stride, width};
  run(dev().prepareCopyRow(cr), Launch{3, 0, nullptr});
  got = download(*ob, size_t(width));
  for (int64_t c = 0; c < width; ++c)
    ASSERT_EQ(got[c], a[2 * stride + c]);
}

// A whole artifact (embed, quantized matmuls) on cuda against the CPU
// device's logits.
TEST_F(Gpu, ModelLogitsMatchTheCpu) {
  test::ArtifactBuilder b;
  const int64_t V = 64, Hd = 128;
  b.vocab = uint32_t(V);
  b.hidden = uint32_t(Hd);
  const uint32_t E = b.addWeight("e", {V, Hd}, randoms(size_t(V * Hd), 51));
  const uint32_t W1 = b.addQuantWeight("w1", Hd, Hd, randoms(size_t(Hd * Hd), 52, 0.1f),
                                       {4, 64, QuantGrid::Balanced});
  const uint32_t W2 = b.addQuantWeight("w2", V, Hd, randoms(size_t(V * Hd), 53, 0.1f),
                                       {2, 32, QuantGrid::Affine});
  // The arena in floats: x, h and the logits, 8 rows each (the prefill's).
  const uint32_t rows = 8, dx = 0, dh = rows * Hd, dl = 2 * rows * Hd;
  for (const char *phase : {"decode", "prefill"})
    b.addProgram(phase, std::string(phase) == "decode" ? 1 : rows, dl + rows * V,
                 test::buf(dl, uint32_t(V), uint32_t(V)), false,
                 {b.embed(E, test::buf(dx, uint32_t(Hd), uint32_t(Hd))),
                  b.matmul(test::buf(dx, uint32_t(Hd), uint32_t(Hd)), {W1},
                           test::buf(dh, uint32_t(Hd), uint32_t(Hd)), uint32_t(Hd),
                           uint32_t(Hd)),
                  b.matmul(test::buf(dh, uint32_t(Hd), uint32_t(Hd)), {W2},
                           test::buf(dl, uint32_t(V), uint32_t(V)), uint32_t(Hd),
                           uint32_t(V))});
  const std::vector<uint8_t> file = b.finish();
  auto logits = [&](const char *device) {
    LoadOptions o;
    o.device = device;
    auto m = Model::loadFromBuffer(file.data(), file.size(), "m.fmb", o);
    EXPECT_TRUE(m.isOk()) << m.message();
    std::vector<float> out;
    if (!m)
      return out;
    SessionOptions so;
    so.threads = 1;
    so.activations = SessionOptions::Activations::F32;
    Session s(*m, so);
    auto l = s.prefill({5, 9, 63, 0, 1}, /*allLogits=*/true);
    EXPECT_TRUE(l.isOk()) << l.message();
    if (l)
      out.assign(l->data, l->data + l->rows * l->vocab);
    return out;
  };
  const std::vector<float> cpu = logits("cpu"), gpu = logits("cuda");
  ASSERT_EQ(cpu.size(), gpu.size());
  ASSERT_FALSE(cpu.empty());
  for (size_t i = 0; i < cpu.size(); ++i)
    ASSERT_NEAR(gpu[i], cpu[i], 1e-4 + 1e-4 * std::fabs(cpu[i])) << i;
}

// Decode steps with CUDA graphs (each step's segment captured, then
// instantiated and replayed) against the same steps launched directly: the
// same logits token by token, and the replays counted: one graph per step
// from the second, so a step is one segment, the MoE's included (routed on
// the device). On the emulator this runs the capture, update and replay of
// real kernels.
void Gpu::checkDecodeGraphs(bool moe) {
  test::ArtifactBuilder b;
  const int64_t V = 64, Hd = 128, E = 4, I = 64;
  b.vocab = uint32_t(V);
  b.hidden = uint32_t(Hd);
  const QuantFormat q4{4, 32, QuantGrid::Balanced};
  const uint32_t Emb = b.addWeight("e", {V, Hd}, randoms(size_t(V * Hd), 61));
  const uint32_t W = b.addQuantWeight("w", V, Hd, randoms(size_t(V * Hd), 62, 0.1f), q4);
  const auto x = test::buf(0, uint32_t(Hd), uint32_t(Hd)),
             h = test::buf(Hd, uint32_t(Hd), uint32_t(Hd)),
             logits = test::buf(2 * Hd, uint32_t(V), uint32_t(V));
  std::vector<test::ArtifactBuilder::Cmd> cmds = {b.embed(Emb, x)};
  if (moe) {
    const uint32_t router = b.addWeight("router", {E, Hd}, randoms(size_t(E * Hd), 63));
    std::vector<uint32_t> gate, up, down;
    for (int64_t e = 0; e < E; ++e) {
      const std::string n = std::to_string(e);
      gate.push_back(b.addQuantWeight("g" + n, I, Hd, randoms(size_t(I * Hd), 70 + e, 0.1f), q4));
      up.push_back(b.addQuantWeight("u" + n, I, Hd, randoms(size_t(I * Hd), 80 + e, 0.1f), q4));
      down.push_back(b.addQuantWeight("d" + n, Hd, I, randoms(size_t(Hd * I), 90 + e, 0.1f), q4));
    }
    cmds.push_back(b.moe(x, h, router, gate, up, down, 2, true));
    cmds.push_back(b.matmul(h, {W}, logits, uint32_t(Hd), uint32_t(V)));
  } else {
    cmds.push_back(b.matmul(x, {W}, logits, uint32_t(Hd), uint32_t(V)));
  }
  b.addProgram("decode", 1, 2 * Hd + V, logits, false, cmds);
  const std::vector<uint8_t> file = b.finish();
  const std::vector<int32_t> tokens = {3, 17, 17, 40, 2, 63};
  auto decode = [&](bool graphs, SessionStats &stats) {
    LoadOptions o;
    o.device = "cuda";
    o.cudaGraphs = graphs;
    auto m = Model::loadFromBuffer(file.data(), file.size(), "m.fmb", o);
    EXPECT_TRUE(m.isOk()) << m.message();
    std::vector<float> out;
    if (!m)
      return out;
    SessionOptions so;
    so.activations = SessionOptions::Activations::F32;
    Session s(*m, so);
    for (int32_t t : tokens) {
      auto l = s.decode(t);
      EXPECT_TRUE(l.isOk()) << l.message();
      if (!l)
        return out;
      out.insert(out.end(), *l, *l + V);
    }
    stats = s.stats();
    return out;
  };
  SessionStats withGraphs, direct;
  const std::vector<float> a = decode(true, withGraphs), d = decode(false, direct);
  ASSERT_EQ(a.size(), tokens.size() * V);
  ASSERT_EQ(a, d) << "graph replay changed the logits";
  EXPECT_EQ(withGraphs.graphLaunches, int64_t(tokens.size()) - 1)
      << "one graph per decode step after the first";
  EXPECT_EQ(direct.graphLaunches, 0);
  EXPECT_GT(direct.directLaunches, 0);
  // Different tokens gave different rows: the replays read each new token.
  EXPECT_NE(std::vector<float>(a.begin(), a.begin() + V),
            std::vector<float>(a.begin() + V, a.begin() + 2 * V));
}

TEST_F(Gpu, DecodeGraphsMatchDirectLaunches) { checkDecodeGraphs(false); }
TEST_F(Gpu, MoeDecodeGraphsMatchDirectLaunches) { checkDecodeGraphs(true); }

// ---------------------------------------------------------------------------
// Bandwidth (not a test: scripts/gpu-check.sh runs it and prints the ratios)
// ---------------------------------------------------------------------------

TEST_F(Gpu, DISABLED_BenchMatvecBandwidth) {
  const DriverApi &api = dev().api();
  CUevent e0, e1;
  ASSERT_EQ(api.cuEventCreate(&e0, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&e1, 0), CUDA_SUCCESS);
  auto time = [&](const std::function<void()> &fn, int reps) {
    fn(); // warm
    api.cuEventRecord(e0, stream());
    for (int i = 0; i < reps; ++i)
      fn();
    api.cuEventRecord(e1, stream());
    api.cuEventSynchronize(e1);
    float ms = 0;
    api.cuEventElapsedTime(&ms, e0, e1);
    return double(ms) / reps;
  };
  // Baseline: a device-to-device copy of 256 MiB (reads + writes).
  const uint64_t copyBytes = 256ull << 20;
  auto src = dev().allocateDevice(copyBytes), dst = dev().allocateDevice(copyBytes);
  ASSERT_TRUE(src.isOk() && dst.isOk());
  const double copyMs = time([&] {
    api.cuMemcpyDtoDAsync((*dst)->ptr(), (*src)->ptr(), copyBytes, stream());
  }, 20);
  const double copyGBps = 2.0 * copyBytes / copyMs / 1e6;
  std::printf("bench: copy D2D 256 MiB: %.0f GB/s (read+write), peak %.0f GB/s\n",
              copyGBps, dev().peakGBps());
  const int64_t K = 8192, N = 28672; // an afm7-sized up projection x2
  for (QuantFormat f : {QuantFormat{2, 64, QuantGrid::Balanced},
                        QuantFormat{4, 64, QuantGrid::Balanced},
                        QuantFormat{8, 32, QuantGrid::Balanced}})
    for (auto act : {kernels::QActivations::F32, kernels::QActivations::Int8}) {
      const uint64_t bytes = uint64_t(N) * kernels::packedRowBytes(f, K);
      auto wb = dev().allocateDevice(bytes); // zero weights: speed only
      auto xb = upload(randoms(size_t(K), 1));
      auto yb = upload(std::vector<float>(size_t(N), 0.0f));
      ASSERT_TRUE(wb.isOk()) << wb.message();
      MatmulDesc d;
      d.x = {xb.get(), 0, K, K};
      d.y = {yb.get(), 0, N, N};
      d.k = K;
      d.n = N;
      d.activations = act;
      WeightDesc w;
      w.buffer = wb->get();
      w.bytes = bytes;
      w.kind = WeightKind::Quant;
      w.format = f;
      w.shape = {N, K};
      d.weights = {w};
      auto k = dev().prepareMatmul(d);
      ASSERT_TRUE(k.isOk()) << k.message();
      // Each run's segment submitted at once, between the timing events.
      const double ms = time([&] {
        (void)(*k)->run(*queue_, Launch{1, 0, nullptr});
        (void)cudaQueue().submit();
      }, 50);
      const double gbps = bytes / ms / 1e6;
      std::printf("bench: matvec %s %s %lldx%lld (%.0f MiB): %.3f ms, %.0f GB/s "
                  "= %.0f%% of copy, %.0f%% of peak\n",
                  formatName(f).c_str(), kernels::qActivationsName(act),
                  (long long)N, (long long)K, bytes / 1048576.0, ms, gbps,
                  100.0 * gbps / copyGBps, 100.0 * gbps / dev().peakGBps());
    }
  api.cuEventDestroy(e0);
  api.cuEventDestroy(e1);
}

} // namespace
} // namespace fm::hal::cuda
