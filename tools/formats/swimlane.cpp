#include "tools/formats/swimlane.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "model/printable.hpp"
#include "sim/timeline_metrics.hpp"
#include "tools/formats/json_stream.hpp"

namespace tilesim {

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

const char* phase_reason(const std::string& ph) {
  if (ph == "s" || ph == "t" || ph == "f") return "flow events (ph s/t/f)";
  if (ph == "C") return "counter events (ph C)";
  if (ph == "i" || ph == "I") return "instant events (ph i)";
  if (ph == "B" || ph == "E") return "begin/end events (ph B/E)";
  if (ph == "b" || ph == "e" || ph == "n") return "async events (ph b/e/n)";
  return nullptr;
}

// A PyPTO task name "seq-func-op-rootIndex-psgId(label)": the packed id and the "psgId(label)"
// part. Returns false when the name does not have that shape.
struct ParsedName {
  bool has_id = false;
  int64_t id = 0;
  std::string psg;
};

ParsedName parse_task_name(const std::string& name) {
  ParsedName out;
  size_t pos = 0;
  auto number = [&](bool allow_sign, int64_t& v) {
    const size_t begin = pos;
    bool neg = false;
    if (allow_sign && pos < name.size() && name[pos] == '-') {
      neg = true;
      ++pos;
    }
    const size_t digits = pos;
    v = 0;
    while (pos < name.size() && std::isdigit(static_cast<unsigned char>(name[pos])) &&
           pos - digits < 12)
      v = v * 10 + (name[pos++] - '0');
    if (pos == digits ||
        (pos < name.size() && std::isdigit(static_cast<unsigned char>(name[pos])))) {
      pos = begin;
      return false;
    }
    if (neg) v = -v;
    return true;
  };
  auto dash = [&]() {
    if (pos < name.size() && name[pos] == '-') {
      ++pos;
      return true;
    }
    return false;
  };
  int64_t seq = 0, func = 0, op = 0, root = 0;
  if (!number(false, seq) || !dash() || !number(false, func) || !dash() || !number(false, op) ||
      !dash() || !number(true, root) || !dash())
    return out;
  if (func >= 1024 || op >= 65536 || seq >= (int64_t{1} << 31) || pos >= name.size()) return out;
  out.has_id = true;
  out.id = (seq << 32) | (func << 16) | op;
  out.psg = name.substr(pos);
  return out;
}

enum class LaneClass { kCore, kAicpu, kFake };

namespace od = simdjson::ondemand;

// A decimal literal's significant digits (no leading or trailing zeros) and the place of its point
// after the first of them: "1784177144515043.8" and "1.7841771445150438e+18" alike.
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t point = 0;
  bool ok = true;  // false: an exponent beyond 64 bits
  bool operator==(const Decimal&) const = default;
};

Decimal decimal_of(std::string_view t) {
  Decimal d;
  size_t pos = 0;
  d.negative = pos < t.size() && t[pos] == '-';
  if (d.negative) ++pos;
  int64_t point = -1;
  for (; pos < t.size() && (std::isdigit(static_cast<unsigned char>(t[pos])) || t[pos] == '.');
       ++pos) {
    if (t[pos] == '.')
      point = static_cast<int64_t>(d.digits.size());
    else
      d.digits += t[pos];
  }
  if (point < 0) point = static_cast<int64_t>(d.digits.size());
  if (pos < t.size() && (t[pos] == 'e' || t[pos] == 'E')) {
    int64_t exponent = 0;
    const size_t from = pos + 1 + (pos + 1 < t.size() && t[pos + 1] == '+');
    const auto [end, ec] = std::from_chars(t.data() + from, t.data() + t.size(), exponent);
    d.ok = ec == std::errc() && end == t.data() + t.size() &&
           !__builtin_add_overflow(point, exponent, &point);
  }
  const size_t lead = std::min(d.digits.find_first_not_of('0'), d.digits.size());
  d.digits.erase(0, lead);
  point -= static_cast<int64_t>(lead);
  d.digits.erase(d.digits.find_last_not_of('0') + 1);
  d.point = d.digits.empty() ? 0 : point;
  return d;
}

// A timestamp as its literal states it: msprof's are epoch-sized (~1.8e15 us, ~1.8e18 ns), where
// a double's step is 0.25 us or 256 ns, so the whole units stay an integer and only the fraction
// is a double. Times are taken relative to the trace's first task before any arithmetic, so a
// shift of every timestamp changes no figure.
struct TraceTime {
  int64_t whole = 0;
  double frac = 0;  // same sign as whole, |frac| < 1
};

// The literal's whole units and fraction; false when it is not a number or its whole part is
// beyond 64 bits.
bool trace_time_of(const JsonScalar& v, TraceTime& out) {
  if (v.type == JsonScalar::Type::kInt) {
    out = {v.i, 0};
    return true;
  }
  if (v.type != JsonScalar::Type::kDouble && v.type != JsonScalar::Type::kUint) return false;
  const Decimal d = decimal_of(v.text);
  if (!d.ok) return false;
  const size_t cut =
      static_cast<size_t>(std::clamp<int64_t>(d.point, 0, static_cast<int64_t>(d.digits.size())));
  int64_t whole = 0;
  for (int64_t i = 0; i < d.point; ++i) {
    const int digit = i < static_cast<int64_t>(cut) ? d.digits[static_cast<size_t>(i)] - '0' : 0;
    if (__builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, digit, &whole))
      return false;  // beyond 64 bits
  }
  // The fraction's digits, with the zeros a negative point puts before them (past a double's
  // least, the fraction is 0).
  constexpr int64_t kMaxZeros = 400;
  std::string fraction =
      "0." + std::string(static_cast<size_t>(std::clamp<int64_t>(-d.point, 0, kMaxZeros)), '0') +
      d.digits.substr(cut);
  double frac = 0;
  std::from_chars(fraction.data(), fraction.data() + fraction.size(), frac);
  out = {d.negative ? -whole : whole, d.negative ? -frac : frac};
  return true;
}

// Whether the literal `text` of the double `d` is what a double's writer prints (its shortest
// round-trip form) for a value the literal does not state exactly: the time went through a
// 64-bit float, which at an epoch's magnitude loses the digits below its step.
bool went_through_a_double(std::string_view text, double d) {
  std::array<char, 64> shortest{};
  // The shortest digits that read back as d (scientific: fixed form would print a large
  // integer's every digit).
  const auto s = std::to_chars(shortest.data(), shortest.data() + shortest.size(), d,
                               std::chars_format::scientific);
  if (s.ec != std::errc() ||
      decimal_of(std::string_view(shortest.data(), s.ptr)) != decimal_of(text))
    return false;
  constexpr int kExactDigits = 64;  // past a coarse double's last fraction bit
  std::array<char, 512> exact{};
  const auto e = std::to_chars(exact.data(), exact.data() + exact.size(), d,
                               std::chars_format::fixed, kExactDigits);
  return e.ec == std::errc() &&
         decimal_of(std::string_view(exact.data(), e.ptr)) != decimal_of(text);
}

// What the reader uses of one event, read with simdjson (the rest of the event is checked for
// depth and repeated keys, then ignored).
struct RawEvent {
  bool has_ph = false;
  std::string ph, name, cat;
  std::string pid = "-", tid = "-";  // "-" when absent; a string's text, else the JSON literal
  std::string meta_name;             // args.name
  std::string psg;                   // args.psg
  bool ts_ok = false, dur_ok = false;
  std::string ts_out_of_range;  // a numeric ts whose whole part is beyond 64 bits, as written
  TraceTime ts;
  std::string ts_rounded;  // a ts literal a double's writer printed (went_through_a_double)
  double ts_value = 0;
  double dur = 0;
  bool has_task_id = false;
  int64_t task_id = 0;
  bool has_seq = false;
  int64_t seq = 0;
};

// A string member's text, or "" when it is not a string.
std::string string_of(const JsonScalar& v) {
  return v.type == JsonScalar::Type::kString ? std::string(v.text) : std::string();
}

// A pid or tid as text: a string's text, a number's literal, a composite's type.
std::string id_of(const JsonScalar& v) {
  switch (v.type) {
    case JsonScalar::Type::kString:
      return std::string(v.text);
    case JsonScalar::Type::kArray:
    case JsonScalar::Type::kObject:
      return std::string("<") + JsonScalar::type_name(v.type) + ">";
    case JsonScalar::Type::kNull:
      return "null";
    case JsonScalar::Type::kBool:
      return v.b ? "true" : "false";
    default:
      return std::string(v.text);
  }
}

// A finite time.
bool time_of(const JsonScalar& v, double& out) {
  if (!v.is_number() || !std::isfinite(v.number())) return false;
  out = v.number();
  return true;
}

void read_args(const JsonStream& stream, size_t index, od::value args, RawEvent& e) {
  stream.for_each_member(args, [&](std::string_view key, od::value v) {
    const JsonScalar x = stream.leaf(v, 4);
    if (key == "name") e.meta_name = string_of(x);
    if (key == "psg") e.psg = string_of(x);
    // PyPTO ids are 64-bit: a larger unsigned value is no id rather than a wrapped one. A
    // fractional id is no id at all: refused, as replay refuses it.
    const auto fail = [&](const std::string& what) {
      JsonPlace(stream.origin(), fmt::format("event {}: args.{}", index, key)).fail(what);
    };
    const auto literal = [&] {
      return x.text.empty() ? fmt::format("{}", x.number()) : std::string(x.text);
    };
    const bool fractional = x.type == JsonScalar::Type::kDouble;
    if ((key == "taskId" || key == "seqNo") && fractional)
      fail(fmt::format("expected an integer, got {}", literal()));
    if (key == "seqNo" && x.type == JsonScalar::Type::kUint)
      fail(fmt::format("{} does not fit the task id's upper 32 bits (0 to 2147483647)", x.u));
    if (key == "taskId" && x.is_int()) {
      e.has_task_id = true;
      e.task_id = x.i;
    }
    if (key == "seqNo" && x.is_int()) {
      // seqNo is the id's upper 32 bits (seqNo << 32 | taskId): a larger one would wrap.
      if (x.i < 0 || x.i >= (int64_t{1} << 31))
        fail(fmt::format("{} does not fit the task id's upper 32 bits (0 to 2147483647)", x.i));
      e.has_seq = true;
      e.seq = x.i;
    }
  });
}

RawEvent read_event(const JsonStream& stream, size_t index, od::value v) {
  const JsonScalar top = JsonStream::scalar(v);
  if (top.type != JsonScalar::Type::kObject)
    JsonPlace(stream.origin(), fmt::format("event {}", index))
        .fail(std::string("expected an event object, got ") + JsonScalar::type_name(top.type));
  RawEvent e;
  stream.for_each_member(v, [&](std::string_view key, od::value fv) {
    if (key == "args") {
      if (JsonStream::scalar(fv).type == JsonScalar::Type::kObject)
        read_args(stream, index, fv, e);
      else
        stream.check_ignored(fv, 3);
      return;
    }
    const JsonScalar x = stream.leaf(fv, 3);
    if (key == "ph") {
      e.has_ph = x.type == JsonScalar::Type::kString;
      e.ph = string_of(x);
    } else if (key == "name") {
      e.name = string_of(x);
    } else if (key == "cat") {
      e.cat = string_of(x);
    } else if (key == "pid") {
      e.pid = id_of(x);
    } else if (key == "tid") {
      e.tid = id_of(x);
    } else if (key == "ts") {
      e.ts_ok = trace_time_of(x, e.ts);
      if (!e.ts_ok && x.is_number()) e.ts_out_of_range = std::string(x.text);
      if (e.ts_ok && x.type == JsonScalar::Type::kDouble && went_through_a_double(x.text, x.d)) {
        e.ts_rounded = std::string(x.text);
        e.ts_value = x.d;
      }
    } else if (key == "dur") {
      e.dur_ok = time_of(x, e.dur);
    }
  });
  return e;
}

// The task id of an X event: args.taskId (args.seqNo, when given, as its upper 32 bits), else
// decoded from its name; and its PSG: args.psg, else the name's "psgId(label)", else the name.
void read_task_identity(const RawEvent& e, SwimlaneTask& task) {
  const ParsedName parsed = parse_task_name(e.name);
  if (e.has_task_id) {
    task.has_id = true;
    task.task_id = e.task_id;
    if (e.has_seq && task.task_id >= 0 && task.task_id < (int64_t{1} << 32) && e.seq > 0 &&
        e.seq < (int64_t{1} << 31))
      task.task_id |= e.seq << 32;
  }
  task.psg = e.psg;
  if (!task.has_id && parsed.has_id) {
    task.has_id = true;
    task.task_id = parsed.id;
  }
  if (task.psg.empty()) task.psg = parsed.has_id ? parsed.psg : e.name;
}

// The events of a trace: the document itself when it is an array, or its "traceEvents".
std::vector<RawEvent> read_events(JsonStream& stream) {
  std::vector<RawEvent> events;
  const JsonPlace top(stream.origin(), "");
  auto read_array = [&](od::value array) {
    for (auto item : array.get_array()) {
      const size_t index = events.size();
      if (index == kMaxSwimlaneEvents)
        JsonPlace(stream.origin(), fmt::format("event {}", index))
            .fail(fmt::format("more than {} events (a swimlane trace holds at most {}: cut it to "
                              "fewer runs or cores)",
                              kMaxSwimlaneEvents, kMaxSwimlaneEvents));
      events.push_back(read_event(stream, index, item.value()));
    }
  };
  stream.whole(
      [&](od::value doc) {
        if (JsonStream::scalar(doc).type == JsonScalar::Type::kArray) return read_array(doc);
        bool found = false;
        stream.for_each_member(doc, [&](std::string_view key, od::value v) {
          if (key == "traceEvents" && JsonStream::scalar(v).type == JsonScalar::Type::kArray) {
            found = true;
            read_array(v);
          } else {
            stream.check_ignored(v, 1);
          }
        });
        if (!found) top.fail("expected a Chrome trace: an object with a \"traceEvents\" array");
      },
      [&](JsonScalar::Type type) {
        top.fail(std::string("expected a Chrome trace (an array of events or an object with a "
                             "\"traceEvents\" array), got ") +
                 JsonScalar::type_name(type));
      });
  return events;
}

// Reads a trace's events into lanes and tasks (the header says how).
class TraceReader {
 public:
  // Each event is named by its index in messages ("event 3"), whichever form held the array.
  TraceReader(std::vector<RawEvent> events, std::string origin, double units_per_us)
      : events_(std::move(events)), origin_(std::move(origin)), units_per_us_(units_per_us) {
    out_.events = static_cast<int64_t>(events_.size());
  }

  SwimlaneTrace read() {
    for (const auto& e : events_)
      if (e.ph == "X" && e.ts_ok) first_ts_ = std::min(first_ts_, e.ts.whole);
    read_names();
    add_named_core_lanes();
    // Overlapping tasks of one lane (on one tid or on several) are kept as drawn: a core's busy
    // time is the union of its tasks' spans (sim/metrics.cpp), so no wait is negative and no core
    // is busier than the span.
    for (size_t i = 0; i < events_.size(); ++i) read_event(i, events_[i]);
    return std::move(out_);
  }

 private:
  // Pass 1: names of processes and threads.
  void read_names() {
    for (const auto& e : events_) {
      if (e.ph != "M") continue;
      if (e.name == "process_name")
        process_name_[e.pid] = e.meta_name;
      else if (e.name == "thread_name")
        thread_name_[e.pid + "/" + e.tid] = e.meta_name;
    }
  }

  LaneClass classify(const std::string& pid, const std::string& tname, const std::string& cat,
                     CoreType& type, bool& known) const {
    const std::string t = upper(tname);
    const auto pit = process_name_.find(pid);
    const std::string p = pit == process_name_.end() ? "" : upper(pit->second);
    known = false;
    if (upper(cat) == "AICPU" || t.find("AICPU") != std::string::npos ||
        p.find("AICPU") != std::string::npos || t == "CONTROL" || starts_with(t, "SCHEDULER"))
      return LaneClass::kAicpu;
    if (t.find("FAKE") != std::string::npos) return LaneClass::kFake;
    for (const std::string* s : {&t, &p}) {
      if (s->find("AIC") != std::string::npos || s->find("CUBE") != std::string::npos) {
        type = CoreType::kAic;
        known = true;
        break;
      }
      if (s->find("AIV") != std::string::npos || s->find("VEC") != std::string::npos) {
        type = CoreType::kAiv;
        known = true;
        break;
      }
    }
    return LaneClass::kCore;
  }

  int32_t lane_for(const std::string& pid, const std::string& tid, const std::string& tname,
                   CoreType type, bool known) {
    const std::string key = tname.empty() ? pid + "/#" + tid : pid + "/" + tname;
    const auto [it, fresh] = lane_of_.emplace(key, static_cast<int32_t>(out_.lanes.size()));
    if (fresh)
      out_.lanes.push_back(
          SwimlaneLane{tname.empty() ? fmt::format("pid {} tid {}", pid, tid) : tname,
                       known ? type : CoreType::kAiv, known});
    return it->second;
  }

  // Named core lanes first, in the trace's order, so cores are listed as the trace lists them.
  void add_named_core_lanes() {
    for (const auto& e : events_) {
      if (e.ph != "M" || e.name != "thread_name") continue;
      CoreType type = CoreType::kAiv;
      bool known = false;
      if (!e.meta_name.empty() && classify(e.pid, e.meta_name, "", type, known) == LaneClass::kCore)
        lane_for(e.pid, e.tid, e.meta_name, type, known);
    }
  }

  void skip(const std::string& reason) { ++out_.skipped[reason]; }

  // Pass 2: one event; X events on core lanes with a task id are tasks, the rest are counted.
  void read_event(size_t index, const RawEvent& e) {
    if (!e.has_ph) return skip("events without a phase (ph)");
    if (e.ph == "M") return;
    if (e.ph != "X") {
      const char* reason = phase_reason(e.ph);
      return skip(reason ? reason : fmt::format("events of phase '{}'", e.ph));
    }
    const JsonPlace at(origin_, fmt::format("event {}", index));
    if (!e.ts_ok)
      at.fail(e.ts_out_of_range.empty()
                  ? "complete event (ph X) needs a numeric 'ts'"
                  : fmt::format("ts {} is out of range (its whole units fit 64 bits)",
                                e.ts_out_of_range));
    if (!e.dur_ok) at.fail("complete event (ph X) needs a numeric 'dur'");
    // A stamp printed from a double at an epoch's magnitude (~1.8e15 us) is off by up to half a
    // step (0.125 us there): the figures would depend on where the clock started.
    if (!e.ts_rounded.empty()) {
      const double step_us =
          (std::nextafter(std::abs(e.ts_value), INFINITY) - std::abs(e.ts_value)) / units_per_us_;
      if (step_us > kSwimlaneResolutionUs)
        at.fail(fmt::format(
            "ts {} was printed from a 64-bit float whose step there is {:g} us: the stamp is off "
            "by up to half of it, and every figure with it (write the timestamps relative to the "
            "first task, or as exact decimals)",
            e.ts_rounded, step_us));
    }
    if (e.dur < 0) at.fail(fmt::format("complete event (ph X) has negative dur {}", e.dur));
    // Bounded before any arithmetic: no task, and no trace, lasts 10^12 us (11.6 days).
    const double max_units = kMaxSwimlaneSpanUs * units_per_us_;
    if (e.dur > max_units)
      at.fail(fmt::format("dur {} is out of range (at most {:g} us: no task runs that long)", e.dur,
                          kMaxSwimlaneSpanUs));
    const __int128 since = static_cast<__int128>(e.ts.whole) - first_ts_;
    if (static_cast<double>(since) > max_units)
      at.fail(
          fmt::format("ts is {:g} us after the trace's first task (at most {:g} us: one "
                      "trace, one run)",
                      static_cast<double>(since) / units_per_us_, kMaxSwimlaneSpanUs));
    const auto tn = thread_name_.find(e.pid + "/" + e.tid);
    const std::string tname = tn == thread_name_.end() ? "" : tn->second;
    CoreType type = CoreType::kAiv;
    bool known = false;
    const LaneClass lc = classify(e.pid, tname, e.cat, type, known);
    if (lc == LaneClass::kAicpu) return skip("X events on AICPU lanes");
    if (lc == LaneClass::kFake) return skip("X events on the fake-task lane");
    SwimlaneTask task;
    read_task_identity(e, task);
    if (!task.has_id) return skip("X events without a task id");
    task.lane = lane_for(e.pid, e.tid, tname, type, known);
    const double start = static_cast<double>(since) + e.ts.frac;
    task.start_us = start / units_per_us_;
    task.end_us = (start + e.dur) / units_per_us_;
    task.event = static_cast<int64_t>(index);
    out_.tasks.push_back(std::move(task));
  }

  std::vector<RawEvent> events_;
  std::string origin_;
  double units_per_us_;
  int64_t first_ts_ = std::numeric_limits<int64_t>::max();  // the first task's, whole units
  SwimlaneTrace out_;
  std::unordered_map<std::string, std::string> process_name_, thread_name_;
  std::unordered_map<std::string, int32_t> lane_of_;  // "pid/name" or "pid/#tid"
};

SwimlaneTrace read_swimlane(JsonStream& stream, double units_per_us) {
  if (!(units_per_us > 0)) throw Error(stream.origin() + ": time units per us must be positive");
  if (const uint64_t bytes = stream.size_bytes(); bytes > kMaxSwimlaneBytes)
    throw Error(
        fmt::format("{}: {} bytes, more than a swimlane trace's {} MiB (at most {} "
                    "events: cut it to fewer runs or cores)",
                    stream.origin(), bytes, kMaxSwimlaneBytes >> 20, kMaxSwimlaneEvents));
  return TraceReader(read_events(stream), stream.origin(), units_per_us).read();
}

}  // namespace

SwimlaneTrace swimlane_from_text(std::string text, const std::string& origin, double units_per_us) {
  JsonStream stream(std::move(text), origin, "swimlane trace");
  return read_swimlane(stream, units_per_us);
}

SwimlaneTrace swimlane_from_json(const nlohmann::json& doc, const std::string& origin,
                                 double units_per_us) {
  return swimlane_from_text(doc.dump(), origin, units_per_us);
}

SwimlaneTrace load_swimlane(const std::filesystem::path& file, double units_per_us) {
  JsonStream stream(file, "swimlane trace");
  return read_swimlane(stream, units_per_us);
}

namespace {

// Trace tasks against a graph's: the graph task of each trace task (-1: not in the graph) and the
// first trace task of each graph task (-1: not in the trace).
struct GraphMatch {
  std::vector<int32_t> graph_index;
  std::vector<int32_t> trace_of;
};

GraphMatch match_graph(const SwimlaneTrace& trace, const PyptoGraph& graph,
                       std::vector<std::string>& warnings) {
  const size_t n = trace.tasks.size();
  GraphMatch m;
  m.graph_index.assign(n, -1);
  m.trace_of.assign(graph.graph.tasks.size(), -1);
  std::unordered_map<int64_t, int32_t> gindex;
  gindex.reserve(graph.task_ids.size() * 2);
  for (size_t i = 0; i < graph.task_ids.size(); ++i)
    gindex.emplace(graph.task_ids[i], static_cast<int32_t>(i));
  int64_t unknown = 0, duplicate = 0;
  std::string first_unknown, first_duplicate;
  for (size_t t = 0; t < n; ++t) {
    const auto it = gindex.find(trace.tasks[t].task_id);
    if (it == gindex.end()) {
      if (unknown++ == 0) first_unknown = std::to_string(trace.tasks[t].task_id);
      continue;
    }
    m.graph_index[t] = it->second;
    auto& slot = m.trace_of[static_cast<size_t>(it->second)];
    if (slot >= 0) {
      if (duplicate++ == 0) first_duplicate = std::to_string(trace.tasks[t].task_id);
      continue;
    }
    slot = static_cast<int32_t>(t);
  }
  const auto missing = std::count(m.trace_of.begin(), m.trace_of.end(), -1);
  if (unknown)
    warnings.push_back(fmt::format(
        "{} trace task(s) are not in the graph (first: taskId {}); they have no predecessors",
        unknown, first_unknown));
  if (duplicate)
    warnings.push_back(fmt::format(
        "{} trace task(s) repeat a taskId (first: {}); the first one's end is used as a "
        "predecessor end",
        duplicate, first_duplicate));
  if (missing) {
    const auto first = std::find(m.trace_of.begin(), m.trace_of.end(), -1) - m.trace_of.begin();
    warnings.push_back(fmt::format("{} graph task(s) are not in the trace (first: taskId {})",
                                   missing, graph.task_ids[static_cast<size_t>(first)]));
  }
  return m;
}

// One timeline record per trace task; its PSG is the graph's when the graph has the task.
Timeline trace_timeline(const SwimlaneTrace& trace, const std::vector<SwimlaneLane>& lanes,
                        const PyptoGraph* graph, const std::vector<int32_t>& graph_index) {
  Timeline tl;
  tl.core_types.reserve(lanes.size());
  for (const auto& l : lanes) tl.core_types.push_back(l.type);
  std::unordered_map<std::string, int32_t> psg_of;
  tl.records.reserve(trace.tasks.size());
  for (size_t t = 0; t < trace.tasks.size(); ++t) {
    const auto& task = trace.tasks[t];
    std::string psg = task.psg;
    if (graph && graph_index[t] >= 0) {
      const TaskGraph& g = graph->graph;
      const auto& kind =
          g.kinds[static_cast<size_t>(g.tasks[static_cast<size_t>(graph_index[t])].kind)];
      psg = g.psg_names[static_cast<size_t>(kind.psg)];
    }
    const auto [it, fresh] = psg_of.emplace(psg, static_cast<int32_t>(tl.psg_names.size()));
    if (fresh) tl.psg_names.push_back(psg);
    TimelineRecord r;
    r.core = task.lane;
    r.psg = it->second;
    r.start = task.start_us;
    r.end = task.end_us;
    tl.records.push_back(r);
  }
  return tl;
}

// Each record's latest predecessor end, from the graph's dependencies.
void predecessor_ends(const SwimlaneTrace& trace, const TaskGraph& g, const GraphMatch& m,
                      Timeline& tl, std::vector<std::string>& warnings) {
  int64_t missing_pred = 0, early = 0;
  std::string first_early;
  for (size_t gi = 0; gi < g.tasks.size(); ++gi) {
    const int32_t pt = m.trace_of[gi];
    for (const int32_t* s = g.succ_begin(static_cast<int32_t>(gi));
         s != g.succ_end(static_cast<int32_t>(gi)); ++s) {
      const int32_t st = m.trace_of[static_cast<size_t>(*s)];
      if (st < 0) continue;
      if (pt < 0) {
        ++missing_pred;
        continue;
      }
      auto& pe = tl.records[static_cast<size_t>(st)].pred_end;
      pe = std::max(pe, trace.tasks[static_cast<size_t>(pt)].end_us);
    }
  }
  // Every trace task with the same id as a graph task shares its predecessors.
  for (size_t t = 0; t < trace.tasks.size(); ++t) {
    if (m.graph_index[t] < 0) continue;
    const int32_t first = m.trace_of[static_cast<size_t>(m.graph_index[t])];
    if (first != static_cast<int32_t>(t))
      tl.records[t].pred_end = tl.records[static_cast<size_t>(first)].pred_end;
    if (tl.records[t].start < tl.records[t].pred_end - 1e-9 && early++ == 0)
      first_early = std::to_string(trace.tasks[t].task_id);
  }
  if (missing_pred)
    warnings.push_back(fmt::format(
        "{} dependency edge(s) come from tasks missing from the trace; they are ignored",
        missing_pred));
  if (early)
    warnings.push_back(fmt::format(
        "{} task(s) start before a predecessor ends (first: taskId {}); their Wait Schedule "
        "Time is negative",
        early, first_early));
}

}  // namespace

SwimlaneAnalysis analyze_swimlane(const SwimlaneTrace& trace, const PyptoGraph* graph) {
  SwimlaneAnalysis a;
  a.lanes = trace.lanes;
  a.skipped = trace.skipped;
  a.dependencies = graph != nullptr;
  GraphMatch m;
  m.graph_index.assign(trace.tasks.size(), -1);
  if (graph) {
    m = match_graph(trace, *graph, a.warnings);
    // Lanes of unknown type take the graph's core type of their tasks.
    const TaskGraph& g = graph->graph;
    for (size_t t = 0; t < trace.tasks.size(); ++t) {
      auto& lane = a.lanes[static_cast<size_t>(trace.tasks[t].lane)];
      if (lane.type_known || m.graph_index[t] < 0) continue;
      const auto& task = g.tasks[static_cast<size_t>(m.graph_index[t])];
      lane.type = g.kinds[static_cast<size_t>(task.kind)].core;
      lane.type_known = true;
    }
  }
  Timeline tl = trace_timeline(trace, a.lanes, graph, m.graph_index);
  if (graph) predecessor_ends(trace, graph->graph, m, tl, a.warnings);
  a.metrics = timeline_metrics(tl);
  return a;
}

}  // namespace tilesim
