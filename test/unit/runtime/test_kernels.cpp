// Stand-ins for generated code, built as a shared object that the executor
// tests embed into artifacts ("elf-so") and dispatch into. Shapes are baked
// in, as the compiler bakes them into generated kernels.
#include <atomic>
#include <cstdint>
#include <cstring>

namespace {
// The test model: K and V rows of kKvWidth floats inside a fused QKV
// buffer of kQkvStride floats per row.
constexpr int64_t kKvWidth = 8;
constexpr int64_t kQkvStride = 32;
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

/// args: a buffer; writes the call's rows and pos into its first two
/// floats and adds 1 to the third (counts calls).
__attribute__((visibility("default"))) void
fmt_record(void **args, int64_t rows, int64_t pos) {
  float *out = static_cast<float *>(args[0]);
  out[0] = static_cast<float>(rows);
  out[1] = static_cast<float>(pos);
  out[2] += 1.0f;
}

/// args: a buffer; writes a number unique to the calling thread (1, 2, ...)
/// into its first float.
__attribute__((visibility("default"))) void
fmt_thread_tag(void **args, int64_t, int64_t) {
  static std::atomic<int> next{0};
  thread_local int id = ++next;
  static_cast<float *>(args[0])[0] = static_cast<float>(id);
}

} // extern "C"
