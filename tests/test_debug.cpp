// fx::debug::print and fx::debug::callback inside every transformation: what is printed, how
// often and in which order -- compared with the same prints run eagerly.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <algorithm>
#include <sstream>

namespace fx = fluxion;

namespace {
std::string str(const fx::Array& a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

// Captures what fx::debug::print writes while it lives.
struct Captured {
  std::ostringstream out;
  Captured() { fx::debug::set_output(&out); }
  ~Captured() { fx::debug::set_output(nullptr); }
  std::string take() {
    std::string s = out.str();
    out.str("");
    return s;
  }
};

fx::Array vec(std::vector<float> v) { return fx::array(v); }
// Element i of a's leading axis.
fx::Array row(const fx::Array& a, int64_t i) { return fx::take(a, fx::scalar(int32_t(i)), 0); }
}  // namespace

TEST_CASE("debug print: eager, formats and errors") {
  Captured c;
  fx::Array x = vec({1.f, 2.f, 3.f});
  fx::debug::print("x = {}, sum = {} {{literal}}", x, fx::sum(x));
  CHECK(c.take() == "x = " + str(x) + ", sum = " + str(fx::sum(x)) + " {literal}\n");
  CHECK_THROWS_AS(fx::debug::print("{} and {}", x), fx::ValueError);
  CHECK_THROWS_AS(fx::debug::print("{}", x, x), fx::ValueError);
  // Under a trace the format is checked at once, at the line that wrote it.
  auto bad = [](const fx::Array& a) {
    fx::debug::print("a = {} {}", a);
    return a;
  };
  try {
    fx::make_ir(bad)(x);
    FAIL("no error");
  } catch (const fx::ValueError& e) {
    CHECK(std::string(e.what()).find("test_debug.cpp") != std::string::npos);
  }
}

TEST_CASE("debug print: jit prints when the compiled code runs, in program order, never dropped or merged") {
  Captured c;
  auto f = fx::jit([](const fx::Array& a) {
    fx::Array s = fx::sin(a);
    fx::debug::print("first {}", s);
    fx::debug::print("unused {}", a * 3.f);  // nothing reads it: still printed
    fx::debug::print("first {}", s);         // identical: printed again
    fx::debug::print("last {}", fx::sum(s));
    return s * 2.f;
  });
  fx::Array x = vec({0.5f, 1.f, 2.f});
  const std::string want = "first " + str(fx::sin(x)) + "\nunused " + str(x * 3.f) + "\nfirst " + str(fx::sin(x)) +
                           "\nlast " + str(fx::sum(fx::sin(x))) + "\n";
  fx::Array y = f(x);
  CHECK(c.take() == want);
  y = f(x);  // the cached kernel prints too
  CHECK(c.take() == want);
  CHECK(f.compilations() == 1);
  fx::Program p = fx::make_ir([](const fx::Array& a) {
    fx::debug::print("{}", a);
    return a;
  })(x);
  CHECK(p.str().find("debug_callback") != std::string::npos);
  CHECK(fx::parse_program(p.str()) == p);
}

TEST_CASE("debug print: vmap prints once per example with its batch index") {
  Captured c;
  fx::Array xs = fx::array(std::vector<float>{1, 2, 3, 4, 5, 6}, fx::Shape{3, 2});
  auto f = [](const fx::Array& row, const fx::Array& k) {
    fx::debug::print("row {} k {}", row, k);
    return row * k;
  };
  std::string want;
  for (int64_t i = 0; i < 3; ++i)
    want += "[batch " + std::to_string(i) + "] row " + str(row(xs, i)) + " k " + str(fx::scalar(2.f)) + "\n";
  fx::vmap(f, fx::in_axes(0, fx::none))(xs, fx::scalar(2.f));
  CHECK(c.take() == want);
  fx::jit(fx::vmap(f, fx::in_axes(0, fx::none)))(xs, fx::scalar(2.f));
  CHECK(c.take() == want);
  // Batched along axis 1, and two vmaps: the outer index first.
  fx::vmap(f, fx::in_axes(1, fx::none))(xs, fx::scalar(2.f));
  std::string want_cols;
  for (int64_t j = 0; j < 2; ++j)
    want_cols += "[batch " + std::to_string(j) + "] row " + str(row(fx::transpose(xs), j)) + " k " + str(fx::scalar(2.f)) + "\n";
  CHECK(c.take() == want_cols);
  auto g = [](const fx::Array& e) {
    fx::debug::print("e {}", e);
    return e;
  };
  fx::jit(fx::vmap(fx::vmap(g)))(xs);
  std::string want_nested;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      want_nested += "[batch " + std::to_string(i) + "," + std::to_string(j) + "] e " + str(row(row(xs, i), j)) + "\n";
  CHECK(c.take() == want_nested);
}

TEST_CASE("debug print: grad prints the primal values once") {
  Captured c;
  auto f = [](const fx::Array& a) {
    fx::Array t = fx::tanh(a);
    fx::debug::print("t = {}", t);
    return fx::sum(t * t);
  };
  fx::Array x = vec({0.1f, -0.4f});
  const std::string want = "t = " + str(fx::tanh(x)) + "\n";
  fx::Array g = fx::grad(f)(x);
  CHECK(c.take() == want);
  fx::Array gj = fx::jit(fx::grad(f))(x);
  // Compiled tanh may differ from the reference in the last bit: one line, of the primal.
  const std::string line = c.take();
  CHECK(line.rfind("t = [", 0) == 0);
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  for (size_t i = 0; i < 2; ++i) CHECK(gj.to_vector<float>()[i] == doctest::Approx(g.to_vector<float>()[i]).epsilon(1e-6));
}

TEST_CASE("debug print: once per loop iteration, only in the branch taken") {
  Captured c;
  auto loop = [](const fx::Array& a) {
    auto step = [](const fx::Array& carry, const fx::Array& x) {
      fx::debug::print("carry {} x {}", carry, x);
      return std::pair{carry + x, carry * x};
    };
    return fx::scan(step, row(a, 0), a).first;
  };
  fx::Array x = vec({1.f, 2.f, 3.f});
  std::string want;
  fx::Array carry = row(x, 0);
  for (int64_t i = 0; i < 3; ++i) {
    want += "carry " + str(carry) + " x " + str(row(x, i)) + "\n";
    carry = carry + row(x, i);
  }
  loop(x);
  CHECK(c.take() == want);
  fx::jit(loop)(x);
  CHECK(c.take() == want);
  // A loop-invariant print is not hoisted out of the loop.
  auto invariant = fx::jit([](const fx::Array& a) {
    return fx::fori_loop(0, 4, [&](const fx::Array&, const fx::Array& s) {
      fx::debug::print("a {}", a);
      return s + a;
    }, a);
  });
  invariant(x);
  std::string four;
  for (int i = 0; i < 4; ++i) four += "a " + str(x) + "\n";
  CHECK(c.take() == four);

  auto branch = fx::jit([](const fx::Array& a) {
    return fx::cond(fx::sum(a) > 0.f, [&] {
      fx::debug::print("positive {}", a);
      return a * 2.f;
    }, [&] {
      fx::debug::print("not positive {}", a);
      return -a;
    });
  });
  branch(x);
  CHECK(c.take() == "positive " + str(x) + "\n");
  branch(-x);
  CHECK(c.take() == "not positive " + str(-x) + "\n");
}

TEST_CASE("debug print: grad through scan and cond prints the forward pass only") {
  Captured c;
  auto loop = [](const fx::Array& a) {
    auto step = [](const fx::Array& carry, const fx::Array& x) {
      fx::debug::print("step {}", x);
      return std::pair{carry * fx::sin(x), x};
    };
    return fx::scan(step, fx::scalar(1.f), a).first;
  };
  auto branch = [](const fx::Array& a) {
    return fx::cond(fx::sum(a) > 0.f, [&] {
      fx::debug::print("taken {}", a);
      return fx::sum(fx::sin(a));
    }, [&] { return fx::sum(a); });
  };
  fx::Array x = vec({0.5f, 1.f, 2.f});
  std::string steps;
  for (int64_t i = 0; i < 3; ++i) steps += "step " + str(row(x, i)) + "\n";
  fx::grad(loop)(x);
  CHECK(c.take() == steps);
  fx::jit(fx::grad(loop))(x);
  CHECK(c.take() == steps);
  fx::grad(branch)(x);
  CHECK(c.take() == "taken " + str(x) + "\n");
  fx::jit(fx::grad(branch))(x);
  CHECK(c.take() == "taken " + str(x) + "\n");
}

TEST_CASE("debug callback: host functions see the values under jit, vmap and grad") {
  std::vector<float> seen;
  auto record = [&seen](const fx::Array& v, const fx::Array& w) {
    for (float e : v.to_vector<float>()) seen.push_back(e);
    seen.push_back(w.item<float>());
  };
  auto f = [&](const fx::Array& a) {
    fx::debug::callback(record, a, fx::sum(a));
    return fx::sum(fx::exp(a));
  };
  fx::Array x = vec({1.f, 2.f});
  fx::jit(f)(x);
  CHECK(seen == std::vector<float>{1.f, 2.f, 3.f});
  seen.clear();
  fx::jit(fx::grad(f))(x);
  CHECK(seen == std::vector<float>{1.f, 2.f, 3.f});
  seen.clear();
  fx::Array xs = fx::array(std::vector<float>{1, 2, 3, 4}, fx::Shape{2, 2});
  fx::jit(fx::vmap(f))(xs);
  CHECK(seen == std::vector<float>{1.f, 2.f, 3.f, 3.f, 4.f, 7.f});
}
