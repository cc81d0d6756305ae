"""Time limits of the commands the e2e drivers start (test/e2e/check_*.py, and
test/gpu/check_vision_vulkan.py, which imports this module too).

A command that runs past its limit is killed and the test fails at once with
the command and the limit named, so that a hang costs a test minutes instead
of CI's whole budget. The limits are generous on purpose: they catch hangs,
not slowness (the sanitizer runs, scripts/check-sanitize.sh, are 5-10x
slower than a plain build; the software Vulkan device is slower still).
"""
import os
import shlex
import subprocess
import sys
import threading

FM_RUN = 120    # one fm-run / fm-tokenize / fm-grammar on a tiny model
COMPILE = 300   # one fmc command (compile, compile-adapter, inspect) on a tiny model
PYTHON = 300    # a numpy helper: gen_checkpoint.py, fm_reference.py, validate_generated.py
NODE = 300      # the @lenml/tokenizers oracle under node (loads a real tokenizer.json)
FETCH = 1200    # scripts/fetch-test-data.sh: its lock wait (600 s) and npm pack's retries
MPIRUN = 300    # mpirun --timeout: one job (every rank of one fm-run)


def mpirun(np):
    """mpirun's command line for NP ranks on this machine; Open MPI aborts the
    whole job (every rank) after MPIRUN seconds."""
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--timeout", str(MPIRUN),
            "-np", str(np)]


def limit_for(cmd):
    """The limit of a command line, from what it runs."""
    name = os.path.basename(str(cmd[0]))
    if name == "mpirun":
        return MPIRUN + 60  # mpirun's own --timeout ends the job first
    if name in ("fm-run", "fm-tokenize", "fm-grammar"):
        return FM_RUN
    if name.startswith("python"):
        return PYTHON
    if name == "node":
        return NODE
    if name == "fetch-test-data.sh":
        return FETCH
    return COMPILE  # fmc, and anything else


def timed_out(cmd, limit, partial=None):
    """Ends the test: CMD ran past LIMIT seconds (PARTIAL: the last of its stderr)."""
    tail = partial.decode(errors="replace") if isinstance(partial, bytes) else (partial or "")
    sys.stderr.write("%s: TIMEOUT: killed after %g s (its limit; a hang?): %s\n%s" % (
        os.path.basename(sys.argv[0]), limit, shlex.join(map(str, cmd)),
        ("its stderr so far:\n" + tail[-2000:] + "\n") if tail else ""))
    sys.exit(1)


def run(cmd, limit=None, **kw):
    """subprocess.run(cmd, **kw) killed after LIMIT seconds (default: limit_for(cmd));
    the test then fails (exit 1), naming the command and the limit."""
    if limit is None:
        limit = limit_for(cmd)
    try:
        return subprocess.run(cmd, timeout=limit, **kw)
    except subprocess.TimeoutExpired as e:
        timed_out(cmd, limit, e.stderr)


class killed_after:
    """`with killed_after(p, cmd):` for a Popen read by hand: P is killed after
    LIMIT seconds (default: limit_for(cmd)) and the test then fails as in run()."""

    def __init__(self, p, cmd, limit=None):
        self.p, self.cmd = p, cmd
        self.limit = limit_for(cmd) if limit is None else limit
        self.fired = threading.Event()

    def _kill(self):
        self.fired.set()
        self.p.kill()

    def __enter__(self):
        self.timer = threading.Timer(self.limit, self._kill)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        if self.fired.is_set():
            timed_out(self.cmd, self.limit)
        return False
