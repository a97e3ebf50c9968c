// The op table under make_ir: every entry, dtype and sample traced into a program that verifies,
// prints and parses back to the same text, and whose interpretation (fx::eval) equals the eager
// result exactly.
#include <doctest/doctest.h>

#include "op_table.h"

namespace optable {

TEST_CASE("trace op table: programs verify, round-trip as text, and interpret like eager") {
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::trace)) continue;
    for (fx::DType d : op.dtypes)
      for (const Sample& s : op.samples) {
        const std::string what = describe(op, d, s);
        CAPTURE(what);
        std::vector<fx::Array> args = sample_args(s, d);
        fx::Array eager;
        try {
          eager = op.op(args);
        } catch (const std::exception&) {
          continue;  // reported by the eager driver
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
}

}  // namespace optable
