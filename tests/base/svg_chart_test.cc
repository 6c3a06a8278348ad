#include "base/svg_chart.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace mlperf::base {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(XmlEscape, EscapesMarkupQuotesAndControlCharacters) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(XmlEscape(std::string("x\x01y", 3)), "x&#xFFFD;y");
  EXPECT_EQ(XmlEscape("line\tok"), "line\tok");
}

TEST(CompactNumber, UsesSuffixesForLargeMagnitudes) {
  EXPECT_EQ(CompactNumber(0.759), "0.759");
  EXPECT_EQ(CompactNumber(35), "35");
  EXPECT_EQ(CompactNumber(2549219.556), "2.549M");
  EXPECT_EQ(CompactNumber(12000), "12k");
  EXPECT_EQ(CompactNumber(-3e9), "-3G");
}

TEST(RenderSvg, DrawsEverySeriesLineAndBandWithEscapedText) {
  LineChart c{.id = "t1", .title = "<run> & co", .x_label = "epoch", .y_label = "acc"};
  c.series.push_back({.name = "result_0", .points = {{1, 0.5}, {2, 0.7}, {3, 0.76}}});
  c.series.push_back(
      {.name = "result_1", .points = {{1, 0.4}, {2, NAN}, {3, 0.7}}, .dashed = true});
  c.y_lines.push_back({0.759, "target"});
  c.x_lines.push_back({2.5, "mean"});
  c.x_bands.push_back({2.2, 2.8, "band"});
  const std::string svg = RenderSvg(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;run&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(svg.find("<run>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<path "), 2u);
  EXPECT_EQ(Count(svg, "<circle "), 5u);                  // the NaN point is left out
  EXPECT_EQ(Count(svg, "stroke-dasharray=\"5 3\""), 2u);  // the dashed series and its legend
  EXPECT_NE(svg.find("clip-t1"), std::string::npos);
  EXPECT_NE(svg.find(">target</text>"), std::string::npos);
  EXPECT_NE(svg.find(">mean</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>band</title>"), std::string::npos);
  EXPECT_EQ(svg.find("script"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(RenderSvg, SaysWhenThereIsNothingToDraw) {
  LineChart c{.id = "e", .title = "empty"};
  c.series.push_back({.name = "r", .points = {{NAN, 1}, {INFINITY, 2}}});
  const std::string svg = RenderSvg(c);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.find("<path"), std::string::npos);
}

TEST(RenderSvg, ASingleValueStillGetsAnAxis) {
  LineChart c{.id = "s"};
  c.series.push_back({.name = "r", .points = {{5, 0.5}}});
  const std::string svg = RenderSvg(c);
  EXPECT_EQ(Count(svg, "<circle "), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

// The y position of the circle whose title ends with `value`.
double CircleY(const std::string& svg, const std::string& value) {
  const size_t title = svg.find(", " + value + "</title></circle>");
  const size_t circle = svg.rfind("<circle ", title);
  const size_t cy = svg.find("cy=\"", circle) + 4;
  return std::stod(svg.substr(cy, svg.find('"', cy) - cy));
}

TEST(RenderSvg, LogarithmicYAxis) {
  LineChart c{.id = "t", .log10_y = true};
  c.series.push_back({.name = "r", .points = {{1, 0.1}, {2, 1}, {3, 10}, {4, 0}, {5, -1}}});
  const std::string svg = RenderSvg(c);
  EXPECT_EQ(Count(svg, "<circle "), 3u);  // y <= 0 left out
  // Equal ratios, equal distances; the ticks at powers of ten (and 2x, 5x).
  EXPECT_NEAR(CircleY(svg, "0.1") - CircleY(svg, "1"), CircleY(svg, "1") - CircleY(svg, "10"), 0.11);
  for (const char* tick : {">0.1<", ">0.2<", ">0.5<", ">1<", ">2<", ">5<", ">10<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  // Over less than a factor of four, linear ticks of the values.
  LineChart narrow{.id = "n", .log10_y = true};
  narrow.series.push_back({.name = "r", .points = {{1, 3.5}, {2, 5.5}}});
  const std::string n = RenderSvg(narrow);
  EXPECT_NE(n.find(">4<"), std::string::npos);
  EXPECT_NE(n.find(">5<"), std::string::npos);
  EXPECT_EQ(n.find("nan"), std::string::npos);
}

}  // namespace
}  // namespace mlperf::base
