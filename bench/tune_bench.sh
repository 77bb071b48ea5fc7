#!/usr/bin/env bash
# How fast `twinflow tune` explores strategies: a small GPT on one DGX-H100 (116 candidate
# strategies) and on two (164), and with batch 1024 on 128 (1,024 GPUs, 196 candidates, about a
# minute), printing configurations per minute from tune's own summary.
# Usage: bench/tune_bench.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
gpt=(--model gpt --layers 2 --hidden 256 --heads 8 --sequence 64 --vocab 1000)
for nodes in 1 2 128; do
  batch=32; [[ "$nodes" == 128 ]] && batch=1024
  "$build/bin/twinflow" tune "${gpt[@]}" --batch "$batch" --cluster dgx-h100 --nodes "$nodes" \
    2>/dev/null | awk -v n="$nodes" '/^tuned/ { sub(/^tuned /, ""); print "dgx-h100 x " n ": " $0 }'
done
