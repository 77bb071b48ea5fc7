// Megatron-LM's flags are read into a MegatronFlags table (models/megatron_flags.h); each part
// of the job (family, sizes, parallelism, precision, ...) is read by one function, and what no
// function read is reported in `ignored`.
#include "models/megatron_args.h"

#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "models/megatron_flags.h"
#include "models/shell_words.h"

namespace twinflow::models {
namespace {

// Megatron's store_true flags that twinflow reads.
const std::set<std::string> kSwitches = {"swiglu",
                                         "disable-bias-linear",
                                         "untie-embeddings-and-output-weights",
                                         "group-query-attention",
                                         "add-qkv-bias",
                                         "sequence-parallel",
                                         "use-distributed-optimizer",
                                         "overlap-grad-reduce",
                                         "overlap-param-gather",
                                         "bf16",
                                         "fp16",
                                         "accumulate-allreduce-grads-in-fp32",
                                         "recompute-activations",
                                         "use-flash-attn"};

// Megatron's one-value flags that twinflow reads.
const std::set<std::string> kValued = {"num-layers",
                                       "hidden-size",
                                       "num-attention-heads",
                                       "num-query-groups",
                                       "kv-channels",
                                       "ffn-hidden-size",
                                       "seq-length",
                                       "vocab-size",
                                       "tokenizer-type",
                                       "make-vocab-size-divisible-by",
                                       "normalization",
                                       "position-embedding-type",
                                       "global-batch-size",
                                       "micro-batch-size",
                                       "tensor-model-parallel-size",
                                       "pipeline-model-parallel-size",
                                       "num-layers-per-virtual-pipeline-stage",
                                       "virtual-pipeline-model-parallel-size",
                                       "num-virtual-stages-per-pipeline-rank",
                                       "context-parallel-size",
                                       "expert-model-parallel-size",
                                       "num-experts",
                                       "fp8-format",
                                       "recompute-granularity",
                                       "transformer-impl",
                                       "attention-backend",
                                       "optimizer"};

using Flags = std::vector<std::pair<std::string, std::string>>;

std::string Join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// The family the architecture flags describe. twinflow's llama is Megatron's Llama recipe
// (every one of the four choices), its gpt Megatron's defaults (none of them).
std::string ReadFamily(MegatronFlags& flags, ImportedJob& job) {
  const std::string norm = flags.Text("normalization", "LayerNorm");
  if (norm != "LayerNorm" && norm != "RMSNorm") {
    throw InvalidArgumentError("--normalization " + norm +
                               ": twinflow has LayerNorm (gpt) and RMSNorm (llama)");
  }
  const std::string positions = flags.Text("position-embedding-type", "learned_absolute");
  if (positions != "learned_absolute" && positions != "rope") {
    throw InvalidArgumentError("--position-embedding-type " + positions +
                               ": twinflow has learned_absolute (gpt) and rope (llama)");
  }
  std::vector<std::string> given, missing;
  const auto mark = [&](bool is_set, const std::string& name) {
    (is_set ? given : missing).push_back(name);
  };
  mark(flags.Has("swiglu"), "--swiglu");
  mark(norm == "RMSNorm", "--normalization RMSNorm");
  mark(positions == "rope", "--position-embedding-type rope");
  mark(flags.Has("disable-bias-linear"), "--disable-bias-linear");
  const bool untied = flags.Has("untie-embeddings-and-output-weights");
  if (given.empty()) {
    if (!untied) {
      job.ignored.push_back(
          "--untie-embeddings-and-output-weights not given (Megatron ties the embedding and the "
          "head; twinflow's gpt keeps them apart: vocab x hidden more parameters)");
    }
    flags.Has("add-qkv-bias");  // a gpt has every bias already
    return "gpt";
  }
  if (!missing.empty()) {
    throw InvalidArgumentError(Join(given) + " without " + Join(missing) +
                               ": twinflow's llama needs all four, its gpt none of them");
  }
  if (!untied) {
    throw InvalidArgumentError(
        "--untie-embeddings-and-output-weights is missing: twinflow's llama (" + Join(given) +
        ") keeps its head apart from the embedding, which Megatron ties without the flag");
  }
  if (flags.Has("add-qkv-bias")) {
    throw InvalidArgumentError(
        "--add-qkv-bias with --disable-bias-linear: twinflow's llama has no biases");
  }
  return "llama";
}

// Megatron pads the vocabulary (_vocab_size_with_padding) so that each tensor-parallel shard of
// the embedding is a multiple of --make-vocab-size-divisible-by (default 128): the padded size
// is the vocabulary rounded up to a multiple of divisible_by * tp.
int64_t PaddedVocab(int64_t vocab, int64_t divisible_by, int64_t tp) {
  const int64_t multiple = divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

// The tokenizer's vocabulary: --vocab-size, or the fixed size of a tokenizer Megatron ships.
int64_t ReadVocab(MegatronFlags& flags, int64_t tp) {
  const std::string tokenizer = flags.Text("tokenizer-type", "");
  int64_t vocab = flags.Size("vocab-size", 0);
  if (vocab == 0 && tokenizer == "GPT2BPETokenizer") vocab = 50257;
  if (vocab == 0 && tokenizer == "Llama2Tokenizer") vocab = 32000;
  if (vocab == 0) {
    throw InvalidArgumentError(
        (tokenizer.empty() ? std::string("no --tokenizer-type") : "--tokenizer-type " + tokenizer) +
        ": give --vocab-size (twinflow knows the size of GPT2BPETokenizer, 50257, and "
        "Llama2Tokenizer, 32000, only)");
  }
  return PaddedVocab(vocab, flags.Size("make-vocab-size-divisible-by", 128), tp);
}

// Key-value heads: grouped-query attention's groups, else one per head.
int64_t ReadKvHeads(MegatronFlags& flags, int64_t heads, ImportedJob& job) {
  if (flags.Has("group-query-attention")) {
    if (!flags.Has("num-query-groups")) {
      throw InvalidArgumentError("--group-query-attention needs --num-query-groups");
    }
    return flags.Size("num-query-groups", 0);
  }
  if (flags.Has("num-query-groups")) {
    job.ignored.push_back(
        "--num-query-groups (without --group-query-attention Megatron keeps one group per "
        "head)");
  }
  return heads;
}

// The sizes, vocabulary and batch, into job.flags.
void ReadSizes(MegatronFlags& flags, int64_t tp, ImportedJob& job) {
  std::vector<std::string> missing;
  for (const char* name :
       {"num-layers", "hidden-size", "num-attention-heads", "seq-length", "global-batch-size"}) {
    if (!flags.Has(name)) missing.push_back(std::string("--") + name);
  }
  if (!missing.empty()) {
    throw InvalidArgumentError("missing " + Join(missing) +
                               ": twinflow needs the model's sizes and the global batch");
  }
  const int64_t hidden = flags.Size("hidden-size", 0);
  const int64_t heads = flags.Size("num-attention-heads", 0);
  if (flags.Has("kv-channels") && flags.Size("kv-channels", 0) * heads != hidden) {
    throw InvalidArgumentError("--kv-channels " + flags.Text("kv-channels", "") +
                               ": twinflow's heads are --hidden-size / --num-attention-heads wide");
  }
  // Megatron's default FFN: 4 x hidden, or for SwiGLU 2/3 of it rounded down to a multiple of 64
  // (the same parameter count with a third matrix).
  const int64_t ffn_default = job.model == "llama" ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden;
  Flags& out = job.flags;
  out.emplace_back("layers", std::to_string(flags.Size("num-layers", 0)));
  out.emplace_back("hidden", std::to_string(hidden));
  out.emplace_back("heads", std::to_string(heads));
  out.emplace_back("kv-heads", std::to_string(ReadKvHeads(flags, heads, job)));
  out.emplace_back("ffn", std::to_string(flags.Size("ffn-hidden-size", ffn_default)));
  out.emplace_back("sequence", std::to_string(flags.Size("seq-length", 0)));
  out.emplace_back("vocab", std::to_string(ReadVocab(flags, tp)));
  out.emplace_back("batch", std::to_string(flags.Size("global-batch-size", 0)));
  if (flags.Has("micro-batch-size")) {
    out.emplace_back("micro-batch-size", std::to_string(flags.Size("micro-batch-size", 0)));
  }
}

// What twinflow cannot run yet, refused by name (a degree of 1 is no parallelism at all).
void RefuseUnsupported(MegatronFlags& flags) {
  if (flags.Size("context-parallel-size", 1) > 1) {
    throw InvalidArgumentError("--context-parallel-size " +
                               flags.Text("context-parallel-size", "") +
                               ": context parallelism is not supported yet");
  }
  if (flags.Size("expert-model-parallel-size", 1) > 1) {
    throw InvalidArgumentError("--expert-model-parallel-size " +
                               flags.Text("expert-model-parallel-size", "") +
                               ": expert parallelism is not supported yet");
  }
  if (flags.Has("num-experts")) {
    throw InvalidArgumentError("--num-experts " + flags.Text("num-experts", "") +
                               ": mixture-of-experts models are not supported yet");
  }
  if (flags.Has("fp8-format")) {
    throw InvalidArgumentError("--fp8-format " + flags.Text("fp8-format", "") +
                               ": FP8 is not supported yet (precision is fp32, bf16 or fp16)");
  }
}

// Model chunks per pipeline rank, from either of Megatron's ways of giving them.
int64_t ReadVirtualStages(MegatronFlags& flags, int64_t layers, int64_t pp) {
  int64_t vp = 0;
  std::string from;
  if (flags.Has("num-layers-per-virtual-pipeline-stage")) {
    const int64_t chunk = flags.Size("num-layers-per-virtual-pipeline-stage", 0);
    if (layers % (pp * chunk) != 0) {
      throw InvalidArgumentError(
          "--num-layers-per-virtual-pipeline-stage " + std::to_string(chunk) + ": --num-layers " +
          std::to_string(layers) +
          " is not a multiple of it times --pipeline-model-parallel-size " + std::to_string(pp));
    }
    vp = layers / (pp * chunk);
    from = "--num-layers-per-virtual-pipeline-stage " + std::to_string(chunk);
  }
  for (const char* name :
       {"virtual-pipeline-model-parallel-size", "num-virtual-stages-per-pipeline-rank"}) {
    if (!flags.Has(name)) continue;
    const int64_t given = flags.Size(name, 0);
    const std::string here = std::string("--") + name + " " + std::to_string(given);
    if (vp != 0 && given != vp) {
      throw InvalidArgumentError(here + " disagrees with " + from + " (" + std::to_string(vp) +
                                 " chunks per rank)");
    }
    vp = given;
    from = here;
  }
  if (vp > 1 && pp == 1) {
    throw InvalidArgumentError(from + " needs --pipeline-model-parallel-size > 1");
  }
  return vp == 0 ? 1 : vp;
}

void ReadParallelism(MegatronFlags& flags, int64_t tp, ImportedJob& job) {
  RefuseUnsupported(flags);
  const int64_t pp = flags.Size("pipeline-model-parallel-size", 1);
  const int64_t vp = ReadVirtualStages(flags, flags.Size("num-layers", 0), pp);
  Flags& out = job.strategy;
  out.emplace_back("tp", std::to_string(tp));
  out.emplace_back("pp", std::to_string(pp));
  if (vp > 1) out.emplace_back("vp", std::to_string(vp));
  if (flags.Has("sequence-parallel")) {
    if (tp == 1) {
      throw InvalidArgumentError(
          "--sequence-parallel with --tensor-model-parallel-size 1: sequence parallelism splits "
          "over the tensor-parallel ranks, so it needs more than one");
    }
    out.emplace_back("sp", "true");
  }
  const bool distributed = flags.Has("use-distributed-optimizer");
  if (distributed) out.emplace_back("zero", "1");
  if (flags.Has("overlap-param-gather") && !distributed) {
    throw InvalidArgumentError(
        "--overlap-param-gather without --use-distributed-optimizer: only a distributed "
        "optimizer gathers parameters");
  }
}

// Precision and where gradients are summed. Megatron accumulates and all-reduces bf16
// gradients in fp32 whether or not --accumulate-allreduce-grads-in-fp32 is given (it sets
// the flag for bf16); fp16 gradients stay fp16 without it.
void ReadPrecision(MegatronFlags& flags, ImportedJob& job) {
  const bool bf16 = flags.Has("bf16"), fp16 = flags.Has("fp16");
  if (bf16 && fp16) throw InvalidArgumentError("--bf16 and --fp16 both given: give one");
  const bool fp32_grads = flags.Has("accumulate-allreduce-grads-in-fp32");
  job.strategy.emplace_back("precision", bf16 ? "bf16" : fp16 ? "fp16" : "fp32");
  if (fp16 && !fp32_grads) job.strategy.emplace_back("grad_reduce", "fp16");
}

void ReadRecompute(MegatronFlags& flags, ImportedJob& job) {
  const std::string granularity = flags.Text("recompute-granularity", "");
  if (!granularity.empty() && granularity != "full" && granularity != "selective") {
    throw InvalidArgumentError("--recompute-granularity " + granularity +
                               ": expected full or selective");
  }
  if (flags.Has("recompute-activations") && granularity == "full") {
    throw InvalidArgumentError(
        "--recompute-activations (selective) with --recompute-granularity full: give one");
  }
  const std::string recompute = flags.Has("recompute-activations") ? "selective" : granularity;
  if (!recompute.empty()) job.strategy.emplace_back("recompute", recompute);
}

// Megatron-Core computes attention with a fused kernel (Transformer Engine's, or flash) unless
// told to use its own unfused one: --attention-backend unfused or local, or the local
// transformer implementation without --use-flash-attn.
std::string ReadAttention(MegatronFlags& flags) {
  const std::string backend = flags.Text("attention-backend", "auto");
  if (backend != "auto" && backend != "flash" && backend != "fused" && backend != "unfused" &&
      backend != "local") {
    throw InvalidArgumentError("--attention-backend " + backend +
                               ": expected auto, flash, fused, unfused or local");
  }
  const bool flash = flags.Has("use-flash-attn");
  const bool unfused_backend = backend == "unfused" || backend == "local";
  if (flash && unfused_backend) {
    throw InvalidArgumentError("--use-flash-attn with --attention-backend " + backend +
                               ": give one");
  }
  const bool local = flags.Text("transformer-impl", "transformer_engine") == "local";
  return unfused_backend || (local && backend == "auto" && !flash) ? "unfused" : "fused";
}

void ReadOptimizer(MegatronFlags& flags, ImportedJob& job) {
  const std::string optimizer = flags.Text("optimizer", "adam");
  if (optimizer == "sgd") {
    job.flags.emplace_back("optimizer", "sgd");
  } else if (optimizer != "adam") {  // Megatron's adam is AdamW, twinflow's default
    throw InvalidArgumentError("--optimizer " + optimizer + ": twinflow has adam and sgd");
  }
}

// Why a flag twinflow does not read changes nothing it times. A pattern ending in * is a
// prefix; the first match wins, so exact names come before the prefixes that would catch them.
struct IgnoredRule {
  const char* pattern;
  const char* reason;
};
constexpr IgnoredRule kIgnoredRules[] = {
    {"max-position-embeddings", "no cost: twinflow sizes positions by the sequence"},
    {"recompute-method", "twinflow recomputes every layer"},
    {"recompute-num-layers", "twinflow recomputes every layer"},
    {"decoder-first-pipeline-num-layers", "twinflow cuts the layers evenly over the stages"},
    {"decoder-last-pipeline-num-layers", "twinflow cuts the layers evenly over the stages"},
    {"account-for-*", "twinflow cuts the layers evenly over the stages"},
    {"rampup-batch-size", "twinflow times the full --global-batch-size"},
    {"fp8-*", "no effect without --fp8-format"},
    {"lr", "optimizer hyper-parameters change no step time"},
    {"lr-*", "optimizer hyper-parameters change no step time"},
    {"min-lr", "optimizer hyper-parameters change no step time"},
    {"weight-decay*", "optimizer hyper-parameters change no step time"},
    {"start-weight-decay", "optimizer hyper-parameters change no step time"},
    {"end-weight-decay", "optimizer hyper-parameters change no step time"},
    {"adam-*", "optimizer hyper-parameters change no step time"},
    {"sgd-momentum", "optimizer hyper-parameters change no step time"},
    {"clip-grad", "optimizer hyper-parameters change no step time"},
    {"*loss-scale*", "optimizer hyper-parameters change no step time"},
    {"hysteresis", "optimizer hyper-parameters change no step time"},
    {"seed", "initialisation and seeds change no step time"},
    {"init-*", "initialisation and seeds change no step time"},
    {"data-parallel-random-init", "initialisation and seeds change no step time"},
    {"*dropout*", "twinflow's models have no dropout"},
    {"data-*", "data and tokenizer files change no step time"},
    {"*-data-path", "data and tokenizer files change no step time"},
    {"split", "data and tokenizer files change no step time"},
    {"mock-data", "data and tokenizer files change no step time"},
    {"vocab-file", "data and tokenizer files change no step time"},
    {"merge-file", "data and tokenizer files change no step time"},
    {"tokenizer-model", "data and tokenizer files change no step time"},
    {"num-workers", "data and tokenizer files change no step time"},
    {"dataloader-type", "data and tokenizer files change no step time"},
    {"reset-*", "data and tokenizer files change no step time"},
    {"eod-mask-loss", "data and tokenizer files change no step time"},
    {"train-iters", "the run's length changes no step time"},
    {"train-samples", "the run's length changes no step time"},
    {"eval-*", "evaluation is outside the training step"},
    {"exit-*", "the run's length changes no step time"},
    {"skip-train", "the run's length changes no step time"},
    {"save", "checkpointing is outside the training step"},
    {"save-*", "checkpointing is outside the training step"},
    {"load", "checkpointing is outside the training step"},
    {"ckpt-*", "checkpointing is outside the training step"},
    {"no-save-*", "checkpointing is outside the training step"},
    {"no-load-*", "checkpointing is outside the training step"},
    {"async-save", "checkpointing is outside the training step"},
    {"dist-ckpt-*", "checkpointing is outside the training step"},
    {"use-checkpoint-args", "checkpointing is outside the training step"},
    {"finetune", "checkpointing is outside the training step"},
    {"pretrained-checkpoint", "checkpointing is outside the training step"},
    {"log-*", "logging and profiling change no step time"},
    {"tensorboard-*", "logging and profiling change no step time"},
    {"wandb-*", "logging and profiling change no step time"},
    {"timing-log-*", "logging and profiling change no step time"},
    {"profile*", "logging and profiling change no step time"},
    {"norm-epsilon", "numerical settings change no cost"},
    {"rotary-*", "numerical settings change no cost"},
    {"rope-scaling-factor", "numerical settings change no cost"},
    {"use-rope-scaling", "numerical settings change no cost"},
    {"attention-softmax-in-fp32", "numerical settings change no cost"},
    {"apply-query-key-layer-scaling", "numerical settings change no cost"},
    {"no-*-fusion", "kernel fusions are not priced apart"},
    {"no-gradient-accumulation-fusion", "kernel fusions are not priced apart"},
    {"cross-entropy-loss-fusion", "kernel fusions are not priced apart"},
    {"tp-comm-overlap*", "Transformer Engine's tensor-parallel overlap is not modelled"},
    {"ddp-*", "DDP tuning twinflow does not read (its buckets are the strategy's bucket=)"},
    {"distributed-*", "process setup changes no step time"},
    {"use-mcore-models", "process setup changes no step time"},
    {"use-legacy-models", "process setup changes no step time"},
    {"local-rank", "process setup changes no step time"},
};

bool Matches(const std::string& name, const std::string& pattern) {
  const bool leading = pattern.front() == '*', trailing = pattern.back() == '*';
  const std::string core =
      pattern.substr(leading ? 1 : 0, pattern.size() - (leading ? 1 : 0) - (trailing ? 1 : 0));
  if (leading && trailing) return name.find(core) != std::string::npos;
  if (trailing) return name.rfind(core, 0) == 0;
  if (leading) {
    return name.size() >= core.size() &&
           name.compare(name.size() - core.size(), core.size(), core) == 0;
  }
  return name == core;
}

std::string IgnoredReason(const std::string& name) {
  for (const IgnoredRule& rule : kIgnoredRules) {
    if (Matches(name, rule.pattern)) return rule.reason;
  }
  return "not read by twinflow";
}

}  // namespace

ImportedJob ParseMegatronArgs(const std::string& command_line) {
  MegatronFlags flags(SplitShellWords(command_line, "--megatron-args"), kSwitches, kValued);
  ImportedJob job;
  job.source = "--megatron-args";
  job.model = ReadFamily(flags, job);
  const int64_t tp = flags.Size("tensor-model-parallel-size", 1);
  ReadSizes(flags, tp, job);
  job.flags.emplace_back("attention", ReadAttention(flags));
  ReadOptimizer(flags, job);
  ReadParallelism(flags, tp, job);
  ReadPrecision(flags, job);
  ReadRecompute(flags, job);
  job.strategy.emplace_back(
      "overlap",
      flags.Has("overlap-grad-reduce") || flags.Has("overlap-param-gather") ? "on" : "off");
  for (const std::string& name : flags.Unread()) {
    job.ignored.push_back("--" + name + " (" + IgnoredReason(name) + ")");
  }
  return job;
}

}  // namespace twinflow::models
