// vmap driven by the op table: for every entry and sample, each operand's batch dimension is placed
// at the front, in the middle, at the end, or left unbatched, with batch sizes 1 and 3; vmap of the op
// must equal stacking the op over the batch elements. The batched program must verify.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "op_table.h"

namespace optable {
namespace {

// Operand i's placement in pattern k: kNotMapped or an axis in [0, rank].
int64_t placement(size_t i, size_t k, int rank, size_t n_operands) {
  switch (k) {
    case 0: return 0;                                 // all at the front
    case 1: return rank;                              // all at the end
    case 2: return i == 0 ? fx::kNotMapped : 0;       // first operand unbatched
    case 3: return i + 1 == n_operands ? fx::kNotMapped : rank / 2;  // last unbatched, others in the middle
    default: return int64_t((i + k) % size_t(rank + 1));            // mixed
  }
}
constexpr size_t kPatterns = 5;

// B different variants of an operand: the sample itself for b == 0, then shifted/permuted values,
// so the batch elements differ (index operands keep their range: they are rotated instead).
HostArray variant(const HostArray& h, size_t b) {
  HostArray v = h;
  if (v.data.empty() || b == 0) return v;
  std::rotate(v.data.begin(), v.data.begin() + long(b % v.data.size()), v.data.end());
  return v;
}

fx::Array stack_at(const std::vector<fx::Array>& xs, int64_t axis) { return fx::stack(xs, axis); }

// Equal shapes and dtypes, and every element within the tolerance.
bool agree(const fx::Array& a, const fx::Array& b, Tolerance t) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
  HostArray x = to_host(a), y = to_host(b);
  for (size_t i = 0; i < x.data.size(); ++i)
    if (!close(x.data[i], y.data[i], t)) return false;
  return true;
}

}  // namespace

TEST_CASE("vmap op table: vmap(op) equals op stacked over the batch, for every batch placement") {
  size_t cases = 0;
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::vmap)) continue;
    const fx::DType d = op.dtypes.front();
    for (const Sample& s : op.samples) {
      for (int64_t B : {int64_t(1), int64_t(3)}) {
        for (size_t k = 0; k < kPatterns; ++k) {
          std::vector<fx::Array> batched;
          std::vector<fx::Axis> axes;
          std::vector<std::vector<fx::Array>> per_example(static_cast<size_t>(B));
          bool any = false;
          for (size_t i = 0; i < s.args.size(); ++i) {
            const int rank = s.args[i].shape.rank();
            int64_t dim = placement(i, k, rank, s.args.size());
            fx::DType di = s.fixed_dtype ? s.args[i].dtype : d;
            std::vector<fx::Array> items;
            for (int64_t b = 0; b < B; ++b) items.push_back(to_array(dim == fx::kNotMapped ? s.args[i] : variant(s.args[i], size_t(b)), di));
            for (int64_t b = 0; b < B; ++b) per_example[size_t(b)].push_back(items[size_t(b)]);
            if (dim == fx::kNotMapped) {
              batched.push_back(items[0]);
              axes.push_back(fx::none);
            } else {
              batched.push_back(stack_at(items, dim));
              axes.push_back(dim);
              any = true;
            }
          }
          if (!any) continue;
          std::ostringstream what;
          what << op.name << " [" << fx::dtype_name(d) << "] " << s.label << " B=" << B << " pattern " << k;
          CAPTURE(what.str());
          std::vector<fx::Array> want_items;
          try {
            for (int64_t b = 0; b < B; ++b) want_items.push_back(op.op(per_example[size_t(b)]));
          } catch (const fx::Error&) {
            continue;  // a variant outside the op's domain (e.g. a reshape of rotated data is still fine)
          }
          fx::Array want = fx::stack(want_items, 0);
          auto f = [&](const std::vector<fx::Array>& a) { return op.op(a); };
          fx::Array got;
          // The whole operand list is one tree argument: give its per-leaf axes.
          fx::LeafAxes leaf;
          leaf.axes = axes;
          try {
            got = fx::vmap(f, fx::InAxes{{leaf}})(batched);
          } catch (const std::exception& e) {
            FAIL_CHECK("vmap raised: " << std::string(e.what()));
            continue;
          }
          ++cases;
          CHECK_MESSAGE(agree(got, want, op.tolerance(Check::vmap, want.dtype())), "vmap differs from the loop");
          fx::Program p = fx::make_ir(fx::vmap(f, fx::InAxes{{leaf}}))(batched);
          CHECK_NOTHROW(fx::verify(p));
        }
      }
    }
  }
  MESSAGE("vmap op table: " << cases << " batched cases checked");
}

}  // namespace optable
