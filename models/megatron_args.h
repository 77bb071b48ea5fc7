#pragma once
// Reading a Megatron-LM launch line (pretrain_gpt.py's arguments) into twinflow's flags and
// strategy, so a user can time the job they already run without translating it by hand.
#include <string>

#include "models/imported_job.h"

namespace twinflow::models {

// The twinflow flags and strategy of the Megatron-LM command line `command_line`, split as a
// shell splits it (quotes, backslash-newline continuations); everything up to and including
// the first word ending in .py (python, torchrun and its options, pretrain_gpt.py) is skipped.
// Flags are `--flag value` or `--flag=value`.
//
// Read: the sizes (--num-layers, --hidden-size, --num-attention-heads, --seq-length,
// --global-batch-size required; --ffn-hidden-size, --group-query-attention with
// --num-query-groups, --kv-channels, --micro-batch-size), the vocabulary (--vocab-size or
// --tokenizer-type, padded as Megatron pads it), the family (--swiglu, --normalization,
// --position-embedding-type, --disable-bias-linear, --untie-embeddings-and-output-weights: all
// of them make a llama, none a gpt), the parallelism (--tensor-model-parallel-size,
// --pipeline-model-parallel-size, virtual stages, --sequence-parallel,
// --use-distributed-optimizer, --overlap-grad-reduce, --overlap-param-gather), precision
// (--bf16, --fp16, --accumulate-allreduce-grads-in-fp32), recomputation and the attention
// kernel. Everything else (data, checkpoints, logging, learning rate, initialisation, dropout,
// unknown flags) is listed in `ignored` with the reason.
//
// InvalidArgumentError naming the flag(s) at fault: a missing size, a bad number, what twinflow
// cannot run yet (--context-parallel-size, --expert-model-parallel-size or --num-experts,
// --fp8-format), a mix of llama and gpt choices, and contradictions (--bf16 with --fp16,
// --sequence-parallel with tensor parallelism 1, ...), naming both flags.
ImportedJob ParseMegatronArgs(const std::string& command_line);

}  // namespace twinflow::models
