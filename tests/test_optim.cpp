// fx::optim: every optimizer's steps against the same updates computed by hand in double, on a
// parameter tree of two leaves over several steps with changing gradients; the jitted step against
// the eager one; masks, clipping, chains and state mismatches.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <functional>
#include <vector>

namespace fx = fluxion;

namespace optim_test {
struct P {
  fx::Array w, b;
};
FLUXION_TREE(P, w, b);
}  // namespace optim_test

namespace {

using optim_test::P;

// The gradient at step k, element i of the concatenated leaves: varied in sign and size.
double grad_at(int k, size_t i) { return std::sin(1.3 * double(i) + 0.7 * k) * (1 + 0.5 * k); }

const std::vector<double> kInit = {0.5, -1.0, 2.0, 0.25, -0.75};  // w: 4 elements, b: 1

P make_params() {
  return P{fx::array(std::vector<float>{0.5f, -1.f, 2.f, 0.25f}, {2, 2}), fx::array({-0.75f})};
}

P grads_at(int k) {
  std::vector<float> g(5);
  for (size_t i = 0; i < 5; ++i) g[i] = float(grad_at(k, i));
  return P{fx::array(std::vector<float>(g.begin(), g.begin() + 4), {2, 2}), fx::array({g[4]})};
}

std::vector<double> flat(const P& p) {
  std::vector<double> out;
  for (const auto& l : fx::tree::leaves(p))
    for (float v : l.to_vector<float>()) out.push_back(v);
  return out;
}

// Hand reference: a per-element step (param, grad, step number from 1, per-element state) -> new param.
using Step = std::function<double(double p, double g, int t, std::vector<double>& s, size_t i)>;

void check_against_hand(const fx::optim::GradientTransformation& opt, const Step& step, int steps = 4,
                        double tol = 2e-5) {
  P params = make_params();
  fx::optim::State state = opt.init(params);
  std::vector<double> want = kInit;
  std::vector<std::vector<double>> hand_state(want.size(), std::vector<double>(4, 0.0));
  for (int k = 0; k < steps; ++k) {
    auto [updates, next] = opt.update(grads_at(k), state, params);
    params = fx::optim::apply_updates(params, updates);
    state = next;
    for (size_t i = 0; i < want.size(); ++i) want[i] = step(want[i], grad_at(k, i), k + 1, hand_state[i], i);
    std::vector<double> got = flat(params);
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
  }
}

}  // namespace

TEST_CASE("optim: sgd, with momentum and Nesterov, against hand updates") {
  const double lr = 0.1, m = 0.9;
  check_against_hand(fx::optim::sgd(lr), [&](double p, double g, int, auto&, size_t) { return p - lr * g; });
  check_against_hand(fx::optim::sgd(lr, m), [&](double p, double g, int, auto& s, size_t) {
    s[0] = g + m * s[0];
    return p - lr * s[0];
  });
  check_against_hand(fx::optim::sgd(lr, m, /*nesterov=*/true), [&](double p, double g, int, auto& s, size_t) {
    s[0] = g + m * s[0];
    return p - lr * (g + m * s[0]);
  });
}

TEST_CASE("optim: adam and adamw (decoupled decay, masked) against hand updates") {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  auto adam_dir = [&](double g, int t, std::vector<double>& s) {
    s[0] = b1 * s[0] + (1 - b1) * g;
    s[1] = b2 * s[1] + (1 - b2) * g * g;
    double mh = s[0] / (1 - std::pow(b1, t)), vh = s[1] / (1 - std::pow(b2, t));
    return mh / (std::sqrt(vh) + eps);
  };
  check_against_hand(fx::optim::adam(lr), [&](double p, double g, int t, auto& s, size_t) {
    return p - lr * adam_dir(g, t, s);
  });
  check_against_hand(fx::optim::adamw(lr, wd), [&](double p, double g, int t, auto& s, size_t) {
    return p - lr * (adam_dir(g, t, s) + wd * p);
  });
  // matrices_only: the bias (element 4, a vector) is not decayed.
  check_against_hand(fx::optim::adamw(lr, wd, b1, b2, eps, fx::optim::matrices_only()),
                     [&](double p, double g, int t, auto& s, size_t i) {
                       return p - lr * (adam_dir(g, t, s) + (i < 4 ? wd * p : 0.0));
                     });
  // The same mask as explicit flags in leaf order.
  check_against_hand(fx::optim::adamw(lr, wd, b1, b2, eps, std::vector<bool>{false, true}),
                     [&](double p, double g, int t, auto& s, size_t i) {
                       return p - lr * (adam_dir(g, t, s) + (i == 4 ? wd * p : 0.0));
                     });
}

TEST_CASE("optim: rmsprop, adagrad and lion against hand updates") {
  const double lr = 0.05;
  check_against_hand(fx::optim::rmsprop(lr, 0.9, 1e-8), [&](double p, double g, int, auto& s, size_t) {
    s[0] = 0.9 * s[0] + 0.1 * g * g;
    return p - lr * g / std::sqrt(s[0] + 1e-8);
  });
  check_against_hand(fx::optim::rmsprop(lr, 0.9, 1e-8, /*momentum=*/0.5), [&](double p, double g, int, auto& s, size_t) {
    s[0] = 0.9 * s[0] + 0.1 * g * g;
    s[1] = g / std::sqrt(s[0] + 1e-8) + 0.5 * s[1];
    return p - lr * s[1];
  });
  check_against_hand(fx::optim::adagrad(lr, 0.1, 1e-7), [&](double p, double g, int t, auto& s, size_t) {
    if (t == 1) s[0] = 0.1;
    s[0] += g * g;
    return p - lr * g / std::sqrt(s[0] + 1e-7);
  });
  check_against_hand(fx::optim::lion(lr, 0.9, 0.99, 0.01), [&](double p, double g, int, auto& s, size_t) {
    double c = 0.9 * s[0] + 0.1 * g;
    double dir = c > 0 ? 1 : c < 0 ? -1 : 0;
    s[0] = 0.99 * s[0] + 0.01 * g;
    return p - lr * (dir + 0.01 * p);
  });
}

TEST_CASE("optim: a schedule drives the step size; clip_by_global_norm in a chain") {
  auto sched = fx::optim::piecewise_constant(0.1, {{2, 0.5}});
  check_against_hand(fx::optim::sgd(sched), [&](double p, double g, int t, auto&, size_t) {
    return p - (t <= 2 ? 0.1 : 0.05) * g;
  });
  // The global norm of every step's gradient exceeds 1: each update is g / |g| * max.
  const double max_norm = 1.0;
  auto opt = fx::optim::chain(fx::optim::clip_by_global_norm(max_norm), fx::optim::sgd(1.0));
  P params = make_params();
  auto state = opt.init(params);
  for (int k = 0; k < 3; ++k) {
    double norm = 0;
    for (size_t i = 0; i < 5; ++i) norm += grad_at(k, i) * grad_at(k, i);
    norm = std::sqrt(norm);
    REQUIRE(norm > max_norm);
    auto [u, next] = opt.update(grads_at(k), state, params);
    state = next;
    std::vector<double> got = flat(u);
    for (size_t i = 0; i < 5; ++i) CHECK(got[i] == doctest::Approx(-grad_at(k, i) / norm * max_norm).epsilon(1e-5));
    CHECK(fx::optim::global_norm(u).item<float>() == doctest::Approx(max_norm).epsilon(1e-5));
  }
  // Below the threshold the updates pass unchanged.
  auto loose = fx::optim::clip_by_global_norm(100.0);
  auto [u, s] = loose.update(grads_at(0), loose.init(params));
  CHECK(flat(u) == flat(grads_at(0)));
}

TEST_CASE("optim: the jitted train step equals the eager one, and compiles once") {
  auto opt = fx::optim::chain(fx::optim::clip_by_global_norm(1.0),
                              fx::optim::adamw(fx::optim::warmup_cosine_decay(0.0, 0.01, 2, 10), 1e-2));
  auto step = [&](const P& p, const fx::optim::State& s, const P& g) { return opt.step(g, s, p); };
  auto jitted = fx::jit(step);
  P pe = make_params(), pj = pe;
  auto se = opt.init(pe), sj = se;
  for (int k = 0; k < 4; ++k) {
    auto [u, next] = opt.update(grads_at(k), se, pe);  // eager, unfused
    pe = fx::optim::apply_updates(pe, u);
    se = next;
    std::tie(pj, sj) = jitted(pj, sj, grads_at(k));
  }
  std::vector<double> e = flat(pe), j = flat(pj);
  for (size_t i = 0; i < e.size(); ++i) CHECK(j[i] == doctest::Approx(e[i]).epsilon(1e-5));
  CHECK(jitted.compilations() == 1);
  CHECK(sj[0][0].item<int32_t>() == 4);  // the adam step count
}

TEST_CASE("optim: step() is update() then apply_updates(), with a global stage mid-chain") {
  // clip_by_global_norm after momentum needs every leaf's momentum first: two passes over the leaves.
  auto opt = fx::optim::chain(fx::optim::trace(0.9), fx::optim::clip_by_global_norm(0.5),
                              fx::optim::adamw(0.01, 0.1, 0.9, 0.999, 1e-8, fx::optim::matrices_only()));
  P pa = make_params(), pb = pa;
  auto sa = opt.init(pa), sb = sa;
  for (int k = 0; k < 3; ++k) {
    auto [u, next] = opt.update(grads_at(k), sa, pa);
    pa = fx::optim::apply_updates(pa, u);
    sa = next;
    std::tie(pb, sb) = opt.step(grads_at(k), sb, pb);
    CHECK(flat(pa) == flat(pb));
  }
  REQUIRE(sa.size() == sb.size());
  for (size_t i = 0; i < sa.size(); ++i)
    for (size_t j = 0; j < sa[i].size(); ++j) CHECK(sa[i][j].to_vector<float>() == sb[i][j].to_vector<float>());
}

TEST_CASE("optim: step() emits each parameter's whole update as one run of ops (what the jit fuses)") {
  // The jit fuses consecutive elementwise ops over one shape: in the traced step, the ops over each
  // parameter's shape must form one contiguous run, the scalar ops (counts, bias corrections)
  // coming first.
  auto opt = fx::optim::chain(fx::optim::clip_by_global_norm(1.0), fx::optim::adamw(0.01, 0.1));
  P params = make_params();
  auto state = opt.init(params);
  fx::Program prog = fx::make_ir([&](const P& p, const fx::optim::State& s, const P& g) {
    return opt.step(g, s, p);
  })(params, state, grads_at(0));
  auto run_of = [&](const fx::Shape& shape, size_t from) {
    std::vector<size_t> at;
    for (size_t i = from; i < prog.eqns.size(); ++i)
      if (prog.types[size_t(prog.eqns[i].outputs[0])].shape == shape) at.push_back(i);
    return at;
  };
  // After the global norm (its reductions come first), each leaf's ops are contiguous.
  size_t after_norm = 0;
  for (size_t i = 0; i < prog.eqns.size(); ++i)
    if (prog.eqns[i].prim == fx::Prim::reduce_sum) after_norm = i + 1;
  for (const fx::Shape& shape : {fx::Shape{2, 2}, fx::Shape{1}}) {
    std::vector<size_t> at = run_of(shape, after_norm);
    REQUIRE(at.size() > 8);
    CHECK(at.back() - at.front() + 1 == at.size());
  }
}

TEST_CASE("optim: a state from another optimizer or model is a ValueError") {
  P params = make_params();
  auto adam = fx::optim::adam(0.1);
  auto sgd_state = fx::optim::sgd(0.1, 0.9).init(params);
  CHECK_THROWS_AS(adam.update(grads_at(0), sgd_state, params), fx::ValueError);
  auto other = adam.init(std::vector<fx::Array>{fx::ones({3})});
  CHECK_THROWS_AS(adam.update(grads_at(0), other, params), fx::ValueError);
  // Weight decay needs the parameters.
  auto adamw = fx::optim::adamw(0.1, 0.1);
  CHECK_THROWS_AS(adamw.update(grads_at(0), adamw.init(params)), fx::ValueError);
}
