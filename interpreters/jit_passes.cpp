#include "interpreters/jit_passes.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ir/profiler.h"
#include "ir/error.h"
#include "interpreters/fold_transposed_products.h"
#include "interpreters/inline.h"
#include "interpreters/scan_hoist.h"
#include "interpreters/simplify.h"

namespace fluxion {

const std::vector<JitPass>& jit_pass_list() {
  // simplify runs first, while checkpoint eqns still hold their recomputations as sub-programs:
  // its CSE, which sees only the top level, cannot merge a recomputation into the forward value
  // (inline_calls inlines them after). A traced program, a grad in particular, carries what the
  // transforms left: tangents that reach no output (a min's through its argmin indicator), the
  // same broadcast or comparison made twice, products with splats of 1.
  static const std::vector<JitPass> passes = {
      {"simplify", [](Program p) { return simplify(std::move(p)); }},
      {"inline_calls", &inline_calls},
      {"hoist_scan_invariants", &hoist_scan_invariants},
      {"fold_transposed_products", &fold_transposed_products},
  };
  return passes;
}

namespace {
void dump(const std::string& dir, const std::string& name, const Program& p) {
  std::ofstream(dir + "/" + name + ".program.txt") << p.str();
}
}  // namespace

Program jit_passes(Program p, const std::string& dump_stem) {
  const char* dir = std::getenv("FLUXION_DUMP");
  if (dir) {
    std::error_code ignored;  // an unwritable directory shows as missing dumps, never as a failed jit
    std::filesystem::create_directories(dir, ignored);
  }
  if (dir) dump(dir, dump_stem + ".0-traced", p);
  int k = 0;
  for (const JitPass& pass : jit_pass_list()) {
    profiler::Scope prof("transform", [&] { return std::string("jit pass ") + pass.name; });
    p = pass.run(std::move(p));
    try {
      verify(p);
    } catch (const Error& e) {
      throw std::logic_error(std::string("jit pass ") + pass.name + " produced an invalid program: " + e.what());
    }
    if (dir) dump(dir, dump_stem + "." + std::to_string(++k) + "-" + pass.name, p);
  }
  return p;
}

std::string jit_dump_stem(const Program& p) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016zx", p.hash());
  for (const Eqn& e : p.eqns) {
    if (!e.loc.known()) continue;
    std::string where = e.loc.str();  // "file.cpp:12"
    for (char& c : where)
      if (c == ':' || c == '/' || c == ' ') c = '-';
    return "jit-" + where + "-" + hash;
  }
  return std::string("jit-") + hash;
}

}  // namespace fluxion
