// A program as a user writes it outside the source tree: one header, one library, found through
// pkg-config or CMake. It checks a few values so that a wrong link (a stale or mismatched library)
// fails too, and prints the version its headers carry.
#include <fluxion.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

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
  // The version macros (fluxion_version.h, through fluxion.h) agree with each other.
  char version[32];
  std::snprintf(version, sizeof version, "%d.%d.%d", FLUXION_VERSION_MAJOR, FLUXION_VERSION_MINOR, FLUXION_VERSION_PATCH);
  if (std::string(version) != FLUXION_VERSION_STRING ||
      FLUXION_VERSION != FLUXION_VERSION_MAJOR * 10000 + FLUXION_VERSION_MINOR * 100 + FLUXION_VERSION_PATCH) {
    std::fprintf(stderr, "inconsistent version macros: %s, %s, %d\n", version, FLUXION_VERSION_STRING, FLUXION_VERSION);
    return 1;
  }
  std::printf("consumer: ok\nversion: %s\n%s\n", FLUXION_VERSION_STRING, text.str().c_str());
  return 0;
}
