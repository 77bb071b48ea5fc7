#include "kernels/attention_shape.h"

#include <cmath>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {

AttentionShape CheckAttention(const KernelContext& ctx, const char* op) {
  const Tensor& q = *ctx.inputs[0];
  const Tensor& k = *ctx.inputs[1];
  if (q.shape().rank() != 3 || k.shape().rank() != 3) {
    throw ShapeError(std::string(op) + ": q and k must be [batch, seq, hidden]");
  }
  AttentionShape a;
  a.batch = q.shape()[0];
  a.q_len = q.shape()[1];
  a.kv_len = k.shape()[1];
  a.hidden = q.shape()[2];
  const int64_t logical_heads = ctx.attrs.GetInt("heads", 0);
  const int64_t logical_hidden = LogicalInputShape(ctx, 0)[2];
  if (logical_heads <= 0 || logical_hidden % logical_heads != 0) {
    throw InvalidArgumentError(std::string(op) + ": heads must divide hidden");
  }
  a.head_dim = logical_hidden / logical_heads;
  const Range columns = InputRange(ctx, 0, 2);
  if (a.head_dim > 0 && (a.hidden % a.head_dim != 0 || columns.begin % a.head_dim != 0)) {
    throw ShapeError(std::string(op) + ": this device's hidden columns [" +
                     std::to_string(columns.begin) + ", " + std::to_string(columns.end) +
                     ") do not hold whole heads of " + std::to_string(a.head_dim));
  }
  // Hidden 0: every head is empty (its scores all zero), and nothing can have split it.
  a.heads = a.head_dim > 0 ? a.hidden / a.head_dim : logical_heads;
  a.kv_hidden = k.shape()[2];
  a.group = logical_heads / ctx.attrs.GetInt("kv_heads", logical_heads);
  a.kv_heads = a.heads / a.group;
  if (a.kv_heads * a.group != a.heads || a.kv_heads * a.head_dim != a.kv_hidden) {
    throw ShapeError(std::string(op) + ": this device's " + std::to_string(a.heads) +
                     " query heads do not match its k columns " + std::to_string(a.kv_hidden) +
                     " in whole groups of " + std::to_string(a.group));
  }
  a.q_offset = InputRange(ctx, 0, 1).begin;
  a.causal = ctx.attrs.GetBool("causal", true);
  a.scale = a.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(a.head_dim)) : 1.0;
  CheckShape(k, Shape{a.batch, a.kv_len, a.kv_hidden}, op, "k");
  CheckShape(*ctx.inputs[2], k.shape(), op, "v");
  for (int i = 1; i < 3; ++i) CheckDType(*ctx.inputs[i], q.dtype(), op, i == 1 ? "k" : "v");
  return a;
}

AttentionShape CheckAttentionForward(const KernelContext& ctx) {
  const char* op = "fused_attention";
  CheckArity(ctx, 3, 2, op);
  const AttentionShape a = CheckAttention(ctx, op);
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), op, "out");
  CheckDType(*ctx.outputs[0], ctx.inputs[0]->dtype(), op, "out");
  CheckShape(*ctx.outputs[1], a.LseShape(), op, "lse");
  return a;
}

AttentionShape CheckAttentionGrad(const KernelContext& ctx) {
  const char* op = "fused_attention_grad";
  const bool with_dlse = ctx.inputs.size() == 7;
  CheckArity(ctx, with_dlse ? 7 : 6, 3, op);
  const AttentionShape a = CheckAttention(ctx, op);
  const Shape& q_shape = ctx.inputs[0]->shape();
  CheckShape(*ctx.inputs[3], q_shape, op, "out");
  CheckShape(*ctx.inputs[4], a.LseShape(), op, "lse");
  CheckShape(*ctx.inputs[5], q_shape, op, "dout");
  if (with_dlse) CheckShape(*ctx.inputs[6], a.LseShape(), op, "dlse");
  CheckShape(*ctx.outputs[0], q_shape, op, "dq");
  for (int o = 1; o < 3; ++o) CheckShape(*ctx.outputs[o], ctx.inputs[1]->shape(), op, "dk/dv");
  return a;
}

}  // namespace twinflow::kernels
