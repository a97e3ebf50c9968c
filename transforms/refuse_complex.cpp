#include "transforms/refuse_complex.h"

#include <string>
#include <vector>

#include "ir/error.h"

namespace fluxion {

namespace {

void refuse_complex_eqns(const Program& p, std::string_view who, std::string_view why) {
  for (const Eqn& e : p.eqns) {
    std::vector<AbstractArray> types;
    bool complex = false;
    for (const Atom& a : e.inputs) types.push_back(p.aval(a)), complex = complex || is_complex(types.back().dtype);
    for (int32_t v : e.outputs) complex = complex || is_complex(p.type(v).dtype);
    if (complex) op_error(ErrorKind::Compile, prim_name(e.prim), types, e.loc, std::string(who) + ": " + std::string(why));
    any_sub_program(e, [&](const Program& q) {
      refuse_complex_eqns(q, who, why);
      return false;
    });
  }
}

}  // namespace

void refuse_complex(const Program& p, std::string_view who, std::string_view why) {
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (is_complex(p.type(p.invars[i]).dtype))
      throw CompileError("CompileError: " + std::string(who) + ": argument " + std::to_string(i) + " is " +
                         p.type(p.invars[i]).str() + "; " + std::string(why));
  refuse_complex_eqns(p, who, why);
}

}  // namespace fluxion
