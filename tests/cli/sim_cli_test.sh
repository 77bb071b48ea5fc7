#!/usr/bin/env bash
# Drives `twinflow sim` as a user would: the report, the trace and summary files, and bad input.
# Usage: sim_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"

gpt=(--model gpt --layers 2 --hidden 64 --heads 4 --sequence 16 --vocab 128 --batch 16)

check "sim reports step time and MFU" 0 "MFU" out -- \
  sim "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=4 --cluster dgx-h100
check "sim infers dp=4 for tp=2 on an 8-GPU node" 0 "strategy dp=4,tp=2" out -- \
  sim "${gpt[@]}" --strategy tp=2 --cluster dgx-h100
check "sim prints the parallelism each op family got" 0 "column" out -- \
  sim "${gpt[@]}" --strategy tp=2 --cluster dgx-h100
check "sim reports per-device bubble" 0 "bubble" out -- \
  sim "${gpt[@]}" --strategy dp=4,tp=2,pp=2,mb=4 --cluster dgx-a100 --nodes 2
check "sim writes a trace and a summary" 0 "step time" out -- \
  sim "${gpt[@]}" --strategy tp=2,pp=2,mb=2 --cluster cpu-local --devices 4 --nodes 2 \
  --trace "$work/trace.json" --json "$work/summary.json"
verify "the trace and summary are valid JSON with events" \
  /usr/bin/python3 -c "import json, sys; t = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]));
e = t['traceEvents']
assert len(e) > 10 and s['finished'] and s['step_s'] > 0
assert sum(x.get('ph') == 's' for x in e) == sum(x.get('ph') == 'f' for x in e) > 0" \
  "$work/trace.json" "$work/summary.json"
cp "$work/trace.json" "$work/trace1.json"
"$tf" sim "${gpt[@]}" --strategy tp=2,pp=2,mb=2 --cluster cpu-local --devices 4 --nodes 2 \
  --trace "$work/trace.json" >/dev/null 2>&1
verify "two runs write byte-identical traces" cmp -s "$work/trace.json" "$work/trace1.json"
verify "no two slices of a thread of the trace overlap partially" \
  /usr/bin/python3 -c "import json, sys, collections
t = collections.defaultdict(list)
for e in json.load(open(sys.argv[1]))['traceEvents']:
    if e.get('ph') == 'X': t[(e['pid'], e['tid'])].append((e['ts'], e['ts'] + e['dur']))
for spans in t.values():
    spans.sort()
    assert all(b[0] >= a[1] - 1e-3 for a, b in zip(spans, spans[1:])), spans" "$work/trace.json"
check "sim writes a Perfetto trace of GPUs, filtered" 0 "step time" out -- \
  sim "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=4 --cluster dgx-h100 \
  --trace "$work/trace.pftrace" --trace-devices 0-3 --trace-kinds compute,collective
verify "the Perfetto trace names GPUs" grep -q "gpu:3" "$work/trace.pftrace"
verify "the Perfetto trace has only the devices asked for" \
  bash -c "! grep -q 'gpu:4' '$work/trace.pftrace'"
check "a trace file of no known format is named" 2 "trace.txt" err -- \
  sim "${gpt[@]}" --strategy dp=2 --cluster dgx-h100 --trace "$work/trace.txt"
check "an unknown trace kind is named" 2 "'kernel'" err -- \
  sim "${gpt[@]}" --strategy dp=2 --cluster dgx-h100 --trace "$work/t.json" --trace-kinds kernel
check "sim --chakra writes an execution trace per GPU" 0 "wrote 8 Chakra execution traces" out -- \
  sim "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=4 --cluster dgx-h100 --chakra "$work/et/gpt"
verify "and the comm groups ASTRA-sim reads" \
  /usr/bin/python3 -c "import json, sys; g = json.load(open(sys.argv[1])); assert g and all(len(m) == 2 for m in g.values())" \
  "$work/et/gpt.comm_groups.json"
verify "every rank's file is there" test -s "$work/et/gpt.7.et"
check "sim --chakra refuses --replica" 2 "--chakra" err -- \
  sim "${gpt[@]}" --strategy dp=2,tp=8 --cluster dgx-h100 --nodes 2 --replica --chakra "$work/et/r"
check "an unknown cluster is named" 2 "unknown cluster 'dgx-z1'" err -- \
  sim "${gpt[@]}" --strategy dp=2 --cluster dgx-z1
echo 'nodes: "many"' >"$work/bad.pbtxt"
check "a bad cluster file is named" 2 "bad.pbtxt" err -- \
  sim "${gpt[@]}" --strategy dp=2 --cluster "$work/bad.pbtxt"
check "more devices than the cluster has" 2 "devices" err -- \
  sim "${gpt[@]}" --strategy dp=16 --devices 16 --cluster dgx-h100
check "sim --help exits 0" 0 "usage: twinflow sim" out -- sim --help

# --physical-devices: several logical devices on one GPU, as `twinflow run --device cuda` runs
# dp=2,tp=2 on one GPU. The four share its compute: the step takes at least the dp=1 step's
# kernels (the same model's work) and longer than on four GPUs of their own.
shared=(sim "${gpt[@]}" --device cuda --cluster hgx-h200)
sim_ms() {  # the step time of `twinflow sim "$@"`, in ms
  "$tf" "$@" 2>&1 | awk '/^step time/ { v = $3; u = $4; sub(/,$/, "", u); print (u == "s" ? v * 1000 : u == "ms" ? v : v / 1000); exit }'
}
one=$(sim_ms "${shared[@]}" --strategy dp=1 --physical-devices 1)
four_shared=$(sim_ms "${shared[@]}" --strategy dp=2,tp=2 --physical-devices 1)
four_own=$(sim_ms "${shared[@]}" --strategy dp=2,tp=2)
verify "dp=2,tp=2 on one GPU ($four_shared ms) is slower than on four ($four_own ms)" \
  awk -v a="$four_shared" -v b="$four_own" 'BEGIN { exit !(a > b) }'
verify "dp=2,tp=2 on one GPU ($four_shared ms) takes at least 0.9x dp=1 ($one ms)" \
  awk -v a="$four_shared" -v b="$one" 'BEGIN { exit !(a >= 0.9 * b) }'
check "the shared GPU is named in the device table" 0 "gpu:0 (logical 3)" out -- \
  "${shared[@]}" --strategy dp=2,tp=2 --physical-devices 1
check "--physical-devices beyond the cluster is refused" 2 "the cluster has 8 devices" err -- \
  "${shared[@]}" --strategy dp=2 --physical-devices 9
check "--physical-devices on a CPU host is refused" 2 "cores_per_node" err -- \
  sim "${gpt[@]}" --strategy dp=2 --cluster cpu-local --devices 2 --physical-devices 1
check "--physical-devices across ranks is refused" 2 "spans ranks" err -- \
  "${shared[@]}" --strategy dp=2 --ranks 2 --physical-devices 1
check "a group only partly sharing a device is refused" 2 "comm group" err -- \
  "${shared[@]}" --strategy dp=4 --physical-devices 2

# --replica folds every data-parallel replica onto replica 0, for any dp (approximate where the
# replicas sit unalike on the nodes).
check "sim --replica simulates one replica" 0 "standing in for 2 data-parallel copies (--replica" out -- \
  sim "${gpt[@]}" --strategy dp=2,tp=8 --cluster dgx-h100 --nodes 2 --replica
check "sim --replica takes a dp that does not divide the nodes" 0 "standing in for 4 data-parallel" out -- \
  sim "${gpt[@]}" --strategy dp=4,tp=2 --cluster dgx-h100 --nodes 1 --replica
check "sim --replica and --no-fold contradict" 2 "--replica" err -- \
  sim "${gpt[@]}" --strategy dp=4,tp=2 --cluster dgx-h100 --replica --no-fold

# calibrate writes a cpu-local spec with the Plan's kernels, which sim then uses.
mlp=(--model mlp --widths 64,128,10 --batch 32 --devices 2 --strategy tp=2)
check "calibrate writes a cluster spec" 0 "kernels" out -- \
  calibrate "${mlp[@]}" --output "$work/cpu.pbtxt"
verify "the spec holds a kernel table and the host's cores" \
  grep -q "kernel_times" "$work/cpu.pbtxt"
check "sim runs on the calibrated spec" 0 "cpu-local" out -- \
  sim "${mlp[@]}" --cluster "$work/cpu.pbtxt" --ranks 2
check "calibrate needs --output" 2 "--output" err -- calibrate "${mlp[@]}"
check "calibrate --cluster is a GPU calibration's base" 2 "device cuda" err -- \
  calibrate "${mlp[@]}" --cluster hgx-h200 --output "$work/no.pbtxt"
# On a GPU, calibrate --device cuda times the kernels there (scripts/gpu-check); without one a
# CUDA build names the missing GPU (exit 1), a build without CUDA says it has none (exit 2).
if [[ -x "$(dirname "$tf")/gpu_tests" ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  check "calibrate --device cuda names the missing GPU" 1 "no CUDA GPU" err -- \
    calibrate "${gpt[@]}" --device cuda --cluster hgx-h200 --output "$work/gpu.pbtxt"
elif [[ ! -x "$(dirname "$tf")/gpu_tests" ]]; then
  check "calibrate --device cuda needs a CUDA build" 2 "no CUDA" err -- \
    calibrate "${gpt[@]}" --device cuda --output "$work/gpu.pbtxt"
fi
check "sim --ranks must split the devices" 2 "--ranks" err -- \
  sim "${mlp[@]}" --cluster "$work/cpu.pbtxt" --ranks 3

# ZeRO-1 across nodes: a gradient's boxing goes on with a send/recv after its all-reduce, which
# then joins no bucket (a bucket per data-parallel group deadlocked the Plan; compiler.md).
check "sim of zero=1 across two nodes finishes its step" 0 "step time" out -- \
  sim --model llama --layers 1 --hidden 4096 --heads 32 --kv-heads 8 --ffn 16384 \
  --sequence 1024 --vocab 1024 --batch 16 --attention fused \
  --strategy dp=4,tp=4,mb=2,zero=1,precision=bf16 --cluster dgx-h100 --nodes 2 --no-fold

# tune ranks the strategies a cluster allows.
check "tune ranks strategies" 0 "strategies fit" out -- \
  tune "${gpt[@]}" --cluster dgx-h100 --max-micro-batches 2
check "tune prints a ranked table" 0 "rank  strategy" out -- \
  tune "${gpt[@]}" --cluster cpu-local --nodes 2
check "tune chooses strategies itself" 2 "--strategy" err -- \
  tune "${gpt[@]}" --strategy dp=2 --cluster dgx-h100
check "tune --replica simulates one replica per strategy" 0 "one data-parallel replica" out -- \
  tune "${gpt[@]}" --cluster dgx-h100 --nodes 2 --max-micro-batches 2 --replica
verify "and ranks every dp, 16 included" grep -q " dp=16,tp=1" "$work/out"
check "sim --replica may come before other flags" 0 "standing in for 2 data-parallel copies" out -- \
  sim --replica "${gpt[@]}" --strategy dp=2,tp=8 --cluster dgx-h100 --nodes 2

check "tune --with keeps options in every candidate, --json writes the ranking" 0 \
  "precision=bf16" out -- tune "${gpt[@]}" --cluster dgx-h100 --max-micro-batches 1 \
  --with precision=bf16 --json "$work/tune.json"
verify "the JSON ranks every candidate" /usr/bin/python3 -c "import json, sys
r = json.load(open(sys.argv[1]))
ranked = [c for c in r if c['fits']]
assert ranked and [c['rank'] for c in ranked] == list(range(1, len(ranked) + 1))
assert all(c['strategy'].endswith('precision=bf16') for c in r)
assert [c['step_s'] for c in ranked] == sorted(c['step_s'] for c in ranked)" "$work/tune.json"
# A candidate whose kernels alone are slower than the top is not simulated; the top is what
# simulating every candidate (--exhaustive) ranks.
"$tf" tune "${gpt[@]}" --cluster cpu-local --nodes 2 --top 3 >"$work/bounded" 2>/dev/null
"$tf" tune "${gpt[@]}" --cluster cpu-local --nodes 2 --top 3 --exhaustive >"$work/every" 2>/dev/null
verify "tune's top 3 are those of --exhaustive" \
  cmp -s <(sed -n '2,5p' "$work/bounded") <(sed -n '2,5p' "$work/every")
# Proxies: a llama candidate with more than two layers per chunk is estimated from four smaller
# models of its strategy; the printed top is simulated whole, and it is the top of a tune with
# every candidate whole (--no-proxies). Each estimate is within 1% of its whole simulation.
small=(--model llama --layers 6 --hidden 256 --heads 8 --kv-heads 4 --ffn 512 --sequence 128
  --vocab 512 --batch 64 --micro-batch-size 1 --cluster dgx-h100 --top 3)
"$tf" tune "${small[@]}" --json "$work/proxied.json" >/dev/null 2>&1
"$tf" tune "${small[@]}" --no-proxies --json "$work/whole.json" >/dev/null 2>&1
verify "tune's proxies rank as whole models do, their top simulated whole" /usr/bin/python3 -c "
import json, sys
proxied, whole = (json.load(open(f)) for f in sys.argv[1:])
exact = {r['strategy']: r for r in whole}
estimated = [r for r in proxied if r.get('estimated')]
assert estimated, 'no candidate was estimated'
assert not any(r.get('estimated') for r in whole)
assert not any(r.get('estimated') for r in proxied if r['fits'] and r['rank'] <= 3)
assert [r['strategy'] for r in proxied[:3]] == [r['strategy'] for r in whole[:3]]
for r in estimated:
    e = exact[r['strategy']]
    assert e['fits'] == r['fits'], r['strategy']
    if r['fits']:
        assert abs(r['step_s'] / e['step_s'] - 1) < 0.01, (r, e)
        assert abs(r['peak_bytes'] / e['peak_bytes'] - 1) < 0.05, (r, e)" \
  "$work/proxied.json" "$work/whole.json"
"$tf" tune "${small[@]}" --jobs 1 --json "$work/proxied1.json" >/dev/null 2>&1
"$tf" tune "${small[@]}" --jobs 3 --json "$work/proxied3.json" >/dev/null 2>&1
verify "and --jobs 3 estimates as one process, bit for bit" \
  cmp -s "$work/proxied1.json" "$work/proxied3.json"
# --jobs: the candidates shared by forked processes (by default as many as the cores) rank
# exactly as one process ranks them, bit for bit.
"$tf" tune "${gpt[@]}" --cluster dgx-h100 --nodes 2 --jobs 1 --json "$work/one.json" >/dev/null 2>&1
"$tf" tune "${gpt[@]}" --cluster dgx-h100 --nodes 2 --jobs 3 --json "$work/three.json" \
  >"$work/three" 2>/dev/null
verify "tune --jobs 3 ranks as one process, bit for bit" cmp -s "$work/one.json" "$work/three.json"
verify "and says so" grep -q "configurations per minute over 3 processes" "$work/three"
check "tune --jobs 0 is refused" 2 "jobs" err -- tune "${gpt[@]}" --jobs 0
# A forked job that dies ends the tune with an error naming it, not a hang.
: >"$work/err"
"$tf" tune "${gpt[@]}" --cluster dgx-h100 --nodes 2 --max-micro-batches 16 --exhaustive \
  --jobs 2 >/dev/null 2>"$work/err" &
tune_pid=$!
for _ in $(seq 100); do grep -q "^\[job [0-9]*: 1/" "$work/err" && break; sleep 0.1; done
kill -KILL $(cat "/proc/$tune_pid/task/$tune_pid/children")
wait "$tune_pid" && status=0 || status=$?
verify "a killed --jobs process ends the tune with an error naming it" \
  test "$status" = 1 -a -n "$(grep 'process 1 of --jobs 2 .* exited before its share' "$work/err")"
# Ctrl-C: tune stops after the candidate in progress and ranks those done. A tune of some
# seconds (two nodes, every candidate simulated), so that it is still running when the signal
# comes: one node's takes 2 s, and under ctest -j2 it once ended first. The error file is
# emptied first: the progress line waited for must be this tune's, not an earlier command's
# (a signal sent before the tune installs its handler is ignored, as background jobs of a
# script start with SIGINT ignored).
: >"$work/err"
"$tf" tune "${gpt[@]}" --cluster dgx-h100 --nodes 2 --max-micro-batches 16 --exhaustive \
  >"$work/out" 2>"$work/err" &
tune_pid=$!
for _ in $(seq 100); do grep -q "^\[\(job [0-9]*: \)\?1/" "$work/err" && break; sleep 0.1; done
kill -INT "$tune_pid"
wait "$tune_pid"
verify "Ctrl-C prints the ranking of the candidates done" \
  grep -q "interrupted: .* candidates simulated" "$work/out"
verify "with a ranked table" grep -q "rank  strategy" "$work/out"

# On a device of 57 MiB the long-sequence GPT fits only with recomputation, which tune tries as
# candidates of their own (mb=2 recomputed: 54.8 MiB; mb=1 recomputed: 59.9 MiB, which does not
# fit even so).
cat >"$work/small.pbtxt" <<'END'
name: "small" devices_per_node: 1
device { name: "S" peak_flops: 1e14 memory_bandwidth: 1e12 memory_bytes: 59768832
         launch_overhead_s: 4e-6 flops_efficiency: 0.7 memory_efficiency: 0.85 }
intra_node { bandwidth: 1e11 latency_s: 3e-6 efficiency: 0.8 }
inter_node { bandwidth: 1e10 latency_s: 6e-6 efficiency: 0.9 }
END
long=(--model gpt --layers 4 --hidden 64 --heads 4 --sequence 256 --vocab 128 --batch 16)
check "tune recomputes what does not fit" 0 "mb=2,recompute=full" out -- \
  tune "${long[@]}" --cluster "$work/small.pbtxt" --max-micro-batches 2
verify "and drops what does not fit even so" \
  grep -q "dropped dp=1,tp=1,pp=1,mb=1,recompute=full: out of memory" "$work/out"

# A Plan that does not fit: sim says so, exits 3, and its JSON carries the verdict.
check "sim of a Plan that does not fit exits 3" 3 "OUT OF MEMORY" out -- \
  sim "${long[@]}" --cluster "$work/small.pbtxt" --json "$work/oom.json"
verify "its JSON says it does not fit" grep -q '"fits": false, "out_of_memory": true' "$work/oom.json"
verify "and by how much" grep -q '"headroom_bytes": -' "$work/oom.json"
check "sim of a Plan that fits exits 0" 0 "step time" out -- \
  sim "${long[@]}" --cluster "$work/small.pbtxt" --strategy recompute=full,mb=2 --json "$work/fits.json"
verify "its JSON says it fits" grep -q '"fits": true, "out_of_memory": false' "$work/fits.json"

# An LLM on GPUs in fp32 or with unfused attention is yesterday's setup: one warning names the
# flags to change.
check "sim warns of fp32 and unfused attention on GPUs" 0 "set precision=bf16 in the strategy, --attention fused" err -- \
  sim "${gpt[@]}" --cluster dgx-h100
check "and not of bf16 with fused attention" 0 "step time" out -- \
  sim "${gpt[@]}" --cluster dgx-h100 --strategy precision=bf16 --attention fused
verify "no warning then" bash -c "! grep -q warning '$work/err'"

finish
