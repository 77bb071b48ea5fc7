// Random instances of the reduction ops: reduce_sum, reduce_mean, reduce_max and their
// gradient helpers broadcast_reduced_like and reduce_max_grad.
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

struct ReduceDraw {
  Shape in;
  Shape out;
  Attrs attrs;
};

// A random input of rank 0..3 and a random subset of its axes (sometimes written negative,
// sometimes left to the default of every axis).
ReduceDraw DrawReduce(Rng& rng) {
  ReduceDraw d;
  d.in = RandomShape(rng, static_cast<int>(rng.UniformInt(0, 3)));
  const int rank = d.in.rank();
  const bool keepdims = rng.UniformInt(0, 1) == 1;
  d.attrs.Set("keepdims", keepdims);
  std::vector<bool> reduced(rank, true);
  if (rng.UniformInt(0, 4) > 0) {
    std::vector<int64_t> axes;
    for (int k = 0; k < rank; ++k) {
      reduced[k] = rng.UniformInt(0, 1) == 1;
      if (reduced[k]) axes.push_back(rng.UniformInt(0, 1) ? k : k - rank);
    }
    d.attrs.Set("axes", axes);
  }
  std::vector<int64_t> dims;
  for (int k = 0; k < rank; ++k) {
    if (!reduced[k]) dims.push_back(d.in[k]);
    if (reduced[k] && keepdims) dims.push_back(1);
  }
  d.out = Shape(dims);
  return d;
}

OpCase ReduceCase(const std::string& type) {
  return {type, [type](Rng& rng) {
            ReduceDraw d = DrawReduce(rng);
            OpInstance instance{type, d.attrs, {{d.in, DType::kF32}}, {}, {}};
            if (type == "reduce_max") {
              // Distinct, well separated values: finite differences never straddle a tie.
              while (d.in.numel() > 49) d = DrawReduce(rng);
              instance = OpInstance{type, d.attrs, {{d.in, DType::kF32}}, {DistinctFill(d.in)}, {}};
            }
            return instance;
          }};
}

}  // namespace

std::vector<OpCase> ReductionCases() {
  std::vector<OpCase> cases{ReduceCase("reduce_sum"), ReduceCase("reduce_mean"),
                            ReduceCase("reduce_max")};
  cases.push_back({"broadcast_reduced_like",
                   [](Rng& rng) {
                     ReduceDraw d = DrawReduce(rng);
                     if (rng.UniformInt(0, 1)) d.attrs.Set("scale", rng.Uniform(-2.0, 2.0));
                     return OpInstance{"broadcast_reduced_like",
                                       d.attrs,
                                       {{d.out, DType::kF32}, {d.in, DType::kF32}},
                                       {},
                                       {}};
                   },
                   /*check_gradient=*/false});
  cases.push_back({"reduce_max_grad",
                   [](Rng& rng) {
                     // Coarse values make x equal to y often, so the mask is exercised.
                     const ReduceDraw d = DrawReduce(rng);
                     return OpInstance{
                         "reduce_max_grad",
                         d.attrs,
                         {{d.in, DType::kF32}, {d.out, DType::kF32}, {d.out, DType::kF32}},
                         {CoarseFill(d.in), CoarseFill(d.out), {}},
                         {}};
                   },
                   /*check_gradient=*/false});
  return cases;
}

}  // namespace twinflow::testing
