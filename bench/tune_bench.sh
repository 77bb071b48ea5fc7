#!/usr/bin/env bash
# How fast `twinflow tune` explores strategies, in configurations per minute from tune's own
# summary: a small GPT (2 layers) on one DGX-H100 (116 candidate strategies) and on two (164),
# and with batch 1024 on 128 nodes (1,024 GPUs, 196 candidates; the 2-layer model refuses at once
# the 105 whose pipeline has more stages than layers), each in one process (--jobs 1) and in
# tune's default processes (one per core); then the same GPT with 8 layers on the 1,024 GPUs,
# where every candidate is a strategy that must be screened, compiled or simulated.
# Usage: bench/tune_bench.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
run() {  # label, tune flags...
  local label="$1"
  shift
  "$build/bin/twinflow" tune "$@" 2>/dev/null |
    awk -v l="$label" '/^tuned/ { sub(/^tuned gpt on /, ""); sub(/; optimizer.*/, ""); print l ": " $0 }'
}
gpt=(--model gpt --layers 2 --hidden 256 --heads 8 --sequence 64 --vocab 1000)
for nodes in 1 2 128; do
  batch=32
  [[ "$nodes" == 128 ]] && batch=1024
  for jobs in 1 default; do
    flags=()
    [[ "$jobs" == 1 ]] && flags=(--jobs 1)
    run "2 layers, jobs $jobs" "${gpt[@]}" --batch "$batch" --cluster dgx-h100 --nodes "$nodes" \
      "${flags[@]}"
  done
done
gpt8=(--model gpt --layers 8 --hidden 256 --heads 8 --sequence 64 --vocab 1000 --batch 1024)
run "8 layers, jobs 1" "${gpt8[@]}" --cluster dgx-h100 --nodes 128 --jobs 1
run "8 layers, jobs default" "${gpt8[@]}" --cluster dgx-h100 --nodes 128
