#include "api/linalg.h"

#include <optional>

#include <algorithm>
#include <string>

#include "api/operands.h"
#include "ir/trace.h"

namespace fluxion {
namespace {

std::vector<AbstractArray> avals_of(std::span<const ArrayLike> xs) {
  std::vector<AbstractArray> avals;
  avals.reserve(xs.size());
  for (const ArrayLike& x : xs) avals.push_back(x.aval());
  return avals;
}

[[noreturn]] void fail(ErrorKind kind, std::string_view op, std::span<const ArrayLike> xs, SourceLoc loc,
                       const std::string& detail) {
  op_error(kind, op, avals_of(xs), loc, detail);
}

std::string size_pair(int64_t a, int64_t b) { return "(" + std::to_string(a) + " vs " + std::to_string(b) + ")"; }

// Both operands as arrays of their promoted dtype (JAX's lattice; weak when both are weak scalars).
std::vector<Array> promoted(std::span<const ArrayLike> xs, SourceLoc loc) {
  PromotedType t = detail::promote(xs);
  std::vector<Array> out;
  out.reserve(xs.size());
  for (const ArrayLike& x : xs) out.push_back(detail::as_array(x, t.dtype, t.weak, loc));
  return out;
}

IntList iota_list(int64_t from, int64_t to) {
  IntList r;
  for (int64_t i = from; i < to; ++i) r.push_back(i);
  return r;
}

Array dot_general(const Array& a, const Array& b, IntList lhs_contracting, IntList rhs_contracting,
                  IntList lhs_batch, IntList rhs_batch, SourceLoc loc, std::optional<DType> preferred = std::nullopt) {
  Params p{{"lhs_contracting", std::move(lhs_contracting)},
           {"rhs_contracting", std::move(rhs_contracting)},
           {"lhs_batch", std::move(lhs_batch)},
           {"rhs_batch", std::move(rhs_batch)}};
  if (preferred) p.set("preferred_element_type", *preferred);
  return bind1(Prim::dot_general, {a, b}, p, loc);
}

// One contraction of the last axis of `a` with axis `b_axis` of `b`, no batch dims: shared by the
// numpy ops whose result is simply a's free dims followed by b's.
Array contract_last(std::string_view op, const ArrayLike& a, const ArrayLike& b, int64_t b_axis, SourceLoc loc,
                    std::optional<DType> preferred = std::nullopt) {
  ArrayLike xs[] = {a, b};
  const int64_t ka = a.shape()[size_t(a.shape().rank() - 1)], kb = b.shape()[size_t(b_axis)];
  if (ka != kb) fail(ErrorKind::Shape, op, xs, loc, "contracting dimensions differ " + size_pair(ka, kb));
  std::vector<Array> ops = promoted(xs, loc);
  return dot_general(ops[0], ops[1], {ops[0].ndim() - 1}, {b_axis}, {}, {}, loc, preferred);
}

Array matmul_impl(const ArrayLike& a, const ArrayLike& b, std::optional<DType> preferred, SourceLoc loc);

}  // namespace

Array matmul(const ArrayLike& a, const ArrayLike& b, SourceLoc loc) { return matmul_impl(a, b, std::nullopt, loc); }
Array matmul(const ArrayLike& a, const ArrayLike& b, DType preferred_element_type, SourceLoc loc) {
  return matmul_impl(a, b, preferred_element_type, loc);
}

namespace {
Array matmul_impl(const ArrayLike& a, const ArrayLike& b, std::optional<DType> preferred, SourceLoc loc) {
  ArrayLike xs[] = {a, b};
  const Shape sa = a.shape(), sb = b.shape();
  const int ra = sa.rank(), rb = sb.rank();
  if (ra == 0 || rb == 0)
    fail(ErrorKind::Value, "matmul", xs, loc, "operands must have at least one dimension (use multiply for scalars)");
  const int64_t b_axis = rb == 1 ? 0 : rb - 2;
  // b without batch dims, or a vector `a`: one dot_general already yields numpy's dims
  // (a's batch and row dims, then b's batch and column dims) with nothing broadcast.
  if (rb <= 2 || ra == 1) return contract_last("matmul", a, b, b_axis, loc, preferred);

  const int64_t ka = sa[size_t(ra - 1)], kb = sb[size_t(b_axis)];
  if (ka != kb) fail(ErrorKind::Shape, "matmul", xs, loc, "contracting dimensions differ " + size_pair(ka, kb));
  // Batched: broadcast the leading dims of both to one batch shape, then batch over them.
  const int nb = std::max(ra, rb) - 2;
  std::vector<int64_t> batch(size_t(nb), 1);
  for (const Shape* s : {&sa, &sb}) {
    const int off = nb - (s->rank() - 2);
    for (int i = 0; i < s->rank() - 2; ++i) {
      int64_t d = (*s)[size_t(i)];
      int64_t& o = batch[size_t(off + i)];
      if (d == o || d == 1) continue;
      if (o != 1)
        fail(ErrorKind::Shape, "matmul", xs, loc,
             "batch dimensions cannot be broadcast together (numpy rules) " + size_pair(o, d));
      o = d;
    }
  }
  std::vector<Array> ops = promoted(xs, loc);
  auto with_batch = [&](const Array& x) {
    std::vector<int64_t> dims = batch;
    dims.push_back(x.shape()[size_t(x.ndim() - 2)]);
    dims.push_back(x.shape()[size_t(x.ndim() - 1)]);
    return detail::broadcast(x, Shape(std::move(dims)), loc);
  };
  Array A = with_batch(ops[0]), B = with_batch(ops[1]);
  return dot_general(A, B, {nb + 1}, {nb}, iota_list(0, nb), iota_list(0, nb), loc, preferred);
}
}  // namespace

Array dot(const ArrayLike& a, const ArrayLike& b, SourceLoc loc) {
  const int ra = a.shape().rank(), rb = b.shape().rank();
  if (ra == 0 || rb == 0) return multiply(a, b, loc);
  return contract_last("dot", a, b, rb == 1 ? 0 : rb - 2, loc);
}

Array dot(const ArrayLike& a, const ArrayLike& b, DType preferred_element_type, SourceLoc loc) {
  const int ra = a.shape().rank(), rb = b.shape().rank();
  if (ra == 0 || rb == 0) {
    ArrayLike xs[] = {a, b};
    fail(ErrorKind::Value, "dot", xs, loc, "preferred_element_type needs operands with at least one dimension");
  }
  return contract_last("dot", a, b, rb == 1 ? 0 : rb - 2, loc, preferred_element_type);
}

Array inner(const ArrayLike& a, const ArrayLike& b, SourceLoc loc) {
  const int ra = a.shape().rank(), rb = b.shape().rank();
  if (ra == 0 || rb == 0) return multiply(a, b, loc);
  return contract_last("inner", a, b, rb - 1, loc);
}

Array vdot(const ArrayLike& a, const ArrayLike& b, SourceLoc loc) {
  ArrayLike xs[] = {a, b};
  if (!(a.shape() == b.shape()))
    fail(ErrorKind::Shape, "vdot", xs, loc, "operands must have the same shape (reshape them to compare flat)");
  std::vector<Array> ops = promoted(xs, loc);
  const int r = a.shape().rank();
  return dot_general(ops[0], ops[1], iota_list(0, r), iota_list(0, r), {}, {}, loc);
}

Array outer(const ArrayLike& a, const ArrayLike& b, SourceLoc loc) {
  ArrayLike xs[] = {a, b};
  if (a.shape().rank() > 1 || b.shape().rank() > 1)
    fail(ErrorKind::Shape, "outer", xs, loc, "operands must be vectors (reshape them to 1-D first)");
  std::vector<Array> ops = promoted(xs, loc);
  for (Array& x : ops)
    if (x.ndim() == 0) x = detail::broadcast(x, Shape{1}, loc);
  return dot_general(ops[0], ops[1], {}, {}, {}, {}, loc);
}

Array tensordot(const ArrayLike& a, const ArrayLike& b, const std::vector<int64_t>& a_axes,
                const std::vector<int64_t>& b_axes, SourceLoc loc) {
  ArrayLike xs[] = {a, b};
  if (a_axes.size() != b_axes.size())
    fail(ErrorKind::Value, "tensordot", xs, loc,
         "axis lists have different lengths (" + std::to_string(a_axes.size()) + " vs " +
             std::to_string(b_axes.size()) + ")");
  const Shape sa = a.shape(), sb = b.shape();
  IntList la, lb;
  for (size_t i = 0; i < a_axes.size(); ++i) {
    la.push_back(detail::normalize_axis("tensordot", a_axes[i], sa.rank(), a.aval(), loc));
    lb.push_back(detail::normalize_axis("tensordot", b_axes[i], sb.rank(), b.aval(), loc));
    for (size_t j = 0; j < i; ++j)
      if (la[j] == la[i] || lb[j] == lb[i])
        fail(ErrorKind::Value, "tensordot", xs, loc, "an axis appears twice in the axis lists");
    if (sa[size_t(la[i])] != sb[size_t(lb[i])])
      fail(ErrorKind::Shape, "tensordot", xs, loc,
           "contracting dimensions differ: axis " + std::to_string(la[i]) + " of a and axis " +
               std::to_string(lb[i]) + " of b " + size_pair(sa[size_t(la[i])], sb[size_t(lb[i])]));
  }
  std::vector<Array> ops = promoted(xs, loc);
  return dot_general(ops[0], ops[1], la, lb, {}, {}, loc);
}

Array tensordot(const ArrayLike& a, const ArrayLike& b, int64_t axes, SourceLoc loc) {
  ArrayLike xs[] = {a, b};
  const int ra = a.shape().rank(), rb = b.shape().rank();
  if (axes < 0 || axes > ra || axes > rb)
    fail(ErrorKind::Value, "tensordot", xs, loc,
         "cannot contract " + std::to_string(axes) + " axes of operands of rank " + std::to_string(ra) + " and " +
             std::to_string(rb));
  return tensordot(a, b, iota_list(ra - axes, ra), iota_list(0, axes), loc);
}

// ---- einsum -------------------------------------------------------------------------------------
namespace {

// A subscript label: an ASCII letter, or kEllipsisLabel + k for the k-th of the dims "..." stands
// for (counted so that every operand's ellipsis dims end at the same label: numpy's alignment).
using Label = int;
constexpr Label kEllipsisLabel = 256;
constexpr Label kEllipsisMark = -1;  // "..." in a parsed term, before expansion

struct EinsumProblem {
  std::string_view spec;
  std::span<const ArrayLike> operands;
  SourceLoc loc;

  [[noreturn]] void error(ErrorKind kind, const std::string& detail) const {
    fail(kind, "einsum", operands, loc, "subscripts '" + std::string(spec) + "': " + detail);
  }
};

std::string label_name(Label l) {
  if (l >= kEllipsisLabel) return "...[" + std::to_string(l - kEllipsisLabel) + "]";
  return std::string(1, char(l));
}

struct ParsedSpec {
  std::vector<std::vector<Label>> inputs;
  std::vector<Label> output;
  bool explicit_output = false;
};

ParsedSpec parse_einsum(const EinsumProblem& pb) {
  ParsedSpec r;
  std::vector<Label>* term = &r.inputs.emplace_back();
  const std::string_view s = pb.spec;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ') continue;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term->push_back(Label(c));
    } else if (c == '.') {
      if (s.substr(i, 3) != "...") pb.error(ErrorKind::Value, "'.' must be part of an ellipsis '...'");
      if (std::count(term->begin(), term->end(), kEllipsisMark))
        pb.error(ErrorKind::Value, "an ellipsis appears twice in one term");
      term->push_back(kEllipsisMark);
      i += 2;
    } else if (c == ',' && !r.explicit_output) {
      term = &r.inputs.emplace_back();
    } else if (c == '-' && i + 1 < s.size() && s[i + 1] == '>' && !r.explicit_output) {
      r.explicit_output = true;
      term = &r.output;
      ++i;
    } else {
      pb.error(ErrorKind::Value, std::string("unexpected character '") + c + "' at position " + std::to_string(i));
    }
  }
  return r;
}

bool contains(const std::vector<Label>& ls, Label l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

// Replaces each term's "..." by labels for its operand's leading dims and checks every rule the
// labels must obey; returns the labels of each operand and of the output.
struct LabeledProblem {
  std::vector<std::vector<Label>> inputs;
  std::vector<Label> output;
};

LabeledProblem label_operands(const EinsumProblem& pb, const ParsedSpec& ps) {
  if (ps.inputs.size() != pb.operands.size())
    pb.error(ErrorKind::Value, std::to_string(ps.inputs.size()) + " operand terms for " +
                                   std::to_string(pb.operands.size()) + " operands");
  LabeledProblem r;
  int ellipsis_rank = 0;
  std::vector<int> ellipsis_ranks;
  for (size_t i = 0; i < ps.inputs.size(); ++i) {
    const std::vector<Label>& t = ps.inputs[i];
    const int rank = pb.operands[i].shape().rank();
    const bool has_ellipsis = contains(t, kEllipsisMark);
    const int named = int(t.size()) - (has_ellipsis ? 1 : 0);
    if (has_ellipsis ? named > rank : named != rank)
      pb.error(ErrorKind::Value, "operand " + std::to_string(i) + " has rank " + std::to_string(rank) + " but " +
                                     std::to_string(named) + " subscripts");
    ellipsis_ranks.push_back(has_ellipsis ? rank - named : 0);
    ellipsis_rank = std::max(ellipsis_rank, ellipsis_ranks.back());
  }
  auto expand = [&](const std::vector<Label>& t, int count) {
    std::vector<Label> out;
    for (Label l : t) {
      if (l != kEllipsisMark) {
        out.push_back(l);
        continue;
      }
      for (int k = ellipsis_rank - count; k < ellipsis_rank; ++k) out.push_back(kEllipsisLabel + k);
    }
    return out;
  };
  std::vector<int64_t> size_of(size_t(kEllipsisLabel + ellipsis_rank), -1);
  std::vector<int> operand_of(size_of.size(), -1), count(size_of.size(), 0);
  for (size_t i = 0; i < ps.inputs.size(); ++i) {
    std::vector<Label> labels = expand(ps.inputs[i], ellipsis_ranks[i]);
    const Shape s = pb.operands[i].shape();
    for (size_t d = 0; d < labels.size(); ++d) {
      const Label l = labels[d];
      if (std::count(labels.begin(), labels.end(), l) > 1)
        pb.error(ErrorKind::Value, "label '" + label_name(l) + "' repeats within operand " + std::to_string(i) +
                                       " (traces and diagonals are not supported)");
      ++count[size_t(l)];
      if (size_of[size_t(l)] < 0) {
        size_of[size_t(l)] = s[d];
        operand_of[size_t(l)] = int(i);
      } else if (size_of[size_t(l)] != s[d]) {
        pb.error(ErrorKind::Shape, "label '" + label_name(l) + "' has size " + std::to_string(size_of[size_t(l)]) +
                                       " in operand " + std::to_string(operand_of[size_t(l)]) + " but size " +
                                       std::to_string(s[d]) + " in operand " + std::to_string(i));
      }
    }
    r.inputs.push_back(std::move(labels));
  }
  if (ps.explicit_output) {
    r.output = expand(ps.output, ellipsis_rank);
    for (Label l : r.output) {
      if (count[size_t(l)] == 0)
        pb.error(ErrorKind::Value, "output label '" + label_name(l) + "' appears in no operand");
      if (std::count(r.output.begin(), r.output.end(), l) > 1)
        pb.error(ErrorKind::Value, "output label '" + label_name(l) + "' repeats");
    }
  } else {
    // numpy's implicit output: the ellipsis dims, then the labels used once, alphabetically (ASCII).
    for (int k = 0; k < ellipsis_rank; ++k) r.output.push_back(kEllipsisLabel + k);
    for (Label l = 0; l < kEllipsisLabel; ++l)
      if (count[size_t(l)] == 1) r.output.push_back(l);
  }
  return r;
}

Array reduce_sum(const Array& x, const IntList& axes, SourceLoc loc) {
  if (axes.empty()) return x;
  return bind1(Prim::reduce_sum, {x}, Params{{"axes", axes}}, loc);
}

// Sums away the labels of `x` that `keep` rejects; updates `labels`.
template <class Keep>
Array sum_labels(const Array& x, std::vector<Label>& labels, Keep keep, SourceLoc loc) {
  IntList axes;
  std::vector<Label> kept;
  for (size_t d = 0; d < labels.size(); ++d) {
    if (keep(labels[d])) kept.push_back(labels[d]);
    else axes.push_back(int64_t(d));
  }
  labels = std::move(kept);
  return reduce_sum(x, axes, loc);
}

}  // namespace

Array einsum(const EinsumSpec& spec, const std::vector<ArrayLike>& operands) {
  const SourceLoc loc = spec.loc;
  const EinsumProblem pb{spec.text, operands, loc};
  if (operands.empty()) pb.error(ErrorKind::Value, "einsum needs at least one operand");
  const LabeledProblem lp = label_operands(pb, parse_einsum(pb));
  std::vector<Array> ops = promoted(operands, loc);

  // A label is needed after operand i if the output or a later operand uses it.
  auto needed_after = [&](size_t i, Label l) {
    if (contains(lp.output, l)) return true;
    for (size_t j = i + 1; j < lp.inputs.size(); ++j)
      if (contains(lp.inputs[j], l)) return true;
    return false;
  };
  std::vector<Label> labels = lp.inputs[0];
  Array acc = sum_labels(ops[0], labels, [&](Label l) { return needed_after(0, l); }, loc);
  for (size_t i = 1; i < ops.size(); ++i) {
    std::vector<Label> rhs_labels = lp.inputs[i];
    Array rhs = sum_labels(
        ops[i], rhs_labels, [&](Label l) { return contains(labels, l) || needed_after(i, l); }, loc);
    IntList lc, rc, lb, rb;
    std::vector<Label> batch, lhs_free, rhs_free;
    for (size_t d = 0; d < labels.size(); ++d) {
      auto it = std::find(rhs_labels.begin(), rhs_labels.end(), labels[d]);
      if (it == rhs_labels.end()) {
        lhs_free.push_back(labels[d]);
        continue;
      }
      const int64_t rd = it - rhs_labels.begin();
      if (needed_after(i, labels[d])) {
        lb.push_back(int64_t(d));
        rb.push_back(rd);
        batch.push_back(labels[d]);
      } else {
        lc.push_back(int64_t(d));
        rc.push_back(rd);
      }
    }
    for (Label l : rhs_labels)
      if (!contains(labels, l)) rhs_free.push_back(l);
    acc = dot_general(acc, rhs, lc, rc, lb, rb, loc);
    labels = batch;
    labels.insert(labels.end(), lhs_free.begin(), lhs_free.end());
    labels.insert(labels.end(), rhs_free.begin(), rhs_free.end());
  }
  // Every label left is an output label; bring them into the output's order.
  IntList perm;
  for (Label l : lp.output) perm.push_back(std::find(labels.begin(), labels.end(), l) - labels.begin());
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == int64_t(d);
  if (identity) return acc;
  return bind1(Prim::transpose, {acc}, Params{{"permutation", perm}}, loc);
}

}  // namespace fluxion
