// The gtest main of a test run under mpirun: every rank runs every test and
// asserts, rank 0 alone prints, and a failure on any rank fails them all.
#pragma once

#include <gtest/gtest.h>

#include "reference/dist/communicator.h"

namespace mlperf::test {

// After ::testing::InitGoogleTest: RUN_ALL_TESTS on this rank, then the
// verdict of every rank (0 only when all passed).
inline int RunTestsOnEveryRank(dist::Communicator& comm) {
  if (comm.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  float failed = RUN_ALL_TESTS() != 0 ? 1.0f : 0.0f;
  comm.AllReduceSum(&failed, 1);
  return failed != 0.0f ? 1 : 0;
}

}  // namespace mlperf::test
