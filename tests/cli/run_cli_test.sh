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
verify "the plan file is not empty" test -s "$work/plan.pb"
check "compile reports memory per device" 0 "memory per device" out -- \
  compile "${mlp[@]}" --strategy dp=2,pp=2,mb=4 --output "$work/pipeline.pb"
check "compile needs --output" 2 "--output" err -- compile "${mlp[@]}" --strategy dp=4
check "compile into a missing folder fails naming it" 2 "$work/no/such/dir" err -- \
  compile "${mlp[@]}" --strategy dp=4 --output "$work/no/such/dir/plan.pb"

# run trains and checks against the single-device reference.
check "run --check matches the reference" 0 "largest relative difference" out -- \
  run "${mlp[@]}" --strategy dp=2,tp=2 --steps 3 --check
check "run prints a step time" 0 "step time" out -- run "${mlp[@]}" --strategy tp=4 --steps 2
check "run infers dp=2 from 4 devices and tp=2" 0 "strategy dp=2,tp=2" out -- \
  run "${mlp[@]}" --strategy tp=2 --steps 1 --check
check "run a pipeline with micro-batches" 0 "largest relative difference" out -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=4,schedule=gpipe --steps 2 --check
check "run --steps 0 is refused" 2 "--steps" err -- run "${mlp[@]}" --strategy dp=4 --steps 0
check "run with a strategy that needs more devices" 2 "devices" err -- \
  run "${mlp[@]}" --strategy dp=8 --steps 1
check "run with a batch micro-batches do not divide" 2 "not divisible by mb=3" err -- \
  run "${mlp[@]}" --strategy dp=4,mb=3 --steps 1
check "run with micro-batches smaller than dp" 2 "fewer than dp=4" err -- \
  run "${mlp[@]}" --strategy dp=4,mb=4 --steps 1
check "unknown cost model" 2 "cost model" err -- \
  run "${mlp[@]}" --strategy dp=4 --steps 1 --cost-model quantum
# run --plan runs a compiled Plan file instead of compiling.
check "run --plan runs the compiled pipeline" 0 "largest relative difference" out -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=4 --plan "$work/pipeline.pb" --steps 2 --check
check "run --plan for another model is refused" 2 "not compiled for this model" err -- \
  run --model mlp --widths 12,24,16,6 --batch 8 --devices 4 --strategy dp=2,pp=2,mb=4 \
  --plan "$work/pipeline.pb" --steps 1
check "run --plan with other micro-batches is refused" 2 "micro-batches" err -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=2 --plan "$work/pipeline.pb" --steps 1
head -c 200 "$work/pipeline.pb" > "$work/truncated.pb"
check "run --plan with a truncated file" 2 "truncated.pb" err -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=4 --plan "$work/truncated.pb" --steps 1
check "run --plan with a missing file" 2 "nothing.pb" err -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=4 --plan "$work/nothing.pb" --steps 1
# run --trace writes every act as a Chrome trace, in the format sim writes.
check "run --trace writes a trace" 0 "step time" out -- \
  run "${mlp[@]}" --strategy dp=2,pp=2,mb=4 --steps 2 --trace "$work/run_trace.json"
verify "the run trace has acts of all 4 devices, communication included" \
  /usr/bin/python3 -c "import json, sys; t = json.load(open(sys.argv[1]))['traceEvents'];
acts = [e for e in t if e.get('ph') == 'X']
assert {e['pid'] for e in acts} == {0, 1, 2, 3} and any(e['tid'] == 1 for e in acts)" \
  "$work/run_trace.json"
# GPT with the fused attention op: checked against the reference, and a bad kind is refused.
gpt=(--model gpt --layers 2 --hidden 16 --heads 4 --sequence 8 --vocab 32 --batch 4)
check "run gpt --attention fused matches the reference" 0 "largest relative difference" out -- \
  run "${gpt[@]}" --devices 4 --strategy tp=2,dp=2 --attention fused --steps 2 --check
check "run gpt in bf16 is checked within the bf16 tolerance" 0 "within 5.00e-03 (the tolerance of bf16)" out -- \
  run "${gpt[@]}" --devices 4 --strategy dp=2,tp=2,precision=bf16 --steps 2 --check
check "run gpt in fp16 scales the loss and clips" 0 "within 5.00e-03 (the tolerance of f16)" out -- \
  run "${gpt[@]}" --devices 4 --strategy dp=2,pp=2,mb=2,precision=fp16 --optimizer adamw:clip_grad=1 --steps 2 --check
check "run llama in bf16 matches the reference" 0 "within 5.00e-03 (the tolerance of bf16)" out -- \
  run --model llama --devices 4 --strategy dp=2,tp=2,precision=bf16 --steps 3 --check
cat >"$work/config.json" <<'JSON'
{"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
 "num_key_value_heads": 2, "num_hidden_layers": 2, "max_position_embeddings": 16,
 "vocab_size": 64, "rms_norm_eps": 1e-6, "tie_word_embeddings": false}
JSON
check "run llama --hf-config reads the sizes" 0 "largest relative difference" out -- \
  run --model llama --hf-config "$work/config.json" --devices 2 --strategy tp=2 --steps 2 --check
check "run gpt --hf-config of a llama names the model to use" 2 "run it with --model llama" err -- \
  run --model gpt --hf-config "$work/config.json" --steps 1
check "run --hf-config with a missing file" 2 "--hf-config: cannot read $work/none.json" err -- \
  run --model llama --hf-config "$work/none.json" --steps 1
check "run llama with an unknown preset lists the presets" 2 "llama3-405b" err -- \
  run --model llama --preset llama4 --steps 1
check "run llama with kv heads that do not divide the heads" 2 "not divisible by kv_heads 3" err -- \
  run --model llama --kv-heads 3 --steps 1
check "run llama with zero=1 in bf16 matches the reference" 0 "zero=1" out -- \
  run --model llama --devices 4 --strategy dp=2,tp=2,precision=bf16,zero=1 --steps 3 --check
check "run llama interleaved (pp=2,vp=2) matches the reference" 0 "pp=2,mb=4,vp=2,schedule=1f1b" out -- \
  run --model llama --devices 2 --strategy pp=2,vp=2,mb=4 --steps 5 --check
check "run llama ZB-H1 (schedule=zb-h1) matches the reference" 0 "schedule=zb-h1" out -- \
  run --model llama --devices 4 --strategy pp=4,mb=8,schedule=zb-h1 --steps 3 --check
check "run llama with sequence parallelism matches the reference" 0 "sp=true" out -- \
  run --model llama --devices 4 --strategy dp=2,tp=2,sp=true --steps 3 --check
check "run --strategy sp=yes is refused" 2 "'sp' must be true or false, got 'yes'" err -- \
  run --model llama --devices 4 --strategy tp=4,sp=yes --steps 1
check "run --strategy vp with mb not a multiple of pp is refused" 2 "mb=3 must be a multiple of it" err -- \
  run --model llama --devices 2 --strategy pp=2,vp=2,mb=3 --steps 1
check "run --micro-batch-size giving mb not a multiple of pp is refused" 2 "mb=3 must be a multiple" err -- \
  run --model llama --devices 2 --strategy pp=2,vp=2 --batch 12 --micro-batch-size 4 --steps 1
check "run --strategy vp with more stages than layers names both" 2 "pp*vp=8 exceeds the model's 4 layers" err -- \
  run --model llama --devices 2 --strategy pp=2,vp=4,mb=4 --steps 1
check "run --strategy zero=3 is refused as not implemented" 2 "strategy field 'zero': stage 3" err -- \
  run --model llama --strategy dp=2,zero=3 --steps 1
check "run --strategy precision=fp8 is refused" 2 "'precision' must be fp32, bf16 or fp16, got 'fp8'" err -- \
  run "${gpt[@]}" --devices 4 --strategy dp=4,precision=fp8 --steps 1
check "run with a cosine schedule matches the reference" 0 "schedule=cosine,warmup=2,decay_steps=6,min_lr=0.001" out -- \
  run --model llama --devices 2 --strategy pp=2,mb=2 --optimizer adamw:lr=0.01,schedule=cosine,warmup=2,decay_steps=6,min_lr=0.001 --steps 4 --check
check "run with an unknown schedule is refused" 2 "learning-rate schedule must be constant, linear or cosine, got 'step'" err -- \
  run --model llama --optimizer adamw:schedule=step --steps 1
check "run --optimizer clip_grad=-1 is refused" 2 "optimizer field 'clip_grad'" err -- \
  run "${gpt[@]}" --devices 4 --strategy dp=4 --optimizer adam:clip_grad=-1 --steps 1
check "run --attention with an unknown kind" 2 "--attention: attention must be unfused or fused, got 'flash'" err -- \
  run "${gpt[@]}" --attention flash --steps 1
# cuda placements compile and explain without a GPU; an unknown device type is refused.
check "compile --device cuda needs no GPU" 0 "wrote $work/cuda_plan.pb" out -- \
  compile "${mlp[@]}" --strategy dp=2,tp=2 --device cuda --output "$work/cuda_plan.pb"
check "explain --device cuda places on cuda devices" 0 "cuda:0-3" out -- \
  explain "${mlp[@]}" --strategy dp=2,tp=2 --device cuda
check "run --device with an unknown type" 2 "--device: unknown device type 'tpu'" err -- \
  run "${mlp[@]}" --strategy dp=2,tp=2 --device tpu --steps 1
check "run --tf32 on cpu devices is refused" 2 "--tf32 is a mode of GPU matmuls" err -- \
  run "${mlp[@]}" --strategy dp=2,tp=2 --tf32 --steps 1
check "run --help exits 0" 0 "usage: twinflow run" out -- run --help
check "compile --help exits 0" 0 "usage: twinflow compile" out -- compile --help

finish
