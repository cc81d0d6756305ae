// Tests of the CPU group code generator: compiles small fmk.group modules,
// loads the shared object with the runtime's own loader and compares every
// op kind with a double-precision reference on odd shapes.
#include "targets/cpu/GroupCodegen.h"

#include "hal/cpu/CpuExecutable.h"
#include "hal/cpu/ElfImage.h"

#include "dialects/fm/IR/FmDialect.h"
#include "dialects/fmk/IR/FmkDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Host.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

namespace {

using fm::cpu::CompiledExecutable;
using fm::cpu::CpuOptions;
using fm::cpu::GroupArg;
using Entry = void (*)(void **args, int64_t rows, int64_t pos);
using Rows = std::vector<float>; // [rows][width], row-major

/// Replaces every `$NAME` of `text` (longest names first).
std::string subst(std::string text, const std::map<std::string, std::string> &vars) {
  std::vector<std::pair<std::string, std::string>> sorted(vars.begin(), vars.end());
  std::sort(sorted.begin(), sorted.end(),
            [](auto &a, auto &b) { return a.first.size() > b.first.size(); });
  for (auto &[name, value] : sorted) {
    std::string key = "$" + name;
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at))
      text.replace(at, key.size(), value);
  }
  return text;
}

/// A module parsed from text with the dialects fmc registers.
struct Parsed {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  explicit Parsed(const std::string &text) {
    ctx.loadDialect<mlir::fm::FmDialect, mlir::fmk::FmkDialect, mlir::func::FuncDialect,
                    mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  }
  std::vector<mlir::fmk::GroupOp> groups() {
    std::vector<mlir::fmk::GroupOp> out;
    module->walk([&](mlir::fmk::GroupOp g) { out.push_back(g); });
    return out;
  }
};

/// A shared object loaded from memory by the runtime's loader.
class Library {
public:
  explicit Library(const CompiledExecutable &exe) {
    auto loaded = fm::hal::CpuExecutable::loadImage(exe.image, exe.functions, "generated code");
    if (loaded)
      code = std::move(*loaded);
    else
      error = loaded.message();
  }
  Entry entry(const std::vector<std::string> &names, const std::string &name) const {
    for (size_t i = 0; code && i < names.size(); ++i)
      if (names[i] == name)
        return reinterpret_cast<Entry>(code->function(i));
    return nullptr;
  }
  std::unique_ptr<fm::hal::CpuExecutable> code;
  std::string error;
};

/// Compiles `text` for `cpu` and loads it (code for this machine only).
struct Compiled {
  Parsed parsed;
  CompiledExecutable exe;
  std::unique_ptr<Library> lib;
  std::vector<std::string> progress;

  Compiled(const std::string &text, const std::string &cpu = "native") : parsed(text) {
    if (!parsed.module) {
      ADD_FAILURE() << "cannot parse:\n" << text;
      return;
    }
    auto result = fm::cpu::compileGroups(*parsed.module, CpuOptions{cpu},
                                         [&](llvm::StringRef line) { progress.push_back(line.str()); });
    if (!result) {
      ADD_FAILURE() << llvm::toString(result.takeError());
      return;
    }
    exe = std::move(*result);
    if (fm::hal::elfMachineProblem(exe.image.data(), exe.image.size()).empty()) {
      lib = std::make_unique<Library>(exe);
      EXPECT_TRUE(lib->code) << lib->error;
    }
  }
  Entry entry(size_t group = 0) {
    if (!lib || group >= exe.functions.size())
      return nullptr;
    Entry e = lib->entry(exe.functions, exe.functions[group]);
    EXPECT_TRUE(e) << "no symbol " << exe.functions[group];
    return e;
  }
};

Rows randomRows(size_t n, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Rows v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// |got - want| <= rtol * |want| + atol for every element, with the worst
/// mismatch in the failure message.
void expectClose(const Rows &got, const std::vector<double> &want, const char *what,
                 double rtol = 2e-6, double atol = 2e-6) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t worstAt = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double excess = std::abs(got[i] - want[i]) / (rtol * std::abs(want[i]) + atol);
    if (!(excess <= worst)) {
      worst = excess;
      worstAt = i;
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << worstAt << " is " << got[worstAt]
                        << ", expected " << want[worstAt];
}

// --- double-precision references (one row of `width` at a time) -------------

std::vector<double> refRmsNorm(const std::vector<double> &x, const Rows &w, size_t width,
                               double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / width; ++r) {
    double ss = 0;
    for (size_t j = 0; j < width; ++j)
      ss += x[r * width + j] * x[r * width + j];
    double inv = 1.0 / std::sqrt(ss / double(width) + eps);
    for (size_t j = 0; j < width; ++j)
      y[r * width + j] = x[r * width + j] * inv * w[j];
  }
  return y;
}

std::vector<double> refRope(const std::vector<double> &x, size_t width, int64_t pos,
                            int64_t heads, int64_t hd, double theta, bool interleaved) {
  std::vector<double> y(x);
  for (size_t r = 0; r < x.size() / width; ++r)
    for (int64_t i = 0; i < hd / 2; ++i) {
      double angle = double(pos + int64_t(r)) * std::pow(theta, -2.0 * double(i) / double(hd));
      double c = std::cos(angle), s = std::sin(angle);
      for (int64_t h = 0; h < heads; ++h) {
        size_t ia = r * width + h * hd + (interleaved ? 2 * i : i);
        size_t ib = ia + (interleaved ? 1 : hd / 2);
        double a = x[ia], b = x[ib];
        y[ia] = a * c - b * s;
        y[ib] = b * c + a * s;
      }
    }
  return y;
}

std::vector<double> refHeadNorm(const std::vector<double> &x, const Rows &w, size_t width,
                                int64_t hd, double eps) {
  std::vector<double> y(x.size());
  for (size_t h0 = 0; h0 < x.size(); h0 += hd) {
    double ss = 0;
    for (int64_t i = 0; i < hd; ++i)
      ss += x[h0 + i] * x[h0 + i];
    double inv = 1.0 / std::sqrt(ss / double(hd) + eps);
    for (int64_t i = 0; i < hd; ++i)
      y[h0 + i] = x[h0 + i] * inv * w[i];
  }
  (void)width;
  return y;
}

std::vector<double> widen(const Rows &x) { return std::vector<double>(x.begin(), x.end()); }

const int64_t kRowCounts[] = {1, 3, 17};

// --- single ops --------------------------------------------------------------

class RmsNormTest : public ::testing::TestWithParam<int> {};

TEST_P(RmsNormTest, MatchesReference) {
  int w = GetParam();
  Compiled c(subst(R"(
func.func @f(%x: tensor<?x$Wxf32>, %w: tensor<$Wxf32>) -> tensor<?x$Wxf32> {
  %r = fmk.group "norm_$W" (%x, %w) : (tensor<?x$Wxf32>, tensor<$Wxf32>) -> tensor<?x$Wxf32> {
  ^bb0(%a: tensor<?x$Wxf32>, %b: tensor<$Wxf32>):
    %n = fmk.rms_norm %a, %b {eps = 1.0e-05 : f64} : tensor<?x$Wxf32>, tensor<$Wxf32> -> tensor<?x$Wxf32>
    fmk.yield %n : tensor<?x$Wxf32>
  }
  return %r : tensor<?x$Wxf32>
}
)",
                   {{"W", std::to_string(w)}}));
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  EXPECT_EQ(c.exe.functions[0], "fmk_norm_" + std::to_string(w) + "_entry");
  for (int64_t rows : kRowCounts) {
    Rows x = randomRows(rows * w, 1 + rows), g = randomRows(w, 2, 0.5f, 1.5f);
    Rows y(rows * w, NAN);
    void *args[] = {x.data(), g.data(), y.data()};
    entry(args, rows, 5);
    expectClose(y, refRmsNorm(widen(x), g, w, 1e-5), "rms_norm");
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, RmsNormTest, ::testing::Values(16, 48, 96, 100));

TEST(GroupCodegen, AddBiasAndAdd) {
  Compiled c(R"(
func.func @f(%x: tensor<?x48xf32>, %y: tensor<?x48xf32>, %b: tensor<48xf32>) -> tensor<?x48xf32> {
  %r = fmk.group "bias" (%x, %y, %b) : (tensor<?x48xf32>, tensor<?x48xf32>, tensor<48xf32>) -> tensor<?x48xf32> {
  ^bb0(%a: tensor<?x48xf32>, %c: tensor<?x48xf32>, %d: tensor<48xf32>):
    %s = fmk.add %a, %c : tensor<?x48xf32>
    %t = fmk.add_bias %s, %d : tensor<?x48xf32>, tensor<48xf32> -> tensor<?x48xf32>
    fmk.yield %t : tensor<?x48xf32>
  }
  return %r : tensor<?x48xf32>
}
)");
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  for (int64_t rows : kRowCounts) {
    Rows x = randomRows(rows * 48, 3), y = randomRows(rows * 48, 4), b = randomRows(48, 5);
    Rows out(rows * 48, NAN);
    void *args[] = {x.data(), y.data(), b.data(), out.data()};
    entry(args, rows, 0);
    std::vector<double> want(out.size());
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = double(x[i]) + double(y[i]) + double(b[i % 48]);
    expectClose(out, want, "add + add_bias");
  }
}

/// silu_mul over the two halves of one [rows, 2I] gate/up input.
class SiluMulTest : public ::testing::TestWithParam<int> {};

TEST_P(SiluMulTest, SlicesOfOneInput) {
  int i = GetParam();
  Compiled c(subst(R"(
func.func @f(%gu: tensor<?x$W2xf32>) -> tensor<?x$Ixf32> {
  %r = fmk.group "swiglu" (%gu) : (tensor<?x$W2xf32>) -> tensor<?x$Ixf32> {
  ^bb0(%a: tensor<?x$W2xf32>):
    %g = fmk.slice_cols %a[0] : tensor<?x$W2xf32> -> tensor<?x$Ixf32>
    %u = fmk.slice_cols %a[$I] : tensor<?x$W2xf32> -> tensor<?x$Ixf32>
    %y = fmk.silu_mul %g, %u : tensor<?x$Ixf32>
    fmk.yield %y : tensor<?x$Ixf32>
  }
  return %r : tensor<?x$Ixf32>
}
)",
                   {{"W2", std::to_string(2 * i)}, {"I", std::to_string(i)}}));
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  for (int64_t rows : kRowCounts) {
    Rows gu = randomRows(rows * 2 * i, 7 + rows, -12.0f, 12.0f);
    if (rows == 17) { // the far tails of exp
      gu[0] = -90.0f;
      gu[1] = 90.0f;
      gu[2] = -0.0f;
      gu[3] = 1e-30f;
    }
    Rows y(rows * i, NAN);
    void *args[] = {gu.data(), y.data()};
    entry(args, rows, 0);
    std::vector<double> want(y.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int j = 0; j < i; ++j) {
        double g = gu[r * 2 * i + j], u = gu[r * 2 * i + i + j];
        want[r * i + j] = g / (1.0 + std::exp(-g)) * u;
      }
    expectClose(y, want, "silu_mul");
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, SiluMulTest, ::testing::Values(16, 48, 100));

TEST(GroupCodegen, FakeQuantIsOnTheInt8Grid) {
  Compiled c(R"(
func.func @f(%x: tensor<?x100xf32>, %s: tensor<f32>) -> tensor<?x100xf32> {
  %r = fmk.group "fq" (%x, %s) : (tensor<?x100xf32>, tensor<f32>) -> tensor<?x100xf32> {
  ^bb0(%a: tensor<?x100xf32>, %b: tensor<f32>):
    %q = fmk.fake_quant %a, %b : tensor<?x100xf32>, tensor<f32> -> tensor<?x100xf32>
    fmk.yield %q : tensor<?x100xf32>
  }
  return %r : tensor<?x100xf32>
}
)");
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  float scale = 0.25f;
  for (int64_t rows : kRowCounts) {
    Rows x = randomRows(rows * 100, 11, -40.0f, 40.0f); // clamps past ±32
    // Ties round to even: 2.5 → 2, 3.5 → 4, -2.5 → -2; and the clamp edges.
    float special[] = {0.625f, 0.875f, -0.625f, -32.0f, 31.75f, 31.875f, -32.125f, 0.0f};
    for (size_t k = 0; k < std::size(special) && k < x.size(); ++k)
      x[k] = special[k];
    Rows y(x.size(), NAN);
    void *args[] = {x.data(), &scale, y.data()};
    entry(args, rows, 0);
    for (size_t k = 0; k < x.size(); ++k) {
      float q = std::nearbyint(x[k] / scale); // round-to-nearest-even mode
      q = std::min(127.0f, std::max(-128.0f, q));
      ASSERT_EQ(y[k], q * scale) << "x = " << x[k];
      float level = y[k] / scale;
      ASSERT_EQ(level, std::round(level));
    }
    if (rows == 17) {
      EXPECT_EQ(y[0], 0.5f);
      EXPECT_EQ(y[1], 1.0f);
      EXPECT_EQ(y[2], -0.5f);
      EXPECT_EQ(y[3], -32.0f);
      EXPECT_EQ(y[4], 31.75f);
      EXPECT_EQ(y[5], 31.75f);
      EXPECT_EQ(y[6], -32.0f);
    }
  }
}

TEST(GroupCodegen, InterleavedRopeAtPos37) {
  // 5 heads of 20: width 100.
  Compiled c(R"(
func.func @f(%x: tensor<?x100xf32>, %p: index) -> tensor<?x100xf32> {
  %r = fmk.group "rope_i" (%x, %p) : (tensor<?x100xf32>, index) -> tensor<?x100xf32> {
  ^bb0(%a: tensor<?x100xf32>, %q: index):
    %y = fmk.rope %a at %q {num_heads = 5 : i64, head_dim = 20 : i64, theta = 5.0e+05 : f64, style = 2 : i32} : tensor<?x100xf32>
    fmk.yield %y : tensor<?x100xf32>
  }
  return %r : tensor<?x100xf32>
}
)");
  ASSERT_EQ(c.parsed.groups().size(), 1u);
  auto abi = fm::cpu::groupAbi(c.parsed.groups()[0]);
  ASSERT_EQ(abi.size(), 2u); // the index input takes no pointer
  EXPECT_EQ(abi[0].kind, GroupArg::Input);
  EXPECT_EQ(abi[1].kind, GroupArg::Result);
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  for (int64_t rows : kRowCounts) {
    Rows x = randomRows(rows * 100, 13);
    Rows y(x.size(), NAN);
    void *args[] = {x.data(), y.data()};
    entry(args, rows, 37);
    expectClose(y, refRope(widen(x), 100, 37, 5, 20, 5e5, true), "interleaved rope");
  }
}

// --- chains, several results, caches ----------------------------------------

/// rms_norm → rope(half) → head_norm → cache_write, yielding the rope output
/// and the normed heads: 3 heads of 32 (width 96), cache capacity 64.
TEST(GroupCodegen, NormRopeHeadNormCacheChain) {
  Compiled c(R"(
func.func @f(%x: tensor<?x96xf32>, %w: tensor<96xf32>, %p: index, %wh: tensor<32xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>) {
  %r:2 = fmk.group "chain" (%x, %w, %p, %wh) : (tensor<?x96xf32>, tensor<96xf32>, index, tensor<32xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>) {
  ^bb0(%a: tensor<?x96xf32>, %b: tensor<96xf32>, %q: index, %c: tensor<32xf32>):
    %n = fmk.rms_norm %a, %b {eps = 1.0e-06 : f64} : tensor<?x96xf32>, tensor<96xf32> -> tensor<?x96xf32>
    %y = fmk.rope %n at %q {num_heads = 3 : i64, head_dim = 32 : i64, theta = 1.0e+04 : f64, style = 1 : i32} : tensor<?x96xf32>
    %h = fmk.head_norm %y, %c {num_heads = 3 : i64, head_dim = 32 : i64, eps = 1.0e-06 : f64} : tensor<?x96xf32>, tensor<32xf32> -> tensor<?x96xf32>
    fmk.cache_write %h at %q into @kv[2] k : tensor<?x96xf32>
    fmk.yield %y, %h : tensor<?x96xf32>, tensor<?x96xf32>
  }
  return %r#0, %r#1 : tensor<?x96xf32>, tensor<?x96xf32>
}
)");
  ASSERT_EQ(c.parsed.groups().size(), 1u);
  auto abi = fm::cpu::groupAbi(c.parsed.groups()[0]);
  std::vector<std::pair<GroupArg::Kind, unsigned>> got, want = {
      {GroupArg::Input, 0}, {GroupArg::Input, 1}, {GroupArg::Input, 3},
      {GroupArg::Result, 0}, {GroupArg::Result, 1}, {GroupArg::Cache, 0}};
  for (GroupArg a : abi)
    got.push_back({a.kind, a.index});
  EXPECT_EQ(got, want);
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  const int64_t capacity = 64, width = 96;
  for (int64_t rows : kRowCounts) {
    int64_t pos = rows == 17 ? 40 : 3;
    Rows x = randomRows(rows * width, 17 + rows), w = randomRows(width, 18, 0.5f, 1.5f),
         wh = randomRows(32, 19, 0.5f, 1.5f);
    Rows y(rows * width, NAN), h(rows * width, NAN), cache(capacity * width, -7.0f);
    void *args[] = {x.data(), w.data(), wh.data(), y.data(), h.data(), cache.data()};
    entry(args, rows, pos);
    auto wantY = refRope(refRmsNorm(widen(x), w, width, 1e-6), width, pos, 3, 32, 1e4, false);
    auto wantH = refHeadNorm(wantY, wh, width, 32, 1e-6);
    expectClose(y, wantY, "rope(rms_norm)");
    expectClose(h, wantH, "head_norm(rope(rms_norm))");
    for (int64_t p = 0; p < capacity; ++p)
      for (int64_t j = 0; j < width; ++j) {
        float v = cache[p * width + j];
        if (p >= pos && p < pos + rows)
          ASSERT_EQ(v, h[(p - pos) * width + j]) << "cache row " << p;
        else
          ASSERT_EQ(v, -7.0f) << "cache row " << p << " was written";
      }
  }
}

/// Residual add + norm: two results, the first written in place over its
/// input (the runtime may alias them); plus a passthrough result.
TEST(GroupCodegen, MultipleResultsAndInPlace) {
  const char *text = R"(
func.func @f(%x: tensor<?x48xf32>, %d: tensor<?x48xf32>, %w: tensor<48xf32>) -> (tensor<?x48xf32>, tensor<?x48xf32>) {
  %r:2 = fmk.group "resid_norm" (%x, %d, %w) : (tensor<?x48xf32>, tensor<?x48xf32>, tensor<48xf32>) -> (tensor<?x48xf32>, tensor<?x48xf32>) {
  ^bb0(%a: tensor<?x48xf32>, %b: tensor<?x48xf32>, %c: tensor<48xf32>):
    %s = fmk.add %a, %b : tensor<?x48xf32>
    %n = fmk.rms_norm %s, %c {eps = 1.0e-05 : f64} : tensor<?x48xf32>, tensor<48xf32> -> tensor<?x48xf32>
    fmk.yield %s, %n : tensor<?x48xf32>, tensor<?x48xf32>
  }
  return %r#0, %r#1 : tensor<?x48xf32>, tensor<?x48xf32>
}
)";
  Compiled c(text);
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  for (int64_t rows : kRowCounts) {
    Rows x = randomRows(rows * 48, 23), d = randomRows(rows * 48, 24), w = randomRows(48, 25);
    std::vector<double> sum(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      sum[i] = double(float(x[i] + d[i]));
    auto wantN = refRmsNorm(sum, w, 48, 1e-5);
    // Separate buffers.
    Rows s(x.size(), NAN), n(x.size(), NAN);
    void *args[] = {x.data(), d.data(), w.data(), s.data(), n.data()};
    entry(args, rows, 0);
    expectClose(s, sum, "add");
    expectClose(n, wantN, "rms_norm(add)");
    // The sum written over x.
    Rows n2(x.size(), NAN);
    void *inPlace[] = {x.data(), d.data(), w.data(), x.data(), n2.data()};
    entry(inPlace, rows, 0);
    expectClose(x, sum, "add in place");
    expectClose(n2, wantN, "rms_norm(add) in place");
  }
}

TEST(GroupCodegen, PassthroughSliceAndCacheResults) {
  Compiled c(R"(
func.func @f(%x: tensor<?x100xf32>, %s: tensor<f32>, %p: index) -> (tensor<?x100xf32>, tensor<?x36xf32>, tensor<?x36xf32>) {
  %r:3 = fmk.group "pass" (%x, %s, %p) : (tensor<?x100xf32>, tensor<f32>, index) -> (tensor<?x100xf32>, tensor<?x36xf32>, tensor<?x36xf32>) {
  ^bb0(%a: tensor<?x100xf32>, %b: tensor<f32>, %q: index):
    %f = fmk.fake_quant %a, %b : tensor<?x100xf32>, tensor<f32> -> tensor<?x100xf32>
    %t = fmk.slice_cols %f[64] : tensor<?x100xf32> -> tensor<?x36xf32>
    %v = fmk.slice_cols %a[3] : tensor<?x100xf32> -> tensor<?x36xf32>
    fmk.cache_write %t at %q into @kv[0] v : tensor<?x36xf32>
    fmk.cache_write %v at %q into @kv[1] k : tensor<?x36xf32>
    fmk.yield %a, %t, %v : tensor<?x100xf32>, tensor<?x36xf32>, tensor<?x36xf32>
  }
  return %r#0, %r#1, %r#2 : tensor<?x100xf32>, tensor<?x36xf32>, tensor<?x36xf32>
}
)");
  Entry entry = c.entry();
  ASSERT_TRUE(entry);
  float scale = 0.5f;
  for (int64_t rows : kRowCounts) {
    const int64_t pos = 9, capacity = 32;
    Rows x = randomRows(rows * 100, 29, -80.0f, 80.0f);
    Rows a(x.size(), NAN), t(rows * 36, NAN), v(rows * 36, NAN);
    Rows cv(capacity * 36, 0.0f), ck(capacity * 36, 0.0f);
    void *args[] = {x.data(), &scale, a.data(), t.data(), v.data(), cv.data(), ck.data()};
    entry(args, rows, pos);
    EXPECT_EQ(a, x);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < 36; ++j) {
        float q = std::min(127.0f, std::max(-128.0f, std::nearbyint(x[r * 100 + 64 + j] / scale)));
        ASSERT_EQ(t[r * 36 + j], q * scale);
        ASSERT_EQ(v[r * 36 + j], x[r * 100 + 3 + j]);
        ASSERT_EQ(cv[(pos + r) * 36 + j], t[r * 36 + j]);
        ASSERT_EQ(ck[(pos + r) * 36 + j], v[r * 36 + j]);
      }
  }
}

// --- modules of many groups, targets, errors ----------------------------------

/// A decoder-like module: per layer, a norm group and a QKV group (q/k norm,
/// RoPE, KV fake-quant, cache writes) and an MLP group; kernels shared by name.
std::string decoderModule(int layers, bool distinctNames) {
  std::string body;
  for (int l = 0; l < layers; ++l) {
    std::string k = distinctNames ? std::to_string(l) + "_" : "";
    body += subst(R"(
  %n$L = fmk.group "$Knorm" (%h, %wn) : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %b: tensor<64xf32>):
    %y = fmk.rms_norm %a, %b {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    fmk.yield %y : tensor<?x64xf32>
  }
  %q$L = fmk.group "$Kqkv" (%qkv, %wq, %p, %s) : (tensor<?x128xf32>, tensor<16xf32>, index, tensor<f32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x128xf32>, %b: tensor<16xf32>, %q: index, %sc: tensor<f32>):
    %qs = fmk.slice_cols %a[0] : tensor<?x128xf32> -> tensor<?x64xf32>
    %ks = fmk.slice_cols %a[64] : tensor<?x128xf32> -> tensor<?x32xf32>
    %vs = fmk.slice_cols %a[96] : tensor<?x128xf32> -> tensor<?x32xf32>
    %qn = fmk.head_norm %qs, %b {num_heads = 4 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f64} : tensor<?x64xf32>, tensor<16xf32> -> tensor<?x64xf32>
    %kn = fmk.head_norm %ks, %b {num_heads = 2 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f64} : tensor<?x32xf32>, tensor<16xf32> -> tensor<?x32xf32>
    %qr = fmk.rope %qn at %q {num_heads = 4 : i64, head_dim = 16 : i64, theta = 1.0e+04 : f64, style = 1 : i32} : tensor<?x64xf32>
    %kr = fmk.rope %kn at %q {num_heads = 2 : i64, head_dim = 16 : i64, theta = 1.0e+04 : f64, style = 1 : i32} : tensor<?x32xf32>
    %kq = fmk.fake_quant %kr, %sc : tensor<?x32xf32>, tensor<f32> -> tensor<?x32xf32>
    %vq = fmk.fake_quant %vs, %sc : tensor<?x32xf32>, tensor<f32> -> tensor<?x32xf32>
    fmk.cache_write %kq at %q into @kv[$L] k : tensor<?x32xf32>
    fmk.cache_write %vq at %q into @kv[$L] v : tensor<?x32xf32>
    fmk.yield %qr : tensor<?x64xf32>
  }
  %m$L = fmk.group "$Kmlp" (%gu) : (tensor<?x256xf32>) -> tensor<?x128xf32> {
  ^bb0(%a: tensor<?x256xf32>):
    %g = fmk.slice_cols %a[0] : tensor<?x256xf32> -> tensor<?x128xf32>
    %u = fmk.slice_cols %a[128] : tensor<?x256xf32> -> tensor<?x128xf32>
    %y = fmk.silu_mul %g, %u : tensor<?x128xf32>
    fmk.yield %y : tensor<?x128xf32>
  }
)",
                  {{"L", std::to_string(l)}, {"K", k}});
  }
  return R"(
func.func @decode(%h: tensor<?x64xf32>, %wn: tensor<64xf32>, %qkv: tensor<?x128xf32>, %wq: tensor<16xf32>,
                  %p: index, %s: tensor<f32>, %gu: tensor<?x256xf32>) {)" +
         body + "  return\n}\n";
}

TEST(GroupCodegen, SharedKernelNames) {
  // 9 groups, 3 kernel names: one function each, in order of first use.
  Compiled c(decoderModule(3, /*distinctNames=*/false));
  std::vector<std::string> want = {"fmk_norm_entry", "fmk_qkv_entry", "fmk_mlp_entry"};
  EXPECT_EQ(c.exe.functions, want);
  auto groups = c.parsed.groups();
  ASSERT_EQ(groups.size(), 9u);
  EXPECT_EQ(fm::cpu::entrySymbol(groups[3]), "fmk_norm_entry");
  EXPECT_EQ(fm::cpu::entrySymbol(groups[7]), "fmk_qkv_entry");
  ASSERT_TRUE(c.lib);
  for (size_t g = 0; g < 3; ++g)
    EXPECT_TRUE(c.entry(g));
}

/// The decoder's QKV group: two head norms, two RoPEs sharing one cos/sin
/// table, fake-quantized K and V written to the cache.
TEST(GroupCodegen, QkvGroupOfDecoder) {
  Compiled c(decoderModule(1, /*distinctNames=*/false));
  Entry qkv = c.entry(1);
  ASSERT_TRUE(qkv);
  EXPECT_EQ(c.exe.functions[1], "fmk_qkv_entry");
  const int64_t capacity = 40, hd = 16;
  float scale = 0.03f;
  for (int64_t rows : kRowCounts) {
    int64_t pos = 21;
    Rows x = randomRows(rows * 128, 41 + rows), w = randomRows(hd, 42, 0.5f, 1.5f);
    Rows q(rows * 64, NAN), ck(capacity * 32, 0.0f), cv(capacity * 32, 0.0f);
    void *args[] = {x.data(), w.data(), &scale, q.data(), ck.data(), cv.data()};
    qkv(args, rows, pos);
    std::vector<double> xq, xk;
    for (int64_t r = 0; r < rows; ++r) {
      xq.insert(xq.end(), x.begin() + r * 128, x.begin() + r * 128 + 64);
      xk.insert(xk.end(), x.begin() + r * 128 + 64, x.begin() + r * 128 + 96);
    }
    auto wantQ = refRope(refHeadNorm(xq, w, 64, hd, 1e-6), 64, pos, 4, hd, 1e4, false);
    auto wantK = refRope(refHeadNorm(xk, w, 32, hd, 1e-6), 32, pos, 2, hd, 1e4, false);
    expectClose(q, wantQ, "q = rope(head_norm)");
    auto quant = [&](double v) {
      return std::min(127.0, std::max(-128.0, std::nearbyint(v / scale))) * scale;
    };
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < 32; ++j) {
        float k = ck[(pos + r) * 32 + j], v = cv[(pos + r) * 32 + j];
        // K: on the grid, within one step of the reference (a value at a
        // rounding boundary may go either way).
        EXPECT_EQ(k, std::nearbyint(k / scale) * scale);
        EXPECT_LE(std::abs(k - quant(wantK[r * 32 + j])), scale * 1.001) << "k " << r << "," << j;
        float vq = std::min(127.0f, std::max(-128.0f, std::nearbyint(x[r * 128 + 96 + j] / scale)));
        EXPECT_EQ(v, vq * scale);
      }
    for (int64_t p = 0; p < capacity; ++p)
      if (p < pos || p >= pos + rows)
        for (int64_t j = 0; j < 32; ++j)
          ASSERT_TRUE(ck[p * 32 + j] == 0.0f && cv[p * 32 + j] == 0.0f) << "row " << p;
  }
  // The same module compiles again in the same context.
  auto again = fm::cpu::compileGroups(*c.parsed.module, CpuOptions{"native"});
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(again->functions, c.exe.functions);
}

TEST(GroupCodegen, CompileTimeOfTwentyOneGroups) {
  auto start = std::chrono::steady_clock::now();
  Compiled c(decoderModule(7, /*distinctNames=*/true));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(c.exe.functions.size(), 21u);
  for (size_t g = 0; g < 21; ++g)
    EXPECT_TRUE(c.entry(g));
  std::string stages;
  for (const std::string &line : c.progress)
    stages += "  " + line + "\n";
  std::printf("compileGroups: 21 groups (native) in %.3f s\n%s", seconds, stages.c_str());
  EXPECT_FALSE(c.progress.empty());
}

TEST(GroupCodegen, X86_64_V3SharedObject) {
  Compiled c(decoderModule(1, false), "x86-64-v3");
  EXPECT_EQ(c.exe.format, "elf-so");
  EXPECT_EQ(c.exe.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(c.exe.cpu, "x86-64-v3");
  const std::vector<uint8_t> &img = c.exe.image;
  ASSERT_GT(img.size(), 64u);
  EXPECT_EQ(std::memcmp(img.data(), "\x7f" "ELF", 4), 0);
  EXPECT_EQ(img[4], 2);                          // ELFCLASS64
  EXPECT_EQ(img[16] | img[17] << 8, 3);          // ET_DYN
  EXPECT_EQ(img[18] | img[19] << 8, 62);         // EM_X86_64
  if (llvm::sys::getProcessTriple().find("x86_64") == 0 &&
      llvm::sys::getHostCPUFeatures().lookup("avx2") &&
      llvm::sys::getHostCPUFeatures().lookup("fma")) {
    // The host runs v3 code: check the MLP kernel numerically.
    Entry mlp = c.entry(2);
    ASSERT_TRUE(mlp);
    Rows gu = randomRows(3 * 256, 31), y(3 * 128, NAN);
    void *args[] = {gu.data(), y.data()};
    mlp(args, 3, 0);
    std::vector<double> want(y.size());
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 128; ++j) {
        double g = gu[r * 256 + j], u = gu[r * 256 + 128 + j];
        want[r * 128 + j] = g / (1 + std::exp(-g)) * u;
      }
    expectClose(y, want, "silu_mul (x86-64-v3)");
  }
}

// The AArch64 targets: ELF shared objects for fmc's loader (the loader runs
// them under qemu-user: test/loader). The Apple one leaves x18 alone.
TEST(GroupCodegen, Aarch64ElfSharedObjects) {
  for (const char *cpu : {"aarch64", "aarch64-apple"}) {
    SCOPED_TRACE(cpu);
    const bool apple = std::string(cpu) == "aarch64-apple";
    Compiled c(decoderModule(1, false), cpu);
    EXPECT_EQ(c.exe.format, "elf-so");
    EXPECT_EQ(c.exe.triple, apple ? "arm64-apple-macosx13.0" : "aarch64-unknown-linux-gnu");
    EXPECT_EQ(c.exe.cpu, apple ? "apple-m1" : "generic");
    const std::vector<uint8_t> &img = c.exe.image;
    ASSERT_GT(img.size(), 64u);
    uint16_t type, machine;
    std::memcpy(&type, img.data() + 16, 2);
    std::memcpy(&machine, img.data() + 18, 2);
    EXPECT_EQ(std::memcmp(img.data(), "\177ELF\2\1", 6), 0); // ELF64, little-endian
    EXPECT_EQ(type, 3u);     // ET_DYN
    EXPECT_EQ(machine, 183u); // EM_AARCH64

    // scripts/install-deps.sh installs it (llvm-22-tools) on every machine
    // that runs the tests: its absence is a broken setup, not a skip.
    auto objdump = llvm::sys::findProgramByName("llvm-objdump-22");
    ASSERT_TRUE(objdump) << "llvm-objdump-22 is not on PATH: install llvm-22-tools "
                            "(scripts/install-deps.sh)";
    llvm::SmallString<128> obj, out;
    ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("fmk-test", "so", obj));
    ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("fmk-test", "txt", out));
    llvm::FileRemover removeObj(obj), removeOut(out);
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(obj, ec);
      ASSERT_FALSE(ec);
      os.write(reinterpret_cast<const char *>(img.data()), img.size());
    }
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out),
                                                  std::nullopt};
    int rc = llvm::sys::ExecuteAndWait(*objdump, {*objdump, "-d", obj}, std::nullopt,
                                       redirects);
    ASSERT_EQ(rc, 0);
    auto text = llvm::MemoryBuffer::getFile(out);
    ASSERT_TRUE(text);
    llvm::StringRef dis = (*text)->getBuffer();
    for (const char *sym : {"<fmk_norm_entry>:", "<fmk_qkv_entry>:", "<fmk_mlp_entry>:"})
      EXPECT_TRUE(dis.contains(sym)) << sym << " missing from\n" << dis.take_front(2000).str();
    EXPECT_TRUE(dis.contains("fmla")) << "no NEON FMA code";
    if (apple) { // no instruction names x18 or w18
      llvm::SmallVector<llvm::StringRef> lines;
      dis.split(lines, '\n');
      for (llvm::StringRef line : lines)
        for (const char *reg : {"x18", "w18"})
          for (size_t at = line.find(reg); at != llvm::StringRef::npos;
               at = line.find(reg, at + 1)) {
            const bool before = at > 0 && llvm::isHexDigit(line[at - 1]);
            const bool after = at + 3 < line.size() && llvm::isHexDigit(line[at + 3]);
            EXPECT_TRUE(before || after) << "x18 used: " << line.str();
          }
    }
  }
}

TEST(GroupCodegen, Errors) {
  Parsed bad(R"(
func.func @f(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> {
  %r = fmk.group "g" (%x, %pos) : (tensor<?x64xf32>, index) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %q: index):
    %y = fmk.rope %a at %q {num_heads = 4 : i64, head_dim = 8 : i64, theta = 1.0e+04 : f64, style = 1 : i32} : tensor<?x64xf32>
    fmk.yield %y : tensor<?x64xf32>
  }
  return %r : tensor<?x64xf32>
}
)");
  ASSERT_TRUE(bad.module);
  auto result = fm::cpu::compileGroups(*bad.module, CpuOptions{"native"});
  ASSERT_FALSE(result);
  std::string message = llvm::toString(result.takeError());
  EXPECT_NE(message.find("num_heads * head_dim = 64"), std::string::npos) << message;

  auto unknown = fm::cpu::compileGroups(*bad.module, CpuOptions{"riscv-something"});
  ASSERT_FALSE(unknown);
  EXPECT_NE(llvm::toString(unknown.takeError()).find("unknown CPU target"), std::string::npos);
}

} // namespace
