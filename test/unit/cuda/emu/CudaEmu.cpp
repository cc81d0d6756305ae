// The CUDA block emulator (cuda_emu.h, CudaEmu.h): fibers for CUDA threads,
// barriers for __syncthreads and the warp intrinsics, and a DriverApi table
// over host memory.
#define FM_CUDA_EMU_NO_MACROS
#include "CudaEmu.h"
#include "cuda_emu.h"
#include "hal/cuda/Nccl.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <ucontext.h>
#include <vector>

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#endif
#endif

using fm::hal::cuda::CUcontext;
using fm::hal::cuda::CUdevice;
using fm::hal::cuda::CUdeviceptr;
using fm::hal::cuda::CUevent;
using fm::hal::cuda::CUfunction;
using fm::hal::cuda::CUgraph;
using fm::hal::cuda::CUgraphExec;
using fm::hal::cuda::CUgraphExecUpdateResultInfo;
using fm::hal::cuda::CUmodule;
using fm::hal::cuda::CUresult;
using fm::hal::cuda::CUstream;
using fm::hal::cuda::DriverApi;

namespace fm_cuda_emu {

thread_local Dim3 tThreadIdx, tBlockIdx, tBlockDim, tGridDim;

namespace {

// Fibers for CUDA threads: a block's threads are fibers on the
// launching thread, run round-robin, each until it waits at a barrier or
// leaves the kernel. (Host threads per CUDA thread were tried first: the
// futex traffic of 256 threads meeting at every shuffle made a test run
// minutes.) Under ASan every switch is announced, so that it follows the
// stacks.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FM_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FM_EMU_ASAN)
#define FM_EMU_ASAN 1
#endif

constexpr size_t kStackBytes = 256 * 1024;

// A fiber's saved context, and the switch between two. On x86-64 the
// switch saves the callee-saved registers and swaps stacks (no system call;
// ucontext's swapcontext saves the signal mask with two, which made the
// emulated MoE test a minute); elsewhere it is ucontext's.
#if defined(__x86_64__)
extern "C" void fm_emu_switch(void **saveSp, void *loadSp);
asm(R"(
  .text
  .globl fm_emu_switch
  .type fm_emu_switch, @function
fm_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fm_emu_switch, .-fm_emu_switch
)");
struct Context {
  void *sp = nullptr;
};
void switchContext(Context &save, Context &load) { fm_emu_switch(&save.sp, load.sp); }
/// `c` starts `entry` (which never returns) on the stack when switched to.
void startContext(Context &c, char *stack, size_t bytes, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15);
  auto *slot = reinterpret_cast<uint64_t *>(top);
  slot[-1] = 0;                                   // entry's return address
  slot[-2] = reinterpret_cast<uintptr_t>(entry);  // fm_emu_switch's ret
  for (int i = 3; i <= 8; ++i)
    slot[-i] = 0;                                 // rbp rbx r12-r15
  c.sp = slot - 8;
}
#else
struct Context {
  ucontext_t uc;
};
void switchContext(Context &save, Context &load) { swapcontext(&save.uc, &load.uc); }
void startContext(Context &c, char *stack, size_t bytes, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
#endif

struct Fiber {
  Context ctx;
  char *stack = nullptr;
  bool done = false;
};

struct KernelEntry {
  std::string name;
  void *fn = nullptr;
  Thunk thunk = nullptr;
  std::vector<unsigned> argBytes;
};

struct Scheduler {
  Context main;
  const void *mainBottom = nullptr;
  size_t mainSize = 0;
  std::vector<Fiber> fibers;
  unsigned current = 0;
  const KernelEntry *kernel = nullptr;
  void **args = nullptr;
  /// Fibers that can run, in order: every thread at a block's start, then
  /// those a barrier's last arrival releases. A fiber waiting at a barrier
  /// is on that barrier's list, not here.
  std::vector<unsigned> runnable;
  size_t next = 0; // runnable[next] runs next
};

thread_local Scheduler *tSched = nullptr;

/// The current fiber back to the scheduler (`finished`: for good).
void yieldToScheduler(bool finished = false) {
  Scheduler &s = *tSched;
  Fiber &f = s.fibers[s.current];
#ifdef FM_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(finished ? nullptr : &fake, s.mainBottom, s.mainSize);
  switchContext(f.ctx, s.main);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  (void)finished;
  switchContext(f.ctx, s.main);
#endif
}

/// A barrier for the threads still in a block: a thread that returns from
/// the kernel drops out, as on a GPU. A phase's threads each get the OR of
/// the predicates they brought.
class Barrier {
public:
  void reset(unsigned n) {
    expected_ = n;
    arrived_ = 0;
    acc_ = false;
  }
  bool arrive(bool predicate) {
    acc_ = acc_ || predicate;
    if (++arrived_ == expected_) {
      complete();
    } else {
      waiters_.push_back(tSched->current);
      yieldToScheduler(); // resumed once complete() has run
    }
    return result_; // this phase's: the next cannot end without us
  }
  void drop() {
    --expected_;
    if (arrived_ > 0 && arrived_ == expected_)
      complete();
  }

private:
  void complete() {
    result_ = acc_;
    acc_ = false;
    arrived_ = 0;
    for (unsigned f : waiters_)
      tSched->runnable.push_back(f);
    waiters_.clear();
  }
  unsigned expected_ = 0, arrived_ = 0;
  bool acc_ = false, result_ = false;
  std::vector<unsigned> waiters_;
};

struct Warp {
  Barrier bar;
  unsigned size = 32;
  uint64_t slots[32] = {};
  float a[16][16] = {}, b[16][8] = {}; // mma.sync operands
};

/// One block's barriers, reused for every block of a grid.
struct Block {
  explicit Block(unsigned n) : threads(n), warps((n + 31) / 32) {
    for (size_t w = 0; w < warps.size(); ++w) {
      warps[w] = std::make_unique<Warp>();
      warps[w]->size = std::min(32u, n - unsigned(w) * 32);
    }
  }
  /// Every thread in, for the next block.
  void arm() {
    bar.reset(threads);
    for (auto &w : warps)
      w->bar.reset(w->size);
  }
  unsigned threads;
  Barrier bar;
  std::vector<std::unique_ptr<Warp>> warps;
};

thread_local Block *tBlock = nullptr;
thread_local unsigned tLinear = 0;

Warp &myWarp() { return *tBlock->warps[tLinear / 32]; }

std::mutex gCountsMutex;
Counts gCounts;

std::map<std::string, KernelEntry> &registry() {
  static std::map<std::string, KernelEntry> r;
  return r;
}

/// Stacks for the fibers, kept between launches.
char *fiberStack(unsigned i) {
  static std::mutex m;
  static std::vector<std::unique_ptr<char[]>> stacks;
  std::lock_guard<std::mutex> l(m);
  while (stacks.size() <= i)
    stacks.emplace_back(new char[kStackBytes]);
  return stacks[i].get();
}

void fiberMain() {
  Scheduler &s = *tSched;
#ifdef FM_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &s.mainBottom, &s.mainSize);
#endif
  s.kernel->thunk(s.kernel->fn, s.args);
  // Out of the block: the barriers stop counting this thread.
  tBlock->bar.drop();
  myWarp().bar.drop();
  s.fibers[s.current].done = true;
  yieldToScheduler(/*finished=*/true); // never resumed
}

/// Runs every block of the grid, one after another, its threads as fibers
/// of the calling thread.
void runGrid(const KernelEntry &k, Dim3 grid, Dim3 block, void **args) {
  static std::mutex oneAtATime; // the fiber stacks are shared
  std::lock_guard<std::mutex> lock(oneAtATime);
  const unsigned n = block.x * block.y * block.z;
  Block b(n);
  Scheduler s;
  s.kernel = &k;
  s.args = args;
  s.fibers.resize(n);
  Scheduler *const outerSched = tSched;
  Block *const outerBlock = tBlock;
  tSched = &s;
  tBlock = &b;
  tBlockDim = block;
  tGridDim = grid;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        tBlockIdx = {x, y, z};
        b.arm();
        for (unsigned i = 0; i < n; ++i) {
          Fiber &f = s.fibers[i];
          f.done = false;
          f.stack = fiberStack(i);
          startContext(f.ctx, f.stack, kStackBytes, fiberMain);
        }
        unsigned live = n;
        s.runnable.clear();
        s.next = 0;
        for (unsigned i = 0; i < n; ++i)
          s.runnable.push_back(i);
        while (s.next < s.runnable.size()) {
          const unsigned i = s.runnable[s.next++];
          Fiber &f = s.fibers[i];
          s.current = i;
          tLinear = i;
          tThreadIdx = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
#ifdef FM_EMU_ASAN
          void *fake = nullptr;
          __sanitizer_start_switch_fiber(&fake, f.stack, kStackBytes);
          switchContext(s.main, f.ctx);
          __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
          switchContext(s.main, f.ctx);
#endif
          if (f.done)
            --live;
        }
        // Nothing runnable: every thread finished, or the rest wait forever.
        if (live > 0) {
          std::fprintf(stderr,
                       "cuda emulator: %s block (%u, %u, %u): %u threads wait at "
                       "barriers no other thread reaches\n",
                       k.name.c_str(), x, y, z, live);
          std::abort();
        }
      }
  tSched = outerSched;
  tBlock = outerBlock;
  std::lock_guard<std::mutex> l(gCountsMutex);
  gCounts.launches += 1;
  gCounts.threads += int64_t(n) * grid.x * grid.y * grid.z;
}

} // namespace

void syncThreads() { tBlock->bar.arrive(false); }
bool syncThreadsOr(bool predicate) { return tBlock->bar.arrive(predicate); }
bool warpAny(bool predicate) { return myWarp().bar.arrive(predicate); }
unsigned laneId() { return tLinear % 32; }

uint64_t warpExchange(uint64_t value, unsigned from) {
  Warp &w = myWarp();
  w.slots[laneId()] = value;
  w.bar.arrive(false);
  const uint64_t r = from < w.size ? w.slots[from] : value;
  w.bar.arrive(false); // every lane has read before any writes again
  return r;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(man), -24);
    return sign ? -f : f;
  }
  uint32_t bits = exp == 31 ? sign | 0x7f800000u | (man << 13)
                            : sign | ((exp + 112) << 23) | (man << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) // inf or nan
    return uint16_t(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) // rounds to 65536 or more: inf
    return uint16_t(sign | 0x7c00);
  if (ax < 0x38800000u) { // below the smallest normal: a multiple of 2^-24
    const float a = std::fabs(f) * 16777216.0f; // exact scaling
    return uint16_t(sign | uint16_t(std::nearbyint(a)));
  }
  const uint32_t exp = (ax >> 23) - 112, man = ax & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  const uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
    ++h; // may carry into the exponent, as it should
  return uint16_t(sign | h);
}

void mma16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  Warp &w = myWarp();
  const unsigned lane = laneId(), g = lane / 4, t = lane % 4;
  auto lo = [](uint32_t v) { return halfToFloat(uint16_t(v & 0xffff)); };
  auto hi = [](uint32_t v) { return halfToFloat(uint16_t(v >> 16)); };
  // A (row-major 16 x 16): (g, 2t..), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..).
  const unsigned rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
  for (int i = 0; i < 4; ++i) {
    w.a[rows[i]][cols[i]] = lo(a[i]);
    w.a[rows[i]][cols[i] + 1] = hi(a[i]);
  }
  // B (16 x 8, column n = g): k = 2t.., then 2t+8...
  w.b[2 * t][g] = lo(b[0]);
  w.b[2 * t + 1][g] = hi(b[0]);
  w.b[2 * t + 8][g] = lo(b[1]);
  w.b[2 * t + 9][g] = hi(b[1]);
  w.bar.arrive(false);
  // C: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
  const unsigned crow[4] = {g, g, g + 8, g + 8}, ccol[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
  float d[4];
  for (int i = 0; i < 4; ++i) {
    float s = 0.0f;
    for (int k = 0; k < 16; ++k)
      s += w.a[crow[i]][k] * w.b[k][ccol[i]]; // f16 products are exact in f32
    d[i] = c[i] + s;
  }
  w.bar.arrive(false); // every lane has read the operands
  for (int i = 0; i < 4; ++i)
    c[i] = d[i];
}

int registerKernel(const char *name, void *fn, Thunk thunk, const unsigned *argBytes,
                   int numArgs) {
  KernelEntry &e = registry()[name];
  e.name = name;
  e.fn = fn;
  e.thunk = thunk;
  e.argBytes.assign(argBytes, argBytes + numArgs);
  return 0;
}

bool installIfAsked() {
  if (!std::getenv("FM_CUDA_EMULATE"))
    return false;
  fm::hal::cuda::setDriverForTests(&driver());
  return true;
}

Counts counts() {
  std::lock_guard<std::mutex> l(gCountsMutex);
  return gCounts;
}

// --- the driver ---------------------------------------------------------------

namespace {

constexpr CUresult kInvalidValue = 1, kInvalidHandle = 400, kNotFound = 500,
                   kCaptureUnsupported = 900, kGraphUpdateFailure = 910;

/// A launch, a device copy or an emulated NCCL all-reduce, as a graph
/// holds it: the kernel's arguments copied by the sizes of its parameters.
struct Op {
  const KernelEntry *kernel = nullptr; // null: a copy, or the all-reduce
  bool allReduce = false;              // `bytes / 4` floats from src, summed into dst
  Dim3 grid, block;
  std::vector<uint64_t> args;
  CUdeviceptr dst = 0, src = 0;
  size_t bytes = 0;
};

fm::Communicator *gNcclRanks = nullptr; // installNccl's

struct Graph {
  std::vector<Op> ops;
};

std::mutex gDriverMutex;
std::map<CUstream, Graph *> gCapturing; // streams being captured

void runOp(const Op &op) {
  if (op.allReduce) {
    float *data = reinterpret_cast<float *>(op.dst);
    if (op.src != op.dst)
      std::memmove(data, reinterpret_cast<const void *>(op.src), op.bytes);
    const int64_t n = int64_t(op.bytes / sizeof(float));
    if (!gNcclRanks) {
      std::fprintf(stderr, "fm_cuda_emu: an NCCL all-reduce ran after installNccl(nullptr)\n");
      std::abort();
    }
    const fm::Status s = gNcclRanks->allReduceSum(data, n);
    if (!s.isOk()) { // a stream cannot return it: end the ranks
      std::fprintf(stderr, "fm_cuda_emu: NCCL all-reduce: %s\n", s.message().c_str());
      gNcclRanks->abort(1);
      std::abort();
    }
    std::lock_guard<std::mutex> l(gCountsMutex);
    gCounts.ncclAllReduces += 1;
    gCounts.ncclFloats += n;
    return;
  }
  if (!op.kernel) {
    std::memmove(reinterpret_cast<void *>(op.dst), reinterpret_cast<const void *>(op.src),
                 op.bytes);
    return;
  }
  std::vector<void *> ptrs;
  std::vector<uint64_t> args = op.args;
  for (uint64_t &a : args)
    ptrs.push_back(&a);
  runGrid(*op.kernel, op.grid, op.block, ptrs.data());
}

Graph *capturing(CUstream s) {
  std::lock_guard<std::mutex> l(gDriverMutex);
  auto it = gCapturing.find(s);
  return it == gCapturing.end() ? nullptr : it->second;
}

CUresult ok() { return 0; }

CUresult emuInit(unsigned) { return ok(); }
CUresult emuVersion(int *v) {
  *v = 12080;
  return ok();
}
CUresult emuErrorName(CUresult r, const char **s) {
  switch (r) {
  case 0: *s = "CUDA_SUCCESS"; break;
  case kInvalidValue: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case kInvalidHandle: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
  case kNotFound: *s = "CUDA_ERROR_NOT_FOUND"; break;
  case kCaptureUnsupported: *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
  case kGraphUpdateFailure: *s = "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"; break;
  default: *s = nullptr; return kInvalidValue;
  }
  return ok();
}
CUresult emuErrorString(CUresult r, const char **s) {
  *s = r == kNotFound ? "named symbol not found (not registered with the emulator)"
                      : "emulated";
  return ok();
}
CUresult emuDeviceCount(int *n) {
  *n = 1;
  return ok();
}
CUresult emuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *d = 0;
  return ok();
}
CUresult emuDeviceName(char *name, int size, CUdevice) {
  std::snprintf(name, size_t(size), "emulated sm_80 (fibers on the host)");
  return ok();
}
CUresult emuAttribute(int *v, int attr, CUdevice) {
  using namespace fm::hal::cuda;
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 8; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 1000000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 64; break;
  default: *v = 0;
  }
  return ok();
}
CUresult emuTotalMem(size_t *bytes, CUdevice) {
  *bytes = size_t(4) << 30;
  return ok();
}
CUresult emuRetain(CUcontext *c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(uintptr_t(0x1000));
  return ok();
}
CUresult emuRelease(CUdevice) { return ok(); }
CUresult emuSetCurrent(CUcontext) { return ok(); }
CUresult emuCtxSync() { return ok(); }
CUresult emuAlloc(CUdeviceptr *p, size_t bytes) {
  // Not zeroed, as cuMemAlloc does not: a kernel that reads what nobody
  // wrote sees garbage here too.
  void *m = std::malloc(bytes ? bytes : 1);
  if (!m)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  std::memset(m, 0xa5, bytes);
  *p = reinterpret_cast<CUdeviceptr>(m);
  return ok();
}
CUresult emuFree(CUdeviceptr p) {
  std::free(reinterpret_cast<void *>(p));
  return ok();
}
CUresult emuMemset(CUdeviceptr p, unsigned char v, size_t bytes) {
  std::memset(reinterpret_cast<void *>(p), v, bytes);
  return ok();
}
CUresult emuHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return ok();
}
CUresult emuDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return ok();
}
CUresult emuHtoDSync(CUdeviceptr dst, const void *src, size_t bytes) {
  {
    std::lock_guard<std::mutex> l(gCountsMutex);
    gCounts.htod += 1;
  }
  return emuHtoD(dst, src, bytes);
}
CUresult emuDtoHSync(void *dst, CUdeviceptr src, size_t bytes) {
  {
    std::lock_guard<std::mutex> l(gCountsMutex);
    gCounts.dtoh += 1;
  }
  return emuDtoH(dst, src, bytes);
}
CUresult emuHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
  if (capturing(s)) // a graph cannot hold a copy from pageable memory
    return kCaptureUnsupported;
  return emuHtoD(dst, src, bytes);
}
CUresult emuDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  Op op;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  if (Graph *g = capturing(s)) {
    g->ops.push_back(op);
    return ok();
  }
  runOp(op);
  return ok();
}
CUresult emuModuleLoad(CUmodule *m, const void *, unsigned, int *, void **) {
  *m = reinterpret_cast<CUmodule>(uintptr_t(0x2000));
  return ok();
}
CUresult emuModuleUnload(CUmodule) { return ok(); }
CUresult emuGetFunction(CUfunction *f, CUmodule, const char *name) {
  auto it = registry().find(name);
  if (it == registry().end())
    return kNotFound;
  *f = reinterpret_cast<CUfunction>(&it->second);
  return ok();
}
CUresult emuLaunch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned, CUstream s, void **params, void **) {
  const auto *k = reinterpret_cast<const KernelEntry *>(f);
  if (!k || bx * by * bz == 0 || bx * by * bz > 1024 || gx * gy * gz == 0 ||
      (!k->argBytes.empty() && !params))
    return kInvalidValue;
  Op op;
  op.kernel = k;
  op.grid = {gx, gy, gz};
  op.block = {bx, by, bz};
  for (size_t i = 0; i < k->argBytes.size(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, params[i], k->argBytes[i]);
    op.args.push_back(v);
  }
  if (Graph *g = capturing(s)) {
    g->ops.push_back(std::move(op));
    return ok();
  }
  runOp(op);
  return ok();
}
CUresult emuStreamCreate(CUstream *s, unsigned) {
  static std::atomic<uintptr_t> next{0x3000};
  *s = reinterpret_cast<CUstream>(next.fetch_add(16));
  return ok();
}
CUresult emuStreamDestroy(CUstream) { return ok(); }
CUresult emuStreamSync(CUstream s) {
  if (capturing(s))
    return kCaptureUnsupported;
  std::lock_guard<std::mutex> l(gCountsMutex);
  gCounts.streamSyncs += 1;
  return ok();
}

using Clock = std::chrono::steady_clock;
CUresult emuEventCreate(CUevent *e, unsigned) {
  *e = reinterpret_cast<CUevent>(new Clock::time_point(Clock::now()));
  return ok();
}
CUresult emuEventDestroy(CUevent e) {
  delete reinterpret_cast<Clock::time_point *>(e);
  return ok();
}
CUresult emuEventRecord(CUevent e, CUstream) {
  *reinterpret_cast<Clock::time_point *>(e) = Clock::now();
  return ok();
}
CUresult emuEventSync(CUevent) { return ok(); }
CUresult emuElapsed(float *ms, CUevent a, CUevent b) {
  *ms = std::chrono::duration<float, std::milli>(*reinterpret_cast<Clock::time_point *>(b) -
                                                 *reinterpret_cast<Clock::time_point *>(a))
            .count();
  return ok();
}

CUresult emuBeginCapture(CUstream s, int) {
  std::lock_guard<std::mutex> l(gDriverMutex);
  if (gCapturing.count(s))
    return kInvalidValue;
  gCapturing[s] = new Graph;
  return ok();
}
CUresult emuEndCapture(CUstream s, CUgraph *g) {
  std::lock_guard<std::mutex> l(gDriverMutex);
  auto it = gCapturing.find(s);
  if (it == gCapturing.end())
    return kInvalidValue;
  *g = reinterpret_cast<CUgraph>(it->second);
  gCapturing.erase(it);
  return ok();
}
CUresult emuInstantiate(CUgraphExec *e, CUgraph g, unsigned long long) {
  *e = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<Graph *>(g)));
  return ok();
}
/// As the driver: the same nodes (kernels, geometry, copies) take the new
/// graph's arguments; anything else is a failure the caller must handle.
CUresult emuUpdate(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  Graph &exec = *reinterpret_cast<Graph *>(e);
  const Graph &with = *reinterpret_cast<Graph *>(g);
  bool same = exec.ops.size() == with.ops.size();
  for (size_t i = 0; same && i < with.ops.size(); ++i) {
    const Op &a = exec.ops[i], &b = with.ops[i];
    same = a.kernel == b.kernel && a.grid.x == b.grid.x && a.grid.y == b.grid.y &&
           a.grid.z == b.grid.z && a.block.x == b.block.x && a.block.y == b.block.y &&
           a.block.z == b.block.z && a.allReduce == b.allReduce &&
           (a.kernel || a.bytes == b.bytes);
  }
  if (info)
    *info = {same ? 0 : 2, nullptr, nullptr}; // 2: topology changed
  if (!same)
    return kGraphUpdateFailure;
  exec.ops = with.ops;
  return ok();
}
CUresult emuGraphLaunch(CUgraphExec e, CUstream s) {
  if (capturing(s))
    return kCaptureUnsupported;
  for (const Op &op : reinterpret_cast<Graph *>(e)->ops)
    runOp(op);
  std::lock_guard<std::mutex> l(gCountsMutex);
  gCounts.graphLaunches += 1;
  return ok();
}
CUresult emuGraphDestroy(CUgraph g) {
  delete reinterpret_cast<Graph *>(g);
  return ok();
}
CUresult emuExecDestroy(CUgraphExec e) {
  if (!e)
    return kInvalidHandle;
  delete reinterpret_cast<Graph *>(e);
  return ok();
}

// --- the emulated NCCL ------------------------------------------------------

using fm::hal::cuda::ncclComm_t;
using fm::hal::cuda::ncclResult_t;
using fm::hal::cuda::ncclUniqueId;
constexpr ncclResult_t kNcclInvalidArgument = 4, kNcclInvalidUsage = 5;
constexpr char kNcclIdMagic[] = "fm_cuda_emu nccl";

ncclResult_t ncclVersion(int *v) {
  *v = 22105; // "NCCL 2.21.5": what the version text is made from
  return 0;
}
ncclResult_t ncclId(ncclUniqueId *id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, kNcclIdMagic, sizeof kNcclIdMagic);
  return 0;
}
ncclResult_t ncclInit(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  if (std::memcmp(id.internal, kNcclIdMagic, sizeof kNcclIdMagic) != 0)
    return kNcclInvalidArgument; // not rank 0's id
  if (!gNcclRanks || nranks != gNcclRanks->size() || rank != gNcclRanks->rank())
    return kNcclInvalidArgument;
  *comm = reinterpret_cast<ncclComm_t>(uintptr_t(0x6000 + rank));
  return 0;
}
ncclResult_t ncclDestroy(ncclComm_t) { return 0; }
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                           ncclComm_t comm, CUstream s) {
  if (type != fm::hal::cuda::ncclFloat32 || op != fm::hal::cuda::ncclSum || !comm)
    return kNcclInvalidArgument; // the emulator sums floats only
  if (!gNcclRanks)
    return kNcclInvalidUsage;
  Op o;
  o.allReduce = true;
  o.dst = CUdeviceptr(uintptr_t(recv));
  o.src = CUdeviceptr(uintptr_t(send));
  o.bytes = count * sizeof(float);
  if (Graph *g = capturing(s)) {
    g->ops.push_back(o);
    return 0;
  }
  runOp(o);
  return 0;
}
ncclResult_t ncclGroup() { return 0; } // each all-reduce runs as it is issued
const char *ncclError(ncclResult_t r) {
  return r == kNcclInvalidArgument ? "invalid argument (emulated NCCL)"
                                   : "invalid usage (emulated NCCL)";
}

const fm::hal::cuda::NcclApi kEmulatedNccl = {ncclVersion, ncclId,        ncclInit,
                                              ncclDestroy, ncclAllReduce, ncclGroup,
                                              ncclGroup,   ncclError};

} // namespace

void installNccl(fm::Communicator *ranks) {
  gNcclRanks = ranks;
  fm::hal::cuda::setNcclForTests(ranks ? &kEmulatedNccl : nullptr);
}

const DriverApi &driver() {
  static const DriverApi api = [] {
    DriverApi a{};
    a.cuInit = emuInit;
    a.cuDriverGetVersion = emuVersion;
    a.cuGetErrorName = emuErrorName;
    a.cuGetErrorString = emuErrorString;
    a.cuDeviceGetCount = emuDeviceCount;
    a.cuDeviceGet = emuDeviceGet;
    a.cuDeviceGetName = emuDeviceName;
    a.cuDeviceGetAttribute = emuAttribute;
    a.cuDeviceTotalMem = emuTotalMem;
    a.cuDevicePrimaryCtxRetain = emuRetain;
    a.cuDevicePrimaryCtxRelease = emuRelease;
    a.cuCtxSetCurrent = emuSetCurrent;
    a.cuCtxSynchronize = emuCtxSync;
    a.cuMemAlloc = emuAlloc;
    a.cuMemFree = emuFree;
    a.cuMemsetD8 = emuMemset;
    a.cuMemcpyHtoD = emuHtoDSync;
    a.cuMemcpyDtoH = emuDtoHSync;
    a.cuMemcpyHtoDAsync = emuHtoDAsync;
    a.cuMemcpyDtoDAsync = emuDtoDAsync;
    a.cuModuleLoadDataEx = emuModuleLoad;
    a.cuModuleUnload = emuModuleUnload;
    a.cuModuleGetFunction = emuGetFunction;
    a.cuLaunchKernel = emuLaunch;
    a.cuStreamCreate = emuStreamCreate;
    a.cuStreamDestroy = emuStreamDestroy;
    a.cuStreamSynchronize = emuStreamSync;
    a.cuEventCreate = emuEventCreate;
    a.cuEventDestroy = emuEventDestroy;
    a.cuEventRecord = emuEventRecord;
    a.cuEventSynchronize = emuEventSync;
    a.cuEventElapsedTime = emuElapsed;
    a.cuStreamBeginCapture = emuBeginCapture;
    a.cuStreamEndCapture = emuEndCapture;
    a.cuGraphInstantiate = emuInstantiate;
    a.cuGraphExecUpdate = emuUpdate;
    a.cuGraphLaunch = emuGraphLaunch;
    a.cuGraphDestroy = emuGraphDestroy;
    a.cuGraphExecDestroy = emuExecDestroy;
    return a;
  }();
  return api;
}

} // namespace fm_cuda_emu
