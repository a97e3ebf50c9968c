// The op table under fx::jit: every entry in every dtype compiled (MLIR -> LLVM) and compared with
// the eager result within the entry's jit tolerance. A program that holds a primitive without a
// lowering must raise CompileError naming it; which primitives those are, their records say
// (eager_only: tests/test_registry.cpp). Complex programs, FFTs included, are compiled like real
// ones.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "lowering/compile.h"
#include "op_table.h"

namespace optable {
namespace {

// The first primitive of p without a lowering, or nullptr.
const fx::Eqn* unlowered(const fx::Program& p) {
  for (const fx::Eqn& e : p.eqns)
    if (!fx::lowering::has_lowering(e.prim)) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("jit op table: compiled results match eager for every op, dtype and sample") {
  std::set<std::string> not_lowered;
  int compiled = 0;
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::jit)) continue;
    for (fx::DType d : op.dtypes)
      for (const Sample& s : op.samples) {
        // Each call compiles (~15 ms): every dtype runs the first sample, and the float32 and
        // int32 runs (or the first dtype's) take every sample.
        const bool full = d == fx::float32 || d == fx::int32 || d == op.dtypes.front();
        if (&s != &op.samples.front() && !full) continue;
        std::ostringstream what;
        what << op.name << " [" << fx::dtype_name(d) << "] " << s.label;
        CAPTURE(what.str());
        std::vector<fx::Array> args = sample_args(s, d);
        fx::Array eager;
        try {
          eager = op.op(args);
        } catch (const std::exception&) {
          continue;  // reported by the eager op-table test
        }
        fx::Program p = fx::make_ir([&](const std::vector<fx::Array>& a) { return op.op(a); })(args);
        auto jf = fx::jit([&](const std::vector<fx::Array>& a) { return op.op(a); });
        if (const fx::Eqn* e = unlowered(p)) {
          std::string name(fx::prim_name(e->prim));
          not_lowered.insert(name);
          try {
            jf(args);
            FAIL_CHECK("no CompileError for a program holding " << name);
          } catch (const fx::CompileError& err) {
            CHECK_MESSAGE(std::string(err.what()).find("'" + name + "'") != std::string::npos, err.what());
          }
          continue;
        }
        fx::Array got;
        try {
          got = jf(args);
        } catch (const std::exception& err) {
          FAIL_CHECK("jit raised: " << std::string(err.what()) << "\nprogram:\n" << p.str());
          continue;
        }
        ++compiled;
        REQUIRE(got.aval() == eager.aval());
        HostArray g = to_host(got), w = to_host(eager);
        const Tolerance t = op.tolerance(Check::jit, eager.dtype());
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < g.data.size(); ++i)
          if (!close(g.data[i], w.data[i], t) && bad++ == 0) first = i;
        CHECK_MESSAGE(bad == 0, bad << " mismatches; first at " << first << ": jit " << g.data[first] << ", eager "
                                    << w.data[first] << "\nprogram:\n"
                                    << p.str());
      }
  }
  std::string missing;
  for (const std::string& n : not_lowered) missing += n + " ";
  MESSAGE("compiled " << compiled << " op-table programs; ops left eager-only: " << missing);
}

}  // namespace optable
