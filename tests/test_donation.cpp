// Buffer donation (fx::jit(f, fx::donate_argnums(...)), interpreters/donation.h): results equal the
// undonated call's; an output takes a donated buffer only where the compiled code reads the input
// first and nothing else shares the buffer; a donated array raises ValueError naming it when used.
#include <doctest/doctest.h>

#include <fluxion.h>

#include <cmath>
#include <functional>
#include <string>

namespace {
namespace fx = fluxion;

fx::Array wave(const fx::Shape& s, double phase) {
  std::vector<float> v(size_t(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.37 * double(i) + phase));
  return fx::array(v, s);
}

// A fresh copy with a buffer of its own (the original stays live for comparisons).
fx::Array copy(const fx::Array& a) { return fx::array(a.to_vector<float>(), a.shape()); }

void expect_deleted(const fx::Array& a, const std::string& what) {
  try {
    (void)a.to_vector<float>();
    FAIL("a donated array was readable");
  } catch (const fx::ValueError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.find("donated") != std::string::npos);
    CHECK(msg.find(what) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("donation: an elementwise update writes into the donated buffer; the donated array is deleted") {
  auto update = [](const fx::Array& p, const fx::Array& g) { return p - 0.1f * g; };
  const fx::Array p0 = wave({64, 33}, 0), g = wave({64, 33}, 1);
  const fx::Array want = fx::jit(update)(p0, g);
  fx::Array p = copy(p0);
  const void* before = p.data();
  auto step = fx::jit(update, fx::donate_argnums(0));
  fx::Array got = step(p, g);
  CHECK(got.data() == before);  // in place
  CHECK(got.to_vector<float>() == want.to_vector<float>());
  expect_deleted(p, "argument 0");
  CHECK(p.shape() == fx::Shape{64, 33});  // the type is still known
  CHECK_THROWS_AS(fx::sin(p), fx::ValueError);
  CHECK_THROWS_AS(step(p, g), fx::ValueError);
  // g was not donated: still live. The result can be donated in turn (a training loop).
  CHECK(g.to_vector<float>() == wave({64, 33}, 1).to_vector<float>());
  for (int i = 0; i < 3; ++i) got = step(got, g);
  CHECK(got.data() == before);
  CHECK(step.compilations() == 1);
  // Argument numbers are checked.
  CHECK_THROWS_AS(fx::jit(update, fx::donate_argnums(2))(p0, g), fx::ValueError);
}

TEST_CASE("donation: a buffer shared with a live array, another argument or a closure is not taken") {
  auto update = [](const fx::Array& p, const fx::Array& g) { return p * 2.f + g; };
  const fx::Array p0 = wave({16, 8}, 0.5);
  const std::vector<float> want = fx::jit(update)(p0, p0).to_vector<float>();
  {  // a second array over the same buffer (as a view would be)
    fx::Array p = copy(p0);
    fx::Array view(std::make_shared<fx::ArrayImpl>(*p.impl()));
    fx::Array got = fx::jit(update, fx::donate_argnums(0))(p, p0);
    CHECK(got.data() != view.data());
    CHECK(got.to_vector<float>() == want);
    CHECK(view.to_vector<float>() == p0.to_vector<float>());  // untouched
    expect_deleted(p, "argument 0");
  }
  {  // the same array as a donated and an undonated argument
    fx::Array p = copy(p0);
    const void* before = p.data();
    fx::Array got = fx::jit(update, fx::donate_argnums(0))(p, p);
    CHECK(got.data() != before);
    CHECK(got.to_vector<float>() == want);
  }
  {  // closed over by the function
    fx::Array p = copy(p0);
    const void* before = p.data();
    auto f = fx::jit([&](const fx::Array& a) { return a * 2.f + p; }, fx::donate_argnums(0));
    fx::Array alias = p;  // the same array: deleted with it
    fx::Array got = f(alias);
    CHECK(got.data() != before);
    CHECK(got.to_vector<float>() == want);
  }
}

TEST_CASE("donation: outputs the compiled code cannot write in place get fresh buffers, with the right values") {
  const fx::Array x0 = wave({24, 24}, 0.2);
  struct Case {
    const char* label;
    std::function<std::vector<fx::Array>(const fx::Array&)> f;
  };
  const Case cases[] = {
      {"transpose", [](const fx::Array& x) { return std::vector<fx::Array>{fx::transpose(x) + 1.f}; }},
      {"reversed", [](const fx::Array& x) { return std::vector<fx::Array>{fx::flip(x, {0}) * 3.f}; }},
      {"read after the write", [](const fx::Array& x) {
         fx::Array y = x + 1.f;
         return std::vector<fx::Array>{y, fx::sum(x * x, {1})};
       }},
      {"input returned too", [](const fx::Array& x) { return std::vector<fx::Array>{x * 2.f, x}; }},
      {"matrix product", [](const fx::Array& x) { return std::vector<fx::Array>{fx::matmul(x, x)}; }},
      {"broadcast row", [](const fx::Array& x) {
         return std::vector<fx::Array>{fx::broadcast_to(fx::slice(x, {0, 0}, {1, 24}), {24, 24}) - x};
       }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.label);
    const std::vector<fx::Array> want = fx::jit(c.f)(x0);
    fx::Array x = copy(x0);
    const void* before = x.data();
    const std::vector<fx::Array> got = fx::jit(c.f, fx::donate_argnums(0))(x);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].to_vector<float>() == want[i].to_vector<float>());
      CHECK(got[i].data() != before);
    }
    expect_deleted(x, "argument 0");
  }
}

TEST_CASE("donation: an AdamW step updates parameters and optimizer state in place") {
  std::vector<fx::Array> params{wave({128, 64}, 0), wave({64}, 1), wave({3, 3, 8, 8}, 2)};
  std::vector<fx::Array> grads{wave({128, 64}, 3), wave({64}, 4), wave({3, 3, 8, 8}, 5)};
  auto opt = fx::optim::adamw(fx::optim::cosine_decay(1e-2, 100), 1e-3);
  auto step = [&](const std::vector<fx::Array>& p, const fx::optim::State& s, const std::vector<fx::Array>& g) {
    return opt.step(g, s, p);
  };
  auto plain = fx::jit(step);
  auto donating = fx::jit(step, fx::donate_argnums(0, 1));
  std::vector<fx::Array> p_want = params;
  fx::optim::State s_want = opt.init(params);
  std::vector<fx::Array> p;
  for (const fx::Array& a : params) p.push_back(copy(a));
  fx::optim::State s = opt.init(p);
  for (int i = 0; i < 3; ++i) {
    std::tie(p_want, s_want) = plain(p_want, s_want, grads);
    std::vector<const void*> before;
    for (const fx::Array& a : p) before.push_back(a.data());
    const std::vector<fx::Array> old_p = p;
    std::tie(p, s) = donating(p, s, grads);
    for (size_t l = 0; l < p.size(); ++l) {
      CHECK(p[l].to_vector<float>() == p_want[l].to_vector<float>());
      CHECK(p[l].data() == before[l]);  // every parameter updated in place
      expect_deleted(old_p[l], "argument 0");
    }
    for (size_t a = 0; a < s.size(); ++a)
      for (size_t l = 0; l < s[a].size(); ++l) CHECK(s[a][l].to_vector<float>() == s_want[a][l].to_vector<float>());
  }
}

TEST_CASE("donation: inside another transformation donation does nothing") {
  auto inner = fx::jit([](const fx::Array& a) { return fx::sin(a) * a; }, fx::donate_argnums(0));
  const fx::Array x = wave({5}, 0.3);
  const fx::Array g = fx::grad([&](const fx::Array& a) { return fx::sum(inner(a)); })(x);
  CHECK(g.shape() == fx::Shape{5});
  CHECK(x.to_vector<float>() == wave({5}, 0.3).to_vector<float>());
}
