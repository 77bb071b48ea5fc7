#pragma once
// ActTiming: how long one act of a compute-stream task (COMPUTE, COPY, ACC, REPEAT, ASSIGN,
// SOURCE, ...) takes on the simulated device: a launch overhead, then the kernel's calibrated
// time where the cluster's kernel table has its key (engine/plan/kernel_key.h), else the
// roofline of its flops and bytes at its kernel class's efficiencies; copies over their link or
// through memory. On a CPU host `contention` (0..1, CoreSharing::Contention) blends the
// quiet-machine figures with those measured while every core is busy.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/plan_fold.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::sim {

// The efficiencies an act of kernel class `k` reaches on `d`: of its peak flops and of its
// memory bandwidth (a class the spec leaves at 0 takes the device's general efficiency).
struct ClassEfficiency {
  double compute = 0, memory = 0;
};
ClassEfficiency EfficiencyOf(const DeviceModel& d, plan::KernelClass k);
// A GEMM of inner size `k` costs (k + gemm_k_overhead) / k of its useful flops: each output
// tile's fixed cost counted as more steps of its K loop (tiles padded whole cost more still).
double GemmKFactor(int64_t k, const DeviceModel& d);
// The flops a GEMM costs, as a share of its useful flops: output tiles padded up to whole
// tiles, and each tile's fixed cost (GemmKFactor).
double GemmWorkFactor(const plan::GemmShape& g, const DeviceModel& d);
// The compute side of a COMPUTE task's roofline on `d`: its flops at its class's compute
// efficiency, a GEMM's weighted by GemmWorkFactor (the memory side is its bytes_moved at the
// class's memory efficiency; the longer of the two is the kernel's time).
double ComputeSeconds(const plan::Task& t, const DeviceModel& d);

// Lifetime: keeps `plan` and `topology` by reference; both must outlive this (one
// Simulation's member).
class ActTiming {
 public:
  // `cluster_device`: the cluster device of each plan device.
  ActTiming(const plan::Plan& plan, const Topology& topology, std::vector<int> cluster_device);

  // Seconds to move `bytes` through a device's memory (read + write).
  double MemorySeconds(double bytes, double contention) const;
  double MemorySeconds(double bytes, double contention, double efficiency) const;
  // Seconds one act of `t` takes. A COPY's bytes are counted on the links they cross.
  double ActSeconds(const plan::Task& t, double contention);

  // By plan device: the bytes its COPY acts sent over intra-node and inter-node links.
  double intra_bytes(int device) const { return intra_bytes_[device]; }
  double inter_bytes(int device) const { return inter_bytes_[device]; }

 private:
  // A COMPUTE task's kernel without a measured time: the roofline of its flops and bytes at
  // its kernel class's efficiencies (a GEMM's flops weighted by its shape).
  double KernelSeconds(const plan::Task& t, double contention) const;
  double CopySeconds(const plan::Task& t, double contention);
  int64_t RegstBytes(int64_t regst) const;

  const plan::Plan& plan_;
  const plan::DeviceFold fold_;  // the Plan's, read once
  const Topology& topology_;
  std::vector<int> cluster_device_;
  std::map<std::string, std::pair<double, double>> kernel_seconds_;  // alone, contended
  std::vector<double> intra_bytes_, inter_bytes_;
};

}  // namespace twinflow::sim
