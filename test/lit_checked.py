#!/usr/bin/python3
"""Runs lit and fails when a test reports UNSUPPORTED that may not be.

A lit test whose REQUIRES are not met reports UNSUPPORTED and counts as a
pass: on a machine that lost a package (mpirun, node, spirv-val, a Vulkan
driver) whole groups of tests would stop running and ctest would still say
"Passed". This wrapper runs lit with --show-unsupported, passes its output
through, and fails when a test reports UNSUPPORTED that the allow list does
not name. The allow list (test/may-be-unsupported.txt) holds one regex over
lit's test name ("fm :: dir/file.test") per line, a tab or two spaces, and
why that test may be unsupported on a CI machine. An entry that names no
test of the suite fails too, so that the list cannot rot.

  lit_checked.py ALLOW_LIST LIT [LIT_ARGS...]
"""
import re
import subprocess
import sys


def read_allow_list(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = re.split(r"\t| {2,}", line.strip(), maxsplit=1)
            pattern, why = parts[0], parts[1] if len(parts) > 1 else ""
            if not why.strip():
                sys.exit("%s:%d: an entry needs a regex, then why the test may be "
                         "unsupported: %r" % (path, number, line))
            try:
                entries.append((re.compile(pattern), why.strip(), "%s:%d" % (path, number)))
            except re.error as e:
                sys.exit("%s:%d: bad regex %r: %s" % (path, number, pattern, e))
    return entries


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    allow = read_allow_list(sys.argv[1])
    lit = sys.argv[2:]
    # Every discovered test, for the stale-entry check (no test runs).
    listed = subprocess.run(lit + ["--show-tests"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=300)
    names = [l.strip() for l in listed.stdout.splitlines() if l.startswith("  fm :: ")]
    stale = [(rx.pattern, where) for rx, _, where in allow
             if not any(rx.search(n) for n in names)]
    proc = subprocess.Popen(lit + ["--show-unsupported"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    unsupported = []
    for line in proc.stdout:
        sys.stdout.write(line)
        m = re.match(r"UNSUPPORTED: (fm :: \S+)", line)
        if m:
            unsupported.append(m.group(1))
    rc = proc.wait()
    sys.stdout.flush()
    unexpected = []
    for name in unsupported:
        reason = next((why for rx, why, _ in allow if rx.search(name)), None)
        if reason is None:
            unexpected.append(name)
        else:
            print("lit_checked: %s is unsupported here (allowed: %s)" % (name, reason))
    for pattern, where in stale:
        print("lit_checked: FAIL: %s: %r names no test of the suite" % (where, pattern))
    for name in unexpected:
        print("lit_checked: FAIL: %s reported UNSUPPORTED, which it may not be on this "
              "machine (a missing package or feature; %s lists the exceptions)"
              % (name, sys.argv[1]))
    if unexpected or stale:
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
