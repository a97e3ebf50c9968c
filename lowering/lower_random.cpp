// Lowering of threefry2x32 (prims/random.cpp): one linalg.generic with two results whose body is
// the 20-round Threefry-2x32 hash on i32 (add, rotate, xor), unrolled; rank-0 keys broadcast.
#include "lowering/lower.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

std::vector<Value> threefry2x32_rule(LowerCtx& c, const Eqn&, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  const unsigned rank = unsigned(out[0].ndim());
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  SmallVector<int> slot(4, -1);
  for (size_t i = 0; i < 4; ++i) {
    if (in[i].scalar) continue;
    slot[i] = int(ins.size());
    ins.push_back(in[i].value);
    maps.push_back(in[i].aval.ndim() == 0 && rank != 0 ? AffineMap::get(rank, 0, ctx) : b.getMultiDimIdentityMap(rank));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  const Type t = tensor_type(ctx, out[0]);
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{t, t}, ins, ValueRange{empty(c, out[0]), empty(c, out[1])}, maps, iters,
      [&](OpBuilder& nb, Location l, ValueRange args) {
        auto arg = [&](size_t i) { return slot[i] < 0 ? in[i].value : args[size_t(slot[i])]; };
        auto u32 = [&](uint32_t v) -> Value { return nb.create<arith::ConstantOp>(l, nb.getI32IntegerAttr(int32_t(v))); };
        auto add = [&](Value x, Value y) -> Value { return nb.create<arith::AddIOp>(l, x, y); };
        auto rotl = [&](Value v, int r) -> Value {
          return nb.create<arith::OrIOp>(l, nb.create<arith::ShLIOp>(l, v, u32(uint32_t(r))),
                                         nb.create<arith::ShRUIOp>(l, v, u32(uint32_t(32 - r))));
        };
        const int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
        Value k0 = arg(0), k1 = arg(1);
        Value ks[3] = {k0, k1, nb.create<arith::XOrIOp>(l, nb.create<arith::XOrIOp>(l, k0, k1), u32(0x1BD11BDAu))};
        Value x0 = add(arg(2), ks[0]), x1 = add(arg(3), ks[1]);
        for (int round = 0; round < 20; ++round) {
          x0 = add(x0, x1);
          x1 = nb.create<arith::XOrIOp>(l, rotl(x1, rotations[round % 8]), x0);
          if (round % 4 == 3) {
            const uint32_t s = uint32_t(round / 4 + 1);
            x0 = add(x0, ks[s % 3]);
            x1 = add(x1, add(ks[(s + 1) % 3], u32(s)));
          }
        }
        nb.create<linalg::YieldOp>(l, ValueRange{x0, x1});
      });
  return {g.getResult(0), g.getResult(1)};
}

}  // namespace

void add_random_lowerings(LowerTable& t) { t[size_t(Prim::threefry2x32)] = &threefry2x32_rule; }

}  // namespace fluxion::lowering
