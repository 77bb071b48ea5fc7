#pragma once
// The model flags shared by `explain`, `compile`, `run`, `sim`, `tune` and `calibrate`: which
// model, its sizes, the devices and the strategy. Declared once, parsed into a built model.
#include <functional>
#include <memory>
#include <string>

#include "engine/compiler/boxing_pricer.h"
#include "engine/compiler/compile.h"
#include "engine/graph/op_registry.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "launcher/cli_args.h"
#include "models/model.h"
#include "planner/proxy_estimate.h"
#include "planner/tune_candidates.h"

namespace twinflow::launcher {

// Adds --model, --devices, --strategy, --hierarchy, --layers, --hidden, --heads, --sequence,
// --vocab, --batch, --global-batch-size, --micro-batch-size, --widths, --preset, --optimizer,
// --seed, --devices-per-node, --cost-model and --inference.
void AddModelFlags(ArgParser& parser);

// The device count: --devices; else, when the strategy leaves a degree to infer (or is auto
// without a hierarchy), `fallback` if positive (what the command knows: ranks x devices per
// rank under mpirun, the cluster's devices in sim and tune); else the product of the degrees.
int64_t DevicesFromArgs(const ParsedArgs& args, const parallel::Strategy& strategy,
                        int64_t fallback = 0);

// --strategy (and --hierarchy) parsed and resolved for DevicesFromArgs' count: the missing
// degree inferred. InvalidArgumentError names --strategy, its text and the device count.
parallel::Strategy StrategyFromArgs(const ParsedArgs& args, int64_t fallback_devices = 0);

// Builds the model the flags describe; InvalidArgumentError names the flag at fault. With
// `whole_batch`, micro-batches are ignored (the graph holds the whole batch): the single-device
// reference a micro-batched run is checked against. `fallback_devices` as in DevicesFromArgs.
models::BuiltModel BuildModelFromArgs(const ParsedArgs& args, const graph::OpRegistry& registry,
                                      bool whole_batch = false, int64_t fallback_devices = 0);
// The same model at another extent (its layers and global batch; 0: the flags'): the tuner's
// proxies (planner/proxy_estimate.h). A decoder (gpt, llama) only; an MLP is built as it is.
models::BuiltModel BuildModelFromArgs(const ParsedArgs& args, const graph::OpRegistry& registry,
                                      const planner::ModelExtent& extent);

// What the tuner reads of the model the flags describe (the model's defaults where they say
// nothing): its batch, layers and attention.
planner::TunedModel TunedModelFromArgs(const ParsedArgs& args);

// The optimizer the flags train with, as the commands print it: --optimizer in full
// (OptimizerText), else the model's default; "none (inference)" with --inference.
std::string OptimizerLabelFromArgs(const ParsedArgs& args);

// The --cost-model preset (default `fallback`) with --devices-per-node applied.
sbp::AlphaBetaConfig CostConfigFromArgs(const ParsedArgs& args, const std::string& fallback);

// A compile pass's progress on stderr when it runs long: a line at most every 5 s after its
// first 5 s and 5%, with the share done and the time left at the pace so far.
std::function<void(int64_t, int64_t)> PassProgress(const std::string& pass);

// Compiles `model` to a Plan under the flags' cost model (--cost-model; else `cluster_cost`
// when given, the simulated cluster's; else cpu-host: what runs here), fetching its loss every
// step, with its strategy's micro-batches and schedule; devices go to ranks by
// `devices_per_rank` (0: all on one rank); lowered folded by `fold` (for the simulator) where
// the graph has that symmetry (planner::CompileModel), with a pass's progress on stderr.
compiler::Compiled CompileFromArgs(const models::BuiltModel& model, const ParsedArgs& args,
                                   const graph::OpRegistry& registry, int64_t devices_per_rank = 0,
                                   const sbp::AlphaBetaConfig* cluster_cost = nullptr,
                                   plan::DeviceFold fold = {});

// Loads the Plan file at `path` (PlanError when it is corrupt or invalid) and checks that it
// was compiled for `model`: the same feeds with the same shapes, the same micro-batches and
// the model's loss fetched. InvalidArgumentError names the first difference.
plan::Plan LoadPlanForModel(const std::string& path, const models::BuiltModel& model);

}  // namespace twinflow::launcher
