#!/usr/bin/env python3
"""Writes the torch.profiler fixtures of this folder; run by hand, never by the tests.

Made with Debian 12's python3-torch 1.13.1+dfsg-4 (CPU only; built without Kineto, so
torch.profiler runs the autograd profiler and export_chrome_trace writes its trace format):

    /usr/bin/python3 tests/data/torch/make_fixtures.py tests/data/torch

For each fixture NAME it writes NAME.json (prof.export_chrome_trace) and NAME.KEY.txt, the
exact text of prof.key_averages().table(sort_by=KEY, row_limit=-1) for the keys below.
The timings are those of the machine that ran it; the tests only compare strata-report's
table of NAME.json with torch's table text.

- schedule: a Linear-GELU-Linear block run 5 times under schedule(wait=1, warmup=1,
  active=3) with prof.step() after each run, so the trace holds ProfilerStep#N ranges.

- memory: a Kineto trace of the same block's ops with profile_memory=True and with_flops=True,
  which this torch cannot record (no Kineto): the ops and [memory] events are written below
  by hand, on one thread, in the format torch 1.13's Kineto writes (cpu_op X events; [memory]
  instants with Device Type, Device Id, Addr, Bytes, Total Allocated, Total Reserved). Torch
  1.13 keeps an op's FLOPs in memory only (KinetoEvent.flops(), not in the JSON), so the
  trace carries them as args.flops, which strata-report reads. The table is torch's own: the
  same events, as torch's Kineto result objects would give them, go through torch's
  profile._parse_kineto_results (its memory attribution), EventList._build_tree,
  key_averages() and table(). Its tables are NAME.KEY.txt for the memory and FLOPs sort keys.
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

SORT_KEYS = ["self_cpu_time_total", "cpu_time_total", "count"]
MEMORY_SORT_KEYS = ["self_cpu_memory_usage", "cpu_memory_usage", "self_cuda_memory_usage",
                    "cuda_memory_usage", "flops", "count"]


def block():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))


def write(out_dir, name, prof):
    prof.export_chrome_trace(os.path.join(out_dir, name + ".json"))
    for key in SORT_KEYS:
        with open(os.path.join(out_dir, f"{name}.{key}.txt"), "w") as f:
            f.write(prof.key_averages().table(sort_by=key, row_limit=-1))


def scheduled(out_dir):
    m, x = block(), torch.randn(32, 64)
    traces = []
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=traces.append) as prof:
        for _ in range(5):
            m(x)
            prof.step()
    write(out_dir, "schedule", prof)


BASE_US = 1712000000000  # Kineto writes absolute microseconds
PID = TID = 4242
LINEAR_FLOPS = 2 * 480 * 256 * 512  # addmm of [480, 256] by [256, 512]

# (name, begin, end, flops) in microseconds after BASE_US, and [memory] events as (time,
# bytes, Device Type: 0 CPU, 1 CUDA). Some memory falls outside every op: torch's [memory] row.
OPS = [
    ("aten::linear", 10, 110, 0),
    ("aten::t", 12, 18, 0),
    ("aten::transpose", 13, 17, 0),
    ("aten::as_strided", 14, 15, 0),
    ("aten::addmm", 20, 100, LINEAR_FLOPS),
    ("aten::expand", 24, 26, 0),
    ("aten::copy_", 30, 60, 0),
    ("aten::gelu", 120, 150, 0),
    ("aten::linear", 160, 260, 0),
    ("aten::t", 162, 168, 0),
    ("aten::transpose", 163, 167, 0),
    ("aten::addmm", 170, 250, LINEAR_FLOPS),
    ("aten::copy_", 180, 200, 0),
]
MEMORY = [
    (5, 1024, 0),        # outside every op
    (12, 300, 0),        # aten::t, not its transpose
    (22, 983040, 0),     # the first addmm's output: 960 Kb
    (70, 2048, 1),       # device memory in that addmm
    (125, 983040, 0),    # gelu's output
    (172, 491520, 0),    # the second addmm's output: 480 Kb
    (255, -983040, 0),   # a free in the second linear, outside its addmm
    (270, -983040, 0),   # frees outside every op
    (280, -2048, 1),
]


class _Event:
    """What torch's _parse_kineto_results asks of a Kineto event (torch._C._autograd.KinetoEvent)."""

    def __init__(self, name, begin, end, flops=0, nbytes=0, device_type=None, corr=0):
        self._name, self._begin, self._end, self._flops = name, begin, end, flops
        self._nbytes, self._corr = nbytes, corr
        self._device_type = torch.autograd.DeviceType.CPU if device_type is None else device_type

    def name(self): return self._name
    def start_us(self): return BASE_US + self._begin
    def duration_us(self): return self._end - self._begin
    def device_type(self): return self._device_type
    def device_index(self): return 0
    def is_async(self): return False
    def start_thread_id(self): return TID
    def end_thread_id(self): return TID
    def fwd_thread_id(self): return 0
    def correlation_id(self): return self._corr
    def linked_correlation_id(self): return 0
    def shapes(self): return []
    def stack(self): return []
    def scope(self): return 0
    def sequence_nr(self): return -1
    def flops(self): return self._flops
    def cuda_elapsed_us(self): return 0
    def nbytes(self): return self._nbytes


class _Result:
    def __init__(self, events): self._events = events
    def trace_start_us(self): return BASE_US
    def events(self): return self._events


def memory(out_dir):
    device = {0: torch.autograd.DeviceType.CPU, 1: torch.autograd.DeviceType.CUDA}
    events = [_Event(n, b, e, flops=f, corr=i + 1) for i, (n, b, e, f) in enumerate(OPS)]
    events += [_Event("[memory]", t, t, nbytes=n, device_type=device[d]) for t, n, d in MEMORY]
    parsed = torch.autograd.profiler.profile._parse_kineto_results(None, _Result(events))
    function_events = torch.autograd.profiler_util.EventList(
        parsed, use_cuda=False, profile_memory=True, with_flops=True)
    function_events._build_tree()
    for key in MEMORY_SORT_KEYS:
        with open(os.path.join(out_dir, f"memory.{key}.txt"), "w") as f:
            f.write(function_events.key_averages().table(sort_by=key, row_limit=-1))

    trace = []
    for i, (n, b, e, f) in enumerate(OPS):
        args = {"External id": i + 1, "Ev Idx": i}
        if f:
            args["flops"] = f
        trace.append({"ph": "X", "cat": "cpu_op", "name": n, "pid": PID, "tid": TID,
                      "ts": BASE_US + b, "dur": e - b, "args": args})
    allocated = {0: 0, 1: 0}
    for k, (t, n, d) in enumerate(MEMORY):
        allocated[d] += n
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                      "pid": PID, "tid": TID, "ts": BASE_US + t,
                      "args": {"Device Type": d, "Device Id": -1 if d == 0 else 0,
                               "Addr": 94000000000000 + 4096 * k, "Bytes": n,
                               "Total Allocated": allocated[d], "Total Reserved": 2097152 if d else 0,
                               "Ev Idx": len(OPS) + k}})
    trace.sort(key=lambda e: e["ts"])
    doc = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": trace,
           "traceName": "memory.json"}
    with open(os.path.join(out_dir, "memory.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    print(torch.__version__, "kineto:", torch.autograd.kineto_available())
    scheduled(out_dir)
    memory(out_dir)


if __name__ == "__main__":
    main()
