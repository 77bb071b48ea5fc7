#!/usr/bin/env bash
# Drives `twinflow memory` as a user would: the Plan's memory per stage, the same arena `sim`
# reports, categories that add up to the planned peak, the optimizer named, and bad input.
# Usage: memory_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"

gpt=(--model gpt --layers 2 --hidden 64 --heads 4 --sequence 16 --vocab 128 --batch 16)

check "memory prints the arena per stage" 0 "optimizer state" out -- \
  memory "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=4 --cluster dgx-h100 --json "$work/memory.json"
check "memory names devices by the cluster's kind, as sim does" 0 "gpu:0" out -- \
  memory --model gpt --layers 2 --hidden 64 --heads 4 --sequence 16 --vocab 128 --batch 16 \
  --strategy dp=2 --cluster dgx-h100
check "a gpt trains with AdamW by default" 0 "optimizer adamw:lr=0.001" out -- \
  memory "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=4 --cluster dgx-h100
"$tf" sim "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=4 --cluster dgx-h100 \
  --json "$work/sim.json" >/dev/null 2>&1
verify "memory's arena is sim's, device by device; the categories sum to the planned peak" \
  /usr/bin/python3 -c "import json, sys; m = json.load(open(sys.argv[1]))['devices']
s = json.load(open(sys.argv[2]))['devices_report']
assert len(m) == len(s) == 8, (len(m), len(s))
assert [d['arena_bytes'] for d in m] == [d['arena_bytes'] for d in s]
assert [d['peak_bytes'] for d in m] == [d['peak_bytes'] for d in s]
assert sorted({d['stage'] for d in m}) == [0, 1]
keys = ['weights_bytes', 'gradients_bytes', 'optimizer_state_bytes', 'activations_bytes',
        'communication_bytes']
for d in m:
    assert sum(d[k] for k in keys) == d['peak_bytes'] <= d['arena_bytes'], d
    assert d['weights_bytes'] > 0 and d['optimizer_state_bytes'] > 0 and d['gradients_bytes'] > 0, d" \
  "$work/memory.json" "$work/sim.json"
check "sgd has no optimizer state" 0 "optimizer sgd:" out -- \
  memory "${gpt[@]}" --strategy dp=2 --cluster dgx-h100 --devices 2 --optimizer sgd \
  --json "$work/sgd.json"
verify "sgd's optimizer state is empty" /usr/bin/python3 -c "import json, sys
assert all(d['optimizer_state_bytes'] == 0 for d in json.load(open(sys.argv[1]))['devices'])" \
  "$work/sgd.json"
recompute=(--model gpt --layers 4 --hidden 64 --heads 4 --sequence 32 --vocab 128 --batch 8
  --strategy dp=2,tp=2,recompute=full --cluster dgx-a100 --devices 4)
"$tf" sim "${recompute[@]}" --json "$work/recompute.json" >/dev/null 2>&1
verify "under full recomputation the planned peak is the live peak, the arena near it" \
  /usr/bin/python3 -c "import json, sys
for d in json.load(open(sys.argv[1]))['devices_report']:
    assert d['live_peak_bytes'] <= d['peak_bytes'] <= 1.01 * d['live_peak_bytes'], d
    assert d['arena_bytes'] <= 1.08 * d['live_peak_bytes'], d" \
  "$work/recompute.json"
check "memory --replica is one data-parallel replica" 0 "standing in for 2 data-parallel copies" out -- \
  memory "${gpt[@]}" --strategy dp=2,tp=8 --cluster dgx-h100 --nodes 2 --replica
check "an unknown cluster is named" 2 "unknown cluster 'dgx-z1'" err -- \
  memory "${gpt[@]}" --strategy dp=2 --cluster dgx-z1
check "a bad optimizer names the flag" 2 "--optimizer" err -- \
  memory "${gpt[@]}" --strategy dp=2 --cluster dgx-h100 --optimizer rmsprop
finish
