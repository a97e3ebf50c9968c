// NumPy's formats: .npy (a magic string, a Python-literal header with dtype, order and shape, then
// the raw bytes; NEP 1) and .npz (a zip archive of .npy members). Zip members are written stored;
// reading also inflates members numpy.savez_compressed deflated, and follows zip64 size fields.
#include <zlib.h>

#include <charconv>
#include <cstring>

#include "api/creation.h"
#include "ir/error.h"
#include "train/checkpoint.h"
#include "train/file_io.h"

namespace fluxion::checkpoint_io {

namespace {

constexpr std::pair<DType, const char*> kNpyDTypes[] = {
    {DType::bool_, "|b1"}, {DType::int8, "|i1"},    {DType::int32, "<i4"},   {DType::int64, "<i8"},
    {DType::uint8, "|u1"}, {DType::uint32, "<u4"},  {DType::float16, "<f2"}, {DType::float32, "<f4"},
    {DType::float64, "<f8"},  {DType::complex64, "<c8"}, {DType::complex128, "<c16"},  // complex: interleaved parts, as NumPy
};

size_t nbytes(const Array& a) { return size_t(a.size()) * itemsize(a.dtype()); }

// The .npy header for `a`: version 1.0, padded with spaces so the data starts 64-byte aligned.
std::string npy_header(const Array& a, const std::string& what) {
  const char* descr = nullptr;
  for (auto [d, s] : kNpyDTypes)
    if (d == a.dtype()) descr = s;
  if (!descr)
    throw TypeError("TypeError: save(" + what + "): NumPy has no " + std::string(dtype_long_name(a.dtype())) +
                    " dtype (use .safetensors for bfloat16)");  // bfloat16
  std::string shape = "(";
  for (int i = 0; i < a.ndim(); ++i) shape += std::to_string(a.shape()[size_t(i)]) + (a.ndim() == 1 ? "," : i + 1 < a.ndim() ? ", " : "");
  shape += ")";
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  io::put_le(out, dict.size(), 2);
  return out + dict;
}

// The value after `'key':` in a header dict, up to the next top-level comma or brace.
std::string header_value(const std::string& dict, const std::string& key, const std::string& what) {
  size_t k = dict.find("'" + key + "'");
  if (k == std::string::npos) io::fail(what, "the .npy header has no '" + key + "'");
  size_t colon = dict.find(':', k);
  if (colon == std::string::npos) io::fail(what, "the .npy header has no value for '" + key + "'");
  size_t i = colon + 1, depth = 0, start = i;
  for (; i < dict.size(); ++i) {
    char c = dict[i];
    if (c == '(') ++depth;
    else if (c == ')' && depth > 0) --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = dict.substr(start, i - start);
  v.erase(0, v.find_first_not_of(" "));
  v.erase(v.find_last_not_of(" ") + 1);
  return v;
}

// The header's shape, a Python tuple of integers: "()", "(3,)", "(2, 3)". Anything else -- a
// sign, a dimension past int64, a shape whose size wraps -- is refused, never read past.
Shape npy_shape(const std::string& text, DType dtype, const std::string& what) {
  const std::string where = "the header's shape " + text;
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') io::fail(what, where + " is not a tuple");
  Shape shape;
  size_t i = 1;
  auto skip_space = [&] {
    while (i + 1 < text.size() && text[i] == ' ') ++i;
  };
  for (skip_space(); i + 1 < text.size(); skip_space()) {
    if (text[i] == '-') io::shape_fail("load", what, where + " has a negative dimension");
    int64_t d = 0;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size() - 1, d);
    if (ec == std::errc::result_out_of_range) io::shape_fail("load", what, where + " has a dimension past int64");
    if (ec != std::errc()) io::fail(what, where + " is not a tuple of integers");
    shape.push_back(d);
    i = size_t(p - text.data());
    skip_space();
    if (text[i] == ',') ++i;
    else if (i + 1 != text.size()) io::fail(what, where + " is not a tuple of integers");
  }
  if (std::string why = shape_problem(shape, dtype); !why.empty()) io::shape_fail("load", what, where + ": " + why);
  return shape;
}

Array parse_npy(std::string_view bytes, const std::string& what) {
  auto u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") io::fail(what, "not a .npy file (bad magic)");
  const int major = u[6];
  const size_t len_bytes = major == 1 ? 2 : 4, start = 8 + len_bytes;
  if (bytes.size() < start) io::fail(what, "truncated .npy header");
  size_t hlen = size_t(io::get_le(u + 8, int(len_bytes)));
  if (bytes.size() < start + hlen) io::fail(what, "truncated .npy header");
  std::string dict(bytes.substr(start, hlen));
  std::string descr = header_value(dict, "descr", what);
  if (descr.size() < 2) io::fail(what, "bad descr " + descr);
  descr = descr.substr(1, descr.size() - 2);
  DType dtype{};
  bool known = false;
  for (auto [d, s] : kNpyDTypes)
    if (descr == s || (descr.size() == 3 && descr[0] == '<' && s[0] == '|' && descr.substr(1) == s + 1))
      dtype = d, known = true;
  if (!known) io::fail(what, "unsupported .npy dtype '" + descr + "' (Fluxion reads little-endian bool, int, uint, float)");
  if (header_value(dict, "fortran_order", what) != "False") io::fail(what, "Fortran-ordered arrays are not supported");
  const Shape shape = npy_shape(header_value(dict, "shape", what), dtype, what);
  const size_t n = size_t(shape.numel()) * itemsize(dtype);
  if (bytes.size() - start - hlen != n)
    io::fail(what, "the data is " + std::to_string(bytes.size() - start - hlen) + " bytes, the header says " +
                       std::to_string(n));
  return detail::array_from_host(bytes.data() + start + hlen, dtype, shape, size_t(shape.numel()), {});
}

struct ZipMember {
  std::string name;
  uint32_t crc = 0, size = 0, offset = 0;
};

// A raw deflate stream of `out_size` bytes, fed to zlib in pieces (its counters are 32-bit). A
// stream expands at most 1032 times (RFC 1951's longest match per bit): a size beyond that is a lie
// of the directory, refused before anything is allocated.
std::string inflate_raw(std::string_view in, uint64_t out_size, const std::string& what) {
  if (out_size / 1032 > in.size() + 1) io::fail(what, "the directory says " + std::to_string(out_size) + " bytes inflate from " + std::to_string(in.size()));
  std::string out;
  try {
    out.assign(size_t(out_size), '\0');
  } catch (const std::bad_alloc&) {
    io::fail(what, "cannot allocate " + std::to_string(out_size) + " bytes to inflate the member into");
  }
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) io::fail(what, "zlib init failed");
  constexpr size_t kPiece = size_t(1) << 30;
  size_t in_at = 0, out_at = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_at));
    z.avail_in = uInt(std::min(kPiece, in.size() - in_at));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
    z.avail_out = uInt(std::min(kPiece, out.size() - out_at));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    in_at += in_before - z.avail_in;
    out_at += out_before - z.avail_out;
    if (rc == Z_OK && in_before == z.avail_in && out_before == z.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_at != out.size()) io::fail(what, "a deflated member is corrupt or its size is not the directory's");
  return out;
}

// One entry of the zip central directory: its member's name, method, sizes and local header, every
// field read inside the file (a length that runs past the end is an IOError, never a read past it).
struct CentralEntry {
  std::string name;
  uint64_t method = 0, csize = 0, usize = 0, local = 0, next = 0;
};
CentralEntry central_entry(std::string_view bytes, uint64_t at, uint64_t k, const std::string& path) {
  auto u = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t size = bytes.size();
  const std::string where = "central directory entry " + std::to_string(k) + " at byte " + std::to_string(at);
  if (at > size || size - at < 46 || io::get_le(u + at, 4) != 0x02014b50) io::fail(path, where + ": not a directory entry");
  CentralEntry e;
  e.method = io::get_le(u + at + 10, 2), e.csize = io::get_le(u + at + 20, 4), e.usize = io::get_le(u + at + 24, 4);
  const uint64_t nlen = io::get_le(u + at + 28, 2), xlen = io::get_le(u + at + 30, 2), clen = io::get_le(u + at + 32, 2);
  e.local = io::get_le(u + at + 42, 4);
  if (size - at - 46 < nlen + xlen + clen) io::fail(path, where + ": its name, extra field and comment run past the end of the file");
  e.name = std::string(bytes.substr(size_t(at + 46), size_t(nlen)));
  // zip64: sizes and offset saturated at 0xFFFFFFFF live in extra field 0x0001, in that order.
  const uint64_t extra_end = at + 46 + nlen + xlen;
  for (uint64_t x = at + 46 + nlen; x + 4 <= extra_end;) {
    const uint64_t id = io::get_le(u + x, 2), len = io::get_le(u + x + 2, 2), field_end = x + 4 + len;
    if (field_end > extra_end) io::fail(path, where + ": extra field at byte " + std::to_string(x) + " runs past the entry");
    uint64_t p = x + 4;
    auto next8 = [&] {
      if (p + 8 > field_end) io::fail(path, where + ": its zip64 field at byte " + std::to_string(x) + " is too short");
      p += 8;
      return io::get_le(u + p - 8, 8);
    };
    if (id == 1) {
      if (e.usize == 0xFFFFFFFFu) e.usize = next8();
      if (e.csize == 0xFFFFFFFFu) e.csize = next8();
      if (e.local == 0xFFFFFFFFu) e.local = next8();
    }
    x = field_end;
  }
  e.next = extra_end + clen;
  return e;
}

// The member's bytes as stored (deflated or not), after its local header.
std::string_view member_data(std::string_view bytes, const CentralEntry& e, const std::string& path) {
  auto u = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t size = bytes.size();
  const std::string where = "member '" + e.name + "' (local header at byte " + std::to_string(e.local) + ")";
  if (e.local > size || size - e.local < 30 || io::get_le(u + e.local, 4) != 0x04034b50)
    io::fail(path, where + ": no local header there");
  const uint64_t data = e.local + 30 + io::get_le(u + e.local + 26, 2) + io::get_le(u + e.local + 28, 2);
  if (data > size || size - data < e.csize)
    io::fail(path, where + ": its " + std::to_string(e.csize) + " bytes run past the end of the file");
  return bytes.substr(size_t(data), size_t(e.csize));
}

}  // namespace

void write_npy(const std::string& path, const Array& array) {
  io::AtomicFile f(path);
  f.write(npy_header(array, path));
  f.write(array.data(), nbytes(array));
  f.commit();
}

Array read_npy(const std::string& path) { return parse_npy(io::read_file(path), path); }

void write_npz(const std::string& path, const Entries& entries) {
  io::AtomicFile f(path);
  std::vector<ZipMember> members;
  uint64_t offset = 0;
  for (const Entry& e : entries) {
    std::string header = npy_header(e.array, path);
    uint64_t size = header.size() + nbytes(e.array);
    if (size > 0xFFFFFFFFu || offset > 0xFFFFFFFFu) io::fail(path, "members over 4 GiB need zip64 (use .safetensors)");
    uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(header.data()), uInt(header.size())));
    crc = uint32_t(crc32_z(crc, static_cast<const Bytef*>(e.array.data()), nbytes(e.array)));
    ZipMember m{e.name + ".npy", crc, uint32_t(size), uint32_t(offset)};
    std::string local;
    io::put_le(local, 0x04034b50, 4);
    io::put_le(local, 20, 2);  // version needed
    io::put_le(local, 0, 2);   // flags
    io::put_le(local, 0, 2);   // stored
    io::put_le(local, 0, 4);   // time, date
    io::put_le(local, m.crc, 4);
    io::put_le(local, m.size, 4);
    io::put_le(local, m.size, 4);
    io::put_le(local, m.name.size(), 2);
    io::put_le(local, 0, 2);
    local += m.name;
    f.write(local);
    f.write(header);
    f.write(e.array.data(), nbytes(e.array));
    offset += local.size() + size;
    members.push_back(m);
  }
  std::string central;
  for (const ZipMember& m : members) {
    io::put_le(central, 0x02014b50, 4);
    io::put_le(central, 20, 2);  // made by
    io::put_le(central, 20, 2);  // needed
    io::put_le(central, 0, 2);
    io::put_le(central, 0, 2);
    io::put_le(central, 0, 4);
    io::put_le(central, m.crc, 4);
    io::put_le(central, m.size, 4);
    io::put_le(central, m.size, 4);
    io::put_le(central, m.name.size(), 2);
    io::put_le(central, 0, 2);  // extra
    io::put_le(central, 0, 2);  // comment
    io::put_le(central, 0, 2);  // disk
    io::put_le(central, 0, 2);  // internal attributes
    io::put_le(central, 0, 4);  // external attributes
    io::put_le(central, m.offset, 4);
    central += m.name;
  }
  std::string end;
  io::put_le(end, 0x06054b50, 4);
  io::put_le(end, 0, 4);
  io::put_le(end, members.size(), 2);
  io::put_le(end, members.size(), 2);
  io::put_le(end, central.size(), 4);
  io::put_le(end, offset, 4);
  io::put_le(end, 0, 2);
  f.write(central);
  f.write(end);
  f.commit();
}

Entries read_npz(const std::string& path) {
  std::string bytes = io::read_file(path);
  auto u = reinterpret_cast<const unsigned char*>(bytes.data());
  // The end-of-central-directory record: the last 0x06054b50 signature (a comment may follow it).
  size_t eocd = std::string::npos;
  if (bytes.size() >= 22)
    for (size_t i = bytes.size() - 21; i-- > 0;)
      if (io::get_le(u + i, 4) == 0x06054b50) {
        eocd = i;
        break;
      }
  if (eocd == std::string::npos) io::fail(path, "not a zip archive (no end record)");
  const uint64_t count = io::get_le(u + eocd + 10, 2);
  uint64_t at = io::get_le(u + eocd + 16, 4);
  Entries out;
  for (uint64_t k = 0; k < count; ++k) {
    const CentralEntry e = central_entry(bytes, at, k, path);
    at = e.next;
    const std::string_view raw = member_data(bytes, e, path);
    std::string inflated, name = e.name;
    if (e.method == 8) inflated = inflate_raw(raw, e.usize, path + ":" + name);
    else if (e.method != 0) io::fail(path, "member '" + name + "' uses zip method " + std::to_string(e.method));
    // write_npz stores an array named X as "X.npy", the empty name included (fuzz/corpus/npz/
    // regress-empty-name.npz: a member ".npy" read back as ".npy" where "" was written).
    if (name.size() >= 4 && name.substr(name.size() - 4) == ".npy") name.resize(name.size() - 4);
    out.push_back({name, parse_npy(e.method == 8 ? std::string_view(inflated) : raw, path + ":" + e.name)});
  }
  return out;
}

}  // namespace fluxion::checkpoint_io
