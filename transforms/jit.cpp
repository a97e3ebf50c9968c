#include "transforms/jit.h"

#include "ir/debug_checks.h"
#include "transforms/jit_passes.h"

namespace fluxion::jit_detail {

// The lowering has no complex types yet (docs/linalg.md "Complex numbers"): a program with a complex
// value anywhere, its sub-programs included, is evaluated by the reference kernels instead -- the
// same results as eager execution, without fusion.
bool uses_complex(const Program& p) {
  for (const AbstractArray& t : p.types)
    if (is_complex(t.dtype)) return true;
  for (const Eqn& e : p.eqns)
    for (const auto& [key, value] : e.params.entries()) {
      if (const ProgramRef* sub = std::get_if<ProgramRef>(&value); sub && uses_complex(**sub)) return true;
      if (const ProgramList* subs = std::get_if<ProgramList>(&value))
        for (const ProgramRef& q : *subs)
          if (uses_complex(*q)) return true;
    }
  return false;
}

std::shared_ptr<const Compiled> compile_signature(JitCache& cache, const std::string& key, Program program,
                                                  std::shared_ptr<const void> out_like, const runtime::Device& target) {
  auto c = std::make_shared<Compiled>();
  c->out_like = std::move(out_like);
  const std::string stem = jit_dump_stem(program);
  program = jit_passes(std::move(program), stem);
  c->consts = program.consts;  // after the passes: inlined bodies may bring their own
  // Complex values are not lowered yet: such a program runs in the interpreter (see uses_complex).
  if (!uses_complex(program)) c->executable = runtime::compile(program, target, stem);  // throws CompileError
  c->program = std::move(program);
  c->stem = stem;
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto [it, inserted] = cache.entries.try_emplace(key, c);
  if (inserted) ++cache.compilations;  // another thread may have compiled the same signature meanwhile
  return it->second;
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

std::vector<Array> run_compiled(const Compiled& c, std::span<const Array> args) {
  std::vector<Array> results;
  if (!c.executable) {  // interpreted (uses_complex); the program binds its own consts
    results = eval_program(c.program, args);
  } else if (c.consts.empty()) {
    results = c.executable->run(args);
  } else {
    std::vector<Array> in(args.begin(), args.end());
    in.insert(in.end(), c.consts.begin(), c.consts.end());
    results = c.executable->run(in);
  }
  if (config::debug_nans()) locate_nonfinite(c, args, results);
  return results;
}

}  // namespace fluxion::jit_detail
