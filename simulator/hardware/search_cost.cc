#include "simulator/hardware/search_cost.h"

namespace twinflow::sim {

sbp::AlphaBetaConfig SearchCostConfig(const ClusterSpec& spec) {
  if (spec.name() == "cpu-local") return sbp::AlphaBetaPreset("cpu-host");
  const auto link = [](const Link& l) {
    return sbp::LinkParams{l.bandwidth() * l.efficiency(), l.latency_s()};
  };
  sbp::AlphaBetaConfig config;
  config.devices_per_node = spec.devices_per_node();
  // Host-device copies have no link of their own in a ClusterSpec: they cross the NIC's PCIe.
  config.links = {{sbp::LinkClass::kIntraNode, link(spec.intra_node())},
                  {sbp::LinkClass::kInterNode, link(spec.inter_node())},
                  {sbp::LinkClass::kHostDevice, link(spec.inter_node())}};
  const DeviceModel& device = spec.device();
  config.peak_flops = device.peak_flops() * device.flops_efficiency();
  config.memory_bandwidth = device.memory_bandwidth() * device.memory_efficiency();
  config.launch_overhead = device.launch_overhead_s();
  return config;
}

}  // namespace twinflow::sim
