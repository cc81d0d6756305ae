// Stand-ins for generated code, built as a shared object that the executor
// tests embed into artifacts ("elf-so") and dispatch into. Shapes are baked
// in, as the compiler bakes them into generated kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {
// The test model: K and V rows of kKvWidth floats inside a fused QKV
// buffer of kQkvStride floats per row.
constexpr int64_t kKvWidth = 8;
constexpr int64_t kQkvStride = 32;
// The quantized test model (QuantModel.h): K and V rows of 64 floats inside
// a 256-float QKV row.
constexpr int64_t kWideKvWidth = 64;
constexpr int64_t kWideQkvStride = 256;

// As the compiler's cache_write with a scale: clamp(roundeven(x / s),
// -128, 127) (nearbyint rounds half to even in the default mode).
int8_t toInt8(float x, float s) {
  float q = std::nearbyint(x / s);
  return static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, q)));
}
} // namespace

extern "C" {

/// args: K rows (arena), V rows (arena), cache K slot, cache V slot. Writes
/// rows pos .. pos + rows - 1 of the cache slot.
__attribute__((visibility("default"))) void
fmt_write_kv(void **args, int64_t rows, int64_t pos) {
  const float *k = static_cast<const float *>(args[0]);
  const float *v = static_cast<const float *>(args[1]);
  float *cacheK = static_cast<float *>(args[2]);
  float *cacheV = static_cast<float *>(args[3]);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(cacheK + (pos + r) * kKvWidth, k + r * kQkvStride,
                kKvWidth * sizeof(float));
    std::memcpy(cacheV + (pos + r) * kKvWidth, v + r * kQkvStride,
                kKvWidth * sizeof(float));
  }
}

/// The quantized model's f32 KV write. args: K rows, V rows (arena), cache
/// K slot, cache V slot (f32 rows of kWideKvWidth).
__attribute__((visibility("default"))) void
fmt_write_kv_wide(void **args, int64_t rows, int64_t pos) {
  const float *k = static_cast<const float *>(args[0]);
  const float *v = static_cast<const float *>(args[1]);
  float *cacheK = static_cast<float *>(args[2]);
  float *cacheV = static_cast<float *>(args[3]);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(cacheK + (pos + r) * kWideKvWidth, k + r * kWideQkvStride,
                kWideKvWidth * sizeof(float));
    std::memcpy(cacheV + (pos + r) * kWideKvWidth, v + r * kWideQkvStride,
                kWideKvWidth * sizeof(float));
  }
}

/// The quantized model's int8 KV write, as generated code does it. args: K
/// rows, V rows (arena), k_scale, v_scale (0-d f32 weights), cache K slot,
/// cache V slot (int8 rows of kWideKvWidth).
__attribute__((visibility("default"))) void
fmt_write_kv_i8(void **args, int64_t rows, int64_t pos) {
  const float *k = static_cast<const float *>(args[0]);
  const float *v = static_cast<const float *>(args[1]);
  const float kScale = *static_cast<const float *>(args[2]);
  const float vScale = *static_cast<const float *>(args[3]);
  int8_t *cacheK = static_cast<int8_t *>(args[4]);
  int8_t *cacheV = static_cast<int8_t *>(args[5]);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kWideKvWidth; ++c) {
      cacheK[(pos + r) * kWideKvWidth + c] =
          toInt8(k[r * kWideQkvStride + c], kScale);
      cacheV[(pos + r) * kWideKvWidth + c] =
          toInt8(v[r * kWideQkvStride + c], vScale);
    }
}

/// args: a buffer; writes the call's rows and pos into its first two
/// floats and adds 1 to the third (counts calls).
__attribute__((visibility("default"))) void
fmt_record(void **args, int64_t rows, int64_t pos) {
  float *out = static_cast<float *>(args[0]);
  out[0] = static_cast<float>(rows);
  out[1] = static_cast<float>(pos);
  out[2] += 1.0f;
}

/// args: a buffer; writes a number that tells the calling thread from the
/// other live threads into its first float.
__attribute__((visibility("default"))) void
fmt_thread_tag(void **args, int64_t, int64_t) {
  // The running thread's id, as a small exact float, from the kernel itself
  // (gettid): generated code imports only the runtime's fixed table
  // (hal/cpu/ElfLoader.h), and has no thread-local storage.
  long tid;
#if defined(__x86_64__)
  __asm__ volatile("syscall" : "=a"(tid) : "a"(186L) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = 178;
  register long x0 __asm__("x0");
  __asm__ volatile("svc 0" : "=r"(x0) : "r"(x8) : "memory");
  tid = x0;
#else
#error "fmt_thread_tag: gettid for this machine"
#endif
  static_cast<float *>(args[0])[0] = static_cast<float>((tid & 0xfffff) + 1);
}

/// args: x (one double), out (two doubles): sin x and cos x, from libm
/// through the image's PLT (generated RoPE code calls sincos like this).
__attribute__((visibility("default"))) void
fmt_sincos(void **args, int64_t, int64_t) {
  const double x = *static_cast<const double *>(args[0]);
  double *out = static_cast<double *>(args[1]);
  out[0] = std::sin(x);
  out[1] = std::cos(x);
}

} // extern "C"

namespace {
float twice(float x) { return 2.0f * x; }
float square(float x) { return x * x; }
// Function addresses in data: relative relocations, as jump tables make.
float (*const volatile kTable[])(float) = {twice, square};
} // namespace

extern "C" {

/// args: x (one float), out (two floats): 2x and x*x through a table of
/// function pointers (relative relocations in the image's data).
__attribute__((visibility("default"))) void
fmt_table(void **args, int64_t, int64_t) {
  const float x = *static_cast<const float *>(args[0]);
  float *out = static_cast<float *>(args[1]);
  out[0] = kTable[0](x);
  out[1] = kTable[1](x);
}

} // extern "C"
