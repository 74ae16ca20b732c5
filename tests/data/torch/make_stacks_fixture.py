#!/usr/bin/env python3
"""Writes the stacks fixture of this folder; run by hand, never by the tests.

Made with Debian 12's python3-torch 1.13.1+dfsg-4 (CPU only, no Kineto: torch.profiler runs
the autograd profiler and export_chrome_trace writes its trace format):

    /usr/bin/python3 tests/data/torch/make_stacks_fixture.py tests/data/torch

A Linear-GELU-Linear block run twice inside record_function("block"), profiled with
with_stack=True. It writes

- stacks.json: prof.export_chrome_trace();
- stacks.torch_export_stacks.folded: torch's own prof.export_stacks(path, "self_cpu_time_total"),
  whose frames are the Python source frames that called each op (file(line):_function,
  outermost first; the op itself is not a frame), one line per op event, unsorted and unmerged;
- stacks.self_cpu_time_total.folded: the same per-event values, int(evt.self_cpu_time_total)
  of each of torch's own events, under the op nesting torch itself computed (evt.cpu_parent
  after EventList._build_tree and its duplicate removal): one line per distinct path of op
  names, values summed, zero lines left out, sorted. This is what strata-report stacks must
  give for stacks.json.
"""
import os
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def main(out_dir):
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
    x = torch.randn(8, 64)
    block(x)  # warm up outside the profile
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        with record_function("block"):
            for _ in range(2):
                block(x)
    prof.export_chrome_trace(os.path.join(out_dir, "stacks.json"))
    prof.export_stacks(os.path.join(out_dir, "stacks.torch_export_stacks.folded"), "self_cpu_time_total")
    sums = defaultdict(int)
    for evt in prof.events():
        names = []
        e = evt
        while e is not None:
            names.append(e.name)
            e = e.cpu_parent
        sums[";".join(reversed(names))] += int(evt.self_cpu_time_total)
    with open(os.path.join(out_dir, "stacks.self_cpu_time_total.folded"), "w") as f:
        for path in sorted(sums, key=lambda p: p.encode()):
            if sums[path] > 0:
                f.write(f"{path} {sums[path]}\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
