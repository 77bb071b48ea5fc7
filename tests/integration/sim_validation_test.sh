#!/usr/bin/env bash
# The simulator against real runs on this machine: for data, tensor, pipeline and hybrid
# parallelism on the MLP and a small GPT, calibrate cpu-local for the job, run it for real
# under mpirun -np 2, simulate the same Plan, and compare the step times. The real figure is the
# fastest of three runs of SIM_STEPS steps (default 30: the first step's MPI and allocation
# warm-up, which the simulator does not model, weighs on a short run's mean). Prints the table;
# fails when an error exceeds SIM_MAX_ERROR percent (default 35: a guard against regressions;
# on the AMD EPYC hosts of 2026-12 the simulator is 12-26% fast on tp and pp, docs/simulator.md;
# a judged job beyond it is calibrated and measured again, up to three attempts in all, in case
# other load skewed the calibration or the runs; the goal is 10, docs/simulator.md has the
# figures). The GPT hybrid runs four device threads
# on two cores, and its real time swings from run to run (24 to 40 ms for the same Plan), so it
# is reported, not judged.
# Usage: sim_validation_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
limit="${SIM_MAX_ERROR:-35}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
steps="${SIM_STEPS:-30}"
failed=0

mlp=(--model mlp --widths 784,2048,2048,10 --batch 256 --optimizer sgd:lr=0.01)
gpt=(--model gpt --layers 2 --hidden 128 --heads 4 --sequence 32 --vocab 256 --batch 16
     --optimizer adam:lr=0.001)

ms() {  # "step time 51.5 ms (...)" -> milliseconds
  awk '/step time/ { v = $3; u = $4; if (u == "s") v *= 1000; else if (u == "us") v /= 1000;
        printf "%.3f", v; exit }'
}

printf "%-4s %-22s %10s %10s %8s\n" model strategy "real ms" "sim ms" error
# One attempt at a job: calibrate, the fastest of three real runs, simulate. Sets real, sim
# and error; returns 1 when a step time is missing.
attempt() {
  "$tf" calibrate "${job[@]}" --output "$work/cal.pbtxt" >/dev/null 2>"$work/err" ||
    { echo "FAIL - calibrate $name $strategy"; cat "$work/err"; return 1; }
  real=""
  # The fastest of three real runs: the machine's other load only ever slows a run down.
  for _ in 1 2 3; do
    run=$(timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$tf" run "${job[@]}" \
      --steps "$steps" 2>"$work/err" | ms)
    if [ -n "$run" ] && { [ -z "$real" ] || awk -v a="$run" -v b="$real" 'BEGIN { exit !(a < b) }'; }; then
      real="$run"
    fi
  done
  sim=$("$tf" sim "${job[@]}" --cluster "$work/cal.pbtxt" --ranks 2 --steps "$steps" \
    2>"$work/err" | ms)
  if [ -z "$real" ] || [ -z "$sim" ]; then
    echo "FAIL - $name $strategy: no step time"
    cat "$work/err"
    return 1
  fi
  error=$(awk -v r="$real" -v s="$sim" 'BEGIN { printf "%+.1f", 100 * (s - r) / r }')
}

beyond() { awk -v e="$error" -v l="$limit" 'BEGIN { exit !(e > l || e < -l) }'; }

check() {  # check judge|report MODEL DEVICES STRATEGY FLAGS...
  local judge="$1" name="$2" devices="$3" strategy="$4"
  shift 4
  local job=("$@" --devices "$devices" --strategy "$strategy")
  local real="" sim="" run="" error="" tries=1
  attempt || { failed=1; return; }
  # Beyond the limit: the calibration or the real runs may have met a burst of other load (a
  # calibration caught in a fast phase makes every prediction fast), so the whole job, its
  # calibration included, is measured again, up to twice more; the last attempt is judged.
  while [ "$judge" = judge ] && beyond && [ "$tries" -lt 3 ]; do
    printf "%-4s %-22s %10s %10s %7s%%  (attempt %d, measured again)\n" "$name" "$strategy" \
      "$real" "$sim" "$error" "$tries"
    tries=$((tries + 1))
    attempt || { failed=1; return; }
  done
  printf "%-4s %-22s %10s %10s %7s%%%s\n" "$name" "$strategy" "$real" "$sim" "$error" \
    "$([ "$judge" = report ] && echo "  (reported only)")"
  if [ "$judge" = judge ] && beyond; then
    echo "FAIL - $name $strategy: error $error% beyond $limit% in $tries attempts"
    failed=1
  fi
}

check judge mlp 2 dp=2 "${mlp[@]}"
check judge mlp 2 tp=2 "${mlp[@]}"
check judge mlp 2 pp=2,mb=4 "${mlp[@]}"
check judge mlp 4 dp=2,tp=2 "${mlp[@]}"
check judge gpt 2 dp=2 "${gpt[@]}"
check judge gpt 2 tp=2 "${gpt[@]}"
check judge gpt 2 pp=2,mb=4 "${gpt[@]}"
check report gpt 4 dp=2,tp=2 "${gpt[@]}"
[ "$failed" -eq 0 ] && echo "every judged job within $limit%"
exit "$failed"
