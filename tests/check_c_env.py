#!/usr/bin/env python3
"""A C program (tests/c_env_child.c, its only C++ file the 4-line implementation file) under
the STRATA_* environment: check_c_env.py PART CHILD [CHILD_OFF | STRATA_REPORT].

  profile       STRATA_PROFILE=1: the trace at exit holds exactly the ranges the child made
  ondemand      STRATA_ONDEMAND=1 + SIGUSR2: exactly the asked steps, the child lives on, exits 0
  crash         STRATA_CRASH_DUMP=1 with strata_start() (and with STRATA_PROFILE=1): the child
                dies of SIGABRT as it does without strata, the dump's path is on stderr, and
                strata-report converts the dump into the ranges made before the crash (where
                the build has no strata-report, the ThreadSanitizer build's case, the dump is
                checked as far as its path; the plain builds convert it)
  handlers      no STRATA_* variable: no signal handler installed; STRATA_ONDEMAND=1: one is
  notices       a typo of a variable is named with the closest name; STRATA_DRAIN_INTERVAL_US is
                named as no longer read and profiling goes on
  compiled_out  the child built with -DSTRATA_ENABLED=0: STRATA_PROFILE=1 and STRATA_ONDEMAND=1
                say so once, a signal does not end it, nothing is written

The child is driven through stdin and answers each command, so nothing depends on timing;
waiting is a bounded retry on what it prints.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading

WAIT_S = 60
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
    return condition


def child_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    # The sanitizers' own handlers for these signals off: a crash then takes its default action
    # (the exit status is the signal's), and the handlers check sees only strata's.
    off = "handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigill=0:handle_sigfpe=0"
    for options in ("ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"):
        env[options] = (env[options] + ":" if env.get(options) else "") + off
    env.update(extra)
    return env


def default_signals():
    """In the child, before it runs: every signal at its default action. A shell that started
    this script in the background (`nohup`, `&`) hands its children SIGHUP, SIGINT and SIGQUIT
    ignored, which the handlers check would take for handlers of strata's."""
    for s in signal.valid_signals():
        if s not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(s, signal.SIG_DFL)
            except (OSError, ValueError):
                pass


def run(child, env, commands, cwd):
    """Runs the child to the end on `commands`."""
    return subprocess.run([child], env=child_env(env), cwd=cwd, input="".join(c + "\n" for c in commands),
                          capture_output=True, text=True, timeout=WAIT_S * 2, preexec_fn=default_signals)


class Child:
    """A child kept running, asked one command at a time."""

    def __init__(self, child, env, cwd):
        self.p = subprocess.Popen([child], env=child_env(env), cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=default_signals)
        self.out, self.err, self.err_lines = queue.Queue(), queue.Queue(), []
        for stream, q in ((self.p.stdout, self.out), (self.p.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, q), daemon=True).start()

    @staticmethod
    def _pump(stream, q):
        for line in stream:
            q.put(line.rstrip("\n"))
        q.put(None)

    def ask(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        try:
            return self.out.get(timeout=WAIT_S)
        except queue.Empty:
            return None

    def stderr_line_while_working(self, containing):
        """The next stderr line holding `containing`, stepping the child meanwhile (a signal's
        capture begins at a step boundary, and a signal is handled while the program runs)."""
        for _ in range(3000):
            try:
                line = self.err.get(timeout=0.02)
            except queue.Empty:
                if self.ask("work 1") != "worked 1":
                    return None
                continue
            if line is None:
                return None
            self.err_lines.append(line)
            if containing in line:
                return line
        return None

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        rc = self.p.wait(timeout=WAIT_S)
        while (line := self.err.get(timeout=WAIT_S)) is not None:
            self.err_lines.append(line)
        return rc


def x_names(path):
    with open(path) as f:
        return sorted(e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X")


def profile(child, tmp):
    r = run(child, {"STRATA_PROFILE": "1"}, ["work 5", "quit"], tmp)
    expect(r.returncode == 0 and r.stdout == "worked 5\n", f"profile: child failed: {r}")
    path = os.path.join(tmp, "strata-out", "trace.json")
    expect("strata: wrote strata-out/trace.json (10 records" in r.stderr,
           f"profile: stderr does not name the trace: {r.stderr!r}")
    if expect(os.path.isfile(path), f"profile: no {path}"):
        expect(x_names(path) == ["aten::mm"] * 5 + ["decode"] * 5, f"profile: events {x_names(path)}")
    # The layers variable applies as to a C++ program.
    out = os.path.join(tmp, "framework")
    r = run(child, {"STRATA_PROFILE": "1", "STRATA_OUTPUT_DIR": out, "STRATA_LAYERS": "framework"},
            ["work 3", "quit"], tmp)
    path = os.path.join(out, "trace.json")
    if expect(r.returncode == 0 and os.path.isfile(path), f"profile layers: {r}"):
        expect(x_names(path) == ["aten::mm"] * 3, f"profile layers: events {x_names(path)}")
    # The program's own session cannot start while the environment's records: it says why.
    r = run(child, {"STRATA_PROFILE": "1", "STRATA_OUTPUT_DIR": out}, ["start " + out, "quit"], tmp)
    expect(r.stdout == "start 1\n" and "already running: STRATA_PROFILE=1 records this whole run" in r.stderr,
           f"profile: strata_start under STRATA_PROFILE=1: {r.stdout!r} {r.stderr!r}")


def ondemand(child, tmp):
    out = os.path.join(tmp, "out")
    c = Child(child, {"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_STEPS": "3", "STRATA_OUTPUT_DIR": out}, tmp)
    expect(c.ask("work 2") == "worked 2", "ondemand: steps before the signal")
    c.p.send_signal(signal.SIGUSR2)
    written = c.stderr_line_while_working("written to")
    expect(written is not None and "capture of 3 steps" in written, f"ondemand: no capture: {c.err_lines}")
    expect(c.ask("work 2") == "worked 2", "ondemand: the child does not live on after the capture")
    # A second signal: a second capture, not an overwrite.
    c.p.send_signal(signal.SIGUSR2)
    expect(c.stderr_line_while_working("written to") is not None, f"ondemand: no second capture: {c.err_lines}")
    rc = c.quit()
    expect(rc == 0, f"ondemand: exit status {rc}: {c.err_lines}")
    expect(any(f"kill -USR2 {c.p.pid}" in l for l in c.err_lines), f"ondemand: not armed: {c.err_lines}")
    files = sorted(os.listdir(out)) if os.path.isdir(out) else []
    expect(files == [f"ondemand-{c.p.pid}-1.json", f"ondemand-{c.p.pid}-2.json"], f"ondemand: files {files}")
    for name in files:
        names = x_names(os.path.join(out, name))
        steps = [n for n in names if n.startswith("ProfilerStep#")]
        expect(steps == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"], f"ondemand: {name} steps {steps}")
        expect([n for n in names if not n.startswith("ProfilerStep#")] == ["aten::mm"] * 3 + ["decode"] * 3,
               f"ondemand: {name} events {names}")


def crash(child, report, tmp):
    without = run(child, {}, ["work 4", "abort"], tmp)
    expect(without.returncode == -signal.SIGABRT, f"crash: without a dump, status {without.returncode}")
    expect("crash dump" not in without.stderr, f"crash: a dump without STRATA_CRASH_DUMP: {without.stderr!r}")
    for how, env, commands in [
            ("strata_start", {"STRATA_CRASH_DUMP": "1"}, ["start {out}", "work 4", "abort"]),
            ("STRATA_PROFILE", {"STRATA_PROFILE": "1", "STRATA_CRASH_DUMP": "1", "STRATA_OUTPUT_DIR": "{out}"},
             ["work 4", "abort"])]:
        out = os.path.join(tmp, how)
        r = run(child, {k: v.replace("{out}", out) for k, v in env.items()},
                [c.replace("{out}", out) for c in commands], tmp)
        expect(r.returncode == without.returncode, f"crash {how}: status {r.returncode}, "
               f"without strata's dump {without.returncode}: {r.stderr!r}")
        dumps = [n for n in os.listdir(out) if n.startswith("strata-crash-")] if os.path.isdir(out) else []
        if not expect(len(dumps) == 1, f"crash {how}: expected one dump in {out}: {dumps}"):
            continue
        dump = os.path.join(out, dumps[0])
        expect(f"strata: crash dump written to {dump} (strata-report convert {dump} -o crash.json)" in r.stderr,
               f"crash {how}: the dump's path is not on stderr: {r.stderr!r}")
        if report is None:
            continue
        trace = os.path.join(out, "crash.json")
        c = subprocess.run([report, "convert", dump, "-o", trace], capture_output=True, text=True,
                           timeout=WAIT_S)
        if expect(c.returncode == 0, f"crash {how}: convert failed: {c.stderr}"):
            expect(x_names(trace) == ["aten::mm"] * 4 + ["decode"] * 4, f"crash {how}: events {x_names(trace)}")
    # A bad value: named, and the session runs without a dump.
    out = os.path.join(tmp, "bad")
    r = run(child, {"STRATA_CRASH_DUMP": "yes"}, ["start " + out, "stop", "quit"], tmp)
    expect(r.stdout == "start 0\nstop 0\n" and "STRATA_CRASH_DUMP='yes'" in r.stderr,
           f"crash: a bad STRATA_CRASH_DUMP: {r.stdout!r} {r.stderr!r}")


def handlers(child, tmp):
    r = run(child, {}, ["handlers", "quit"], tmp)
    expect(r.returncode == 0 and r.stdout == "handlers:\n", f"handlers: without STRATA_*: {r.stdout!r} {r.stderr!r}")
    expect(r.stderr == "", f"handlers: without STRATA_*, stderr {r.stderr!r}")
    # The check can fail: with STRATA_ONDEMAND=1 the signal has strata's handler.
    r = run(child, {"STRATA_ONDEMAND": "1", "STRATA_OUTPUT_DIR": os.path.join(tmp, "o")}, ["handlers", "quit"], tmp)
    expect(r.stdout == "handlers: USR2\n", f"handlers: with STRATA_ONDEMAND=1: {r.stdout!r}")
    # A bad value leaves the capture off, but the signal a handler that says so: it lives on.
    c = Child(child, {"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_STEPS": "many"}, tmp)
    expect(c.ask("handlers") == "handlers: USR2", "handlers: a bad value left the signal at its default")
    c.p.send_signal(signal.SIGUSR2)
    line = c.stderr_line_while_working("ignored")
    expect(line is not None and "on-demand capture is off" in line, f"handlers: bad value: {c.err_lines}")
    rc = c.quit()
    expect(rc == 0, f"handlers: a bad value, then the signal: status {rc}")
    expect(any("STRATA_ONDEMAND_STEPS='many'" in l for l in c.err_lines), f"handlers: not named: {c.err_lines}")


def notices(child, tmp):
    r = run(child, {"STRATA_LAYER": "framework"}, ["quit"], tmp)
    expect(r.returncode == 0 and r.stderr.count("\n") == 1 and
           "STRATA_LAYER is not a variable strata reads; did you mean STRATA_LAYERS?" in r.stderr,
           f"notices: STRATA_LAYER: {r.stderr!r}")
    r = run(child, {"STRATA_PROFILER": "1"}, ["work 1", "quit"], tmp)
    expect("did you mean STRATA_PROFILE?" in r.stderr and not os.path.exists(os.path.join(tmp, "strata-out")),
           f"notices: STRATA_PROFILER: {r.stderr!r}")
    r = run(child, {"STRATA_WHATEVER": "1"}, ["quit"], tmp)
    expect("STRATA_WHATEVER is not a variable strata reads" in r.stderr and "did you mean" not in r.stderr,
           f"notices: STRATA_WHATEVER: {r.stderr!r}")
    # Known names, read elsewhere (the clock) or here, are not named.
    r = run(child, {"STRATA_CLOCK": "steady_clock", "STRATA_OUTPUT_DIR": "x"}, ["quit"], tmp)
    expect(r.stderr == "", f"notices: known variables named: {r.stderr!r}")
    out = os.path.join(tmp, "drain")
    r = run(child, {"STRATA_PROFILE": "1", "STRATA_DRAIN_INTERVAL_US": "1000", "STRATA_OUTPUT_DIR": out},
            ["work 2", "quit"], tmp)
    expect("STRATA_DRAIN_INTERVAL_US is no longer read" in r.stderr and "profiling is off" not in r.stderr,
           f"notices: STRATA_DRAIN_INTERVAL_US: {r.stderr!r}")
    path = os.path.join(out, "trace.json")
    if expect(os.path.isfile(path), "notices: STRATA_DRAIN_INTERVAL_US turned profiling off"):
        expect(x_names(path) == ["aten::mm"] * 2 + ["decode"] * 2, f"notices: drain: events {x_names(path)}")


def compiled_out(child, tmp):
    for env in ({"STRATA_PROFILE": "1"}, {"STRATA_ONDEMAND": "1"}):
        r = run(child, env, ["work 3", "quit"], tmp)
        said = [l for l in r.stderr.splitlines() if "compiled out" in l]
        expect(r.returncode == 0 and len(said) == 1, f"compiled out {env}: {r.returncode} {r.stderr!r}")
        expect(os.listdir(tmp) == [], f"compiled out {env}: files {os.listdir(tmp)}")
    r = run(child, {}, ["work 1", "handlers", "quit"], tmp)
    expect(r.stderr == "" and r.stdout == "worked 1\nhandlers:\n", f"compiled out, no variable: {r}")
    c = Child(child, {"STRATA_ONDEMAND": "1"}, tmp)
    expect(c.ask("work 1") == "worked 1", "compiled out: first step")
    c.p.send_signal(signal.SIGUSR2)
    line = c.stderr_line_while_working("ignored")
    expect(line is not None and "compiled out" in line, f"compiled out: signal: {c.err_lines}")
    rc = c.quit()
    expect(rc == 0, f"compiled out: the signal ended the child: status {rc}")


def main():
    part, child = sys.argv[1], os.path.abspath(sys.argv[2])
    other = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
    with tempfile.TemporaryDirectory(prefix="strata-c-env-") as tmp:
        if part == "profile":
            profile(child, tmp)
        elif part == "ondemand":
            ondemand(child, tmp)
        elif part == "crash":
            crash(child, other, tmp)
        elif part == "handlers":
            handlers(child, tmp)
        elif part == "notices":
            notices(child, tmp)
        elif part == "compiled_out":
            compiled_out(child, tmp)
        else:
            failures.append(f"unknown part {part}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"C program, {part}: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
