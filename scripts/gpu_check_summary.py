#!/usr/bin/env python3
"""Summarises a scripts/gpu-check run: reads the logs it left in RESULTS and writes
summary.json and summary.txt there. Exit status: 0 when a GPU ran everything and it all passed,
1 when something failed, 3 when there was no GPU (nothing was verified).

Usage: gpu_check_summary.py RESULTS RERUN SECONDS
"""
import json
import os
import re
import subprocess
import sys


def gpu_name():
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return done.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def read(results, name):
    """A log's text; empty when the step that writes it never ran (cut short by the budget)."""
    path = os.path.join(results, name)
    return open(path).read() if os.path.exists(path) else ""


def kernel_tests(results):
    """Counts from gtest's JSON: run, failed, skipped (with the first skip reason)."""
    path = os.path.join(results, "gpu_tests.json")
    if not os.path.exists(path):
        return {"error": "gpu_tests wrote no report (see ctest.txt)"}
    report = json.load(open(path))
    counts = {"tests": 0, "failed": 0, "skipped": 0, "skip_reason": None}
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            counts["tests"] += 1
            if test.get("failures"):
                counts["failed"] += 1
            if test.get("result") == "SKIPPED":
                counts["skipped"] += 1
                if counts["skip_reason"] is None and test.get("skipped"):
                    counts["skip_reason"] = test["skipped"][0].get("message", "").strip()
    if counts["skipped"] and not counts["skip_reason"]:
        # gtest before 1.13 leaves the message out of its JSON; ctest -V kept the output.
        log = read(results, "ctest.txt").splitlines()
        for i, line in enumerate(log[:-1]):
            if line.rstrip().endswith(": Skipped"):
                counts["skip_reason"] = re.sub(r"^\d+: ", "", log[i + 1]).strip()
                break
    return counts


def checks(results):
    """Per `== strategy attention` block of checks.txt: its exit and largest difference."""
    rows = []
    text = read(results, "checks.txt")
    for block in text.split("== ")[1:]:
        title, _, body = block.partition("\n")
        diff = re.search(r"largest relative difference from the reference: (\S+)", body)
        code = re.search(r"^exit (\d+)$", body, re.M)
        # Two ranks' and mpirun's lines share one stream: of the error lines take the one with
        # the most words (a line another cut short, or mpirun's dashes, says least).
        errors = re.findall(r"error: (.*)", body)
        error = max(errors, key=lambda e: sum(c.isalpha() for c in e)).strip() if errors else None
        across = re.search(r"^across ranks: (.*)$", body, re.M)
        rows.append({"run": title.strip(), "exit": int(code.group(1)) if code else None,
                     "across_ranks": across.group(1).strip() if across else None,
                     "largest_relative_difference": float(diff.group(1)) if diff else None,
                     "error": error})
    return rows


def sim_validation(results):
    """Per `== model measured_ms=X simulated_ms=Y` line: both, and the simulator's error."""
    path = os.path.join(results, "sim_validation.txt")
    rows = []
    if not os.path.exists(path):
        return rows
    for m in re.finditer(r"^== (.*) measured_ms=(\S+) simulated_ms=(\S+)$", open(path).read(), re.M):
        real = float(m.group(2)) if m.group(2) != "none" else None
        sim = float(m.group(3)) if m.group(3) != "none" else None
        error = (sim - real) / real if real and sim is not None else None
        rows.append({"model": m.group(1), "measured_ms": real, "simulated_ms": sim,
                     "error": error})
    return rows


def main():
    results, rerun, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    bench_path = os.path.join(results, "gpt_step.json")
    summary = {
        "gpu": gpu_name(),
        "seconds": seconds,
        "kernel_tests": kernel_tests(results),
        "checks": checks(results),
        "rerun": rerun,
        "sim_validation": sim_validation(results),
        "bench": json.load(open(bench_path)) if os.path.exists(bench_path) else None,
    }
    with open(os.path.join(results, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    lines = [f"GPU: {summary['gpu'] or 'none'} ({seconds} s)",
             f"CUDA kernel tests: {json.dumps(summary['kernel_tests'])}"]
    for c in summary["checks"]:
        lines.append(f"check {c['run']}: exit {c['exit']}, largest relative difference "
                     f"{c['largest_relative_difference']}" + (f" ({c['error']})" if c["error"] else "")
                     + (f"; across ranks: {c['across_ranks']}" if c["across_ranks"] else ""))
    lines.append(f"rerun of dp=2,tp=2 fused: {rerun}")
    for v in summary["sim_validation"]:
        error = f"{v['error']:+.1%}" if v["error"] is not None else "n/a"
        lines.append(f"simulated against measured, {v['model']} bf16: measured "
                     f"{v['measured_ms']} ms, simulated {v['simulated_ms']} ms, error {error}")
    bench = read(results, "bench.txt").strip() or "not run"
    lines += ["benchmark:", bench]
    with open(os.path.join(results, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not summary["gpu"]:
        return 3
    # With a GPU every kernel test must run: a skip there hides a broken CUDA setup.
    kernels = summary["kernel_tests"]
    passed = (kernels.get("tests", 0) > 0 and kernels.get("failed", 1) == 0
              and kernels.get("skipped", 1) == 0 and rerun == "bit-identical"
              and len(summary["checks"]) == 10 and all(c["exit"] == 0 for c in summary["checks"]))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
