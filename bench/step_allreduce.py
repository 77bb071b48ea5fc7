#!/usr/bin/python3
"""The bandwidth of the largest all-reduce inside a training step, from `twinflow run --trace`.

Usage: step_allreduce.py TRACE

Picks the all-reduce moving the most bytes (the trace's args.bytes), e.g. the 64 MiB gradient
of the MLP's 4096x4096 layer under dp=2. Each step's act appears once per device; the span of
the device that arrived last is the transfer itself (the others also wait for it), so each step
counts its shortest span. Prints "BYTES GB/s": the median over the steps after the first of
bytes / time, which for 2 ranks is also the bus bandwidth.
"""
import json
import statistics
import sys


def main():
    events = [e for e in json.load(open(sys.argv[1]))["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "COLLECTIVE"
              and "all_reduce" in e["name"]]
    if not events:
        sys.exit(f"step_allreduce.py: no all-reduce in {sys.argv[1]}")
    size = max(e["args"]["bytes"] for e in events)
    name = next(e["name"].split("@")[0] for e in events if e["args"]["bytes"] == size)
    by_device = {}
    for e in sorted(events, key=lambda e: e["ts"]):
        if e["name"].split("@")[0] == name:
            by_device.setdefault(e["pid"], []).append(e["dur"])
    steps = min(len(spans) for spans in by_device.values())
    if len(by_device) < 2 or steps < 3:
        sys.exit(f"step_allreduce.py: too few acts of '{name}' in {sys.argv[1]}")
    shortest = [min(spans[s] for spans in by_device.values()) for s in range(1, steps)]
    print(f"{size} {size / (statistics.median(shortest) * 1e-6) / 1e9:.2f}")


if __name__ == "__main__":
    main()
