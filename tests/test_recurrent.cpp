// fx::nn::LSTMCell and GRUCell (train/recurrent.h) against their equations written as host loops in
// double, over a sequence with fx::scan; gradients against finite differences; vmap and jit.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {
double sig(double v) { return 1 / (1 + std::exp(-v)); }

// row @ m for a host matrix m [rows, cols] (row-major).
std::vector<double> times(const std::vector<double>& row, const std::vector<double>& m, size_t cols) {
  std::vector<double> out(cols, 0.0);
  for (size_t i = 0; i < row.size(); ++i)
    for (size_t j = 0; j < cols; ++j) out[j] += row[i] * m[i * cols + j];
  return out;
}

fx::Array sequence(int64_t t, int64_t batch, int64_t in) {
  return fx::reshape(fx::sin(fx::arange(0.0, double(t * batch * in), 1.0, fx::float64) * 0.37), {t, batch, in});
}
}  // namespace

TEST_CASE("LSTMCell: the gate equations, step by step over a sequence") {
  const int64_t in = 3, hidden = 4, batch = 2, steps = 5;
  auto cell = fx::nn::LSTMCell::init(fx::random::key(0), in, hidden, fx::float64);
  cell.bias = fx::sin(fx::arange(0.0, 16.0, 1.0, fx::float64));  // a bias that matters
  CHECK(cell.input_kernel.shape() == fx::Shape{in, 4 * hidden});
  fx::Array xs = sequence(steps, batch, in);
  auto [last, hs] = fx::scan([&](fx::nn::LSTMState c, const fx::Array& x) { return fx::nn::LSTMCell::apply(cell, c, x); },
                             fx::nn::LSTMCell::initialize_carry({batch}, hidden, fx::float64), xs);
  CHECK(hs.shape() == fx::Shape{steps, batch, hidden});
  const std::vector<double> wi = cell.input_kernel.to_vector<double>(), wh = cell.hidden_kernel.to_vector<double>(),
                            b = cell.bias.to_vector<double>(), xv = xs.to_vector<double>(), got = hs.to_vector<double>();
  for (int64_t r = 0; r < batch; ++r) {
    std::vector<double> c(hidden, 0.0), h(hidden, 0.0);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<double> x(xv.begin() + (t * batch + r) * in, xv.begin() + (t * batch + r + 1) * in);
      std::vector<double> zi = times(x, wi, 4 * hidden), zh = times(h, wh, 4 * hidden);
      for (int64_t j = 0; j < hidden; ++j) {
        auto z = [&](int64_t gate) { return zi[size_t(gate * hidden + j)] + zh[size_t(gate * hidden + j)] + b[size_t(gate * hidden + j)]; };
        c[size_t(j)] = sig(z(1)) * c[size_t(j)] + sig(z(0)) * std::tanh(z(2));
      }
      for (int64_t j = 0; j < hidden; ++j) {
        auto z = [&](int64_t gate) { return zi[size_t(gate * hidden + j)] + zh[size_t(gate * hidden + j)] + b[size_t(gate * hidden + j)]; };
        h[size_t(j)] = sig(z(3)) * std::tanh(c[size_t(j)]);
      }
      for (int64_t j = 0; j < hidden; ++j)
        CHECK(got[size_t((t * batch + r) * hidden + j)] == doctest::Approx(h[size_t(j)]).epsilon(1e-12));
    }
    for (int64_t j = 0; j < hidden; ++j) CHECK(last.c.to_vector<double>()[size_t(r * hidden + j)] == doctest::Approx(c[size_t(j)]));
  }
}

TEST_CASE("GRUCell: the gate equations, step by step over a sequence") {
  const int64_t in = 2, hidden = 3, batch = 2, steps = 4;
  auto cell = fx::nn::GRUCell::init(fx::random::key(1), in, hidden, fx::float64);
  cell.input_bias = fx::cos(fx::arange(0.0, 9.0, 1.0, fx::float64));
  cell.hidden_bias = fx::sin(fx::arange(0.0, 9.0, 1.0, fx::float64));
  fx::Array xs = sequence(steps, batch, in);
  auto [last, hs] = fx::scan([&](const fx::Array& h, const fx::Array& x) { return fx::nn::GRUCell::apply(cell, h, x); },
                             fx::nn::GRUCell::initialize_carry({batch}, hidden, fx::float64), xs);
  const std::vector<double> wi = cell.input_kernel.to_vector<double>(), wh = cell.hidden_kernel.to_vector<double>(),
                            bi = cell.input_bias.to_vector<double>(), bh = cell.hidden_bias.to_vector<double>(),
                            xv = xs.to_vector<double>(), got = hs.to_vector<double>();
  for (int64_t r = 0; r < batch; ++r) {
    std::vector<double> h(hidden, 0.0);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<double> x(xv.begin() + (t * batch + r) * in, xv.begin() + (t * batch + r + 1) * in);
      std::vector<double> zi = times(x, wi, 3 * hidden), zh = times(h, wh, 3 * hidden), next(hidden);
      for (int64_t j = 0; j < hidden; ++j) {
        const size_t R = size_t(j), Z = size_t(hidden + j), N = size_t(2 * hidden + j);
        const double rg = sig(zi[R] + bi[R] + zh[R] + bh[R]), zg = sig(zi[Z] + bi[Z] + zh[Z] + bh[Z]);
        const double n = std::tanh(zi[N] + bi[N] + rg * (zh[N] + bh[N]));
        next[size_t(j)] = (1 - zg) * n + zg * h[size_t(j)];
      }
      h = next;
      for (int64_t j = 0; j < hidden; ++j)
        CHECK(got[size_t((t * batch + r) * hidden + j)] == doctest::Approx(h[size_t(j)]).epsilon(1e-12));
    }
  }
  CHECK(last.shape() == fx::Shape{batch, hidden});
}

TEST_CASE("recurrent cells: gradients through scan against finite differences; vmap; jit; errors") {
  auto cell = fx::nn::GRUCell::init(fx::random::key(2), 2, 3, fx::float64);
  auto lstm = fx::nn::LSTMCell::init(fx::random::key(3), 2, 3, fx::float64);
  fx::Array xs = sequence(4, 1, 2);
  auto loss = [&](const fx::nn::GRUCell& p, const fx::nn::LSTMCell& q) {
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) { return fx::nn::GRUCell::apply(p, c, x); },
                            fx::nn::GRUCell::initialize_carry({1}, 3, fx::float64), xs);
    auto [s, zs] = fx::scan([&](fx::nn::LSTMState c, const fx::Array& x) { return fx::nn::LSTMCell::apply(q, c, x); },
                            fx::nn::LSTMCell::initialize_carry({1}, 3, fx::float64), ys[{fx::ellipsis, fx::Slice(0, 2)}]);
    return fx::sum(fx::square(zs)) + fx::sum(s.c);
  };
  auto [gg, gl] = fx::grad<0, 1>(loss)(cell, lstm);
  const double h = 1e-6;
  for (int64_t k : {0, 5, 17}) {
    fx::Array e = fx::reshape(fx::astype(fx::equal(fx::arange(18), int(k)), fx::float64), {2, 9});
    fx::nn::GRUCell up = cell, down = cell;
    up.input_kernel = cell.input_kernel + h * e;
    down.input_kernel = cell.input_kernel - h * e;
    const double fd = (loss(up, lstm).item<double>() - loss(down, lstm).item<double>()) / (2 * h);
    CHECK(gg.input_kernel.to_vector<double>()[size_t(k)] == doctest::Approx(fd).epsilon(1e-6));
  }
  for (int64_t k : {1, 30}) {
    fx::Array e = fx::reshape(fx::astype(fx::equal(fx::arange(36), int(k)), fx::float64), {3, 12});
    fx::nn::LSTMCell up = lstm, down = lstm;
    up.hidden_kernel = lstm.hidden_kernel + h * e;
    down.hidden_kernel = lstm.hidden_kernel - h * e;
    const double fd = (loss(cell, up).item<double>() - loss(cell, down).item<double>()) / (2 * h);
    CHECK(gl.hidden_kernel.to_vector<double>()[size_t(k)] == doctest::Approx(fd).epsilon(1e-6));
  }
  // One step vmapped over examples equals the loop; jit equals eager.
  auto step = [&](const fx::Array& hc, const fx::Array& x) { return fx::nn::GRUCell::apply(cell, hc, x).first; };
  fx::Array hb = fx::reshape(fx::cos(fx::arange(0.0, 12.0, 1.0, fx::float64)), {4, 3});
  fx::Array xb = fx::reshape(fx::sin(fx::arange(0.0, 8.0, 1.0, fx::float64)), {4, 2});
  fx::Array batched = fx::vmap(step)(hb, xb);
  for (int b = 0; b < 4; ++b) CHECK(fx::allclose(batched[b], step(hb[b], xb[b]), 1e-12, 1e-14).item<bool>());
  CHECK(fx::allclose(fx::jit(step)(hb, xb), step(hb, xb), 1e-12, 1e-14).item<bool>());
  // A wrong input size names the cell and the user's line.
  try {
    (void)fx::nn::LSTMCell::apply(lstm, fx::nn::LSTMCell::initialize_carry({1}, 3, fx::float64), fx::zeros({1, 5}, fx::float64));
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).find("LSTMCell(") != std::string::npos);
    CHECK(std::string(e.what()).find("test_recurrent.cpp") != std::string::npos);
  }
}
