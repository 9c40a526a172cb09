#pragma once
// Model-independent least squares: a bounded Levenberg-Marquardt fit over a residual function with
// a numeric (forward-difference) Jacobian, and the statistics `tilesim calibrate` reports (MAPE,
// Spearman rank correlation). Nothing here knows about tilesim's model; tests drive it with
// synthetic functions.
//
// Coordinates: a parameter whose lower bound is positive is fitted as log(value) (a step is a
// relative change); one whose lower bound is 0 is fitted as value / |initial| (linear, normalised).
// Bounds are enforced by clamping; a parameter sitting on a bound whose gradient points outward
// is held for that step (projected LM).
//
// Degeneracy is reported, never hidden:
//  - a parameter whose Jacobian column is ~0 (no residual moves when it moves) is unidentifiable:
//    it is held at its initial value and listed;
//  - a near-singular system (condition number of the column-normalised Jacobian of the
//    identifiable parameters above `condition_limit`, or fewer residuals than parameters) is a
//    degenerate fit, with the parameter combination the data cannot pin down;
//  - a parameter whose approximate relative standard error exceeds 100% is poorly determined.

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace tilesim {

struct FitParameter {
  std::string name;
  double initial = 0;
  double min = 0;  // bounds in natural units, min < max, min <= initial <= max
  double max = 0;
};

// Evaluates the residual vector at each of several parameter points (natural units, one entry per
// FitParameter). Batches let the caller evaluate in parallel; every vector must have the same
// length. A residual vector with a non-finite entry marks its point as failed (the model rejected
// the parameters): a trial step there is rejected, and the starting point must not fail.
using BatchResidualFn =
    std::function<std::vector<Eigen::VectorXd>(const std::vector<Eigen::VectorXd>& points)>;

// Adapts a point-wise residual function (evaluated serially).
BatchResidualFn batch_of(std::function<Eigen::VectorXd(const Eigen::VectorXd&)> f);

struct FitOptions {
  int max_iterations = 100;
  // Finite-difference step in internal coordinates: a relative change of fd_step for a
  // log-scaled parameter. Large enough to see through the piecewise (max()) parts of a model.
  double fd_step = 1e-3;
  double initial_lambda = 1e-3;
  double cost_tolerance = 1e-12;      // converged when an accepted step lowers the cost by less
                                      // than this fraction
  double step_tolerance = 1e-10;      // converged when the internal step's max norm is below this
  double influence_tolerance = 1e-6;  // a Jacobian column whose max |entry| is below this: the
                                      // parameter has no influence
  double condition_limit = 1e4;       // of the column-normalised Jacobian (J^T J: its square)
  // Called after each accepted step (iteration count, cost); for progress output.
  std::function<void(int, double)> on_iteration;
};

enum class FitScale { kLog, kLinear };

struct FitParameterReport {
  std::string name;
  FitScale scale = FitScale::kLog;
  double initial = 0, value = 0, min = 0, max = 0;
  bool identifiable = true;  // some residual moves when it moves
  double influence = 0;      // max |d residual / d internal coordinate| at the solution
  std::string bound;         // "min", "max", or "" when inside the bounds
  // Approximate relative standard error, sqrt(diag(s^2 (J^T J)^-1)) over the identifiable
  // parameters with s^2 = |r|^2 / (m - n); NaN when there are no spare residuals, +inf when the
  // system is singular along a direction involving it.
  double rel_std_error = std::numeric_limits<double>::quiet_NaN();
};

struct FitResult {
  std::vector<FitParameterReport> params;
  Eigen::VectorXd values;  // natural units
  Eigen::VectorXd initial_residuals, residuals;
  double initial_cost = 0, cost = 0;  // 0.5 * |r|^2
  int iterations = 0;
  int evaluations = 0;  // residual-vector evaluations (points)
  bool converged = false;
  std::string stop_reason;
  double condition_number = 0;  // column-normalised Jacobian of the identifiable parameters
  double condition_limit = 0;   // the options' limit it was judged by
  bool degenerate = false;
  std::vector<std::string> unidentifiable;  // parameter names
  // Degenerate directions: the parameters (largest share first) of each combination the
  // measurements barely constrain.
  std::vector<std::vector<std::string>> tradeoffs;
  std::vector<std::string> diagnostics;  // one sentence each: what is degenerate and why
};

// Throws std::invalid_argument on bad parameters (bounds, initial outside them) or when the
// residuals at the initial point are not finite.
FitResult levenberg_marquardt(const std::vector<FitParameter>& params, const BatchResidualFn& f,
                              const FitOptions& options = {});

// 1-based ranks, ties get the mean of their positions. With tie_pct > 0 (positive values), a tie
// group holds every value within tie_pct percent of the group's smallest, groups formed from the
// smallest up (tilesim validate counts times within 3% of each other as ties).
std::vector<double> average_ranks(const std::vector<double>& v, double tie_pct = 0);
// Spearman rank correlation (Pearson correlation of average ranks); NaN when fewer than two
// values or either side is constant (all one tie group).
double spearman(const std::vector<double>& a, const std::vector<double>& b, double tie_pct = 0);
// Mean absolute percentage error of modeled against measured, in percent.
double mape_percent(const std::vector<double>& modeled, const std::vector<double>& measured);

}  // namespace tilesim
