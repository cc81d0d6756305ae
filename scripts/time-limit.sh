# Sourced by the scripts that run long steps (the test drivers, the demo,
# check-cuda.sh): `limit SECONDS COMMAND...` runs COMMAND, killed after
# SECONDS (and 10 s more to die after TERM), so that a hang ends that step
# in minutes instead of a test's or CI's whole budget, and says so on the
# script's stderr as it was when this file was sourced (fd 3), whatever the
# call redirects:
#   LIMIT_WHO: TIMEOUT: killed after N s (its limit; a hang?): COMMAND
# LIMIT_WHO names the script (default: its file name); LIMIT_FOREGROUND=1
# runs COMMAND in the foreground (an interactive script: Ctrl-C reaches it).
exec 3>&2
limit() {
  local seconds=$1 rc=0
  shift
  timeout ${LIMIT_FOREGROUND:+--foreground} --kill-after=10 "$seconds" "$@" || rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "${LIMIT_WHO:-$(basename "$0")}: TIMEOUT: killed after $seconds s (its limit; a hang?): $*" >&3
  fi
  return $rc
}
