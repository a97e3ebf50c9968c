// Collectives over a named axis, one block per primitive: psum, pmean, pmax, pmin, all_gather,
// psum_scatter, ppermute, all_to_all, axis_index (shared/api.md "Devices, pmap and collectives").
//
// Every eqn carries its axis as params: `axis_name` (printed, and what vmap matches), `axis_size`
// (so shape rules need no environment) and `axis_key` (ir/spmd.h: how a kernel called from
// compiled code, which passes integers only, finds the axis's communicator). api/collectives.cpp
// fills them from the names bound while tracing (interpreters/axis_env.h).
//
// Kernels run inside fx::pmap, one per device at once, and meet through the communicator
// (ir/spmd.h); the communicator only all-reduces and all-gathers, and the other collectives are
// written with those (ppermute and all_to_all gather everything and keep their part: simple,
// and correct across processes; a point-to-point version is future work).
//
// Semantics follow JAX: transpose(psum) = psum, transpose(all_gather) = psum_scatter,
// transpose(ppermute) = ppermute of the inverted pairs, transpose(all_to_all) swaps its axes.
// Batching over the named axis (fx::vmap with fx::axis_name) turns them into reductions and
// transposes of the batch dimension; batching over another axis maps them elementwise.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "ir/spmd.h"
#include "lax/lax.h"
#include "prims/elementwise.h"
#include "interpreters/axis_env.h"

namespace fluxion {

namespace {
using namespace elementwise;
using A = const Array&;

// ---- the family's shared rules --------------------------------------------------------------------

int64_t axis_size_of(const Params& p) { return p.get_int("axis_size"); }

void check_axis(const Params& p) {
  for (const char* k : {"axis_name", "axis_size", "axis_key"})
    if (!p.has(k)) rule_error(ErrorKind::Value, std::string("missing param ") + k);
  if (axis_size_of(p) < 1) rule_error(ErrorKind::Value, "axis_size must be positive");
}

Params axis_params(const Params& p) {
  return Params{{"axis_name", p.get<std::string>("axis_name")}, {"axis_size", p.get_int("axis_size")},
                {"axis_key", p.get_int("axis_key")}};
}
Params with(Params p, std::initializer_list<Params::Entry> more) {
  for (const auto& [k, v] : more) p.set(k, v);
  return p;
}

int64_t normalized(int64_t axis, int64_t rank, const char* what) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    rule_error(ErrorKind::Shape, std::string(what) + " is out of range for rank " + std::to_string(rank));
  return axis;
}

// The communicator of the eqn's axis; on failure the kernel records why and zeroes its outputs
// (it may be running inside compiled code, which exceptions cannot unwind).
Communicator* comm_for(const Params& p, std::span<const View> out) {
  Communicator* c = bound_communicator(p.get_int("axis_key"));
  if (!c) {
    const std::string name = p.has("axis_name") ? "'" + p.get<std::string>("axis_name") + "'" : "of this collective";
    throw DeviceError("DeviceError: the axis " + name + " is bound to no devices: collectives run inside fx::pmap "
                      "(or become reductions under fx::vmap with fx::axis_name)");
  }
  if (c->size() != axis_size_of(p)) {
    record_collective_failure("the program was traced for an axis of size " + std::to_string(axis_size_of(p)) +
                              " but runs on " + std::to_string(c->size()) + " devices");
    for (const View& o : out) std::memset(o.data, 0, o.aval->nbytes());
    return nullptr;
  }
  return c;
}
bool failed(Communicator& c, std::span<const View> out) {
  record_collective_failure(c.failure());
  for (const View& o : out) std::memset(o.data, 0, o.aval->nbytes());
  return false;
}

Array bind_like(Prim p, A x, const Params& params) { return bind1(p, {x}, params, SourceLoc{}); }

// The int params compiled code passes to each kernel (kernels/library_calls.h).
constexpr KernelParam kAxisKernelParams[] = {{"axis_key"}, {"axis_size"}};
constexpr KernelParam kAllGatherKernelParams[] = {{"axis_key"}, {"axis_size"}, {"axis"}, {"tiled", true}};
constexpr KernelParam kScatterKernelParams[] = {{"axis_key"}, {"axis_size"}, {"scatter_dimension"}, {"tiled", true}};
constexpr KernelParam kPermuteKernelParams[] = {{"axis_key"}, {"axis_size"}, {"perm_key"}};
constexpr KernelParam kAllToAllKernelParams[] = {{"axis_key"}, {"axis_size"}, {"split_axis"}, {"concat_axis"}};

// s without dimension d.
Shape without(const Shape& s, int64_t d) {
  Shape out;
  for (int64_t k = 0; k < int64_t(s.size()); ++k)
    if (k != d) out.push_back(s[size_t(k)]);
  return out;
}

// Products of dimensions [from, to) of s.
int64_t dims_product(const Shape& s, int64_t from, int64_t to) {
  int64_t n = 1;
  for (int64_t d = from; d < to; ++d) n *= s[size_t(d)];
  return n;
}

// ---- psum, pmean, pmax, pmin: elementwise reductions across the axis ------------------------------

template <bool Mean>
std::vector<AbstractArray> reduction_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_axis(params);
  check_dtype(Mean ? Accepts::Float : Accepts::Numeric, in[0].dtype);
  return {in[0]};
}

template <ReduceOp Op, bool Mean>
void reduction_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  Communicator* c = comm_for(params, out);
  if (!c) return;
  if (!c->all_reduce(Op, in[0].dtype(), in[0].data, out[0].data, in[0].size())) {
    failed(*c, out);
    return;
  }
  if constexpr (Mean)
    dispatch_dtype(out[0].dtype(), [&](auto z) {
      using T = decltype(z);
      if constexpr (is_float_type<T>) {
        // The member count read once: a virtual call per element kept this loop scalar.
        const compute_t<T> n = compute_t<T>(c->size());
        T* o = out[0].as<T>();
        for (int64_t i = 0, size = out[0].size(); i < size; ++i) o[i] = T(compute_t<T>(o[i]) / n);
      }
    });
}

// Linear collectives: the tangent goes through the same collective.
template <Prim P>
std::vector<Array> same_jvp(std::span<const Array>, std::span<const Array> t, std::span<const Array>,
                            const Params& params, SourceLoc) {
  return {bind_like(P, t[0], params)};
}
template <Prim P>
std::vector<Array> self_transpose(std::span<const Array> cts, std::span<const LinearArg>, const Params& params,
                                  SourceLoc) {
  return {bind_like(P, cts[0], params)};
}

// n·x: the psum of a value that is the same on every member of an axis of size n.
Array times_size(A x, int64_t n) { return lax::mul(x, lax::scalar_like(x, double(n))); }

template <Prim P, ReduceOp Op, bool Mean>
std::vector<BatchedArray> reduction_batch(std::span<const BatchedArray> args, const Params& params, int64_t n,
                                          SourceLoc) {
  const BatchedArray& x = args[0];
  if (!over_batched_axis(params)) return {{bind_like(P, x.value, params), x.dim}};  // per element
  if (x.dim == kNotMapped) return {{Op == ReduceOp::sum && !Mean ? times_size(x.value, n) : x.value, kNotMapped}};
  const Prim reduce = Op == ReduceOp::sum ? Prim::reduce_sum : Op == ReduceOp::max ? Prim::reduce_max : Prim::reduce_min;
  Array r = bind1(reduce, {x.value}, Params{{"axes", IntList{x.dim}}}, SourceLoc{});
  if constexpr (Mean) r = lax::div(r, lax::scalar_like(r, double(n)));
  return {{r, kNotMapped}};
}

// pmax/pmin: the tangent of the winning devices, averaged over ties.
std::vector<Array> extremum_jvp(std::span<const Array> x, std::span<const Array> t, std::span<const Array> y,
                                const Params& params, SourceLoc) {
  const Params ap = axis_params(params);
  Array wins = lax::convert(lax::eq(x[0], y[0]), t[0].dtype());
  return {lax::div(bind_like(Prim::psum, lax::mul(wins, t[0]), ap), bind_like(Prim::psum, wins, ap))};
}

// psum x: the sum over the axis, on every device. Its transpose is psum again (JAX's rule: the
// cotangent of every device's copy of the sum flows back to each summand).
const Registration psum_registration = PrimitiveRules{
    .prim = Prim::psum,
    .shape = &reduction_shape<false>,
    .kernel = &reduction_kernel<ReduceOp::sum, false>,
    .kernel_params = kAxisKernelParams,
    .jvp = &same_jvp<Prim::psum>,
    .transpose = &self_transpose<Prim::psum>,
    .linear = kLinear,
    .batch = &reduction_batch<Prim::psum, ReduceOp::sum, false>,
};

// pmean x: psum x / axis size (floats); transposes to itself.
const Registration pmean_registration = PrimitiveRules{
    .prim = Prim::pmean,
    .shape = &reduction_shape<true>,
    .kernel = &reduction_kernel<ReduceOp::sum, true>,
    .kernel_params = kAxisKernelParams,
    .jvp = &same_jvp<Prim::pmean>,
    .transpose = &self_transpose<Prim::pmean>,
    .linear = kLinear,
    .batch = &reduction_batch<Prim::pmean, ReduceOp::sum, true>,
};

// pmax x: the elementwise maximum over the axis.
const Registration pmax_registration = PrimitiveRules{
    .prim = Prim::pmax,
    .shape = &reduction_shape<false>,
    .kernel = &reduction_kernel<ReduceOp::max, false>,
    .kernel_params = kAxisKernelParams,
    .jvp = &extremum_jvp,
    .batch = &reduction_batch<Prim::pmax, ReduceOp::max, false>,
};

// pmin x: the elementwise minimum over the axis.
const Registration pmin_registration = PrimitiveRules{
    .prim = Prim::pmin,
    .shape = &reduction_shape<false>,
    .kernel = &reduction_kernel<ReduceOp::min, false>,
    .kernel_params = kAxisKernelParams,
    .jvp = &extremum_jvp,
    .batch = &reduction_batch<Prim::pmin, ReduceOp::min, false>,
};

// ---- all_gather and psum_scatter: each the other's transpose --------------------------------------

// `stacked` holds n blocks in rank order, each [outer, inner]; out is [outer, n, inner].
void interleave(const char* stacked, char* out, int64_t n, int64_t outer, size_t inner_bytes) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(out + size_t(o * n + r) * inner_bytes, stacked + size_t(r * outer + o) * inner_bytes, inner_bytes);
}

// all_gather[axis, tiled] x: every device's x, stacked along a new dimension `axis` of the axis
// size (tiled: concatenated along dimension `axis`).
std::vector<AbstractArray> all_gather_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_axis(params);
  const bool tiled = params.get_bool("tiled");
  const int64_t rank = in[0].ndim(), n = axis_size_of(params), axis = params.get_int("axis");
  if (axis < 0 || axis > (tiled ? rank - 1 : rank))
    rule_error(ErrorKind::Shape, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  AbstractArray out = in[0];
  if (tiled) out.shape[size_t(axis)] *= n;
  else out.shape.insert(size_t(axis), n);
  return {out};
}

void all_gather_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  Communicator* c = comm_for(params, out);
  if (!c) return;
  const size_t bytes = in[0].aval->nbytes();
  const int64_t axis = params.get_int("axis");
  if (axis == 0) {  // rank order is already the layout
    if (!c->all_gather(in[0].data, out[0].data, bytes)) failed(*c, out);
    return;
  }
  std::vector<char> stacked(bytes * size_t(c->size()));
  if (!c->all_gather(in[0].data, stacked.data(), bytes)) {
    failed(*c, out);
    return;
  }
  const int64_t outer = dims_product(in[0].shape(), 0, axis);
  if (outer > 0) interleave(stacked.data(), static_cast<char*>(out[0].data), c->size(), outer, bytes / size_t(outer));
}

std::vector<Array> all_gather_transpose(std::span<const Array> cts, std::span<const LinearArg>, const Params& params,
                                        SourceLoc) {
  return {bind_like(Prim::psum_scatter, cts[0],
                    with(axis_params(params),
                         {{"scatter_dimension", params.get_int("axis")}, {"tiled", params.get_bool("tiled")}}))};
}

std::vector<BatchedArray> all_gather_batch(std::span<const BatchedArray> args, const Params& params, int64_t n,
                                           SourceLoc loc) {
  const int64_t axis = params.get_int("axis");
  if (!over_batched_axis(params)) {
    Array x = move_batch_dim(args[0].value, args[0].dim, 0, loc);
    return {{bind_like(Prim::all_gather, x, with(params, {{"axis", axis + 1}})), 0}};
  }
  // Every member's result is the whole batch: the batch dimension, moved to `axis`.
  Array stacked = batch_at(args[0], axis, n, loc);
  if (!params.get_bool("tiled")) return {{stacked, kNotMapped}};
  Shape s = without(stacked.shape(), axis + 1);  // the batch (at axis) and the dimension after it merge
  s[size_t(axis)] *= stacked.shape()[size_t(axis + 1)];
  return {{lax::reshape(stacked, s), kNotMapped}};
}

// all_gather: see all_gather_shape. Its transpose scatters the summed cotangent back.
const Registration all_gather_registration = PrimitiveRules{
    .prim = Prim::all_gather,
    .shape = &all_gather_shape,
    .kernel = &all_gather_kernel,
    .kernel_params = kAllGatherKernelParams,
    .jvp = &same_jvp<Prim::all_gather>,
    .transpose = &all_gather_transpose,
    .linear = kLinear,
    .batch = &all_gather_batch,
};

// psum_scatter[scatter_dimension, tiled] x: psum x, of which device r keeps block r along
// scatter_dimension (which has the axis size and is removed; tiled: a multiple of it, divided).
std::vector<AbstractArray> psum_scatter_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_axis(params);
  check_dtype(Accepts::Numeric, in[0].dtype);
  const bool tiled = params.get_bool("tiled");
  const int64_t n = axis_size_of(params), d = params.get_int("scatter_dimension");
  if (d < 0 || d >= in[0].ndim())
    rule_error(ErrorKind::Shape,
               "scatter_dimension " + std::to_string(d) + " is out of range for rank " + std::to_string(in[0].ndim()));
  const int64_t size = in[0].shape[size_t(d)];
  if (tiled ? size % n != 0 : size != n)
    rule_error(ErrorKind::Shape, "dimension " + std::to_string(d) + " has size " + std::to_string(size) +
                                     (tiled ? ", not a multiple of" : ", not") + " the axis size " + std::to_string(n));
  AbstractArray out = in[0];
  if (tiled) out.shape[size_t(d)] /= n;
  else out.shape = without(out.shape, d);
  return {out};
}

void psum_scatter_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  Communicator* c = comm_for(params, out);
  if (!c) return;
  std::vector<char> sum(in[0].aval->nbytes());
  if (!c->all_reduce(ReduceOp::sum, in[0].dtype(), in[0].data, sum.data(), in[0].size())) {
    failed(*c, out);
    return;
  }
  const int64_t outer = dims_product(in[0].shape(), 0, params.get_int("scatter_dimension"));
  if (outer == 0) return;
  const size_t block = out[0].aval->nbytes() / size_t(outer);
  char* o = static_cast<char*>(out[0].data);
  for (int64_t i = 0; i < outer; ++i)
    std::memcpy(o + size_t(i) * block, sum.data() + size_t(i * c->size() + c->rank()) * block, block);
}

std::vector<Array> psum_scatter_transpose(std::span<const Array> cts, std::span<const LinearArg>,
                                          const Params& params, SourceLoc) {
  return {bind_like(Prim::all_gather, cts[0],
                    with(axis_params(params),
                         {{"axis", params.get_int("scatter_dimension")}, {"tiled", params.get_bool("tiled")}}))};
}

std::vector<BatchedArray> psum_scatter_batch(std::span<const BatchedArray> args, const Params& params, int64_t n,
                                             SourceLoc loc) {
  const int64_t d = params.get_int("scatter_dimension");
  if (!over_batched_axis(params)) {
    Array x = move_batch_dim(args[0].value, args[0].dim, 0, loc);
    return {{bind_like(Prim::psum_scatter, x, with(params, {{"scatter_dimension", d + 1}})), 0}};
  }
  // The sum over the batch, whose block r along d is member r's result: d becomes the batch.
  const BatchedArray& x = args[0];
  Array sum = x.dim == kNotMapped ? times_size(x.value, n) : lax::reduce_sum(x.value, IntList{x.dim});
  if (!params.get_bool("tiled")) return {{sum, d}};
  Shape s;
  for (int64_t k = 0; k < sum.ndim(); ++k) {
    if (k == d) s.push_back(n);
    s.push_back(k == d ? sum.shape()[size_t(k)] / n : sum.shape()[size_t(k)]);
  }
  return {{lax::reshape(sum, s), d}};
}

// psum_scatter: see psum_scatter_shape.
const Registration psum_scatter_registration = PrimitiveRules{
    .prim = Prim::psum_scatter,
    .shape = &psum_scatter_shape,
    .kernel = &psum_scatter_kernel,
    .kernel_params = kScatterKernelParams,
    .jvp = &same_jvp<Prim::psum_scatter>,
    .transpose = &psum_scatter_transpose,
    .linear = kLinear,
    .batch = &psum_scatter_batch,
};

// ---- ppermute -------------------------------------------------------------------------------------

// Compiled code passes the permutation as a key into this table, which the shape rule fills (it
// runs wherever a program is built -- traced, parsed or verified -- so a kernel read back from
// the disk cache by another process finds it too).
struct PermTable {
  std::mutex mu;
  std::map<int64_t, IntList> perms;
};
PermTable& perm_table() {
  static auto* t = new PermTable;
  return *t;
}

std::vector<AbstractArray> ppermute_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_axis(params);
  const IntList& perm = params.get_ints("perm");
  const int64_t n = axis_size_of(params);
  if (perm.size() % 2) rule_error(ErrorKind::Value, "perm must list (source, destination) pairs");
  std::vector<int> src_seen(static_cast<size_t>(n)), dst_seen(static_cast<size_t>(n));
  for (size_t i = 0; i < perm.size(); i += 2) {
    for (int64_t v : {perm[i], perm[i + 1]})
      if (v < 0 || v >= n)
        rule_error(ErrorKind::Value, "perm names device " + std::to_string(v) + " of an axis of size " + std::to_string(n));
    if (src_seen[size_t(perm[i])]++ || dst_seen[size_t(perm[i + 1])]++)
      rule_error(ErrorKind::Value, "perm is not a permutation: a device is a source or a destination twice");
  }
  if (params.get_int("perm_key") != perm_key(perm)) rule_error(ErrorKind::Value, "perm_key does not match perm");
  PermTable& t = perm_table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.perms[perm_key(perm)] = perm;
  return {in[0]};
}

void ppermute_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  Communicator* c = comm_for(params, out);
  if (!c) return;
  IntList perm;
  if (params.has("perm")) {
    perm = params.get_ints("perm");
  } else {
    PermTable& t = perm_table();
    std::lock_guard<std::mutex> lock(t.mu);
    perm = t.perms.at(params.get_int("perm_key"));
  }
  const size_t bytes = in[0].aval->nbytes();
  std::vector<char> all(bytes * size_t(c->size()));
  if (!c->all_gather(in[0].data, all.data(), bytes)) {
    failed(*c, out);
    return;
  }
  std::memset(out[0].data, 0, bytes);
  for (size_t i = 0; i < perm.size(); i += 2)
    if (perm[i + 1] == c->rank()) std::memcpy(out[0].data, all.data() + size_t(perm[i]) * bytes, bytes);
}

IntList inverted(const IntList& perm) {
  IntList inv;
  for (size_t i = 0; i < perm.size(); i += 2) inv.insert(inv.end(), {perm[i + 1], perm[i]});
  return inv;
}

std::vector<Array> ppermute_transpose(std::span<const Array> cts, std::span<const LinearArg>, const Params& params,
                                      SourceLoc) {
  const IntList inv = inverted(params.get_ints("perm"));
  return {bind_like(Prim::ppermute, cts[0], with(params, {{"perm", inv}, {"perm_key", perm_key(inv)}}))};
}

std::vector<BatchedArray> ppermute_batch(std::span<const BatchedArray> args, const Params& params, int64_t n,
                                         SourceLoc loc) {
  if (!over_batched_axis(params)) return {{bind_like(Prim::ppermute, args[0].value, params), args[0].dim}};
  // Batch element dst is element src (or zeros): one slice per element, concatenated.
  Array x = batch_at(args[0], 0, n, loc);
  const IntList& perm = params.get_ints("perm");
  Shape one = x.shape();
  one[0] = 1;
  std::vector<Array> rows;
  for (int64_t dst = 0; dst < n; ++dst) {
    Array row = lax::zeros(AbstractArray{one, x.dtype(), false});
    for (size_t i = 0; i < perm.size(); i += 2)
      if (perm[i + 1] == dst) {
        IntList start(size_t(x.ndim()), int64_t(0)), limit = x.shape().dims();
        start[0] = perm[i];
        limit[0] = perm[i] + 1;
        row = lax::slice(x, start, limit);
      }
    rows.push_back(row);
  }
  return {{bind1(Prim::concatenate, rows, Params{{"dimension", int64_t(0)}}, loc), 0}};
}

// ppermute[perm] x: device dst receives the x of device src for each pair (src, dst) in `perm`
// (flat: src0, dst0, src1, dst1, ...); a device that is no destination receives zeros.
const Registration ppermute_registration = PrimitiveRules{
    .prim = Prim::ppermute,
    .shape = &ppermute_shape,
    .kernel = &ppermute_kernel,
    .kernel_params = kPermuteKernelParams,
    .jvp = &same_jvp<Prim::ppermute>,
    .transpose = &ppermute_transpose,
    .linear = kLinear,
    .batch = &ppermute_batch,
};

// ---- all_to_all -----------------------------------------------------------------------------------

std::vector<AbstractArray> all_to_all_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand, got " + std::to_string(in.size()));
  check_axis(params);
  const int64_t rank = in[0].ndim(), n = axis_size_of(params);
  const int64_t split = params.get_int("split_axis"), concat = params.get_int("concat_axis");
  if (split < 0 || split >= rank || concat < 0 || concat >= rank)
    rule_error(ErrorKind::Shape, "split_axis and concat_axis must be dimensions of the operand (rank " +
                                     std::to_string(rank) + ")");
  if (in[0].shape[size_t(split)] != n)
    rule_error(ErrorKind::Shape, "split_axis " + std::to_string(split) + " has size " +
                                     std::to_string(in[0].shape[size_t(split)]) + ", not the axis size " + std::to_string(n));
  AbstractArray out = in[0];
  out.shape = without(out.shape, split);
  out.shape.insert(size_t(concat), n);
  return {out};
}

void all_to_all_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  Communicator* c = comm_for(params, out);
  if (!c) return;
  const Shape& s = in[0].shape();
  const int64_t n = c->size(), split = params.get_int("split_axis"), concat = params.get_int("concat_axis");
  const size_t bytes = in[0].aval->nbytes(), item = itemsize(in[0].dtype());
  std::vector<char> all(bytes * size_t(n));
  if (!c->all_gather(in[0].data, all.data(), bytes)) {
    failed(*c, out);
    return;
  }
  // Device c's piece for this rank: its x at index rank() along split, [a, b] -> contiguous.
  const int64_t a = dims_product(s, 0, split), b = dims_product(s, split + 1, int64_t(s.size()));
  const Shape piece_shape = without(s, split);
  const int64_t a2 = dims_product(piece_shape, 0, concat), b2 = dims_product(piece_shape, concat, int64_t(piece_shape.size()));
  std::vector<char> piece(size_t(a * b) * item);
  char* o = static_cast<char*>(out[0].data);
  for (int64_t src = 0; src < n; ++src) {
    const char* x = all.data() + size_t(src) * bytes;
    for (int64_t i = 0; i < a; ++i)
      std::memcpy(piece.data() + size_t(i * b) * item, x + size_t((i * n + c->rank()) * b) * item, size_t(b) * item);
    for (int64_t i = 0; i < a2; ++i)
      std::memcpy(o + size_t((i * n + src) * b2) * item, piece.data() + size_t(i * b2) * item, size_t(b2) * item);
  }
}

std::vector<Array> all_to_all_transpose(std::span<const Array> cts, std::span<const LinearArg>, const Params& params,
                                        SourceLoc) {
  return {bind_like(Prim::all_to_all, cts[0],
                    with(params, {{"split_axis", params.get_int("concat_axis")},
                                  {"concat_axis", params.get_int("split_axis")}}))};
}

std::vector<BatchedArray> all_to_all_batch(std::span<const BatchedArray> args, const Params& params, int64_t n,
                                           SourceLoc loc) {
  const int64_t split = params.get_int("split_axis"), concat = params.get_int("concat_axis");
  if (!over_batched_axis(params)) {
    Array x = move_batch_dim(args[0].value, args[0].dim, 0, loc);
    return {{bind_like(Prim::all_to_all, x, with(params, {{"split_axis", split + 1}, {"concat_axis", concat + 1}})), 0}};
  }
  // Member r's result at index c of concat is member c's x at index r of split: with the batch at
  // 0, the split dimension becomes the batch and the batch becomes the concat dimension.
  Array x = batch_at(args[0], 0, n, loc);
  IntList rest;
  for (int64_t d = 1; d < x.ndim(); ++d)
    if (d != split + 1) rest.push_back(d);
  rest.insert(rest.begin() + concat, 0);
  IntList perm{split + 1};
  perm.insert(perm.end(), rest.begin(), rest.end());
  return {{lax::transpose(x, perm), 0}};
}

// all_to_all[split_axis, concat_axis] x: x is cut along split_axis (of the axis size) into one
// piece per device; device r receives piece r of every device, stacked along a new concat_axis.
const Registration all_to_all_registration = PrimitiveRules{
    .prim = Prim::all_to_all,
    .shape = &all_to_all_shape,
    .kernel = &all_to_all_kernel,
    .kernel_params = kAllToAllKernelParams,
    .jvp = &same_jvp<Prim::all_to_all>,
    .transpose = &all_to_all_transpose,
    .linear = kLinear,
    .batch = &all_to_all_batch,
};

// ---- axis_index -----------------------------------------------------------------------------------

std::vector<AbstractArray> axis_index_shape(std::span<const AbstractArray> in, const Params& params) {
  if (!in.empty()) rule_error(ErrorKind::Type, "takes no operands");
  check_axis(params);
  return {AbstractArray{Shape{}, DType::int32, false}};
}

void axis_index_kernel(std::span<const View>, std::span<const View> out, const Params& params) {
  if (Communicator* c = comm_for(params, out)) *out[0].as<int32_t>() = c->rank();
}

// Over its own axis (vmap_eval sends it here although it has no operands): 0..n-1 along the batch.
std::vector<BatchedArray> axis_index_batch(std::span<const BatchedArray>, const Params& params, int64_t n,
                                           SourceLoc loc) {
  return {{lax::iota(DType::int32, Shape{n}, 0), 0}};
}

// axis_index: this device's position along the axis (int32).
const Registration axis_index_registration = PrimitiveRules{
    .prim = Prim::axis_index,
    .shape = &axis_index_shape,
    .kernel = &axis_index_kernel,
    .kernel_params = kAxisKernelParams,
    .zero_derivative = true,
    .batch = &axis_index_batch,
};

}  // namespace
}  // namespace fluxion
