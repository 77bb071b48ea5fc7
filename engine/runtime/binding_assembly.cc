#include "engine/runtime/binding_assembly.h"

#include <algorithm>
#include <optional>

#include "engine/core/error.h"
#include "engine/core/reduce_op.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::runtime {
namespace {

struct Logical {
  Shape shape;
  DType dtype;
};

Logical LogicalOf(const plan::Binding& binding) {
  const std::string what = "binding '" + binding.name() + "'";
  return Logical{ToShape(binding.logical(), what), ToDType(binding.logical().dtype(), what)};
}

Region PartRegion(const plan::Binding& binding, int part, const Tensor& value,
                  const Shape& logical) {
  const Region region = ToRegion(binding.parts(part).region(), "binding '" + binding.name() + "'");
  if (region.rank() != logical.rank() || !Region::Full(logical).Contains(region) ||
      region.shape() != value.shape()) {
    throw PlanError("binding '" + binding.name() + "' part " + std::to_string(part) + ": " +
                    value.shape().ToString() + " at " + region.ToString() +
                    " does not fit the logical " + logical.ToString());
  }
  return region;
}

// nullopt when the parts tile the tensor.
std::optional<ReduceOp> ReduceOf(const plan::Binding& binding) {
  return plan::FromProto(binding.reduce(), "binding '" + binding.name() + "'");
}

}  // namespace

Tensor AssembleBinding(const plan::Binding& binding, const std::vector<const Tensor*>& parts) {
  const Logical logical = LogicalOf(binding);
  Tensor out(logical.shape, logical.dtype);
  const std::optional<ReduceOp> reduce = ReduceOf(binding);
  const bool partial = reduce.has_value();
  const ReduceOp op = reduce.value_or(ReduceOp::kSum);
  if (partial) out.FillIdentity(op);
  for (int i = 0; i < binding.parts_size() && i < static_cast<int>(parts.size()); ++i) {
    if (!binding.parts(i).contributes() || !parts[i]) continue;
    const Tensor& part = *parts[i];
    if (part.dtype() != logical.dtype) {
      throw PlanError("binding '" + binding.name() + "' part " + std::to_string(i) + " is " +
                      DTypeName(part.dtype()) + ", the binding " + DTypeName(logical.dtype));
    }
    const Region region = PartRegion(binding, i, part, logical.shape);
    if (!partial) {
      out.CopyRegionFrom(part, Region::Full(part.shape()), region);
      continue;
    }
    Tensor acc = out.Slice(region);
    acc.ReduceFrom(part, op);
    out.CopyRegionFrom(acc, Region::Full(acc.shape()), region);
  }
  return out;
}

void ScatterBinding(const plan::Binding& binding, const Tensor& value,
                    const std::vector<Tensor*>& parts) {
  const Logical logical = LogicalOf(binding);
  if (value.shape() != logical.shape || value.dtype() != logical.dtype) {
    throw ShapeError("'" + binding.name() + "' is " + DTypeName(logical.dtype) +
                     logical.shape.ToString() + ", not " + DTypeName(value.dtype()) +
                     value.shape().ToString());
  }
  const bool sum = ReduceOf(binding) == ReduceOp::kSum;
  bool taken = false;  // a partial sum: has a contributing part taken the value yet?
  for (int i = 0; i < binding.parts_size() && i < static_cast<int>(parts.size()); ++i) {
    if (!parts[i]) continue;
    Tensor& part = *parts[i];
    const Region region = PartRegion(binding, i, part, logical.shape);
    if (sum && binding.parts(i).contributes()) {
      if (taken) {
        part.FillIdentity(ReduceOp::kSum);
        continue;
      }
      taken = true;
    }
    part.CopyRegionFrom(value, region, Region::Full(part.shape()));
  }
}

Tensor StackPieces(const std::vector<Tensor>& pieces) {
  if (pieces.size() == 1) return pieces[0];
  std::vector<int64_t> dims = pieces.at(0).shape().dims();
  if (dims.empty()) {
    dims.push_back(static_cast<int64_t>(pieces.size()));
  } else {
    dims[0] *= static_cast<int64_t>(pieces.size());
  }
  Tensor out(Shape(dims), pieces[0].dtype());
  const int64_t block = pieces[0].nbytes();
  for (size_t m = 0; m < pieces.size(); ++m) {
    if (pieces[m].shape() != pieces[0].shape() || pieces[m].dtype() != pieces[0].dtype()) {
      throw ShapeError("pieces of one fetch differ: " + pieces[m].shape().ToString() + " and " +
                       pieces[0].shape().ToString());
    }
    // Row-major: piece m's rows are one contiguous block.
    std::copy_n(pieces[m].raw(), block, out.raw() + static_cast<int64_t>(m) * block);
  }
  return out;
}

}  // namespace twinflow::runtime
