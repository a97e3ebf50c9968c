// Focused tests of the dot_general primitive (prims/dot_general.cpp): every layout of its dimension
// numbers in every dtype against its definition (a loop over every index), the Eigen path, integer
// wrap-around and preferred_element_type, tracing, and malformed dimension numbers. The products the
// API builds on it are op-table entries (tests/op_table_linalg.cpp).
#include <doctest/doctest.h>

#include <fluxion.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "op_table.h"

namespace {
namespace fx = fluxion;
using optable::HostArray;

fx::Array dot_general(const fx::Array& a, const fx::Array& b, fx::IntList lc, fx::IntList rc, fx::IntList lb,
                      fx::IntList rb, std::optional<fx::DType> preferred = {},
                      fx::SourceLoc loc = std::source_location::current()) {
  fx::Params p{{"lhs_contracting", lc}, {"rhs_contracting", rc}, {"lhs_batch", lb}, {"rhs_batch", rb}};
  if (preferred) p.set("preferred_element_type", *preferred);
  return fx::bind1(fx::Prim::dot_general, {a, b}, p, loc);
}

// dot_general by its definition: for every output index (batch, lhs free, rhs free) the sum over
// every contracting index of lhs * rhs.
HostArray dot_general_ref(const HostArray& a, const HostArray& b, const fx::IntList& lc, const fx::IntList& rc,
                          const fx::IntList& lb, const fx::IntList& rb) {
  auto free_dims = [](int rank, const fx::IntList& x, const fx::IntList& y) {
    fx::IntList f;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(x.begin(), x.end(), d) == x.end() && std::find(y.begin(), y.end(), d) == y.end()) f.push_back(d);
    return f;
  };
  fx::IntList af = free_dims(a.shape.rank(), lc, lb), bf = free_dims(b.shape.rank(), rc, rb);
  fx::Shape out_shape, contract_shape;
  for (int64_t d : lb) out_shape.push_back(a.shape[size_t(d)]);
  for (int64_t d : af) out_shape.push_back(a.shape[size_t(d)]);
  for (int64_t d : bf) out_shape.push_back(b.shape[size_t(d)]);
  for (int64_t d : lc) contract_shape.push_back(a.shape[size_t(d)]);
  HostArray out{out_shape, std::vector<double>(size_t(out_shape.numel()), 0.0), fx::float64};
  for (int64_t o = 0; o < out_shape.numel(); ++o) {
    std::vector<int64_t> oi(out_shape.size());
    for (int64_t r = o, d = out_shape.rank() - 1; d >= 0; --d) {
      oi[size_t(d)] = r % out_shape[size_t(d)];
      r /= out_shape[size_t(d)];
    }
    std::vector<int64_t> ai(a.shape.size()), bi(b.shape.size());
    size_t at = 0;
    for (size_t i = 0; i < lb.size(); ++i, ++at) ai[size_t(lb[i])] = bi[size_t(rb[i])] = oi[at];
    for (int64_t d : af) ai[size_t(d)] = oi[at++];
    for (int64_t d : bf) bi[size_t(d)] = oi[at++];
    double s = 0;
    for (int64_t c = 0; c < contract_shape.numel(); ++c) {
      for (int64_t r = c, d = contract_shape.rank() - 1; d >= 0; --d) {
        ai[size_t(lc[size_t(d)])] = bi[size_t(rc[size_t(d)])] = r % contract_shape[size_t(d)];
        r /= contract_shape[size_t(d)];
      }
      int64_t fa = 0, fb = 0;
      for (size_t d = 0; d < ai.size(); ++d) fa = fa * a.shape[d] + ai[d];
      for (size_t d = 0; d < bi.size(); ++d) fb = fb * b.shape[d] + bi[d];
      s += a.data[size_t(fa)] * b.data[size_t(fb)];
    }
    out.data[size_t(o)] = s;
  }
  return out;
}

// Host values as a device array of `dtype` (astype from float64: unsigned dtypes saturate negative
// values to 0), and back.
fx::Array device_array(const HostArray& h, fx::DType dtype) {
  return fx::astype(fx::detail::array_from_host(h.data.data(), fx::float64, h.shape, h.data.size(), {}), dtype);
}
HostArray host_array(const fx::Array& a) { return {a.shape(), a.to_vector<double>(), a.dtype()}; }
// The same element values rounded to `dtype` (what the kernel actually sees).
HostArray rounded(const HostArray& h, fx::DType dtype) { return host_array(device_array(h, dtype)); }

// Elementwise agreement within `tol` times the largest magnitude of `want` (at least 1): the error
// bound of a sum of products. 0 means exact.
void check_close(const HostArray& got, const HostArray& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape == want.shape);
  double scale = 1;
  for (double w : want.data) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.data.size(); ++i) {
    INFO("element " << i);
    CHECK(optable::close(got.data[i], want.data[i], optable::Tolerance{0, tol * scale}));
  }
}

// The bound of a product in dtype d: a few roundings of the accumulator, relative to the largest
// magnitude (16-bit floats accumulate in float32 and round once).
double product_tolerance(fx::DType d) {
  switch (d) {
    case fx::DType::float16: return 4e-3;
    case fx::DType::bfloat16: return 3e-2;
    case fx::DType::float32: return 2e-6;
    case fx::DType::float64: return 1e-13;
    default: return 0;
  }
}

struct DotCase {
  fx::Shape a, b;
  fx::IntList lc, rc, lb, rb;
  const char* label;
};

// Layouts that take every path of the kernel: operands read in place as (M,K)/(K,M) x (K,N)/(N,K),
// operands that must be permuted, batch dims in odd places, several contracting dims, no
// contracting dims (an outer product), vectors and scalars.
const std::vector<DotCase> kDotCases = {
    {{3, 4}, {4, 5}, {1}, {0}, {}, {}, "matmul"},
    {{4, 3}, {4, 5}, {0}, {0}, {}, {}, "lhs transposed"},
    {{3, 4}, {5, 4}, {1}, {1}, {}, {}, "rhs transposed"},
    {{4, 3}, {5, 4}, {0}, {1}, {}, {}, "both transposed"},
    {{2, 3, 4}, {2, 4, 5}, {2}, {1}, {0}, {0}, "batched matmul"},
    {{3, 2, 4}, {4, 5, 2}, {2}, {0}, {1}, {2}, "batch dims in the middle and last"},
    {{2, 3, 4, 5}, {5, 6, 2, 3}, {1, 3}, {3, 0}, {0}, {2}, "two contracting dims, permuted"},
    {{3, 4}, {2, 5}, {}, {}, {}, {}, "outer product"},
    {{6}, {6}, {0}, {0}, {}, {}, "inner product"},
    {{}, {2, 3}, {}, {}, {}, {}, "scalar times matrix"},
    {{2, 3, 4}, {3, 2, 4}, {1, 2}, {0, 2}, {0}, {1}, "batch only after contracting"},
    {{3, 0}, {0, 4}, {1}, {0}, {}, {}, "empty contraction gives zeros"},
    {{0, 4}, {4, 2}, {1}, {0}, {}, {}, "empty output"},
};

}  // namespace

TEST_CASE("dot_general matches its definition for every layout and dtype") {
  for (const DotCase& c : kDotCases) {
    for (fx::DType dt : optable::kNumericTypes) {
      INFO(std::string(c.label) << " in " << fx::dtype_name(dt));
      // (Unsigned dtypes saturate the negative values to 0 on conversion, so read the inputs back.)
      HostArray a = rounded(optable::small_ints(c.a, 7), dt), b = rounded(optable::small_ints(c.b, 8), dt);
      fx::Array out = dot_general(device_array(a, dt), device_array(b, dt), c.lc, c.rc, c.lb, c.rb);
      CHECK(out.dtype() == dt);
      HostArray want = dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb);
      check_close(host_array(out), want, 0, c.label);
    }
  }
}

TEST_CASE("dot_general on real values: the Eigen path and the 16-bit floats") {
  for (const DotCase& c : kDotCases) {
    for (fx::DType dt : {fx::float32, fx::float64, fx::float16, fx::bfloat16}) {
      INFO(std::string(c.label) << " in " << fx::dtype_name(dt));
      HostArray a = rounded(optable::reals(c.a, 3), dt), b = rounded(optable::reals(c.b, 4), dt);
      fx::Array out = dot_general(device_array(a, dt), device_array(b, dt), c.lc, c.rc, c.lb, c.rb);
      check_close(host_array(out), dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb),
                           product_tolerance(dt) * 4, c.label);
    }
  }
  // Big enough for Eigen's blocked kernels, in each operand layout.
  for (const DotCase& c : std::vector<DotCase>{{{67, 130}, {130, 45}, {1}, {0}, {}, {}, "large"},
                                               {{130, 67}, {45, 130}, {0}, {1}, {}, {}, "large transposed"},
                                               {{3, 40, 70}, {70, 3, 33}, {2}, {0}, {0}, {1}, "large permuted"}}) {
    for (fx::DType dt : {fx::float32, fx::float64}) {
      HostArray a = optable::reals(c.a, 5), b = optable::reals(c.b, 6);
      a = rounded(a, dt), b = rounded(b, dt);
      fx::Array out = dot_general(device_array(a, dt), device_array(b, dt), c.lc, c.rc, c.lb, c.rb);
      check_close(host_array(out), dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb),
                           dt == fx::float32 ? 1e-5 : 1e-13, c.label);
    }
  }
}

TEST_CASE("dot_general integer products wrap like the integer type; preferred_element_type widens") {
  HostArray a = HostArray{fx::Shape{2, 2}, {100, 100, -128, 127}}, b = HostArray{fx::Shape{2, 1}, {100, 7}};
  fx::Array ai = device_array(a, fx::int8), bi = device_array(b, fx::int8);
  fx::Array wrapped = dot_general(ai, bi, {1}, {0}, {}, {});
  CHECK(wrapped.dtype() == fx::int8);
  CHECK(wrapped.to_vector<int>() == std::vector<int>{int(int8_t(10700)), int(int8_t(-12800 + 889))});
  fx::Array wide = dot_general(ai, bi, {1}, {0}, {}, {}, fx::int32);
  CHECK(wide.dtype() == fx::int32);
  CHECK(wide.to_vector<int>() == std::vector<int>{10700, -11911});
  // float16 operands accumulate in float32: 2048 + 1 + ... would stall in float16 arithmetic.
  HostArray ones = HostArray{fx::Shape{1, 9}, {2048, 1, 1, 1, 1, 1, 1, 1, 1}};
  HostArray col = HostArray{fx::Shape{9, 1}, std::vector<double>(9, 1.0)};
  fx::Array h = dot_general(device_array(ones, fx::float16), device_array(col, fx::float16), {1},
                            {0}, {}, {}, fx::float32);
  CHECK(h.dtype() == fx::float32);
  CHECK(h.item<float>() == 2056.f);
}

TEST_CASE("dot_general under make_ir: one eqn with its params, and eval agrees with eager") {
  const DotCase& c = kDotCases[6];
  HostArray a = optable::small_ints(c.a, 11), b = optable::small_ints(c.b, 12);
  fx::Array x = device_array(a, fx::float32), y = device_array(b, fx::float32);
  auto f = [&](const fx::Array& p, const fx::Array& q) { return dot_general(p, q, c.lc, c.rc, c.lb, c.rb); };
  fx::Program prog = fx::make_ir(f)(x, y);
  REQUIRE(prog.eqns.size() == 1);
  CHECK(prog.eqns[0].prim == fx::Prim::dot_general);
  std::ostringstream os;
  os << prog;
  INFO(os.str());
  CHECK(os.str().find("dot_general[") != std::string::npos);
  CHECK(os.str().find("lhs_contracting=(1, 3)") != std::string::npos);
  CHECK(os.str().find("f32[2,4,6]") != std::string::npos);
  std::vector<fx::Array> r = fx::eval(prog, {x, y});
  check_close(host_array(r[0]), dot_general_ref(a, b, c.lc, c.rc, c.lb, c.rb), 0, "eval");
}

TEST_CASE("dot_general rejects malformed dimension numbers with typed errors") {
  fx::Array a = fx::zeros({2, 3, 4}), b = fx::zeros({2, 4, 5});
  auto msg_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const fx::Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  struct Bad {
    fx::IntList lc, rc, lb, rb;
    const char* expect;
  };
  for (const Bad& bad : std::vector<Bad>{{{2}, {1, 2}, {0}, {0}, "different lengths"},
                                         {{2}, {1}, {0}, {}, "different lengths"},
                                         {{3}, {1}, {0}, {0}, "out of range"},
                                         {{-1}, {1}, {0}, {0}, "out of range"},
                                         {{0}, {0}, {0}, {0}, "more than once"},
                                         {{1}, {1}, {0}, {0}, "contracting dimensions differ"},
                                         {{2}, {1}, {1}, {0}, "batch dimensions differ"}}) {
    std::string m = msg_of([&] { dot_general(a, b, bad.lc, bad.rc, bad.lb, bad.rb); });
    INFO(m);
    CHECK(m.rfind("ShapeError: dot_general(f32[2,3,4], f32[2,4,5]) at test_dot_general.cpp:", 0) == 0);
    CHECK(m.find(bad.expect) != std::string::npos);
  }
  CHECK_THROWS_AS(dot_general(a, fx::astype(b, fx::float64), {2}, {1}, {0}, {0}), fx::TypeError);
  CHECK_THROWS_AS(dot_general(a, b, {2}, {1}, {0}, {0}, fx::int32), fx::TypeError);
  // Validation happens when tracing, too.
  auto traced = [&](const fx::Array& p) { return dot_general(p, b, {1}, {1}, {0}, {0}); };
  CHECK_THROWS_AS(fx::make_ir(traced)(a), fx::ShapeError);
}
