#!/usr/bin/python3
"""Writes the notebooks of this folder from the cells below, without outputs: run_notebooks.py
--update then executes them and writes their outputs in (they are committed with them).
Run after editing: /usr/bin/python3 notebooks/make_notebooks.py  (needs python3-nbformat)."""
import os
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = {"kernelspec": {"name": "fluxion-cpp", "display_name": "C++20 (clang-repl-19, Fluxion)", "language": "c++"}}
PRELUDE = '#include <fluxion.h>\n#include <iostream>\nnamespace fx = fluxion;'


def notebook(name, cells):
    nb = new_notebook(metadata=KERNEL)
    for c in cells:
        nb.cells.append(new_markdown_cell(c[4:].strip()) if c.startswith("md: ") else new_code_cell(c.strip()))
    nbformat.write(nb, os.path.join(HERE, name + ".ipynb"))


notebook("01_quickstart", [
    "md: # Quick start\nArrays, numpy-style functions, and the four transformations: `grad`, `vmap`, `jit`, `make_ir`.\n"
    "Each cell is C++20 run by clang-repl; values are printed explicitly.",
    PRELUDE,
    """
fx::Array x = fx::array(std::vector<float>{1.f, 2.f, 3.f});
fx::Array m = fx::reshape(fx::arange(6, fx::float32), {2, 3});
std::cout << "x = " << x << "\\nm =\\n" << m << "\\nm @ x = " << fx::matmul(m, x) << std::endl;
""",
    "md: `fx::grad` differentiates a function returning a scalar.",
    """
auto loss = [](const fx::Array& v) { return fx::sum(fx::tanh(v) * v); };
std::cout << "loss = " << loss(x) << "\\ngrad = " << fx::grad(loss)(x) << std::endl;
""",
    "md: `fx::vmap` maps a per-example function over a batch axis; `fx::make_ir` shows the traced program.",
    """
auto per_row = [](const fx::Array& row) { return fx::sum(row * row); };
std::cout << fx::vmap(per_row)(m) << std::endl;
std::cout << fx::make_ir(fx::vmap(per_row))(m) << std::endl;
""",
    "md: `fx::jit` compiles through MLIR to native code, once per input signature.",
    """
auto f = fx::jit([](const fx::Array& a) { return fx::sum(fx::exp(a) / (1.f + a * a)); });
std::cout << f(x) << " " << f(x) << " compilations: " << f.compilations() << std::endl;
""",
])

notebook("02_autodiff_cookbook", [
    "md: # Autodiff cookbook\nForward and reverse mode, Jacobians, Hessians, and custom rules.",
    PRELUDE,
    """
auto f = [](const fx::Array& v) { return fx::sin(v) * v; };
fx::Array x = fx::array(std::vector<double>{0.5, 1.0, 2.0});
auto [y, jt] = fx::jvp(f, std::tuple{x}, std::tuple{fx::ones_like(x)});
std::cout << "f(x) = " << y << "\\nJ 1 = " << jt << std::endl;
auto [y2, f_vjp] = fx::vjp(f, x);
std::cout << "1^T J = " << f_vjp(fx::ones_like(x)) << std::endl;
""",
    "md: Jacobians by columns (`jacfwd`) and rows (`jacrev`), and the Hessian of a scalar function.",
    """
auto g = [](const fx::Array& v) { return fx::stack({fx::sum(v * v), fx::prod(v)}); };
std::cout << "jacfwd:\\n" << fx::jacfwd(g)(x) << "\\njacrev:\\n" << fx::jacrev(g)(x) << std::endl;
auto energy = [](const fx::Array& v) { return fx::sum(v * v * v) / 3.0; };
std::cout << "hessian:\\n" << fx::hessian(energy)(x) << std::endl;
""",
    "md: A custom JVP rule keeps the gradient of a numerically naive function finite.",
    """
auto naive = [](const fx::Array& v) { return fx::log(fx::sum(fx::exp(v))); };
auto stable = fx::custom_jvp(naive, [](auto primals, auto tangents) {
  auto [v] = primals;
  auto [t] = tangents;
  fx::Array mx = fx::stop_gradient(fx::max(v));
  fx::Array out = mx + fx::log(fx::sum(fx::exp(v - mx)));
  return std::pair{out, fx::sum(fx::exp(v - out) * t)};
});
fx::Array big = fx::array(std::vector<double>{1000.0, 1001.0, 1002.0});
std::cout << "naive grad: " << fx::grad(naive)(big) << "\\ncustom grad: " << fx::grad(stable)(big) << std::endl;
""",
])

notebook("03_control_flow", [
    "md: # Control flow under tracing\n`cond`, `while_loop`, `fori_loop` and `scan` are traced once and differentiate and compile.",
    PRELUDE,
    """
auto relu_ish = [](const fx::Array& v) {
  return fx::cond(fx::sum(v) > 0.f, [&] { return v * 2.f; }, [&] { return -v; });
};
fx::Array x = fx::array(std::vector<float>{0.5f, -1.f, 2.f});
std::cout << relu_ish(x) << " " << fx::jit(relu_ish)(-x) << std::endl;
""",
    """
auto body = [](const fx::Array& i, const fx::Array& acc) { return acc + fx::astype(i, fx::float32); };
std::cout << "sum 0..99 = " << fx::fori_loop(0, 100, body, fx::scalar(0.f)) << std::endl;
""",
    "md: `scan` carries a state across steps; `fx::debug::print` prints inside it when the compiled code runs.",
    """
auto cumulative = fx::jit([](const fx::Array& xs) {
  auto step = [](const fx::Array& carry, const fx::Array& v) {
    fx::debug::print("carry {}", carry);
    return std::pair{carry + v, carry * v};
  };
  return fx::scan(step, fx::scalar(0.f), xs).first;
});
fx::Array total = cumulative(x);  // prints once per step, as the compiled loop runs
std::cout << "total " << total << std::endl;
""",
])

notebook("04_training", [
    "md: # Training a model\nA two-layer network fit to a sine wave by gradient descent, `value_and_grad` under `jit`, and the loss curve.",
    PRELUDE + '\n#include <cmath>\n#include <vector>',
    """
struct Params { fx::Array w1, b1, w2, b2; };
FLUXION_TREE(Params, w1, b1, w2, b2);
auto key = fx::random::key(0);
Params params{fx::random::normal(fx::random::fold_in(key, 1), {1, 32}), fx::zeros({32}),
              fx::random::normal(fx::random::fold_in(key, 2), {32, 1}) * 0.1f, fx::zeros({1})};
fx::Array xs = fx::reshape(fx::linspace(-3.0, 3.0, 64), {64, 1});
fx::Array ys = fx::sin(xs);
auto predict = [](const Params& p, const fx::Array& x) { return fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) + p.b2; };
// Lambdas at the top level of a notebook cell capture nothing: they read the globals directly.
auto loss = [](const Params& p) { return fx::mean(fx::square(predict(p, xs) - ys)); };
std::cout << "initial loss " << loss(params) << std::endl;
""",
    """
auto step = fx::jit([](const Params& p) {
  auto [l, g] = fx::value_and_grad(loss)(p);
  return std::pair{l, fx::tree::map([](const fx::Array& w, const fx::Array& d) { return w - 0.02f * d; }, p, g)};
});
std::vector<double> steps, losses;
for (int i = 0; i < 300; ++i) {
  auto [l, next] = step(params);
  params = next;
  steps.push_back(i);
  losses.push_back(l.item<float>());
}
std::cout << "final loss " << losses.back() << std::endl;
nb::Figure fig("training loss");
fig.xlabel = "step";
fig.ylabel = "mse";
fig.line(steps, losses, "loss").show();
""",
])

notebook("05_performance_tour", [
    "md: # Performance tour\nThe profiler (Chrome-trace JSON for ui.perfetto.dev and a summary table), compile-cache "
    "behaviour, and program dumps (`FLUXION_DUMP=dir` writes each stage of a compile).",
    PRELUDE,
    """
auto mlp = fx::jit([](const fx::Array& x, const fx::Array& w) { return fx::sum(fx::tanh(fx::matmul(x, w))); });
fx::Array x = fx::ones({64, 128}), w = fx::ones({128, 64}) * 0.01f;
fx::profiler::start_trace(nb::data_dir() + "/trace");
{
  fx::profiler::annotate a("first call: trace + compile + run");
  mlp(x, w);
}
for (int i = 0; i < 10; ++i) mlp(x, w);
std::string file = fx::profiler::stop_trace();
std::cout << "trace written to " << file << "\\n" << fx::profiler::summary(12) << std::endl;
""",
    "md: Fusion, measured: `tanh(x) * 2 + 1` eagerly (three primitives, three passes over memory, each "
    "dispatched) against the same function under `jit` (one fused loop), per element as the array grows. "
    "Eagerly, `tanh` on a large array runs compiled too (from 1M elements at once, from 16K at the third call "
    "of the same shape: `FLUXION_EAGER_COMPILE`), so the eager curve drops once it pays its one compile -- "
    "which the 20 timed calls at 16K-256K elements include.",
    """
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
fx::Array chain(const fx::Array& v) { return fx::tanh(v) * 2.f + 1.f; }
double us_per_call(const std::function<fx::Array(const fx::Array&)>& fn, const fx::Array& v) {
  fn(v).block_until_ready();  // the jit compiles on its first call: not timed
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 20; ++r) fn(v).block_until_ready();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20;
}
""",
    """
auto chain_jit = fx::jit(chain);
std::vector<double> sizes, eager_ns, jit_ns;
for (int n = 1 << 8; n <= 1 << 20; n <<= 2) {
  fx::Array v = fx::ones({n});
  sizes.push_back(n);
  eager_ns.push_back(1000 * us_per_call(chain, v) / n);
  jit_ns.push_back(1000 * us_per_call(chain_jit, v) / n);
  std::printf("n = %8d   eager %8.3f ns/element   jit %8.3f ns/element\\n", n, eager_ns.back(), jit_ns.back());
}
std::fflush(stdout);
nb::Figure speed("tanh(x) * 2 + 1: time per element");
speed.xlabel = "elements (log2)";
speed.ylabel = "ns per element";
speed.logy = true;
std::vector<double> log2n;
for (double n : sizes) log2n.push_back(std::log2(n));
speed.line(log2n, eager_ns, "eager").line(log2n, jit_ns, "jit (fused)").show();
""",
    "md: The program the jit compiles, as text (the same form `fx::serialize` stores):",
    """
std::cout << fx::make_ir([](const fx::Array& a, const fx::Array& b) { return fx::sum(fx::tanh(fx::matmul(a, b))); })(x, w) << std::endl;
""",
])
