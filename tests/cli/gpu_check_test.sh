#!/usr/bin/env bash
# The GPU-less part of scripts/gpu-check, on a build machine without a GPU: gpu-bundle packs the
# CUDA build under the carry limit, gpu-check unpacks it and runs every step, the kernel tests
# are reported skipped with the CUDA error as the reason, each `run --device cuda` (in one
# process, and on 2 ranks under the bundle's own mpirun) fails with exit 1 naming the missing
# GPU, the simulated-against-measured rows (2 sizes on one device, 4 strategies on logical
# devices sharing it) have no figures, and the summary says there was no GPU (exit 3).
# Usage: gpu_check_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

root="${1:?usage: $0 SOURCE_DIR BUILD_DIR}"
build="${2:?usage: $0 SOURCE_DIR BUILD_DIR}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

"$root/scripts/gpu-bundle" "$build" "$work/bundle.tar.xz" || fail "gpu-bundle exited $?"
GPU_CHECK_PYTHON=/usr/bin/python3 "$root/scripts/gpu-check" "$work/bundle.tar.xz" \
  "$work/results" >"$work/out.txt" 2>&1
code=$?
cat "$work/out.txt"
[[ $code == 3 ]] || fail "gpu-check exited $code, expected 3 (no GPU)"
/usr/bin/python3 - "$work/results/summary.json" <<'PY' || fail "the summary is not what a GPU-less run gives"
import json, sys
s = json.load(open(sys.argv[1]))
k = s["kernel_tests"]
assert s["gpu"] is None, s["gpu"]
assert k["tests"] > 0 and k["skipped"] == k["tests"] and k["failed"] == 0, k
assert k["skip_reason"], "the skips give no reason"
assert len(s["checks"]) == 10, s["checks"]
for c in s["checks"]:
    assert c["exit"] == 1 and "no CUDA GPU is available" in (c["error"] or ""), c
assert s["rerun"] == "not run", s["rerun"]
v = s["sim_validation"]
assert len(v) == 6 and all(r["measured_ms"] is None and r["error"] is None for r in v), v
PY
# The device tool returns at most 8 files: the summary, the logs in one archive.
files="$(ls "$work/results" | sort | tr '\n' ' ')"
[[ "$files" == "logs.tar.gz summary.json summary.txt " ]] || fail "results hold: $files"
mkdir -p "$work/unpacked"
tar -C "$work/unpacked" -xzf "$work/results/logs.tar.gz" || fail "logs.tar.gz does not unpack"
grep -q "Skipped\|skipped" "$work/unpacked/logs/ctest.txt" ||
  fail "ctest did not report the gpu tests skipped"
[[ -s "$work/unpacked/logs/environment.txt" ]] || fail "no environment.txt among the logs"
# A budget too short for the steps still ends with the summary.
GPU_CHECK_PYTHON=/usr/bin/python3 GPU_CHECK_BUDGET=1 "$root/scripts/gpu-check" \
  "$work/bundle.tar.xz" "$work/short" >/dev/null 2>&1
[[ -s "$work/short/summary.json" ]] || fail "a run out of budget wrote no summary"
if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "gpu-check's GPU-less part: ok"
