// Text forms of Sbp, NdSbp and Layout: parse and print round-trip, and every error is an
// SbpError that names the offending text.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/sbp/layout.h"
#include "engine/sbp/nd_sbp.h"
#include "engine/sbp/sbp.h"

namespace twinflow::sbp {
namespace {

// The message of the SbpError `fn` throws; fails the test when it throws nothing.
template <typename Fn>
std::string SbpErrorOf(Fn fn) {
  try {
    fn();
  } catch (const SbpError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an SbpError";
  return "";
}

TEST(SbpTextTest, RoundTrips) {
  for (const char* text : {"S(0)", "S(3)", "S(12)", "B", "P", "P(max)", "P(min)"}) {
    EXPECT_EQ(ParseSbp(text).ToString(), text);
  }
  EXPECT_EQ(ParseSbp("S(2)"), Sbp::Split(2));
  EXPECT_EQ(ParseSbp("B"), Sbp::Broadcast());
  EXPECT_EQ(ParseSbp("P"), Sbp::Partial(ReduceOp::kSum));
  EXPECT_EQ(ParseSbp("P(sum)"), Sbp::Partial());
  EXPECT_EQ(ParseSbp("P(sum)").ToString(), "P");
  EXPECT_EQ(ParseSbp("P(max)"), Sbp::Partial(ReduceOp::kMax));
  EXPECT_EQ(ParseSbp(" S ( 1 ) "), Sbp::Split(1));
  EXPECT_EQ(ParseSbp(" P( min )"), Sbp::Partial(ReduceOp::kMin));
}

TEST(SbpTextTest, EqualityAndOrder) {
  EXPECT_NE(Sbp::Split(0), Sbp::Split(1));
  EXPECT_NE(Sbp::Partial(ReduceOp::kMax), Sbp::Partial(ReduceOp::kMin));
  EXPECT_NE(Sbp::Broadcast(), Sbp::Partial());
  std::vector<Sbp> all = {
      Sbp::Partial(ReduceOp::kMin), Sbp::Broadcast(), Sbp::Split(1), Sbp::Partial(), Sbp::Split(0),
      Sbp::Partial(ReduceOp::kMax)};
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    EXPECT_TRUE(all[i] < all[i + 1]) << all[i].ToString() << " " << all[i + 1].ToString();
    EXPECT_FALSE(all[i + 1] < all[i]);
  }
  EXPECT_FALSE(Sbp::Split(1) < Sbp::Split(1));
}

TEST(SbpTextTest, MalformedSbpIsAnError) {
  for (const char* bad : {"S(", "S(x)", "Q", "", "S()", "S(1", "S1)", "B(0)", "P()", "S(-1)",
                          "s(0)", "S(0)x", "S(99999999999)"}) {
    const std::string message = SbpErrorOf([&] { ParseSbp(bad); });
    EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos)
        << bad << ": " << message;
  }
}

TEST(SbpTextTest, UnknownReduceOpNamesTheText) {
  const std::string message = SbpErrorOf([] { ParseSbp("P(avg)"); });
  EXPECT_NE(message.find("reduce op"), std::string::npos) << message;
  EXPECT_NE(message.find("P(avg)"), std::string::npos) << message;
}

TEST(NdSbpTextTest, RoundTrips) {
  for (const char* text : {"(S(0),B)", "(P,S(1))", "(B,B,P(max))", "S(0)", "P(min)", "B"}) {
    EXPECT_EQ(ParseNdSbp(text).ToString(), text);
  }
  EXPECT_EQ(ParseNdSbp("(S(0))"), ParseNdSbp("S(0)"));
  EXPECT_EQ(ParseNdSbp("(S(0))").ToString(), "S(0)");
  EXPECT_EQ(ParseNdSbp("( S(0) , P(sum) )"), NdSbp({Sbp::Split(0), Sbp::Partial()}));
  EXPECT_EQ(ParseNdSbp("(P)").size(), 1);
  EXPECT_TRUE(ParseNdSbp("(B,P(max))").has_partial());
  EXPECT_FALSE(ParseNdSbp("(B,S(0))").has_partial());
  EXPECT_TRUE(ParseNdSbp("(B,S(0))") < ParseNdSbp("(B,P)") ||
              ParseNdSbp("(B,P)") < ParseNdSbp("(B,S(0))"));
  EXPECT_FALSE(ParseNdSbp("(B,P)") < ParseNdSbp("(B,P)"));
}

TEST(NdSbpTextTest, MalformedIsAnError) {
  for (const char* bad : {"", "()", "(S(0),)", "(,B)", "(S(0)", "S(0),B", "(S(0),B))", "((S(0),B)",
                          "(S(0),Q)", "(B)(B)"}) {
    EXPECT_THROW(ParseNdSbp(bad), SbpError) << bad;
  }
  EXPECT_NE(SbpErrorOf([] { ParseNdSbp("(S(0),B"); }).find("(S(0),B"), std::string::npos);
  EXPECT_NE(SbpErrorOf([] { ParseNdSbp("(S(0),)"); }).find("(S(0),)"), std::string::npos);
  EXPECT_NE(SbpErrorOf([] { ParseNdSbp("(S(0),Q)"); }).find("'Q'"), std::string::npos);
}

TEST(NdSbpTextTest, Validate) {
  const NdSbp nd = ParseNdSbp("(S(0),B)");
  EXPECT_NO_THROW(nd.Validate(1, 2));
  EXPECT_NO_THROW(nd.Validate(3, 2));
  EXPECT_THROW(nd.Validate(2, 1), SbpError);
  EXPECT_THROW(nd.Validate(0, 2), SbpError);  // a scalar cannot be split
  const std::string length = SbpErrorOf([&] { nd.Validate(2, 1); });
  EXPECT_NE(length.find("(S(0),B) has 2 entries"), std::string::npos) << length;
  EXPECT_NE(length.find("1 axis"), std::string::npos) << length;
  const std::string axis = SbpErrorOf([] { ParseNdSbp("(S(7),B)").Validate(2, 2); });
  EXPECT_NE(axis.find("S(7) splits axis 7 of a rank-2 tensor"), std::string::npos) << axis;
  EXPECT_THROW(NdSbp({Sbp::Split(-1)}).Validate(2, 1), SbpError);
  EXPECT_NO_THROW(ParseNdSbp("(P,B)").Validate(0, 2));
}

TEST(LayoutTextTest, RoundTrips) {
  for (const char* text :
       {"cpu:0-3 [2,2] (S(0),B)", "cpu:4-5 [2] P", "cuda:0,2,4-5 [2,2] (B,P(max))",
        "cpu:7 [1] S(1)", "cpu:0-7 [2,2,2] (S(0),S(1),P(min))"}) {
    EXPECT_EQ(ParseLayout(text).ToString(), text);
  }
  const Layout l = ParseLayout("cpu:0-3 S(0)");
  EXPECT_EQ(l.ToString(), "cpu:0-3 [4] S(0)");
  EXPECT_EQ(l.placement.hierarchy(), (Shape{4}));
  EXPECT_EQ(l.nd_sbp, NdSbp({Sbp::Split(0)}));
  EXPECT_EQ(ParseLayout("  cpu : 0 - 3 [ 2 , 2 ] ( S(0) , B ) "),
            ParseLayout("cpu:0-3 [2,2] (S(0),B)"));
  EXPECT_EQ(ParseLayout("cpu:0-1 (P)").ToString(), "cpu:0-1 [2] P");
}

TEST(LayoutTextTest, Errors) {
  for (const char* bad : {"", "cpu:0-3", "cpu:0-3 [2,2]", "S(0)", "tpu:0 B", "cpu:0-3 [2,2 B",
                          "cpu:0-3 [2,2] (S(0),", "cpu:0-3 [3] B", "cpu:0-3 Q"}) {
    EXPECT_THROW(ParseLayout(bad), SbpError) << bad;
  }
}

TEST(LayoutTextTest, Validate) {
  const Layout l = ParseLayout("cpu:0-3 [4] (S(0),B)");  // parsing checks only the syntax
  const std::string length = SbpErrorOf([&] { l.Validate(Shape{4, 4}); });
  EXPECT_NE(length.find("nd_sbp (S(0),B) has 2 entries but the hierarchy [4] has 1 axis"),
            std::string::npos)
      << length;
  EXPECT_NE(length.find("cpu:0-3 [4] (S(0),B)"), std::string::npos) << length;
  const Layout s = ParseLayout("cpu:0-3 [2,2] (S(0),S(2))");
  EXPECT_NO_THROW(s.Validate(Shape{2, 2, 2}));
  const std::string axis = SbpErrorOf([&] { s.Validate(Shape{7, 5}); });
  EXPECT_NE(axis.find("S(2) splits axis 2 of a rank-2 tensor"), std::string::npos) << axis;
  EXPECT_NE(axis.find("cpu:0-3 [2,2] (S(0),S(2))"), std::string::npos) << axis;
}

}  // namespace
}  // namespace twinflow::sbp
