#!/usr/bin/env bash
# How fast `twinflow tune` explores strategies: a small GPT on one DGX-H100 (116 candidate
# strategies) and on two (164), printing configurations per minute from tune's own summary.
# Usage: bench/tune_bench.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
gpt=(--model gpt --layers 2 --hidden 256 --heads 8 --sequence 64 --vocab 1000 --batch 32)
for nodes in 1 2; do
  "$build/bin/twinflow" tune "${gpt[@]}" --cluster dgx-h100 --nodes "$nodes" 2>/dev/null |
    awk -v n="$nodes" '/^tuned/ { sub(/^tuned /, ""); print "dgx-h100 x " n ": " $0 }'
done
