// Every file of fuzz/corpus/<target>/ through its fuzz target (tests/fuzz_targets.h), in the plain
// build: the seeds, which must be accepted (each format's valid files), files Fluxion refuses on
// purpose ("refused-*": a big-endian or Fortran-ordered .npy), which must be refused with an Error,
// and every input a fuzzer found (kept as "crash-*" or "regress-*"), which must now be refused with
// a fluxion::Error or accepted whole -- never a crash, a std:: exception or a broken round trip.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/fuzz_targets.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool is_regression(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind("crash-", 0) == 0 || name.rfind("regress-", 0) == 0 || name.rfind("leak-", 0) == 0 ||
         name.rfind("oom-", 0) == 0 || name.rfind("timeout-", 0) == 0;
}

}  // namespace

TEST_CASE("fuzz corpus: every seed is accepted and every kept finding is handled, for each target") {
  const fs::path root = fs::path(FLUXION_SOURCE_DIR) / "fuzz" / "corpus";
  for (const fuzz_targets::Target& t : fuzz_targets::all()) {
    const std::string target = t.name;
    CAPTURE(target);
    const fs::path dir = root / t.name;
    REQUIRE(fs::is_directory(dir));
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    int seeds = 0;
    for (const fs::path& f : files) {
      const std::string name = f.filename().string();
      CAPTURE(name);
      bool accepted = false;
      CHECK_NOTHROW(accepted = t.run(slurp(f)));
      if (name.rfind("refused-", 0) == 0) {
        CHECK_FALSE(accepted);
      } else if (!is_regression(f)) {
        CHECK(accepted);  // a seed is a valid file of the format
        ++seeds;
      }
    }
    CHECK(seeds >= 2);
  }
}

TEST_CASE("fuzz corpus: the targets refuse bad input with an Error and see through a truncation") {
  for (const fuzz_targets::Target& t : fuzz_targets::all()) {
    const std::string target = t.name;
    CAPTURE(target);
    CHECK_FALSE(t.run("garbage that is no format at all"));
    // Each seed cut in half: refused, or (where a prefix is itself valid) accepted whole.
    const fs::path dir = fs::path(FLUXION_SOURCE_DIR) / "fuzz" / "corpus" / t.name;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string bytes = slurp(e.path());
      CAPTURE(e.path().filename().string());
      CHECK_NOTHROW(t.run(std::string_view(bytes).substr(0, bytes.size() / 2)));
    }
  }
}
