// libfluxion_omp_regions.so: an OMPT tool (libomp's tools interface) that says where a program's
// threads wait in libomp, region by region. A development tool, not part of libfluxion; usage and
// how to read its table: docs/debugging.md, "Where the threads wait".
//
//   OMP_TOOL_LIBRARIES=build/bench/libfluxion_omp_regions.so FXOMP_RUNS=4 build/bench/fluxion_bench_peers 3 resnet
//
// For every parallel region it records when the encountering thread opened and closed it and, per
// thread, when its implicit task started and when it reached the closing barrier. A thread's
// *work* is start -> arrival; its *wait* is the rest of the region's span (waking up for the fork,
// then the barrier). Between regions the encountering thread runs serial code while the others
// spin in libomp: that *gap* is charged to the region that follows it. Regions are keyed by the
// code that opened them: a JIT'd kernel's call site (symbolized from the debug objects LLVM
// registers for gdb: kernel function + offset), or, for regions opened through a helper in a
// shared library (libfluxion's runtime::parallel_chunks), the helper's callers, four frames up.
//
// At exit it prints one row per site to stderr (or FXOMP_OUT), in ms per run: FXOMP_RUNS=N says
// that the program ran the same work N times; the first run of each site (its first 1/N of the
// calls: compiles, page faults) is dropped and the rest divided by N - 1; FXOMP_SKIP=K drops the
// first K runs instead.
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

// The part of the OpenMP tools interface (OpenMP 5.1, section 4; omp-tools.h) this tool uses,
// declared here: the header ships only in clang's resource directory, whose other headers GCC
// cannot read.
extern "C" {
union ompt_data_t {
  uint64_t value;
  void* ptr;
};
struct ompt_frame_t;
using ompt_callback_t = void (*)();
using ompt_interface_fn_t = void (*)();
using ompt_function_lookup_t = ompt_interface_fn_t (*)(const char*);
using ompt_set_callback_t = int (*)(int event, ompt_callback_t callback);
using ompt_initialize_t = int (*)(ompt_function_lookup_t, int, ompt_data_t*);
using ompt_finalize_t = void (*)(ompt_data_t*);
struct ompt_start_tool_result_t {
  ompt_initialize_t initialize;
  ompt_finalize_t finalize;
  ompt_data_t tool_data;
};
}
enum : int { ompt_callback_parallel_begin = 3, ompt_callback_parallel_end = 4, ompt_callback_implicit_task = 7, ompt_callback_sync_region = 23 };
enum ompt_scope_endpoint_t : int { ompt_scope_begin = 1, ompt_scope_end = 2 };
enum ompt_sync_region_t : int { ompt_sync_region_barrier_implicit = 2, ompt_sync_region_barrier_implicit_parallel = 9 };
constexpr int ompt_task_initial = 1;

namespace {

constexpr int kThreads = 8;  // threads per region that are recorded
constexpr int kFrames = 4;   // callers of a shared-library helper that key a site

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

struct Site {
  const void* frames[kFrames] = {};
  bool operator<(const Site& o) const { return std::lexicographical_compare(frames, frames + kFrames, o.frames, o.frames + kFrames); }
};

// One run of a parallel region. The encountering thread writes begin/end; thread i its start and
// arrival (libomp's barriers order these writes before the encountering thread reads them).
struct Region {
  Site site;
  unsigned threads = 0;
  uint64_t begin = 0, end = 0, gap = 0;  // gap: the encountering thread's serial time before it
  uint64_t start[kThreads] = {}, arrive[kThreads] = {};
};

// Never destroyed: libomp calls finalize at its own exit, after this library's static destructors.
struct State {
  std::mutex mutex;
  std::deque<Region> regions;              // stable addresses: parallel_data points into it
  std::map<const void*, std::string> jit;  // JIT'd frames, named on first sight (kernels get freed)
  std::map<const char*, int> jit_objects;  // a kernel object's number, in order of first sight
};
State& g = *new State;
thread_local uint64_t t_last_end = 0;         // when this thread's last region closed
thread_local Region* t_region = nullptr;      // the region this thread works in
thread_local unsigned t_index = 0;            // and its number in that region's team

// --- symbolization ------------------------------------------------------------------------------

// GDB's JIT interface (LLVM's GDBRegistrationListener fills it): every loaded kernel object, its
// sections' sh_addr set to their load addresses.
struct JitEntry {
  JitEntry* next;
  JitEntry* prev;
  const char* file;
  uint64_t size;
};
struct JitDescriptor {
  uint32_t version, action;
  JitEntry* relevant;
  JitEntry* first;
};

// "kernel#K function+0xOFF" of a JIT'd address, or "" when no registered object holds it.
std::string jit_name(const void* addr) {
  static auto* desc = static_cast<JitDescriptor*>(dlsym(RTLD_DEFAULT, "__jit_debug_descriptor"));
  if (!desc) return "";
  const auto a = reinterpret_cast<uint64_t>(addr);
  for (JitEntry* e = desc->first; e; e = e->next) {
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(e->file);
    if (e->size < sizeof(Elf64_Ehdr) || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) continue;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(e->file + eh->e_shoff);
    for (int s = 0; s < eh->e_shnum; ++s) {
      if (sh[s].sh_type != SHT_SYMTAB) continue;
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(e->file + sh[s].sh_offset);
      const char* strs = e->file + sh[sh[s].sh_link].sh_offset;
      for (size_t i = 0; i < sh[s].sh_size / sizeof(Elf64_Sym); ++i) {
        const Elf64_Sym& y = syms[i];
        if (ELF64_ST_TYPE(y.st_info) != STT_FUNC || y.st_shndx == SHN_UNDEF || y.st_shndx >= eh->e_shnum) continue;
        const uint64_t lo = sh[y.st_shndx].sh_addr + y.st_value;
        if (a < lo || a >= lo + y.st_size) continue;
        const int k = g.jit_objects.emplace(e->file, int(g.jit_objects.size())).first->second;
        char buf[64];
        std::snprintf(buf, sizeof buf, "+0x%" PRIx64, a - lo);
        return "kernel#" + std::to_string(k) + " " + (strs + y.st_name) + buf;
      }
    }
  }
  return "";
}

// Names of addresses in shared objects, by addr2line on the file (symbol tables: the release
// build has no line tables), batched per file at exit.
std::map<const void*, std::string> so_names(const std::vector<const void*>& addrs) {
  std::map<std::string, std::vector<std::pair<const void*, uintptr_t>>> by_file;
  std::map<const void*, std::string> out;
  for (const void* a : addrs) {
    Dl_info info;
    if (!a || !dladdr(a, &info) || !info.dli_fname) continue;
    // a return address: the call is the byte before it
    by_file[info.dli_fname].push_back({a, uintptr_t(a) - 1 - uintptr_t(info.dli_fbase)});
  }
  for (auto& [file, list] : by_file) {
    std::string cmd = "addr2line -f -C -e '" + file + "'";
    for (auto& [a, off] : list) cmd += " 0x" + [&] { char b[32]; std::snprintf(b, sizeof b, "%" PRIxPTR, off); return std::string(b); }();
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) continue;
    char fn[4096], line[4096];
    for (auto& [a, off] : list) {
      if (!fgets(fn, sizeof fn, p) || !fgets(line, sizeof line, p)) break;
      fn[strcspn(fn, "\n")] = 0;
      std::string name = fn;
      if (name.size() > 90) name = name.substr(0, 87) + "...";  // template arguments
      const char* base = std::strrchr(file.c_str(), '/');
      char at[32];
      std::snprintf(at, sizeof at, "@0x%" PRIxPTR, off + 1);
      out[a] = name + " (" + (base ? base + 1 : file.c_str()) + at + ")";
    }
    pclose(p);
  }
  return out;
}

// The site of a region opened at `codeptr`: its own address, or, when that is in a helper library
// (FXOMP_HELPERS, a substring of the library's path; default "libfluxion": runtime::parallel_chunks
// opens the regions of every library call), the helper's callers (the frames after codeptr's).
Site site_of(const void* codeptr) {
  static const char* helpers = std::getenv("FXOMP_HELPERS") ? std::getenv("FXOMP_HELPERS") : "libfluxion";
  Site s;
  s.frames[0] = codeptr;
  Dl_info info;
  if (!codeptr || !dladdr(codeptr, &info) || !info.dli_fname || !std::strstr(info.dli_fname, helpers)) return s;
  void* frames[16];
  const int n = backtrace(frames, 16);
  for (int i = 0; i < n; ++i)
    if (frames[i] == codeptr) {
      for (int k = 0; k < kFrames; ++k) s.frames[k] = i + 1 + k < n ? frames[i + 1 + k] : nullptr;
      break;
    }
  return s;
}

// --- callbacks ----------------------------------------------------------------------------------

void on_parallel_begin(ompt_data_t*, const ompt_frame_t*, ompt_data_t* parallel, unsigned, int, const void* codeptr) {
  const uint64_t t = now_ns();
  const Site site = site_of(codeptr);
  std::lock_guard<std::mutex> lock(g.mutex);
  Region& r = g.regions.emplace_back();
  r.site = site;
  r.begin = t;
  r.gap = t_last_end ? t - t_last_end : 0;
  parallel->ptr = &r;
  for (const void* f : site.frames)
    if (f && !g.jit.count(f)) {
      Dl_info info;
      if (!dladdr(f, &info)) g.jit[f] = jit_name(f);
    }
}

void on_parallel_end(ompt_data_t* parallel, ompt_data_t*, int, const void*) {
  const uint64_t t = now_ns();
  if (auto* r = static_cast<Region*>(parallel->ptr)) r->end = t;
  t_last_end = t;
}

void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t* parallel, ompt_data_t*, unsigned threads, unsigned index, int flags) {
  if (endpoint != ompt_scope_begin || !parallel || (flags & ompt_task_initial)) return;
  t_region = static_cast<Region*>(parallel->ptr);
  if (!t_region) return;
  t_index = index;
  if (index == 0) t_region->threads = threads;
  if (index < kThreads) t_region->start[index] = now_ns();
}

void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t* parallel, ompt_data_t*, const void*) {
  if (endpoint != ompt_scope_begin) return;
  if (kind != ompt_sync_region_barrier_implicit && kind != ompt_sync_region_barrier_implicit_parallel) return;
  Region* r = parallel && parallel->ptr ? static_cast<Region*>(parallel->ptr) : t_region;
  if (r && r == t_region && t_index < kThreads) r->arrive[t_index] = now_ns();
}

// --- the table ----------------------------------------------------------------------------------

struct Row {
  std::string name;
  int64_t calls = 0;
  double span = 0, gap = 0, work[2] = {}, wait[2] = {}, wake = 0;  // wake: thread 1's start after the fork
  unsigned threads = 0;
};

void report() {
  std::lock_guard<std::mutex> lock(g.mutex);
  const char* runs_env = std::getenv("FXOMP_RUNS");
  const int runs = runs_env ? std::max(1, std::atoi(runs_env)) : 1;
  const char* skip_env = std::getenv("FXOMP_SKIP");
  const int skipped = runs > 1 ? std::clamp(skip_env ? std::atoi(skip_env) : 1, 0, runs - 1) : 0;
  std::map<Site, std::vector<const Region*>> by_site;
  for (const Region& r : g.regions)
    if (r.end) by_site[r.site].push_back(&r);

  std::vector<const void*> addrs;
  for (auto& [site, list] : by_site) addrs.insert(addrs.end(), site.frames, site.frames + kFrames);
  const std::map<const void*, std::string> names = so_names(addrs);

  // JIT'd frames are numbered within their function in the order of their code, from 0: regions
  // (the order of the kernel dump's omp.parallel ops, .vectorized.mlir's scf.forall ops) apart
  // from library calls that open regions (the order of their eqns in .program.txt).
  auto split = [](const std::string& name) {
    const size_t plus = name.rfind("+0x");
    return std::make_pair(name.substr(0, plus), std::strtoull(name.c_str() + plus + 3, nullptr, 16));
  };
  std::map<std::string, std::vector<uint64_t>> offsets[2];  // [region, call]: "kernel#K function" -> offsets
  for (auto& [site, list] : by_site)
    for (int k = 0; k < kFrames; ++k)
      if (auto it = g.jit.find(site.frames[k]); it != g.jit.end() && !it->second.empty()) {
        auto [fn, off] = split(it->second);
        std::vector<uint64_t>& v = offsets[k > 0][fn];
        if (std::find(v.begin(), v.end(), off) == v.end()) v.push_back(off);
      }
  for (auto& o : offsets)
    for (auto& [fn, offs] : o) std::sort(offs.begin(), offs.end());
  auto frame_name = [&](const void* f, bool call) -> std::string {
    if (auto it = g.jit.find(f); it != g.jit.end()) {
      if (it->second.empty()) return "?";
      const auto [fn, off] = split(it->second);
      const std::vector<uint64_t>& offs = offsets[call][fn];
      return fn + (call ? " call #" : " region #") + std::to_string(std::lower_bound(offs.begin(), offs.end(), off) - offs.begin());
    }
    auto n = names.find(f);
    return n != names.end() ? n->second : "?";
  };

  auto names_of = [&](const Site& site) {
    std::string name;
    for (int k = 0; k < kFrames && site.frames[k]; ++k) name += (k ? " <- " : "") + frame_name(site.frames[k], k > 0);
    return name;
  };
  uint64_t first = UINT64_MAX, last = 0, spans = 0;
  for (const Region& r : g.regions)
    if (r.end) first = std::min(first, r.begin), last = std::max(last, r.end), spans += r.end - r.begin;

  const double per = 1e-6 / (runs - skipped);  // ns -> ms per run
  std::vector<Row> rows;
  Row total{"all regions"};
  total.threads = 2;
  for (auto& [site, list] : by_site) {
    Row row;
    row.name = names_of(site);
    const size_t skip = list.size() * size_t(skipped) / size_t(runs);
    for (size_t i = skip; i < list.size(); ++i) {
      const Region& r = *list[i];
      const double span = double(r.end - r.begin);
      row.threads = std::max(row.threads, r.threads);
      ++row.calls;
      row.span += span;
      row.gap += double(r.gap);
      for (int t = 0; t < 2 && t < int(r.threads); ++t) {
        const double work = r.arrive[t] && r.start[t] ? double(r.arrive[t] - r.start[t]) : span;
        row.work[t] += work;
        row.wait[t] += span - work;
      }
      if (r.threads > 1 && r.start[1]) row.wake += double(r.start[1] - r.begin);
    }
    row.span *= per, row.gap *= per, row.wake *= per;
    for (int t = 0; t < 2; ++t) row.work[t] *= per, row.wait[t] *= per;
    total.calls += row.calls, total.span += row.span, total.gap += row.gap, total.wake += row.wake;
    for (int t = 0; t < 2; ++t) total.work[t] += row.work[t], total.wait[t] += row.wait[t];
    rows.push_back(row);
  }
  if (const char* trace = std::getenv("FXOMP_TRACE"))  // every region, ns after the first one
    if (FILE* f = std::fopen(trace, "w")) {
      std::fprintf(f, "site,begin,start0,start1,arrive0,arrive1,end\n");
      for (const Region& r : g.regions) {
        auto at = [&](uint64_t t) { return t ? int64_t(t - first) : int64_t(-1); };
        std::fprintf(f, "\"%s\",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n", names_of(r.site).c_str(), at(r.begin),
                     at(r.start[0]), at(r.start[1]), at(r.arrive[0]), at(r.arrive[1]), at(r.end));
      }
      std::fclose(f);
    }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.wait[0] + a.wait[1] + a.gap > b.wait[0] + b.wait[1] + b.gap; });

  const char* out_path = std::getenv("FXOMP_OUT");
  FILE* out = out_path ? std::fopen(out_path, "w") : stderr;
  if (!out) out = stderr;
  std::fprintf(out, "# OpenMP regions, ms per run (runs %d, the first %d dropped); threads 0 (encountering) / 1\n", runs, skipped);
  std::fprintf(out, "# all runs: %zu regions, %.1f ms from the first to the last, %.1f ms inside them\n", g.regions.size(),
               double(last - first) * 1e-6, double(spans) * 1e-6);
  std::fprintf(out, "%9s %5s %9s %9s %9s %9s %9s %9s %9s  %s\n", "calls", "thr", "span", "work0", "work1", "wait0", "wait1", "gap", "wake1", "site");
  auto print = [&](const Row& r) {
    std::fprintf(out, "%9.1f %5u %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f  %s\n", double(r.calls) / (runs - skipped),
                 r.threads, r.span, r.work[0], r.work[1], r.wait[0], r.wait[1], r.gap, r.wake, r.name.c_str());
  };
  print(total);
  for (const Row& r : rows) print(r);
  if (out != stderr) std::fclose(out);
}

int initialize(ompt_function_lookup_t lookup, int, ompt_data_t*) {
  auto set = reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
  set(ompt_callback_parallel_begin, reinterpret_cast<ompt_callback_t>(&on_parallel_begin));
  set(ompt_callback_parallel_end, reinterpret_cast<ompt_callback_t>(&on_parallel_end));
  set(ompt_callback_implicit_task, reinterpret_cast<ompt_callback_t>(&on_implicit_task));
  set(ompt_callback_sync_region, reinterpret_cast<ompt_callback_t>(&on_sync_region));
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder now, not inside the first region
  return 1;
}

void finalize(ompt_data_t*) { report(); }

}  // namespace

extern "C" ompt_start_tool_result_t* ompt_start_tool(unsigned, const char*) {
  static ompt_start_tool_result_t result{&initialize, &finalize, {}};
  return &result;
}
