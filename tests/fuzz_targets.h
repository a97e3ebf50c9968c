// The fuzz targets of issue 35 (item 2): each takes arbitrary bytes as one untrusted input -- a
// program's text, a serialized program, a checkpoint (.safetensors, .npz, .npy), an IDX or CIFAR-10
// file -- and reads it as a user's program would. A typed fluxion::Error is a correct answer to bad
// input; anything else that escapes (a std:: exception, a crash, a sanitizer report) is a finding,
// and so is an input that is accepted but does not survive its own round trip (written back and
// read again, it must give the same arrays or the same program). The same functions run in three
// places: the libFuzzer binaries (fuzz/fuzz_main.cpp, scripts/fuzz.sh), and the doctest suite,
// which replays every file of fuzz/corpus/<target>/ -- the seeds and each finding, kept as a
// regression (tests/test_fuzz_corpus.cpp).
#pragma once
#include <string_view>
#include <vector>

namespace fuzz_targets {

struct Target {
  const char* name;  // also the corpus folder: fuzz/corpus/<name>/
  /// Reads `bytes`: true when they were accepted, false when refused with a fluxion::Error. Throws
  /// FuzzFinding (or lets any other exception escape) on a finding.
  bool (*run)(std::string_view bytes);
};

const std::vector<Target>& all();
const Target* find(std::string_view name);

}  // namespace fuzz_targets
