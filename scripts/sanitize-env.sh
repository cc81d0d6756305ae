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
# the slow unwinder and the Vulkan loader's suppressions
# (scripts/lsan-vulkan.supp says why); every other stage runs with no
# Vulkan driver visible (FM_NO_VULKAN_DRIVER_ENV: the loader finds none), so
# that a process that does not need a device never loads one.
_fm_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FM_VULKAN_SANITIZE_ENV=(ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
                        LSAN_OPTIONS="suppressions=$_fm_src/scripts/lsan-vulkan.supp")
FM_NO_VULKAN_DRIVER_ENV=(VK_ICD_FILENAMES=/nonexistent/fm-no-vulkan-driver.json)
unset _fm_src
