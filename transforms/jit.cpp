#include "transforms/jit.h"

#include <algorithm>
#include <cstdio>

#include "ir/debug_checks.h"
#include "ir/settings.h"
#include "memory/buffer.h"
#include "interpreters/donation.h"
#include "interpreters/jit_passes.h"
#include "interpreters/partition.h"
#include "runtime/devices.h"

namespace fluxion::jit_detail {

namespace {
std::string fmt_ms(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", ms);
  return b;
}
}  // namespace

std::optional<runtime::RunOn> placement(std::span<const Array> leaves, SourceLoc loc) {
  std::optional<Device> committed_gpu, committed_cpu, any_gpu;
  for (const Array& x : leaves) {
    const Buffer* b = x.valid() && !x.is_tracer() ? x.impl()->buffer.get() : nullptr;
    if (!b) continue;
    const bool gpu = b->memory == MemoryKind::device;
    if (gpu && !any_gpu) any_gpu = b->device;
    if (!b->committed) continue;
    std::optional<Device>& slot = gpu ? committed_gpu : committed_cpu;
    if (gpu && slot && !(*slot == b->device))
      throw DeviceError("DeviceError: jit at " + loc.str() + ": the arguments are committed to different devices, " +
                        slot->str() + " and " + b->device.str() + "; move them to one with fx::device_put");
    slot = b->device;
  }
  if (committed_gpu && committed_cpu)
    throw DeviceError("DeviceError: jit at " + loc.str() + ": the arguments are committed to different devices, " +
                      committed_gpu->str() + " and " + committed_cpu->str() + "; move them to one with fx::device_put");
  if (committed_gpu) return runtime::RunOn{*committed_gpu, true};
  if (committed_cpu) return std::nullopt;
  if (any_gpu) return runtime::RunOn{*any_gpu, false};
  if (const Device d = default_device(); d.memory_kind() == MemoryKind::device) return runtime::RunOn{d, false};
  return std::nullopt;
}

namespace {

// A program that holds a shard_map at its top level runs op by op: the shard_map's body is compiled
// per device and launched on its mesh (transforms/shard_map.cpp), and the few eqns around it
// (reading results, a loss on the gathered output) run as eager ops.
class InterpretedExecutable final : public runtime::Executable {
 public:
  explicit InterpretedExecutable(const Program& p)
      : Executable(in_types(p), p.out_avals(), "interpreted:" + std::to_string(p.hash()), Platform::cpu, {}), program_(p) {}
  std::vector<Array> run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>>,
                         const std::optional<runtime::RunOn>&) const override {
    check_inputs(inputs);
    return eval_program(program_, inputs.first(program_.invars.size()));
  }

 private:
  static std::vector<AbstractArray> in_types(const Program& p) {
    std::vector<AbstractArray> t;
    for (int32_t v : p.invars) t.push_back(p.type(v));
    for (int32_t v : p.constvars) t.push_back(p.type(v));
    return t;
  }
  Program program_;
};

bool holds_shard_map(const Program& p) {
  for (const Eqn& e : p.eqns)
    if (e.prim == Prim::shard_map) return true;
  return false;
}

}  // namespace

std::shared_ptr<const Compiled> compile_signature(JitCache& cache, const std::string& key, Program program,
                                                  std::shared_ptr<const void> out_like, const runtime::CompileTarget& target,
                                                  const std::vector<bool>& donated, const std::optional<runtime::RunOn>& on) {
  auto c = std::make_shared<Compiled>();
  c->out_like = std::move(out_like);
  c->on = on;
  const std::string stem = jit_dump_stem(program);
  program = jit_passes(drop_sharding_constraints(std::move(program)), stem);
  c->consts = program.consts;  // after the passes: inlined bodies may bring their own
  if (on)  // closed-over arrays go to the GPU once, not at every call
    for (Array& k : c->consts) k = device_put(k, on->device);
  if (holds_shard_map(program))
    c->executable = std::make_shared<const InterpretedExecutable>(program);
  else
    c->executable = runtime::compile(program, target, stem);  // throws CompileError; cached by fingerprint
  c->donation = donation::plan(program, donated);
  c->program = std::move(program);
  c->stem = stem;
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto [it, inserted] = cache.entries.try_emplace(key, c);
  if (inserted) ++cache.compilations;  // another thread may have compiled the same signature meanwhile
  return it->second;
}

// Read at every compile (a getenv beside a compile's milliseconds), so a process can turn it on.
bool log_compiles() {
  try {
    return toggle_setting("FLUXION_LOG_COMPILES", false);
  } catch (const Error&) {
    return false;  // the compile's check_settings() has raised it already
  }
}

// A signature as the log shows it: every type when there are few; else the count, the first three
// and the last two (a ResNet step has 160 leaves: the line would be 6 KB).
std::string shown_signature(const std::vector<std::string>& types) {
  auto join = [&](size_t begin, size_t end) {
    std::string s;
    for (size_t i = begin; i < end; ++i) s += (s.empty() ? "" : ", ") + types[i];
    return s;
  };
  if (types.size() <= 8) return "(" + join(0, types.size()) + ")";
  return "(" + std::to_string(types.size()) + " arguments: " + join(0, 3) + ", ..., " + join(types.size() - 2, types.size()) +
         ")";
}

// What changed from the last signature: the arguments whose types differ (at most three named).
std::string signature_change(const std::vector<std::string>& last, const std::vector<std::string>& now) {
  if (last.size() != now.size())
    return std::to_string(now.size()) + " arguments instead of " + std::to_string(last.size());
  std::string out;
  size_t changed = 0;
  for (size_t i = 0; i < now.size(); ++i)
    if (now[i] != last[i] && ++changed <= 3)
      out += (out.empty() ? "argument " : ", argument ") + std::to_string(i + 1) + " " + last[i] + " -> " + now[i];
  if (changed > 3) out += " and " + std::to_string(changed - 3) + " more";
  return out;
}

void log_compile(JitCache& cache, SourceLoc loc, std::span<const Array> leaves, const Compiled& c,
                 const std::optional<runtime::RunOn>& on, double trace_ms, double total_ms) {
  std::vector<std::string> now;
  for (const Array& x : leaves) now.push_back(x.aval().str());
  size_t compiled_before = 0;
  std::vector<std::string> last;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    compiled_before = cache.signatures.size();
    if (compiled_before > 0) last = cache.signatures.back();
    cache.signatures.push_back(now);
  }
  std::string why = "its first compile";
  if (compiled_before > 0) {
    why = "new argument types (it compiled " + std::to_string(compiled_before) + " signature" +
          (compiled_before == 1 ? "" : "s") + " before; the last: " + shown_signature(last) + "; changed: " +
          signature_change(last, now) + ")";
  }
  const runtime::Executable& e = *c.executable;
  std::string where = on ? on->device.str() : std::string("the CPU");
  std::string backend = e.from_disk_cache() ? "from the disk cache" : "lower " + fmt_ms(e.lower_ms()) + ", MLIR " +
                                                                         fmt_ms(e.passes_ms()) + ", LLVM " +
                                                                         fmt_ms(e.llvm_ms()) + ", link " +
                                                                         fmt_ms(e.link_ms());
  std::fprintf(stderr, "fluxion: jit(%s) at %s compiled for %s on %s: %s; %s in all (trace %s; %s)\n",
               c.stem.c_str(), loc.str().c_str(), shown_signature(now).c_str(), where.c_str(), why.c_str(), fmt_ms(total_ms).c_str(),
               fmt_ms(trace_ms).c_str(), backend.c_str());
}

namespace {

bool any_nonfinite(std::span<const Array> xs) {
  for (const Array& x : xs)
    if (has_nonfinite(x)) return true;
  return false;
}

// debug_nans: results with a NaN or Inf that no argument had. The program runs again op by op
// with every eager op checked, so the first primitive that made one raises FloatingPointError
// with its own line; if the interpreter's results are finite the compiled code alone made it.
void locate_nonfinite(const Compiled& c, std::span<const Array> args, std::span<const Array> results) {
  if (!any_nonfinite(results) || any_nonfinite(args) || any_nonfinite(c.consts)) return;
  eval_program(c.program, args);
  throw FloatingPointError("FloatingPointError: jit(" + c.stem +
                           "): the compiled function returned a NaN or Inf from finite arguments, but running it "
                           "primitive by primitive did not (a difference of the compiled code's arithmetic)");
}

}  // namespace

namespace {

std::vector<Array> run_into(const Compiled& c, std::span<const Array> args, std::span<const std::shared_ptr<Buffer>> into) {
  std::vector<Array> results;
  if (c.consts.empty()) {
    results = c.executable->run(args, into, c.on);
  } else {
    std::vector<Array> in(args.begin(), args.end());
    in.insert(in.end(), c.consts.begin(), c.consts.end());
    results = c.executable->run(in, into, c.on);
  }
  if (config::debug_nans()) locate_nonfinite(c, args, results);
  return results;
}

}  // namespace

std::vector<Array> run_compiled(const Compiled& c, std::span<const Array> args) { return run_into(c, args, {}); }

std::vector<Array> run_donating(const Compiled& c, std::span<const Array> args, const std::vector<bool>& donated,
                                const std::vector<int>& leaf_argument) {
  donation::check_live(args);
  // debug_nans re-runs the program on the arguments: they must survive the call.
  std::vector<std::shared_ptr<Buffer>> into;
  if (!config::debug_nans()) into = donation::takeable(c.donation, args, c.consts);
  try {
    std::vector<Array> results = run_into(c, args, into);
    donation::delete_donated(args, donated, leaf_argument, "jit(" + c.stem + ")");
    return results;
  } catch (...) {  // the kernel may have written into the donated buffers
    donation::delete_donated(args, donated, leaf_argument, "jit(" + c.stem + ")");
    throw;
  }
}

std::vector<bool> donated_leaves(const DonateArgnums& d, const std::vector<int>& leaf_argument, int num_args) {
  for (int a : d.argnums)
    if (a < 0 || a >= num_args)
      throw ValueError("ValueError: jit: donate_argnums names argument " + std::to_string(a) + ", but the function was "
                       "called with " + std::to_string(num_args) + " argument" + (num_args == 1 ? "" : "s"));
  std::vector<bool> r(leaf_argument.size());
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = std::find(d.argnums.begin(), d.argnums.end(), leaf_argument[i]) != d.argnums.end();
  return r;
}

}  // namespace fluxion::jit_detail
