// Label core: needs cuDNN but no GPU. cuDNN's graph API accepts the
// convolutions cuda/conv_graph describes (tensors, the convolution and each
// direction's operation), in every dtype, both orders, 2-D and 3-D and with
// uneven padding, with the channel sums of a forward's output too, and
// refuses a description whose output shape does not follow from the rest. Choosing and running an
// engine needs a GPU (CudaPrecisionTwinTest.GraphApiConvolutionsRoundLikeTheCpu).
#include <gtest/gtest.h>

#include <vector>

#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cuda/conv_graph.h"

namespace mlperf {
namespace {

using Direction = cuda::ConvGraphCall::Direction;

TEST(ConvGraphTest, ActivationDimsFollowTheMemoryOrder) {
  const int64_t spatial[3] = {1, 5, 7};
  int64_t dims[5], strides[5];
  ASSERT_EQ(cuda::ActivationDims(false, true, 2, 3, spatial, dims, strides), 4);
  EXPECT_EQ((std::vector<int64_t>(dims, dims + 4)), (std::vector<int64_t>{2, 3, 5, 7}));
  EXPECT_EQ((std::vector<int64_t>(strides, strides + 4)), (std::vector<int64_t>{105, 1, 21, 3}));
  ASSERT_EQ(cuda::ActivationDims(false, false, 2, 3, spatial, dims, strides), 4);
  EXPECT_EQ((std::vector<int64_t>(strides, strides + 4)), (std::vector<int64_t>{105, 35, 7, 1}));
  const int64_t volume[3] = {4, 5, 6};
  ASSERT_EQ(cuda::ActivationDims(true, true, 1, 2, volume, dims, strides), 5);
  EXPECT_EQ((std::vector<int64_t>(strides, strides + 5)),
            (std::vector<int64_t>{240, 1, 60, 12, 2}));
}

TEST(ConvGraphTest, CudnnAcceptsEveryDirectionDtypeAndOrder) {
  ConvGeometry uneven = Conv2d(2, 8, 8, 8, 16, 3, 3, 2, 1);
  uneven.pad_begin[1] = uneven.pad_begin[2] = 0;
  const struct {
    ConvGeometry g;
    bool three_d;
  } cases[] = {{Conv2d(2, 8, 9, 7, 16, 3, 3, 2, 1), false},
               {Conv2d(4, 64, 14, 14, 256, 1, 1, 1, 0), false},
               {uneven, false},
               {Conv3d(1, 4, 6, 6, 6, 8, 3, 2, 1), true}};
  for (const auto& c : cases) {
    for (cudnnDataType_t dtype : {CUDNN_DATA_FLOAT, CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF}) {
      for (bool last : {false, true}) {
        for (Direction dir :
             {Direction::kForward, Direction::kBackwardData, Direction::kBackwardFilter}) {
          EXPECT_TRUE(cuda::ConvGraphDescribable(
              cuda::DescribeConvGraph(dir, c.g, dtype, c.three_d, last, last)))
              << "direction " << dir << " dtype " << dtype << " channels-last " << last << " in "
              << c.g.in[1] << " kernel " << c.g.kernel[1];
        }
      }
    }
  }
}

// The inference epilogue (scale, bias, residual, ReLU on the products) is
// described for forward calls only, in every variant (cuDNN finalises each
// pointwise operation and virtual tensor).
TEST(ConvGraphTest, ScaleBiasEpilogueDescribesOnForwardCallsOnly) {
  const struct {
    ConvGeometry g;
    bool three_d;
  } cases[] = {{Conv2d(4, 64, 14, 14, 256, 1, 1, 1, 0), false},
               {Conv2d(4, 3, 32, 32, 64, 7, 7, 2, 3), false},
               {Conv3d(1, 8, 6, 6, 6, 16, 3, 2, 1), true}};
  for (const auto& c : cases) {
    for (cudnnDataType_t dtype : {CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF}) {
      for (const bool residual : {false, true}) {
        for (const bool relu : {false, true}) {
          for (Direction dir :
               {Direction::kForward, Direction::kBackwardData, Direction::kBackwardFilter}) {
            cuda::ConvGraphCall call =
                cuda::DescribeConvGraph(dir, c.g, dtype, c.three_d, true, true);
            EXPECT_FALSE(call.scale_bias || call.residual || call.relu);  // off unless asked for
            call.scale_bias = true;
            call.residual = residual;
            call.relu = relu;
            EXPECT_EQ(cuda::ConvGraphDescribable(call), dir == Direction::kForward)
                << "direction " << dir << " dtype " << dtype << " residual " << residual << " relu "
                << relu << " 3-D " << c.three_d;
          }
        }
      }
    }
  }
}

TEST(ConvGraphTest, CudnnRefusesAnOutputOfTheWrongShape) {
  cuda::ConvGraphCall call = cuda::DescribeConvGraph(
      Direction::kForward, Conv2d(2, 8, 9, 7, 16, 3, 3, 2, 1), CUDNN_DATA_FLOAT, false, true, true);
  ASSERT_TRUE(cuda::ConvGraphDescribable(call));
  call.y_dims[2] += 1;  // one output row too many for the geometry
  EXPECT_FALSE(cuda::ConvGraphDescribable(call));
}

}  // namespace
}  // namespace mlperf
