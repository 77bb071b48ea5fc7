#pragma once
// Helpers for the op tests: the built-in op and CPU kernel registries, small tensors from
// literals, inferring and running one op on whole tensors, and listing an op's 1-D signatures.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"

namespace twinflow::testing {

inline const graph::OpRegistry& BuiltinRegistry() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

inline const kernels::KernelRegistry& CpuRegistry() {
  static const kernels::KernelRegistry registry = kernels::CpuKernels();
  return registry;
}

inline Tensor Values(Shape shape, const std::vector<double>& values, DType dtype = DType::kF32) {
  Tensor t(std::move(shape), dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size()); ++i) {
    t.SetDouble(i, values[i]);
  }
  return t;
}

inline std::vector<double> Flat(const Tensor& t) {
  std::vector<double> values;
  for (int64_t i = 0; i < t.numel(); ++i) values.push_back(t.GetDouble(i));
  return values;
}

inline std::vector<graph::TensorMeta> InferOp(const std::string& type, const Attrs& attrs,
                                              const std::vector<graph::TensorMeta>& inputs) {
  const graph::OpContext ctx{type, attrs, inputs};
  return BuiltinRegistry().Find(type).infer(ctx);
}

// Runs `type` on one device holding whole tensors.
inline std::vector<Tensor> RunOp(const std::string& type, const Attrs& attrs,
                                 const std::vector<Tensor>& inputs) {
  std::vector<graph::TensorMeta> metas;
  for (const Tensor& t : inputs) metas.push_back({t.shape(), t.dtype()});
  std::vector<Tensor> outputs;
  for (const graph::TensorMeta& m : InferOp(type, attrs, metas)) {
    outputs.emplace_back(m.shape, m.dtype);
  }
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  std::vector<Tensor*> out;
  for (Tensor& t : outputs) out.push_back(&t);
  const kernels::KernelContext ctx = kernels::WholeTensorContext(attrs, in, out);
  CpuRegistry().Find({type, DeviceType::kCpu, inputs[0].dtype()})(ctx);
  return outputs;
}

// The 1-D signatures of `type` for these input metas, as text ("S(0),B -> S(0)").
inline std::vector<std::string> SignatureTexts(const std::string& type, const Attrs& attrs,
                                               const std::vector<graph::TensorMeta>& inputs,
                                               int64_t parts = 2) {
  const graph::OpContext ctx{type, attrs, inputs};
  std::vector<std::string> texts;
  for (const graph::SbpSignature& s : BuiltinRegistry().Find(type).signatures(ctx, parts)) {
    texts.push_back(s.ToString());
  }
  return texts;
}

}  // namespace twinflow::testing
