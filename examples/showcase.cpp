// What Fluxion does today, in one program: arrays, numpy-style ops with broadcasting and JAX type
// promotion, tracing a function into its program, running that program, abstract evaluation,
// trees, autodiff, vmap, jit, control flow, and the errors a user meets. Run it with
// scripts/showcase.sh.
#include <fluxion.h>

#include <chrono>
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

  section("vmap: per-example gradients as one batched program");
  auto example_loss = [](const Layer& l, const fx::Array& x, const fx::Array& y) {
    return fx::sum(fx::square(fx::tanh(fx::matmul(x, l.w) + l.b) - y));
  };
  auto per_example = fx::vmap(fx::grad(example_loss), fx::in_axes(fx::none, 0, 0));
  Layer per = per_example(params, inputs, targets);
  std::cout << "per-example dL/dw: " << per.w.aval().str() << " (64 examples, computed without a loop)\n";
  // mse averages over 64 examples x 2 outputs, so its gradient is half the mean per-example one.
  std::cout << "max |mean of them / 2 - grad(mse)| = "
            << fx::max(fx::abs(fx::mean(per.w, {0}) * 0.5f - fx::grad(mse)(params).w)) << "\n";

  section("jit: the training step compiled once (MLIR -> LLVM), then native code");
  auto sgd_step = [&](const Layer& l) {
    auto [value, grads] = fx::value_and_grad(mse)(l);
    return std::pair{value, fx::tree::map([](const fx::Array& p, const fx::Array& g) { return p - 0.5f * g; }, l, grads)};
  };
  auto compiled_step = fx::jit(sgd_step);
  using Clock = std::chrono::steady_clock;
  auto time_steps = [&](auto&& step_fn) {
    Layer l = params;
    auto t = Clock::now();
    for (int i = 0; i < 200; ++i) l = step_fn(l).second;
    return std::pair{std::chrono::duration<double, std::milli>(Clock::now() - t).count(), l};
  };
  auto t0 = Clock::now();
  compiled_step(params);  // the first call traces, differentiates and compiles
  const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  auto [eager_ms, eager_params] = time_steps(sgd_step);
  auto [jit_ms, jit_params] = time_steps(compiled_step);
  std::cout << "first call (trace + grad + compile): " << first_ms << " ms\n";
  std::cout << "200 steps: eager " << eager_ms << " ms, jit " << jit_ms << " ms; compilations() = "
            << compiled_step.compilations() << "\n";
  std::cout << "same parameters: max |difference| = " << fx::max(fx::abs(eager_params.w - jit_params.w)) << "\n";

  section("control flow: scan an RNN, differentiate through it, compile it");
  fx::Array w_rnn = fx::random::normal(fx::random::fold_in(k1, 7), {3, 3}) * 0.5f;
  fx::Array h0 = fx::zeros({3}), xs = fx::random::normal(fx::random::fold_in(k2, 7), {20, 3});
  auto rnn = [](const fx::Array& w, const fx::Array& h0, const fx::Array& xs) {
    auto [h, ys] = fx::scan([&](const fx::Array& c, const fx::Array& x) {
      fx::Array n = fx::tanh(fx::matmul(w, c) + x);
      return std::pair{n, fx::sum(n)};
    }, h0, xs);
    return fx::sum(ys) + fx::sum(h);
  };
  std::cout << "make_ir(rnn):\n" << fx::make_ir(rnn)(w_rnn, h0, xs) << "\n";
  fx::Array g_eager = fx::grad(rnn)(w_rnn, h0, xs), g_jit = fx::jit(fx::grad(rnn))(w_rnn, h0, xs);
  std::cout << "grad(rnn) wrt w, eager vs jit: max |difference| = " << fx::max(fx::abs(g_eager - g_jit)) << "\n";
  auto halvings = [](const fx::Array& v) {
    auto [n, rest] = fx::while_loop([](const std::pair<fx::Array, fx::Array>& s) { return s.second >= 1.f; },
                                    [](const std::pair<fx::Array, fx::Array>& s) { return std::pair{s.first + 1, s.second * 0.5f}; },
                                    std::pair{fx::scalar(int32_t(0)), v});
    return n;
  };
  std::cout << "while_loop: halvings of 100 until below 1 = " << fx::jit(halvings)(fx::scalar(100.f)) << "\n";
  auto relu_or_square = [](const fx::Array& v) { return fx::cond(fx::sum(v) > 0.f, [&] { return fx::nn::relu(v); }, [&] { return v * v; }); };
  std::cout << "cond: " << fx::jit(relu_or_square)(a) << " and " << fx::jit(relu_or_square)(-a) << "\n";

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
