#include "interpreters/reshard.h"

#include <algorithm>

#include "ir/spmd.h"
#include "ir/trace.h"
#include "lax/lax.h"

namespace fluxion {

namespace {

struct Mover {
  const Mesh& mesh;
  ReshardLog& log;
  SourceLoc loc;

  Params axis(const std::string& a) const {
    return Params{{"axis_name", a}, {"axis_size", mesh.axis_size(a)}, {"axis_key", axis_key(a)}};
  }
  Params axis(const std::string& a, std::initializer_list<Params::Entry> more) const {
    Params p = axis(a);
    for (const auto& [k, v] : more) p.set(k, v);
    return p;
  }
  void note(const std::string& op, const std::string& a, const Array& in, const Array& out, double per_device,
            const std::string& how) {
    const int64_t bytes = int64_t(per_device);
    log.bytes += bytes * mesh.size();
    log.notes.push_back(op + " over '" + a + "' (" + std::to_string(mesh.axis_size(a)) + " devices) " + in.aval().str() +
                        " -> " + out.aval().str() + how + ": " + std::to_string(bytes) + " B per device, " +
                        std::to_string(bytes * mesh.size()) + " B in all");
  }
  double fraction(const std::string& a) const {
    const double n = double(mesh.axis_size(a));
    return (n - 1) / n;
  }

  Array psum(const Array& x, const std::string& a) {
    Array r = bind1(Prim::psum, {x}, axis(a), loc);
    note("psum", a, x, r, 2 * fraction(a) * double(x.aval().nbytes()), "");
    return r;
  }
  Array psum_scatter(const Array& x, const std::string& a, int64_t d) {
    Array r = bind1(Prim::psum_scatter, {x}, axis(a, {{"scatter_dimension", d}, {"tiled", true}}), loc);
    note("psum_scatter", a, x, r, fraction(a) * double(x.aval().nbytes()), " along dim " + std::to_string(d));
    return r;
  }
  Array all_gather(const Array& x, const std::string& a, int64_t d) {
    Array r = bind1(Prim::all_gather, {x}, axis(a, {{"axis", d}, {"tiled", true}}), loc);
    note("all_gather", a, x, r, double(mesh.axis_size(a) - 1) * double(x.aval().nbytes()), " along dim " + std::to_string(d));
    return r;
  }
  // Dim i (split over a, minor) becomes whole and dim j is split over a: reshape j into (n, S/n),
  // exchange piece r of j for every member's block of i, and merge the members' blocks along i.
  Array all_to_all(const Array& x, const std::string& a, int64_t i, int64_t j) {
    const int64_t n = mesh.axis_size(a);
    Shape split = x.shape();
    split[size_t(j)] /= n;
    split.insert(size_t(j), n);
    Array y = lax::reshape(x, split);
    Array z = bind1(Prim::all_to_all, {y}, axis(a, {{"split_axis", j}, {"concat_axis", i}}), loc);
    Shape merged = z.shape();
    merged[size_t(i)] *= merged[size_t(i) + 1];
    IntList dims = merged.dims();
    dims.erase(dims.begin() + i + 1);
    Array r = lax::reshape(z, Shape(dims));
    note("all_to_all", a, x, r, fraction(a) * double(x.aval().nbytes()),
         " from dim " + std::to_string(i) + " to dim " + std::to_string(j));
    return r;
  }
  // This device's piece (its index along a) of dim d: nothing moves.
  Array slice(const Array& x, const std::string& a, int64_t d) {
    const int64_t n = mesh.axis_size(a), size = x.shape()[size_t(d)] / n;
    Array at = bind1(Prim::axis_index, {}, axis(a), loc);
    Array start = lax::mul(at, lax::scalar_like(at, double(size)));
    std::vector<Array> ops{x};
    IntList sizes = x.shape().dims();
    sizes[size_t(d)] = size;
    for (int64_t k = 0; k < x.ndim(); ++k) ops.push_back(k == d ? start : lax::scalar_like(at, 0.0));
    return bind1(Prim::dynamic_slice, ops, Params{{"slice_sizes", sizes}}, loc);
  }
};

bool is_prefix(const AxisList& p, const AxisList& of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}

AxisList with(AxisList l, const std::string& a) {
  l.push_back(a);
  return l;
}

}  // namespace

Array reshard(const Array& x, Layout& from, const PartitionSpec& to, const Mesh& mesh, const AbstractArray& global,
              ReshardLog& log, SourceLoc loc) {
  const size_t rank = global.shape.size();
  std::vector<AxisList> cur(rank), want(rank);
  for (size_t d = 0; d < rank; ++d) cur[d] = from.spec.dim(d), want[d] = to.dim(d);
  Mover m{mesh, log, loc};
  Array v = x;
  // Partial sums: scattered where `to` splits a dimension over the axis next, else summed whole.
  for (const std::string& a : from.partial) {
    size_t d = 0;
    while (d < rank && want[d] != with(cur[d], a)) ++d;
    if (d < rank) {
      v = m.psum_scatter(v, a, int64_t(d));
      cur[d].push_back(a);
    } else {
      v = m.psum(v, a);
    }
  }
  // An axis that moves from the minor end of one dimension to the minor end of another.
  for (size_t i = 0; i < rank; ++i) {
    if (cur[i].empty() || is_prefix(cur[i], want[i])) continue;
    const std::string a = cur[i].back();
    for (size_t j = 0; j < rank; ++j)
      if (j != i && want[j] == with(cur[j], a)) {
        v = m.all_to_all(v, a, int64_t(i), int64_t(j));
        cur[i].pop_back();
        cur[j].push_back(a);
        break;
      }
  }
  for (size_t d = 0; d < rank; ++d)
    while (!is_prefix(cur[d], want[d])) {
      v = m.all_gather(v, cur[d].back(), int64_t(d));
      cur[d].pop_back();
    }
  for (size_t d = 0; d < rank; ++d)
    while (cur[d].size() < want[d].size()) {
      const std::string a = want[d][cur[d].size()];
      v = m.slice(v, a, int64_t(d));
      cur[d].push_back(a);
    }
  from = Layout{to, {}};
  return v;
}

}  // namespace fluxion
