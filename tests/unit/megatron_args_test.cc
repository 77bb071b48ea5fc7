// ParseMegatronArgs: a Megatron-LM launch line into twinflow's flags and strategy.
#include "models/megatron_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/core/error.h"

namespace twinflow::models {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// The message of the InvalidArgumentError that parsing `line` throws ("" if none).
std::string ErrorOf(const std::string& line) {
  try {
    ParseMegatronArgs(line);
  } catch (const InvalidArgumentError& e) {
    return e.message();
  }
  ADD_FAILURE() << "no error for: " << line;
  return "";
}

// The flags of a small gpt, to which each test adds what it checks.
const std::string kGpt =
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
    "--global-batch-size 8 --vocab-size 1000 ";
const std::string kLlama = kGpt +
                           "--swiglu --normalization RMSNorm --position-embedding-type rope "
                           "--disable-bias-linear --untie-embeddings-and-output-weights ";

std::string Flag(const ImportedJob& job, const std::string& name) {
  for (const auto& [key, value] : job.flags) {
    if (key == name) return value;
  }
  return "(absent)";
}

TEST(MegatronArgs, TheShippedLlama2_7bLineMapsExactly) {
  // Beside this file in the source tree (__FILE__ is absolute under CMake).
  const std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() /
                                       "../../examples/configs/megatron_llama2_7b.sh";
  std::ifstream in(script);
  ASSERT_TRUE(in) << script;
  std::stringstream text;
  text << in.rdbuf();
  const ImportedJob job = ParseMegatronArgs(text.str());
  EXPECT_EQ(job.source, "--megatron-args");
  EXPECT_EQ(job.model, "llama");
  EXPECT_EQ(job.flags, (Pairs{{"layers", "32"},
                              {"hidden", "4096"},
                              {"heads", "32"},
                              {"kv-heads", "32"},
                              {"ffn", "11008"},
                              {"sequence", "4096"},
                              {"vocab", "32000"},
                              {"batch", "1024"},
                              {"micro-batch-size", "1"},
                              {"attention", "fused"}}));
  EXPECT_EQ(job.StrategyText(), "tp=2,pp=1,sp=true,zero=1,precision=bf16,overlap=on");
  EXPECT_THAT(job.ignored, Contains("--lr (optimizer hyper-parameters change no step time)"));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("--data-path (data")));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("--save (checkpointing")));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("--log-interval (logging")));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("--max-position-embeddings (no cost")));
  // The launcher's own options before pretrain_gpt.py are not Megatron's.
  EXPECT_THAT(job.ignored, Not(Contains(HasSubstr("nproc_per_node"))));
}

TEST(MegatronArgs, PadsTheVocabularyAsMegatronDoes) {
  // GPT-2's 50257 to a multiple of 128 x tp.
  const std::string gpt2 =
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
      "--global-batch-size 8 --tokenizer-type GPT2BPETokenizer ";
  EXPECT_EQ(Flag(ParseMegatronArgs(gpt2), "vocab"), "50304");
  EXPECT_EQ(Flag(ParseMegatronArgs(gpt2 + "--tensor-model-parallel-size 8"), "vocab"), "51200");
  EXPECT_EQ(Flag(ParseMegatronArgs(gpt2 + "--make-vocab-size-divisible-by 1"), "vocab"), "50257");
  EXPECT_EQ(Flag(ParseMegatronArgs(kGpt), "vocab"), "1024");
  EXPECT_THAT(ErrorOf("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
                      "--global-batch-size 8 --tokenizer-type HuggingFaceTokenizer"),
              HasSubstr("--vocab-size"));
}

TEST(MegatronArgs, FamilyDefaultsAndMixes) {
  const ImportedJob gpt = ParseMegatronArgs(kGpt);
  EXPECT_EQ(gpt.model, "gpt");
  EXPECT_EQ(Flag(gpt, "ffn"), "256");  // 4 x hidden
  EXPECT_EQ(Flag(gpt, "kv-heads"), "4");
  EXPECT_THAT(gpt.ignored, Contains(HasSubstr("--untie-embeddings-and-output-weights not given")));
  const ImportedJob llama =
      ParseMegatronArgs(kLlama + "--group-query-attention --num-query-groups 2");
  EXPECT_EQ(llama.model, "llama");
  EXPECT_EQ(Flag(llama, "ffn"), "128");  // 2/3 of 4 x 64, a multiple of 64
  EXPECT_EQ(Flag(llama, "kv-heads"), "2");
  const std::string mix = ErrorOf(kGpt + "--swiglu --normalization RMSNorm");
  EXPECT_THAT(mix, HasSubstr("--swiglu"));
  EXPECT_THAT(mix, HasSubstr("--position-embedding-type rope"));
  EXPECT_THAT(mix, HasSubstr("--disable-bias-linear"));
  std::string tied = kLlama;
  tied.erase(tied.find("--untie"));
  EXPECT_THAT(ErrorOf(tied), HasSubstr("--untie-embeddings-and-output-weights"));
  // Without --group-query-attention Megatron keeps one group per head.
  const ImportedJob groups = ParseMegatronArgs(kGpt + "--num-query-groups 2");
  EXPECT_EQ(Flag(groups, "kv-heads"), "4");
  EXPECT_THAT(groups.ignored, Contains(HasSubstr("--num-query-groups")));
}

TEST(MegatronArgs, ParallelismPrecisionRecomputeAttention) {
  const ImportedJob job = ParseMegatronArgs(
      kGpt +
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
      "--num-layers-per-virtual-pipeline-stage 1 --fp16 --recompute-granularity full "
      "--recompute-method uniform --overlap-grad-reduce --attention-backend unfused "
      "--micro-batch-size 2");
  EXPECT_EQ(job.StrategyText(),
            "tp=2,pp=2,precision=fp16,grad_reduce=fp16,recompute=full,overlap=on");
  EXPECT_EQ(Flag(job, "attention"), "unfused");
  EXPECT_EQ(Flag(job, "micro-batch-size"), "2");
  EXPECT_THAT(job.ignored,
              Contains(HasSubstr("--recompute-method (twinflow recomputes every layer")));
  const ImportedJob v2 = ParseMegatronArgs(
      "--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
      "--global-batch-size 8 --vocab-size 1000 --pipeline-model-parallel-size 2 "
      "--num-layers-per-virtual-pipeline-stage 2 --virtual-pipeline-model-parallel-size 2 "
      "--recompute-activations --fp16 --accumulate-allreduce-grads-in-fp32 --transformer-impl "
      "local");
  EXPECT_EQ(v2.StrategyText(), "tp=1,pp=2,vp=2,precision=fp16,recompute=selective,overlap=off");
  EXPECT_EQ(Flag(v2, "attention"), "unfused");
  EXPECT_EQ(Flag(ParseMegatronArgs(kGpt), "attention"), "fused");
  EXPECT_EQ(ParseMegatronArgs(kGpt).StrategyText(), "tp=1,pp=1,precision=fp32,overlap=off");
}

TEST(MegatronArgs, RefusalsNameTheirFlag) {
  EXPECT_THAT(ErrorOf(kGpt + "--context-parallel-size 2"),
              HasSubstr("--context-parallel-size 2: context parallelism is not supported yet"));
  EXPECT_THAT(ErrorOf(kGpt + "--expert-model-parallel-size 4"),
              HasSubstr("--expert-model-parallel-size 4: expert parallelism"));
  EXPECT_THAT(ErrorOf(kGpt + "--num-experts 8"), HasSubstr("--num-experts 8"));
  EXPECT_THAT(ErrorOf(kGpt + "--fp8-format hybrid --bf16"), HasSubstr("--fp8-format hybrid: FP8"));
  // A degree of 1 is no parallelism at all.
  EXPECT_NO_THROW(
      ParseMegatronArgs(kGpt + "--context-parallel-size 1 --expert-model-parallel-size 1"));
}

TEST(MegatronArgs, ContradictionsNameBothFlags) {
  const auto both = [](const std::string& message, const char* a, const char* b) {
    EXPECT_THAT(message, HasSubstr(a));
    EXPECT_THAT(message, HasSubstr(b));
  };
  both(ErrorOf(kGpt + "--bf16 --fp16"), "--bf16", "--fp16");
  both(ErrorOf(kGpt + "--sequence-parallel"), "--sequence-parallel",
       "--tensor-model-parallel-size 1");
  both(ErrorOf(kGpt + "--recompute-activations --recompute-granularity full"),
       "--recompute-activations", "--recompute-granularity full");
  both(ErrorOf(kGpt + "--overlap-param-gather"), "--overlap-param-gather",
       "--use-distributed-optimizer");
  both(ErrorOf(kGpt + "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
                      "--virtual-pipeline-model-parallel-size 2"),
       "--virtual-pipeline-model-parallel-size 2", "--num-layers-per-virtual-pipeline-stage 1");
}

TEST(MegatronArgs, BadAndMissingValuesNameTheFlag) {
  EXPECT_THAT(ErrorOf("--hidden-size 64 --seq-length 32"),
              HasSubstr("missing --num-layers, --num-attention-heads, --global-batch-size"));
  EXPECT_THAT(ErrorOf(kGpt + "--tensor-model-parallel-size two"),
              HasSubstr("--tensor-model-parallel-size 'two' is not a positive integer"));
  EXPECT_THAT(ErrorOf(kGpt + "--micro-batch-size 0"), HasSubstr("--micro-batch-size '0'"));
  EXPECT_THAT(ErrorOf(kGpt + "--micro-batch-size"), HasSubstr("--micro-batch-size needs a value"));
  EXPECT_THAT(ErrorOf(kGpt + "--bf16=true"), HasSubstr("--bf16 takes no value"));
  EXPECT_THAT(
      ErrorOf(kGpt + "--pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1"),
      HasSubstr("--num-layers-per-virtual-pipeline-stage 1"));
  EXPECT_THAT(ErrorOf(kGpt + "--normalization BatchNorm"), HasSubstr("--normalization BatchNorm"));
  EXPECT_THAT(ErrorOf(kGpt + "--kv-channels 8"), HasSubstr("--kv-channels 8"));
}

TEST(MegatronArgs, SplitsLikeAShell) {
  const ImportedJob job = ParseMegatronArgs(
      "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8 /opt/megatron/pretrain_gpt.py \\\n"
      "  --num-layers=2 --hidden-size '64' --num-attention-heads \"4\" \\\n"
      "  --seq-length 32 --global-batch-size 8 --vocab-size 1000 \\\n"
      "  --wandb-exp-name 'my run' --data-path 0.5 /a 0.5 /b --some-new-flag x --use-flash-attn\n");
  EXPECT_EQ(Flag(job, "layers"), "2");
  EXPECT_EQ(Flag(job, "hidden"), "64");
  EXPECT_EQ(Flag(job, "heads"), "4");
  EXPECT_EQ(Flag(job, "attention"), "fused");
  EXPECT_THAT(job.ignored, Contains("--some-new-flag (not read by twinflow)"));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("--wandb-exp-name (logging")));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("--data-path (data")));
  EXPECT_THAT(ErrorOf(kGpt + "--lr '3e-4"), HasSubstr("unterminated ' quote"));
  EXPECT_THAT(ErrorOf(kGpt + "stray"), HasSubstr("'stray' is not a --flag"));
}

}  // namespace
}  // namespace twinflow::models
