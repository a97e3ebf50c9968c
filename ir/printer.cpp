// The text form of programs (docs/ir.md). parse_program in ir/parser.cpp reads exactly this.
#include <sstream>
#include <unordered_map>

#include "ir/dim_expr.h"
#include "ir/program.h"

namespace fluxion {

namespace {

std::string var_name(size_t n) {
  std::string s;
  do {
    s.insert(s.begin(), char('a' + n % 26));
    n /= 26;
  } while (n);
  return s;
}

class Printer {
 public:
  explicit Printer(std::ostringstream& os) : os_(os) {}

  void program(const Program& p, int indent) {
    std::unordered_map<int32_t, std::string> names;
    auto name = [&](int32_t v) -> const std::string& {
      auto it = names.find(v);
      if (it == names.end()) it = names.emplace(v, var_name(names.size())).first;
      return it->second;
    };
    auto binder = [&](int32_t v) { os_ << name(v) << ':' << p.type(v).str(); };
    auto atom = [&](const Atom& a) {
      if (a.is_literal())
        os_ << a.lit.value_str() << ':' << a.lit.aval().str();
      else
        os_ << name(a.var);
    };
    std::string pad(size_t(indent), ' ');
    os_ << "{ lambda ";
    for (int32_t v : p.constvars) { binder(v); os_ << ' '; }
    os_ << ';';
    for (int32_t v : p.invars) { os_ << ' '; binder(v); }
    os_ << ". let\n";
    for (const Eqn& e : p.eqns) {
      os_ << pad << "    ";
      for (size_t i = 0; i < e.outputs.size(); ++i) {
        if (i) os_ << ' ';
        binder(e.outputs[i]);
      }
      os_ << " = " << prim_name(e.prim);
      if (!e.params.empty()) {
        os_ << '[';
        bool first = true;
        for (const auto& [k, v] : e.params.entries()) {
          if (!first) os_ << ' ';
          first = false;
          os_ << k << '=';
          value(v, indent + 4);
        }
        os_ << ']';
      }
      for (const Atom& a : e.inputs) { os_ << ' '; atom(a); }
      os_ << '\n';
    }
    os_ << pad << "  in (";
    for (size_t i = 0; i < p.outvars.size(); ++i) {
      if (i) os_ << ", ";
      atom(p.outvars[i]);
    }
    os_ << ") }";
  }

 private:
  void value(const ParamValue& v, int indent) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) {
            os_ << (x ? "True" : "False");
          } else if constexpr (std::is_same_v<T, int64_t>) {
            os_ << x;
          } else if constexpr (std::is_same_v<T, double>) {
            Literal l = Literal::of_double(x, DType::float64);
            os_ << l.value_str();
          } else if constexpr (std::is_same_v<T, IntList>) {
            os_ << '(';
            // A symbolic dim in a param (a reshape's sizes, a broadcast's shape) prints as in a type.
            for (size_t i = 0; i < x.size(); ++i) {
              os_ << (i ? ", " : "");
              if (is_symbolic_dim(x[i])) os_ << dim_str(x[i]);
              else os_ << x[i];
            }
            os_ << (x.size() == 1 ? ",)" : ")");
          } else if constexpr (std::is_same_v<T, DType>) {
            os_ << dtype_name(x);
          } else if constexpr (std::is_same_v<T, std::string>) {
            os_ << '"';
            for (char c : x) {
              if (c == '"' || c == '\\') os_ << '\\' << c;
              else if (c == '\n') os_ << "\\n";
              else os_ << c;
            }
            os_ << '"';
          } else if constexpr (std::is_same_v<T, ProgramRef>) {
            sub_program(*x, indent);
          } else if constexpr (std::is_same_v<T, ProgramList>) {
            os_ << '(';
            for (size_t i = 0; i < x.size(); ++i) {
              if (i) os_ << ',';
              sub_program(*x[i], indent);
            }
            os_ << (x.size() == 1 ? ",)" : ")");
          }
        },
        v);
  }
  void sub_program(const Program& p, int indent) {
    os_ << '\n' << std::string(size_t(indent) + 2, ' ');
    program(p, indent + 2);
  }

  std::ostringstream& os_;
};

}  // namespace

std::string Program::str() const {
  std::ostringstream os;
  Printer(os).program(*this, 0);
  return os.str();
}

}  // namespace fluxion
