#pragma once
// Kernels: the code that computes one op on one device's physical tensors. They are
// registered by (op type, device type, dtype) and see only engine/core types.
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/core/attrs.h"
#include "engine/core/device_type.h"
#include "engine/core/dtype.h"
#include "engine/core/region.h"
#include "engine/core/tensor.h"

namespace twinflow::kernels {

// The stream, library handles and scratch of one CUDA device (kernels/cuda/cuda_env.h). Only
// CUDA kernels read it; it is incomplete in builds without CUDA.
struct CudaEnv;

struct KernelContext {
  const Attrs& attrs;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;  // allocated by the caller with the physical output shapes
  // Where each physical tensor sits in its logical tensor, and the logical shapes. Kernels
  // whose result depends on global position read them: seeded dropout masks and variable
  // initialisation, a vocabulary-split embedding, a class-split cross entropy, a mean over a
  // split axis. On a single device the regions are full.
  std::vector<Region> input_regions;
  std::vector<Region> output_regions;
  std::vector<Shape> input_logical_shapes;
  std::vector<Shape> output_logical_shapes;
  // Set for kernels of cuda devices, whose tensors are views of device memory: the kernel
  // enqueues its work on cuda->stream and returns without waiting. Null on cpu. The env
  // outlives the call (the device worker owns it).
  const CudaEnv* cuda = nullptr;
};

using Kernel = std::function<void(const KernelContext&)>;

struct KernelKey {
  std::string op_type;
  DeviceType device = DeviceType::kCpu;
  DType dtype = DType::kF32;  // of the first input (of the first output for source ops)
  auto operator<=>(const KernelKey& other) const = default;
};

class KernelRegistry {
 public:
  void Register(KernelKey key, Kernel kernel);  // InvalidArgumentError on a duplicate
  // InvalidArgumentError "no cpu f64 kernel for op 'matmul'" when missing.
  const Kernel& Find(const KernelKey& key) const;
  bool Has(const KernelKey& key) const { return kernels_.count(key) > 0; }
  std::vector<KernelKey> Keys() const;  // in key order

 private:
  std::map<KernelKey, Kernel> kernels_;
};

// Builds a context for a single device holding whole tensors (full regions), as the reference
// interpreter and the tests use it.
KernelContext WholeTensorContext(const Attrs& attrs, std::vector<const Tensor*> inputs,
                                 std::vector<Tensor*> outputs);

}  // namespace twinflow::kernels
