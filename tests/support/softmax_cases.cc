// Random instances of the softmax family: softmax, log_softmax, the fused and the class-split
// cross entropy ops, and their gradient helpers. Labels are drawn in [0, classes).
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

// rows [...] of rank 0..2 and a class count 1..7.
struct XentDraw {
  Shape rows;
  int64_t classes = 1;
  DType label_type = DType::kI32;
  Shape logits() const { return WithLast(rows, classes); }
};

XentDraw DrawXent(Rng& rng) {
  XentDraw d;
  d.rows = RandomShape(rng, static_cast<int>(rng.UniformInt(0, 4) == 0 ? 0 : rng.UniformInt(1, 2)));
  d.classes = rng.UniformInt(1, 7);
  d.label_type = RandomIndexType(rng);
  return d;
}

// softmax's fused form (a scale, and a causal mask over [..., S, S]) or softmax_grad's scale.
Shape DrawFused(Rng& rng, const std::string& type, Attrs& attrs) {
  std::vector<int64_t> dims = RandomDims(rng, 0, 2);
  const int64_t s = rng.UniformInt(1, 6);
  dims.insert(dims.end(), {s, s});
  attrs.Set("axis", int64_t{-1});
  attrs.Set("scale", rng.Uniform(0.1, 2.0));
  if (type == "softmax") attrs.Set("causal", rng.UniformInt(0, 1) == 1);
  return Shape(dims);
}

OpCase SoftmaxCase(const std::string& type, int inputs, bool check_gradient) {
  return {type,
          [type, inputs](Rng& rng) {
            Attrs attrs;
            const bool fusable = type == "softmax" || type == "softmax_grad";
            Shape shape;
            if (fusable && rng.UniformInt(0, 2) == 0) {
              shape = DrawFused(rng, type, attrs);
            } else {
              shape = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
              if (rng.UniformInt(0, 2) > 0) {
                attrs.Set("axis", rng.UniformInt(-shape.rank(), shape.rank() - 1));
              }
            }
            OpInstance instance{type, attrs, {}, {}, {}};
            for (int i = 0; i < inputs; ++i) instance.inputs.push_back(F32(shape));
            return instance;
          },
          check_gradient};
}

// (logits-like first input, labels) ops: sparse_softmax_cross_entropy[_grad], pick_label_logit.
OpCase LabelCase(const std::string& type, bool with_dloss, bool check_gradient) {
  return {type,
          [type, with_dloss](Rng& rng) {
            const XentDraw d = DrawXent(rng);
            OpInstance instance{type,
                                {},
                                {F32(d.logits()), {d.rows, d.label_type}},
                                {{}, IndexFill(d.rows, d.label_type, d.classes)},
                                {1}};
            if (with_dloss) instance.inputs.push_back(F32(d.rows));
            return instance;
          },
          check_gradient};
}

}  // namespace

std::vector<OpCase> SoftmaxCases() {
  std::vector<OpCase> cases{
      SoftmaxCase("softmax", 1, true),
      SoftmaxCase("log_softmax", 1, true),
      SoftmaxCase("softmax_grad", 2, false),
      SoftmaxCase("log_softmax_grad", 2, false),
      LabelCase("sparse_softmax_cross_entropy", false, true),
      LabelCase("sparse_softmax_cross_entropy_grad", true, false),
      LabelCase("pick_label_logit", false, true),
  };
  cases.push_back({"pick_label_logit_grad",
                   [](Rng& rng) {
                     const XentDraw d = DrawXent(rng);
                     return OpInstance{"pick_label_logit_grad",
                                       Attrs{{"num_classes", d.classes}},
                                       {F32(d.rows), {d.rows, d.label_type}},
                                       {{}, IndexFill(d.rows, d.label_type, d.classes)},
                                       {1}};
                   },
                   false});
  cases.push_back({"sparse_xent_class_split_exp", [](Rng& rng) {
                     const XentDraw d = DrawXent(rng);
                     return OpInstance{
                         "sparse_xent_class_split_exp", {}, {F32(d.logits()), F32(d.rows)}, {}, {}};
                   }});
  cases.push_back({"sparse_xent_class_split_exp_grad",
                   [](Rng& rng) {
                     const XentDraw d = DrawXent(rng);
                     return OpInstance{"sparse_xent_class_split_exp_grad",
                                       {},
                                       {F32(d.logits()), F32(d.logits())},
                                       {UniformFill(d.logits(), 0.0, 1.0), {}},
                                       {}};
                   },
                   false});
  cases.push_back({"sparse_xent_class_split_loss", [](Rng& rng) {
                     // s is a sum of exponentials: positive.
                     const XentDraw d = DrawXent(rng);
                     return OpInstance{"sparse_xent_class_split_loss",
                                       {},
                                       {F32(d.rows), F32(d.rows), F32(d.rows)},
                                       {UniformFill(d.rows, 0.5, 3.0)},
                                       {}};
                   }});
  cases.push_back({"sparse_xent_class_split_loss_grad",
                   [](Rng& rng) {
                     const XentDraw d = DrawXent(rng);
                     return OpInstance{"sparse_xent_class_split_loss_grad",
                                       {},
                                       {F32(d.rows), F32(d.rows)},
                                       {UniformFill(d.rows, 0.5, 3.0)},
                                       {}};
                   },
                   false});
  return cases;
}

}  // namespace twinflow::testing
