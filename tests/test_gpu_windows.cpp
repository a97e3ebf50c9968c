// What the GPU pipeline gained with lowering/gpu_windows.h and lowering/gpu_lines.h: convolutions,
// pooling and the max-pool gradient, the cumulative scans, scatters, dynamic slices and random bits
// -- each compiled for the GPU and run there (the emulated GPU in CI: FLUXION_CUDA_DRIVER=emulate,
// the meson test gpu_emulated), against the CPU. The op table checks every primitive in every dtype
// on its samples (test_gpu_ptx.cpp); here are what the op table does not hold: the transforms
// through them (the gradients are select_and_scatter_add, convolutions with dilated inputs and
// batch groups, scatter_add), the orders that make a thread per line bit-identical to the CPU, and
// whole models: the Fashion-MNIST convnet's and a small ResNet's training steps.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

#include "examples/fashion_mnist_model.h"
#include "examples/resnet_model.h"
#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::ramp;

namespace {

bool no_gpu() { return fx::devices("cuda").empty(); }
fx::Device gpu() { return fx::devices("cuda").at(0); }
fx::Array on_gpu(const fx::Array& x) { return fx::device_put(x, gpu()); }

// Largest |a - b| / (1 + |b|) over the elements; NaN where one has NaN and the other not.
double rel_diff(const fx::Array& a, const fx::Array& b) {
  REQUIRE(a.shape() == b.shape());
  REQUIRE(a.dtype() == b.dtype());
  const std::vector<double> x = fx::astype(a, fx::float64).to_vector<double>(), y = fx::astype(b, fx::float64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    const double d = std::abs(x[i] - y[i]) / (1 + std::abs(y[i]));
    if (!(d <= worst)) worst = d;  // NaN sticks
  }
  return worst;
}

// Bitwise equality of two arrays' values (NaN equal to NaN).
bool same_bits(const fx::Array& a, const fx::Array& b) { return a.shape() == b.shape() && rel_diff(a, b) == 0; }

template <class Tree>
double tree_diff(const Tree& a, const Tree& b) {
  const std::vector<fx::Array> x = fx::tree::leaves(a), y = fx::tree::leaves(b);
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, rel_diff(x[i], y[i]));
  return worst;
}

fx::Array values(const fx::Shape& s, float lo, float hi) { return fx::reshape(fx::array(ramp(s.numel(), lo, hi)), s); }

}  // namespace

TEST_CASE("gpu windows: convolutions and their gradients on the GPU equal the CPU's" * doctest::skip(no_gpu())) {
  // Strided, padded, dilated, grouped: the gradients are convolutions with dilated inputs (lhs
  // dilation) and, for the grouped kernel, batch groups.
  const fx::Array x = fx::sin(values({2, 4, 9, 11}, -3.f, 5.f)), w = fx::cos(values({6, 2, 3, 3}, -2.f, 2.f));
  auto conv = [](const fx::Array& a, const fx::Array& k) {
    return fx::conv_general_dilated(a, k, {2, 1}, {{1, 2}, {0, 1}}, {1, 1}, {1, 2}, fx::conv_dimension_numbers("NCHW", "OIHW", "NCHW"),
                                    /*feature_group_count=*/2);
  };
  auto loss = [&](const fx::Array& a, const fx::Array& k) { return fx::sum(fx::tanh(conv(a, k)) * conv(a, k)); };
  auto g = fx::jit(fx::grad<0, 1>(loss));
  const auto [gx, gw] = g(x, w);
  const auto [gx_gpu, gw_gpu] = g(on_gpu(x), on_gpu(w));
  CHECK(gx_gpu.device() == gpu());
  CHECK(rel_diff(gx_gpu, gx) < 1e-5);
  CHECK(rel_diff(gw_gpu, gw) < 1e-5);
  CHECK(rel_diff(fx::jit(conv)(on_gpu(x), on_gpu(w)), conv(x, w)) < 1e-5);
  // int8 products into int32 (the quantized path): exact.
  const fx::Array xi = fx::astype(values({1, 3, 8, 8}, -100.f, 100.f), fx::int8), wi = fx::astype(values({4, 3, 3, 3}, -60.f, 70.f), fx::int8);
  auto qconv = [](const fx::Array& a, const fx::Array& k) {
    return fx::conv_general_dilated(a, k, {1, 1}, "SAME", {}, {}, {}, 1, 1, fx::int32);
  };
  CHECK(same_bits(fx::jit(qconv)(on_gpu(xi), on_gpu(wi)), qconv(xi, wi)));
}

TEST_CASE("gpu windows: max pooling, its JVP and gradient select the first maximum as the CPU does" * doctest::skip(no_gpu())) {
  // Ties everywhere (values rounded to halves), a NaN, and windows that overlap (stride 1) and that
  // reach into the padding: the gradient is select_and_scatter_add, the JVP select_and_gather_add.
  fx::Array x = fx::round(values({2, 3, 7, 6}, -2.f, 2.f) * 2.f) / 2.f;
  x = fx::where(fx::logical_and(fx::iota(fx::int32, {2, 3, 7, 6}, 3) + fx::iota(fx::int32, {2, 3, 7, 6}, 2) == 7,
                                fx::iota(fx::int32, {2, 3, 7, 6}, 1) == 1),
                fx::array(NAN), x);
  auto pool = [](const fx::Array& a) { return fx::reduce_window_max(a, {1, 1, 3, 2}, {1, 1, 1, 2}, {{0, 0}, {0, 0}, {1, 1}, {0, 1}}); };
  auto loss = [&](const fx::Array& a) { return fx::sum(pool(a) * fx::cos(pool(a))); };
  const fx::Array t = fx::cos(values({2, 3, 7, 6}, 0.f, 9.f));
  auto jvp = [&](const fx::Array& a, const fx::Array& da) { return std::get<1>(fx::jvp(pool, std::tuple{a}, std::tuple{da})); };
  CHECK(same_bits(fx::jit(pool)(on_gpu(x)), pool(x)));
  CHECK(rel_diff(fx::jit(fx::grad(loss))(on_gpu(x)), fx::grad(loss)(x)) < 1e-6);
  CHECK(same_bits(fx::jit(jvp)(on_gpu(x), on_gpu(t)), jvp(x, t)));
  // Average pooling and min pooling through nn and lax.
  auto avg = [](const fx::Array& a) { return fx::nn::avg_pool(a, {2, 2}); };
  CHECK(rel_diff(fx::jit(fx::grad([&](const fx::Array& a) { return fx::sum(avg(a) * avg(a)); }))(on_gpu(x)),
                 fx::grad([&](const fx::Array& a) { return fx::sum(avg(a) * avg(a)); })(x)) < 1e-6);
}

TEST_CASE("gpu lines: scans and scatters run a thread per line, bit for bit the CPU's" * doctest::skip(no_gpu())) {
  const fx::Array x = fx::sin(values({300, 7}, -40.f, 40.f));
  for (int axis : {0, 1}) {
    CAPTURE(axis);
    auto scans = [axis](const fx::Array& a) {
      return fx::stack({fx::cumsum(a, axis), fx::cumprod(a * 0.1f + 1.f, axis), fx::cummax(a, axis),
                        fx::cummin(a, axis, /*reverse=*/true)});
    };
    CHECK(same_bits(fx::jit(scans)(on_gpu(x)), fx::jit(scans)(x)));
  }
  // An embedding's gradient: scatter_add with repeated rows, summed in the order of the indices.
  const fx::Array table = values({50, 16}, -1.f, 1.f);
  const fx::Array idx = fx::astype(fx::remainder(fx::arange(0, 400) * 7, 50), fx::int32);
  const fx::Array weight = fx::sin(values({400, 16}, 0.f, 100.f));
  auto embed_loss = [&](const fx::Array& e, const fx::Array& i, const fx::Array& wt) {
    return fx::sum(fx::take(e, i, 0) * wt);
  };
  auto g = fx::jit(fx::grad(embed_loss));
  CHECK(same_bits(g(on_gpu(table), on_gpu(idx), on_gpu(weight)), g(table, idx, weight)));
  // .at[].set with duplicates: the last write wins, as on the CPU.
  auto set = [](const fx::Array& a, const fx::Array& i) { return a.at({i}).set(fx::astype(i, fx::float32) * 10.f); };
  const fx::Array dup = fx::array(std::vector<int32_t>{3, 1, 3, 0, 1, 3});
  CHECK(same_bits(fx::jit(set)(on_gpu(fx::zeros({5})), on_gpu(dup)), set(fx::zeros({5}), dup)));
  // dynamic_slice / dynamic_update_slice with starts computed on the device, clamped.
  auto window = [](const fx::Array& a, const fx::Array& s) {
    const fx::Array part = fx::dynamic_slice(a, {s, s + 2}, {4, 3});
    return fx::dynamic_update_slice(a, part * 2.f, {s * 3, fx::array(1)});
  };
  for (int s : {0, 2, 9}) {
    CAPTURE(s);
    CHECK(same_bits(fx::jit(window)(on_gpu(x), on_gpu(fx::array(s))), window(x, fx::array(s))));
  }
}

TEST_CASE("gpu random: jitted random bits on the GPU are the CPU's" * doctest::skip(no_gpu())) {
  auto draw = [](const fx::Array& key) {
    auto [k1, k2] = fx::random::split(key);
    return std::tuple{fx::random::bits(k1, {1000}), fx::random::uniform(k2, {33, 7}), fx::random::normal(fx::random::fold_in(key, 5), {64})};
  };
  const fx::Array key = fx::random::key(42);
  auto f = fx::jit(draw);
  const auto [bits, u, n] = f(key);
  const auto [bits_gpu, u_gpu, n_gpu] = f(on_gpu(key));
  CHECK(bits_gpu.device() == gpu());
  CHECK(same_bits(bits_gpu, bits));
  CHECK(same_bits(u_gpu, u));
  CHECK(rel_diff(n_gpu, n) < 1e-6);  // the inverse error function through the GPU's math library
  auto drop = [](const fx::Array& k, const fx::Array& a) { return fx::nn::dropout(k, a, 0.3f, true); };
  const fx::Array a = values({40, 40}, 1.f, 2.f);
  CHECK(same_bits(fx::jit(drop)(on_gpu(key), on_gpu(a)), fx::jit(drop)(key, a)));
}

TEST_CASE("gpu models: the Fashion-MNIST convnet's and a small ResNet's training steps match the CPU's" *
          doctest::skip(no_gpu())) {
  using example::Cnn;
  const fx::Array images = fx::floor(fx::random::uniform(fx::random::key(3), {8, 784}) * 255.f);
  const fx::Array labels = fx::astype(fx::remainder(fx::arange(0, 8) * 3, 10), fx::int32);
  auto loss = [&](const Cnn& m, const fx::Array& im) {
    return fx::mean(fx::nn::softmax_cross_entropy(Cnn::logits(m, im), labels));
  };
  const Cnn cpu_model = Cnn::init(fx::random::key(0));
  Cnn gpu_model;
  {
    fx::default_device_scope scope(gpu());
    gpu_model = Cnn::init(fx::random::key(0));
  }
  auto vg = fx::jit(fx::value_and_grad(loss));
  const auto [l_cpu, g_cpu] = vg(cpu_model, images);
  const auto [l_gpu, g_gpu] = vg(gpu_model, on_gpu(images));
  CHECK(l_gpu.device() == gpu());
  CHECK(rel_diff(l_gpu, l_cpu) < 1e-5);
  CHECK(tree_diff(g_gpu, g_cpu) < 1e-4);

  // ResNet (the small configuration: 16-32-64 channels, a block each) with batch norm in training
  // mode, SGD with momentum: one jitted step, parameters, statistics and loss against the CPU's.
  const auto [net, state] = example::init(fx::random::key(1), 3, example::config(8));
  const fx::optim::GradientTransformation opt = example::benchmark_optimizer();
  const fx::mixed_precision::Policy policy = example::benchmark_policy(false);
  auto step = fx::jit([&](const example::ResNet& m, const example::ResNetState& s, const fx::optim::State& os,
                          const fx::Array& im, const fx::Array& y) { return example::train_step(opt, policy, m, s, os, im, y); });
  const fx::Array pics = fx::random::normal(fx::random::key(2), {2, 3, 32, 32});
  const fx::Array y = fx::array(std::vector<int32_t>{1, 7});
  const auto [m1, s1, o1, loss1] = step(net, state, opt.init(net), pics, y);
  example::ResNet net_gpu;
  example::ResNetState state_gpu;
  fx::optim::State opt_gpu;
  {
    fx::default_device_scope scope(gpu());
    std::tie(net_gpu, state_gpu) = example::init(fx::random::key(1), 3, example::config(8));
    opt_gpu = opt.init(net_gpu);
  }
  const auto [m2, s2, o2, loss2] = step(net_gpu, state_gpu, opt_gpu, on_gpu(pics), on_gpu(y));
  CHECK(loss2.device() == gpu());
  CHECK(rel_diff(loss2, loss1) < 1e-5);
  CHECK(tree_diff(m2, m1) < 1e-4);
  CHECK(tree_diff(s2, s1) < 1e-4);
}

TEST_CASE("gpu sort: a thread per line sorts as the CPU does -- stable, NaN last, several keys" * doctest::skip(no_gpu())) {
  // Few distinct values (ties everywhere), NaN, -0.0 and 0.0, lines of 1, 2, 37 and 50 elements.
  fx::Array x = fx::round(fx::sin(values({37, 50}, -20.f, 20.f)) * 3.f) / 2.f;
  x = fx::where(fx::remainder(fx::iota(fx::int32, {37, 50}, 1) * 7 + fx::iota(fx::int32, {37, 50}, 0), 11) == 0,
                fx::array(NAN), x);
  x = fx::where(fx::remainder(fx::iota(fx::int32, {37, 50}, 1), 13) == 5, fx::array(-0.f), x);
  for (int axis : {0, 1}) {
    CAPTURE(axis);
    auto sorts = [axis](const fx::Array& a) { return std::tuple{fx::sort(a, axis), fx::argsort(a, axis)}; };
    const auto [s, i] = fx::jit(sorts)(x);
    const auto [s_gpu, i_gpu] = fx::jit(sorts)(on_gpu(x));
    CHECK(s_gpu.device() == gpu());
    CHECK(same_bits(s_gpu, s));
    CHECK(same_bits(i_gpu, i));  // stable: ties keep their order
  }
  for (const fx::Shape& s : {fx::Shape{5, 1}, fx::Shape{5, 2}}) {
    const fx::Array y = values(s, 3.f, -1.f);
    CHECK(same_bits(fx::jit([](const fx::Array& a) { return fx::sort(a, 1); })(on_gpu(y)), fx::sort(y, 1)));
  }
  // Two keys (integers, then floats) carrying a third operand; top_k over rows.
  const fx::Array k1 = fx::astype(fx::remainder(fx::iota(fx::int32, {6, 40}, 1) * 5, 3), fx::int32);
  const fx::Array k2 = fx::cos(values({6, 40}, 0.f, 30.f));
  const fx::Array payload = fx::iota(fx::int32, {6, 40}, 1);
  auto two_keys = [](const fx::Array& a, const fx::Array& b, const fx::Array& p) {
    const std::vector<fx::Array> r = fx::bind(fx::Prim::sort, {a, b, p},
                                              fx::Params{{"dimension", int64_t(1)}, {"is_stable", true}, {"num_keys", int64_t(2)}},
                                              std::source_location::current());
    return std::tuple{r[0], r[1], r[2]};
  };
  const auto [a1, b1, p1] = fx::jit(two_keys)(k1, k2, payload);
  const auto [a2, b2, p2] = fx::jit(two_keys)(on_gpu(k1), on_gpu(k2), on_gpu(payload));
  CHECK(same_bits(a2, a1));
  CHECK(same_bits(b2, b1));
  CHECK(same_bits(p2, p1));
  auto top = [](const fx::Array& a) { return fx::top_k(a, 5); };
  const auto [tv, ti] = fx::jit(top)(k2);
  const auto [tv_gpu, ti_gpu] = fx::jit(top)(on_gpu(k2));
  CHECK(same_bits(tv_gpu, tv));
  CHECK(same_bits(ti_gpu, ti));
}
