#include "calibrate/minimize.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace dtsim::calibrate {
namespace {

using Point = std::vector<double>;

// c + t * (p - c), the points Nelder-Mead tries along the line from the centroid c through p.
Point along(const Point& c, const Point& p, double t) {
  Point r(c.size());
  for (std::size_t j = 0; j < c.size(); ++j) r[j] = c[j] + t * (p[j] - c[j]);
  return r;
}

class Simplex {
 public:
  Simplex(const std::function<double(const Point&)>& f, const Point& x0, double step) : f_(f) {
    pts_.push_back(x0);
    for (std::size_t i = 0; i < x0.size(); ++i) {
      pts_.push_back(x0);
      pts_.back()[i] += step;
    }
    for (const Point& p : pts_) vals_.push_back(eval(p));
  }

  // One iteration (Lagarias et al. 1998, sec. 2): order, reflect, expand or contract, or shrink.
  void iterate() {
    order();
    std::size_t n = pts_.size() - 1;
    Point c(pts_[0].size(), 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < c.size(); ++j) c[j] += pts_[i][j] / static_cast<double>(n);
    Point xr = along(c, pts_[n], -1.0);
    double fr = eval(xr);
    if (fr < vals_[0]) {
      Point xe = along(c, pts_[n], -2.0);
      double fe = eval(xe);
      return fe < fr ? replace(xe, fe) : replace(xr, fr);
    }
    if (fr < vals_[n - 1]) return replace(xr, fr);
    bool outside = fr < vals_[n];
    Point xc = outside ? along(c, xr, 0.5) : along(c, pts_[n], 0.5);
    double fc = eval(xc);
    if (fc < (outside ? fr : vals_[n])) return replace(xc, fc);
    for (std::size_t i = 1; i <= n; ++i) {  // shrink towards the best point
      pts_[i] = along(pts_[0], pts_[i], 0.5);
      vals_[i] = eval(pts_[i]);
    }
  }

  [[nodiscard]] bool converged(double tol) {
    order();
    return std::fabs(vals_.back() - vals_.front()) <= tol * (std::fabs(vals_.front()) + 1e-300);
  }
  [[nodiscard]] const Point& best() { order(); return pts_.front(); }
  [[nodiscard]] double best_value() { order(); return vals_.front(); }
  [[nodiscard]] int evaluations() const { return evaluations_; }

 private:
  double eval(const Point& p) {
    ++evaluations_;
    double v = f_(p);
    return std::isnan(v) ? INFINITY : v;
  }
  void replace(const Point& p, double v) { pts_.back() = p; vals_.back() = v; }
  // Stable sort by value: ties keep insertion order, so runs are reproducible.
  void order() {
    std::vector<std::size_t> idx(pts_.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return vals_[a] < vals_[b]; });
    std::vector<Point> p;
    std::vector<double> v;
    for (std::size_t i : idx) { p.push_back(std::move(pts_[i])); v.push_back(vals_[i]); }
    pts_ = std::move(p);
    vals_ = std::move(v);
  }

  const std::function<double(const Point&)>& f_;
  std::vector<Point> pts_;
  std::vector<double> vals_;
  int evaluations_ = 0;
};

}  // namespace

Minimum nelder_mead(const std::function<double(const std::vector<double>&)>& f, const std::vector<double>& x0,
                    const MinimizeOptions& opt) {
  if (x0.empty()) throw std::invalid_argument("nelder_mead: expected at least one parameter");
  Minimum m{.x = x0, .value = f(x0), .evaluations = 1};
  for (int round = 0; round <= opt.restarts; ++round) {
    Simplex s(f, m.x, opt.step);
    while (s.evaluations() < opt.max_evaluations && !s.converged(opt.tolerance)) s.iterate();
    m.evaluations += s.evaluations();
    if (s.best_value() < m.value) {
      m.x = s.best();
      m.value = s.best_value();
    }
  }
  return m;
}

}  // namespace dtsim::calibrate
