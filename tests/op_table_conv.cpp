// Op-table entries for the convolutions and windowed reductions: conv_general_dilated over 1-D, 2-D
// and 3-D layouts, strides, padding, both dilations and both kinds of groups; reduce_window_{sum,
// max,min}; nn::max_pool and nn::avg_pool. The references are plain loops over every output element
// and window position written from the definitions (jax.lax's), independent of the kernels' window
// tables. Convolution samples are small integers, so every sum is exact in every dtype.
// Focused tests (errors, the jit's fast paths, the compositions): tests/test_conv.cpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_table.h"

namespace optable {
namespace {

using IntList = std::vector<int64_t>;

struct ConvCase {
  std::string label;
  IntList strides;
  std::vector<std::pair<int64_t, int64_t>> padding;  // explicit (the entries' SAME is resolved by hand)
  IntList lhs_dil, rhs_dil;
  std::string lhs_layout = "NCHW", rhs_layout = "OIHW", out_layout = "NCHW";
  int64_t groups = 1, batch_groups = 1;
  fx::Shape x, w;
};

// Where role `c` sits in a layout string ('N', 'C', 'O', 'I' or a spatial letter).
int64_t at(const std::string& layout, char c) { return int64_t(layout.find(c)); }

// The spatial letters in the kernel's order.
std::string spatial(const ConvCase& c) {
  std::string s;
  for (char ch : c.rhs_layout)
    if (ch != 'O' && ch != 'I') s += ch;
  return s;
}

// out[n, o, p...] = sum over i, k... of w[o, i, k...] * x[n', g * I + i, q...] with
// q = p * stride + k * rhs_dil - pad_lo in the lhs-dilated input (holes and padding read zero).
HostArray conv_ref(const ConvCase& c, const std::vector<HostArray>& a) {
  const HostArray &x = a[0], &w = a[1];
  const std::string sp = spatial(c);
  const size_t ns = sp.size();
  const int64_t N = x.shape[size_t(at(c.lhs_layout, 'N'))], O = w.shape[size_t(at(c.rhs_layout, 'O'))];
  const int64_t I = w.shape[size_t(at(c.rhs_layout, 'I'))];
  std::vector<int64_t> in(ns), k(ns), out(ns);
  for (size_t d = 0; d < ns; ++d) {
    in[d] = x.shape[size_t(at(c.lhs_layout, sp[d]))];
    k[d] = w.shape[size_t(at(c.rhs_layout, sp[d]))];
    const int64_t padded = (in[d] - 1) * c.lhs_dil[d] + 1 + c.padding[d].first + c.padding[d].second;
    out[d] = (padded - ((k[d] - 1) * c.rhs_dil[d] + 1)) / c.strides[d] + 1;
  }
  fx::Shape os(std::vector<int64_t>(ns + 2));
  os[size_t(at(c.out_layout, 'N'))] = N / c.batch_groups;
  os[size_t(at(c.out_layout, 'C'))] = O;
  for (size_t d = 0; d < ns; ++d) os[size_t(at(c.out_layout, sp[d]))] = out[d];
  HostArray r{os, std::vector<double>(size_t(os.numel()), 0.0), fx::float64};
  for (int64_t flat = 0; flat < os.numel(); ++flat) {
    const std::vector<int64_t> oi = unravel(flat, os);
    const int64_t n = oi[size_t(at(c.out_layout, 'N'))], o = oi[size_t(at(c.out_layout, 'C'))];
    const int64_t group = o / (O / c.groups), bgroup = o / (O / c.batch_groups);
    const int64_t n_in = bgroup * (N / c.batch_groups) + n;
    double sum = 0;
    fx::Shape ks(k);
    for (int64_t i = 0; i < I; ++i)
      for (int64_t kf = 0; kf < ks.numel(); ++kf) {
        const std::vector<int64_t> kk = unravel(kf, ks);
        std::vector<int64_t> xi(ns + 2), wi(ns + 2);
        xi[size_t(at(c.lhs_layout, 'N'))] = n_in;
        xi[size_t(at(c.lhs_layout, 'C'))] = group * I + i;
        wi[size_t(at(c.rhs_layout, 'O'))] = o;
        wi[size_t(at(c.rhs_layout, 'I'))] = i;
        bool inside = true;
        for (size_t d = 0; d < ns; ++d) {
          const int64_t q = oi[size_t(at(c.out_layout, sp[d]))] * c.strides[d] + kk[d] * c.rhs_dil[d] - c.padding[d].first;
          inside = inside && q >= 0 && q % c.lhs_dil[d] == 0 && q / c.lhs_dil[d] < in[d];
          xi[size_t(at(c.lhs_layout, sp[d]))] = inside ? q / c.lhs_dil[d] : 0;
          wi[size_t(at(c.rhs_layout, sp[d]))] = kk[d];
        }
        if (inside) sum += w.data[size_t(ravel(wi, w.shape))] * x.data[size_t(ravel(xi, x.shape))];
      }
    r.data[size_t(flat)] = sum;
  }
  return r;
}

OpInfo conv_entry(const ConvCase& c) {
  OpInfo e;
  e.name = "conv_general_dilated " + c.label;
  e.error_name = "conv_general_dilated";
  e.op = [c](const std::vector<fx::Array>& a) {
    return fx::conv_general_dilated(a[0], a[1], c.strides, fx::Padding(c.padding), c.lhs_dil, c.rhs_dil,
                                    fx::conv_dimension_numbers(c.lhs_layout, c.rhs_layout, c.out_layout), c.groups,
                                    c.batch_groups);
  };
  e.reference = [c](const std::vector<HostArray>& a, fx::DType) { return conv_ref(c, a); };
  e.samples = {Sample{{small_ints(c.x, 1), small_ints(c.w, 2)}, "small ints"}};
  e.dtypes = {fx::float16, fx::bfloat16, fx::float32, fx::float64, fx::int32};
  return e;
}

// preferred_element_type float32 on 16-bit operands (the mixed-precision convolution: float32
// products and result), as jax.lax.conv_general_dilated's.
OpInfo preferred_type_conv_entry(const ConvCase& c) {
  OpInfo e = conv_entry(c);
  e.name += " (preferred_element_type float32)";
  e.op = [c](const std::vector<fx::Array>& a) {
    return fx::conv_general_dilated(a[0], a[1], c.strides, fx::Padding(c.padding), c.lhs_dil, c.rhs_dil,
                                    fx::conv_dimension_numbers(c.lhs_layout, c.rhs_layout, c.out_layout), c.groups,
                                    c.batch_groups, fx::float32);
  };
  e.reference = [c](const std::vector<HostArray>& a, fx::DType) {
    HostArray r = conv_ref(c, a);
    r.dtype = fx::float32;
    return r;
  };
  e.reference_dtype = true;
  e.dtypes = {fx::float16, fx::bfloat16, fx::float32};
  return e;
}

// int8 operands over their whole range with an int32 result (quantized inference's convolution:
// im2col into the int8 GEMM under jit where ungrouped, kernels/conv_int8.h). Integers: no
// derivative, so the AD drivers pass it by.
OpInfo int8_conv_entry(const ConvCase& c) {
  OpInfo e = conv_entry(c);
  e.name += " (int8, preferred_element_type int32)";
  e.op = [c](const std::vector<fx::Array>& a) {
    return fx::conv_general_dilated(a[0], a[1], c.strides, fx::Padding(c.padding), c.lhs_dil, c.rhs_dil,
                                    fx::conv_dimension_numbers(c.lhs_layout, c.rhs_layout, c.out_layout), c.groups,
                                    c.batch_groups, fx::int32);
  };
  e.reference = [c](const std::vector<HostArray>& a, fx::DType) {
    HostArray r = conv_ref(c, a);
    r.dtype = fx::int32;
    return r;
  };
  e.reference_dtype = true;
  e.samples = {Sample{{integers(c.x, -128, 128, 3), integers(c.w, -128, 128, 4)}, "bytes"}};
  e.dtypes = {fx::int8};
  e.differentiable = false;
  return e;
}

std::vector<ConvCase> conv_cases() {
  return {
      {"2-D NCHW stride 1 SAME", {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, "NCHW", "OIHW", "NCHW", 1, 1,
       {2, 2, 4, 4}, {3, 2, 3, 3}},
      {"2-D NHWC HWIO strides, padding, both dilations", {2, 1}, {{1, 0}, {0, 2}}, {1, 2}, {2, 1}, "NHWC", "HWIO",
       "NHWC", 1, 1, {2, 5, 3, 2}, {2, 2, 2, 3}},
      {"1-D depthwise (feature groups), stride 2, VALID", {2}, {{0, 0}}, {1}, {1}, "NCH", "OIH", "NCH", 4, 1,
       {2, 4, 7}, {4, 1, 3}},
      {"2-D feature groups 2, kernel dilation, output NHWC", {1, 1}, {{1, 1}, {0, 1}}, {1, 1}, {2, 1}, "NCHW",
       "OIHW", "NHWC", 2, 1, {1, 4, 5, 4}, {4, 2, 2, 2}},
      {"1-D batch groups 2, negative padding", {1}, {{-1, 1}}, {1}, {1}, "NCH", "OIH", "NCH", 1, 2, {4, 2, 5},
       {4, 2, 2}},
      {"3-D NCDHW strides", {1, 2, 1}, {{1, 1}, {0, 0}, {1, 0}}, {1, 1, 1}, {1, 1, 1}, "NCDHW", "OIDHW", "NCDHW", 1,
       1, {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}},
  };
}

// ---- windowed reductions --------------------------------------------------------------------------

struct WindowCase {
  std::string label;
  IntList window, strides;
  std::vector<std::pair<int64_t, int64_t>> padding;
  IntList base_dil, window_dil;
  fx::Shape x;
};

enum class Fold { sum, max, min };

HostArray window_ref(const WindowCase& c, Fold f, const HostArray& x) {
  const size_t r = x.shape.size();
  std::vector<int64_t> out(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t padded = (x.shape[d] - 1) * c.base_dil[d] + 1 + c.padding[d].first + c.padding[d].second;
    out[d] = (padded - ((c.window[d] - 1) * c.window_dil[d] + 1)) / c.strides[d] + 1;
  }
  fx::Shape os(out), ws(c.window);
  const double init = f == Fold::sum ? 0.0 : f == Fold::max ? -INFINITY : INFINITY;
  HostArray res{os, std::vector<double>(size_t(os.numel()), init), x.dtype};
  for (int64_t flat = 0; flat < os.numel(); ++flat) {
    const std::vector<int64_t> oi = unravel(flat, os);
    double& acc = res.data[size_t(flat)];
    for (int64_t wf = 0; wf < ws.numel(); ++wf) {
      const std::vector<int64_t> wi = unravel(wf, ws);
      std::vector<int64_t> xi(r);
      bool inside = true;
      for (size_t d = 0; d < r && inside; ++d) {
        const int64_t q = oi[d] * c.strides[d] + wi[d] * c.window_dil[d] - c.padding[d].first;
        inside = q >= 0 && q % c.base_dil[d] == 0 && q / c.base_dil[d] < x.shape[d];
        xi[d] = q / c.base_dil[d];
      }
      if (!inside) continue;
      const double v = x.data[size_t(ravel(xi, x.shape))];
      acc = f == Fold::sum ? acc + v : f == Fold::max ? std::max(acc, v) : std::min(acc, v);
    }
  }
  return res;
}

OpInfo window_entry(const WindowCase& c, Fold f) {
  static const char* names[] = {"reduce_window_sum", "reduce_window_max", "reduce_window_min"};
  OpInfo e;
  e.error_name = names[int(f)];
  e.name = e.error_name + " " + c.label;
  e.op = [c, f](const std::vector<fx::Array>& a) {
    fx::Padding pad(c.padding);
    if (f == Fold::sum) return fx::reduce_window_sum(a[0], c.window, c.strides, pad, c.base_dil, c.window_dil);
    if (f == Fold::max) return fx::reduce_window_max(a[0], c.window, c.strides, pad, c.base_dil, c.window_dil);
    return fx::reduce_window_min(a[0], c.window, c.strides, pad, c.base_dil, c.window_dil);
  };
  e.reference = [c, f](const std::vector<HostArray>& a, fx::DType) { return window_ref(c, f, a[0]); };
  // Max and min get distinct reals (no ties, so finite differences see one winner per window);
  // sums get small integers, exact in every dtype.
  e.samples = {Sample{{f == Fold::sum ? small_ints(c.x, 3) : reals(c.x, 4)}, "values"}};
  e.dtypes = f == Fold::sum ? std::vector<fx::DType>{fx::float16, fx::bfloat16, fx::float32, fx::float64, fx::int32}
                            : std::vector<fx::DType>{fx::float32, fx::float64};
  e.errors = {error_sample({reals(fx::Shape(std::vector<int64_t>(c.x.size(), 1)), 5)}, fx::ErrorKind::Shape,
                           "window larger than the padded operand")};
  return e;
}

std::vector<WindowCase> window_cases() {
  return {
      {"2x2 pool of NCHW", {1, 1, 2, 2}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1},
       {2, 2, 4, 5}},
      {"overlapping, padded, both dilations", {2, 3}, {1, 2}, {{1, 0}, {1, 1}}, {1, 2}, {2, 1}, {4, 4}},
      {"3-D strided 3x3x1", {3, 3, 1}, {2, 1, 1}, {{1, 1}, {0, 0}, {0, 0}}, {1, 1, 1}, {1, 1, 1}, {5, 3, 2}},
      {"NCHW 3x3/2 padded", {1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1},
       {2, 2, 5, 6}},
      {"NHWC 3x3/2 padded", {1, 3, 3, 1}, {1, 2, 2, 1}, {{0, 0}, {1, 1}, {0, 1}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1},
       {2, 5, 4, 3}},
  };
}

}  // namespace

void add_conv_ops(std::vector<OpInfo>& t) {
  for (const ConvCase& c : conv_cases()) t.push_back(conv_entry(c));
  t.push_back(preferred_type_conv_entry(conv_cases()[1]));
  // Bad operands: features that do not match the kernel's, and a kernel larger than the input.
  t[t.size() - 6].errors = {
      error_sample({small_ints({1, 3, 4, 4}, 1), small_ints({3, 2, 3, 3}, 2)}, fx::ErrorKind::Shape, "channels"),
      error_sample({small_ints({1, 2, 4}, 1), small_ints({3, 2, 3, 3}, 2)}, fx::ErrorKind::Shape, "ranks differ")};
  t[t.size() - 4].errors = {
      error_sample({small_ints({1, 4, 2}, 1), small_ints({4, 1, 3}, 2)}, fx::ErrorKind::Shape, "kernel too large")};
  for (size_t i : {0, 1, 3, 5}) t.push_back(int8_conv_entry(conv_cases()[i]));  // [3]: feature groups
  for (const WindowCase& c : window_cases())
    for (Fold f : {Fold::sum, Fold::max, Fold::min}) t.push_back(window_entry(c, f));

  OpInfo max_pool;
  max_pool.name = max_pool.error_name = "max_pool";
  max_pool.op = [](const std::vector<fx::Array>& a) { return fx::nn::max_pool(a[0], {2, 2}, {1, 2}, "SAME"); };
  max_pool.reference = [](const std::vector<HostArray>& a, fx::DType) {
    // SAME for 4 (stride 1, window 2): (0, 1); for 5 (stride 2, window 2): 3 outputs, total 1: (0, 1).
    return window_ref({"", {1, 1, 2, 2}, {1, 1, 1, 2}, {{0, 0}, {0, 0}, {0, 1}, {0, 1}}, {1, 1, 1, 1}, {1, 1, 1, 1}, {}},
                      Fold::max, a[0]);
  };
  max_pool.samples = {Sample{{reals({2, 3, 4, 5}, 6)}, "NCHW"}};
  max_pool.dtypes = {fx::float32, fx::float64};
  t.push_back(max_pool);

  OpInfo avg_pool;
  avg_pool.name = avg_pool.error_name = "avg_pool";
  avg_pool.op = [](const std::vector<fx::Array>& a) {
    return fx::nn::avg_pool(a[0], {3}, {2}, "SAME", /*count_include_pad=*/false);
  };
  avg_pool.reference = [](const std::vector<HostArray>& a, fx::DType) {
    // SAME for 6 (stride 2, window 3): 3 outputs, total 1: (0, 1).
    WindowCase c{"", {1, 3}, {1, 2}, {{0, 0}, {0, 1}}, {1, 1}, {1, 1}, {}};
    HostArray sums = window_ref(c, Fold::sum, a[0]);
    HostArray ones = a[0];
    std::fill(ones.data.begin(), ones.data.end(), 1.0);
    HostArray counts = window_ref(c, Fold::sum, ones);
    for (size_t i = 0; i < sums.data.size(); ++i) sums.data[i] /= counts.data[i];
    return sums;
  };
  avg_pool.samples = {Sample{{reals({2, 6}, 7)}, "NW"}};
  avg_pool.dtypes = {fx::float32, fx::float64};
  t.push_back(avg_pool);
}

}  // namespace optable
