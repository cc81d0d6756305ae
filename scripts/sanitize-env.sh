# Sourced by the sanitizer scripts (check-sanitize.sh, check-tsan.sh): every
# report aborts its process (a signal: `not` and the test scripts see a
# crash, not a clean error exit), so that it fails its test.
#
# detect_stack_use_after_return costs little at -O1. allow_user_poisoning=0
# is the one relaxation: LLVM's BumpPtrAllocator poisons its slabs in header
# code that is instrumented where fmc's files inline it but not in the
# prebuilt libLLVM/libMLIR, so its manual poisoning is wrong in this mixed
# build (cmake/FmFuzz.cmake has the case); fmc poisons nothing by hand.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:allow_user_poisoning=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1
FM_SANITIZE_COMPILERS=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
# The processes that load a Vulkan driver (check-sanitize.sh's vulkan
# stage: the ctest label `vulkan`, lit's gpu/ and e2e/device.test) run with
# that driver preloaded (fm_vulkan_sanitize_env ICD_JSON): the Vulkan loader
# unloads its drivers in vkDestroyInstance, and a block a driver keeps in a
# static of its own is then unreachable at exit and reported as a leak "in
# an unloaded module" (Mesa 22.3's lavapipe on AMD Zen: util_cpu_detect's
# 128-byte L3 affinity mask). Preloaded, the driver stays mapped for the
# process's life, as its statics do, so LeakSanitizer sees what points at
# such a block, and frames in the driver keep their module's name for
# scripts/lsan-vulkan.supp. Every other stage runs with no Vulkan driver
# visible (FM_NO_VULKAN_DRIVER_ENV: the loader finds none), so that a
# process that does not need a device never loads one.
_fm_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FM_NO_VULKAN_DRIVER_ENV=(VK_ICD_FILENAMES=/nonexistent/fm-no-vulkan-driver.json)
# fm_vulkan_sanitize_env ICD_JSON: the variables (one per line) for
# processes that load the driver ICD_JSON names (VK_ICD_FILENAMES too).
fm_vulkan_sanitize_env() {
  local lib
  lib=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ICD"]["library_path"])' "$1") ||
    { echo "sanitize-env: cannot read the Vulkan driver manifest $1" >&2; return 1; }
  printf '%s\n' "VK_ICD_FILENAMES=$1" "LD_PRELOAD=$lib" \
    "LSAN_OPTIONS=suppressions=$_FM_SRC_ROOT/scripts/lsan-vulkan.supp"
}
_FM_SRC_ROOT=$_fm_src
# The lavapipe driver CI machines have (mesa-vulkan-drivers).
FM_LAVAPIPE_ICD=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -1)
unset _fm_src
