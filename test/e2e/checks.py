"""What a test driver prints and runs: one PASS/FAIL line per check, the
count at the end, and commands that must succeed within their time limit
(timelimits.py). Used by test/capi and test/install.
"""
import subprocess
import sys

import timelimits

passed = failed = 0


def check(ok, what, detail=""):
    """One line: PASS or FAIL, what was checked, and on a failure the detail."""
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print("%s %s%s" % ("PASS" if ok else "FAIL", what, "" if ok or not detail else ": " + detail))


def run(cmd, stdin=None, ok=(0,), env=None):
    """(stdout bytes, stderr text) of a command that must exit with one of `ok`;
    anything else ends the test, naming the command and its output."""
    p = timelimits.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env)
    if p.returncode not in ok:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace")))
        sys.exit(1)
    return p.stdout, p.stderr.decode()


def summary():
    """`N passed, N failed`; the exit status (1 on a failure)."""
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
