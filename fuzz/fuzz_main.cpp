// One libFuzzer binary per target of tests/fuzz_targets.h: scripts/fuzz.sh compiles this file with
// -DFLUXION_FUZZ_TARGET="npz" (and so on) and -fsanitize=fuzzer,address,undefined. A fluxion::Error
// is a refusal, the right answer to bad input; any other exception escapes to std::terminate, which
// libFuzzer reports as a crash with the input that caused it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz_targets.h"

#ifndef FLUXION_FUZZ_TARGET
#error "build with -DFLUXION_FUZZ_TARGET=\"<target>\" (tests/fuzz_targets.cpp names them)"
#endif

namespace {
const fuzz_targets::Target& target() {
  static const fuzz_targets::Target* t = fuzz_targets::find(FLUXION_FUZZ_TARGET);
  if (!t) {
    std::fprintf(stderr, "no fuzz target named %s\n", FLUXION_FUZZ_TARGET);
    std::abort();
  }
  return *t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  target().run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
