#!/usr/bin/env python3
"""Validates grammar_generate's outputs with an independent validator: Debian's
python3-jsonschema (Draft 2020-12, FormatChecker for date and uuid). It has no RFC 3339 checker,
so date-time and time are checked by this file's own parse. Negative controls first show that
every checker rejects a wrong value (and the validator a wrong instance), so a pass means
something.
"""
import datetime
import json
import re
import sys

import jsonschema

TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|([+-])(\d\d):(\d\d))$")


def check_time(s):
    m = TIME.match(s)
    if not m:
        return False
    h, mi, sec = int(m[1]), int(m[2]), int(m[3])
    if h > 23 or mi > 59 or sec > 60:
        return False
    offset = 0
    if m[6]:
        oh, om = int(m[7]), int(m[8])
        if oh > 23 or om > 59:
            return False
        offset = (oh * 60 + om) * (1 if m[6] == "+" else -1)
    if sec == 60:  # a leap second: only at 23:59 UTC
        return (h * 60 + mi - offset) % 1440 == 23 * 60 + 59
    return True


def check_date_time(s):
    if len(s) < 11 or s[10] not in "Tt" or not re.match(r"^\d{4}-\d\d-\d\d$", s[:10]):
        return False
    try:
        datetime.date.fromisoformat(s[:10])
    except ValueError:
        return False
    return check_time(s[11:])


def format_checker():
    checker = jsonschema.FormatChecker(["date", "uuid"])
    checker.checks("time")(check_time)
    checker.checks("date-time")(check_date_time)
    return checker


def controls(checker):
    cases = [("date", "2024-02-29", "2023-02-29"), ("uuid", "123e4567-e89b-12d3-a456-426614174000",
             "123e4567-e89b-12d3-a456-42661417400"), ("time", "23:59:60Z", "22:59:60Z"),
             ("time", "08:30:00+01:00", "24:00:00Z"),
             ("date-time", "2023-12-31T23:59:59.5-08:00", "2023-12-31T25:00:00Z")]
    for fmt, good, bad in cases:
        schema = {"type": "string", "format": fmt}
        v = jsonschema.Draft202012Validator(schema, format_checker=checker)
        if not v.is_valid(good) or v.is_valid(bad):
            sys.exit(f"negative control failed: format {fmt} good {good!r} bad {bad!r}")
    v = jsonschema.Draft202012Validator({"type": "object", "required": ["a"]})
    if v.is_valid({"b": 1}):
        sys.exit("negative control failed: the validator accepts a missing required property")
    print(f"negative controls: {len(cases)} format checks and a required check reject wrong values")


def main():
    checker = format_checker()
    controls(checker)
    schemas, counts, failures = {}, {}, 0
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    for rec in lines:
        path = rec["schema"]
        if path not in schemas:
            with open(path, encoding="utf-8") as f:
                schema = json.load(f)
            schemas[path] = jsonschema.Draft202012Validator(schema, format_checker=checker)
        try:
            value = json.loads(rec["text"])
        except ValueError as e:
            print(f"FAIL {path} seed {rec['seed']}: not JSON ({e}): {rec['text']!r}")
            failures += 1
            continue
        errors = list(schemas[path].iter_errors(value))
        if errors:
            print(f"FAIL {path} seed {rec['seed']}: {errors[0].message}: {rec['text']!r}")
            failures += 1
        counts[path] = counts.get(path, 0) + (0 if errors else 1)
    for path, n in sorted(counts.items()):
        print(f"  {path.rsplit('/', 1)[-1]:28} {n} valid")
    total = sum(counts.values())
    print(f"generated outputs validated by python3-jsonschema: {total}/{len(lines)}")
    print(f"{total} passed, {failures} failed")
    return 1 if failures or not lines else 0


if __name__ == "__main__":
    sys.exit(main())
