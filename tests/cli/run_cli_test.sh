#!/usr/bin/env bash
# Drives `twinflow compile` and `twinflow run` as a user would: exit codes, messages, the Plan
# file and the reference check. Usage: run_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"

mlp=(--model mlp --widths 12,24,16,5 --batch 8 --devices 4)

# compile writes a Plan and summarises it.
check "compile writes the plan" 0 "wrote $work/plan.pb" out -- \
  compile "${mlp[@]}" --strategy dp=2,tp=2 --output "$work/plan.pb"
if [ -s "$work/plan.pb" ]; then
  echo "ok   - the plan file is not empty"
  passed=$((passed + 1))
else
  echo "FAIL - the plan file is missing or empty"
  failed=$((failed + 1))
fi
check "compile reports memory per device" 0 "memory per device" out -- \
  compile "${mlp[@]}" --strategy dp=2,pp=2,mb=4 --output "$work/pipeline.pb"
check "compile needs --output" 2 "--output" err -- compile "${mlp[@]}" --strategy dp=4
check "compile into a missing folder fails naming it" 2 "$work/no/such/dir" err -- \
  compile "${mlp[@]}" --strategy dp=4 --output "$work/no/such/dir/plan.pb"

# run trains and checks against the single-device reference.
check "run --check matches the reference" 0 "largest relative difference" out -- \
  run "${mlp[@]}" --strategy dp=2,tp=2 --steps 3 --check
check "run prints a step time" 0 "step time" out -- run "${mlp[@]}" --strategy tp=4 --steps 2
check "run a pipeline with micro-batches" 0 "largest relative difference" out -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=4,schedule=gpipe --steps 2 --check
check "run --steps 0 is refused" 2 "--steps" err -- run "${mlp[@]}" --strategy dp=4 --steps 0
check "run with a strategy that needs more devices" 2 "devices" err -- \
  run "${mlp[@]}" --strategy dp=8 --steps 1
check "run with a batch micro-batches do not divide" 2 "not divisible by mb=3" err -- \
  run "${mlp[@]}" --strategy dp=4,mb=3 --steps 1
check "unknown cost model" 2 "cost model" err -- \
  run "${mlp[@]}" --strategy dp=4 --steps 1 --cost-model quantum
check "run --help exits 0" 0 "usage: twinflow run" out -- run --help
check "compile --help exits 0" 0 "usage: twinflow compile" out -- compile --help

finish
