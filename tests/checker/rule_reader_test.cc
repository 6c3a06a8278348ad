// The .rules file format (docs/RULES_FORMAT.md).
#include "checker/rule_reader.h"

#include "gtest/gtest.h"

namespace mlperf::checker {
namespace {

TEST(RuleReaderTest, ReadsRecordsAndDirectives) {
  absl::StatusOr<RuleFile> f = ReadRuleFile(R"(
# comment
state first_init_start = 9e99   # trailing comment
group_metrics eval_accuracy by samples_count into aggregated_eval_accuracy

key submission_division exactly_one
  check v in ['closed', 'open']   # '#' inside a string: 'a#b'
  chain {v}_common
  set s.compile_time_mins = 240 if v == 'open' else 30

key block_start one_of(epoch_start)
key epoch_start one_of(block_start)
key eval_accuracy at_least(2)
  first_check md.samples_count == 1
  target v > 0.5
  set s.next += 1 when md.samples_count == s.next
key optional_key optional
key bare
end_check sorted(s.x) == sorted([
    'a',
    'b#c',
])
)",
                                            "9.9.9/common");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->ruleset, "9.9.9");
  ASSERT_EQ(f->state.size(), 1u);
  ASSERT_TRUE(f->group_metrics.has_value());
  EXPECT_EQ(f->group_metrics->field, "samples_count");
  ASSERT_EQ(f->records.size(), 6u);
  const KeyRecord& div = f->records[0];
  EXPECT_EQ(div.requirement, Requirement::kExactlyOne);
  ASSERT_EQ(div.checks.size(), 1u);
  EXPECT_EQ(div.checks[0].source_line, 7);
  ASSERT_EQ(div.actions.size(), 2u);
  EXPECT_EQ(div.actions[0].kind, Action::Kind::kChain);
  EXPECT_EQ(div.actions[0].chain_template, "{v}_common");
  EXPECT_EQ(div.actions[1].kind, Action::Kind::kSet);
  EXPECT_EQ(div.actions[1].state_name, "compile_time_mins");
  EXPECT_EQ(f->records[1].requirement, Requirement::kOneOf);
  EXPECT_EQ(f->records[1].alternatives, std::vector<std::string>{"epoch_start"});
  const KeyRecord& eval = f->records[3];
  EXPECT_EQ(eval.requirement, Requirement::kAtLeast);
  EXPECT_EQ(eval.at_least, 2);
  EXPECT_TRUE(eval.first_check.has_value());
  EXPECT_TRUE(eval.target.has_value());
  ASSERT_EQ(eval.actions.size(), 1u);
  EXPECT_EQ(eval.actions[0].kind, Action::Kind::kAdd);
  EXPECT_TRUE(eval.actions[0].when.has_value());
  EXPECT_EQ(f->records[4].requirement, Requirement::kOptional);
  EXPECT_EQ(f->records[5].requirement, Requirement::kNone);
  ASSERT_EQ(f->end_checks.size(), 1u);
  EXPECT_EQ(f->end_checks[0].source_line, 19);
}

TEST(RuleReaderTest, LaterRecordForTheSameKeyReplacesTheEarlierInPlace) {
  absl::StatusOr<RuleFile> f =
      ReadRuleFile("key a exactly_one\n  check v == 1\nkey b\nkey a at_least_one\n", "1.0.0/x");
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->records.size(), 2u);
  EXPECT_EQ(f->records[0].name, "a");
  EXPECT_EQ(f->records[0].requirement, Requirement::kAtLeastOne);
  EXPECT_TRUE(f->records[0].checks.empty());
}

TEST(RuleReaderTest, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"key a\n  check v >=\n", "x.rules:2"},
      {"check v == 1\n", "outside a key record"},
      {"key a sometimes\n", "unknown requirement"},
      {"key a one_of(b)\n", "without its own record"},
      {"key a\n  set v = 1\n", "expected `set s.NAME"},
      {"key a\n  target v > 1\n  target v > 2\n", "at most one"},
      {"state x = v\n", "only available inside a key record"},
      {"end_check md.x\n", "only available inside a key record"},
      {"frobnicate\n", "unknown directive"},
      {"key a\n  check v in [1,\n", "unclosed bracket"},
      {"key a\n  chain a b\n", "chain expects one rule file"},
      {"group_metrics a by b\n", "group_metrics SOURCE_KEY"},
      {"key a at_least(x)\n", "at_least(N)"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RuleFile> f = ReadRuleFile(c.text, "1.0.0/x");
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_NE(f.status().message().find(c.expected), absl::string_view::npos)
        << c.text << " -> " << f.status().message();
  }
}

}  // namespace
}  // namespace mlperf::checker
