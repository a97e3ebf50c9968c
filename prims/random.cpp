// Random bits: threefry2x32, the counter-based hash of Random123 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC'11) that JAX's default PRNG is built on. It is a pure function of
// (key, counter), so random numbers are ordinary values: they trace, transform and lower like any op.
#include <array>
#include <cstdint>

#include "ir/error.h"
#include "ir/trace.h"
#include "prims/registry.h"

namespace fluxion {
namespace {

// threefry2x32 k0 k1 x0 x1 -> (y0, y1): the 20-round Threefry-2x32 hash of each counter pair
// (x0[i], x1[i]) under the key (k0, k1). All operands are uint32; the keys are rank-0 (one key for
// every counter) or have the counters' shape (one key per counter), as in JAX's threefry2x32_p.
std::vector<AbstractArray> threefry2x32_shape(std::span<const AbstractArray> in, const Params&) {
  if (in.size() != 4) rule_error(ErrorKind::Type, "expects 4 operands (k0, k1, x0, x1), got " + std::to_string(in.size()));
  static const char* const names[] = {"k0", "k1", "x0", "x1"};
  for (size_t i = 0; i < 4; ++i)
    if (in[i].dtype != DType::uint32)
      rule_error(ErrorKind::Type, std::string("operand ") + names[i] + " must be uint32, got " + std::string(dtype_name(in[i].dtype)));
  const Shape& counters = in[2].shape;
  if (in[3].shape != counters)
    rule_error(ErrorKind::Shape, "the counters x0 and x1 must have the same shape, got " + counters.str() + " and " +
                                     in[3].shape.str());
  for (size_t i = 0; i < 2; ++i)
    if (in[i].shape.rank() != 0 && in[i].shape != counters)
      rule_error(ErrorKind::Shape, std::string("key ") + names[i] + " must be rank-0 or have the counters' shape " +
                                       counters.str() + ", got " + in[i].shape.str());
  AbstractArray out{counters, DType::uint32, false};
  return {out, out};
}

constexpr uint32_t rotl(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

// Random123's threefry2x32_R(20, ...): four rounds of (add, rotate, xor) between key injections;
// the key schedule is (k0, k1, k0 ^ k1 ^ 0x1BD11BDA) and injection s adds ks[s%3], ks[(s+1)%3] + s.
constexpr std::array<uint32_t, 2> threefry2x32_20(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  constexpr int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (int round = 0; round < 20; ++round) {
    x0 += x1;
    x1 = rotl(x1, rotations[round % 8]) ^ x0;
    if (round % 4 == 3) {
      const uint32_t s = uint32_t(round / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

// Random123's own known-answer vector, checked at compile time: the kernel cannot drift from it.
static_assert(threefry2x32_20(0, 0, 0, 0) == std::array<uint32_t, 2>{0x6b200159u, 0x99ba4efeu});

void threefry2x32_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  const uint32_t* k0 = in[0].as<uint32_t>();
  const uint32_t* k1 = in[1].as<uint32_t>();
  const uint32_t* x0 = in[2].as<uint32_t>();
  const uint32_t* x1 = in[3].as<uint32_t>();
  const bool k0_per_counter = in[0].shape().rank() != 0, k1_per_counter = in[1].shape().rank() != 0;
  uint32_t* y0 = out[0].as<uint32_t>();
  uint32_t* y1 = out[1].as<uint32_t>();
  const int64_t n = out[0].size();
  for (int64_t i = 0; i < n; ++i) {
    auto [a, b] = threefry2x32_20(k0[k0_per_counter ? i : 0], k1[k1_per_counter ? i : 0], x0[i], x1[i]);
    y0[i] = a;
    y1[i] = b;
  }
}

// Batching: elementwise over the counters' shape. The batched call puts the batch dim where the
// counters have it (both at the same place) or at 0; a rank-0 key that is not batched stays one
// key for every counter, and any other operand is brought to the counters' batched shape (a
// batched rank-0 key is broadcast along the counters' dims).
std::vector<BatchedArray> threefry2x32_batch(std::span<const BatchedArray> a, const Params& params, int64_t n,
                                             SourceLoc loc) {
  const BatchedArray &x0 = a[2], &x1 = a[3];
  const int64_t bd = x0.dim != kNotMapped && x0.dim == x1.dim ? x0.dim : 0;
  IntList counters = x0.value.shape().dims();
  if (x0.dim != kNotMapped) counters.erase(counters.begin() + x0.dim);
  const int64_t rank = int64_t(counters.size());
  IntList batched_shape = counters;
  batched_shape.insert(batched_shape.begin() + bd, n);
  std::vector<Array> ins;
  for (size_t i = 0; i < a.size(); ++i) {
    const BatchedArray& x = a[i];
    const bool is_key = i < 2;
    const int64_t example_rank = x.value.ndim() - (x.dim == kNotMapped ? 0 : 1);
    if (is_key && x.dim == kNotMapped && example_rank == 0) {
      ins.push_back(x.value);
    } else if (example_rank == rank) {
      ins.push_back(batch_at(x, bd, n, loc));
    } else {  // a batched rank-0 key, with rank > 0 counters: one key per example, spread over its counters
      ins.push_back(bind1(Prim::broadcast_in_dim, {x.value},
                          Params{{"shape", batched_shape}, {"broadcast_dimensions", IntList{bd}}}, loc));
    }
  }
  std::vector<BatchedArray> out;
  for (Array& y : bind(Prim::threefry2x32, ins, params, loc)) out.push_back({std::move(y), bd});
  return out;
}

const Registration threefry2x32_registration = PrimitiveRules{
    .prim = Prim::threefry2x32,
    .shape = &threefry2x32_shape,
    .kernel = &threefry2x32_kernel,
    .zero_derivative = true,  // uint32 in, uint32 out
    .batch = &threefry2x32_batch,
    .gpu = GpuLowering::generic,
};

}  // namespace
}  // namespace fluxion
