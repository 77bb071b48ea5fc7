#!/usr/bin/env bash
# Drives `twinflow explain` as a user would: exit codes and messages. Usage:
# explain_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"

gpt=(explain --model gpt --layers 2 --devices 8)
small=(explain --model gpt --layers 1 --hidden 16 --heads 2 --sequence 8 --vocab 16 --batch 4)

# Success paths: the tables the issue asks for.
check "dp=2,tp=4 lists signatures" 0 "signatures" out -- "${gpt[@]}" --strategy dp=2,tp=4
check "dp=2,tp=4 lists boxings" 0 "boxings" out -- "${gpt[@]}" --strategy dp=2,tp=4
check "dp=2,tp=4 lists memory per device" 0 "memory per device" out -- \
  "${gpt[@]}" --strategy dp=2,tp=4
check "dp=2,tp=4 names a tensor-parallel matmul" 0 "block0/fc2/matmul" out -- \
  "${gpt[@]}" --strategy dp=2,tp=4
check "dp=2,tp=4 prints the mesh" 0 "cpu:0-7 [2,4]" out -- "${gpt[@]}" --strategy dp=2,tp=4
check "auto with --hierarchy 2,4" 0 "memory per device" out -- \
  "${small[@]}" --devices 8 --strategy auto --hierarchy 2,4
check "auto with --hierarchy 2,4 uses the mesh" 0 "[2,4]" out -- \
  "${small[@]}" --devices 8 --strategy auto --hierarchy 2,4
check "--summary prints memory" 0 "memory per device" out -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --summary
check "--summary prints the search line" 0 "search:" out -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --summary
check "pipeline stages" 0 "cpu:4-7 [2,2]" out -- \
  "${gpt[@]}" --strategy dp=2,tp=2,pp=2,mb=2,schedule=gpipe
check "mlp with data parallelism" 0 "memory per device" out -- \
  explain --model mlp --widths 8,16,4 --batch 16 --devices 4 --strategy dp=4
check "inference graph" 0 "signatures" out -- "${gpt[@]}" --strategy dp=2,tp=4 --inference
check "adam optimizer" 0 "signatures" out -- "${gpt[@]}" --strategy dp=2,tp=4 --optimizer adam
check "--search propagate on auto" 0 "propagated" out -- \
  "${small[@]}" --devices 4 --strategy auto --search propagate
check "a generous memory limit" 0 "memory per device" out -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --memory-limit 100
check "explain --help exits 0" 0 "usage: twinflow explain" out -- explain --help
check "explain -h wins over other mistakes" 0 "--strategy" out -- explain --nope -h

# Usage mistakes and bad values: exit 2, naming the problem.
check "missing --model" 2 "--model" err -- explain --devices 8
check "unknown model" 2 "unknown model 'bert'" err -- explain --model bert
check "non-number strategy field" 2 "'dp'" err -- "${gpt[@]}" --strategy dp=x,tp=4
check "zero strategy field" 2 "'tp'" err -- "${gpt[@]}" --strategy dp=8,tp=0
check "negative strategy field" 2 "'pp'" err -- "${gpt[@]}" --strategy dp=8,pp=-1
check "unknown strategy field" 2 "'foo'" err -- "${gpt[@]}" --strategy foo=1
check "repeated strategy field" 2 "'dp'" err -- "${gpt[@]}" --strategy dp=2,dp=4
check "bad schedule" 2 "'zigzag'" err -- "${gpt[@]}" --strategy dp=8,schedule=zigzag
check "strategy item without =" 2 "'tp4'" err -- "${gpt[@]}" --strategy dp=2,tp4
check "strategy errors name the flag" 2 "--strategy" err -- "${gpt[@]}" --strategy foo=1
check "devices mismatch" 2 "there are 8" err -- "${gpt[@]}" --strategy dp=2,tp=2
check "--hierarchy with a non-auto strategy" 2 "--hierarchy" err -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --hierarchy 2,4
check "--hierarchy product differs" 2 "[2,2]" err -- "${gpt[@]}" --strategy auto --hierarchy 2,2
check "malformed --hierarchy" 2 "--hierarchy" err -- "${gpt[@]}" --strategy auto --hierarchy 2,x
check "hidden not divisible by heads" 2 "not divisible" err -- \
  explain --model gpt --hidden 10 --heads 4
check "pp larger than layers" 2 "pp=4" err -- "${gpt[@]}" --strategy dp=2,pp=4
check "zero layers" 2 "--layers" err -- explain --model gpt --layers 0
check "non-number devices" 2 "--devices" err -- explain --model gpt --devices eight
check "unknown preset" 2 "gpt4" err -- explain --model gpt --preset gpt4
check "malformed --memory-limit" 2 "--memory-limit" err -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --memory-limit lots
check "negative --memory-limit" 2 "--memory-limit" err -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --memory-limit -1
check "zero --memory-limit" 2 "--memory-limit" err -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --memory-limit 0
check "unknown --search" 2 "--search" err -- "${gpt[@]}" --strategy dp=2,tp=4 --search greedy
check "bad optimizer" 2 "--optimizer" err -- "${gpt[@]}" --strategy dp=2,tp=4 --optimizer rmsprop
check "malformed mlp widths" 2 "--widths" err -- explain --model mlp --widths 8,x,4
check "stray argument" 2 "extra" err -- "${gpt[@]}" --strategy dp=2,tp=4 extra

# A memory limit nothing fits is a runtime failure, not a usage mistake.
check "impossible memory limit exits 1" 1 "memory limit" err -- \
  "${gpt[@]}" --strategy dp=2,tp=4 --memory-limit 0.000001
check "impossible memory limit under auto exits 1" 1 "memory limit" err -- \
  "${small[@]}" --devices 4 --strategy auto --memory-limit 0.000001

# Strategies mean what they say: Megatron's layouts under tp, degrees inferred.
megatron=(explain --model gpt --layers 2 --hidden 256 --heads 8 --devices 4 --strategy tp=4)
# The boxings table's second column is the tensor; no parameter may be boxed (gathered).
no_parameter_boxed() {
  "$tf" "${megatron[@]}" >"$work/megatron" 2>&1 || return 1
  grep -q "^boxings" "$work/megatron" || return 1
  ! awk '/^boxings/ { on = 1; next } /^parallelism/ { on = 0 }
         on && $2 ~ /^(wte|wpe|lm_head)$|\/(weight|bias|gamma|beta)$/ { print; bad = 1 }
         END { exit bad ? 0 : 1 }' "$work/megatron"
}
verify "tp=4 boxes (all-gathers) no parameter" no_parameter_boxed
check "tp=4 prints the parallelism per op family" 0 "9 column, 4 row" out -- "${megatron[@]}"
check "tp=4 embedding is vocabulary-parallel" 0 "1 vocabulary" out -- "${megatron[@]}"
check "dp inferred from --devices" 0 "strategy dp=4,tp=2" out -- \
  explain --model gpt --layers 2 --devices 8 --strategy tp=2 --summary
check "devices default to the product of the degrees" 0 "on 4 devices" out -- \
  explain --model mlp --widths 8,16,4 --batch 16 --strategy dp=2,tp=2 --summary
check "tp=auto is inferred and searched" 0 "tp=auto" out -- \
  explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=auto --summary
check "--micro-batch-size counts per replica" 0 "mb=2" out -- \
  explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=4 --batch 8 \
  --micro-batch-size 2 --summary
check "--global-batch-size is --batch" 0 "mb=4" out -- \
  explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=4 --global-batch-size 16 \
  --micro-batch-size 2 --summary
check "uninferable dp names --strategy and the devices" 2 "cannot infer dp" err -- \
  explain --model gpt --layers 2 --devices 8 --strategy tp=3
check "degree errors name --strategy, not --model" 2 "--strategy dp=2,tp=2 (--devices 8)" err -- \
  "${gpt[@]}" --strategy dp=2,tp=2
check "pp=auto is refused" 2 "'pp' cannot be auto" err -- "${gpt[@]}" --strategy pp=auto
check "--micro-batch-size must divide the batch per replica" 2 "--micro-batch-size 3" err -- \
  explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=4 --batch 8 --micro-batch-size 3
check "--micro-batch-size must agree with mb" 2 "mb=1" err -- \
  explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=4,mb=1 --batch 8 \
  --micro-batch-size 2
check "--global-batch-size must agree with --batch" 2 "--global-batch-size" err -- \
  explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=4 --batch 8 --global-batch-size 16

finish
