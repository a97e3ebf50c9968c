// The op table's reference driver: every entry, dtype and sample evaluated eagerly against its host
// reference (which sees the operands rounded to the dtype, as the op does), element by element,
// within the entry's eager tolerance; the result's dtype too where the reference gives it.
#include <doctest/doctest.h>

#include <cmath>

#include "op_table.h"

namespace optable {

TEST_CASE("eager op table: results match the host reference, element by element") {
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::eager)) continue;
    for (fx::DType d : op.dtypes)
      for (const Sample& s : op.samples) {
        const std::string what = describe(op, d, s);
        CAPTURE(what);
        std::vector<fx::Array> args = sample_args(s, d);
        std::vector<HostArray> host_args;
        for (const fx::Array& a : args) host_args.push_back(to_host(a));  // the values the op sees
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
        if (op.reference_dtype)
          CHECK_MESSAGE(out.dtype() == want.dtype,
                        "dtype " << fx::dtype_name(out.dtype()) << " != reference " << fx::dtype_name(want.dtype));
        const Tolerance t = op.tolerance(Check::eager, out.dtype());
        for (size_t i = 0; i < got.data.size(); ++i)
          CHECK_MESSAGE(close(got.data[i], want.data[i], t),
                        "element " << i << ": got " << got.data[i] << ", want " << want.data[i]);
      }
  }
}

}  // namespace optable
