#!/usr/bin/env bash
# Drives `--megatron-args` and `--torchtitan` as a user would: their own job, read into
# twinflow's flags, simulated on a cluster; and the refusals that name what cannot be read.
# Usage: import_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"
configs="$(cd "$(dirname "$0")/../../examples/configs" && pwd)"

# The shipped Megatron-LM launch of Llama-2-7B: everything after pretrain_gpt.py is read.
megatron="$(sed -n '/^ *pretrain_gpt.py/,$p' "$configs/megatron_llama2_7b.sh" | tr -d '\\\n')"
check "sim --megatron-args runs a Megatron 7B line on 4 nodes" 0 "simulated llama, strategy dp=16,tp=2" out -- \
  sim --megatron-args "$megatron" --cluster dgx-h100 --nodes 4
verify "its model line is printed" grep -q -- "--megatron-args: model llama --layers 32 --hidden 4096" "$work/err"
verify "its strategy line is printed" grep -q -- "--megatron-args: strategy tp=2,pp=1,sp=true,zero=1,precision=bf16" "$work/err"
verify "the flags of no cost are listed in one line" grep -q -- "--megatron-args: ignored (no cost here):.*--lr" "$work/err"
check "a flag given twice, by the line and by hand, is named" 2 "--layers is given on the command line and by --megatron-args" err -- \
  sim --megatron-args "$megatron" --layers 4 --cluster dgx-h100
check "contradicting flags are named both" 2 "--fp16" err -- \
  sim --megatron-args "$megatron --fp16" --cluster dgx-h100
check "context parallelism is refused by name" 2 "--context-parallel-size" err -- \
  sim --megatron-args "$megatron --context-parallel-size 2" --cluster dgx-h100

# The shipped torchtitan config (tensor parallelism 8) on one node.
check "sim --torchtitan runs llama3_8b.toml on one node" 0 "simulated llama, strategy dp=1,tp=8" out -- \
  sim --torchtitan "$configs/llama3_8b.toml" --cluster dgx-h100 --nodes 1
verify "its model line is printed" grep -q -- "--torchtitan .*: model llama --preset llama3-8b" "$work/err"
sed 's/^data_parallel_shard_degree = 1/data_parallel_shard_degree = 8/' "$configs/llama3_8b.toml" >"$work/fsdp.toml"
check "an FSDP degree is refused by name" 2 "data_parallel_shard_degree" err -- \
  sim --torchtitan "$work/fsdp.toml" --cluster dgx-h100
check "a missing file is named" 2 "nowhere.toml" err -- sim --torchtitan "$work/nowhere.toml"

finish
