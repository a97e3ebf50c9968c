// The generic driver over the op table: for every op, dtype and sample --
//   * eager result == host reference (within the dtype's tolerance),
//   * make_ir traces it into a program that verifies, prints, parses back to the same text, and
//     whose interpretation (fx::eval) equals the eager result exactly,
// and every error sample raises its error kind with a message that names the user's line.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "op_table.h"
#include "prims/registry.h"

namespace optable {
namespace {

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(fx::DType d, double scale) {
  switch (d) {
    case fx::DType::float16: return {1e-2 * scale, 1e-2 * scale};
    case fx::DType::bfloat16: return {1.6e-2 * scale, 1.6e-2 * scale};
    case fx::DType::float32: return {2e-6 * scale, 1e-6 * scale};
    case fx::DType::float64: return {1e-12 * scale, 1e-13 * scale};
    default: return {0, 0};
  }
}

std::string describe(const OpInfo& op, fx::DType d, const Sample& s) {
  std::ostringstream os;
  os << op.name << " [" << fx::dtype_name(d) << "] " << s.label << " (";
  for (size_t i = 0; i < s.args.size(); ++i) os << (i ? ", " : "") << s.args[i].shape.str();
  os << ")";
  return os.str();
}

// Values agree within tolerance; NaN matches NaN and infinities match exactly.
bool close(double got, double want, Tolerance t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= t.atol + t.rtol * std::fabs(want);
}

bool identical(const fx::Array& a, const fx::Array& b) {
  if (!(a.aval().same_type(b.aval()))) return false;
  HostArray x = to_host(a), y = to_host(b);
  for (size_t i = 0; i < x.data.size(); ++i)
    if (!(x.data[i] == y.data[i] || (std::isnan(x.data[i]) && std::isnan(y.data[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("op table: eager results match the host reference") {
  for (const OpInfo& op : op_table())
    for (fx::DType d : op.dtypes)
      for (const Sample& s : op.samples) {
        std::string what = describe(op, d, s);
        CAPTURE(what);
        std::vector<fx::Array> args;
        std::vector<HostArray> host_args;
        for (const HostArray& h : s.args) {
          args.push_back(to_array(h, s.fixed_dtype ? h.dtype : d));
          host_args.push_back(to_host(args.back()));  // the reference sees the rounded inputs
        }
        fx::Array out;
        try {
          out = op.op(args);
        } catch (const std::exception& e) {
          FAIL_CHECK("raised: " << std::string(e.what()));
          continue;
        }
        HostArray want = op.reference(host_args, out.dtype());
        // Integer results wrap like the dtype (references compute in exact doubles).
        if (fx::is_integer(out.dtype()))
          for (double& v : want.data)
            if (std::isfinite(v)) v = fx::Literal::of_int(int64_t(std::llround(v)), out.dtype()).as_double();
        HostArray got = to_host(out);
        REQUIRE_MESSAGE(got.shape == want.shape, "shape " << got.shape.str() << " != reference " << want.shape.str());
        Tolerance t = tolerance(out.dtype(), op.tol_scale);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < got.data.size(); ++i)
          if (!close(got.data[i], want.data[i], t) && bad++ == 0) first = i;
        CHECK_MESSAGE(bad == 0, bad << " mismatches; first at " << first << ": got " << got.data[first] << ", want "
                                    << want.data[first]);
      }
}

TEST_CASE("op table: traced programs verify, round-trip as text, and interpret like eager") {
  for (const OpInfo& op : op_table())
    for (fx::DType d : op.dtypes)
      for (const Sample& s : op.samples) {
        std::string what = describe(op, d, s);
        CAPTURE(what);
        std::vector<fx::Array> args;
        for (const HostArray& h : s.args) args.push_back(to_array(h, s.fixed_dtype ? h.dtype : d));
        fx::Array eager;
        try {
          eager = op.op(args);
        } catch (const std::exception&) {
          continue;  // reported by the reference test
        }
        fx::Program p = fx::make_ir([&](const std::vector<fx::Array>& a) { return op.op(a); })(args);
        CHECK_NOTHROW(fx::verify(p));
        std::string text = p.str();
        std::string again;
        try {
          again = fx::parse_program(text).str();
        } catch (const std::exception& e) {
          again = std::string("parse failed: ") + e.what();
        }
        CHECK_MESSAGE(again == text, "program:\n" << text);
        std::vector<fx::Array> r = fx::eval(p, args);
        REQUIRE(r.size() == 1);
        CHECK_MESSAGE(identical(r[0], eager), "fx::eval differs from eager for\n" << text);
      }
}

TEST_CASE("op table: bad inputs raise typed errors naming the user's line") {
  for (const OpInfo& op : op_table())
    for (const ErrorSample& s : op.errors) {
      std::string what = op.name + ": " + s.label;
      CAPTURE(what);
      std::vector<fx::Array> args;
      for (const HostArray& h : s.args) args.push_back(to_array(h, h.dtype));
      bool raised = false;
      try {
        op.op(args);
      } catch (const fx::Error& e) {
        raised = true;
        std::string msg = e.what();
        CHECK_MESSAGE(e.kind() == s.kind, "kind " << fx::error_kind_name(e.kind()) << ", message: " << msg);
        CHECK_MESSAGE(msg.find("op_table_") != std::string::npos, "message does not name the user's line: " << msg);
      } catch (const std::exception& e) {
        FAIL_CHECK("not a fluxion::Error: " << std::string(e.what()));
        raised = true;
      }
      CHECK_MESSAGE(raised, "no error raised");
      // The same call under tracing fails the same way (shape rules run at trace time).
      bool traced_raised = false;
      try {
        fx::make_ir([&](const std::vector<fx::Array>& a) { return op.op(a); })(args);
      } catch (const fx::Error& e) {
        traced_raised = e.kind() == s.kind;
      } catch (...) {
      }
      CHECK_MESSAGE(traced_raised, "no error of the same kind raised under make_ir");
    }
}

TEST_CASE("op table: every primitive has a shape rule and a reference kernel") {
  for (int i = 0; i < fx::kNumPrims; ++i) {
    fx::Prim p = fx::Prim(i);
    CAPTURE(fx::prim_name(p));
    CHECK((fx::rules(p).shape != nullptr));
    CHECK((fx::rules(p).kernel != nullptr));
  }
}

}  // namespace optable
