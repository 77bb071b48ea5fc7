#!/usr/bin/env bash
# The hardening cases, driven as a user would: special output paths, inputs that could block,
# sizes that would never finish, extreme cluster specs, non-finite values, and runs killed
# part-way that keep what they computed. Usage: hardening_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"

mlp=(--model mlp --widths 12,24,16,5 --batch 8 --devices 2)

# Outputs: a device is written in place, never replaced by a regular file.
check "compile --output /dev/null succeeds" 0 "wrote /dev/null" out -- \
  compile "${mlp[@]}" --strategy dp=2 --output /dev/null
verify "/dev/null is still a character device" test -c /dev/null
check "compile --output /dev/full fails naming the cause" 2 "No space left on device" err -- \
  compile "${mlp[@]}" --strategy dp=2 --output /dev/full
mkfifo "$work/out.fifo"
cat "$work/out.fifo" >"$work/from_fifo" &
reader=$!
check "compile --output into a FIFO writes through it" 0 "wrote $work/out.fifo" out -- \
  compile "${mlp[@]}" --strategy dp=2 --output "$work/out.fifo"
# A compile that failed before opening the FIFO leaves the reader blocked in open(): release it
# (a writer that opens and closes) rather than wait for ever.
if kill -0 "$reader" 2>/dev/null; then timeout 5 bash -c ": >'$work/out.fifo'" || true; fi
wait "$reader"
verify "the FIFO is still a FIFO and carried the Plan" \
  bash -c "test -p '$work/out.fifo' && test -s '$work/from_fifo'"
check "compile --output a folder is refused" 2 "it is a directory" err -- \
  compile "${mlp[@]}" --strategy dp=2 --output "$work"

# Inputs: a FIFO as --plan is refused at once instead of blocking for ever.
mkfifo "$work/plan.fifo"
check "run --plan a FIFO is refused" 2 "not a regular file" err -- \
  run "${mlp[@]}" --strategy dp=2 --plan "$work/plan.fifo" --steps 1

# Sizes: meshes of many unit axes plan at once; deeper ones and huge searches are refused.
check "boxing over eight unit mesh axes plans at once" 0 "total: 1 step" out -- \
  boxing --from "cpu:0 [1,1,1,1,1,1,1,1] (B,B,B,B,B,B,B,B)" --to "cpu:0 B" --shape 8,8
check "boxing on a 10-axis mesh is refused" 2 "has 10 axes (at most 8)" err -- \
  boxing --from "cpu:0 [1,1,1,1,1,1,1,1,1,1] (B,B,B,B,B,B,B,B,B,B)" --to "cpu:0 B" --shape 8,8
check "a boxing search over 1.7 M layouts names its cap" 2 "more than its cap of 10000" err -- \
  boxing --from "cpu:0-255 [2,2,2,2,2,2,2,2] (S(0),B,B,B,B,B,B,P)" \
  --to "cpu:0-255 [2,2,2,2,2,2,2,2] (B,B,B,B,B,B,B,S(1))" --shape 256,256
check "explain with widths whose product overflows is refused" 2 "more than 2^60 elements" err -- \
  explain --model mlp --widths 9223372036854775807,4,4 --batch 8 --devices 2
# The SBP search over a 65,536-device placement: it took minutes, summing every piece of every
# send_recv; summed per device in closed form it takes seconds. `timeout` bounds a regression.
start=$(date +%s)
timeout 120 "$tf" explain --model mlp --devices 65536 --summary >"$work/out" 2>"$work/err"
verify "explain over 65,536 devices finishes ($(($(date +%s) - start)) s)" \
  grep -q "65536 devices" "$work/out"
check "explain of a 20,000-layer GPT is refused before it is built" 2 "more than the cap" err -- \
  explain --model gpt --layers 20000 --summary
check "run --devices-per-rank 0 is refused" 2 "--devices-per-rank" err -- \
  run "${mlp[@]}" --strategy dp=2 --devices-per-rank 0 --steps 1

# Arenas that would not fit this machine together are refused before any is allocated.
check "run with arenas larger than the machine's memory is refused" 1 "bytes of memory available" err -- \
  run --model mlp --widths 60000,60000,4 --batch 2 --devices 2 --strategy dp=2 --steps 1

# Cluster specs: link costs that once broke lowering are refused naming the field.
sed 's/inter_node { bandwidth: 1e10/inter_node { bandwidth: 1e-30/' >"$work/slow.pbtxt" <<'PBTXT'
name: "slow" devices_per_node: 2
device { name: "d" peak_flops: 1e12 memory_bandwidth: 1e11 memory_bytes: 1000000000
         launch_overhead_s: 1e-6 flops_efficiency: 1 memory_efficiency: 1 }
intra_node { bandwidth: 1e10 latency_s: 1e-6 efficiency: 1 }
inter_node { bandwidth: 1e10 latency_s: 1e-6 efficiency: 1 }
PBTXT
check "sim with a bandwidth of 1e-30 names the field" 2 "inter_node.bandwidth (bytes/s) is 1e-30" err -- \
  sim "${mlp[@]}" --strategy dp=2 --cluster "$work/slow.pbtxt"

# Numerics: a diverging run stops at the first op that wrote a NaN or infinity.
check "run --check-finite names the op that overflowed" 1 "(--check-finite)" err -- \
  run "${mlp[@]}" --strategy dp=2 --optimizer sgd:lr=1e30 --steps 4 --check-finite

# Checkpoints: every N steps, the K newest kept, each loadable.
check "run --save-every 2 --keep 2" 0 "saved $work/ck/checkpoint.twck at step 6" out -- \
  run "${mlp[@]}" --strategy dp=2 --steps 6 --save "$work/ck" --save-every 2 --keep 2
verify "the newest and one older checkpoint remain" \
  bash -c "cd '$work/ck' && [ \"\$(ls | tr '\n' ' ')\" = 'checkpoint-4.twck checkpoint.twck ' ]"
check "run --load an older checkpoint file starts at its step" 0 "step    4  loss" out -- \
  run "${mlp[@]}" --strategy dp=2 --steps 1 --load "$work/ck/checkpoint-4.twck"
check "--keep without --save is refused" 2 "need --save DIR" err -- \
  run "${mlp[@]}" --strategy dp=2 --steps 1 --keep 2
check "--losses-out /dev/full is refused at the first step" 2 "--losses-out: cannot write" err -- \
  run "${mlp[@]}" --strategy dp=2 --steps 2 --losses-out /dev/full

# A run killed part-way keeps the losses it computed and its last periodic checkpoint, with
# no temporary file left behind.
"$tf" run "${mlp[@]}" --strategy dp=2 --steps 100000 --losses-out "$work/losses.txt" \
  --save "$work/killed" --save-every 50 >/dev/null 2>&1 &
runner=$!
for _ in $(seq 1 300); do
  [ -s "$work/killed/checkpoint.twck" ] && [ "$(wc -l <"$work/losses.txt")" -ge 60 ] && break
  sleep 0.1
done
kill -9 "$runner" 2>/dev/null
wait "$runner" 2>/dev/null
verify "the killed run's losses were written as computed" \
  test "$(wc -l <"$work/losses.txt")" -ge 60
verify "no temporary file outlived the kill" \
  bash -c "! ls '$work/killed' | grep -q tmp"
check "the killed run's checkpoint loads" 0 "loss" out -- \
  run "${mlp[@]}" --strategy dp=2 --steps 1 --load "$work/killed"

finish
