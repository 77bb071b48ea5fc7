// Every SBP signature every op declares is checked against the single-device result: random
// instances of the op (tests/support/*_cases.cc), random 1-D, 2-D and 3-D meshes with uneven and
// empty parts, inputs distributed with random asymmetric partial decompositions, the real
// kernel run per device, the outputs assembled and compared. One test per op type, each
// running the RapidCheck default number of cases (1,000 unless RC_PARAMS says otherwise).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <map>

#include "tests/support/op_runner.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

std::vector<std::string> OpTypesWithCases() {
  std::vector<std::string> types;
  for (const auto& [type, c] : OpCasesByType()) types.push_back(type);
  return types;
}

const std::vector<std::vector<int64_t>> kMeshes = {{1},    {2},    {3},    {4},   {1, 2},
                                                   {2, 1}, {2, 2}, {2, 3}, {3, 2}};

class OpSbpRules : public ::testing::TestWithParam<std::string> {};

TEST_P(OpSbpRules, EveryDeclaredSignatureMatchesTheSingleDeviceResult) {
  const OpCase op_case = OpCasesByType().at(GetParam());
  const OpRunner runner{BuiltinRegistry(), CpuRegistry()};
  const bool ok = rc::check(GetParam() + " signatures", [&] {
    Rng rng(*rc::gen::inRange<uint64_t>(0, uint64_t{1} << 40));
    const OpInstance instance = op_case.draw(rng);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < instance.inputs.size(); ++i) {
      inputs.push_back(FillInput(instance, static_cast<int>(i), rng));
    }
    const std::vector<Tensor> want = runner.RunSingle(instance, inputs);
    const std::vector<int64_t> mesh = *rc::gen::elementOf(kMeshes);
    int64_t devices = 1;
    for (int64_t m : mesh) devices *= m;
    std::vector<int64_t> ids;
    for (int64_t d = 0; d < devices; ++d) ids.push_back(d);
    const sbp::Placement placement(DeviceType::kCpu, ids, Shape(mesh));
    const graph::OpContext ctx{instance.type, instance.attrs, instance.inputs};
    const auto signatures =
        graph::NdSignatures(BuiltinRegistry().Find(instance.type), ctx, Shape(mesh));
    RC_ASSERT(!signatures.empty());
    for (const graph::NdSbpSignature& signature : signatures) {
      RC_LOG() << instance.type << " " << instance.attrs.ToString() << " inputs";
      for (const auto& m : instance.inputs) RC_LOG() << " " << m.ToString();
      RC_LOG() << " on " << placement.ToString() << " under " << signature.ToString() << "\n";
      const std::vector<Tensor> got =
          runner.RunDistributed(instance, inputs, signature, placement, rng);
      const std::string mismatch = CompareOutputs(got, want, devices);
      RC_ASSERT(mismatch.empty());
    }
  });
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpSbpRules, ::testing::ValuesIn(OpTypesWithCases()),
                         [](const auto& info) { return info.param; });

// Every registered op type has cases, so no op escapes the check above. `input` and `assign`
// have no kernels: executors feed and apply them.
TEST(OpSbpRulesCoverage, EveryRegisteredOpHasCases) {
  const auto cases = OpCasesByType();
  for (const std::string& type : BuiltinRegistry().Types()) {
    if (type == "input" || type == "assign") continue;
    EXPECT_TRUE(cases.count(type)) << "op '" << type << "' has no test cases";
  }
}

}  // namespace
}  // namespace twinflow::testing
