#include "ir/profiler.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "ir/error.h"

namespace fluxion::profiler {

namespace detail {
std::atomic<bool> g_on{false};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace detail

namespace {

struct Event {
  const char* category;
  std::string name;
  int64_t begin_ns, end_ns;
  bool instant;
  int tid;
};

// One thread's events of the current trace; the thread appends under its own (uncontended) lock.
struct ThreadLog {
  int tid = 0;
  std::string thread_name;
  std::mutex mutex;
  std::vector<Event> events;
};

struct State {
  std::mutex mutex;
  uint64_t generation = 0;  // one per trace: a thread's log belongs to one
  std::vector<std::shared_ptr<ThreadLog>> logs;
  int64_t origin_ns = 0;
  std::string dir;
  int files = 0;
  std::vector<Event> last;  // the events of the last finished trace
  std::vector<std::pair<int, std::string>> last_threads;
};

State& state() {
  static State* s = new State;  // never destroyed: threads may record during static destruction
  return *s;
}

thread_local std::shared_ptr<ThreadLog> t_log;
thread_local uint64_t t_generation = ~uint64_t(0);

ThreadLog& this_thread_log() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!t_log || t_generation != s.generation) {
    t_log = std::make_shared<ThreadLog>();
    t_log->tid = int(s.logs.size()) + 1;
    char name[64] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    t_log->thread_name = std::string(name) + " (" + std::to_string(gettid()) + ")";
    t_generation = s.generation;
    s.logs.push_back(t_log);
  }
  return *t_log;
}

void append(Event e) {
  ThreadLog& log = this_thread_log();
  e.tid = log.tid;
  std::lock_guard<std::mutex> lock(log.mutex);
  log.events.push_back(std::move(e));
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write_json(std::ostream& os, const std::vector<Event>& events,
                const std::vector<std::pair<int, std::string>>& threads, int64_t origin_ns) {
  const int pid = int(getpid());
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  os << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":0,\"args\":{\"name\":\"fluxion\"}}";
  for (const auto& [tid, name] : threads)
    os << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid
       << ",\"args\":{\"name\":" << json_string(name) << "}}";
  char num[64];
  for (const Event& e : events) {
    std::snprintf(num, sizeof num, "%.3f", double(e.begin_ns - origin_ns) / 1e3);
    os << ",\n{\"name\":" << json_string(e.name) << ",\"cat\":" << json_string(e.category) << ",\"pid\":" << pid
       << ",\"tid\":" << e.tid << ",\"ts\":" << num;
    if (e.instant) {
      os << ",\"ph\":\"i\",\"s\":\"t\"}";
    } else {
      std::snprintf(num, sizeof num, "%.3f", double(e.end_ns - e.begin_ns) / 1e3);
      os << ",\"ph\":\"X\",\"dur\":" << num << "}";
    }
  }
  os << "\n]}\n";
}

// The events recorded so far, ordered by start time, and the threads they came from.
std::vector<Event> collect(State& s, std::vector<std::pair<int, std::string>>& threads) {
  std::vector<Event> all;
  for (const std::shared_ptr<ThreadLog>& log : s.logs) {
    std::lock_guard<std::mutex> lock(log->mutex);
    all.insert(all.end(), log->events.begin(), log->events.end());
    threads.emplace_back(log->tid, log->thread_name);
  }
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) { return a.begin_ns < b.begin_ns; });
  return all;
}

}  // namespace

namespace detail {
void record(const char* category, std::string name, int64_t begin_ns, int64_t end_ns) {
  if (!active()) return;  // stopped while the span was open
  append(Event{category, std::move(name), begin_ns, end_ns, false, 0});
}
}  // namespace detail

void instant(const char* category, std::string_view name) {
  if (!active()) return;
  const int64_t t = detail::now_ns();
  append(Event{category, std::string(name), t, t, true, 0});
}

void start_trace(const std::string& dir) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (active()) throw ValueError("ValueError: profiler::start_trace(\"" + dir + "\"): a trace is already recording");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ValueError("ValueError: profiler::start_trace: cannot create " + dir + ": " + ec.message());
  ++s.generation;
  s.logs.clear();
  s.dir = dir;
  s.origin_ns = detail::now_ns();
  detail::g_on.store(true, std::memory_order_relaxed);
}

std::string stop_trace() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!active()) throw ValueError("ValueError: profiler::stop_trace: no trace is recording");
  detail::g_on.store(false, std::memory_order_relaxed);
  s.last_threads.clear();
  s.last = collect(s, s.last_threads);
  s.logs.clear();
  ++s.generation;
  const std::string path = (std::filesystem::path(s.dir) /
                            ("fluxion-" + std::to_string(getpid()) + "-" + std::to_string(s.files++) + ".trace.json"))
                               .string();
  std::ofstream out(path);
  write_json(out, s.last, s.last_threads, s.origin_ns);
  out.close();
  if (!out) throw ValueError("ValueError: profiler::stop_trace: cannot write " + path);
  return path;
}

Trace::~Trace() {
  if (open_ && active()) {
    try {
      stop_trace();
    } catch (...) {  // a destructor must not throw; stop() reports errors
    }
  }
}

std::string Trace::stop() {
  open_ = false;
  return stop_trace();
}

std::vector<Row> key_averages() {
  State& s = state();
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    std::vector<std::pair<int, std::string>> threads;
    events = active() ? collect(s, threads) : s.last;
  }
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const Event& e : events) {
    Row& r = rows[{e.category, e.name}];
    const double us = double(e.end_ns - e.begin_ns) / 1e3;
    if (r.calls == 0) {
      r.category = e.category;
      r.name = e.name;
      r.min_us = r.max_us = us;
    }
    ++r.calls;
    r.total_us += us;
    r.min_us = std::min(r.min_us, us);
    r.max_us = std::max(r.max_us, us);
  }
  std::vector<Row> out;
  for (auto& [key, r] : rows) {
    r.mean_us = r.total_us / double(r.calls);
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.total_us > b.total_us; });
  return out;
}

std::string summary(size_t max_rows) {
  std::vector<Row> rows = key_averages();
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-48s %-10s %8s %12s %12s %12s %12s\n", "Name", "Category", "Calls", "Total ms",
                "Mean us", "Min us", "Max us");
  os << line;
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const Row& r = rows[i];
    std::string name = r.name.size() > 48 ? r.name.substr(0, 45) + "..." : r.name;
    std::snprintf(line, sizeof line, "%-48s %-10s %8lld %12.3f %12.1f %12.1f %12.1f\n", name.c_str(),
                  r.category.c_str(), static_cast<long long>(r.calls), r.total_us / 1e3, r.mean_us, r.min_us,
                  r.max_us);
    os << line;
  }
  return os.str();
}

}  // namespace fluxion::profiler
