#include <gtest/gtest.h>
#include "onyx/tensor.h"
TEST(Tensor, Numel) { EXPECT_EQ(onyx::dims_numel({2, 3}), 6); }
