#include "transforms/jit.h"

#include "transforms/jit_passes.h"

namespace fluxion::jit_detail {

std::shared_ptr<const Compiled> compile_signature(JitCache& cache, const std::string& key, Program program,
                                                  std::shared_ptr<const void> out_like, const runtime::Device& target) {
  auto c = std::make_shared<Compiled>();
  c->out_like = std::move(out_like);
  const std::string stem = jit_dump_stem(program);
  program = jit_passes(std::move(program), stem);
  c->consts = program.consts;  // after the passes: inlined bodies may bring their own
  c->executable = runtime::compile(program, target, stem);  // throws CompileError; cached by fingerprint
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
