// fx::data: readers on small IDX (plain and gzip) and CIFAR-10 files the test writes itself; the
// loader's batches cover every row once per epoch, are a function of the key and the epoch only
// (prefetch or not), and honour drop_remainder and map.
#include <doctest/doctest.h>
#include <fluxion.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace fx = fluxion;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("fluxion_data_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += char((v >> s) & 0xFF);
}

// An IDX file of `n` items of `dims` bytes each: item i, byte j holds (i * 7 + j) % 256.
void write_idx_u8(const fs::path& p, uint32_t n, const std::vector<uint32_t>& dims) {
  std::string out{'\0', '\0', '\x08', char(1 + dims.size())};
  be32(out, n);
  size_t per = 1;
  for (uint32_t d : dims) be32(out, d), per *= d;
  for (uint32_t i = 0; i < n; ++i)
    for (size_t j = 0; j < per; ++j) out += char((i * 7 + j) % 256);
  std::ofstream(p, std::ios::binary) << out;
}

fx::data::Dataset numbered(int64_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::vector<float> feats;
  for (int64_t i = 0; i < n; ++i) {
    ids[size_t(i)] = int32_t(i);
    feats.push_back(float(i)), feats.push_back(float(-i));
  }
  return fx::data::from_arrays({{"id", fx::array(ids, {n})}, {"x", fx::array(feats, {n, 2})}});
}

std::vector<std::vector<int32_t>> epoch_ids(fx::data::Loader& loader) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& batch : loader) {
    out.push_back(batch.at("id").to_vector<int32_t>());
    // Rows stay together across columns.
    std::vector<float> x = batch.at("x").to_vector<float>();
    for (size_t i = 0; i < out.back().size(); ++i) CHECK(x[2 * i] == float(out.back()[i]));
  }
  return out;
}

}  // namespace

TEST_CASE("data: MNIST IDX files, plain and gzip, and IDX errors") {
  fs::path dir = scratch_dir();
  write_idx_u8(dir / "train-images-idx3-ubyte", 5, {28, 28});
  write_idx_u8(dir / "train-labels-idx1-ubyte", 5, {});
  write_idx_u8(dir / "t10k-images-idx3-ubyte", 3, {28, 28});
  write_idx_u8(dir / "t10k-labels-idx1-ubyte", 3, {});
  REQUIRE(std::system(("gzip -f " + (dir / "train-images-idx3-ubyte").string()).c_str()) == 0);
  auto train = fx::data::mnist_idx(dir.string(), "train");
  CHECK(train.size() == 5);
  CHECK(train.at("image").aval() == fx::AbstractArray{{5, 28, 28}, fx::uint8, false});
  CHECK(train.at("label").dtype() == fx::int32);
  CHECK(train.at("label").to_vector<int32_t>() == std::vector<int32_t>{0, 7, 14, 21, 28});
  std::vector<uint8_t> img = train.at("image").to_vector<uint8_t>();
  CHECK(img[784 * 2 + 5] == (2 * 7 + 5) % 256);
  CHECK(fx::data::mnist_idx(dir.string(), "test").size() == 3);
  CHECK_THROWS_AS(fx::data::mnist_idx(dir.string(), "valid"), fx::ValueError);
  CHECK_THROWS_AS(fx::data::mnist_idx((dir / "nowhere").string(), "train"), fx::IOError);
  // A 32-bit IDX is big-endian on disk.
  std::string i32{'\0', '\0', '\x0C', '\x01'};
  be32(i32, 2);
  be32(i32, 0x01020304u);
  be32(i32, 0xFFFFFFFEu);
  std::ofstream(dir / "ints.idx", std::ios::binary) << i32;
  CHECK(fx::data::read_idx((dir / "ints.idx").string()).to_vector<int32_t>() == std::vector<int32_t>{0x01020304, -2});
  std::ofstream(dir / "short.idx", std::ios::binary) << i32.substr(0, i32.size() - 1);
  CHECK_THROWS_AS(fx::data::read_idx((dir / "short.idx").string()), fx::IOError);
  fs::remove_all(dir);
}

TEST_CASE("data: CIFAR-10 binary batches") {
  fs::path dir = scratch_dir();
  std::string rec;
  for (int r = 0; r < 2; ++r) {
    rec += char(r + 3);
    for (int j = 0; j < 3072; ++j) rec += char((r + j) % 251);
  }
  std::ofstream(dir / "test_batch.bin", std::ios::binary) << rec;
  auto test = fx::data::cifar10_binary(dir.string(), "test");
  CHECK(test.at("image").shape() == fx::Shape{2, 3, 32, 32});
  CHECK(test.at("label").to_vector<int32_t>() == std::vector<int32_t>{3, 4});
  CHECK(test.at("image").to_vector<uint8_t>()[3072 + 1024] == (1 + 1024) % 251);
  CHECK_THROWS_AS(fx::data::cifar10_binary(dir.string(), "train"), fx::IOError);  // no data_batch_1.bin
  std::ofstream(dir / "test_batch.bin", std::ios::binary) << rec.substr(1);
  CHECK_THROWS_AS(fx::data::cifar10_binary(dir.string(), "test"), fx::IOError);
  fs::remove_all(dir);
}

TEST_CASE("data: a loader covers every row once per epoch, deterministically for its key") {
  auto ds = numbered(10);
  auto key = fx::random::key(42);
  auto a = fx::data::loader(ds, 4, fx::data::shuffle(key));
  auto b = fx::data::loader(ds, 4, fx::data::shuffle(key), fx::data::prefetch(2));
  CHECK(a.num_batches() == 3);
  auto a0 = epoch_ids(a), a1 = epoch_ids(a), b0 = epoch_ids(b), b1 = epoch_ids(b);
  CHECK(a0 == b0);  // prefetching changes nothing
  CHECK(a1 == b1);
  CHECK(a0 != a1);  // epochs differ
  for (const auto& e : {a0, a1}) {
    std::vector<int32_t> all;
    for (const auto& batch : e) all.insert(all.end(), batch.begin(), batch.end());
    REQUIRE(all.size() == 10);
    CHECK(std::set<int32_t>(all.begin(), all.end()).size() == 10);
    CHECK(e.back().size() == 2);  // the remainder
  }
  std::vector<int64_t> order0 = a.order(0);
  CHECK(a0[0] == std::vector<int32_t>(order0.begin(), order0.begin() + 4));
  a.set_epoch(1);
  CHECK(epoch_ids(a) == a1);
  // Another key, another order; no key, the file order.
  auto c = fx::data::loader(ds, 4, fx::data::shuffle(fx::random::key(43)));
  CHECK(epoch_ids(c) != a0);
  auto plain = fx::data::loader(ds, 4);
  CHECK(epoch_ids(plain)[0] == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("data: drop_remainder, map, early exit from a prefetching epoch") {
  auto ds = numbered(10);
  auto doubled = [](fx::data::Batch b) {
    b["id2"] = b.at("id") * 2;
    return b;
  };
  auto l = fx::data::loader(ds, 4, fx::data::drop_remainder(), fx::data::map(doubled), fx::data::prefetch(1));
  CHECK(l.num_batches() == 2);
  int n = 0;
  for (const auto& batch : l) {
    CHECK(batch.at("id").shape() == fx::Shape{4});
    CHECK(batch.at("id2").to_vector<int32_t>() == (batch.at("id") * 2).to_vector<int32_t>());
    ++n;
  }
  CHECK(n == 2);
  // Leaving the loop early stops the worker (the test would hang otherwise).
  for (const auto& batch : fx::data::loader(numbered(1000), 3, fx::data::prefetch(2))) {
    CHECK(batch.at("id").to_vector<int32_t>()[0] == 0);
    break;
  }
  // An error in map reaches the loop.
  auto bad = fx::data::loader(ds, 4, fx::data::map([](fx::data::Batch) -> fx::data::Batch {
                                throw fx::ValueError("ValueError: bad map");
                              }),
                              fx::data::prefetch(2));
  CHECK_THROWS_AS(bad.begin(), fx::ValueError);
  CHECK_THROWS_AS(fx::data::from_arrays({{"a", fx::zeros({3})}, {"b", fx::zeros({4})}}), fx::ShapeError);
  CHECK_THROWS_AS(fx::data::loader(ds, 0), fx::ValueError);
}

TEST_CASE("data: datasets from .npz and .safetensors files; slices") {
  fs::path dir = scratch_dir();
  std::map<std::string, fx::Array> cols{{"x", fx::reshape(fx::arange(12.0, 24.0), {6, 2})}, {"y", fx::arange(6)}};
  fx::save((dir / "d.npz").string(), cols);
  auto ds = fx::data::from_file((dir / "d.npz").string());
  CHECK(ds.size() == 6);
  CHECK(ds.slice(2, 4).at("y").to_vector<int32_t>() == std::vector<int32_t>{2, 3});
  fs::remove_all(dir);
}
