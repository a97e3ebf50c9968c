// fx::save / fx::load: dispatch by extension, the check of a file against a tree, and safetensors
// (https://github.com/huggingface/safetensors: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the bytes, row-major, little-endian).
#include "train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "api/creation.h"
#include "ir/error.h"
#include "train/file_io.h"
#include "train/json.h"
#include "train/safetensors_header.h"
#include "train/sharded_io.h"

namespace fluxion::checkpoint_io {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

constexpr std::pair<DType, const char*> kSafetensorsDTypes[] = {
    {DType::bool_, "BOOL"}, {DType::int8, "I8"},     {DType::int32, "I32"},     {DType::int64, "I64"},
    {DType::uint8, "U8"},   {DType::uint32, "U32"},  {DType::float16, "F16"},   {DType::bfloat16, "BF16"},
    {DType::float32, "F32"}, {DType::float64, "F64"},
};

std::string shape_json(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank(); ++i) out += (i ? "," : "") + std::to_string(s[size_t(i)]);
  return out + "]";
}

size_t nbytes(const Array& a) { return size_t(a.size()) * itemsize(a.dtype()); }

ShardedFormat& sharded_format() {
  static ShardedFormat f;
  return f;
}
const ShardedFormat& sharded() {
  if (!sharded_format().write) throw ValueError("ValueError: sharded checkpoints are not available (internal: not registered)");
  return sharded_format();
}

}  // namespace

void set_sharded_format(const ShardedFormat& format) { sharded_format() = format; }

bool is_sharded_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  std::filesystem::path p(path);
  if (!p.has_filename()) return !path.empty();  // "dir/"
  return !p.filename().has_extension() && p.filename() != "." && p.filename() != "..";
}

std::vector<std::string> split_field_names(const char* names) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = names; *p; ++p) {
    if (*p == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (*p != ' ' && *p != '\t' && *p != '\n') {
      cur += *p;
    }
  }
  out.push_back(cur);
  return out;
}

void write(const std::string& path, const Entries& entries) {
  std::set<std::string> seen;
  for (const Entry& e : entries)
    if (!seen.insert(e.name).second) throw ValueError("ValueError: save(" + path + "): two leaves named '" + e.name + "'");
  if (is_sharded_path(path)) return sharded().write(path, entries);
  if (ends_with(path, ".safetensors")) return write_safetensors(path, entries);
  if (ends_with(path, ".npz")) return write_npz(path, entries);
  if (ends_with(path, ".npy")) {
    if (entries.size() != 1)
      throw ValueError("ValueError: save(" + path + "): a .npy file holds one array, the tree has " +
                       std::to_string(entries.size()) + " leaves (use .npz or .safetensors)");
    return write_npy(path, entries[0].array);
  }
  throw ValueError("ValueError: save(" + path + "): unknown format (use .safetensors, .npz or .npy, or a name without an "
                   "extension for a sharded checkpoint directory)");
}

Entries read(const std::string& path) {
  Entries out;
  if (is_sharded_path(path)) out = sharded().read(path);
  else if (ends_with(path, ".safetensors")) out = read_safetensors(path);
  else if (ends_with(path, ".npz")) out = read_npz(path);
  else if (ends_with(path, ".npy")) out = {{"arr_0", read_npy(path)}};
  else throw ValueError("ValueError: load(" + path + "): unknown format (use .safetensors, .npz or .npy, or a name without an "
                        "extension for a sharded checkpoint directory)");
  std::set<std::string> seen;  // a zip may hold two members of one name: which one is meant?
  for (const Entry& e : out)
    if (!seen.insert(e.name).second) io::fail(path, "two arrays are named '" + e.name + "'");
  return out;
}

std::vector<Array> match(const std::string& path, const Entries& file, const std::vector<std::string>& names,
                         const std::vector<Array>& like) {
  std::map<std::string, const Array*> by_name;
  for (const Entry& e : file) by_name[e.name] = &e.array;
  std::vector<Array> out;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = by_name.find(names[i]);
    if (it == by_name.end())
      throw ValueError("ValueError: load(" + path + "): the file has no array named '" + names[i] + "'");
    const Array& a = *it->second;
    if (like[i].valid() && like[i].shape() != a.shape())
      throw ShapeError("ShapeError: load(" + path + "): '" + names[i] + "' is " + a.aval().str() + " in the file, " +
                       like[i].aval().str() + " in the tree");
    if (like[i].valid() && like[i].dtype() != a.dtype())
      throw TypeError("TypeError: load(" + path + "): '" + names[i] + "' is " + a.aval().str() + " in the file, " +
                      like[i].aval().str() + " in the tree");
    out.push_back(a);
    by_name.erase(it);
  }
  if (!by_name.empty())
    throw ValueError("ValueError: load(" + path + "): the file has arrays the tree does not, e.g. '" +
                     by_name.begin()->first + "' (" + std::to_string(by_name.size()) + " in all)");
  if (is_sharded_path(path)) return sharded().lay_out(path, std::move(out), names, like);
  return out;
}

void write_safetensors(const std::string& path, const Entries& entries) {
  // Tensors are stored in name order, as the Python library does.
  std::vector<const Entry*> sorted;
  for (const Entry& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) { return a->name < b->name; });
  std::string header = "{\"__metadata__\":{\"format\":\"fluxion\"}";
  size_t offset = 0;
  for (const Entry* e : sorted) {
    const char* dt = nullptr;
    for (auto [d, name] : kSafetensorsDTypes)
      if (d == e->array.dtype()) dt = name;
    if (!dt)  // complex: the format has no such dtype (refused before anything is written)
      throw TypeError("TypeError: save(" + path + "): the array '" + e->name + "' is " + e->array.aval().str() +
                      ", and safetensors has no " + std::string(dtype_name(e->array.dtype())) +
                      " dtype; save it as .npz (NumPy's complex dtypes)");
    size_t n = nbytes(e->array);
    header += "," + json::quote(e->name) + ":{\"dtype\":\"" + dt + "\",\"shape\":" + shape_json(e->array.shape()) +
              ",\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
    offset += n;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string prefix;
  io::put_le(prefix, header.size(), 8);
  io::AtomicFile f(path);
  f.write(prefix);
  f.write(header);
  for (const Entry* e : sorted) f.write(e->array.data(), nbytes(e->array));
  f.commit();
}

// The header of a safetensors file: `bytes` holds at least its first 8 + header-length bytes, and
// the file is `file_size` bytes long. Every tensor's dtype, shape and byte range, checked.
std::vector<SafetensorsTensor> parse_safetensors_header(const std::string& path, std::string_view bytes,
                                                        uint64_t file_size) {
  auto u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8 || file_size < 8) io::fail(path, "too short for a safetensors file");
  uint64_t hlen = io::get_le(u, 8);
  if (hlen > file_size - 8) io::fail(path, "the header length exceeds the file");
  if (hlen > bytes.size() - 8) io::fail(path, "the header length exceeds what was read of the file");
  json::Value header = json::parse(bytes.substr(8, hlen), path);
  if (header.kind != json::Value::Kind::object) io::fail(path, "the header is not a JSON object");
  const uint64_t data_start = 8 + hlen, data_size = file_size - data_start;
  std::vector<SafetensorsTensor> out;
  for (const auto& [name, info] : header.object) {
    if (name == "__metadata__") continue;
    auto field = [&](const char* key) -> const json::Value& {
      auto it = info.object.find(key);
      if (it == info.object.end()) io::fail(path, "tensor '" + name + "' has no " + key);
      return it->second;
    };
    if (info.kind != json::Value::Kind::object) io::fail(path, "tensor '" + name + "': its entry in the header is not an object");
    const std::string& dt = field("dtype").string;
    DType dtype{};
    bool known = false;
    for (auto [d, n] : kSafetensorsDTypes)
      if (dt == n) dtype = d, known = true;
    if (!known) io::fail(path, "tensor '" + name + "' has dtype " + dt + ", which Fluxion does not support");
    const json::Value& dims = field("shape");
    if (dims.kind != json::Value::Kind::array) io::fail(path, "tensor '" + name + "': its shape is not a list");
    Shape shape;
    for (const json::Value& d : dims.array) {
      if (d.kind != json::Value::Kind::number) io::fail(path, "tensor '" + name + "': its shape is not a list of integers");
      shape.push_back(d.number);
    }
    if (std::string why = shape_problem(shape, dtype); !why.empty())
      io::shape_fail("load", path, "tensor '" + name + "' in the header: " + why);
    const json::Value& offsets = field("data_offsets");
    const auto& offs = offsets.array;
    if (offsets.kind != json::Value::Kind::array || offs.size() != 2 || offs[0].kind != json::Value::Kind::number ||
        offs[1].kind != json::Value::Kind::number || offs[0].number < 0 || offs[1].number < 0)
      io::fail(path, "tensor '" + name + "': data_offsets must be [begin, end], two byte offsets");
    const uint64_t b = uint64_t(offs[0].number), e = uint64_t(offs[1].number);
    if (b > e || e > data_size || e - b != uint64_t(shape.numel()) * itemsize(dtype))
      io::fail(path, "tensor '" + name + "': its bytes [" + std::to_string(b) + ", " + std::to_string(e) + ") after the " +
                         std::to_string(data_start) + "-byte header do not fit its shape " + shape.str() + " of " +
                         std::string(dtype_name(dtype)) + " or the file's " + std::to_string(data_size) + " data bytes");
    out.push_back({name, dtype, shape, data_start + b});
  }
  return out;
}

Entries read_safetensors(const std::string& path) {
  const std::string bytes = io::read_file(path);
  Entries out;
  for (const SafetensorsTensor& t : parse_safetensors_header(path, bytes, bytes.size()))
    out.push_back({t.name, detail::array_from_host(bytes.data() + t.offset, t.dtype, t.shape, size_t(t.shape.numel()), {})});
  return out;
}

std::vector<SafetensorsTensor> read_safetensors_header(const io::FileRanges& file) {
  unsigned char len[8] = {};
  if (file.size() < 8) io::fail(file.path(), "too short for a safetensors file");
  file.read(len, 8, 0);
  const uint64_t hlen = io::get_le(len, 8);
  if (hlen > file.size() - 8) io::fail(file.path(), "the header length exceeds the file");
  std::string bytes(size_t(8 + hlen), '\0');
  file.read(bytes.data(), bytes.size(), 0);
  return parse_safetensors_header(file.path(), bytes, file.size());
}

}  // namespace fluxion::checkpoint_io
