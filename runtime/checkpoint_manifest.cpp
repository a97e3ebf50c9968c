#include "runtime/checkpoint_manifest.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "api/creation.h"
#include "train/checkpoint.h"
#include "train/file_io.h"
#include "train/json.h"
#include "train/safetensors_header.h"

namespace fluxion::runtime::manifest {

namespace {
using Kind = json::Value::Kind;

std::string join(const std::string& dir, const std::string& name) { return (std::filesystem::path(dir) / name).string(); }

// The member `key` of object `v`, of kind `kind`, or an IOError naming `what`.
const json::Value& member(const json::Value& v, const char* key, Kind kind, const std::string& path, const std::string& what) {
  auto it = v.object.find(key);
  if (it == v.object.end()) io::fail(path, what + " has no \"" + key + "\"");
  if (it->second.kind != kind) io::fail(path, what + ": \"" + key + "\" is not of the expected kind");
  return it->second;
}

std::vector<int64_t> ints(const json::Value& v, const std::string& path, const std::string& what) {
  std::vector<int64_t> out;
  for (const json::Value& x : v.array) {
    if (x.kind != Kind::number) io::fail(path, what + " is not a list of integers");
    out.push_back(x.number);
  }
  return out;
}

// A file of the directory: a plain name, never a path out of it.
std::string file_name(const json::Value& v, const std::string& path, const std::string& what) {
  const std::string& f = v.string;
  if (f.empty() || f[0] == '.' || f.find('/') != std::string::npos || f.find('\\') != std::string::npos ||
      f.find('\0') != std::string::npos)
    io::fail(path, what + " names the file '" + f + "', which is not a plain file name inside the checkpoint directory");
  return f;
}

SavedBlock parse_block(const json::Value& v, const SavedArray& a, const std::string& path, const std::string& what) {
  if (v.kind != Kind::object) io::fail(path, what + " is not an object");
  SavedBlock b;
  b.file = file_name(member(v, "file", Kind::string, path, what), path, what);
  b.tensor = member(v, "tensor", Kind::string, path, what).string;
  b.start = ints(member(v, "start", Kind::array, path, what), path, what + "'s start");
  const std::vector<int64_t> dims = ints(member(v, "shape", Kind::array, path, what), path, what + "'s shape");
  if (b.start.size() != a.shape.size() || dims.size() != a.shape.size())
    io::fail(path, what + " has a start or shape of another rank than the array's " + a.shape.str());
  for (size_t d = 0; d < dims.size(); ++d)
    if (b.start[d] < 0 || dims[d] < 0 || dims[d] > a.shape[d] || b.start[d] > a.shape[d] - dims[d])
      io::fail(path, what + " (start " + Shape(b.start).str() + ", shape " + Shape(dims).str() + ") lies outside the array's " +
                         a.shape.str());
  b.shape = Shape(dims);
  return b;
}

bool overlap(const SavedBlock& x, const SavedBlock& y) {
  for (size_t d = 0; d < x.start.size(); ++d)
    if (x.start[d] >= y.start[d] + y.shape[d] || y.start[d] >= x.start[d] + x.shape[d]) return false;
  return true;
}

// The blocks cover the array exactly: inside it (parse_block), disjoint, and as many elements.
void check_tiling(const SavedArray& a, const std::string& path, const std::string& what) {
  int64_t covered = 0;
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    covered += a.blocks[i].shape.numel();  // each at most the array's (inside it): no overflow
    if (a.blocks[i].shape.numel() == 0) continue;
    for (size_t j = 0; j < i; ++j)
      if (a.blocks[j].shape.numel() != 0 && overlap(a.blocks[i], a.blocks[j]))
        io::fail(path, what + ": blocks " + std::to_string(j) + " and " + std::to_string(i) + " overlap");
    if (covered > a.shape.numel()) break;
  }
  if (covered != a.shape.numel())
    io::fail(path, what + ": the blocks hold " + std::to_string(covered) + " of the array's " +
                       std::to_string(a.shape.numel()) + " elements");
}

std::optional<NamedSharding> parse_layout(const json::Value& v, const std::string& path, const std::string& what) {
  if (v.object.find("mesh") == v.object.end()) return std::nullopt;
  const json::Value& m = member(v, "mesh", Kind::object, path, what);
  try {
    Mesh mesh = mesh_from_params(member(m, "axes", Kind::string, path, what + "'s mesh").string,
                                 ints(member(m, "devices", Kind::array, path, what + "'s mesh"), path, what + "'s mesh"),
                                 member(m, "platform", Kind::string, path, what + "'s mesh").string);
    std::vector<PartitionSpec> spec = parse_specs(member(v, "spec", Kind::string, path, what).string);
    if (spec.size() != 1) io::fail(path, what + ": \"spec\" is not one partition spec");
    return NamedSharding(std::move(mesh), std::move(spec[0]));
  } catch (const IOError&) {
    throw;
  } catch (const std::exception&) {
    io::fail(path, what + ": its mesh or spec cannot be read");
  }
}

SavedArray parse_array(const std::string& name, const json::Value& v, const std::string& path) {
  const std::string what = "array '" + name + "'";
  if (v.kind != Kind::object) io::fail(path, what + " is not an object");
  SavedArray a;
  const std::string& dt = member(v, "dtype", Kind::string, path, what).string;
  if (!parse_dtype(dt, &a.dtype)) io::fail(path, what + " has the unknown dtype '" + dt + "'");
  a.shape = Shape(ints(member(v, "shape", Kind::array, path, what), path, what + "'s shape"));
  if (std::string why = shape_problem(a.shape, a.dtype); !why.empty()) io::shape_fail("load", path, what + ": " + why);
  a.layout = parse_layout(v, path, what);
  const json::Value& blocks = member(v, "blocks", Kind::array, path, what);
  if (blocks.array.size() > kMaxBlocks)
    io::fail(path, what + " has " + std::to_string(blocks.array.size()) + " blocks, more than the " +
                       std::to_string(kMaxBlocks) + " a manifest may hold");
  for (size_t i = 0; i < blocks.array.size(); ++i)
    a.blocks.push_back(parse_block(blocks.array[i], a, path, what + "'s block " + std::to_string(i)));
  check_tiling(a, path, what);
  return a;
}

json::Value parse_file(const std::string& path) {
  json::Value v = json::parse(io::read_file(path), path);
  if (v.kind != Kind::object) io::fail(path, "the manifest is not a JSON object");
  auto format = v.object.find("format");
  if (format == v.object.end() || format->second.string != kFormat)
    io::fail(path, std::string("not a sharded checkpoint's manifest (its \"format\" is not \"") + kFormat + "\")");
  const json::Value& version = member(v, "version", Kind::number, path, "the manifest");
  if (version.number != 1)
    io::fail(path, "version " + std::to_string(version.number) + " of the format; this build reads version 1");
  return v;
}

// Reads the box of extents `ext` at `soff` of a row-major array of shape `sshape` stored at byte
// `offset` of `file` into `doff` of one of shape `dshape` (elements of `item` bytes; a rank-0 box is
// one element): one read per run of contiguous bytes -- a row of the box, or several rows where
// the box spans whole trailing dimensions of both arrays. Returns the bytes read.
uint64_t read_box(const io::FileRanges& file, uint64_t offset, const Shape& sshape, const std::vector<int64_t>& soff,
                  char* dst, const Shape& dshape, const std::vector<int64_t>& doff, const std::vector<int64_t>& ext,
                  size_t item) {
  const size_t rank = ext.size();
  if (rank == 0) return file.read(dst, item, offset), item;
  // The run: the last dimension, and each one before it while every later one is spanned whole.
  size_t first = rank - 1;
  int64_t run = ext[rank - 1];
  while (first > 0 && ext[first] == sshape[first] && ext[first] == dshape[first]) run *= ext[--first];
  std::vector<int64_t> ss(rank, 1), ds(rank, 1), i(rank, 0);
  for (size_t d = rank - 1; d > 0; --d) {
    ss[d - 1] = ss[d] * sshape[d];
    ds[d - 1] = ds[d] * dshape[d];
  }
  const size_t bytes = size_t(run) * item;
  uint64_t total = 0;
  while (true) {
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (soff[d] + i[d]) * ss[d];
      dof += (doff[d] + i[d]) * ds[d];
    }
    file.read(dst + size_t(dof) * item, bytes, offset + uint64_t(so) * item);
    total += bytes;
    size_t d = first;  // the odometer over the dimensions before the run
    while (d > 0 && ++i[d - 1] == ext[d - 1]) i[--d] = 0;
    if (d == 0) return total;
  }
}

}  // namespace

Manifest read(const std::string& dir) {
  const std::string path = join(dir, kFileName);
  const json::Value v = parse_file(path);
  Manifest m;
  m.generation = member(v, "generation", Kind::number, path, "the manifest").number;
  for (const auto& [name, a] : member(v, "arrays", Kind::object, path, "the manifest").object)
    m.arrays.emplace(name, parse_array(name, a, path));
  return m;
}

int64_t generation(const std::string& dir) {
  try {
    const json::Value v = parse_file(join(dir, kFileName));
    auto g = v.object.find("generation");
    return g != v.object.end() && g->second.kind == Kind::number ? g->second.number : -1;
  } catch (const Error&) {
    return -1;
  }
}

struct BlockReader::File {
  explicit File(const std::string& path) : ranges(path) {
    for (checkpoint_io::SafetensorsTensor& t : checkpoint_io::read_safetensors_header(ranges)) {
      const std::string name = t.name;
      tensors.emplace(name, std::move(t));
    }
  }
  io::FileRanges ranges;
  std::map<std::string, checkpoint_io::SafetensorsTensor> tensors;
};

BlockReader::BlockReader(std::string dir) : dir_(std::move(dir)) {}
BlockReader::~BlockReader() = default;

const BlockReader::File& BlockReader::file(const std::string& name) {
  std::unique_ptr<File>& f = files_[name];
  if (!f) f = std::make_unique<File>(join(dir_, name));
  return *f;
}

Array BlockReader::region(const SavedArray& a, const std::vector<int64_t>& start, const Shape& shape) {
  const size_t rank = shape.size(), item = itemsize(a.dtype);
  std::vector<char> out(size_t(shape.numel()) * item);
  for (const SavedBlock& b : a.blocks) {
    std::vector<int64_t> lo(rank), ext(rank), soff(rank), doff(rank);
    bool meets = shape.numel() > 0 && b.shape.numel() > 0;
    for (size_t d = 0; d < rank && meets; ++d) {
      lo[d] = std::max(start[d], b.start[d]);
      ext[d] = std::min(start[d] + shape[d], b.start[d] + b.shape[d]) - lo[d];
      soff[d] = lo[d] - b.start[d];
      doff[d] = lo[d] - start[d];
      meets = ext[d] > 0;
    }
    if (!meets) continue;
    const File& f = file(b.file);
    auto t = f.tensors.find(b.tensor);
    const std::string path = join(dir_, b.file);
    if (t == f.tensors.end()) io::fail(path, "has no tensor '" + b.tensor + "', which the manifest says is there");
    const AbstractArray want{b.shape, a.dtype}, got{t->second.shape, t->second.dtype};
    if (!got.same_type(want))
      io::fail(path, "tensor '" + b.tensor + "' is " + got.str() + ", the manifest says " + want.str());
    bytes_read_ += read_box(f.ranges, t->second.offset, b.shape, soff, out.data(), shape, doff, ext, item);
  }
  return detail::array_from_host(out.data(), a.dtype, shape, size_t(shape.numel()), {});
}

}  // namespace fluxion::runtime::manifest
