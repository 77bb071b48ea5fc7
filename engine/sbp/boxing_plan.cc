#include "engine/sbp/boxing_plan.h"

#include <algorithm>
#include <string>

#include "engine/core/text_format.h"

namespace twinflow::sbp {
namespace {

constexpr size_t kMaxTransfersShown = 6;
constexpr size_t kMaxGroupsShown = 4;
constexpr size_t kMaxMembersShown = 8;

int64_t BytesOf(const LinkBytes& bytes, LinkClass link) {
  auto it = bytes.find(link);
  return it == bytes.end() ? 0 : it->second;
}

// "[cpu:0 cpu:2]"; long groups keep their first members and their last.
std::string FormatDevices(const Placement& placement, const std::vector<int64_t>& indices) {
  std::string s;
  const auto name = [&](int64_t i) {
    return i >= 0 && i < placement.size() ? placement.device(i).ToString()
                                          : "#" + std::to_string(i) + "?";
  };
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices.size() > kMaxMembersShown && k == kMaxMembersShown - 2) {
      s += " ... " + name(indices.back()) + " (" + std::to_string(indices.size()) + ")";
      break;
    }
    if (k) s += " ";
    s += name(indices[k]);
  }
  return s;
}

std::string StepName(const BoxingStep& step) {
  std::string name = BoxingStepKindName(step.kind);
  std::vector<std::string> args;
  const bool has_mesh_axis = step.kind != BoxingStepKind::kBroadcast &&
                             step.kind != BoxingStepKind::kSendRecv && step.mesh_axis >= 0;
  if (has_mesh_axis) args.push_back("mesh " + std::to_string(step.mesh_axis));
  switch (step.kind) {
    case BoxingStepKind::kAllGather:
      args.push_back("axis " + std::to_string(step.gather_axis));
      break;
    case BoxingStepKind::kAllReduce:
      args.push_back(ReduceOpName(step.reduce_op));
      break;
    case BoxingStepKind::kReduceScatter:
      args.push_back(ReduceOpName(step.reduce_op));
      args.push_back("axis " + std::to_string(step.scatter_axis));
      break;
    case BoxingStepKind::kAllToAll:
      args.push_back("axis " + std::to_string(step.gather_axis) + "->" +
                     std::to_string(step.scatter_axis));
      break;
    case BoxingStepKind::kBroadcast:
      args.push_back("root " + FormatDevices(step.from.placement, {step.root}));
      break;
    case BoxingStepKind::kLocalSlice:
    case BoxingStepKind::kSendRecv:
      break;
  }
  if (args.empty()) return name;
  name += "(";
  for (size_t i = 0; i < args.size(); ++i) name += (i ? ", " : "") + args[i];
  return name + ")";
}

std::string StepDevices(const BoxingStep& step) {
  switch (step.kind) {
    case BoxingStepKind::kAllGather:
    case BoxingStepKind::kAllReduce:
    case BoxingStepKind::kReduceScatter:
    case BoxingStepKind::kAllToAll: {
      std::string s;
      for (size_t g = 0; g < step.groups.size() && g < kMaxGroupsShown; ++g) {
        s += (g ? " [" : "[") + FormatDevices(step.from.placement, step.groups[g]) + "]";
      }
      if (step.groups.size() > kMaxGroupsShown) {
        s += " ... and " + std::to_string(step.groups.size() - kMaxGroupsShown) + " more groups";
      }
      return s;
    }
    case BoxingStepKind::kBroadcast: {
      std::vector<int64_t> all(static_cast<size_t>(step.to.placement.size()));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
      return FormatDevices(step.from.placement, {step.root}) + " -> " +
             FormatDevices(step.to.placement, all);
    }
    case BoxingStepKind::kLocalSlice:
      return "local on " + std::to_string(step.from.placement.size()) + " devices";
    case BoxingStepKind::kSendRecv: {
      int64_t cross = 0;
      for (const RegionTransfer& t : step.transfers) {
        const bool valid = t.src_index >= 0 && t.src_index < step.from.placement.size() &&
                           t.dst_index >= 0 && t.dst_index < step.to.placement.size();
        if (!valid ||
            step.from.placement.device(t.src_index) != step.to.placement.device(t.dst_index)) {
          ++cross;
        }
      }
      return std::to_string(step.transfers.size()) + " transfers (" + std::to_string(cross) +
             " cross-device)";
    }
  }
  return "";
}

// The transfers of a send_recv step, listed under its row.
std::vector<std::string> TransferLines(const BoxingStep& step) {
  std::vector<std::string> lines;
  if (step.kind != BoxingStepKind::kSendRecv) return lines;
  for (size_t k = 0; k < step.transfers.size() && k < kMaxTransfersShown; ++k) {
    const RegionTransfer& t = step.transfers[k];
    lines.push_back(FormatDevices(step.from.placement, {t.src_index}) + " -> " +
                    FormatDevices(step.to.placement, {t.dst_index}) + " " + t.region.ToString() +
                    " " + FormatBytes(t.bytes));
  }
  if (step.transfers.size() > kMaxTransfersShown) {
    lines.push_back("... and " + std::to_string(step.transfers.size() - kMaxTransfersShown) +
                    " more");
  }
  return lines;
}

std::string RightTrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::optional<CollectiveKind> StepCollective(BoxingStepKind kind) {
  switch (kind) {
    case BoxingStepKind::kAllGather:
      return CollectiveKind::kAllGather;
    case BoxingStepKind::kAllReduce:
      return CollectiveKind::kAllReduce;
    case BoxingStepKind::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case BoxingStepKind::kAllToAll:
      return CollectiveKind::kAllToAll;
    case BoxingStepKind::kBroadcast:
      return CollectiveKind::kBroadcast;
    case BoxingStepKind::kLocalSlice:
    case BoxingStepKind::kSendRecv:
      break;
  }
  return std::nullopt;
}

const char* BoxingStepKindName(BoxingStepKind kind) {
  if (const std::optional<CollectiveKind> collective = StepCollective(kind)) {
    return CollectiveKindName(*collective);
  }
  return kind == BoxingStepKind::kLocalSlice ? "slice" : "send_recv";
}

int64_t BoxingStep::cross_device_bytes() const {
  int64_t total = 0;
  for (const auto& [link, bytes] : link_bytes) {
    if (link != LinkClass::kSameDevice) total += bytes;
  }
  return total;
}

double BoxingPlan::time() const {
  double total = 0;
  for (const BoxingStep& step : steps) total += step.time;
  return total;
}

LinkBytes BoxingPlan::link_bytes() const {
  LinkBytes total;
  for (const BoxingStep& step : steps) {
    for (const auto& [link, bytes] : step.link_bytes) total[link] += bytes;
  }
  return total;
}

int64_t BoxingPlan::cross_device_bytes() const {
  int64_t total = 0;
  for (const BoxingStep& step : steps) total += step.cross_device_bytes();
  return total;
}

std::string BoxingPlan::ToString() const {
  std::string out = std::string("boxing ") + DTypeName(dtype) + shape.ToString() + ": " +
                    src.ToString() + " -> " + dst.ToString() + "\n";
  if (steps.empty()) {
    return out + "  identity: the layouts hold the same data; nothing moves (cost 0)\n";
  }
  const LinkBytes totals = link_bytes();
  std::vector<LinkClass> classes = {LinkClass::kIntraNode, LinkClass::kInterNode};
  if (BytesOf(totals, LinkClass::kHostDevice) > 0) classes.push_back(LinkClass::kHostDevice);

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"#", "step", "from -> to", "devices"};
  for (LinkClass c : classes) header.push_back(LinkClassName(c));
  header.push_back("time");
  rows.push_back(header);
  for (size_t i = 0; i < steps.size(); ++i) {
    const BoxingStep& step = steps[i];
    const bool same_placement = step.from.placement == step.to.placement;
    std::vector<std::string> row = {
        std::to_string(i + 1), StepName(step),
        step.from.ToString() + " -> " +
            (same_placement ? step.to.nd_sbp.ToString() : step.to.ToString()),
        StepDevices(step)};
    for (LinkClass c : classes) row.push_back(FormatBytes(BytesOf(step.link_bytes, c)));
    row.push_back(FormatSeconds(step.time));
    rows.push_back(row);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line = "  ";
    for (size_t c = 0; c < rows[r].size(); ++c) {
      line += rows[r][c] + std::string(width[c] - rows[r][c].size() + 2, ' ');
    }
    out += RightTrim(line) + "\n";
    if (r == 0) continue;
    // Transfers hang under the step, indented to the step column.
    for (const std::string& t : TransferLines(steps[r - 1])) {
      out += std::string(2 + width[0] + 2 + 2, ' ') + t + "\n";
    }
  }
  out += "total: " + std::to_string(steps.size()) + (steps.size() == 1 ? " step" : " steps");
  for (LinkClass c : classes) {
    out += ", " + FormatBytes(BytesOf(totals, c)) + " " + LinkClassName(c);
  }
  out += ", estimated " + FormatSeconds(time()) + "\n";
  return out;
}

}  // namespace twinflow::sbp
