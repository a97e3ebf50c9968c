#include "compile/eager_cpu.h"

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "compile/compile_cache.h"
#include "compile/one_op.h"
#include "ir/eager_cpu_hook.h"
#include "ir/settings.h"

namespace fluxion::runtime {

namespace {

// The primitives whose reference kernel is a scalar libm call per element: compiled, they run
// vectorized (glibc's libmvec or the pipeline's polynomials) on every core. The cheap ones (add,
// neg, compare, ...) already run at memory speed in the reference kernel, so a compile would not pay.
bool transcendental(Prim p) {
  switch (p) {
    case Prim::exp: case Prim::exp2: case Prim::log: case Prim::log1p: case Prim::expm1:
    case Prim::tanh: case Prim::logistic: case Prim::sin: case Prim::cos: case Prim::tan:
    case Prim::asin: case Prim::acos: case Prim::atan: case Prim::sinh: case Prim::cosh:
    case Prim::asinh: case Prim::acosh: case Prim::atanh: case Prim::cbrt: case Prim::erf:
    case Prim::lgamma: case Prim::pow: case Prim::atan2:
      return true;
    default:
      return false;
  }
}

constexpr int64_t kFirstCall = int64_t(1) << 20;  // elements: compiled at the first call
constexpr int64_t kRepeated = int64_t(1) << 14;   // elements: compiled from the third call
constexpr int kRepeatCalls = 3;

std::atomic<int> g_override{-1};  // -1: the setting; else an EagerCompile
std::atomic<int64_t> g_runs{0};

EagerCompile mode() {
  if (int o = g_override.load(std::memory_order_relaxed); o >= 0) return EagerCompile(o);
  static const EagerCompile from_setting = [] {
    const std::optional<std::string> v = choice_setting("FLUXION_EAGER_COMPILE");
    return !v || *v == "auto" ? EagerCompile::auto_ : *v == "always" ? EagerCompile::always : EagerCompile::off;
  }();
  return from_setting;
}

// Per operand signature of the ops seen at sizes worth compiling: how often it ran, and its
// executable once compiled (so a repeated op pays no fingerprint or cache lookup), or that its
// compile failed (it stays on the reference kernel: never worse than without this path).
struct Entry {
  int calls = 0;
  bool failed = false;
  std::shared_ptr<const Executable> exe;
};
struct Seen {
  std::mutex mu;
  std::unordered_map<std::string, Entry> entries;
};
Seen& seen() {
  static Seen* s = new Seen;  // never destroyed: eager ops may run during static destruction
  return *s;
}

std::string signature(Prim p, std::span<const Array> inputs) {
  std::string key(prim_name(p));
  for (const Array& x : inputs) key += ' ' + x.aval().str();
  return key;
}

std::optional<std::vector<Array>> run_compiled(Prim p, std::span<const Array> inputs, const Params& params,
                                               std::span<const AbstractArray> out_avals, const Device& on,
                                               bool committed, SourceLoc loc) {
  if (!transcendental(p) || out_avals.size() != 1 || !is_float(out_avals[0].dtype)) return std::nullopt;
  const EagerCompile m = mode();
  if (m == EagerCompile::off) return std::nullopt;
  const int64_t n = out_avals[0].size();
  if (m == EagerCompile::auto_ && n < kRepeated) return std::nullopt;
  // Entries are keyed by the operands' types alone: an op with params (none of the primitives
  // above has any today) keeps to the reference kernel rather than share another's executable.
  if (!params.empty()) return std::nullopt;
  const std::string key = signature(p, inputs);
  std::shared_ptr<const Executable> exe;
  {
    std::lock_guard<std::mutex> lock(seen().mu);
    Entry& entry = seen().entries[key];
    if (entry.failed) return std::nullopt;
    ++entry.calls;
    if (m == EagerCompile::auto_ && n < kFirstCall && entry.calls < kRepeatCalls) return std::nullopt;
    exe = entry.exe;
  }
  if (!exe) {
    std::vector<AbstractArray> in_avals;
    for (const Array& x : inputs) in_avals.push_back(x.aval());
    try {
      exe = compile(one_op_program(p, in_avals, params, loc), default_target(Platform::cpu),
                    "eager_" + std::string(prim_name(p)));
    } catch (const CompileError&) {
      std::lock_guard<std::mutex> lock(seen().mu);
      seen().entries[key].failed = true;
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lock(seen().mu);
    seen().entries[key].exe = exe;
  }
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return exe->run(inputs, {}, RunOn{on, committed});
}

const bool registered = [] {
  set_eager_cpu_runner(&run_compiled);
  return true;
}();

}  // namespace

void override_eager_compile(std::optional<EagerCompile> m) { g_override.store(m ? int(*m) : -1); }

int64_t eager_compiled_runs() { return g_runs.load(); }

}  // namespace fluxion::runtime
