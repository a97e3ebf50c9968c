// A program as a user writes it outside the source tree: one header, one library, found through
// pkg-config. It checks a few values so that a wrong link (a stale or mismatched library) fails too.
#include <fluxion.h>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace fx = fluxion;

int main() {
  fx::Array a = fx::array({1.f, 2.f, 3.f});
  fx::Array y = a * 2.f + fx::sin(a);
  std::vector<float> v = y.to_vector<float>();
  for (int i = 0; i < 3; ++i) {
    float x = float(i + 1);
    if (std::fabs(v[size_t(i)] - (2 * x + std::sin(x))) > 1e-6f) {
      std::fprintf(stderr, "wrong value at %d: %g\n", i, double(v[size_t(i)]));
      return 1;
    }
  }
  auto f = [](const fx::Array& x) { return fx::exp(x) - 1.f; };
  fx::Program p = fx::make_ir(f)(a);
  std::ostringstream text;
  text << p;
  if (p.eqns.size() != 2 || text.str().find("exp") == std::string::npos) {
    std::fprintf(stderr, "unexpected program:\n%s\n", text.str().c_str());
    return 1;
  }
  float e = fx::eval(p, {a})[0].to_vector<float>()[0];
  if (std::fabs(e - (std::exp(1.f) - 1.f)) > 1e-6f) return 1;
  try {
    (void)(fx::ones({3}) + fx::ones({4}));
    return 1;
  } catch (const fx::ShapeError&) {
  }
  std::printf("consumer: ok\n%s\n", text.str().c_str());
  return 0;
}
