#include "engine/runtime/task_work.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace twinflow::runtime {
namespace {

void RunKernel(Device& device, const PreparedTask& t, std::vector<Tensor>& inputs,
               std::vector<Tensor>& outputs) {
  kernels::KernelContext kc{
      t.attrs, {}, {}, t.input_regions, t.output_regions, t.input_logical, t.output_logical};
  for (Tensor& in : inputs) kc.inputs.push_back(&in);
  for (Tensor& out : outputs) kc.outputs.push_back(&out);
  device.RunKernel(t.kernel, kc);
}

// A SOURCE's part of the piece's feed into `slot`: straight in on a cpu device, through host
// memory and an upload elsewhere.
void ReadFeed(RunContext& ctx, Device& device, const PreparedTask& t, const Launch& l,
              Tensor& slot) {
  if (device.type() == DeviceType::kCpu) {
    ctx.feeds.Read(t.feed, l.piece, t.feed_region, slot);
    return;
  }
  Tensor host(slot.shape(), slot.dtype());
  ctx.feeds.Read(t.feed, l.piece, t.feed_region, host);
  device.Upload(host, slot);
}

// RunOptions::check_finite: NumericsError at an output's first NaN or infinity.
void CheckFinite(Device& device, const PreparedTask& t, const Launch& l,
                 const std::vector<Tensor>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!IsFloating(outputs[i].dtype())) continue;
    const bool on_host = device.type() == DeviceType::kCpu;
    const Tensor downloaded = on_host ? Tensor() : device.Download(outputs[i]);
    const Tensor& host = on_host ? outputs[i] : downloaded;
    const int64_t e = FirstNonFinite(host);
    if (e < 0) continue;
    // The executor's error names the task and the piece.
    throw NumericsError("op " + t.task->op().type() + " on device " +
                        std::to_string(t.task->device()) + " wrote " +
                        std::to_string(host.GetDouble(e)) + " at element " + std::to_string(e) +
                        " of output " + std::to_string(i) + " (--check-finite)");
  }
}

}  // namespace

const SlotRef& FindSlot(const std::vector<SlotRef>& slots, int64_t regst, const Launch& launch) {
  for (const SlotRef& s : slots) {
    if (s.regst == regst) return s;
  }
  throw PlanError("piece " + std::to_string(launch.piece) + " was launched without regst " +
                  std::to_string(regst));
}

void InitVariable(Device& device, const PreparedTask& task, Tensor& slot) {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  outputs.push_back(Tensor::View(slot.shape(), slot.dtype(), slot.raw()));
  RunKernel(device, task, inputs, outputs);
}

void RunTaskWork(RunContext& ctx, const PreparedTask& t, const Launch& l) {
  Device& device = ctx.DeviceOf(t);
  auto in = [&](size_t i) {
    const int64_t regst = t.inputs.at(i);
    for (const SlotRef& s : l.inputs) {
      if (s.regst == regst) return ctx.SlotView(s.regst, s.slot);
    }
    // A lagged register has no piece for the first `lag` acts: the op reads zeros, the
    // initial state of a loop.
    const plan::Regst& r = ctx.plan.regsts(static_cast<int>(regst));
    if (l.piece >= r.lag()) FindSlot(l.inputs, regst, l);  // throws
    const Tensor slot = ctx.SlotView(regst, 0);
    return device.Zeros(slot.shape(), slot.dtype());
  };
  auto out = [&](size_t i) {
    const SlotRef& s = FindSlot(l.outputs, t.outputs.at(i), l);
    return ctx.SlotView(s.regst, s.slot);
  };
  switch (t.task->kind()) {
    case plan::SOURCE: {
      Tensor first = out(0);
      ReadFeed(ctx, device, t, l, first);
      for (size_t i = 1; i < t.outputs.size(); ++i) {
        Tensor other = out(i);
        device.Copy(first, other);
      }
      return;
    }
    case plan::VARIABLE:
      return;  // the slot holds the state; ASSIGN updates it in place
    case plan::COMPUTE: {
      std::vector<Tensor> inputs, outputs;
      for (size_t i = 0; i < t.inputs.size(); ++i) inputs.push_back(in(i));
      for (size_t i = 0; i < t.outputs.size(); ++i) outputs.push_back(out(i));
      RunKernel(device, t, inputs, outputs);
      if (ctx.check_finite) CheckFinite(device, t, l, outputs);
      return;
    }
    case plan::COPY: {
      Tensor dst = out(0);
      device.Zero(dst);
      for (const SlotCopy& c : t.copies) {
        for (const SlotRef& s : l.inputs) {
          // A lagged source without a piece yet leaves its region zero.
          if (s.regst == c.src_regst)
            device.CopyRegion(ctx.SlotView(s.regst, s.slot), c.src, dst, c.dst);
        }
      }
      return;
    }
    case plan::ACC: {
      Tensor dst = out(0);
      if (l.first) {
        device.Copy(in(0), dst);
      } else {
        device.ReduceInto(in(0), dst, ReduceOp::kSum);
      }
      return;
    }
    case plan::REPEAT: {
      Tensor dst = out(0);
      const Tensor src = in(0);
      if (src.raw() != dst.raw()) device.Copy(src, dst);  // in place: already there
      return;
    }
    case plan::SINK: {
      const SlotRef& s = FindSlot(l.inputs, t.inputs[0], l);
      ctx.RecordSink(s.regst, s.piece, device.Download(ctx.SlotView(s.regst, s.slot)));
      return;
    }
    case plan::ASSIGN: {
      Tensor variable = in(0);
      device.Copy(in(1), variable);
      return;
    }
    default:
      throw PlanError("cannot run a " + plan::TaskKind_Name(t.task->kind()) + " task");
  }
}

}  // namespace twinflow::runtime
