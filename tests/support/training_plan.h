#pragma once
// Training Plans for the integration tests: a GPT (the tiny one by default, tiny_gpt.h) built
// under a strategy, and compiled as that strategy asks with the alpha-beta cost model,
// fetching the loss.
#include <cstdint>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/graph/op_registry.h"
#include "models/model.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow::testing {

// The builtin ops, registered once for the process.
const graph::OpRegistry& TrainingOps();

models::BuiltModel BuildTrainingGpt(const std::string& strategy,
                                    const models::GptConfig& config = TinyGptConfig(),
                                    int64_t devices = 4,
                                    const std::string& optimizer = "adam:lr=0.01");

// The compile options `model`'s strategy asks for, fetching its loss.
compiler::CompileOptions TrainingCompileOptions(const models::BuiltModel& model);

plan::Plan CompileTraining(const models::BuiltModel& model,
                           const compiler::CompileOptions& options);
plan::Plan CompileTraining(const models::BuiltModel& model);

}  // namespace twinflow::testing
