#include "base/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fmt/format.h"

namespace mlperf::base {
namespace {

// Colour-blind-friendly categorical palette (Okabe-Ito, then greys).
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                                    "#56B4E9", "#F0E442", "#000000", "#999999", "#7F3C8D"};
constexpr int kLegendMax = 12;  // more series than this are summarised in the legend
constexpr double kLeft = 70, kRight = 170, kTop = 30, kBottom = 46;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  // Room around the data, and a non-zero width for a single value.
  void Pad(double fraction) {
    if (hi == lo) {
      const double d = lo == 0 ? 1 : std::abs(lo) * 0.1;
      lo -= d;
      hi += d;
    }
    const double d = (hi - lo) * fraction;
    lo -= d;
    hi += d;
  }
};

// About five ticks at 1, 2 or 5 times a power of ten.
std::vector<double> Ticks(const Range& r) {
  const double raw = (r.hi - r.lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
  std::vector<double> ticks;
  for (double t = std::ceil(r.lo / step) * step; t <= r.hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
    if (ticks.size() > 20) break;  // guards against a degenerate step
  }
  return ticks;
}

// Ticks of a base-10 logarithmic axis, as exponents: powers of ten, with 2 and
// 5 times them over less than three decades; linear ticks of the values over
// less than a factor of four.
std::vector<double> Log10Ticks(const Range& r) {
  std::vector<double> ticks;
  if (r.hi - r.lo < std::log10(4.0)) {
    Range values;
    values.Add(std::pow(10.0, r.lo));
    values.Add(std::pow(10.0, r.hi));
    for (double t : Ticks(values)) {
      if (t > 0) ticks.push_back(std::log10(t));
    }
    return ticks;
  }
  const bool fine = r.hi - r.lo < 3;
  for (double e = std::floor(r.lo); e <= r.hi && ticks.size() < 30; e += 1) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double t = e + std::log10(m);
      if ((m == 1.0 || fine) && t >= r.lo && t <= r.hi) ticks.push_back(t);
    }
  }
  return ticks;
}

// Powers of two between the range's ends (given as exponents), at most about ten.
std::vector<double> Log2Ticks(const Range& r) {
  std::vector<double> ticks;
  const double first = std::ceil(r.lo - 1e-9), last = std::floor(r.hi + 1e-9);
  const double step = std::max(1.0, std::ceil((last - first + 1) / 10));
  for (double e = first; e <= last; e += step) ticks.push_back(e);
  return ticks;
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters are not allowed in XML; show them as a replacement sign.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += "&#xFFFD;";
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string CompactNumber(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  const double a = std::abs(v);
  if (a >= 1e9) return fmt::format("{:.4g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.4g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.4g}k", v / 1e3);
  return fmt::format("{:.4g}", v);
}

std::string RenderSvg(const LineChart& chart) {
  const double w = chart.width, h = chart.height;
  const double pw = w - kLeft - kRight, ph = h - kTop - kBottom;
  // Positions along x: the value, or its base-2 logarithm (NaN for x <= 0).
  const auto tx = [&](double x) {
    if (!chart.log2_x) return x;
    return x > 0 ? std::log2(x) : std::numeric_limits<double>::quiet_NaN();
  };
  // Positions along y: the value, or its base-10 logarithm (NaN for y <= 0).
  const auto ty = [&](double y) {
    if (!chart.log10_y) return y;
    return y > 0 ? std::log10(y) : std::numeric_limits<double>::quiet_NaN();
  };
  Range xr, yr;
  for (const ChartSeries& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (std::isfinite(tx(x)) && std::isfinite(ty(y))) {
        xr.Add(tx(x));
        yr.Add(ty(y));
      }
    }
  }
  for (const ChartLine& l : chart.y_lines) {
    if (std::isfinite(ty(l.at))) yr.Add(ty(l.at));
  }
  for (const ChartLine& l : chart.x_lines) xr.Add(tx(l.at));
  for (const ChartBand& b : chart.x_bands) {
    xr.Add(tx(b.from));
    xr.Add(tx(b.to));
  }
  if (chart.y_from_zero && !chart.log10_y && !yr.empty()) yr.Add(0);

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\" class=\"chart\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n"
      "<text x=\"{3}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{2}</text>\n"
      "<rect x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\" fill=\"none\" stroke=\"#888\"/>\n",
      w, h, XmlEscape(chart.title), kLeft, kTop, pw, ph);
  if (xr.empty() || yr.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#666\">no data</text>\n",
                       kLeft + 10, kTop + ph / 2);
    return out + "</svg>\n";
  }
  xr.Pad(chart.log2_x ? 0.05 : 0.02);
  const bool from_zero = chart.y_from_zero && !chart.log10_y && yr.lo >= 0;
  yr.Pad(0.06);
  if (from_zero) yr.lo = 0;  // no padding below the axis' zero
  // Positions in the plot of transformed (tx) x values.
  auto pt = [&](double t) { return kLeft + (t - xr.lo) / (xr.hi - xr.lo) * pw; };
  auto px = [&](double x) { return pt(tx(x)); };
  // Positions in the plot of transformed (ty) y values, and of values.
  auto pty = [&](double t) { return kTop + ph - (t - yr.lo) / (yr.hi - yr.lo) * ph; };
  auto py = [&](double y) { return pty(ty(y)); };

  for (const ChartBand& b : chart.x_bands) {
    const double x0 = px(std::min(b.from, b.to)), x1 = px(std::max(b.from, b.to));
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#2ca02c\" "
        "fill-opacity=\"0.15\"><title>{}</title></rect>\n",
        x0, kTop, std::max(x1 - x0, 1.0), ph, XmlEscape(b.label));
  }
  // Axes: ticks, grid and labels.
  for (double t : chart.log2_x ? Log2Ticks(xr) : Ticks(xr)) {
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"11\" text-anchor=\"middle\">{4}</text>\n",
        pt(t), kTop, kTop + ph, kTop + ph + 15, CompactNumber(chart.log2_x ? std::exp2(t) : t));
  }
  for (double t : chart.log10_y ? Log10Ticks(yr) : Ticks(yr)) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5}</text>\n",
        kLeft, pty(t), kLeft + pw, kLeft - 5, pty(t) + 4,
        CompactNumber(chart.log10_y ? std::pow(10.0, t) : t));
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"14\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">{}</text>\n",
      kLeft + pw / 2, h - 8, XmlEscape(chart.x_label), kTop + ph / 2, kTop + ph / 2,
      XmlEscape(chart.y_label));

  for (const ChartLine& l : chart.y_lines) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#c00\" "
        "stroke-dasharray=\"6 3\"><title>{3}</title></line>"
        "<text x=\"{4}\" y=\"{5:.1f}\" font-size=\"11\" fill=\"#c00\">{3}</text>\n",
        kLeft, py(l.at), kLeft + pw, XmlEscape(l.label), kLeft + 4, py(l.at) - 3);
  }
  for (size_t i = 0; i < chart.x_lines.size(); ++i) {
    const ChartLine& l = chart.x_lines[i];
    // Labels near the right edge go on the line's left side.
    const bool left = px(l.at) > kLeft + pw * 0.7;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#333\" "
        "stroke-dasharray=\"2 2\"><title>{3}</title></line>"
        "<text x=\"{4:.1f}\" y=\"{5}\" font-size=\"10\" fill=\"#333\"{6}>{3}</text>\n",
        px(l.at), kTop, kTop + ph, XmlEscape(l.label), px(l.at) + (left ? -3 : 3),
        kTop + ph - 8 - 12 * static_cast<double>(i), left ? " text-anchor=\"end\"" : "");
  }

  // Clip the data to the plot area.
  out += fmt::format(
      "<clipPath id=\"clip-{0}\"><rect x=\"{1}\" y=\"{2}\" width=\"{3}\" height=\"{4}\"/>"
      "</clipPath>\n<g clip-path=\"url(#clip-{0})\" fill=\"none\" stroke-width=\"1.5\">\n",
      XmlEscape(chart.id), kLeft, kTop, pw, ph);
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* colour = kPalette[i % std::size(kPalette)];
    std::string path, dots;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(tx(x)) || !std::isfinite(ty(y))) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(x), py(y));
      dots += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.2\" fill=\"{}\"><title>{}: "
          "{}, {}</title></circle>",
          px(x), py(y), colour, XmlEscape(s.name), CompactNumber(x), CompactNumber(y));
    }
    out += fmt::format("<g><title>{}</title><path d=\"{}\" stroke=\"{}\"{}/>{}</g>\n",
                       XmlEscape(s.name), path, colour, s.dashed ? " stroke-dasharray=\"5 3\"" : "",
                       dots);
  }
  out += "</g>\n";

  // Legend on the right.
  const double lx = kLeft + pw + 12;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const double ly = kTop + 8 + 15 * static_cast<double>(i);
    if (static_cast<int>(i) == kLegendMax - 1 && chart.series.size() > kLegendMax) {
      out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">... {} more</text>\n", lx,
                         ly + 4, chart.series.size() - i);
      break;
    }
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
        "<text x=\"{5}\" y=\"{6}\" font-size=\"11\">{7}</text>\n",
        lx, ly, lx + 18, kPalette[i % std::size(kPalette)],
        chart.series[i].dashed ? " stroke-dasharray=\"5 3\"" : "", lx + 22, ly + 4,
        XmlEscape(chart.series[i].name));
  }
  return out + "</svg>\n";
}

}  // namespace mlperf::base
