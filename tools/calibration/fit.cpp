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

FitResult levenberg_marquardt(const std::vector<FitParameter>& params, const BatchResidualFn& f,
                              const FitOptions& opt) {
  const size_t n = params.size();
  if (n == 0) throw std::invalid_argument("no free parameters to fit");
  std::vector<Coord> coords(n);
  Eigen::VectorXd u(n), u0(n);
  for (size_t j = 0; j < n; ++j) {
    const FitParameter& p = params[j];
    if (!(std::isfinite(p.min) && std::isfinite(p.max) && p.min < p.max))
      throw std::invalid_argument(p.name + ": bounds must be finite with min < max (got " +
                                  fmt_num(p.min) + ", " + fmt_num(p.max) + ")");
    if (!(p.initial >= p.min && p.initial <= p.max))
      throw std::invalid_argument(p.name + ": initial value " + fmt_num(p.initial) +
                                  " outside its bounds [" + fmt_num(p.min) + ", " + fmt_num(p.max) +
                                  "]");
    Coord& c = coords[j];
    if (p.min > 0) {
      c.scale = FitScale::kLog;
    } else {
      c.scale = FitScale::kLinear;
      c.s = p.initial != 0 ? std::abs(p.initial) : std::max(1e-12, (p.max - p.min) * 1e-6);
    }
    c.lo = c.to_internal(p.min);
    c.hi = c.to_internal(p.max);
    u0[j] = u[j] = c.to_internal(p.initial);
  }

  FitResult res;
  res.condition_limit = opt.condition_limit;
  auto natural = [&](const Eigen::VectorXd& v) {
    Eigen::VectorXd p(n);
    for (size_t j = 0; j < n; ++j)
      p[j] = v[j] == u0[j] ? params[j].initial
                           : std::clamp(coords[j].to_natural(v[j]), params[j].min, params[j].max);
    return p;
  };
  size_t m = 0;
  auto eval = [&](const std::vector<Eigen::VectorXd>& us) {
    std::vector<Eigen::VectorXd> pts;
    pts.reserve(us.size());
    for (const auto& v : us) pts.push_back(natural(v));
    std::vector<Eigen::VectorXd> rs = f(pts);
    if (rs.size() != us.size())
      throw InternalError("residual function returned the wrong number of vectors");
    for (const auto& r : rs)
      if (static_cast<size_t>(r.size()) != m)
        throw InternalError("residual function changed the residual count");
    res.evaluations += static_cast<int>(us.size());
    return rs;
  };

  {
    std::vector<Eigen::VectorXd> first = f({natural(u)});
    res.evaluations = 1;
    if (first.size() != 1) throw InternalError("residual function returned no vector");
    m = static_cast<size_t>(first[0].size());
    res.initial_residuals = first[0];
  }
  if (m == 0) throw std::invalid_argument("no residuals to fit");
  if (!all_finite(res.initial_residuals))
    throw std::invalid_argument("the residuals at the initial parameters are not finite");
  Eigen::VectorXd r = res.initial_residuals;
  double cost = cost_of(r);
  res.initial_cost = cost;

  std::vector<std::string> failed_columns;
  // Forward differences over `cols` (a column not listed stays 0); steps back when the forward
  // point would cross the upper bound.
  auto jacobian = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& r_at,
                      const std::vector<size_t>& cols) {
    Eigen::MatrixXd J =
        Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(n));
    std::vector<Eigen::VectorXd> pts;
    std::vector<double> hs;
    for (size_t j : cols) {
      double h = opt.fd_step;
      if (at[j] + h > coords[j].hi) h = -h;
      if (at[j] + h < coords[j].lo) h = (coords[j].hi - coords[j].lo) / 2;  // tiny box
      Eigen::VectorXd v = at;
      v[j] += h;
      pts.push_back(v);
      hs.push_back(h);
    }
    if (pts.empty()) return J;
    const auto rs = eval(pts);
    for (size_t k = 0; k < cols.size(); ++k) {
      if (!all_finite(rs[k])) {
        const std::string& name = params[cols[k]].name;
        if (std::find(failed_columns.begin(), failed_columns.end(), name) == failed_columns.end())
          failed_columns.push_back(name);
        continue;  // column stays 0: the model cannot be evaluated on that side
      }
      J.col(static_cast<Eigen::Index>(cols[k])) = (rs[k] - r_at) / hs[k];
    }
    return J;
  };
  auto influence = [&](const Eigen::MatrixXd& J, size_t j) {
    return m == 0 ? 0.0 : J.col(static_cast<Eigen::Index>(j)).cwiseAbs().maxCoeff();
  };
  auto at_lower = [&](const Eigen::VectorXd& v, size_t j) {
    return v[j] <= coords[j].lo + 1e-12 * (1 + std::abs(coords[j].lo));
  };
  auto at_upper = [&](const Eigen::VectorXd& v, size_t j) {
    return v[j] >= coords[j].hi - 1e-12 * (1 + std::abs(coords[j].hi));
  };

  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t{0});
  Eigen::MatrixXd J = jacobian(u, r, all);
  std::vector<bool> held(n);
  for (size_t j = 0; j < n; ++j) held[j] = influence(J, j) < opt.influence_tolerance;

  double lambda = opt.initial_lambda;
  bool done = false;
  int rechecks = 0;
  while (true) {
    bool need_jacobian = false;  // J is fresh on entry
    done = false;
    while (!done) {
      if (res.iterations >= opt.max_iterations) {
        res.converged = false;
        res.stop_reason = fmt::format("iteration limit ({}) reached", opt.max_iterations);
        break;
      }
      if (need_jacobian) {
        std::vector<size_t> cols;
        for (size_t j = 0; j < n; ++j)
          if (!held[j]) cols.push_back(j);
        J = jacobian(u, r, cols);
        need_jacobian = false;
      }
      const Eigen::VectorXd g = J.transpose() * r;
      std::vector<Eigen::Index> act;
      for (size_t j = 0; j < n; ++j) {
        if (held[j]) continue;
        if (at_lower(u, j) && g[static_cast<Eigen::Index>(j)] > 0) continue;
        if (at_upper(u, j) && g[static_cast<Eigen::Index>(j)] < 0) continue;
        act.push_back(static_cast<Eigen::Index>(j));
      }
      if (act.empty()) {
        res.converged = true;
        res.stop_reason = "every parameter is held (at a bound or without influence)";
        break;
      }
      const Eigen::Index k = static_cast<Eigen::Index>(act.size());
      Eigen::MatrixXd Ja(static_cast<Eigen::Index>(m), k);
      Eigen::VectorXd ga(k);
      for (Eigen::Index i = 0; i < k; ++i) {
        Ja.col(i) = J.col(act[static_cast<size_t>(i)]);
        ga[i] = g[act[static_cast<size_t>(i)]];
      }
      if (ga.cwiseAbs().maxCoeff() == 0) {
        res.converged = true;
        res.stop_reason = "gradient is zero";
        break;
      }
      const Eigen::MatrixXd A = Ja.transpose() * Ja;
      Eigen::VectorXd D = A.diagonal();
      const double dmax = std::max(D.maxCoeff(), 1e-300);
      for (Eigen::Index i = 0; i < k; ++i) D[i] = std::max(D[i], 1e-12 * dmax);
      while (true) {
        Eigen::MatrixXd M = A;
        M.diagonal() += lambda * D;
        const Eigen::VectorXd delta = M.ldlt().solve(-ga);
        Eigen::VectorXd un = u;
        bool ok = delta.allFinite();
        if (ok)
          for (Eigen::Index i = 0; i < k; ++i) {
            const size_t j = static_cast<size_t>(act[static_cast<size_t>(i)]);
            un[static_cast<Eigen::Index>(j)] =
                std::clamp(u[static_cast<Eigen::Index>(j)] + delta[i], coords[j].lo, coords[j].hi);
          }
        if (ok && (un - u).cwiseAbs().maxCoeff() < opt.step_tolerance) {
          res.converged = true;
          res.stop_reason = "step below tolerance";
          done = true;
          break;
        }
        double cn = kInf;
        Eigen::VectorXd rn;
        if (ok) {
          rn = eval({un})[0];
          cn = cost_of(rn);
        }
        if (cn < cost) {
          const double rel = (cost - cn) / cost;
          u = un;
          r = rn;
          cost = cn;
          lambda = std::max(lambda / 3, kMinLambda);
          ++res.iterations;
          need_jacobian = true;
          if (opt.on_iteration) opt.on_iteration(res.iterations, cost);
          if (cost == 0) {
            res.converged = true;
            res.stop_reason = "exact fit (zero residuals)";
            done = true;
          } else if (rel < opt.cost_tolerance) {
            res.converged = true;
            res.stop_reason = fmt::format("relative cost change {:.2g} below tolerance {:.2g}", rel,
                                          opt.cost_tolerance);
            done = true;
          }
          break;
        }
        lambda *= 4;
        if (lambda > kMaxLambda) {
          res.converged = true;
          res.stop_reason = "no step lowers the cost (damping limit reached)";
          done = true;
          break;
        }
      }
    }
    // Final Jacobian over every parameter: a held parameter that gained influence at the solution
    // rejoins the fit.
    J = jacobian(u, r, all);
    bool rejoined = false;
    for (size_t j = 0; j < n; ++j)
      if (held[j] && influence(J, j) >= opt.influence_tolerance) {
        held[j] = false;
        rejoined = true;
      }
    if (!rejoined || rechecks++ >= 3 || res.iterations >= opt.max_iterations) break;
    lambda = std::max(lambda, opt.initial_lambda);
  }

  res.values = natural(u);
  res.residuals = r;
  res.cost = cost;
  res.params.resize(n);
  std::vector<size_t> ident;
  for (size_t j = 0; j < n; ++j) {
    FitParameterReport& p = res.params[j];
    p.name = params[j].name;
    p.scale = coords[j].scale;
    p.initial = params[j].initial;
    p.value = res.values[static_cast<Eigen::Index>(j)];
    p.min = params[j].min;
    p.max = params[j].max;
    p.influence = influence(J, j);
    p.identifiable = p.influence >= opt.influence_tolerance;
    p.bound = at_lower(u, j) ? "min" : at_upper(u, j) ? "max" : "";
    if (p.identifiable) {
      ident.push_back(j);
    } else {
      res.unidentifiable.push_back(p.name);
      res.diagnostics.push_back(fmt::format(
          "{} is unidentifiable: no residual moves when it moves (max |dr/dx| {:.2g} < {:.2g}); "
          "held at its initial value {}",
          p.name, p.influence, opt.influence_tolerance, fmt_num(p.value)));
    }
  }
  for (const auto& name : failed_columns)
    res.diagnostics.push_back("the model failed to evaluate when " + name +
                              " moved by the finite-difference step; that Jacobian column was "
                              "taken as 0");

  // Conditioning of the identifiable parameters (columns normalised to unit length).
  const Eigen::Index k = static_cast<Eigen::Index>(ident.size());
  if (k > 0) {
    Eigen::MatrixXd Jn(static_cast<Eigen::Index>(m), k);
    Eigen::VectorXd cn(k);
    for (Eigen::Index i = 0; i < k; ++i) {
      Jn.col(i) = J.col(static_cast<Eigen::Index>(ident[static_cast<size_t>(i)]));
      cn[i] = Jn.col(i).norm();
      Jn.col(i) /= cn[i];
    }
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(Jn, Eigen::ComputeFullV);
    Eigen::VectorXd s = Eigen::VectorXd::Zero(k);
    s.head(svd.singularValues().size()) = svd.singularValues();
    const Eigen::MatrixXd& V = svd.matrixV();
    const double smax = s.maxCoeff();
    const double smin = s.minCoeff();
    res.condition_number = smin > 0 ? smax / smin : kInf;
    if (static_cast<size_t>(k) > m)
      res.diagnostics.push_back(
          fmt::format("degenerate fit: {} identifiable parameters but only {} residuals", k, m));
    if (res.condition_number > opt.condition_limit) {
      res.degenerate = true;
      for (Eigen::Index d = 0; d < k; ++d) {
        if (!(s[d] == 0 || smax / s[d] > opt.condition_limit)) continue;
        std::vector<Eigen::Index> order(static_cast<size_t>(k));
        std::iota(order.begin(), order.end(), Eigen::Index{0});
        std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
          return std::abs(V(a, d)) > std::abs(V(b, d));
        });
        std::string combo;
        std::vector<std::string> names;
        for (Eigen::Index i : order) {
          if (std::abs(V(i, d)) < 0.2) break;
          names.push_back(params[ident[static_cast<size_t>(i)]].name);
          combo += fmt::format("{}{:+.2f} {}", combo.empty() ? "" : " ", V(i, d), names.back());
        }
        res.tradeoffs.push_back(names);
        res.diagnostics.push_back(fmt::format(
            "degenerate fit: condition number {:.3g} > {:.3g}; the measurements barely constrain "
            "the combination [{}] (singular value {:.3g} of {:.3g}): these parameters trade off "
            "against each other",
            res.condition_number, opt.condition_limit, combo, s[d], smax));
      }
    }
    // Standard errors: cov(u) = s2 (J^T J)^-1 = diag(1/c) V diag(1/s^2) V^T diag(1/c) s2.
    if (m > static_cast<size_t>(k)) {
      const double s2 = r.squaredNorm() / static_cast<double>(m - static_cast<size_t>(k));
      for (Eigen::Index i = 0; i < k; ++i) {
        double var = 0;
        for (Eigen::Index d = 0; d < k; ++d) {
          const double v = V(i, d);
          if (std::abs(v) < 1e-12) continue;
          var += s[d] > 0 ? v * v / (s[d] * s[d]) : kInf;
        }
        const double se_u = std::sqrt(var * s2) / cn[i];
        FitParameterReport& p = res.params[ident[static_cast<size_t>(i)]];
        if (p.scale == FitScale::kLog)
          p.rel_std_error = std::isfinite(se_u) ? std::expm1(se_u) : kInf;
        else
          p.rel_std_error = p.value != 0
                                ? se_u * coords[ident[static_cast<size_t>(i)]].s / std::abs(p.value)
                                : kInf;
      }
    }
  } else {
    res.condition_number = kInf;
    res.degenerate = true;
    res.diagnostics.push_back("degenerate fit: no free parameter influences any residual");
  }
  for (const auto& p : res.params)
    if (p.identifiable && p.rel_std_error > 1)
      res.diagnostics.push_back(fmt::format(
          "{} is poorly determined: approximate relative standard error {} (the measurements "
          "constrain it weakly)",
          p.name,
          std::isinf(p.rel_std_error) ? std::string("inf")
                                      : fmt::format("{:.3g}%", 100 * p.rel_std_error)));
  for (const auto& p : res.params)
    if (!p.bound.empty() && p.identifiable)
      res.diagnostics.push_back(
          fmt::format("{} ended at its {} bound ({}): the data push it further, the bound sets it",
                      p.name, p.bound, fmt_num(p.bound == "min" ? p.min : p.max)));
  return res;
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
