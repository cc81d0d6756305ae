#!/usr/bin/env bash
# A Vulkan driver's own leak under ASan, on any CPU: test/icd/test_icd.c (fm_leaky_icd)
# keeps a block in a static the way Mesa's lavapipe does on AMD Zen (the
# leak that failed check-sanitize there), and the Vulkan loader unloads it.
#   1. With the sanitizer run's default options, fm-run --list-devices (it
#      probes Vulkan) fails with LeakSanitizer's report of those 128 bytes:
#      the reproduction is real.
#   2. With the vulkan stage's environment for that driver
#      (scripts/sanitize-env.sh: fm_vulkan_sanitize_env, the driver
#      preloaded) it passes and lists Vulkan as absent (the driver reports no
#      device), with no suppression of its own (the test driver is not
#      lavapipe): the block is reachable while the driver is mapped.
#   3. With no driver visible (FM_NO_VULKAN_DRIVER_ENV, every other stage)
#      it passes with the default options.
#   vulkan_driver_leak.sh FM_RUN ICD_JSON
set -uo pipefail
FM_RUN=${1:?usage: vulkan_driver_leak.sh FM_RUN ICD_JSON}
ICD=${2:?usage: vulkan_driver_leak.sh FM_RUN ICD_JSON}
source "$(dirname "$0")/../../scripts/sanitize-env.sh"
# Mesa's implicit device-selection layer reads properties the test driver
# does not have.
export NODEVICE_SELECT=1
# The stage's own settings (it runs this test) are not the cases'.
clean=(env -u LD_PRELOAD -u LSAN_OPTIONS -u VK_ICD_FILENAMES -u VK_DRIVER_FILES)
fail=0
out=$("${clean[@]}" VK_ICD_FILENAMES="$ICD" timeout 120 "$FM_RUN" --list-devices 2>&1)
rc=$?
if [ $rc -eq 0 ] || ! grep -q "LeakSanitizer: detected memory leaks" <<<"$out" ||
   ! grep -q "128 byte(s) in 1 object(s)" <<<"$out"; then
  echo "FAIL: with the default options the driver's leak was not reported (exit $rc):"
  echo "$out"
  fail=1
fi
mapfile -t vars < <(fm_vulkan_sanitize_env "$ICD")
out=$("${clean[@]}" "${vars[@]}" timeout 120 "$FM_RUN" --list-devices 2>&1)
rc=$?
if [ $rc -ne 0 ] || ! grep -qE '^vulkan +absent' <<<"$out" || grep -q "Suppressions used" <<<"$out"; then
  echo "FAIL: with the vulkan stage's environment for this driver (exit $rc):"
  echo "$out"
  fail=1
fi
out=$("${clean[@]}" "${FM_NO_VULKAN_DRIVER_ENV[@]}" timeout 120 "$FM_RUN" --list-devices 2>&1)
rc=$?
if [ $rc -ne 0 ] || ! grep -qE '^vulkan +absent' <<<"$out"; then
  echo "FAIL: with no Vulkan driver visible (exit $rc):"
  echo "$out"
  fail=1
fi
[ $fail -eq 0 ] && echo "vulkan_driver_leak: reported by default; reachable with the driver preloaded (the vulkan stage); no driver elsewhere"
exit $fail
