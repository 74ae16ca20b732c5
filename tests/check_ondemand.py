#!/usr/bin/env python3
"""Drives tests/ondemand_child under STRATA_ONDEMAND=1 and checks the captures it writes.

usage: check_ondemand.py CHILD

The child steps only when told to (one command a line on its stdin), so each check is about
behaviour: a signal's capture holds exactly the requested steps, two requests give two files,
a request during a capture is refused with a message, the program exits normally; with a bad
value the capture is off and the signal only says so. Waiting is a
bounded retry on what the child prints; nothing is asserted about how long anything takes.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading

failures = []
WAIT_S = 60  # generous bound for a line to appear on a busy machine


def expect(condition, message):
    if not condition:
        failures.append(message)
    return condition


class Child:
    def __init__(self, child, env, cwd):
        full = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
        full.update(env)
        self.p = subprocess.Popen([child], env=full, cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = queue.Queue()
        self.err = queue.Queue()
        self.err_lines = []
        for stream, q in ((self.p.stdout, self.out), (self.p.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, q), daemon=True).start()

    @staticmethod
    def _pump(stream, q):
        for line in stream:
            q.put(line.rstrip("\n"))
        q.put(None)

    def send(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()

    def reply(self):
        try:
            return self.out.get(timeout=WAIT_S)
        except queue.Empty:
            return None

    def ask(self, command):
        self.send(command)
        return self.reply()

    def stderr_line(self, containing):
        """The next stderr line containing `containing` (earlier lines are kept)."""
        while True:
            try:
                line = self.err.get(timeout=WAIT_S)
            except queue.Empty:
                return None
            if line is None:
                return None
            self.err_lines.append(line)
            if containing in line:
                return line

    def stderr_line_while_running(self, containing):
        """As stderr_line, while the child keeps answering commands: a signal is handled when
        the program runs, which a child blocked reading its stdin may not (under TSan, a
        signal is delivered when the thread leaves the blocking call)."""
        for _ in range(6000):
            try:
                line = self.err.get(timeout=0.01)
            except queue.Empty:
                if self.ask("state") is None:
                    return None
                continue
            if line is None:
                return None
            self.err_lines.append(line)
            if containing in line:
                return line
        return None

    def wait_idle(self):
        """Asks for the state until no capture runs; returns the number written."""
        for _ in range(6000):
            reply = self.ask("state")
            if reply is None:
                return None
            _, running, written = reply.split()
            if running == "0":
                return int(written)
        return None

    def quit(self):
        self.send("quit")
        self.p.stdin.close()
        rc = self.p.wait(timeout=WAIT_S)
        while True:  # the rest of stderr
            try:
                line = self.err.get(timeout=WAIT_S)
            except queue.Empty:
                break
            if line is None:
                break
            self.err_lines.append(line)
        return rc


def events(path):
    with open(path) as f:
        trace = json.load(f)
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def count(path, prefix):
    return sum(1 for e in events(path) if e["name"].startswith(prefix))


def main():
    child = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="strata-ondemand-") as tmp:
        out = os.path.join(tmp, "out")
        env = {"STRATA_ONDEMAND": "1", "STRATA_OUTPUT_DIR": out, "STRATA_ONDEMAND_STEPS": "4"}

        # A signal's capture: exactly the requested steps, then armed again.
        c = Child(child, env, tmp)
        armed = c.stderr_line("armed")
        expect(armed is not None and f"kill -USR2 {c.p.pid}" in armed, f"not armed: {c.err_lines}")
        expect(c.ask("step 3") == "stepped 3", "steps before the signal")
        c.p.send_signal(signal.SIGUSR2)
        # The signal is handled on strata's thread: wait until its capture runs.
        for _ in range(6000):
            if c.ask("state") == "state 1 0":
                break
        # A request while it runs is refused, from code and from a second signal.
        reply = c.ask("request 2")
        expect(reply is not None and reply.startswith("request capture_running:") and
               "refused" in reply, f"request during a capture: {reply!r}")
        c.p.send_signal(signal.SIGUSR2)
        refused = c.stderr_line_while_running("refused")
        expect(refused is not None and "still running" in refused,
               f"second signal not refused: {c.err_lines}")
        expect(c.ask("step 9") == "stepped 9", "steps during the capture")
        written = c.stderr_line("written to")
        expect(written is not None and "capture of 4 steps" in written,
               f"no line for the first capture: {c.err_lines}")
        expect(c.wait_idle() == 1, "first capture not finished")
        first = os.path.join(out, f"ondemand-{c.p.pid}-1.json")
        if expect(os.path.isfile(first), f"no {first}: {os.listdir(out) if os.path.isdir(out) else []}"):
            expect(count(first, "ProfilerStep#") == 4, f"steps in the first capture: {count(first, 'ProfilerStep#')}")
            expect(count(first, "work") == 4, f"work scopes in the first capture: {count(first, 'work')}")
            expect(str(first) in written, f"the line does not name the file: {written}")

        # Armed again: a request from code gives a second file, not an overwrite.
        reply = c.ask("request 2")
        expect(reply is not None and reply.startswith("request accepted:"), f"second request: {reply!r}")
        expect(c.ask("step 5") == "stepped 5", "steps of the second capture")
        expect(c.stderr_line("written to") is not None, f"no line for the second capture: {c.err_lines}")
        expect(c.wait_idle() == 2, "second capture not finished")
        second = os.path.join(out, f"ondemand-{c.p.pid}-2.json")
        if expect(os.path.isfile(second), f"no {second}"):
            expect(count(second, "ProfilerStep#") == 2, f"steps in the second capture: {count(second, 'ProfilerStep#')}")
            expect(count(second, "work") == 2, "work scopes in the second capture")
        rc = c.quit()
        expect(rc == 0, f"child exit status {rc}: {c.err_lines}")
        expect(sorted(os.listdir(out)) == sorted([os.path.basename(first), os.path.basename(second)]),
               f"unexpected files {os.listdir(out)}")

        # Another signal by name; a capture by duration (a program without steps); a capture
        # still running at exit is written, partial.
        out2 = os.path.join(tmp, "out2")
        c = Child(child, {"STRATA_ONDEMAND": "1", "STRATA_OUTPUT_DIR": out2,
                          "STRATA_ONDEMAND_DURATION_MS": "20", "STRATA_ONDEMAND_SIGNAL": "USR1"}, tmp)
        armed = c.stderr_line("armed")
        expect(armed is not None and "kill -USR1" in armed and "20 ms" in armed, f"USR1: {c.err_lines}")
        c.p.send_signal(signal.SIGUSR1)
        for _ in range(2000):  # records while the capture lasts, however long it takes to begin
            expect(c.ask("spin 5") == "spun", "spin")
            if c.ask("state").endswith(" 1"):
                break
        line = c.stderr_line("written to")
        expect(line is not None and "capture of 20 ms" in line, f"duration capture: {c.err_lines}")
        reply = c.ask("request 3")
        expect(reply is not None and reply.startswith("request accepted"), f"request: {reply!r}")
        expect(c.ask("step 1") == "stepped 1", "step")
        rc = c.quit()
        expect(rc == 0, f"exit during a capture: status {rc}")
        expect(any("partial" in l and "written to" in l for l in c.err_lines),
               f"no partial capture at exit: {c.err_lines}")
        expect(len(os.listdir(out2)) == 2, f"files: {os.listdir(out2) if os.path.isdir(out2) else []}")
        # The partial capture's step is on the steps track of the thread that stepped (main,
        # whose tid is the pid), not on one of strata's thread that stopped the capture.
        partial = os.path.join(out2, f"ondemand-{c.p.pid}-2.json")
        if expect(os.path.isfile(partial), f"no {partial}"):
            with open(partial) as f:
                trace = json.load(f)
            tracks = {(t["pid"], t["tid"]): t for t in trace["strataThreads"]}
            steps = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"].startswith("ProfilerStep#")]
            expect(len(steps) == 1, f"partial capture: steps {steps}")
            for e in steps:
                track = tracks.get((e["pid"], e["tid"]), {})
                expect(track.get("steps_of") == c.p.pid, f"partial capture: {e['name']} on track {track}")
            names = [t.get("name", "") for t in trace["strataThreads"]]
            expect(not any("strata ondemand" in n for n in names), f"partial capture: a stray track in {names}")

        # Bad values: named on stderr, the program runs as usual, nothing is written.
        bad = [
            ({"STRATA_ONDEMAND": "yes"}, "STRATA_ONDEMAND="),
            ({"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_STEPS": "abc"}, "STRATA_ONDEMAND_STEPS"),
            ({"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_STEPS": "0"}, "STRATA_ONDEMAND_STEPS"),
            ({"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_DURATION_MS": "-5"}, "STRATA_ONDEMAND_DURATION_MS"),
            ({"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_STEPS": "3",
              "STRATA_ONDEMAND_DURATION_MS": "5"}, "both set"),
            ({"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_SIGNAL": "BOGUS"}, "STRATA_ONDEMAND_SIGNAL"),
            ({"STRATA_ONDEMAND": "1", "STRATA_ONDEMAND_SIGNAL": "SIGKILL"}, "STRATA_ONDEMAND_SIGNAL"),
            ({"STRATA_ONDEMAND": "1", "STRATA_PROFILE": "1"}, "STRATA_PROFILE=1 and STRATA_ONDEMAND=1"),
            ({"STRATA_ONDEMAND": "1", "STRATA_LAYERS": "gpu"}, "gpu"),
        ]
        for env, word in bad:
            scratch = tempfile.mkdtemp(dir=tmp)
            c = Child(child, env, scratch)
            expect(c.ask("step 2") == "stepped 2", f"{env}: host program hurt")
            # The capture is off, but the signal it was asked to answer (SIGUSR2 when the signal
            # itself is the bad value) gets a handler that says so: it does not end the program.
            c.p.send_signal(signal.SIGUSR2)
            ignored = c.stderr_line_while_running("ignored")
            expect(ignored is not None and "on-demand capture is off" in ignored,
                   f"{env}: SIGUSR2 not answered: {c.err_lines}")
            rc = c.quit()
            text = "\n".join(c.err_lines)
            expect(rc == 0, f"{env}: exit status {rc}")
            expect(word in text and "profiling is off" in text, f"{env}: stderr does not name {word!r}: {text!r}")
            expect(os.listdir(scratch) == [], f"{env}: files appeared: {os.listdir(scratch)}")

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print("on-demand capture: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
