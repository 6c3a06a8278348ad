#include "checker/package/numpy_stats.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

TEST(NumpySum, PairwiseLikeNumpyNotLeftToRight) {
  // np.sum gives 2010.0 here; a left-to-right sum gives 2010.0000000000002.
  std::vector<double> tenths;
  double naive = 0;
  for (int i = 1; i <= 200; ++i) {
    tenths.push_back(0.1 * i);
    naive += 0.1 * i;
  }
  EXPECT_NE(naive, 2010.0);
  EXPECT_EQ(NumpySum(tenths), 2010.0);
  // np.sum([1e16] + [1.0] * 20 + [-1e16]) == 16.0 (eight accumulators).
  std::vector<double> cancel = {1e16};
  cancel.insert(cancel.end(), 20, 1.0);
  cancel.push_back(-1e16);
  EXPECT_EQ(NumpySum(cancel), 16.0);
}

TEST(NumpyStats, PopulationStdevOfFullList) {
  // resnet_ref_1632 (3.0.0): np.std(...) = 1.0846522890932808 (spec 6.4).
  const std::vector<double> epochs = {34, 34, 34, 35, 35, 37, 35, 35, 33,
                                      35, 35, 37, 37, 35, 35, 34, 35};
  EXPECT_EQ(NumpyPopulationStdev(epochs), 1.0846522890932808);
  EXPECT_TRUE(std::isnan(NumpyMean({})));
}

TEST(NumpyInterp, LinearAndExactAtTheEnds) {
  EXPECT_EQ(NumpyInterp(15, 10, 20, 1, 3), 2.0);
  EXPECT_EQ(NumpyInterp(20, 10, 20, 1, 3), 3.0);
  EXPECT_EQ(NumpyInterp(10, 10, 20, 1, 3), 1.0);
  EXPECT_EQ(NumpyInterp(7, 7, 7, 4, 5), 5.0);  // equal end points: numpy returns the right value
}

}  // namespace
}  // namespace mlperf::package
