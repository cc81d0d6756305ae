#!/usr/bin/python3
"""Speculative sampling is distributed as plain sampling: fm-run --draft /
--lookup against fm-run without a drafter, over many seeds, by a two-sample
chi-squared test at each of the first positions.

  check_speculative_sampling.py --work DIR [--runs N] [--bin DIR]

A tiny llama with a vocabulary of 16 (seed 0) is the target. Its drafts:
"sharp", the same weights with the LM head times 3 (the same most likely
token, three times the logits: q piles onto the target's top token, so a
draft of it is rejected with probability 1 - p/q and the residual
normalize(max(0, p - q)) holds the other tokens); "other", another
checkpoint (seed 5), whose top token is the target's at only some
positions; and prompt lookup (--lookup 2, on a prompt of repeats), whose
proposals are point masses. For each sampler
setting (temperature 1: the whole vocabulary; temperature 0.8 with top-k 6
and top-p 0.9: the sorted candidates), N runs of 4 tokens each way (plain:
seeds 0, 2, 4, ...; speculative: 2^20 + the same, the draft sampling with
seed + 1, so that no two runs share a generator), the counts of every id at positions
0 to 3 and of every pair at positions (1, 2) are compared: chi-squared over
the ids with an expected count of 5 or more (the rest pooled into one),
p-value from the regularized upper incomplete gamma function. A check fails
below p = 1e-4 (the right rule's smallest p here is 4e-4, at 30 checks).
Sampling from p instead of the residual after a rejection moves the
speculative counts towards the draft's tokens: 9 of the 30 checks fail, the
sharp draft's at every position after the first (p 2e-23 for positions
(1, 2) at temperature 1), see the commit that added this test.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import math
import os
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
import checks  # noqa: E402
import gen_checkpoint as gen  # noqa: E402
from checks import check  # noqa: E402

SETTINGS = {
    "temperature 1": ["--temperature", "1"],
    "temperature 0.8 top-k 6 top-p 0.9": ["--temperature", "0.8", "--top-k", "6",
                                          "--top-p", "0.9"],
}
PROMPTS = {"sharp": "1,7,3,12", "other": "1,7,3,12", "lookup": "1,7,3,7,3,7,3"}
TOKENS = 4
# The speculative runs' seeds: apart from the plain runs', so that the two
# samples are independent.
SPEC_SEEDS = 1 << 20
THRESHOLD = 1e-4
SMALL = {"vocab_size": 16, "hidden_size": 32, "head_dim": 8, "intermediate_size": 64}


def gamma_q(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a) (Numerical Recipes' gser / gcf)."""
    if x <= 0:
        return 1.0
    lg = math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(10000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-x + a * math.log(x) - lg))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - lg) * h


def chi2_two_sample(a, b):
    """(chi2, df, p) of two samples' counts (Counters) having one distribution."""
    na, nb = sum(a.values()), sum(b.values())
    keys = sorted(set(a) | set(b))
    bins, pool = [], [0, 0]
    for k in keys:
        if (a[k] + b[k]) * min(na, nb) / (na + nb) >= 5:
            bins.append((a[k], b[k]))
        else:
            pool[0] += a[k]
            pool[1] += b[k]
    if sum(pool):
        bins.append(tuple(pool))
    chi2 = 0.0
    for x, y in bins:
        t = x + y
        for o, n in ((x, na), (y, nb)):
            e = t * n / (na + nb)
            chi2 += (o - e) ** 2 / e
    df = max(1, len(bins) - 1)
    return chi2, df, gamma_q(df / 2.0, chi2 / 2.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=600)
    ap.add_argument("--bin", default="")
    args = ap.parse_args()
    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)
    small = [a for k, v in SMALL.items() for a in ("--set", "%s=%s" % (k, v))]
    for name, seed in (("target", 0), ("other", 5)):
        checks.run(["/usr/bin/python3", GEN, "--family", "llama", "--preset", "tiny",
                    "--out", w(name), "--seed", str(seed)] + small)
    cfg = gen.make_config("llama", "tiny", SMALL)
    values = gen.make_values("llama", cfg, seed=0)
    values["lm_head.weight"] = values["lm_head.weight"] * 3.0
    gen.write_checkpoint(w("sharp"), cfg, values)
    for name in ("target", "other", "sharp"):
        checks.run([tool("fmc"), "compile", w(name), "-o", w(name + ".fmb")])

    def sample(extra, seed):
        out, _ = checks.run([tool("fm-run"), w("target.fmb"), "--max-new-tokens", str(TOKENS),
                             "--seed", str(seed), "--threads", "1"] + extra)
        ids = [int(t) for t in out.split()]
        assert len(ids) == TOKENS, out
        return ids

    drafters = {"sharp": ["--draft", w("sharp.fmb"), "--draft-max", "3"],
                "other": ["--draft", w("other.fmb"), "--draft-max", "3"],
                "lookup": ["--lookup", "2", "--draft-max", "3"]}
    plains = {}  # (setting, prompt): the plain runs
    with ThreadPoolExecutor(max_workers=2) as pool:
        for sname, setting in SETTINGS.items():
            for dname, drafter in drafters.items():
                prompt = ["--tokens", PROMPTS[dname]] + setting
                seeds = [2 * i for i in range(args.runs)]
                key = (sname, PROMPTS[dname])
                if key not in plains:
                    plains[key] = list(pool.map(lambda s: sample(prompt, s), seeds))
                plain = plains[key]
                spec = list(pool.map(lambda s: sample(prompt + drafter, SPEC_SEEDS + s),
                                     seeds))
                for pos in range(TOKENS):
                    chi2, df, p = chi2_two_sample(Counter(r[pos] for r in plain),
                                                  Counter(r[pos] for r in spec))
                    check(p >= THRESHOLD, "%s, %s: position %d, %d runs each: chi2 %.1f, "
                          "df %d, p %.3g" % (sname, dname, pos, args.runs, chi2, df, p))
                chi2, df, p = chi2_two_sample(Counter((r[1], r[2]) for r in plain),
                                              Counter((r[1], r[2]) for r in spec))
                check(p >= THRESHOLD, "%s, %s: positions (1, 2) together: chi2 %.1f, df %d, "
                      "p %.3g" % (sname, dname, chi2, df, p))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
