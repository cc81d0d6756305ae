#!/usr/bin/python3
"""fm-run's text modes under MPI: a tiny random pt_moe with Mistral's tokenizer
embedded, compiled for one process and partitioned over 2 ranks (fmc compile
--ranks 2), run with mpirun -np 2.

  check_text_mpi.py --work DIR [--bin DIR]

  - --prompt: the text and the generated ids (--stats, rank 0) under mpirun
    equal the single-process run's;
  - --chat --chat-file over two turns: the same transcript and ids;
  - --prompt --regex (the constraint follows the same tokens on every rank):
    the same output, and it matches the regex.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_text as ct  # noqa: E402
import checks  # noqa: E402
import timelimits  # noqa: E402

# Open MPI aborts every rank after timelimits.MPIRUN s (mpirun --timeout).
MPI = timelimits.mpirun(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", default="")
    args = ap.parse_args()
    tool = ct.start(args)
    m = ct.build_model(tool, "mistral", args.work, family="pt_moe", sets={},
                       chat_template=ct.INST_TEMPLATE)
    one = m["fmb"]
    two = os.path.join(args.work, "ranks2.fmb")
    ct.run([tool("fmc"), "compile", m["model"], "-o", two, "--max-prefill", "8", "--ranks", "2"])

    def both(*fm_args):
        single = ct.run([tool("fm-run"), one, "--threads", "1"] + list(fm_args))
        out, err = ct.run(MPI + [tool("fm-run"), two, "--threads", "1"] + list(fm_args))
        # Open MPI gives rank 0's stdout a pty: fm-run ends a --prompt's text with a newline,
        # as it does on a terminal.
        if not single[0].endswith(b"\n") and out.endswith(b"\n"):
            out = out[:-1]
        return single, (out, err)

    prompt = "The quick brown fox jumps over the lazy dog."
    (out1, err1), (out2, err2) = both("--prompt", prompt, "--max-new-tokens", "12", "--stats")
    s1, s2 = ct.stats_lines(err1)[-1], ct.stats_lines(err2)[-1]
    ct.check(s2["ranks"] == 2 and s1["ranks"] == 1, "the runs have 1 and 2 ranks")
    ct.check(out1 == out2 and s1["generated_ids"] == s2["generated_ids"],
             "--prompt under mpirun -np 2: the single process's text and ids (%d)"
             % len(s1["generated_ids"]), "%r vs %r" % (out1, out2))

    turns = os.path.join(args.work, "turns.txt")
    open(turns, "w").write("Hello! Who are you?\n---\nAnd then?\n")
    (out1, err1), (out2, err2) = both("--chat", "--chat-file", turns, "--max-new-tokens", "8",
                                      "--stats")
    ids1 = [s["generated_ids"] for s in ct.stats_lines(err1) if "turn" in s]
    ids2 = [s["generated_ids"] for s in ct.stats_lines(err2) if "turn" in s]
    ct.check(len(ids1) == 2 and out1 == out2 and ids1 == ids2,
             "--chat --chat-file under mpirun -np 2: the same transcript and replies",
             "%r vs %r" % (out1, out2))

    rx = "[a-z]{2,6}-[0-9]{3}"
    (out1, _), (out2, _) = both("--prompt", prompt, "--regex", rx, "--temperature", "1",
                                "--seed", "4", "--max-new-tokens", "40")
    ct.check(out1 == out2 and re.fullmatch(rx, out1.decode()) is not None,
             "--prompt --regex under mpirun -np 2: the same match %r" % out2.decode(),
             "%r vs %r" % (out1, out2))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
