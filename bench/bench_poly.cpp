// Shape polymorphism (issue 32's targets), each jitted once with a symbolic size against the same
// function jitted for each fixed size, in one run; both sides warmed up, best of `repeats` calls,
// and the compile time of each side:
//   mlp          the MLP training step (784-512-10, SGD) over a symbolic batch b (target >= 0.9x);
//   transformer  a pre-norm transformer block (d 256, 4 heads, MLP 1024, batch 8) over a symbolic
//                sequence length t = 16 ... 512 (target >= 0.85x).
// Usage: fluxion_bench_poly [repeats [sections...]]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fluxion.h>

#include "bench/models.h"
#include "bench/timing.h"

namespace fx = fluxion;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

bool want(int argc, char** argv, const char* section) {
  if (argc <= 2) return true;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], section) == 0) return true;
  return false;
}

const char* kHeader = "%6s %12s %12s %8s %14s %14s %10s\n";

void print_header(const char* size_name) {
  std::printf(kHeader, size_name, "fixed ms", "poly ms", "ratio", "fixed compile", "poly 1st call", "max |diff|");
}

// One row: `fixed()` and `poly()` each return the array the two compiles must agree on; the first
// call of each is its compile (the polymorphic one compiles on the first size only).
template <class Fixed, class Poly>
void compare_row(int64_t size, int repeats, Fixed fixed, Poly poly) {
  auto t = Clock::now();
  const fx::Array a = fixed();
  a.block_until_ready();
  const double fixed_compile = ms_since(t);
  t = Clock::now();
  const fx::Array b = poly();
  b.block_until_ready();
  const double poly_first = ms_since(t);
  const double diff = fx::max(fx::abs(a - b)).item<float>();
  const double f = fluxion_bench::best_ms([&] { fixed().block_until_ready(); }, repeats);
  const double q = fluxion_bench::best_ms([&] { poly().block_until_ready(); }, repeats);
  std::printf("%6lld %12.3f %12.3f %7.2fx %11.1f ms %11.1f ms %10.2g\n", (long long)size, f, q, f / q, fixed_compile,
              poly_first, diff);
}

void mlp_rows(int repeats) {
  const bench::MlpData data;
  const bench::Mlp p = data.p;
  auto step = [p](const fx::Array& x, const fx::Array& y) {
    auto [loss, g] = fx::value_and_grad(bench::mlp_loss)(p, x, y);
    return std::pair{loss, bench::Mlp{p.w1 - 0.01f * g.w1, p.b1 - 0.01f * g.b1, p.w2 - 0.01f * g.w2, p.b2 - 0.01f * g.b2}};
  };
  auto poly = fx::jit(step, fx::polymorphic_shapes("b, 784", "b, 10"));
  const char* threads = std::getenv("FLUXION_NUM_THREADS");
  std::printf("MLP step 784-512-10, best of %d, FLUXION_NUM_THREADS=%s\n", repeats, threads ? threads : "(default)");
  print_header("batch");
  for (int64_t b : {1, 7, 64, 256, 1000}) {
    const fx::Array x = fx::random::normal(fx::random::key(uint32_t(b)), {b, 784});
    const fx::Array y = fx::nn::one_hot(fx::random::randint(fx::random::key(7), {b}, 0, 10), 10);
    auto fixed = fx::jit(step);
    compare_row(b, repeats, [&] { return fixed(x, y).second.w1; }, [&] { return poly(x, y).second.w1; });
  }
  std::printf("polymorphic compilations: %lld (one for every batch)\n\n", (long long)poly.compilations());
}

// A pre-norm transformer block: x + attention(norm(x)), then + mlp(norm(.)). x: [batch, t, d].
struct Block {
  fx::Array wq, wk, wv, wo, w1, w2, g1, g2;
};

fx::Array layer_norm(const fx::Array& x, const fx::Array& g) {
  const fx::Array mu = fx::mean(x, {-1}, true);
  const fx::Array c = x - mu;
  return c * fx::rsqrt(fx::mean(c * c, {-1}, true) + 1e-5f) * g;
}

fx::Array block(const Block& w, const fx::Array& x) {
  constexpr int64_t heads = 4;
  const fx::Shape& s = x.shape();  // [b, t, d]; t may be symbolic
  const int64_t d = s[2], dh = d / heads;
  auto split = [&](const fx::Array& y) { return fx::transpose(fx::reshape(y, {s[0], s[1], heads, dh}), {0, 2, 1, 3}); };
  const fx::Array h = layer_norm(x, w.g1);
  const fx::Array q = split(fx::matmul(h, w.wq)), k = split(fx::matmul(h, w.wk)), v = split(fx::matmul(h, w.wv));
  const fx::Array a = fx::nn::softmax(fx::matmul(q, fx::swapaxes(k, 2, 3)) * (1.f / 8.f), -1);  // [b, heads, t, t]
  const fx::Array o = fx::reshape(fx::transpose(fx::matmul(a, v), {0, 2, 1, 3}), s);
  const fx::Array y = x + fx::matmul(o, w.wo);
  return y + fx::matmul(fx::nn::gelu(fx::matmul(layer_norm(y, w.g2), w.w1)), w.w2);
}

void transformer_rows(int repeats) {
  constexpr int64_t batch = 8, d = 256, hidden = 1024;
  auto init = [](uint32_t seed, fx::Shape shape) { return fx::random::normal(fx::random::key(seed), shape) * 0.05f; };
  const Block w{init(1, {d, d}), init(2, {d, d}), init(3, {d, d}), init(4, {d, d}), init(5, {d, hidden}), init(6, {hidden, d}),
                fx::ones({d}), fx::ones({d})};
  auto f = [w](const fx::Array& x) { return block(w, x); };
  auto poly = fx::jit(f, fx::polymorphic_shapes("8, t, 256"));
  std::printf("transformer block d=%lld, 4 heads, MLP %lld, batch %lld, best of %d\n", (long long)d, (long long)hidden,
              (long long)batch, repeats);
  print_header("t");
  for (int64_t t : {16, 64, 128, 256, 512}) {
    const fx::Array x = fx::random::normal(fx::random::key(uint32_t(t)), {batch, t, d});
    auto fixed = fx::jit(f);
    compare_row(t, repeats, [&] { return fixed(x); }, [&] { return poly(x); });
  }
  std::printf("polymorphic compilations: %lld (one for every length)\n", (long long)poly.compilations());
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  setenv("FLUXION_CACHE_DIR", "off", 1);  // cold compiles: the compile columns measure the compiler
  if (want(argc, argv, "mlp")) mlp_rows(repeats);
  if (want(argc, argv, "transformer")) transformer_rows(repeats);
}
