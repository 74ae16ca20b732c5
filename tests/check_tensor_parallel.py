#!/usr/bin/env python3
"""examples/tensor_parallel's traces load and hold a distributed job: one trace per rank with
Kineto's distributedInfo, every all-reduce on each rank's "Collective queue" track with Kineto's
collective args, correlated and flowed from the host's c10d::allreduce_, ending at the same time
on every rank, with the waits of the ranks that arrived first equal to their lead on the last.
The straggler is the last to arrive at every layer's all-reduce (Seq 2 on; Seq 1 is the
example's barrier, an all-reduce of one value).

usage: check_tensor_parallel.py PROGRAM processes|threads
"""
import json
import pathlib
import subprocess
import sys
import tempfile

# The straggler's lead is real time (it sleeps), so it must dwarf how long a loaded machine may
# keep another rank's thread from running: with 20 ms, one run beside the suite's compiles
# failed in a way no quiet run showed, most likely so.
RANKS, LAYERS, TOKENS, STRAGGLER, DELAY_US = 3, 3, 8, 2, 100000
MODEL_DIM = 128  # the example's hidden size: each all-reduce moves TOKENS x MODEL_DIM values
ARGS_OF_KINETO = ["Collective name", "dtype", "In msg nelems", "Out msg nelems", "Group size",
                  "Process Group Name", "Process Group Ranks", "Seq"]


def fail(problems):
    for p in problems:
        print("check_tensor_parallel:", p, file=sys.stderr)
    sys.exit(1)


def collectives_of(trace, name, problems):
    """(device collectives by (pid, seq), host c10d ops by correlation id, flows) of one trace."""
    events = trace["traceEvents"]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    device, host, waits = {}, {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        args = e.get("args", {})
        if e["name"] == "c10d::allreduce_":
            host[args.get("correlation_id")] = e
        if e["name"].startswith("AllReduce"):
            if tracks.get((e["pid"], e["tid"])) != "Collective queue":
                problems.append(f"{name}: {e['name']} is on track {tracks.get((e['pid'], e['tid']))!r}")
            device[(e["pid"], args.get("Seq"))] = e
        if e["name"] == "wait for ranks":
            waits[(e["pid"], e["ts"])] = e
    flows = {}
    for e in events:
        if e.get("ph") in ("s", "f"):
            flows.setdefault(e["id"], []).append(e)
    return device, host, waits, flows


def check(program, mode):
    problems = []
    with tempfile.TemporaryDirectory(prefix="strata-tp-") as out:
        cmd = [program, out, "--ranks", str(RANKS), "--layers", str(LAYERS), "--tokens", str(TOKENS),
               "--straggler", str(STRAGGLER), "--delay-us", str(DELAY_US)]
        if mode == "threads":
            cmd.append("--threads")
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        sys.stdout.write(run.stdout)
        if run.returncode != 0 or "agree with the single-rank reference" not in run.stdout:
            fail([f"{' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}"])
        files = sorted(pathlib.Path(out).glob("*.pt.trace.json"))
        leftovers = [p.name for p in pathlib.Path(out).iterdir() if not p.name.endswith(".pt.trace.json")]
        if leftovers:
            problems.append(f"the example left {leftovers} beside its traces")
        want = RANKS if mode == "processes" else 1
        if len(files) != want:
            fail([f"{len(files)} traces written, {want} expected: {[f.name for f in files]}"])
        ends = {}  # seq -> the end of that collective on each rank
        arrivals = {}  # seq -> [(begin, rank, pid)]
        for f in files:
            trace = json.loads(f.read_text(encoding="utf-8"))
            info = trace.get("distributedInfo")
            if mode == "processes":
                rank = int(f.name.split(".")[0].removeprefix("rank"))
                if not info or info.get("rank") != rank or info.get("world_size") != RANKS:
                    problems.append(f"{f.name}: distributedInfo {info} is not rank {rank} of {RANKS}")
                elif info["pg_config"][0]["ranks"] != list(range(RANKS)):
                    problems.append(f"{f.name}: pg_config {info['pg_config']}")
            elif not f.name.startswith("threads."):
                problems.append(f"{f.name}: the threads' trace is named threads.<time_ns>.pt.trace.json")
            device, host, waits, flows = collectives_of(trace, f.name, problems)
            cores = sorted({pid for pid, _ in device})
            if len(cores) != (1 if mode == "processes" else RANKS):
                problems.append(f"{f.name}: collectives on {len(cores)} cores")
            if len(host) != len(device) or len(device) != (LAYERS + 1) * len(cores):
                problems.append(f"{f.name}: {len(host)} c10d::allreduce_ and {len(device)} device collectives "
                                f"for {LAYERS} layers on {len(cores)} cores")
            bound = {(e["pid"], e["tid"], e["ts"]) for fl in flows.values() for e in fl if e["ph"] == "f"}
            for (pid, seq), e in sorted(device.items()):
                args = e["args"]
                missing = [a for a in ARGS_OF_KINETO if a not in args]
                if missing:
                    problems.append(f"{f.name}: {e['name']} lacks {missing}")
                    continue
                nelems = 1 if seq == 1 else TOKENS * MODEL_DIM
                expect = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": nelems,
                          "Out msg nelems": nelems, "Group size": RANKS, "Process Group Name": "0",
                          "Process Group Ranks": "[" + ", ".join(map(str, range(RANKS))) + "]"}
                wrong = {k: args[k] for k, v in expect.items() if args[k] != v}
                if wrong:
                    problems.append(f"{f.name}: seq {seq}: {wrong}")
                op = host.get(args.get("correlation_id"))
                if op is None:
                    problems.append(f"{f.name}: seq {seq}: no c10d::allreduce_ with its correlation id")
                elif any(op["args"].get(k) != args[k] for k in ARGS_OF_KINETO):
                    problems.append(f"{f.name}: seq {seq}: the host op's args differ from the device's")
                if (e["pid"], e["tid"], e["ts"]) not in bound:
                    problems.append(f"{f.name}: seq {seq}: no flow arrives at the collective")
                rank = args["Rank"]
                ends.setdefault(seq, []).append(e["ts"] + e["dur"])
                arrivals.setdefault(seq, []).append((e["ts"], rank, pid, waits.get((pid, e["ts"])), f.name))
        for seq, seen in sorted(arrivals.items()):
            # ts and dur are each written to the nanosecond, so one instant may read 1-2 ns apart
            if len(seen) != RANKS or max(ends[seq]) - min(ends[seq]) > 0.0025:
                problems.append(f"seq {seq}: ends {ends[seq]} on {len(seen)} ranks (want one end on {RANKS})")
                continue
            last = max(b for b, *_ in seen)
            for begin, rank, pid, wait, name in seen:
                lead = last - begin
                if lead > 0.0015 and (wait is None or abs(wait["dur"] - lead) > 0.0015):
                    problems.append(f"{name}: seq {seq}: rank {rank} arrived {lead} us before the last, "
                                    f"its wait is {wait and wait['dur']}")
                if lead <= 0.0015 and wait is not None:
                    problems.append(f"{name}: seq {seq}: rank {rank} arrived last but waited {wait['dur']} us")
            if seq > 1:  # a layer's, not the barrier's
                latest = max(seen)[1]
                if latest != STRAGGLER:
                    problems.append(f"seq {seq}: rank {latest} arrived last, not the straggler {STRAGGLER}")
    if problems:
        fail(problems)
    print(f"check_tensor_parallel: {mode}: {RANKS} ranks x {LAYERS} all-reduces with Kineto's args, flows, "
          "one end per collective, waits equal to each rank's lead, the straggler last")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ("processes", "threads"):
        sys.exit(__doc__)
    check(sys.argv[1], sys.argv[2])
