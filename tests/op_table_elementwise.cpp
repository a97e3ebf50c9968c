// Op-table entries for elementwise math, comparisons, where/clip and astype.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_table.h"

namespace optable {
namespace {

using Args = std::vector<fx::Array>;

// Rounds a double to what an integer dtype holds (wrapping), for references of integer ops.
double wrap(double v, fx::DType d) {
  if (fx::is_float(d) || d == fx::bool_) return v;
  return fx::Literal::of_int(int64_t(v), d).as_double();
}

HostArray unary_ref(const std::vector<HostArray>& a, fx::DType out, double (*f)(double)) {
  HostArray r = map_ref(a, [&](const std::vector<double>& x) { return f(x[0]); });
  for (double& v : r.data) v = wrap(v, out);
  return r;
}

std::vector<Sample> float_samples(double lo, double hi) {
  return {{{uniform({}, lo, hi, 1)}, "scalar"},
          {{uniform({7}, lo, hi, 2)}, "vector"},
          {{uniform({2, 3}, lo, hi, 3)}, "matrix"},
          {{uniform({0, 3}, lo, hi, 4)}, "empty"}};
}

void unary_float(std::vector<OpInfo>& t, std::string name, fx::Array (*op)(const fx::ArrayLike&, fx::SourceLoc),
                 double (*ref)(double), double lo, double hi, double tol_scale = 1.0) {
  OpInfo o;
  o.name = name;
  o.op = [op](const Args& a) { return op(a[0], std::source_location::current()); };
  o.reference = [ref](const std::vector<HostArray>& a, fx::DType d) { return unary_ref(a, d, ref); };
  o.samples = float_samples(lo, hi);
  o.dtypes = kFloatTypes;
  o.tol_scale = tol_scale;
  t.push_back(std::move(o));
}

struct BinaryCase {
  std::string name;
  std::function<fx::Array(const fx::Array&, const fx::Array&)> op;
  std::function<double(double, double, fx::DType)> ref;
  std::vector<fx::DType> dtypes;
  double lo, hi;
  bool nonzero_rhs = false;
};

std::vector<Sample> binary_samples(double lo, double hi, bool nonzero_rhs) {
  auto rhs = [&](fx::Shape s, uint64_t seed) {
    HostArray h = uniform(s, lo, hi, seed);
    if (nonzero_rhs)
      for (double& v : h.data)
        if (std::fabs(v) < 1) v = v < 0 ? -1.5 : 1.5;
    return h;
  };
  return {{{uniform({}, lo, hi, 5), rhs({}, 6)}, "scalars"},
          {{uniform({6}, lo, hi, 7), rhs({6}, 8)}, "same shape"},
          {{uniform({2, 3}, lo, hi, 9), rhs({3}, 10)}, "broadcast row"},
          {{uniform({2, 1}, lo, hi, 11), rhs({1, 3}, 12)}, "outer broadcast"},
          {{uniform({}, lo, hi, 13), rhs({2, 2}, 14)}, "scalar lhs"},
          {{uniform({4, 0}, lo, hi, 15), rhs({0}, 16)}, "empty"}};
}

void binary(std::vector<OpInfo>& t, BinaryCase c) {
  OpInfo o;
  o.name = c.name;
  auto op = c.op;
  o.op = [op](const Args& a) { return op(a[0], a[1]); };
  auto ref = c.ref;
  o.reference = [ref](const std::vector<HostArray>& a, fx::DType d) {
    return map_ref(a, [&](const std::vector<double>& x) { return wrap(ref(x[0], x[1], d), d); });
  };
  // Integer dtypes see the samples rounded toward zero; keep them in range for uint8/int8.
  o.samples = binary_samples(c.lo, c.hi, c.nonzero_rhs);
  o.dtypes = c.dtypes;
  HostArray e1 = uniform({2, 3}, 0, 1, 1), e2 = uniform({4}, 0, 1, 2);
  e1.dtype = e2.dtype = c.dtypes.back();
  o.errors = {{{e1, e2}, fx::ErrorKind::Shape, "incompatible shapes"}};
  o.error_name = c.name + "(";
  t.push_back(std::move(o));
}

double floor_div(double x, double y, fx::DType d) {
  if (fx::is_float(d)) return std::floor(x / y);
  return std::floor(x / y);
}
double py_mod(double x, double y, fx::DType d) {
  if (!fx::is_float(d)) {
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

// unary float math
void add_unary_float_ops(std::vector<OpInfo>& t) {
  unary_float(t, "exp", fx::exp, [](double x) { return std::exp(x); }, -3, 3);
  unary_float(t, "exp2", fx::exp2, [](double x) { return std::exp2(x); }, -3, 3);
  unary_float(t, "log", fx::log, [](double x) { return std::log(x); }, 0.1, 5);
  unary_float(t, "log1p", fx::log1p, [](double x) { return std::log1p(x); }, -0.5, 3);
  unary_float(t, "expm1", fx::expm1, [](double x) { return std::expm1(x); }, -2, 2);
  unary_float(t, "tanh", fx::tanh, [](double x) { return std::tanh(x); }, -3, 3);
  unary_float(t, "sigmoid", fx::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -5, 5);
  unary_float(t, "sin", fx::sin, [](double x) { return std::sin(x); }, -4, 4, 2);
  unary_float(t, "cos", fx::cos, [](double x) { return std::cos(x); }, -4, 4, 2);
  unary_float(t, "tan", fx::tan, [](double x) { return std::tan(x); }, -1.2, 1.2, 4);
  unary_float(t, "arcsin", fx::arcsin, [](double x) { return std::asin(x); }, -0.9, 0.9);
  unary_float(t, "arccos", fx::arccos, [](double x) { return std::acos(x); }, -0.9, 0.9);
  unary_float(t, "arctan", fx::arctan, [](double x) { return std::atan(x); }, -3, 3);
  unary_float(t, "sinh", fx::sinh, [](double x) { return std::sinh(x); }, -3, 3);
  unary_float(t, "cosh", fx::cosh, [](double x) { return std::cosh(x); }, -3, 3);
  unary_float(t, "arcsinh", fx::arcsinh, [](double x) { return std::asinh(x); }, -3, 3);
  unary_float(t, "arccosh", fx::arccosh, [](double x) { return std::acosh(x); }, 1.1, 4);
  unary_float(t, "arctanh", fx::arctanh, [](double x) { return std::atanh(x); }, -0.9, 0.9, 2);
  unary_float(t, "sqrt", fx::sqrt, [](double x) { return std::sqrt(x); }, 0, 9);
  unary_float(t, "rsqrt", fx::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.2, 9);
  unary_float(t, "cbrt", fx::cbrt, [](double x) { return std::cbrt(x); }, -8, 8);
  unary_float(t, "erf", fx::erf, [](double x) { return std::erf(x); }, -2, 2);
  unary_float(t, "lgamma", fx::lgamma, [](double x) { return std::lgamma(x); }, 0.5, 6, 4);
  unary_float(t, "floor", fx::floor, [](double x) { return std::floor(x); }, -4, 4);
  unary_float(t, "ceil", fx::ceil, [](double x) { return std::ceil(x); }, -4, 4);
  unary_float(t, "round", fx::round, [](double x) { return std::nearbyint(x); }, -4, 4);
}

// unary numeric
void add_unary_numeric_ops(std::vector<OpInfo>& t) {
  auto numeric_unary = [&](std::string name, std::function<fx::Array(const fx::Array&)> op, double (*ref)(double),
                           std::vector<fx::DType> dtypes) {
    OpInfo o;
    o.name = name;
    o.op = [op](const Args& a) { return op(a[0]); };
    o.reference = [ref](const std::vector<HostArray>& a, fx::DType d) { return unary_ref(a, d, ref); };
    o.samples = float_samples(-50, 50);
    o.dtypes = dtypes;
    t.push_back(std::move(o));
  };
  numeric_unary("negative", [](const fx::Array& x) { return -x; }, [](double x) { return -x; }, kSignedTypes);
  numeric_unary("abs", [](const fx::Array& x) { return fx::abs(x); }, [](double x) { return std::fabs(x); }, kSignedTypes);
  numeric_unary("sign", [](const fx::Array& x) { return fx::sign(x); },
                [](double x) { return double((x > 0) - (x < 0)); }, kSignedTypes);
  numeric_unary("square", [](const fx::Array& x) { return fx::square(x); }, [](double x) { return x * x; },
                {fx::int32, fx::int64, fx::float16, fx::float32, fx::float64});
  numeric_unary("integer_pow3", [](const fx::Array& x) { return fx::integer_pow(x, 3); },
                [](double x) { return x * x * x; }, {fx::int32, fx::int64, fx::float32, fx::float64});
  numeric_unary("integer_pow-2", [](const fx::Array& x) { return fx::integer_pow(x, -2); },
                [](double x) { return 1 / (x * x); }, {fx::float32, fx::float64});
  numeric_unary("isfinite", [](const fx::Array& x) { return fx::isfinite(fx::log(x)); },
                [](double x) { return double(std::isfinite(std::log(x))); }, {fx::float32, fx::float64});
  t.back().differentiable = false;  // bool result
  numeric_unary("bitwise_not", [](const fx::Array& x) { return ~x; }, [](double x) { return double(~int64_t(x)); },
                {fx::int8, fx::int32, fx::int64});
  numeric_unary("stop_gradient", [](const fx::Array& x) { return fx::stop_gradient(x); }, [](double x) { return x; },
                kNumericTypes);
  t.back().differentiable = false;  // its derivative is zero by definition, not that of the identity
}

// binary arithmetic
void add_binary_ops(std::vector<OpInfo>& t) {
  binary(t, {"add", [](const fx::Array& a, const fx::Array& b) { return a + b; },
             [](double x, double y, fx::DType) { return x + y; }, kNumericTypes, -50, 50});
  binary(t, {"subtract", [](const fx::Array& a, const fx::Array& b) { return a - b; },
             [](double x, double y, fx::DType) { return x - y; }, kSignedTypes, -50, 50});
  binary(t, {"multiply", [](const fx::Array& a, const fx::Array& b) { return a * b; },
             [](double x, double y, fx::DType d) {
               if (fx::is_float(d)) return x * y;
               return double(int64_t(uint64_t(int64_t(x)) * uint64_t(int64_t(y))));  // wraps like the dtype
             },
             kNumericTypes, -10, 10});
  binary(t, {"divide", [](const fx::Array& a, const fx::Array& b) { return a / b; },
             [](double x, double y, fx::DType) { return x / y; }, kSignedTypes, -10, 10, true});
  binary(t, {"floor_divide", [](const fx::Array& a, const fx::Array& b) { return fx::floor_divide(a, b); },
             floor_div, {fx::int8, fx::int32, fx::int64, fx::float32, fx::float64}, -20, 20, true});
  binary(t, {"remainder", [](const fx::Array& a, const fx::Array& b) { return a % b; }, py_mod,
             {fx::int32, fx::int64, fx::float32, fx::float64}, -20, 20, true});
  binary(t, {"fmod", [](const fx::Array& a, const fx::Array& b) { return fx::fmod(a, b); },
             [](double x, double y, fx::DType) { return std::fmod(x, y); }, {fx::int32, fx::float32, fx::float64},
             -20, 20, true});
  binary(t, {"power", [](const fx::Array& a, const fx::Array& b) { return fx::power(fx::abs(a), b); },
             [](double x, double y, fx::DType) { return std::pow(std::fabs(x), y); }, {fx::float32, fx::float64},
             -3, 3, true});
  binary(t, {"maximum", [](const fx::Array& a, const fx::Array& b) { return fx::maximum(a, b); },
             [](double x, double y, fx::DType) { return std::max(x, y); }, kNumericTypes, -50, 50});
  binary(t, {"minimum", [](const fx::Array& a, const fx::Array& b) { return fx::minimum(a, b); },
             [](double x, double y, fx::DType) { return std::min(x, y); }, kNumericTypes, -50, 50});
  binary(t, {"arctan2", [](const fx::Array& a, const fx::Array& b) { return fx::arctan2(a, b); },
             [](double x, double y, fx::DType) { return std::atan2(x, y); }, kFloatTypes, -3, 3});
  binary(t, {"bitwise_and", [](const fx::Array& a, const fx::Array& b) { return a & b; },
             [](double x, double y, fx::DType) { return double(int64_t(x) & int64_t(y)); },
             {fx::int8, fx::int32, fx::int64}, -50, 50});
  binary(t, {"bitwise_or", [](const fx::Array& a, const fx::Array& b) { return a | b; },
             [](double x, double y, fx::DType) { return double(int64_t(x) | int64_t(y)); },
             {fx::int8, fx::int32, fx::int64}, -50, 50});
  binary(t, {"bitwise_xor", [](const fx::Array& a, const fx::Array& b) { return a ^ b; },
             [](double x, double y, fx::DType) { return double(int64_t(x) ^ int64_t(y)); },
             {fx::int8, fx::int32, fx::int64}, -50, 50});
}

// comparisons (bool results)
void add_comparison_ops(std::vector<OpInfo>& t) {
  auto cmp = [&](std::string name, std::function<fx::Array(const fx::Array&, const fx::Array&)> op,
                 std::function<bool(double, double)> ref) {
    binary(t, {name, op, [ref](double x, double y, fx::DType) { return double(ref(x, y)); }, kNumericTypes, -3, 3});
    t.back().differentiable = false;  // bool results
  };
  cmp("equal", [](const fx::Array& a, const fx::Array& b) { return a == fx::floor(a * 0 + b); },
      [](double x, double y) { return x == std::floor(y); });
  t.back().error_name = "add(";  // the shapes meet first in a * 0 + b
  cmp("not_equal", [](const fx::Array& a, const fx::Array& b) { return a != b; }, [](double x, double y) { return x != y; });
  cmp("less", [](const fx::Array& a, const fx::Array& b) { return a < b; }, [](double x, double y) { return x < y; });
  cmp("less_equal", [](const fx::Array& a, const fx::Array& b) { return a <= b; }, [](double x, double y) { return x <= y; });
  cmp("greater", [](const fx::Array& a, const fx::Array& b) { return a > b; }, [](double x, double y) { return x > y; });
  cmp("greater_equal", [](const fx::Array& a, const fx::Array& b) { return a >= b; }, [](double x, double y) { return x >= y; });
}

// where, clip, astype, logical
void add_selection_ops(std::vector<OpInfo>& t) {
  {
    OpInfo o;
    o.name = "where";
    o.op = [](const Args& a) { return fx::where(a[0] > 0.f, a[1], a[2]); };
    o.reference = [](const std::vector<HostArray>& a, fx::DType d) {
      return map_ref(a, [&](const std::vector<double>& x) { return x[0] > 0 ? x[1] : x[2]; });
    };
    o.samples = {{{uniform({2, 3}, -1, 1, 1), uniform({2, 3}, -5, 5, 2), uniform({3}, -5, 5, 3)}, "broadcast"},
                 {{uniform({}, -1, 1, 4), uniform({4}, -5, 5, 5), uniform({}, -5, 5, 6)}, "scalar cond"},
                 {{uniform({3, 1}, -1, 1, 7), uniform({}, -5, 5, 8), uniform({}, -5, 5, 9)}, "scalar cases"}};
    o.dtypes = kSignedTypes;
    o.errors = {{{uniform({2}, -1, 1, 1), uniform({3}, 0, 1, 2), uniform({3}, 0, 1, 3)}, fx::ErrorKind::Shape, "bad"}};
    o.error_name = "where(";
    t.push_back(std::move(o));
  }
  {
    OpInfo o;
    o.name = "clip";
    o.op = [](const Args& a) { return fx::clip(a[0], -1.f, 2.f); };
    o.reference = [](const std::vector<HostArray>& a, fx::DType) {
      return map_ref(a, [](const std::vector<double>& x) { return std::min(std::max(x[0], -1.0), 2.0); });
    };
    o.samples = float_samples(-4, 4);
    o.dtypes = kSignedTypes;
    t.push_back(std::move(o));
  }
  for (fx::DType target : {fx::bool_, fx::int8, fx::int32, fx::uint8, fx::float16, fx::bfloat16, fx::float32, fx::float64}) {
    OpInfo o;
    o.name = "astype_" + std::string(fx::dtype_name(target));
    o.op = [target](const Args& a) { return fx::astype(a[0], target); };
    o.reference = [target](const std::vector<HostArray>& a, fx::DType) {
      HostArray r = map_ref(a, [](const std::vector<double>& x) { return x[0]; });
      for (double& v : r.data) {
        if (target == fx::bool_) v = v != 0;
        else if (!fx::is_float(target)) v = fx::Literal::of_int(int64_t(std::trunc(v)), target).as_double();
        else v = fx::Literal::of_double(v, target).as_double();
      }
      return r;
    };
    o.samples = float_samples(0, 100);
    o.dtypes = {fx::int32, fx::float32, fx::float64};
    o.differentiable = fx::is_float(target);  // conversion to integers or bool has no derivative
    t.push_back(std::move(o));
  }
  {
    OpInfo o;
    o.name = "logical";
    o.op = [](const Args& a) { return fx::logical_xor(fx::logical_and(a[0] > 0.f, a[1] > 0.f), fx::logical_not(a[0] > 1.f)); };
    o.reference = [](const std::vector<HostArray>& a, fx::DType) {
      return map_ref(a, [](const std::vector<double>& x) { return double(((x[0] > 0) && (x[1] > 0)) != !(x[0] > 1)); });
    };
    o.samples = binary_samples(-2, 2, false);
    o.dtypes = {fx::float32, fx::int32};
    o.differentiable = false;  // bool result
    t.push_back(std::move(o));
  }
}

// fx::nn: the activations
void add_nn_activation_ops(std::vector<OpInfo>& t) {
  unary_float(t, "nn.relu", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::relu(x, l); },
              [](double x) { return std::max(x, 0.0); }, -3, 3);
  unary_float(t, "nn.softplus", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::softplus(x, l); },
              [](double x) { return std::log1p(std::exp(x)); }, -30, 30);
  unary_float(t, "nn.silu", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::silu(x, l); },
              [](double x) { return x / (1 + std::exp(-x)); }, -5, 5);
  unary_float(t, "nn.gelu", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::gelu(x, true, l); },
              [](double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }, -4, 4, 2);
  unary_float(t, "nn.gelu_exact", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::gelu(x, false, l); },
              [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4, 2);
  unary_float(t, "nn.elu", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::elu(x, 1.0, l); },
              [](double x) { return x > 0 ? x : std::expm1(x); }, -4, 4);
  unary_float(t, "nn.leaky_relu", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::leaky_relu(x, 0.01, l); },
              [](double x) { return x >= 0 ? x : 0.01 * x; }, -4, 4);
  unary_float(t, "nn.log_sigmoid", [](const fx::ArrayLike& x, fx::SourceLoc l) { return fx::nn::log_sigmoid(x, l); },
              [](double x) { return -std::log1p(std::exp(-x)); }, -20, 20);
}

// fx::nn: the rest
void add_nn_ops(std::vector<OpInfo>& t) {
  auto rowwise = [&](std::string name, std::function<fx::Array(const fx::Array&)> op,
                     std::function<std::vector<double>(const std::vector<double>&)> row_ref) {
    OpInfo o;
    o.name = name;
    o.op = [op](const Args& a) { return op(a[0]); };
    o.reference = [row_ref](const std::vector<HostArray>& a, fx::DType) {
      HostArray r = a[0];
      r.dtype = fx::float64;
      int64_t n = r.shape.rank() ? r.shape[size_t(r.shape.rank() - 1)] : 1;
      for (size_t off = 0; off + size_t(n) <= r.data.size() && n > 0; off += size_t(n)) {
        std::vector<double> row(r.data.begin() + long(off), r.data.begin() + long(off) + n);
        std::vector<double> out = row_ref(row);
        std::copy(out.begin(), out.end(), r.data.begin() + long(off));
      }
      return r;
    };
    o.samples = {{{uniform({5}, -4, 4, 1)}, "vector"},
                 {{uniform({3, 4}, -30, 30, 2)}, "rows"},
                 {{uniform({2, 3, 6}, -4, 4, 3)}, "batch of rows"}};
    o.dtypes = kFloatTypes;
    o.tol_scale = 2;
    t.push_back(std::move(o));
  };
  auto lse = [](const std::vector<double>& r) {
    double m = *std::max_element(r.begin(), r.end()), s = 0;
    for (double v : r) s += std::exp(v - m);
    return m + std::log(s);
  };
  rowwise("nn.softmax", [](const fx::Array& x) { return fx::nn::softmax(x); }, [lse](const std::vector<double>& r) {
    double l = lse(r);
    std::vector<double> o;
    for (double v : r) o.push_back(std::exp(v - l));
    return o;
  });
  rowwise("nn.log_softmax", [](const fx::Array& x) { return fx::nn::log_softmax(x); }, [lse](const std::vector<double>& r) {
    double l = lse(r);
    std::vector<double> o;
    for (double v : r) o.push_back(v - l);
    return o;
  });
  rowwise("nn.standardize", [](const fx::Array& x) { return fx::nn::standardize(x, -1, 0.0); }, [](const std::vector<double>& r) {
    double m = 0, v = 0;
    for (double x : r) m += x / double(r.size());
    for (double x : r) v += (x - m) * (x - m) / double(r.size());
    std::vector<double> o;
    for (double x : r) o.push_back((x - m) / std::sqrt(v));
    return o;
  });
  {
    OpInfo o;
    o.name = "nn.one_hot";
    o.op = [](const Args& a) { return fx::nn::one_hot(a[0], 4); };
    o.reference = [](const std::vector<HostArray>& a, fx::DType) {
      HostArray r{a[0].shape, {}, fx::float32};
      r.shape.push_back(4);
      for (double v : a[0].data)
        for (int c = 0; c < 4; ++c) r.data.push_back(double(int64_t(v) == c));
      return r;
    };
    o.samples = {{{integers({5}, -1, 5, 1)}, "labels (incl. out of range)"}, {{integers({2, 3}, 0, 4, 2)}, "matrix"}};
    o.dtypes = {fx::int32, fx::int8};
    o.differentiable = false;
    t.push_back(std::move(o));
  }
}

}  // namespace

void add_elementwise_ops(std::vector<OpInfo>& t) {
  add_unary_float_ops(t);
  add_unary_numeric_ops(t);
  add_binary_ops(t);
  add_comparison_ops(t);
  add_selection_ops(t);
  add_nn_activation_ops(t);
  add_nn_ops(t);
}

}  // namespace optable
