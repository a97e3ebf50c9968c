// fx::nn::Sequential (train/sequential.h): the layers applied in order against the same calls by
// hand; a parameter tree that grad, jit, vmap, fx::optim and checkpoints take as any other.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <filesystem>
#include <map>
#include <string>

#include <unistd.h>

namespace fx = fluxion;

namespace {
// A callable element of one's own: registered as a tree, its fields are static leaves (compared and
// part of fx::jit's signature).
struct Scale {
  double factor = 2.0;
  fx::Array operator()(const fx::Array& x) const { return x * factor; }
};
FLUXION_TREE(Scale, factor);
}  // namespace

TEST_CASE("Sequential: layers and functions in order, the same as the calls by hand") {
  auto [k1, k2] = fx::random::split(fx::random::key(0));
  auto l1 = fx::nn::Linear::init(k1, 4, 8, fx::nn::initializers::lecun_normal(), fx::nn::initializers::zeros(), fx::float64);
  auto l2 = fx::nn::Linear::init(k2, 8, 3, fx::nn::initializers::lecun_normal(), fx::nn::initializers::zeros(), fx::float64);
  auto ln = fx::nn::LayerNorm::init(8, fx::float64);
  auto mlp = fx::nn::sequential(l1, fx::nn::relu, ln, Scale{0.5}, fx::tanh, l2);
  fx::Array x = fx::reshape(fx::sin(fx::arange(0.0, 20.0, 1.0, fx::float64)), {5, 4});
  fx::Array by_hand = fx::nn::Linear::apply(
      l2, fx::tanh(Scale{0.5}(fx::nn::LayerNorm::apply(ln, fx::nn::relu(fx::nn::Linear::apply(l1, x))))));
  CHECK(fx::allclose(mlp.apply(mlp, x), by_hand, 1e-14, 1e-14).item<bool>());
  CHECK(fx::tree::leaves(mlp).size() == 6);  // two Linear (weight, bias) and LayerNorm (scale, bias)

  // grad is a Sequential of the same structure; jit and vmap go through it.
  using Mlp = decltype(mlp);
  auto loss = [&](const Mlp& m) { return fx::sum(fx::square(Mlp::apply(m, x))); };
  Mlp g = fx::grad(loss)(mlp);
  CHECK(std::get<0>(g.layers).weight.shape() == fx::Shape{4, 8});
  const double h = 1e-6;
  Mlp up = mlp, down = mlp;
  std::get<5>(up.layers).bias = std::get<5>(mlp.layers).bias + h * fx::array({1.0, 0.0, 0.0});
  std::get<5>(down.layers).bias = std::get<5>(mlp.layers).bias - h * fx::array({1.0, 0.0, 0.0});
  CHECK(std::get<5>(g.layers).bias.to_vector<double>()[0] ==
        doctest::Approx((loss(up).item<double>() - loss(down).item<double>()) / (2 * h)).epsilon(1e-6));
  auto fast = fx::jit([](const Mlp& m, const fx::Array& in) { return Mlp::apply(m, in); });
  CHECK(fx::allclose(fast(mlp, x), by_hand, 1e-12, 1e-12).item<bool>());
  CHECK(fx::allclose(fast(mlp, x * 2.0), mlp.apply(mlp, x * 2.0), 1e-12, 1e-12).item<bool>());
  CHECK(fast.compilations() == 1);
  fx::Array per_row = fx::vmap([&](const fx::Array& row) { return Mlp::apply(mlp, row); })(x);
  CHECK(fx::allclose(per_row, by_hand, 1e-12, 1e-12).item<bool>());

  // An optimizer step updates every layer's parameters; a checkpoint names them by position.
  auto opt = fx::optim::sgd(0.1);
  auto state = opt.init(mlp);
  auto [updates, state2] = opt.update(g, state, mlp);
  Mlp stepped = fx::optim::apply_updates(mlp, updates);
  CHECK(loss(stepped).item<double>() < loss(mlp).item<double>());
  const std::string path = (std::filesystem::temp_directory_path() / ("fluxion_seq_" + std::to_string(::getpid()) + ".safetensors")).string();
  fx::save(path, mlp);
  auto names = fx::load<std::map<std::string, fx::Array>>(path);
  CHECK(names.count("layers.0.weight") == 1);
  CHECK(names.count("layers.2.scale") == 1);
  CHECK(names.count("layers.5.bias") == 1);
  Mlp back = fx::load(path, mlp);
  CHECK(fx::allclose(Mlp::apply(back, x), by_hand, 0, 0).item<bool>());
  std::filesystem::remove(path);
}

TEST_CASE("Sequential: a layer's shape error names the layer") {
  auto mlp = fx::nn::sequential(fx::nn::Linear::init(fx::random::key(1), 4, 2), fx::nn::relu);
  try {
    (void)mlp.apply(mlp, fx::zeros({3, 5}));
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).find("Linear(") != std::string::npos);
  }
}
