// Reductions under jit in the forms lower_reduce.cpp gives them: several innermost dims merged into
// one row, the innermost dims and dims further out in two stages, full reductions.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <tuple>
#include <vector>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::max_abs_diff;

// Reductions over several innermost dims run on the merged row; over the innermost dims and dims
// further out (batch-norm statistics: NCHW over N, H, W) as a row reduction and then the rest
// (lowering/lower_reduce.cpp). Every form, with a fused producer, against eager.
TEST_CASE("jit: reductions over merged innermost dims and in two stages match eager") {
  struct Case {
    fx::Shape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases{{{6, 5, 4, 3}, {2, 3}}, {{6, 5, 4, 3}, {0, 2, 3}}, {{6, 5, 4, 3}, {0, 1, 3}},
                                {{6, 5, 4, 3}, {1, 2, 3}}, {{3, 7, 33}, {0, 2}},      {{2, 3, 4, 5, 6}, {0, 1, 3, 4}},
                                {{6, 5, 4, 3}, {0, 2}},    {{5, 0, 3}, {0, 2}},       {{4, 6, 8}, {0, 1, 2}}};
  for (const Case& k : cases) {
    CAPTURE(k.shape.str());
    fx::Array x = fx::sin(fx::reshape(fx::linspace(-9.0, 9.0, k.shape.numel(), fx::float32), k.shape));
    fx::Axes axes(k.axes);
    auto f = [&](const fx::Array& x) {
      fx::Array y = x * x - 0.25f;
      return std::make_tuple(fx::sum(y, axes), fx::max(y, axes), fx::min(y, axes),
                             fx::sum(fx::astype(y, fx::bfloat16), axes), fx::sum(fx::astype(y * 8.f, fx::int32), axes));
    };
    auto [s, mx, mn, sb, si] = fx::jit(f)(x);
    auto [s0, mx0, mn0, sb0, si0] = f(x);
    CHECK(max_abs_diff(s, s0) <= 1e-5 * double(k.shape.numel()));
    CHECK(mx.to_vector<float>() == mx0.to_vector<float>());
    CHECK(mn.to_vector<float>() == mn0.to_vector<float>());
    CHECK(max_abs_diff(sb, sb0) <= 1e-2 * (1 + double(k.shape.numel())));
    CHECK(si.to_vector<int32_t>() == si0.to_vector<int32_t>());
  }
}

