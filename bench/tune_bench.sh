#!/usr/bin/env bash
# The tuner against the strategies a Megatron user writes by hand: for each case, `twinflow
# tune` ranks the whole space (wall time, this machine's cores), and `twinflow sim` simulates the
# hand-written strategies; the line printed gives both and the ratio of their step times.
# Targets (issue 36, on a 2-core machine): Llama-3-8B on 8 DGX-H100 nodes <= 10 s, Llama-3-70B
# on 32 <= 60 s, GPT-3 175B on 128 <= 120 s, each winner at least as fast as the best by hand.
# Usage: bench/tune_bench.sh [BUILD_DIR] [CASE...]   (cases: 8b 70b 175b; default: all three)
set -euo pipefail
build="${1:-build}"
shift || true
cases=("$@")
[[ ${#cases[@]} -eq 0 ]] && cases=(8b 70b 175b)
tf="$build/bin/twinflow"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The step time `sim` gives a strategy, or "-" where it does not fit or run.
step_of() {  # model flags... -- strategy
  local args=() strategy
  while [[ "$1" != -- ]]; do args+=("$1"); shift; done
  strategy="$2"
  "$tf" sim "${args[@]}" --strategy "$strategy" --json "$work/sim.json" >/dev/null 2>&1 || {
    echo "-"; return; }
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step_s'])" "$work/sim.json"
}

bench_case() {  # label nodes "model flags" hand-written strategies...
  local label="$1" nodes="$2"
  read -r -a model <<<"$3"
  shift 3
  local cluster=(--cluster dgx-h100 --nodes "$nodes")
  local start end
  start=$(date +%s.%N)
  "$tf" tune "${model[@]}" "${cluster[@]}" --top 5 --json "$work/tune.json" >"$work/tune.out" 2>/dev/null || true
  end=$(date +%s.%N)
  local best
  best=$(/usr/bin/python3 -c "
import json,sys
rows=[r for r in json.load(open(sys.argv[1])) if r['fits']]
print(rows[0]['strategy'], rows[0]['step_s']) if rows else print('- -')" "$work/tune.json")
  echo "$label: tune $(grep '^tuned' "$work/tune.out" | sed 's/; optimizer.*//; s/^tuned [a-z]* on //')"
  echo "  tune wall $(/usr/bin/python3 -c "print(f'{$end-$start:.1f}')") s; winner ${best% *} at ${best#* } s"
  local hand_best=""
  for s in "$@"; do
    local step
    step=$(step_of "${model[@]}" "${cluster[@]}" --attention fused -- "$s,precision=bf16")
    echo "  by hand: $s: ${step} s"
    if [[ "$step" != - ]] && { [[ -z "$hand_best" ]] || /usr/bin/python3 -c "import sys; sys.exit(not $step < $hand_best)"; }; then
      hand_best="$step"
    fi
  done
  [[ -n "$hand_best" && "${best#* }" != - ]] &&
    echo "  winner / best by hand: $(/usr/bin/python3 -c "print(f'{${best#* }/$hand_best:.3f}')")"
}

for c in "${cases[@]}"; do
  case "$c" in
    8b) bench_case "Llama-3-8B, 8 nodes" 8 "--model llama --preset llama3-8b" \
          dp=64,mb=8,zero=1 dp=32,tp=2,mb=16,sp=true,zero=1 dp=16,tp=4,mb=32,sp=true,zero=1 \
          dp=32,pp=2,mb=16,zero=1 dp=16,tp=2,pp=2,mb=32,sp=true,zero=1 ;;
    70b) bench_case "Llama-3-70B, 32 nodes" 32 "--model llama --preset llama3-70b" \
          dp=8,tp=8,pp=4,mb=64,sp=true,zero=1 dp=8,tp=8,pp=4,vp=5,mb=64,sp=true,zero=1 \
          dp=16,tp=8,pp=2,mb=32,sp=true,zero=1,recompute=full dp=4,tp=8,pp=8,mb=128,sp=true,zero=1 \
          dp=16,tp=4,pp=4,mb=32,sp=true,zero=1 ;;
    175b) bench_case "GPT-3 175B, 128 nodes" 128 "--model gpt --preset gpt3-175b" \
          dp=8,tp=8,pp=16,mb=192,sp=true,zero=1 dp=16,tp=8,pp=8,mb=96,sp=true,zero=1 \
          dp=16,tp=8,pp=8,vp=2,mb=96,sp=true,zero=1 dp=8,tp=8,pp=16,vp=3,mb=192,sp=true,zero=1 \
          dp=32,tp=8,pp=4,mb=48,sp=true,zero=1,recompute=full ;;
    *) echo "unknown case '$c' (8b, 70b, 175b)" >&2; exit 2 ;;
  esac
done
