#include <gtest/gtest.h>

#include "engine/core/tensor.h"

namespace twinflow {
TEST(CoreSmoke, TensorZeroFilled) {
  Tensor t(Shape{2, 3}, DType::kF32);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.GetDouble(5), 0.0);
}
}  // namespace twinflow
