#pragma once
// Where a register's slots may start in a device arena. The compiler places every slot at a
// multiple of kSlotAlignment, the validator refuses a Plan that does not on an accelerator (and
// any slot misaligned for its dtype on any device), and the runtime relies on it. 64 bytes is a
// cache line, and four times what CUDA kernels' widest vector loads and cuBLASLt's tensor-core
// paths need (16 bytes); the arena's base is 256-byte aligned (cudaMalloc's guarantee).
#include <cstdint>

namespace twinflow::plan {

constexpr int64_t kSlotAlignment = 64;

}  // namespace twinflow::plan
