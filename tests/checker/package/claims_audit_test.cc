#include "checker/package/claims_audit.h"

#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

const Claim kClaim{.version = "3.0",
                   .submitter = "NVIDIA",
                   .system = "s",
                   .benchmark = "resnet",
                   .minutes = 13.6008};

TEST(AuditClaim, MatchesRawMeanWhenThePublishedScorePredatesScaling) {
  const ClaimAudit a = AuditClaim(
      kClaim, {.olympic_mean = 13.60083, .normalized = 13.65828, .scaling_factor = 1.0042});
  EXPECT_EQ(a.match, ClaimMatch::kRaw);
  EXPECT_NEAR(*a.difference, 13.6008 - 13.60083, 1e-12);
}

TEST(AuditClaim, PrefersTheNormalisedScore) {
  const ClaimAudit a = AuditClaim(kClaim, {.olympic_mean = 13.6008, .normalized = 13.6008});
  EXPECT_EQ(a.match, ClaimMatch::kNormalized);
}

TEST(AuditClaim, NeitherAndUncheckable) {
  ClaimAudit a = AuditClaim(kClaim, {.olympic_mean = 13.7, .normalized = 13.8});
  EXPECT_EQ(a.match, ClaimMatch::kNeither);
  EXPECT_NEAR(*a.difference, 13.6008 - 13.8, 1e-12);
  a = AuditClaim(kClaim, {.unavailable = "2 of 5 runs dropped"});
  EXPECT_EQ(a.match, ClaimMatch::kUncheckable);
  EXPECT_EQ(a.reason, "2 of 5 runs dropped");
  EXPECT_FALSE(a.difference);
}

TEST(ParseClaimsCsv, ReadsNamedColumnsAndQuotes) {
  absl::StatusOr<std::vector<Claim>> c = ParseClaimsCsv(
      "version,division,submitter,system,framework,benchmark,minutes\n"
      "3.0,closed,NVIDIA,dgx,\"MXNet, \"\"NGC\"\"\",resnet,13.5\r\n",
      "c.csv");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].system, "dgx");
  EXPECT_EQ((*c)[0].benchmark, "resnet");
  EXPECT_EQ((*c)[0].minutes, 13.5);
  EXPECT_FALSE(ParseClaimsCsv("version,submitter\n3.0,NVIDIA\n", "c.csv").ok());
  EXPECT_FALSE(
      ParseClaimsCsv("version,submitter,system,benchmark,minutes\n3.0,N,s,b,fast\n", "c.csv").ok());
}

}  // namespace
}  // namespace mlperf::package
