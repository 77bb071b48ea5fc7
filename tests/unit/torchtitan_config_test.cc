// ReadTorchtitanConfig: a torchtitan TOML into twinflow's flags and strategy.
#include "models/torchtitan_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "tests/support/temp_file.h"

namespace twinflow::models {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;
using ::testing::Contains;
using ::testing::HasSubstr;

// A TOML fixture in the test's temporary folder, removed at the end of the test.
class TomlFile : public twinflow::testing::TempTextFile {
 public:
  explicit TomlFile(const std::string& text) : TempTextFile(text, ".toml") {}
};

std::string ErrorOf(const std::string& text) {
  const TomlFile file(text);
  try {
    ReadTorchtitanConfig(file.path());
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.message(), HasSubstr(file.path()));
    return e.message();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

// Plain DDP over what the test adds: FSDP (torchtitan's default) is refused.
const std::string kDdp =
    "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
    "[parallelism]\ndata_parallel_shard_degree = 1\n";

TEST(TorchtitanConfig, TheShippedLlama3_8bConfigMapsExactly) {
  const std::filesystem::path path =
      std::filesystem::path(__FILE__).parent_path() / "../../examples/configs/llama3_8b.toml";
  const ImportedJob job = ReadTorchtitanConfig(path.string());
  EXPECT_EQ(job.source, "--torchtitan " + path.string());
  EXPECT_EQ(job.model, "llama");
  EXPECT_EQ(job.flags, (Pairs{{"preset", "llama3-8b"},
                              {"sequence", "8192"},
                              {"batch", "8"},
                              {"micro-batch-size", "8"},
                              {"attention", "fused"}}));
  // Tensor parallelism without FSDP: torchtitan's mixed precision is off, so fp32 (said in
  // ignored); its TP plan splits the norms' sequence (sp).
  EXPECT_EQ(job.StrategyText(), "dp=1,tp=8,pp=1,sp=true,precision=fp32,recompute=full,overlap=on");
  EXPECT_THAT(job.ignored,
              Contains("[optimizer] lr (optimizer hyper-parameters change no step time)"));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("[training] dataset (data")));
  EXPECT_THAT(job.ignored, Contains(HasSubstr("[checkpoint] interval (checkpointing")));
}

TEST(TorchtitanConfig, EveryMappedKeyRoundTrips) {
  const TomlFile file(
      "[model]\nname = \"llama3\"\nflavor = \"70B\"\nconverters = []\n"
      "[training]\nlocal_batch_size = 8\nglobal_batch_size = 64\nseq_len = 4096\n"
      "mixed_precision_param = \"float32\"\n"
      "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 1\n"
      "tensor_parallel_degree = 4\npipeline_parallel_degree = 2\n"
      "pipeline_parallel_schedule = \"Interleaved1F1B\"\npipeline_parallel_microbatch_size = 2\n"
      "context_parallel_degree = 1\nexpert_parallel_degree = 1\n"
      "enable_async_tensor_parallel = true\n"
      "[activation_checkpoint]\nmode = \"full\"\n"
      "[float8]\nenable_fsdp_float8_all_gather = false\n");
  const ImportedJob job = ReadTorchtitanConfig(file.path());
  EXPECT_EQ(job.flags, (Pairs{{"preset", "llama3-70b"},
                              {"sequence", "4096"},
                              {"batch", "64"},
                              {"micro-batch-size", "2"},
                              {"attention", "fused"}}));
  EXPECT_EQ(job.StrategyText(),
            "dp=2,tp=4,pp=2,vp=2,schedule=1f1b,sp=true,precision=fp32,recompute=full,overlap=on");
  EXPECT_THAT(job.ignored, Contains(HasSubstr("[parallelism] enable_async_tensor_parallel (")));
  EXPECT_THAT(job.ignored,
              Contains(HasSubstr("[float8] enable_fsdp_float8_all_gather (no effect")));
}

TEST(TorchtitanConfig, DefaultsAreTorchtitans) {
  // local_batch_size 8, seq_len 2048, debugmodel, selective AC of every 2nd layer, bf16 autocast.
  const ImportedJob job =
      ReadTorchtitanConfig(TomlFile("[parallelism]\ndata_parallel_shard_degree = 1\n").path());
  EXPECT_EQ(job.flags, (Pairs{{"layers", "6"},
                              {"hidden", "256"},
                              {"heads", "16"},
                              {"kv-heads", "16"},
                              {"ffn", "768"},
                              {"vocab", "2048"},
                              {"sequence", "2048"},
                              {"batch", "8"},
                              {"micro-batch-size", "8"},
                              {"attention", "fused"}}));
  EXPECT_EQ(job.StrategyText(), "tp=1,pp=1,precision=bf16,recompute=full,overlap=on");
  EXPECT_THAT(job.ignored, Contains(HasSubstr("selective_ac_option = \"2\"")));
  // bf16 is lost under tensor parallelism without FSDP, as torchtitan loses it.
  const ImportedJob tp = ReadTorchtitanConfig(
      TomlFile(kDdp + "tensor_parallel_degree = 2\n[training]\nbatch_size = 2\n"
                      "[activation_checkpoint]\nmode = \"none\"\n")
          .path());
  EXPECT_EQ(tp.StrategyText(), "tp=2,pp=1,sp=true,precision=fp32,overlap=on");
  EXPECT_EQ(tp.flags[2], (std::pair<std::string, std::string>{"batch", "2"}));
  EXPECT_THAT(tp.ignored, Contains(HasSubstr("mixed_precision_param")));
}

TEST(TorchtitanConfig, RefusalsNameTheirKey) {
  EXPECT_THAT(ErrorOf("[model]\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 8\n"),
              HasSubstr("data_parallel_shard_degree = 8: FSDP is not supported yet (zero=3 arrives "
                        "with the FSDP issue); use data_parallel_replicate_degree"));
  EXPECT_THAT(ErrorOf("[model]\nflavor = \"8B\"\n"),
              HasSubstr("data_parallel_shard_degree = -1 (torchtitan's default"));
  EXPECT_THAT(ErrorOf(kDdp + "context_parallel_degree = 2\n"),
              HasSubstr("context_parallel_degree = 2: context parallelism is not supported yet"));
  EXPECT_THAT(ErrorOf(kDdp + "expert_parallel_degree = 4\n"),
              HasSubstr("expert_parallel_degree = 4"));
  EXPECT_THAT(ErrorOf("[model]\nconverters = [\"float8\"]\n"),
              HasSubstr("[model] converters has \"float8\": FP8"));
  EXPECT_THAT(ErrorOf("[model]\nconverters = \"float8\"\n"), HasSubstr("FP8"));
  EXPECT_THAT(
      ErrorOf(kDdp +
              "pipeline_parallel_degree = 2\npipeline_parallel_schedule = \"ZBVZeroBubble\"\n"),
      HasSubstr("pipeline_parallel_schedule = \"ZBVZeroBubble\""));
  EXPECT_THAT(ErrorOf(kDdp + "pipeline_parallel_degree = 2\npipeline_parallel_schedule = "
                             "\"Interleaved1F1B\"\npipeline_parallel_layers_per_stage = 4\n"),
              HasSubstr("pipeline_parallel_layers_per_stage with Interleaved1F1B"));
  EXPECT_THAT(ErrorOf("[model]\nflavor = \"3B\"\n"),
              HasSubstr("flavor = \"3B\": twinflow knows llama3 debugmodel, 405B, 70B, 8B"));
  EXPECT_THAT(ErrorOf("[model]\nname = \"deepseek_v3\"\n"), HasSubstr("[model] name"));
}

TEST(TorchtitanConfig, BadValuesNameTheKey) {
  EXPECT_THAT(ErrorOf(kDdp + "tensor_parallel_degree = \"2\"\n"),
              HasSubstr("[parallelism] tensor_parallel_degree is not an integer"));
  EXPECT_THAT(ErrorOf(kDdp + "tensor_parallel_degree = 0\n"),
              HasSubstr("tensor_parallel_degree must be a positive integer"));
  EXPECT_THAT(
      ErrorOf(kDdp + "data_parallel_replicate_degree = 2\n[training]\nlocal_batch_size = 4\n"
                     "global_batch_size = 12\n"),
      HasSubstr("[training] global_batch_size = 12 is not a multiple"));
  EXPECT_THAT(ErrorOf(kDdp + "[training]\ntensor_parallel_degree = 2\n"),
              HasSubstr("[training] tensor_parallel_degree belongs in [parallelism]"));
}

TEST(TorchtitanConfig, UnreadableFilesNameTheFileAndLine) {
  const std::string message = ErrorOf("[model]\nname = \"llama3\"\nflavor = \n");
  EXPECT_THAT(message, HasSubstr("line 3"));
  try {
    ReadTorchtitanConfig("/nonexistent/llama3_8b.toml");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.message(), HasSubstr("/nonexistent/llama3_8b.toml"));
  }
}

TEST(TorchtitanConfig, UnknownKeysAreListed) {
  const ImportedJob job = ReadTorchtitanConfig(
      TomlFile(kDdp + "some_new_knob = 3\n[experimental]\ncustom_import = \"x\"\n").path());
  EXPECT_THAT(job.ignored, Contains("[parallelism] some_new_knob (not read by twinflow)"));
  EXPECT_THAT(job.ignored, Contains("[experimental] custom_import (not read by twinflow)"));
}

}  // namespace
}  // namespace twinflow::models
