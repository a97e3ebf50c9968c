#include "prims/subprograms.h"

#include "interpreters/jvp.h"

namespace fluxion::subprograms {

const Program& sub(const Params& p, const char* key) { return *p.get<ProgramRef>(key); }
size_t count(const Params& p, const char* key) { return size_t(p.get_int(key)); }
ProgramRef share(Program p) { return std::make_shared<const Program>(std::move(p)); }

void check_inputs(std::span<const AbstractArray> in, const Program& prog, const std::string& what) {
  if (in.size() != prog.invars.size())
    rule_error(ErrorKind::Type, what + " takes " + std::to_string(prog.invars.size()) + " inputs, given " +
                                    std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(prog.type(prog.invars[i])))
      rule_error(ErrorKind::Type, what + " input " + std::to_string(i) + " has type " + prog.type(prog.invars[i]).str() +
                                      " but is given " + in[i].str());
}

Program reorder(Program p, const std::vector<size_t>& in, const std::vector<size_t>& out) {
  std::vector<int32_t> invars;
  for (size_t i : in) invars.push_back(p.invars[i]);
  std::vector<Atom> outvars;
  for (size_t i : out) outvars.push_back(p.outvars[i]);
  p.invars = std::move(invars);
  p.outvars = std::move(outvars);
  return p;
}
std::vector<size_t> range(size_t from, size_t to) {
  std::vector<size_t> r;
  for (size_t i = from; i < to; ++i) r.push_back(i);
  return r;
}
void append(std::vector<size_t>& a, const std::vector<size_t>& b) { a.insert(a.end(), b.begin(), b.end()); }
Array tangent_or_zeros(const Array& primal, const Array& t, SourceLoc loc) {
  return is_zero(t) ? zeros_for(primal.aval(), loc) : t;
}
Array materialised(const Array& ct, const AbstractArray& aval, SourceLoc loc) {
  return is_zero(ct) ? zeros_for(aval, loc) : ct;
}
AbstractArray row_type(AbstractArray a) {
  a.shape = Shape(a.shape.begin() + 1, a.shape.end());
  return a;
}

// ---- batching -----------------------------------------------------------------------------------
Operands operator+(Operands a, const Operands& b) { return a += b; }

Operands at_front(BatchedArgs a, SourceLoc loc) {
  Operands o;
  for (const BatchedArray& x : a)
    o.push(x.dim == kNotMapped ? x.value : move_batch_dim(x.value, x.dim, 0, loc), x.dim == kNotMapped ? kNotMapped : 0);
  return o;
}

Operands batched_where(const Operands& o, const std::vector<bool>& batch, int64_t n, SourceLoc loc) {
  Operands r;
  for (size_t i = 0; i < o.size(); ++i)
    if (batch[i] && o.dims[i] == kNotMapped)
      r.push(batch_at({o.values[i], kNotMapped}, 0, n, loc), 0);
    else
      r.push(o.values[i], o.dims[i]);
  return r;
}

std::vector<AbstractArray> avals_where(const Operands& o, const std::vector<bool>& batch, int64_t n) {
  std::vector<AbstractArray> r = o.avals();
  for (size_t i = 0; i < o.size(); ++i)
    if (batch[i] && o.dims[i] == kNotMapped) {
      IntList s = r[i].shape.dims();
      s.insert(s.begin(), n);
      r[i].shape = Shape(s);
    }
  return r;
}

std::vector<BatchedArray> call_batched(const Program& p, std::span<const Array> in, std::span<const int64_t> dims,
                                       int64_t n) {
  std::vector<BatchedArray> args;
  for (size_t i = 0; i < in.size(); ++i) args.push_back({in[i], dims[i]});
  return vmap_eval(p, args, n);
}

std::vector<bool> batched_outputs(const Program& p, std::span<const AbstractArray> avals, std::span<const int64_t> dims,
                                  int64_t n) {
  TraceScope scope;
  std::vector<Array> in;
  for (const AbstractArray& a : avals) in.push_back(scope.new_input(a));
  std::vector<bool> r;
  for (const BatchedArray& o : call_batched(p, in, dims, n)) r.push_back(o.dim != kNotMapped);
  return r;
}

std::vector<int64_t> dims_where(const Operands& o, const std::vector<bool>& batch) {
  std::vector<int64_t> d = o.dims;
  for (size_t i = 0; i < d.size(); ++i)
    if (batch[i]) d[i] = 0;
  return d;
}

std::vector<bool> flags(const Operands& o) {
  std::vector<bool> r;
  for (int64_t d : o.dims) r.push_back(d != kNotMapped);
  return r;
}
std::vector<bool> concat(std::vector<bool> a, const std::vector<bool>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Array pred_like(const Array& pred, const Shape& shape, SourceLoc loc) {
  if (shape.rank() == 1) return pred;
  return bind1(Prim::broadcast_in_dim, {pred}, Params{{"shape", shape.dims()}, {"broadcast_dimensions", IntList{0}}}, loc);
}

}  // namespace fluxion::subprograms
