#include "tests/support/op_runner.h"

#include <algorithm>
#include <cmath>

#include "engine/sbp/distribute.h"
#include "engine/sbp/slicing.h"

namespace twinflow::testing {
namespace {

kernels::KernelKey KeyFor(const OpInstance& instance,
                          const std::vector<graph::TensorMeta>& outputs) {
  const DType dtype = !instance.inputs.empty() ? instance.inputs[0].dtype
                      : !outputs.empty()       ? outputs[0].dtype
                                               : DType::kF32;
  return kernels::KernelKey{instance.type, DeviceType::kCpu, dtype};
}

}  // namespace

std::vector<graph::TensorMeta> OpRunner::OutputMetas(const OpInstance& instance) const {
  const graph::OpContext ctx{instance.type, instance.attrs, instance.inputs};
  return ops.Find(instance.type).infer(ctx);
}

std::vector<Tensor> OpRunner::RunSingle(const OpInstance& instance,
                                        const std::vector<Tensor>& inputs) const {
  const std::vector<graph::TensorMeta> metas = OutputMetas(instance);
  std::vector<Tensor> outputs;
  for (const graph::TensorMeta& m : metas) outputs.emplace_back(m.shape, m.dtype);
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  std::vector<Tensor*> out;
  for (Tensor& t : outputs) out.push_back(&t);
  kernels::KernelContext ctx = kernels::WholeTensorContext(instance.attrs, in, out);
  kernels.Find(KeyFor(instance, metas))(ctx);
  return outputs;
}

std::vector<Tensor> OpRunner::RunDistributed(const OpInstance& instance,
                                             const std::vector<Tensor>& inputs,
                                             const graph::NdSbpSignature& signature,
                                             const sbp::Placement& placement, Rng& rng) const {
  const std::vector<graph::TensorMeta> metas = OutputMetas(instance);
  const int64_t devices = placement.size();
  std::vector<sbp::Layout> in_layouts, out_layouts;
  std::vector<std::vector<Tensor>> physical_in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_layouts.push_back(sbp::Layout{placement, signature.inputs[i]});
    physical_in.push_back(sbp::Distribute(inputs[i], in_layouts.back(), rng));
  }
  for (size_t o = 0; o < metas.size(); ++o) {
    out_layouts.push_back(sbp::Layout{placement, signature.outputs[o]});
  }
  const kernels::Kernel& kernel = kernels.Find(KeyFor(instance, metas));
  std::vector<std::vector<Tensor>> physical_out(metas.size());
  for (int64_t d = 0; d < devices; ++d) {
    kernels::KernelContext ctx{instance.attrs, {}, {}, {}, {}, {}, {}};
    for (size_t i = 0; i < inputs.size(); ++i) {
      ctx.inputs.push_back(&physical_in[i][d]);
      ctx.input_regions.push_back(sbp::PhysicalRegion(inputs[i].shape(), in_layouts[i], d));
      ctx.input_logical_shapes.push_back(inputs[i].shape());
    }
    for (size_t o = 0; o < metas.size(); ++o) {
      physical_out[o].emplace_back(sbp::PhysicalShape(metas[o].shape, out_layouts[o], d),
                                   metas[o].dtype);
      ctx.output_regions.push_back(sbp::PhysicalRegion(metas[o].shape, out_layouts[o], d));
      ctx.output_logical_shapes.push_back(metas[o].shape);
    }
    for (size_t o = 0; o < metas.size(); ++o) ctx.outputs.push_back(&physical_out[o][d]);
    kernel(ctx);
  }
  std::vector<Tensor> assembled;
  for (size_t o = 0; o < metas.size(); ++o) {
    assembled.push_back(sbp::Assemble(physical_out[o], metas[o].shape, out_layouts[o]));
  }
  return assembled;
}

std::string CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                           int64_t devices) {
  if (got.size() != want.size()) return "output count differs";
  for (size_t o = 0; o < got.size(); ++o) {
    if (!IsFloating(want[o].dtype())) {
      if (!BitEqual(got[o], want[o])) {
        return "output " + std::to_string(o) + ": " + got[o].ToString(16) +
               " != " + want[o].ToString(16);
      }
      continue;
    }
    double magnitude = 1.0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double v = std::fabs(want[o].GetDouble(i));
      if (std::isfinite(v)) magnitude = std::max(magnitude, v);
    }
    const double eps = want[o].dtype() == DType::kF64 ? 1e-12 : 2e-5;
    const double tol = eps * magnitude * static_cast<double>(devices + 1);
    const double ratio = CloseRatio(got[o], want[o], eps * static_cast<double>(devices + 1), tol);
    if (!(ratio <= 1.0)) {
      return "output " + std::to_string(o) + " off by " + std::to_string(ratio) +
             "x the tolerance: " + got[o].ToString(16) + " vs " + want[o].ToString(16);
    }
  }
  return "";
}

}  // namespace twinflow::testing
