#include "transforms/control_flow.h"
#include "ir/dim_expr.h"

#include "api/operands.h"

namespace fluxion::detail {

void check_same_types(const char* api, const std::string& what_a, const std::vector<AbstractArray>& a,
                      const std::string& what_b, const std::vector<AbstractArray>& b, SourceLoc loc) {
  if (a.size() != b.size())
    throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": " + what_a + " returns " +
                    std::to_string(a.size()) + " arrays but " + what_b + " returns " + std::to_string(b.size()));
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_type(b[i]))
      throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() + ": output leaf " + std::to_string(i) +
                      " is " + a[i].str() + " in " + what_a + " but " + b[i].str() + " in " + what_b);
}

Array branch_index_of(const ArrayLike& pred, const char* api, SourceLoc loc) {
  AbstractArray a = pred.aval();
  if (a.ndim() != 0 || is_float(a.dtype))
    op_error(ErrorKind::Type, api, std::vector<AbstractArray>{a}, loc,
             "the predicate/index must be a bool or integer scalar");
  return detail::as_array(pred, int32, false, loc);
}

// Every branch takes the values any branch captured (each value once, in order of first capture):
// its own in place, the others as inputs it ignores.
std::vector<Array> bind_cond(const Array& index, std::vector<ClosedProgram> branches, SourceLoc loc) {
  std::vector<AbstractArray> first = branches[0].program.out_avals();
  for (size_t b = 1; b < branches.size(); ++b)
    check_same_types("cond", "branch 0", first, "branch " + std::to_string(b), branches[b].program.out_avals(), loc);
  std::vector<Array> operands{index};
  std::vector<std::vector<size_t>> slot(branches.size());  // branch b's const i -> operand position - 1
  for (size_t b = 0; b < branches.size(); ++b)
    for (const Array& c : branches[b].consts) {
      size_t j = 0;
      while (j + 1 < operands.size() && operands[j + 1].impl() != c.impl()) ++j;
      if (j + 1 == operands.size()) operands.push_back(c);
      slot[b].push_back(j);
    }
  const size_t total = operands.size() - 1;
  ProgramList programs;
  for (size_t b = 0; b < branches.size(); ++b) {
    Program p = std::move(branches[b].program);
    std::vector<int32_t> invars(total, -1);
    for (size_t i = 0; i < slot[b].size(); ++i) invars[slot[b][i]] = p.invars[i];
    for (size_t j = 0; j < total; ++j)
      if (invars[j] < 0) invars[j] = p.new_var(operands[1 + j].aval());
    p.invars = std::move(invars);
    programs.push_back(share_program(std::move(p)));
  }
  return bind(Prim::cond, operands, Params{{"branches", programs}}, loc);
}

void check_predicate(const char* api, const Program& cond, SourceLoc loc) {
  std::vector<AbstractArray> o = cond.out_avals();
  if (o.size() != 1 || o[0].ndim() != 0 || o[0].dtype != bool_)
    throw TypeError(std::string("TypeError: ") + api + " at " + loc.str() +
                    ": the condition must return a bool scalar, it returns " +
                    (o.size() == 1 ? o[0].str() : std::to_string(o.size()) + " values"));
}

void check_loop_carry(const char* api, const std::vector<AbstractArray>& in, const std::vector<AbstractArray>& out,
                      SourceLoc loc) {
  check_same_types(api, "the initial carry", in, "the body's carry", out, loc);
}

std::vector<Array> bind_while(ClosedProgram cond, ClosedProgram body, std::span<const Array> init, SourceLoc loc) {
  std::vector<Array> operands = cond.consts;
  operands.insert(operands.end(), body.consts.begin(), body.consts.end());
  operands.insert(operands.end(), init.begin(), init.end());
  Params params{{"cond", share_program(std::move(cond.program))},
                {"body", share_program(std::move(body.program))},
                {"cond_nconsts", int64_t(cond.consts.size())},
                {"body_nconsts", int64_t(body.consts.size())}};
  return bind(Prim::while_, operands, params, loc);
}

std::vector<Array> bind_scan(ClosedProgram body, size_t num_carry, std::span<const Array> init, std::span<const Array> xs,
                             int64_t length, bool reverse, SourceLoc loc) {
  std::vector<Array> operands = body.consts;
  operands.insert(operands.end(), init.begin(), init.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  Params params{{"body", share_program(std::move(body.program))},
                {"num_consts", int64_t(body.consts.size())},
                {"num_carry", int64_t(num_carry)},
                {"length", length},
                {"reverse", reverse}};
  return bind(Prim::scan, operands, params, loc);
}

void check_handles(const char* api, const char* what, std::span<const Array> leaves, SourceLoc loc) {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (!leaves[i].valid())
      throw ValueError(std::string("ValueError: ") + api + " at " + loc.str() + ": leaf " + std::to_string(i) + " of " +
                       what + " is an empty Array handle (default-constructed or moved from)");
}

int64_t scan_length(std::span<const Array> xs, std::optional<int64_t> length, SourceLoc loc) {
  check_handles("scan", "xs", xs, loc);
  std::optional<int64_t> n = length;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].ndim() == 0)
      throw ShapeError("ShapeError: scan at " + loc.str() + ": scanned leaf " + std::to_string(i) +
                       " is a scalar; every leaf of xs needs a leading axis to scan over");
    int64_t len = xs[i].shape()[0];
    if (n && *n != len)
      throw ShapeError("ShapeError: scan at " + loc.str() + ": scanned leaf " + std::to_string(i) + " has length " +
                       dim_str(len) + " but the scan's length is " + dim_str(*n));
    n = len;
  }
  if (!n) throw ValueError("ValueError: scan at " + loc.str() + ": xs has no leaves, so give the length");
  if (*n < 0 && !is_symbolic_dim(*n))  // a symbolic length (a polymorphic trace) is at least 1
    throw ValueError("ValueError: scan at " + loc.str() + ": negative length");
  return *n;
}

}  // namespace fluxion::detail
