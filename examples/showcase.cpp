// What Fluxion does today, in one program: arrays, numpy-style ops with broadcasting and JAX type
// promotion, tracing a function into its program, running that program, abstract evaluation,
// trees, and the errors a user meets. Run it with scripts/showcase.sh.
#include <fluxion.h>

#include <iostream>

namespace fx = fluxion;

// A user aggregate whose Array fields are tree leaves (traced by make_ir, mapped by tree::map).
struct Layer {
  fx::Array w, b;
};
FLUXION_TREE(Layer, w, b);

static void section(const char* title) { std::cout << "\n== " << title << " ==\n"; }

int main() {
  section("creation");
  fx::Array a = fx::array({1.f, 2.f, 3.f});
  fx::Array m = fx::array({{1.0, 2.0}, {3.0, 4.0}});
  std::cout << "array({1.f, 2.f, 3.f})       = " << a << "   " << a.aval().str() << "\n";
  std::cout << "array({{1.0, 2.0}, {3.0, 4.0}}) =\n" << m << "\n";
  std::cout << "zeros({2, 3})                =\n" << fx::zeros({2, 3}) << "\n";
  std::cout << "ones({3}, float64)           = " << fx::ones({3}, fx::float64) << "\n";
  std::cout << "full({2, 2}, 7.f)            =\n" << fx::full({2, 2}, 7.f) << "\n";
  std::cout << "arange(5)                    = " << fx::arange(5) << "\n";
  std::cout << "linspace(0.f, 1.f, 5)        = " << fx::linspace(0.f, 1.f, 5) << "\n";
  std::cout << "eye(3)                       =\n" << fx::eye(3) << "\n";

  section("broadcasting and type promotion (C++ scalars are weakly typed)");
  fx::Array col = fx::array({{10.f}, {20.f}});  // f32[2,1]
  std::cout << "col + a  (f32[2,1] + f32[3] -> f32[2,3]) =\n" << col + a << "\n";
  fx::Array h = fx::astype(a, fx::float16);
  std::cout << "f16 * 2.0 stays " << (h * 2.0).aval().str() << ": " << h * 2.0 << "\n";
  std::cout << "i32 + 1 stays " << (fx::arange(3) + 1).aval().str() << ", i32 + 0.5 is "
            << (fx::arange(3) + 0.5).aval().str() << ", i32 + f64 array is "
            << (fx::arange(3) + fx::ones({3}, fx::float64)).aval().str() << "\n";
  std::cout << "where(a > 1.5f, a, -a)       = " << fx::where(a > 1.5f, a, -a) << "\n";
  std::cout << "a * 2.f + sin(a) / exp(-a)   = " << a * 2.f + fx::sin(a) / fx::exp(-a) << "\n";

  section("reductions, shapes and linear algebra");
  std::cout << "sum(m) = " << fx::sum(m) << ", sum(m, {0}) = " << fx::sum(m, {0})
            << ", mean(m, {1}, keepdims) =\n" << fx::mean(m, {1}, true) << "\n";
  std::cout << "argmax(m, 1) = " << fx::argmax(m, 1) << ", logsumexp(m, {1}) = " << fx::logsumexp(m, {1}) << "\n";
  std::cout << "matmul(m, m) =\n" << fx::matmul(m, m) << "\n";
  std::cout << "einsum(\"ij,jk->ik\", m, m) equals it: " << fx::all(fx::einsum("ij,jk->ik", m, m) == fx::matmul(m, m))
            << "\n";
  std::cout << "reshape(arange(6), {2, -1}).T =\n" << fx::transpose(fx::reshape(fx::arange(6), {2, -1})) << "\n";
  std::cout << "take(a, [2, 0]) = " << fx::take(a, fx::array({2, 0}), 0) << "\n";

  section("tracing: make_ir prints the program a function computes");
  auto f = [](const fx::Array& x, const fx::Array& y) {
    fx::Array z = fx::tanh(x) * y + 1.f;
    return fx::where(z > 0.f, z, 0.f);
  };
  fx::Array x = fx::array({-2.f, 0.5f, 3.f});
  fx::Program prog = fx::make_ir(f)(x, a);
  std::cout << prog << "\n";

  section("eval runs a program with the reference kernels");
  std::vector<fx::Array> out = fx::eval(prog, {x, a});
  std::cout << "eval(program, {x, a}) = " << out[0] << "\n";
  std::cout << "f(x, a) eagerly       = " << f(x, a) << "\n";

  section("eval_shape: types only, nothing computed");
  auto g = [](const fx::Array& x) { return fx::astype(x, fx::float64) * fx::ones({4, 1}, fx::float64); };
  std::cout << "eval_shape(g)(f32[3]) = " << fx::eval_shape(g)(x).str() << "\n";

  section("trees: a struct registered with FLUXION_TREE");
  Layer layer{fx::ones({2, 2}), fx::zeros({2})};
  Layer halved = fx::tree::map([](const fx::Array& leaf) { return leaf * 0.5f + 1.f; }, layer);
  std::cout << "tree::map(leaf * 0.5f + 1.f): w =\n" << halved.w << "\n  b = " << halved.b << "\n";
  auto apply = [](const Layer& l, const fx::Array& v) { return fx::tanh(l.w * v + l.b); };
  std::cout << "make_ir over a Layer and an Array:\n" << fx::make_ir(apply)(layer, fx::ones({2})) << "\n";

  section("random numbers: threefry2x32 keys, the same bits as JAX");
  auto key = fx::random::key(0);
  auto [k1, k2] = fx::random::split(key);
  std::cout << "split(key(0)) = " << k1 << " " << k2 << "\n";
  std::cout << "uniform(key(0)) = " << fx::random::uniform(key, {}) << " (JAX: 0.41845703)\n";
  std::cout << "normal(k1, {2, 3}) =\n" << fx::random::normal(k1, {2, 3}) << "\n";

  section("autodiff: grad is a program rewrite");
  auto loss_sin = [](const fx::Array& v) { return fx::sum(fx::sin(v)); };
  std::cout << "make_ir(grad(sum(sin(x)))):\n" << fx::make_ir(fx::grad(loss_sin))(a) << "\n";
  std::cout << "grad(sum(sin))(a) = " << fx::grad(loss_sin)(a) << " == cos(a) = " << fx::cos(a) << "\n";
  auto cube = [](const fx::Array& v) { return v * v * v; };
  std::cout << "grad(grad(x^3))(2) = " << fx::grad(fx::grad(cube))(fx::scalar(2.f)) << "\n";
  std::cout << "hessian(sum(x^3))(a) =\n" << fx::hessian([](const fx::Array& v) { return fx::sum(v * v * v); })(a) << "\n";

  section("training a Layer with grad and SGD (a tree of parameters)");
  fx::Array inputs = fx::random::normal(k2, {64, 2});
  fx::Array targets = fx::tanh(fx::matmul(inputs, fx::array({{1.5f, -0.5f}, {0.3f, 0.8f}})) + 0.1f);
  Layer params{fx::random::normal(k1, {2, 2}) * 0.1f, fx::zeros({2})};
  auto mse = [&](const Layer& l) {
    fx::Array pred = fx::tanh(fx::matmul(inputs, l.w) + l.b);
    return fx::mean(fx::square(pred - targets));
  };
  for (int step = 0; step <= 200; ++step) {
    auto [value, grads] = fx::value_and_grad(mse)(params);
    if (step % 50 == 0) std::cout << "step " << step << "  loss " << value << "\n";
    params = fx::tree::map([](const fx::Array& p, const fx::Array& g) { return p - 0.5f * g; }, params, grads);
  }
  std::cout << "learned w =\n" << params.w << "\n";

  section("errors name the op, the operand types and your line");
  try {
    auto branchy = [](const fx::Array& v) { return v > 0.f ? v : -v; };  // a C++ branch on a traced value
    fx::make_ir(branchy)(x);
  } catch (const fx::ConcretizationError& e) {
    std::cout << "ConcretizationError caught:\n  " << e.what() << "\n";
  }
  try {
    fx::Array bad = fx::ones({3}) + fx::ones({4});
    std::cout << bad << "\n";
  } catch (const fx::ShapeError& e) {
    std::cout << "ShapeError caught:\n  " << e.what() << "\n";
  }
  return 0;
}
