// A non-failing diagnostic: for every op, the 1-D SBP signatures (over S(k), B and P for each
// input and output) that reproduce the single-device result on several random instances and
// 2- and 3-device meshes but that the op does not declare. Each is a candidate rule: either
// worth declaring, or valid only by coincidence of the sampled shapes.
#include <iostream>
#include <map>

#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/support/op_runner.h"

namespace twinflow::testing {
namespace {

std::vector<sbp::Sbp> Options(int rank) {
  std::vector<sbp::Sbp> options;
  for (int k = 0; k < rank; ++k) options.push_back(sbp::Sbp::Split(k));
  options.push_back(sbp::Sbp::Broadcast());
  options.push_back(sbp::Sbp::Partial());
  return options;
}

// Every 1-D signature over the given per-tensor options (inputs then outputs), if not too many.
std::vector<graph::SbpSignature> Candidates(const std::vector<std::vector<sbp::Sbp>>& options,
                                            size_t num_inputs, size_t limit) {
  size_t count = 1;
  for (const auto& o : options) count *= o.size();
  if (count > limit) return {};
  std::vector<graph::SbpSignature> all;
  std::vector<size_t> index(options.size(), 0);
  for (size_t n = 0; n < count; ++n) {
    graph::SbpSignature sig;
    for (size_t t = 0; t < options.size(); ++t) {
      (t < num_inputs ? sig.inputs : sig.outputs).push_back(options[t][index[t]]);
    }
    all.push_back(sig);
    for (size_t t = options.size(); t-- > 0;) {
      if (++index[t] < options[t].size()) break;
      index[t] = 0;
    }
  }
  return all;
}

graph::NdSbpSignature OneAxis(const graph::SbpSignature& signature) {
  graph::NdSbpSignature nd;
  for (const sbp::Sbp& s : signature.inputs) nd.inputs.push_back(sbp::NdSbp({s}));
  for (const sbp::Sbp& s : signature.outputs) nd.outputs.push_back(sbp::NdSbp({s}));
  return nd;
}

int Run() {
  const graph::OpRegistry ops = ops::BuiltinOps();
  const kernels::KernelRegistry kernels = kernels::CpuKernels();
  const OpRunner runner{ops, kernels};
  int total = 0;
  for (const OpCase& op_case : AllOpCases()) {
    Rng rng(2026);
    std::vector<OpInstance> instances;
    for (int i = 0; i < 4; ++i) instances.push_back(op_case.draw(rng));
    const OpInstance& first = instances[0];
    std::vector<std::vector<sbp::Sbp>> options;
    for (const auto& m : first.inputs) options.push_back(Options(m.shape.rank()));
    for (const auto& m : runner.OutputMetas(first)) options.push_back(Options(m.shape.rank()));
    const auto candidates = Candidates(options, first.inputs.size(), 4096);
    std::vector<std::string> found;
    for (const graph::SbpSignature& candidate : candidates) {
      bool valid = true;
      bool declared = false;
      for (const OpInstance& instance : instances) {
        const graph::OpContext ctx{instance.type, instance.attrs, instance.inputs};
        if (instance.inputs.size() + runner.OutputMetas(instance).size() !=
            candidate.inputs.size() + candidate.outputs.size()) {
          valid = false;
          break;
        }
        for (int64_t parts : {2, 3}) {
          for (const auto& s : ops.Find(instance.type).signatures(ctx, parts)) {
            declared = declared || s == candidate;
          }
          if (declared) break;
          const graph::NdSbpSignature nd = OneAxis(candidate);
          std::vector<int64_t> ids;
          for (int64_t d = 0; d < parts; ++d) ids.push_back(d);
          try {
            std::vector<Tensor> inputs;
            for (size_t i = 0; i < instance.inputs.size(); ++i) {
              inputs.push_back(FillInput(instance, static_cast<int>(i), rng));
            }
            const auto want = runner.RunSingle(instance, inputs);
            const auto got = runner.RunDistributed(instance, inputs, nd,
                                                   sbp::Placement(DeviceType::kCpu, ids), rng);
            valid = valid && CompareOutputs(got, want, parts).empty();
          } catch (const Error&) {
            valid = false;
          }
          if (!valid) break;
        }
        if (declared || !valid) break;
      }
      if (valid && !declared) found.push_back(candidate.ToString());
    }
    if (candidates.empty()) {
      std::cout << op_case.type << ": too many candidate signatures to enumerate\n";
    }
    for (const std::string& s : found) std::cout << op_case.type << ": undeclared " << s << "\n";
    total += static_cast<int>(found.size());
  }
  std::cout << "undeclared valid-looking signatures: " << total << "\n";
  return 0;
}

}  // namespace
}  // namespace twinflow::testing

int main() { return twinflow::testing::Run(); }
