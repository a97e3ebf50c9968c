// Dataset files: the IDX format of MNIST and Fashion-MNIST (a big-endian header -- two zero bytes,
// a type code, the number of dimensions, each dimension as a 32-bit integer -- then the data,
// big-endian), CIFAR-10's binary batches (records of one label byte and 3x32x32 image bytes), and
// .npz/.safetensors files of named arrays.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "api/creation.h"
#include "api/operands.h"
#include "ir/error.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "train/file_io.h"

namespace fluxion::data {

namespace {

uint32_t be32(const unsigned char* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// `base` or `base.gz`, whichever exists.
std::string find_file(const std::string& dir, const std::string& base) {
  for (const std::string& p : {dir + "/" + base + ".gz", dir + "/" + base})
    if (exists(p)) return p;
  io::fail(dir + "/" + base, "not found (nor with .gz)");
}

void check_split(const std::string& split, const char* who) {
  if (split != "train" && split != "test")
    throw ValueError(std::string("ValueError: data::") + who + ": split must be \"train\" or \"test\", got \"" + split + "\"");
}

}  // namespace

Array read_idx(const std::string& path) {
  std::string bytes = io::read_file(path);
  auto u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4 || u[0] != 0 || u[1] != 0) io::fail(path, "not an IDX file (bad magic)");
  DType dtype;
  switch (u[2]) {
    case 0x08: dtype = uint8; break;
    case 0x09: dtype = int8; break;
    case 0x0C: dtype = int32; break;
    case 0x0D: dtype = float32; break;
    case 0x0E: dtype = float64; break;
    default: io::fail(path, "unsupported IDX type code " + std::to_string(u[2]));
  }
  const int rank = u[3];
  if (bytes.size() < 4 + 4 * size_t(rank)) io::fail(path, "truncated IDX header");
  Shape shape;
  for (int i = 0; i < rank; ++i) shape.push_back(be32(u + 4 + 4 * i));
  if (std::string why = shape_problem(shape, dtype); !why.empty())
    io::shape_fail("read_idx", path, "the header's dimensions (bytes 4 to " + std::to_string(4 + 4 * rank) + "): " + why);
  const size_t start = 4 + 4 * size_t(rank), n = size_t(shape.numel()), size = itemsize(dtype);
  if (bytes.size() - start != n * size)
    io::fail(path, "the data is " + std::to_string(bytes.size() - start) + " bytes, the header says " +
                       std::to_string(n * size));
  // IDX stores multi-byte values big-endian: swap them in place.
  char* data = bytes.data() + start;
  if (size > 1)
    for (size_t i = 0; i < n; ++i) std::reverse(data + i * size, data + (i + 1) * size);
  return detail::array_from_host(data, dtype, shape, n, {});
}

Dataset mnist_idx(const std::string& dir, const std::string& split) {
  check_split(split, "mnist_idx");
  const std::string prefix = split == "train" ? "train" : "t10k";
  Array images = read_idx(find_file(dir, prefix + "-images-idx3-ubyte"));
  Array labels = read_idx(find_file(dir, prefix + "-labels-idx1-ubyte"));
  if (images.ndim() != 3 || labels.ndim() != 1 || images.shape()[0] != labels.shape()[0])
    io::fail(dir, "the " + split + " images " + images.aval().str() + " and labels " + labels.aval().str() +
                      " do not match");
  return Dataset({{"image", images}, {"label", astype(labels, int32)}});
}

Dataset cifar10_binary(const std::string& dir, const std::string& split) {
  check_split(split, "cifar10_binary");
  std::vector<std::string> files;
  if (split == "train")
    for (int i = 1; i <= 5; ++i) files.push_back(find_file(dir, "data_batch_" + std::to_string(i) + ".bin"));
  else
    files.push_back(find_file(dir, "test_batch.bin"));
  constexpr size_t kImage = 3 * 32 * 32, kRecord = 1 + kImage;
  std::vector<uint8_t> images;
  std::vector<int32_t> labels;
  for (const std::string& f : files) {
    std::string bytes = io::read_file(f);
    if (bytes.size() % kRecord != 0)
      io::fail(f, "size " + std::to_string(bytes.size()) + " is not a multiple of a record (3073 bytes)");
    for (size_t r = 0; r < bytes.size() / kRecord; ++r) {
      const auto* rec = reinterpret_cast<const uint8_t*>(bytes.data()) + r * kRecord;
      if (rec[0] > 9) io::fail(f, "record " + std::to_string(r) + " has label " + std::to_string(rec[0]));
      labels.push_back(rec[0]);
      images.insert(images.end(), rec + 1, rec + kRecord);
    }
  }
  const int64_t n = int64_t(labels.size());
  return Dataset({{"image", array(images, {n, 3, 32, 32})}, {"label", array(labels, {n})}});
}

Dataset from_file(const std::string& path) {
  std::map<std::string, Array> columns;
  for (auto& e : checkpoint_io::read(path)) columns[e.name] = e.array;
  return Dataset(std::move(columns));
}

}  // namespace fluxion::data
