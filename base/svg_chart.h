// Line charts as inline SVG, for reports that must stay one self-contained
// file readable without JavaScript: compliance_check's convergence curves
// and the benchmark tool's throughput charts. Hovering a point shows its
// values through SVG <title> elements, which need no script.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlperf::base {

// Text escaped for XML and HTML content and attribute values.
std::string XmlEscape(std::string_view text);

// Numbers for axis ticks and labels: 4 significant digits, k/M/G for large magnitudes.
std::string CompactNumber(double v);

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  bool dashed = false;                            // e.g. a run that did not converge
};

// A horizontal (y) or vertical (x) reference line, e.g. a quality target.
struct ChartLine {
  double at = 0;
  std::string label;
};

// A shaded vertical band between two x values, e.g. an acceptable range.
struct ChartBand {
  double from = 0, to = 0;
  std::string label;
};

struct LineChart {
  std::string id;  // unique within the page (names the clip path); letters, digits, '-'
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;
  std::vector<ChartLine> y_lines;
  std::vector<ChartLine> x_lines;
  std::vector<ChartBand> x_bands;
  int width = 720, height = 340;
  // x on a base-2 logarithmic axis (batch sizes, device counts): ticks at
  // powers of two; points with x <= 0 are left out.
  bool log2_x = false;
  // The y axis starts at 0 (throughputs), whatever the data's minimum.
  bool y_from_zero = false;
  // y on a base-10 logarithmic axis (times spanning decades): ticks at 1, 2
  // and 5 times powers of ten; points with y <= 0 are left out. Not with
  // y_from_zero.
  bool log10_y = false;
};

// The chart as one <svg> element. Non-finite values are left out; a chart
// with nothing to draw says so inside the frame.
std::string RenderSvg(const LineChart& chart);

}  // namespace mlperf::base
