#include "ir/sharding.h"

#include <algorithm>
#include <cstring>

namespace fluxion {

int Mesh::axis(std::string_view name) const {
  for (size_t a = 0; a < axis_names.size(); ++a)
    if (axis_names[a] == name) return int(a);
  return -1;
}

int64_t Mesh::axis_size(std::string_view name) const {
  const int a = axis(name);
  return a < 0 ? 1 : shape[size_t(a)];
}

std::vector<int64_t> Mesh::coords(int64_t k) const {
  std::vector<int64_t> c(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    c[a] = k % shape[a];
    k /= shape[a];
  }
  return c;
}

int64_t Mesh::position(const Device& d) const {
  for (size_t k = 0; k < devices.size(); ++k)
    if (devices[k] == d) return int64_t(k);
  return -1;
}

std::string Mesh::str() const {
  std::string s = "Mesh(";
  for (size_t a = 0; a < shape.size(); ++a)
    s += (a ? ", '" : "'") + axis_names[a] + "': " + std::to_string(shape[a]);
  return s + ")";
}

namespace {
const AxisList kNoAxes;

std::string axes_str(const AxisList& axes) {
  std::string s;
  for (const std::string& a : axes) s += (s.empty() ? "'" : ", '") + a + "'";
  return s;
}
}  // namespace

const AxisList& PartitionSpec::dim(size_t d) const { return d < dims.size() ? dims[d] : kNoAxes; }

AxisList PartitionSpec::axes() const {
  AxisList all;
  for (const AxisList& d : dims) all.insert(all.end(), d.begin(), d.end());
  return all;
}

std::string PartitionSpec::str() const {
  std::string s = "P(";
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d) s += ", ";
    s += dims[d].empty() ? "None" : dims[d].size() == 1 ? axes_str(dims[d]) : "(" + axes_str(dims[d]) + ")";
  }
  return s + (dims.size() == 1 ? ",)" : ")");
}

bool operator==(const PartitionSpec& a, const PartitionSpec& b) {
  const size_t n = std::max(a.dims.size(), b.dims.size());
  for (size_t d = 0; d < n; ++d)
    if (a.dim(d) != b.dim(d)) return false;
  return true;
}

std::string NamedSharding::str() const { return "NamedSharding(" + (mesh ? mesh->str() : "?") + ", " + spec.str() + ")"; }

bool operator==(const NamedSharding& a, const NamedSharding& b) {
  return a.spec == b.spec && (a.mesh == b.mesh || (a.mesh && b.mesh && *a.mesh == *b.mesh));
}

std::optional<LayoutProblem> layout_problem(const Mesh& mesh, const PartitionSpec& spec, const AbstractArray& aval) {
  if (spec.dims.size() > aval.shape.size())
    return LayoutProblem{ErrorKind::Shape, "the spec " + spec.str() + " has " + std::to_string(spec.dims.size()) +
                                               " entries for an array of rank " + std::to_string(aval.shape.size()) +
                                               " (" + aval.str() + ")"};
  AxisList seen;
  for (const AxisList& d : spec.dims)
    for (const std::string& a : d) {
      if (mesh.axis(a) < 0) {
        std::string names;
        for (const std::string& n : mesh.axis_names) names += (names.empty() ? "'" : ", '") + n + "'";
        return LayoutProblem{ErrorKind::Value, "the spec " + spec.str() + " names the axis '" + a +
                                                   "', which is not an axis of the mesh (" +
                                                   (names.empty() ? "it has none" : names) + ")"};
      }
      if (std::find(seen.begin(), seen.end(), a) != seen.end())
        return LayoutProblem{ErrorKind::Value, "the spec " + spec.str() + " names the axis '" + a + "' twice"};
      seen.push_back(a);
    }
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    const int64_t n = blocks_along(mesh, spec, d), size = aval.shape[d];
    if (n > 1 && size % n != 0) {
      std::string axes;
      for (const std::string& a : spec.dims[d])
        axes += (axes.empty() ? "'" : ", '") + a + "' of size " + std::to_string(mesh.axis_size(a));
      return LayoutProblem{ErrorKind::Shape, "dimension " + std::to_string(d) + " of " + aval.str() + " has size " +
                                                 std::to_string(size) + ", which the mesh axis " + axes +
                                                 " cannot split evenly (" + std::to_string(size) +
                                                 " is not a multiple of " + std::to_string(n) + ")"};
    }
  }
  return std::nullopt;
}

void check_layout(const Mesh& mesh, const PartitionSpec& spec, const AbstractArray& aval, std::string_view op,
                  SourceLoc loc, std::string_view what) {
  const std::optional<LayoutProblem> p = layout_problem(mesh, spec, aval);
  if (!p) return;
  throw_error(p->kind, std::string(error_kind_name(p->kind)) + ": " + std::string(op) +
                           (loc.known() ? " at " + loc.str() : std::string()) + ": " +
                           (what.empty() ? std::string() : std::string(what) + " ") + p->detail);
}

int64_t blocks_along(const Mesh& mesh, const PartitionSpec& spec, size_t d) {
  int64_t n = 1;
  for (const std::string& a : spec.dim(d)) n *= mesh.axis_size(a);
  return n;
}

Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  Shape s = global;
  for (size_t d = 0; d < s.size(); ++d) s[d] /= blocks_along(mesh, spec, d);
  return s;
}

Shape global_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& block) {
  Shape s = block;
  for (size_t d = 0; d < s.size(); ++d) s[d] *= blocks_along(mesh, spec, d);
  return s;
}

std::vector<int64_t> block_index(const Mesh& mesh, const PartitionSpec& spec, int64_t k, size_t rank) {
  const std::vector<int64_t> c = mesh.coords(k);
  std::vector<int64_t> idx(rank, 0);
  for (size_t d = 0; d < rank; ++d)
    for (const std::string& a : spec.dim(d)) {
      const int ax = mesh.axis(a);
      idx[d] = idx[d] * mesh.shape[size_t(ax)] + c[size_t(ax)];
    }
  return idx;
}

AxisList replicated_axes(const Mesh& mesh, const PartitionSpec& spec) {
  const AxisList used = spec.axes();
  AxisList r;
  for (const std::string& a : mesh.axis_names)
    if (std::find(used.begin(), used.end(), a) == used.end()) r.push_back(a);
  return r;
}

namespace {
// Walks the rows of a block (all dimensions but the last) and calls f(global offset, block offset,
// row bytes) for each, in bytes.
template <class F>
void for_block_rows(const Shape& global, const Shape& block, const std::vector<int64_t>& start, size_t item, F f) {
  const size_t rank = global.size();
  if (block.numel() == 0) return;
  if (rank == 0) return f(size_t(0), size_t(0), item);
  const size_t row = size_t(block[rank - 1]) * item;
  std::vector<int64_t> idx(rank, 0);
  size_t b = 0;
  for (;;) {
    size_t g = 0;
    for (size_t d = 0; d < rank; ++d) g = g * size_t(global[d]) + size_t(start[d] + idx[d]);
    f(g * item, b, row);
    b += row;
    size_t d = rank - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++idx[d] < block[d]) break;
      idx[d] = 0;
    }
  }
}
}  // namespace

void copy_block_out(const void* global, const Shape& global_shape, void* block, const Shape& block_shape,
                    const std::vector<int64_t>& start, size_t itemsize) {
  for_block_rows(global_shape, block_shape, start, itemsize, [&](size_t g, size_t b, size_t n) {
    std::memcpy(static_cast<char*>(block) + b, static_cast<const char*>(global) + g, n);
  });
}

void copy_block_in(void* global, const Shape& global_shape, const void* block, const Shape& block_shape,
                   const std::vector<int64_t>& start, size_t itemsize) {
  for_block_rows(global_shape, block_shape, start, itemsize, [&](size_t g, size_t b, size_t n) {
    std::memcpy(static_cast<char*>(global) + g, static_cast<const char*>(block) + b, n);
  });
}

// ---- params text ----------------------------------------------------------------------------------

std::string specs_text(const std::vector<PartitionSpec>& specs) {
  std::string s;
  for (size_t i = 0; i < specs.size(); ++i) {
    s += i ? " P(" : "P(";
    for (size_t d = 0; d < specs[i].dims.size(); ++d) {
      if (d) s += ',';
      if (specs[i].dims[d].empty()) s += "None";
      for (size_t a = 0; a < specs[i].dims[d].size(); ++a) s += (a ? "+" : "") + specs[i].dims[d][a];
    }
    s += ')';
  }
  return s;
}

namespace {
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t at = 0;
  for (;;) {
    const size_t next = s.find(sep, at);
    parts.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}
}  // namespace

std::vector<PartitionSpec> parse_specs(std::string_view text) {
  std::vector<PartitionSpec> specs;
  if (text.empty()) return specs;
  for (std::string_view one : split(text, ' ')) {
    if (one.size() < 3 || one.substr(0, 2) != "P(" || one.back() != ')')
      throw ValueError("ValueError: a partition spec in params is not of the form P(a,None,b+c): " + std::string(one));
    PartitionSpec p;
    const std::string_view inner = one.substr(2, one.size() - 3);
    if (!inner.empty())
      for (std::string_view dim : split(inner, ',')) {
        AxisList axes;
        if (dim != "None")
          for (std::string_view a : split(dim, '+')) axes.emplace_back(a);
        p.dims.push_back(std::move(axes));
      }
    specs.push_back(std::move(p));
  }
  return specs;
}

std::string mesh_axes_text(const Mesh& mesh) {
  std::string s;
  for (size_t a = 0; a < mesh.shape.size(); ++a)
    s += (a ? "," : "") + mesh.axis_names[a] + "=" + std::to_string(mesh.shape[a]);
  return s;
}

std::vector<int64_t> mesh_device_ids(const Mesh& mesh) {
  std::vector<int64_t> ids;
  for (const Device& d : mesh.devices) ids.push_back(d.id);
  return ids;
}

Mesh mesh_from_params(std::string_view axes_text, const std::vector<int64_t>& ids, std::string_view platform) {
  Mesh m;
  if (!axes_text.empty())
    for (std::string_view a : split(axes_text, ',')) {
      const size_t eq = a.find('=');
      if (eq == std::string_view::npos) throw ValueError("ValueError: a mesh in params is not of the form a=2,b=4");
      m.axis_names.emplace_back(a.substr(0, eq));
      m.shape.push_back(std::stoll(std::string(a.substr(eq + 1))));
    }
  const Platform p = platform == "cuda" ? Platform::cuda : Platform::cpu;
  for (int64_t id : ids) m.devices.push_back(Device{p, int(id)});
  return m;
}

}  // namespace fluxion
