// Writes the seeds of fuzz/corpus/ that Fluxion's own writers make: programs (text and serialized)
// traced from a few functions, and checkpoints in the three formats. fuzz/make_seeds.py writes the
// files that other tools make (NumPy-style .npy/.npz variants, IDX, CIFAR-10). Run by hand when a
// format changes (scripts/fuzz.sh seeds):
//   g++ -std=c++20 -I. -Iinclude fuzz/make_seeds.cpp build/libfluxion.so -o build/make_seeds
//   build/make_seeds fuzz/corpus
#include <fluxion.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "ir/serialize.h"

namespace fx = fluxion;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void programs(const fs::path& root) {
  const fx::Array x = fx::array(std::vector<float>{1, -2, 3, 0.5f, 4, -1}, fx::Shape{2, 3});
  const fx::Array w = fx::array(std::vector<float>{0.5f, -1, 2}, fx::Shape{3});
  const fx::Array k = fx::array(std::vector<int32_t>{3, -7, 0}, fx::Shape{3});
  std::map<std::string, fx::Program> ps;
  ps["mlp_grad"] = fx::make_ir(fx::grad([&](const fx::Array& a) { return fx::sum(fx::tanh(a * w) * a); }))(x);
  ps["ints"] = fx::make_ir([&](const fx::Array& a) { return (fx::astype(a, fx::int32) + k) % 3; })(x);
  ps["reduce_sort"] = fx::make_ir([](const fx::Array& a) { return fx::cumsum(fx::sort(a, 1), 0) + fx::max(a); })(x);
  ps["vmap"] = fx::make_ir(fx::vmap([](const fx::Array& r) { return fx::nn::softmax(r, 0); }))(x);
  ps["cond"] = fx::make_ir([](const fx::Array& a) {
    return fx::cond(fx::sum(a) > 0.f, [&] { return a * 2.f; }, [&] { return -a; });
  })(x);
  for (const auto& [name, p] : ps) {
    put(root / "program_text", name + ".txt", p.str());
    put(root / "program_serialized", name + ".fxp", fx::serialize(p));
  }
}

void checkpoints(const fs::path& root) {
  std::map<std::string, fx::Array> ck = {
      {"w", fx::array(std::vector<float>{1, 2, 3, 4, 5, 6}, fx::Shape{2, 3})},
      {"b", fx::astype(fx::array(std::vector<float>{-1, 0.5f}), fx::bfloat16)},
      {"n", fx::array(std::vector<int64_t>{7}, fx::Shape{})},
      {"m", fx::array(std::vector<uint8_t>{1, 0, 1}, fx::Shape{3})},
      {"h", fx::astype(fx::array(std::vector<float>{0.25f, -8}), fx::float16)},
      {"e", fx::zeros({0, 4})},
  };
  const fs::path tmp = fs::temp_directory_path() / "fluxion_make_seeds";
  fs::create_directories(tmp);
  for (const char* ext : {"safetensors", "npz"}) {
    if (std::string(ext) == "npz") ck.erase("b");  // NumPy has no bfloat16
    fx::save((tmp / (std::string("ck.") + ext)).string(), ck);
    put(root / ext, std::string("mixed.") + ext, slurp(tmp / (std::string("ck.") + ext)));
    fx::save((tmp / (std::string("one.") + ext)).string(), ck.at("w"));
    put(root / ext, std::string("one.") + ext, slurp(tmp / (std::string("one.") + ext)));
  }
  for (const auto& [name, a] : ck) {  // (without "b": .npy has no bfloat16 either)
    fx::save((tmp / "a.npy").string(), a);
    put(root / "npy", name + ".npy", slurp(tmp / "a.npy"));
  }
  fs::remove_all(tmp);
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = argc > 1 ? argv[1] : "fuzz/corpus";
  programs(root);
  checkpoints(root);
}
