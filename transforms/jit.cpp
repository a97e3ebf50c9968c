#include "transforms/jit.h"

#include "transforms/inline.h"
#include "transforms/scan_hoist.h"

namespace fluxion::jit_detail {

std::shared_ptr<const Compiled> compile_signature(JitCache& cache, const std::string& key, Program program,
                                                  std::shared_ptr<const void> out_like) {
  auto c = std::make_shared<Compiled>();
  c->out_like = std::move(out_like);
  // Custom-derivative and checkpoint wrappers have done their job once the program is final: their
  // bodies are compiled in place. Then work that needs no loop leaves the scans (scan_hoist.h).
  program = hoist_scan_invariants(inline_calls(std::move(program)));
  c->consts = program.consts;  // after the rewrites: inlined bodies may bring their own
  c->executable = runtime::compile(program);  // throws CompileError; the runtime caches by fingerprint
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto [it, inserted] = cache.entries.try_emplace(key, c);
  if (inserted) ++cache.compilations;  // another thread may have compiled the same signature meanwhile
  return it->second;
}

std::vector<Array> run_compiled(const Compiled& c, std::span<const Array> args) {
  if (c.consts.empty()) return c.executable->run(args);
  std::vector<Array> in(args.begin(), args.end());
  in.insert(in.end(), c.consts.begin(), c.consts.end());
  return c.executable->run(in);
}

}  // namespace fluxion::jit_detail
