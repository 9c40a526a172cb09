#include "tools/calibration/fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/missing.hpp"

namespace tilesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxLambda = 1e12;
constexpr double kMinLambda = 1e-12;

// Internal coordinate of one parameter.
struct Coord {
  FitScale scale = FitScale::kLog;
  double s = 1;  // linear: natural = u * s
  double lo = 0, hi = 0;
  double to_internal(double p) const { return scale == FitScale::kLog ? std::log(p) : p / s; }
  double to_natural(double u) const { return scale == FitScale::kLog ? std::exp(u) : u * s; }
};

bool all_finite(const Eigen::VectorXd& r) {
  return r.allFinite();
}

double cost_of(const Eigen::VectorXd& r) {
  return all_finite(r) ? 0.5 * r.squaredNorm() : kInf;
}

std::string fmt_num(double x) {
  return fmt::format("{:.4g}", x);
}

}  // namespace

BatchResidualFn batch_of(std::function<Eigen::VectorXd(const Eigen::VectorXd&)> f) {
  return [f = std::move(f)](const std::vector<Eigen::VectorXd>& points) {
    std::vector<Eigen::VectorXd> out;
    out.reserve(points.size());
    for (const auto& p : points) out.push_back(f(p));
    return out;
  };
}

namespace {

// One bounded Levenberg-Marquardt fit, as named steps: the internal coordinates, the damped
// iterations over the parameters not held (with held ones rejoining when they gain influence),
// then the report of each parameter and the conditioning of the identifiable ones.
class LmFit {
 public:
  LmFit(const std::vector<FitParameter>& params, const BatchResidualFn& f, const FitOptions& opt)
      : params_(params), f_(f), opt_(opt), n_(params.size()), coords_(n_), u_(n_), u0_(n_) {}

  FitResult run() {
    set_coordinates();
    start();
    iterate();
    report_parameters();
    report_conditioning();
    report_bounds_and_errors();
    return std::move(res_);
  }

 private:
  // Log coordinates for positive bounds, scaled linear ones otherwise.
  void set_coordinates() {
    if (n_ == 0) throw std::invalid_argument("no free parameters to fit");
    for (size_t j = 0; j < n_; ++j) {
      const FitParameter& p = params_[j];
      if (!(std::isfinite(p.min) && std::isfinite(p.max) && p.min < p.max))
        throw std::invalid_argument(p.name + ": bounds must be finite with min < max (got " +
                                    fmt_num(p.min) + ", " + fmt_num(p.max) + ")");
      if (!(p.initial >= p.min && p.initial <= p.max))
        throw std::invalid_argument(p.name + ": initial value " + fmt_num(p.initial) +
                                    " outside its bounds [" + fmt_num(p.min) + ", " +
                                    fmt_num(p.max) + "]");
      Coord& c = coords_[j];
      if (p.min > 0) {
        c.scale = FitScale::kLog;
      } else {
        c.scale = FitScale::kLinear;
        c.s = p.initial != 0 ? std::abs(p.initial) : std::max(1e-12, (p.max - p.min) * 1e-6);
      }
      c.lo = c.to_internal(p.min);
      c.hi = c.to_internal(p.max);
      u0_[j] = u_[j] = c.to_internal(p.initial);
    }
    res_.condition_limit = opt_.condition_limit;
  }

  Eigen::VectorXd natural(const Eigen::VectorXd& v) const {
    Eigen::VectorXd p(n_);
    for (size_t j = 0; j < n_; ++j)
      p[j] = v[j] == u0_[j]
                 ? params_[j].initial
                 : std::clamp(coords_[j].to_natural(v[j]), params_[j].min, params_[j].max);
    return p;
  }

  std::vector<Eigen::VectorXd> eval(const std::vector<Eigen::VectorXd>& us) {
    std::vector<Eigen::VectorXd> pts;
    pts.reserve(us.size());
    for (const auto& v : us) pts.push_back(natural(v));
    std::vector<Eigen::VectorXd> rs = f_(pts);
    if (rs.size() != us.size())
      throw InternalError("residual function returned the wrong number of vectors");
    for (const auto& r : rs)
      if (static_cast<size_t>(r.size()) != m_)
        throw InternalError("residual function changed the residual count");
    res_.evaluations += static_cast<int>(us.size());
    return rs;
  }

  // The residuals at the initial values, and which parameters start held (no influence).
  void start() {
    std::vector<Eigen::VectorXd> first = f_({natural(u_)});
    res_.evaluations = 1;
    if (first.size() != 1) throw InternalError("residual function returned no vector");
    m_ = static_cast<size_t>(first[0].size());
    res_.initial_residuals = first[0];
    if (m_ == 0) throw std::invalid_argument("no residuals to fit");
    if (!all_finite(res_.initial_residuals))
      throw std::invalid_argument("the residuals at the initial parameters are not finite");
    r_ = res_.initial_residuals;
    cost_ = cost_of(r_);
    res_.initial_cost = cost_;
    all_.resize(n_);
    std::iota(all_.begin(), all_.end(), size_t{0});
    J_ = jacobian(u_, r_, all_);
    held_.assign(n_, false);
    for (size_t j = 0; j < n_; ++j) held_[j] = influence(j) < opt_.influence_tolerance;
  }

  // Forward differences over `cols` (a column not listed stays 0); steps back when the forward
  // point would cross the upper bound.
  Eigen::MatrixXd jacobian(const Eigen::VectorXd& at, const Eigen::VectorXd& r_at,
                           const std::vector<size_t>& cols) {
    Eigen::MatrixXd J =
        Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m_), static_cast<Eigen::Index>(n_));
    std::vector<Eigen::VectorXd> pts;
    std::vector<double> hs;
    for (size_t j : cols) {
      double h = opt_.fd_step;
      if (at[j] + h > coords_[j].hi) h = -h;
      if (at[j] + h < coords_[j].lo) h = (coords_[j].hi - coords_[j].lo) / 2;  // tiny box
      Eigen::VectorXd v = at;
      v[j] += h;
      pts.push_back(v);
      hs.push_back(h);
    }
    if (pts.empty()) return J;
    const auto rs = eval(pts);
    for (size_t k = 0; k < cols.size(); ++k) {
      if (!all_finite(rs[k])) {
        const std::string& name = params_[cols[k]].name;
        if (std::find(failed_columns_.begin(), failed_columns_.end(), name) ==
            failed_columns_.end())
          failed_columns_.push_back(name);
        continue;  // column stays 0: the model cannot be evaluated on that side
      }
      J.col(static_cast<Eigen::Index>(cols[k])) = (rs[k] - r_at) / hs[k];
    }
    return J;
  }

  double influence(size_t j) const {
    return m_ == 0 ? 0.0 : J_.col(static_cast<Eigen::Index>(j)).cwiseAbs().maxCoeff();
  }
  bool at_lower(size_t j) const {
    return u_[j] <= coords_[j].lo + 1e-12 * (1 + std::abs(coords_[j].lo));
  }
  bool at_upper(size_t j) const {
    return u_[j] >= coords_[j].hi - 1e-12 * (1 + std::abs(coords_[j].hi));
  }

  void stop(bool converged, std::string why) {
    res_.converged = converged;
    res_.stop_reason = std::move(why);
  }

  // Damped steps until a stop; then a held parameter that gained influence at the solution
  // rejoins the fit (at most three times).
  void iterate() {
    double lambda = opt_.initial_lambda;
    int rechecks = 0;
    while (true) {
      descend(lambda);
      // Final Jacobian over every parameter: a held parameter that gained influence at the
      // solution rejoins the fit.
      J_ = jacobian(u_, r_, all_);
      bool rejoined = false;
      for (size_t j = 0; j < n_; ++j)
        if (held_[j] && influence(j) >= opt_.influence_tolerance) {
          held_[j] = false;
          rejoined = true;
        }
      if (!rejoined || rechecks++ >= 3 || res_.iterations >= opt_.max_iterations) break;
      lambda = std::max(lambda, opt_.initial_lambda);
    }
  }

  // Iterations over the free parameters that are not pinned at a bound by their gradient.
  void descend(double& lambda) {
    bool need_jacobian = false;  // J is fresh on entry
    while (true) {
      if (res_.iterations >= opt_.max_iterations)
        return stop(false, fmt::format("iteration limit ({}) reached", opt_.max_iterations));
      if (need_jacobian) {
        std::vector<size_t> cols;
        for (size_t j = 0; j < n_; ++j)
          if (!held_[j]) cols.push_back(j);
        J_ = jacobian(u_, r_, cols);
      }
      const Eigen::VectorXd g = J_.transpose() * r_;
      std::vector<Eigen::Index> act;
      for (size_t j = 0; j < n_; ++j) {
        if (held_[j]) continue;
        if (at_lower(j) && g[static_cast<Eigen::Index>(j)] > 0) continue;
        if (at_upper(j) && g[static_cast<Eigen::Index>(j)] < 0) continue;
        act.push_back(static_cast<Eigen::Index>(j));
      }
      if (act.empty())
        return stop(true, "every parameter is held (at a bound or without influence)");
      if (!step(act, g, lambda)) return;
      need_jacobian = true;
    }
  }

  // One accepted step over the active parameters `act`, raising the damping until the cost
  // falls. False when the fit stops (the reason set).
  bool step(const std::vector<Eigen::Index>& act, const Eigen::VectorXd& g, double& lambda) {
    const Eigen::Index k = static_cast<Eigen::Index>(act.size());
    Eigen::MatrixXd Ja(static_cast<Eigen::Index>(m_), k);
    Eigen::VectorXd ga(k);
    for (Eigen::Index i = 0; i < k; ++i) {
      Ja.col(i) = J_.col(act[static_cast<size_t>(i)]);
      ga[i] = g[act[static_cast<size_t>(i)]];
    }
    if (ga.cwiseAbs().maxCoeff() == 0) {
      stop(true, "gradient is zero");
      return false;
    }
    const Eigen::MatrixXd A = Ja.transpose() * Ja;
    Eigen::VectorXd D = A.diagonal();
    const double dmax = std::max(D.maxCoeff(), 1e-300);
    for (Eigen::Index i = 0; i < k; ++i) D[i] = std::max(D[i], 1e-12 * dmax);
    while (true) {
      Eigen::MatrixXd M = A;
      M.diagonal() += lambda * D;
      const Eigen::VectorXd delta = M.ldlt().solve(-ga);
      Eigen::VectorXd un = u_;
      const bool ok = delta.allFinite();
      if (ok)
        for (Eigen::Index i = 0; i < k; ++i) {
          const size_t j = static_cast<size_t>(act[static_cast<size_t>(i)]);
          un[static_cast<Eigen::Index>(j)] =
              std::clamp(u_[static_cast<Eigen::Index>(j)] + delta[i], coords_[j].lo, coords_[j].hi);
        }
      if (ok && (un - u_).cwiseAbs().maxCoeff() < opt_.step_tolerance) {
        stop(true, "step below tolerance");
        return false;
      }
      double cn = kInf;
      Eigen::VectorXd rn;
      if (ok) {
        rn = eval({un})[0];
        cn = cost_of(rn);
      }
      if (cn < cost_) {
        const double rel = (cost_ - cn) / cost_;
        u_ = un;
        r_ = rn;
        cost_ = cn;
        lambda = std::max(lambda / 3, kMinLambda);
        ++res_.iterations;
        if (opt_.on_iteration) opt_.on_iteration(res_.iterations, cost_);
        if (cost_ == 0) {
          stop(true, "exact fit (zero residuals)");
          return false;
        }
        if (rel < opt_.cost_tolerance) {
          stop(true, fmt::format("relative cost change {:.2g} below tolerance {:.2g}", rel,
                                 opt_.cost_tolerance));
          return false;
        }
        return true;
      }
      lambda *= 4;
      if (lambda > kMaxLambda) {
        stop(true, "no step lowers the cost (damping limit reached)");
        return false;
      }
    }
  }

  // Each parameter's value, influence, bound and identifiability.
  void report_parameters() {
    res_.values = natural(u_);
    res_.residuals = r_;
    res_.cost = cost_;
    res_.params.resize(n_);
    for (size_t j = 0; j < n_; ++j) {
      FitParameterReport& p = res_.params[j];
      p.name = params_[j].name;
      p.scale = coords_[j].scale;
      p.initial = params_[j].initial;
      p.value = res_.values[static_cast<Eigen::Index>(j)];
      p.min = params_[j].min;
      p.max = params_[j].max;
      p.influence = influence(j);
      p.identifiable = p.influence >= opt_.influence_tolerance;
      p.bound = at_lower(j) ? "min" : at_upper(j) ? "max" : "";
      if (p.identifiable) {
        ident_.push_back(j);
      } else {
        res_.unidentifiable.push_back(p.name);
        res_.diagnostics.push_back(fmt::format(
            "{} is unidentifiable: no residual moves when it moves (max |dr/dx| {:.2g} < {:.2g}); "
            "held at its initial value {}",
            p.name, p.influence, opt_.influence_tolerance, fmt_num(p.value)));
      }
    }
    for (const auto& name : failed_columns_)
      res_.diagnostics.push_back("the model failed to evaluate when " + name +
                                 " moved by the finite-difference step; that Jacobian column was "
                                 "taken as 0");
  }

  // Conditioning of the identifiable parameters (columns normalised to unit length): the
  // condition number, the combinations the data barely constrain, and standard errors.
  void report_conditioning() {
    const Eigen::Index k = static_cast<Eigen::Index>(ident_.size());
    if (k == 0) {
      res_.condition_number = kInf;
      res_.degenerate = true;
      res_.diagnostics.push_back("degenerate fit: no free parameter influences any residual");
      return;
    }
    Eigen::MatrixXd Jn(static_cast<Eigen::Index>(m_), k);
    Eigen::VectorXd cn(k);
    for (Eigen::Index i = 0; i < k; ++i) {
      Jn.col(i) = J_.col(static_cast<Eigen::Index>(ident_[static_cast<size_t>(i)]));
      cn[i] = Jn.col(i).norm();
      Jn.col(i) /= cn[i];
    }
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(Jn, Eigen::ComputeFullV);
    Eigen::VectorXd s = Eigen::VectorXd::Zero(k);
    s.head(svd.singularValues().size()) = svd.singularValues();
    const Eigen::MatrixXd& V = svd.matrixV();
    const double smax = s.maxCoeff();
    const double smin = s.minCoeff();
    res_.condition_number = smin > 0 ? smax / smin : kInf;
    if (static_cast<size_t>(k) > m_)
      res_.diagnostics.push_back(
          fmt::format("degenerate fit: {} identifiable parameters but only {} residuals", k, m_));
    if (res_.condition_number > opt_.condition_limit) report_tradeoffs(s, V);
    standard_errors(s, V, cn);
  }

  void report_tradeoffs(const Eigen::VectorXd& s, const Eigen::MatrixXd& V) {
    const Eigen::Index k = s.size();
    const double smax = s.maxCoeff();
    res_.degenerate = true;
    for (Eigen::Index d = 0; d < k; ++d) {
      if (!(s[d] == 0 || smax / s[d] > opt_.condition_limit)) continue;
      std::vector<Eigen::Index> order(static_cast<size_t>(k));
      std::iota(order.begin(), order.end(), Eigen::Index{0});
      std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
        return std::abs(V(a, d)) > std::abs(V(b, d));
      });
      std::string combo;
      std::vector<std::string> names;
      for (Eigen::Index i : order) {
        if (std::abs(V(i, d)) < 0.2) break;
        names.push_back(params_[ident_[static_cast<size_t>(i)]].name);
        combo += fmt::format("{}{:+.2f} {}", combo.empty() ? "" : " ", V(i, d), names.back());
      }
      res_.tradeoffs.push_back(names);
      res_.diagnostics.push_back(fmt::format(
          "degenerate fit: condition number {:.3g} > {:.3g}; the measurements barely constrain "
          "the combination [{}] (singular value {:.3g} of {:.3g}): these parameters trade off "
          "against each other",
          res_.condition_number, opt_.condition_limit, combo, s[d], smax));
    }
  }

  // cov(u) = s2 (J^T J)^-1 = diag(1/c) V diag(1/s^2) V^T diag(1/c) s2.
  void standard_errors(const Eigen::VectorXd& s, const Eigen::MatrixXd& V,
                       const Eigen::VectorXd& cn) {
    const Eigen::Index k = s.size();
    if (m_ <= static_cast<size_t>(k)) return;
    const double s2 = r_.squaredNorm() / static_cast<double>(m_ - static_cast<size_t>(k));
    for (Eigen::Index i = 0; i < k; ++i) {
      double var = 0;
      for (Eigen::Index d = 0; d < k; ++d) {
        const double v = V(i, d);
        if (std::abs(v) < 1e-12) continue;
        var += s[d] > 0 ? v * v / (s[d] * s[d]) : kInf;
      }
      const double se_u = std::sqrt(var * s2) / cn[i];
      FitParameterReport& p = res_.params[ident_[static_cast<size_t>(i)]];
      if (p.scale == FitScale::kLog)
        p.rel_std_error = std::isfinite(se_u) ? std::expm1(se_u) : kInf;
      else
        p.rel_std_error = p.value != 0
                              ? se_u * coords_[ident_[static_cast<size_t>(i)]].s / std::abs(p.value)
                              : kInf;
    }
  }

  void report_bounds_and_errors() {
    for (const auto& p : res_.params)
      if (p.identifiable && p.rel_std_error > 1)
        res_.diagnostics.push_back(fmt::format(
            "{} is poorly determined: approximate relative standard error {} (the measurements "
            "constrain it weakly)",
            p.name,
            std::isinf(p.rel_std_error) ? std::string("inf")
                                        : fmt::format("{:.3g}%", 100 * p.rel_std_error)));
    for (const auto& p : res_.params)
      if (!p.bound.empty() && p.identifiable)
        res_.diagnostics.push_back(fmt::format(
            "{} ended at its {} bound ({}): the data push it further, the bound sets it", p.name,
            p.bound, fmt_num(p.bound == "min" ? p.min : p.max)));
  }

  const std::vector<FitParameter>& params_;
  const BatchResidualFn& f_;
  const FitOptions& opt_;
  const size_t n_;
  std::vector<Coord> coords_;
  Eigen::VectorXd u_, u0_;  // internal coordinates now, and at the initial values
  size_t m_ = 0;            // residuals
  Eigen::VectorXd r_;
  double cost_ = 0;
  Eigen::MatrixXd J_;
  std::vector<size_t> all_;
  std::vector<bool> held_;
  std::vector<std::string> failed_columns_;
  std::vector<size_t> ident_;
  FitResult res_;
};

}  // namespace

FitResult levenberg_marquardt(const std::vector<FitParameter>& params, const BatchResidualFn& f,
                              const FitOptions& opt) {
  return LmFit(params, f, opt).run();
}

std::vector<double> average_ranks(const std::vector<double>& v, double tie_pct) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    const double limit = v[idx[i]] * (1 + tie_pct / 100);  // v[idx[i]] itself when tie_pct is 0
    while (j + 1 < idx.size() && v[idx[j + 1]] <= limit) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t t = i; t <= j; ++t) rank[idx[t]] = mean;
    i = j + 1;
  }
  return rank;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b, double tie_pct) {
  if (a.size() != b.size()) throw InternalError("spearman: sizes differ");
  if (a.size() < 2) return kNaN;
  const auto ra = average_ranks(a, tie_pct), rb = average_ranks(b, tie_pct);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return kNaN;
  return sab / std::sqrt(saa * sbb);
}

double mape_percent(const std::vector<double>& modeled, const std::vector<double>& measured) {
  if (modeled.size() != measured.size()) throw InternalError("mape: sizes differ");
  if (modeled.empty()) return kNaN;
  double sum = 0;
  for (size_t i = 0; i < modeled.size(); ++i) sum += std::abs(modeled[i] / measured[i] - 1);
  return 100 * sum / static_cast<double>(modeled.size());
}

}  // namespace tilesim
