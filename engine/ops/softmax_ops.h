#pragma once
// The softmax family: softmax, log_softmax, sparse_softmax_cross_entropy and their helpers.
//
// Cross entropy with the classes split over devices (Megatron's vocabulary-parallel loss)
// cannot be one op's signature: the log-sum-exp of a split row needs a max and a sum across
// devices. SparseSoftmaxCrossEntropy(class_split=true) therefore builds it from ops that each
// have valid signatures on a class split (OneFlow's approach):
//   m      = reduce_max(logits, axes=[-1])                   S(last) -> P(max)
//   e      = sparse_xent_class_split_exp(logits, m)          S(last), B -> S(last)
//   s      = reduce_sum(e, axes=[-1])                        S(last) -> P(sum)
//   picked = pick_label_logit(logits, labels)                S(last), B -> P(sum)
//   loss   = sparse_xent_class_split_loss(s, m, picked)      log(s) + m - picked
// The SBP search inserts the all-reduces (P(max) -> B, P(sum) -> B) between them.
#include "engine/graph/graph_builder.h"

namespace twinflow::ops {

// Per-example loss, shaped like `labels` (logits [..., C], labels [...] i32 or i64). With
// class_split false this is one sparse_softmax_cross_entropy op. bf16/f16 logits are cast to
// f32 first: the loss is computed and returned in f32, as mixed-precision training does.
graph::TensorId SparseSoftmaxCrossEntropy(graph::GraphBuilder& builder, graph::TensorId logits,
                                          graph::TensorId labels, bool class_split);

// The class-split helper ops (sparse_xent_class_split_ops.cc); RegisterSoftmaxOps calls it.
void RegisterSparseXentClassSplitOps(graph::OpRegistry& registry);

}  // namespace twinflow::ops
