#include "kernels/kernel.h"

#include "engine/core/error.h"

namespace twinflow::kernels {
namespace {

std::string KeyText(const KernelKey& key) {
  return std::string(DeviceTypeName(key.device)) + " " + DTypeName(key.dtype) + " kernel for op '" +
         key.op_type + "'";
}

}  // namespace

void KernelRegistry::Register(KernelKey key, Kernel kernel) {
  if (!kernel) throw InvalidArgumentError("empty " + KeyText(key));
  if (kernels_.count(key)) throw InvalidArgumentError("duplicate " + KeyText(key));
  kernels_.emplace(std::move(key), std::move(kernel));
}

const Kernel& KernelRegistry::Find(const KernelKey& key) const {
  auto it = kernels_.find(key);
  if (it == kernels_.end()) throw InvalidArgumentError("no " + KeyText(key));
  return it->second;
}

std::vector<KernelKey> KernelRegistry::Keys() const {
  std::vector<KernelKey> keys;
  keys.reserve(kernels_.size());
  for (const auto& [key, kernel] : kernels_) keys.push_back(key);
  return keys;
}

KernelContext WholeTensorContext(const Attrs& attrs, std::vector<const Tensor*> inputs,
                                 std::vector<Tensor*> outputs) {
  KernelContext ctx{attrs, std::move(inputs), std::move(outputs), {}, {}, {}, {}};
  for (const Tensor* t : ctx.inputs) {
    ctx.input_regions.push_back(Region::Full(t->shape()));
    ctx.input_logical_shapes.push_back(t->shape());
  }
  for (const Tensor* t : ctx.outputs) {
    ctx.output_regions.push_back(Region::Full(t->shape()));
    ctx.output_logical_shapes.push_back(t->shape());
  }
  return ctx;
}

}  // namespace twinflow::kernels
