// The op table under a polymorphic jit (docs/shape_polymorphism.md): every entry whose program the
// symbolic trace serves, with each operand's leading dim of the first operand's size made the
// symbol b, compiled once and run at that size and at twice it (the operands stacked on
// themselves) against eager. The entries the trace does not serve (a param that holds the size,
// a primitive outside the symbolic list) must refuse with a ShapeError or ValueError -- never
// compile into a wrong kernel.
#include <doctest/doctest.h>

#include <sstream>

#include "ir/poly_shapes.h"
#include "op_table.h"

namespace optable {
namespace {

// "b, 4, 5" for an operand whose leading dim is `d0`, else its dims.
std::string spec_for(const fx::Array& a, int64_t d0) {
  std::string s;
  for (size_t k = 0; k < a.shape().size(); ++k) {
    if (k) s += ", ";
    s += k == 0 && a.shape()[0] == d0 ? std::string("b") : std::to_string(a.shape()[k]);
  }
  return s;
}

// The operands with every leading dim of size d0 stacked twice (a batch of 2*d0).
std::vector<fx::Array> doubled(const std::vector<fx::Array>& args, int64_t d0) {
  std::vector<fx::Array> out;
  for (const fx::Array& a : args)
    out.push_back(a.ndim() > 0 && a.shape()[0] == d0 ? fx::concatenate({a, a}, 0) : a);
  return out;
}

bool matches(const fx::Array& got, const fx::Array& want, const Tolerance& t, std::string& why) {
  if (!(got.aval() == want.aval())) {
    why = "type " + got.aval().str() + " vs eager " + want.aval().str();
    return false;
  }
  HostArray g = to_host(got), w = to_host(want);
  for (size_t i = 0; i < g.data.size(); ++i)
    if (!close(g.data[i], w.data[i], t)) {
      std::ostringstream s;
      s << "element " << i << ": jit " << g.data[i] << ", eager " << w.data[i];
      why = s.str();
      return false;
    }
  return true;
}

}  // namespace

TEST_CASE("poly op table: a polymorphic jit of every entry it serves matches eager at two sizes, one compile") {
  int served = 0, refused = 0, not_compiled = 0;
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::jit)) continue;
    const fx::DType d = std::find(op.dtypes.begin(), op.dtypes.end(), fx::float32) != op.dtypes.end() ? fx::float32 : op.dtypes.front();
    for (const Sample& s : op.samples) {
      std::vector<fx::Array> args = sample_args(s, d);
      if (args.empty() || args[0].ndim() == 0 || args[0].shape()[0] < 2) continue;
      const int64_t d0 = args[0].shape()[0];
      std::vector<fx::Array> args2 = doubled(args, d0);
      fx::Array want, want2;
      try {
        want = op.op(args);
        want2 = op.op(args2);
      } catch (const std::exception&) {
        continue;  // the doubled operands do not fit the op (or the eager test reports it)
      }
      std::ostringstream what;
      what << op.name << " [" << fx::dtype_name(d) << "] " << s.label;
      CAPTURE(what.str());
      std::vector<fx::SpecText> texts;
      for (const fx::Array& a : args) texts.emplace_back(spec_for(a, d0));
      auto jf = fx::jit([&](const std::vector<fx::Array>& a) { return op.op(a); }, fx::parse_polymorphic_shapes(texts));
      fx::Array got;
      try {
        got = jf(args);
      } catch (const fx::ShapeError&) {
        ++refused;  // not served over a symbolic dim: refused while tracing
        continue;
      } catch (const fx::ValueError&) {
        ++refused;
        continue;
      } catch (const fx::CompileError& e) {  // a lowering that says it needs static sizes
        CHECK_MESSAGE(std::string(e.what()).find("symbolic") != std::string::npos, e.what());
        ++not_compiled;
        continue;
      } catch (const std::exception& e) {
        FAIL_CHECK("polymorphic jit raised: " << e.what());
        continue;
      }
      ++served;
      const Tolerance t = op.tolerance(Check::jit, want.dtype());
      std::string why;
      CHECK_MESSAGE(matches(got, want, t, why), why);
      fx::Array got2;
      try {
        got2 = jf(args2);
      } catch (const std::exception& e) {
        FAIL_CHECK("polymorphic jit at 2x the size raised: " << e.what());
        continue;
      }
      CHECK_MESSAGE(matches(got2, want2, t, why), "at 2x the size: " << why);
      CHECK(jf.compilations() == 1);
    }
  }
  MESSAGE("poly op table: " << served << " samples served by one polymorphic compile, " << refused
                            << " refused while tracing, " << not_compiled << " refused by the lowering");
  CHECK(served > 500);
  CHECK(not_compiled == 0);  // every lowering takes symbolic extents now (docs/shape_polymorphism.md)
}

}  // namespace optable
