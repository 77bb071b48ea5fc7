#pragma once
// OpDef: everything the engine knows about one op type, declared by its family in engine/ops:
// shape and dtype inference, SBP signatures, cost and gradient. Kernels live apart, in
// kernels/, keyed by (op type, device type, dtype).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/attrs.h"
#include "engine/graph/logical_graph.h"
#include "engine/sbp/sbp.h"

namespace twinflow::graph {

class GraphBuilder;

// What an op's functions see: its attributes and its inputs' metas.
struct OpContext {
  const std::string& type;
  const Attrs& attrs;
  const std::vector<TensorMeta>& inputs;
};

// A 1-D SBP signature: one Sbp per input and one per output. On an N-D mesh an op's
// signatures are the products of its 1-D ones, one per mesh axis (see NdSignatures).
struct SbpSignature {
  std::vector<sbp::Sbp> inputs;
  std::vector<sbp::Sbp> outputs;
  std::string ToString() const;  // "S(0),B -> S(0)"
  bool operator==(const SbpSignature& other) const = default;
};

struct NdSbpSignature {
  std::vector<sbp::NdSbp> inputs;
  std::vector<sbp::NdSbp> outputs;
  std::string ToString() const;  // "(S(0),B),(B,S(1)) -> (S(0),S(1))"
  bool operator==(const NdSbpSignature& other) const = default;
};

// The kind of kernel an op runs, for the simulator's per-class efficiencies (a softmax
// reaches a smaller fraction of memory bandwidth than a copy; a GEMM's shape sets its share of
// peak). docs/simulator.md#the-gpu-model gives each class's figures and their sources.
enum class KernelClass {
  kStreaming,   // loads and stores with simple arithmetic: adds, scales, casts, copies, gathers
  kActivation,  // pointwise transcendental math: gelu, silu, tanh and their gradients
  kRowwise,     // rows reduced and rescaled: softmax, norms, reductions, cross entropy
  kGemm,        // matmul, batch_matmul (OpCost::gemm gives the shape)
  kAttention,   // fused attention: tiled matmuls with the softmax on chip
};

// A GEMM's problem: `batch` products of [m, k] x [k, n]. All 0 for other ops.
struct GemmShape {
  int64_t batch = 0, m = 0, n = 0, k = 0;
};

// Work of one execution, on the shapes given (logical or physical).
struct OpCost {
  double flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  GemmShape gemm;
};

// Builds the gradients of an op's inputs from the gradients of its outputs (nullopt where an
// output's gradient is zero). Returns one entry per input, nullopt where none flows.
using GradientFn = std::function<std::vector<std::optional<TensorId>>(
    GraphBuilder& builder, const OpNode& op, const std::vector<std::optional<TensorId>>& dy)>;

// What an op is to the compiler beyond its functions. The lowering (task kinds), the rates
// (micro-batch or step), the SBP search (pins, in-place writes) and the Plan's task traits
// test this, never the type string; engine/ops sets it where the op is registered.
enum class OpRole {
  kCompute,          // a kernel on its inputs (every op but those below)
  kInput,            // data fed from outside, one piece per micro-batch (a SOURCE task)
  kVariable,         // model state, one piece per step (a VARIABLE task)
  kAssign,           // writes its second input into the variable that is its first (ASSIGN)
  kOptimizerUpdate,  // applies a gradient (input 1) to a variable (input 0): sgd, momentum, adam
  kStepIncrement,    // advances an optimizer's step counter (or the loss scaler's state)
  // reads gradients summed over the step's micro-batches, as updates do, but changes no state:
  // the statistics of gradient clipping and loss scaling (sum_squares)
  kGradientStatistic,
};

// Ops that change model state: the optimizer pass of a step. They run once per step.
bool UpdatesState(OpRole role);  // kAssign, kOptimizerUpdate, kStepIncrement

struct OpDef {
  std::string type;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  int num_outputs = 1;
  // Throws ShapeError (or InvalidArgumentError for bad attrs) naming the problem.
  std::function<std::vector<TensorMeta>(const OpContext&)> infer;
  // Valid 1-D signatures for these inputs when the mesh axis has `parts` devices. Ops may drop
  // signatures that the shapes cannot honour (e.g. a reshape that needs divisibility).
  std::function<std::vector<SbpSignature>(const OpContext&, int64_t parts)> signatures;
  std::function<OpCost(const OpContext&)> cost;
  GradientFn gradient;  // empty: not differentiable (integer outputs, optimizer updates)
  // When set, `signatures` is told the device count of the whole mesh instead of one axis's:
  // for ops whose split rules hold only when every nested split stays aligned (reshape
  // across merged axes), dividing by the total device count keeps every level exact.
  bool signatures_need_whole_mesh = false;
  // When set, the extent that every part of a split of axis `axis` of tensor `tensor` (inputs
  // first, then outputs) must be a whole multiple of: a head's columns for ops that must not cut
  // a head. NdSignatures drops N-D signatures whose nested splits would; 1 means any.
  std::function<int64_t(const OpContext&, int tensor, int axis)> split_granule;
  // For ops whose 1-D rules depend on the shapes (reshape): the signatures of one mesh axis of
  // `parts` devices for the given physical input and output shapes. NdSignatures then also
  // chains them axis by axis, each on the shapes the splits before it leave (a nested split
  // of a merged axis that one logical rule cannot see, e.g. [batch * seq] split over dp and
  // then tp is [batch, seq] split on batch and then seq when each dp part is one sequence).
  std::function<std::vector<SbpSignature>(const std::vector<Shape>& inputs,
                                          const std::vector<Shape>& outputs, int64_t parts)>
      local_signatures;
  // How a Megatron user names the op's parallelism on one mesh axis, given its 1-D signature
  // there: "column", "row", "vocabulary"... Empty: the generic name from its first output
  // (ParallelismName).
  std::function<std::string(const OpContext&, const SbpSignature&)> parallelism;
  OpRole role = OpRole::kCompute;
  KernelClass kernel_class = KernelClass::kStreaming;

  // Input and variable ops: no kernel inputs, values from outside.
  bool is_source() const { return role == OpRole::kInput || role == OpRole::kVariable; }
};

// The op's parallelism on one mesh axis: `def.parallelism` when set, else "replicated",
// "partial" or "split S(k)" after its first output (inputs' when it has none).
std::string ParallelismName(const OpDef& def, const OpContext& ctx, const SbpSignature& sig);

// The N-D signatures of an op on a mesh: products of 1-D signatures, axis by axis, dropping
// those that split a tensor axis into more parts than it has elements or off its
// split_granule, then (for ops with local_signatures) the nested chains the products miss.
// Stable order.
std::vector<NdSbpSignature> NdSignatures(const OpDef& def, const OpContext& ctx,
                                         const Shape& hierarchy);

}  // namespace twinflow::graph
