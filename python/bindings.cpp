// tilesim._core: the C++ entry points the Python package (python/tilesim/) calls. Each mirrors a
// CLI command and calls the same tools/ library functions, so results and error texts are the
// CLI's. Results cross as the CLI's JSON text (the package parses it); a sweep stays a C++ object
// that renders its table, CSV, JSON and SVG with the CLI's writers. The GIL is released while
// C++ runs. A user error (tilesim::Error) is raised as tilesim.ConfigError with .key and .kind.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "model/printable.hpp"
#include "sim/chrome_trace.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/analyses/sweep_shard.hpp"
#include "tools/calibration/board_compare.hpp"
#include "tools/calibration/calibration_job.hpp"
#include "tools/calibration/profile_import.hpp"
#include "tools/calibration/validate.hpp"
#include "tools/calibration/validate_sensitivity.hpp"
#include "tools/formats/option_values.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/formats/version.hpp"
#include "tools/reports/board_compare_report.hpp"
#include "tools/reports/report.hpp"
#include "tools/reports/rule_chapters.hpp"
#include "tools/reports/rules_lang.hpp"
#include "tools/reports/rules_report.hpp"
#include "tools/reports/sweep_report.hpp"
#include "tools/reports/timeline_report.hpp"
#include "tools/reports/validate_report.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace tilesim {
namespace {

// Runs `f` without the GIL: other Python threads (and Dask's) go on while C++ works.
template <class F>
auto nogil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

std::string dump(const json& j) {
  return with_version(j).dump();
}

// JSON text from Python; `origin` names it in the one-line error.
json parse_text(const std::string& text, const std::string& origin, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(origin + ": not " + what + " (" + e.what() + ")");
  }
}

// A config given as a file path (read as the CLI reads it) or as JSON text from a dict.
json config_doc(const std::string& source, bool is_file, const std::string& what) {
  return is_file ? read_json_file(source, what) : parse_text(source, "<dict>", "JSON");
}

std::string origin_of(const std::string& source, bool is_file) {
  return is_file ? source : "<dict>";
}

std::string chrome_trace(const TaskGraph& g, const SimResult& sim, const Hardware& hw) {
  std::ostringstream out;
  write_chrome_trace(out, g, sim, hw);
  return out.str();
}

// tilesim run: the --json result and the Chrome trace (--trace) of one candidate.
std::pair<std::string, std::string> run(const std::string& source, bool is_file,
                                        const std::vector<int64_t>& tile, int64_t loop,
                                        const std::string& hardware,
                                        const std::vector<std::string>& settings) {
  return nogil([&] {
    const std::string origin = origin_of(source, is_file);
    RunConfig rc = run_config_from_json(config_doc(source, is_file, "run config"), origin);
    KernelSpec spec =
        run_spec(rc, Dims(tile.begin(), tile.end()), "give it in the config or with tile=");
    if (loop > 0) override_loop_count(spec, loop, "loop=");
    if (!hardware.empty()) rc.hardware = resolve_hardware_arg(hardware);
    const Hardware hw = load_hardware(rc.hardware, settings);
    // The trace is always returned, so it carries the AICPU spans `tilesim run --trace` writes.
    rc.options.record_aicpu = true;
    const RunOutcome r = run_config_kernel(origin, spec, hw, rc.options);
    return std::pair{dump(run_json(spec, hw, r.kernel.diag, r.metrics, rc.measured)),
                     chrome_trace(r.kernel.graph, r.sim, hw)};
  });
}

// A ranked sweep with the CLI's writers.
struct SweepOutcome {
  SweepJob job;
  SweepResult result;
  // As `tilesim sweep --json` writes it.
  std::string json_text() const {
    return with_version(sweep_json(job.cfg, job.hw, result)).dump(2) + "\n";
  }
  std::string csv() const { return sweep_csv(job.cfg, job.hw, result); }
  std::string svg() const { return sweep_svg(job.cfg, job.hw, result); }
  std::string svg_map() const { return sweep_heat_map_svg(job.cfg, job.hw, result); }
  // What `--svg` ("curve") or `--svg-map` ("map") draws, as JSON: SweepResult.plot() draws the
  // same data with matplotlib.
  std::string plot_data(const std::string& kind) const {
    if (kind == "map") return heat_map_json(sweep_heat_map(job.cfg, job.hw, result)).dump();
    return plot_json(sweep_plot(job.cfg, job.hw, result)).dump();
  }
  std::string table(size_t top, bool wide) const {
    return sweep_table(job.cfg, job.hw, result, top, wide);
  }
};

// `objective` (not empty) replaces the config's, as `tilesim sweep --objective` does.
SweepJob make_job(const std::string& source, bool is_file, const std::string& hardware,
                  const std::string& objective, const std::vector<std::string>& settings) {
  return nogil([&] {
    nlohmann::json doc = config_doc(source, is_file, "sweep config");
    if (!objective.empty() && doc.is_object()) doc["objective"] = objective;
    return sweep_job(doc, origin_of(source, is_file), hardware, settings);
  });
}

// Sweeps cancelled while a candidate was still unwinding (freeing a large task graph after it
// stopped): Ctrl-C returns at once and they end in the background; the interpreter's exit waits for
// them (join_cancelled_sweeps, registered with atexit). Never destroyed: it outlives the statics.
struct CancelledSweeps {
  std::mutex m;
  std::vector<std::thread> threads;
};
CancelledSweeps& cancelled_sweeps() {
  static auto* c = new CancelledSweeps;
  return *c;
}
void join_cancelled_sweeps() {
  std::vector<std::thread> threads;
  {
    const std::lock_guard<std::mutex> lock(cancelled_sweeps().m);
    threads.swap(cancelled_sweeps().threads);
  }
  py::gil_scoped_release release;
  for (std::thread& t : threads) t.join();
}

// The sweep runs on a thread of its own while this one, holding the GIL a moment every 20 ms,
// takes Ctrl-C (KeyboardInterrupt), reports progress(done, total) every 100 ms, and takes an
// exception from the callback as a cancel: the workers stop their running candidates
// (model/stop.hpp) and start no other. The sweep's state is the thread's own (a copy of the
// job), so a cancel need not wait for the stopped candidates to be freed.
SweepOutcome sweep_local(const SweepJob& job, int threads, const py::object& progress) {
  struct State {
    SweepJob job;
    SweepOptions opt;
    std::atomic<int64_t> done{0};
    std::atomic<bool> cancel{false};
    std::promise<SweepResult> result;
  };
  auto st = std::make_shared<State>();
  st->job = job;
  st->opt.threads = threads;
  st->opt.progress = &st->done;
  st->opt.cancel = &st->cancel;
  const auto total = static_cast<int64_t>(job.candidates.size());
  std::future<SweepResult> result = st->result.get_future();
  std::thread worker([st] {
    try {
      st->result.set_value(run_sweep(st->job.cfg, st->job.hw, st->opt, st->job.candidates));
    } catch (...) {
      st->result.set_exception(std::current_exception());
    }
  });
  const auto stop = [&] {
    st->cancel = true;
    py::gil_scoped_release release;
    // The running candidates throw at their next check; most end within this grace.
    if (result.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) {
      worker.join();
      return;
    }
    const std::lock_guard<std::mutex> lock(cancelled_sweeps().m);
    cancelled_sweeps().threads.push_back(std::move(worker));
  };
  int64_t reported = -1;
  for (int tick = 0, ready = 0; !ready; ++tick) {
    {
      py::gil_scoped_release release;
      ready = result.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready;
    }
    if (PyErr_CheckSignals() != 0) {
      stop();
      throw py::error_already_set();
    }
    if (const int64_t d = st->done.load();
        !progress.is_none() && d != reported && (ready || tick % 5 == 0)) {
      reported = d;
      try {
        progress(d, total);
      } catch (...) {
        stop();
        throw;
      }
    }
  }
  worker.join();
  return SweepOutcome{job, result.get()};
}

// Shard k of n as shard-file text (what `tilesim sweep --shard k/n -o f` writes).
std::string shard_text(const SweepJob& job, int64_t k, int64_t n, int threads) {
  return nogil([&] {
    SweepOptions opt;
    opt.threads = threads;
    const ShardSpec spec = parse_shard(std::to_string(k) + "/" + std::to_string(n), "shard");
    return shard_to_json(run_shard(job, spec, opt)).dump() + "\n";
  });
}

// The same shard as bytes (sweep_shard.hpp shard_to_bytes): what a Dask chunk hands back.
py::bytes shard_bytes(const SweepJob& job, int64_t k, int64_t n, int threads) {
  py::bytes bytes;
  nogil([&] {
    SweepOptions opt;
    opt.threads = threads;
    const ShardSpec spec = parse_shard(std::to_string(k) + "/" + std::to_string(n), "shard");
    shard_to_bytes(run_shard(job, spec, opt), [&](size_t size) {
      const py::gil_scoped_acquire gil;
      // An uninitialised bytes object of the size: written in place, without the GIL.
      bytes = py::reinterpret_steal<py::bytes>(
          PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size)));
      if (!bytes) throw py::error_already_set();
      return std::span<char>(PyBytes_AS_STRING(bytes.ptr()), size);
    });
  });
  return bytes;
}

// A shard-file text, or a binary shard (shard_bytes) in its place, named by `origin` (its file).
SweepShard shard_of_text(const std::string& text, const std::string& origin) {
  return is_shard_bytes(text) ? shard_from_bytes(text, origin)
                              : shard_from_json(parse_text(text, origin, "a shard file"), origin);
}

// One shard read ahead of its merge (merge_read): a Dask client reads each chunk as it arrives,
// while the workers finish the rest.
std::shared_ptr<SweepShard> read_shard(const std::string& text, const std::string& origin) {
  return nogil([&] { return std::make_shared<SweepShard>(shard_of_text(text, origin)); });
}

SweepOutcome merge_shards_once(std::vector<SweepShard> shards) {
  MergedSweep m = merge_shards(std::move(shards));
  return SweepOutcome{std::move(m.job), std::move(m.result)};
}

// Shards read_shard gave, merged; each is taken (merged once).
SweepOutcome merge_read(const std::vector<std::shared_ptr<SweepShard>>& read) {
  return nogil([&] {
    std::vector<SweepShard> shards;
    for (const auto& s : read) {
      if (!s || s->hash.empty())
        throw Error("merge: a shard given twice, or already merged (read_shard gives each once)");
      shards.push_back(std::move(*s));
      *s = SweepShard{};
    }
    return merge_shards_once(std::move(shards));
  });
}

// `tilesim merge`: shard-file texts named by `origins` (their files, for errors), or binary shards
// (shard_bytes) in their place.
SweepOutcome merge(const std::vector<std::string>& texts, const std::vector<std::string>& origins) {
  return nogil([&] {
    if (texts.size() != origins.size())
      throw Error(fmt::format("merge: {} shard texts but {} origins (one origin names each text)",
                              texts.size(), origins.size()));
    return merge_shards_once(
        read_shards(texts.size(), [&](size_t i) { return shard_of_text(texts[i], origins[i]); }));
  });
}

// The rules' JSON and, when `chapters` is set, rules 4 and 5 as Markdown chapters.
std::pair<std::string, std::string> rules(const std::vector<std::string>& hardware,
                                          const std::vector<std::string>& only, int threads,
                                          const std::vector<std::string>& settings,
                                          const std::string& lang, bool chapters) {
  return nogil([&] {
    check_rules_lang(lang);
    std::vector<RulesResult> r = check_rules_on(hardware, {threads, only}, settings);
    localize_rules(r, lang);
    return std::pair{dump(rules_json(r)),
                     chapters ? rule_chapters(r.front(), lang) : std::string()};
  });
}

std::pair<std::string, std::string> calibrate_py(const std::string& measurements,
                                                 const std::string& hardware,
                                                 const std::vector<std::string>& free, int threads,
                                                 int max_iter, double fd_step, int digits,
                                                 bool fresh_lowering, bool allow_degenerate) {
  return nogil([&] {
    CalibrationJob job;
    job.measurements = measurements;
    job.hardware = hardware;
    job.free = free;
    job.options.threads = threads;
    job.options.digits = digits;
    job.options.reuse_lowering = !fresh_lowering;
    if (max_iter > 0) job.options.fit.max_iterations = max_iter;
    if (fd_step > 0) job.options.fit.fd_step = fd_step;
    const CalibrationOutcome out = run_calibration(job);
    // A degenerate fit has no hardware file (the CLI's exit 1): the refusal stands in its place.
    const std::string refusal = allow_degenerate ? "" : degenerate_fit_refusal(out.result);
    json j = calibration_to_json(out.result);
    if (!refusal.empty()) j["refused"] = refusal;
    return std::pair{dump(j), refusal.empty() ? out.calibrated_hardware.dump(2) + "\n" : ""};
  });
}

std::pair<std::string, bool> validate_py(const std::vector<std::string>& files,
                                         const std::string& hardware, int threads, bool sensitivity,
                                         const std::string& keys, double step,
                                         const std::vector<std::string>& settings) {
  return nogil([&] {
    const std::vector<std::string> params =
        sensitivity ? sensitivity_keys(keys) : std::vector<std::string>{};
    const ValidationResult res = validate_files(files, hardware, threads, settings);
    nlohmann::json doc = validate_json(res);
    if (sensitivity)
      doc["sensitivity"] =
          sensitivity_json(res, validation_sensitivity(res, params, step, threads), step);
    return std::pair{dump(doc), res.within()};
  });
}

std::pair<std::string, std::string> replay(const std::string& graph, const std::string& hardware,
                                           const std::vector<std::string>& settings) {
  return nogil([&] {
    const Hardware hw = load_hardware(
        hardware.empty() ? default_hardware_path() : resolve_hardware_arg(hardware), settings);
    const PyptoGraph pg = load_pypto_graph(graph);
    const SimResult sim = simulate_costed(pg.graph, pg.kind_costs, hw, {});
    const Metrics m = compute_metrics(pg.graph, sim, hw);
    return std::pair{dump(replay_json(pg, m, simulated_core_names(sim), graph, hw.name)),
                     chrome_trace(pg.graph, sim, hw)};
  });
}

std::string analyze(const std::string& trace, const std::string& graph,
                    const std::string& time_unit, const std::string& hardware) {
  return nogil([&] {
    std::optional<PyptoGraph> g;
    if (!graph.empty()) g = load_pypto_graph(graph);
    const SwimlaneTrace t = load_swimlane(trace, trace_units_per_us(time_unit, hardware));
    SwimlaneAnalysis an = analyze_swimlane(t, g ? &*g : nullptr);
    if (g) an.warnings.insert(an.warnings.begin(), g->warnings.begin(), g->warnings.end());
    return dump(analyze_json(an, t, trace, graph));
  });
}

// analyze PROFILE --compare CONFIG: the JSON and the swimlane analysis's warnings.
std::pair<std::string, std::vector<std::string>> compare(
    const std::string& profile, const std::string& config, const std::string& hardware,
    const std::vector<std::string>& settings, const std::string& time_unit,
    const std::string& graph, const std::string& op_name, const std::vector<std::string>& match,
    int64_t skip_first) {
  return nogil([&] {
    const CompareOutcome out = compare_profile({profile, config, hardware, settings,
                                                trace_units_per_us(time_unit, hardware), graph,
                                                op_name, match, skip_first});
    return std::pair{dump(board_comparison_json(out, config)), out.warnings};
  });
}

// measurements from-msprof / from-swimlane: the file's JSON (for `output`, which places its
// relative paths), the summary the CLI prints, the warnings.
struct Imported {
  std::string json, summary;
  std::vector<std::string> warnings;
};
Imported imported(ProfileImport in, const std::string& as_, const std::vector<std::string>& metrics,
                  const std::string& output) {
  const json j = imported_file_json(in.measurements, as_, metrics, output);
  Imported out{j.dump(2) + "\n", board_measurements_summary(in.measurements), in.warnings};
  for (const auto& u : in.measurements.unmapped)
    out.warnings.push_back(
        fmt::format("{}: {} row(s) from line {} (Op Name '{}') match no kernel "
                    "of the mapping and are not measurements",
                    u.file, u.rows, u.first_line, u.op_name));
  return out;
}

// A file the Python API writes, by the rules of every output the CLI writes (output_file.hpp):
// atomic, through links, never over `inputs` (named by `argument`) nor a file this process read.
void check_output(const std::string& path, const std::string& argument,
                  const std::vector<std::string>& inputs) {
  for (const auto& input : inputs) check_not_an_input(path, argument, input);
}

void write_output(const std::string& path, const std::string& text, const std::string& what,
                  const std::string& argument, const std::vector<std::string>& inputs) {
  check_output(path, argument, inputs);
  write_file_atomically(
      path, [&](std::ostream& out) { out << text; }, what);
}

}  // namespace
}  // namespace tilesim

PYBIND11_MODULE(_core, m) {
  using namespace tilesim;
  m.doc() = "tilesim's C++ core (use the tilesim package, not this module)";
  m.attr("__version__") = tilesim_version();
  py::module_::import("atexit").attr("register")(py::cpp_function(&join_cancelled_sweeps));

  static py::exception<Error> config_error(m, "ConfigError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // The message the CLI prints: names from the input escaped (model/printable.hpp), one line.
      py::object err = py::handle(config_error.ptr())(printable(e.what()));
      err.attr("key") = e.key().empty() ? py::object(py::none()) : py::object(py::str(e.key()));
      err.attr("kind") = std::string(error_kind_name(e.kind()));
      PyErr_SetObject(config_error.ptr(), err.ptr());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError,
                      ("tilesim internal error: " + printable(e.what())).c_str());
    }
  });

  py::class_<SweepJob>(m, "SweepJob")
      .def_property_readonly("doc", [](const SweepJob& j) { return j.doc.dump(); })
      .def_property_readonly("hash", [](const SweepJob& j) { return j.hash; })
      .def_property_readonly("candidates", [](const SweepJob& j) { return j.candidates.size(); });
  py::class_<SweepOutcome>(m, "SweepOutcome")
      .def("json", &SweepOutcome::json_text, py::call_guard<py::gil_scoped_release>())
      .def("csv", &SweepOutcome::csv, py::call_guard<py::gil_scoped_release>())
      .def("svg", &SweepOutcome::svg, py::call_guard<py::gil_scoped_release>())
      .def("svg_map", &SweepOutcome::svg_map, py::call_guard<py::gil_scoped_release>())
      .def("plot_data", &SweepOutcome::plot_data, py::arg("kind"),
           py::call_guard<py::gil_scoped_release>())
      .def("table", &SweepOutcome::table, py::arg("top"), py::arg("wide"),
           py::call_guard<py::gil_scoped_release>());

  m.def("check_output", &check_output, py::arg("path"), py::arg("argument"), py::arg("inputs"));
  m.def("write_output", &write_output, py::arg("path"), py::arg("text"), py::arg("what"),
        py::arg("argument"), py::arg("inputs"), py::call_guard<py::gil_scoped_release>());
  m.def("run", &run, py::arg("source"), py::arg("is_file"), py::arg("tile"), py::arg("loop"),
        py::arg("hardware"), py::arg("settings"));
  m.def("sweep_job", &make_job, py::arg("source"), py::arg("is_file"), py::arg("hardware"),
        py::arg("objective") = "", py::arg("settings") = std::vector<std::string>{});
  m.def(
      "job_from_doc",
      [](const std::string& doc) {
        return nogil([&] {
          return sweep_job_from_doc(parse_text(doc, "<job>", "a job document"), "<job>");
        });
      },
      py::arg("doc"));
  m.def("sweep", &sweep_local, py::arg("job"), py::arg("threads"),
        py::arg("progress") = py::none());
  m.def("shard", &shard_text, py::arg("job"), py::arg("k"), py::arg("n"), py::arg("threads"));
  m.def("shard_bytes", &shard_bytes, py::arg("job"), py::arg("k"), py::arg("n"),
        py::arg("threads"));
  m.def("merge", &merge, py::arg("texts"), py::arg("origins"));
  py::class_<SweepShard, std::shared_ptr<SweepShard>>(
      m, "Shard", "A shard read ahead of its merge (read_shard; merge_read takes it once).");
  m.def("read_shard", &read_shard, py::arg("text"), py::arg("origin"));
  m.def("merge_read", &merge_read, py::arg("shards"));
  // The CLI's option checks (tools/formats/option_values.hpp): "" or what is wrong with `text`.
  m.def("integer_option_error", &integer_option_error, py::arg("text"), py::arg("min"),
        py::arg("max") = std::numeric_limits<int64_t>::max());
  m.def("number_option_error", &number_option_error, py::arg("text"), py::arg("above"),
        py::arg("at_most") = std::numeric_limits<double>::infinity());
  m.def("rules", &rules, py::arg("hardware"), py::arg("only"), py::arg("threads"),
        py::arg("settings"), py::arg("lang"), py::arg("chapters"));
  m.def("calibrate", &calibrate_py, py::arg("measurements"), py::arg("hardware"), py::arg("free"),
        py::arg("threads"), py::arg("max_iter"), py::arg("fd_step"), py::arg("digits"),
        py::arg("fresh_lowering"), py::arg("allow_degenerate"));
  m.def("validate", &validate_py, py::arg("files"), py::arg("hardware"), py::arg("threads"),
        py::arg("sensitivity"), py::arg("sensitivity_keys"), py::arg("sensitivity_step"),
        py::arg("settings"));
  m.def("replay", &replay, py::arg("graph"), py::arg("hardware"), py::arg("settings"));
  m.def("compare", &compare, py::arg("profile"), py::arg("config"), py::arg("hardware"),
        py::arg("settings"), py::arg("time_unit"), py::arg("graph"), py::arg("op_name"),
        py::arg("match"), py::arg("skip_first"));
  py::class_<Imported>(m, "Imported")
      .def_readonly("json", &Imported::json)
      .def_readonly("summary", &Imported::summary)
      .def_readonly("warnings", &Imported::warnings);
  // Board profiles in through the readers' registry (tools/calibration/profile_import.hpp): the
  // readers' names, and one reader run by name on its inputs (option name -> values).
  m.def("profile_readers", [] {
    std::vector<std::string> names;
    for (const auto& r : profile_readers()) names.push_back(r.name);
    return names;
  });
  m.def(
      "measurements_from",
      [](const std::string& reader, const std::map<std::string, std::vector<std::string>>& inputs,
         const std::string& as_, const std::vector<std::string>& metrics,
         const std::string& output) {
        return nogil(
            [&] { return imported(import_profile(reader, {inputs}), as_, metrics, output); });
      },
      py::arg("reader"), py::arg("inputs"), py::arg("as_"), py::arg("metrics"), py::arg("output"));
  m.def("analyze", &analyze, py::arg("trace"), py::arg("graph"), py::arg("time_unit"),
        py::arg("hardware"));
}
