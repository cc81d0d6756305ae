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
