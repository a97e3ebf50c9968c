#include "ir/dim_expr.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <utility>

#include "ir/error.h"

namespace fluxion {

/// An atom: a symbol or an operation the polynomial ring cannot express. `key` is its canonical
/// text, which is what monomials hold and compare.
struct DimExpr::Atom {
  enum class Kind { symbol, floordiv, mod, max, min } kind;
  std::string name;      // symbol
  DimExpr a, b;          // operands (b unused for floordiv/mod)
  int64_t c = 0;         // the divisor of floordiv/mod
  std::string key;
};

namespace {
// Python's floor division and modulo: what dims need (b // 8 of a positive b; the sign rules
// matter only for constants folded from a user's expression).
int64_t floor_div(int64_t a, int64_t c) { return a / c - ((a % c != 0) && ((a < 0) != (c < 0))); }
int64_t floor_mod(int64_t a, int64_t c) { return a - floor_div(a, c) * c; }

bool single_atom(const DimExpr& e, const std::string& s) {
  return !e.is_constant() && s.find_first_of(" *") == std::string::npos;
}
}  // namespace

DimExpr::DimExpr(int64_t c) {
  if (c != 0) terms_[{}] = c;
}

DimExpr DimExpr::of_atom(std::shared_ptr<const Atom> atom) {
  DimExpr e;
  e.terms_[{atom->key}] = 1;
  e.atoms_[atom->key] = std::move(atom);
  return e;
}

DimExpr DimExpr::symbol(std::string_view name) {
  auto a = std::make_shared<Atom>();
  a->kind = Atom::Kind::symbol;
  a->name = std::string(name);
  a->key = a->name;
  return of_atom(std::move(a));
}

bool DimExpr::is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }
int64_t DimExpr::constant() const {
  auto it = terms_.find({});
  return it == terms_.end() ? 0 : it->second;
}

std::vector<std::string> DimExpr::symbols() const {
  std::vector<std::string> out;
  for (const auto& [key, atom] : atoms_) {
    if (atom->kind == Atom::Kind::symbol) {
      out.push_back(atom->name);
    } else {
      for (const DimExpr* sub : {&atom->a, &atom->b})
        for (std::string& s : sub->symbols()) out.push_back(std::move(s));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void DimExpr::merge_atoms(const DimExpr& o) {
  for (const auto& [k, a] : o.atoms_) atoms_.emplace(k, a);
}

namespace {
/// acc += v, a ValueError where int64 would overflow (a user's or a file's expression).
void accumulate(int64_t& acc, int64_t v) {
  if (__builtin_add_overflow(acc, v, &acc)) throw ValueError("a dimension expression's coefficient overflows int64");
}
}  // namespace

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  DimExpr r = a;
  for (const auto& [m, c] : b.terms_) {
    int64_t& k = r.terms_[m];
    accumulate(k, c);
    if (k == 0) r.terms_.erase(m);
  }
  r.merge_atoms(b);
  return r;
}
DimExpr operator-(const DimExpr& a, const DimExpr& b) { return a + DimExpr(-1) * b; }

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  DimExpr r;
  for (const auto& [ma, ca] : a.terms_)
    for (const auto& [mb, cb] : b.terms_) {
      DimExpr::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t prod = 0;
      if (__builtin_mul_overflow(ca, cb, &prod)) throw ValueError("a dimension expression's coefficient overflows int64");
      int64_t& k = r.terms_[m];
      accumulate(k, prod);
      if (k == 0) r.terms_.erase(m);
    }
  r.merge_atoms(a);
  r.merge_atoms(b);
  return r;
}

DimExpr floordiv(const DimExpr& a, int64_t c) {
  if (c <= 0) throw ValueError("floor division of the dimension " + a.str() + " by " + std::to_string(c) + ": the divisor must be a positive constant");
  if (c == 1) return a;
  if (a.is_constant()) return DimExpr(floor_div(a.constant(), c));
  bool exact = std::all_of(a.terms_.begin(), a.terms_.end(), [&](const auto& t) { return t.second % c == 0; });
  if (exact) {
    DimExpr r = a;
    for (auto& [m, k] : r.terms_) k /= c;
    return r;
  }
  auto at = std::make_shared<DimExpr::Atom>();
  at->kind = DimExpr::Atom::Kind::floordiv;
  at->a = a;
  at->c = c;
  std::string s = a.str();
  at->key = (single_atom(a, s) ? s : "(" + s + ")") + " // " + std::to_string(c);
  return DimExpr::of_atom(std::move(at));
}

DimExpr mod(const DimExpr& a, int64_t c) {
  if (c <= 0) throw ValueError("modulo of the dimension " + a.str() + " by " + std::to_string(c) + ": the divisor must be a positive constant");
  if (a.is_constant()) return DimExpr(floor_mod(a.constant(), c));
  if (std::all_of(a.terms_.begin(), a.terms_.end(), [&](const auto& t) { return t.second % c == 0; })) return DimExpr(0);
  auto at = std::make_shared<DimExpr::Atom>();
  at->kind = DimExpr::Atom::Kind::mod;
  at->a = a;
  at->c = c;
  std::string s = a.str();
  at->key = (single_atom(a, s) ? s : "(" + s + ")") + " % " + std::to_string(c);
  return DimExpr::of_atom(std::move(at));
}

DimExpr DimExpr::extremum(const DimExpr& a, const DimExpr& b, bool is_max) {
  if (a == b) return a;
  if (a.is_constant() && b.is_constant())
    return DimExpr(is_max ? std::max(a.constant(), b.constant()) : std::min(a.constant(), b.constant()));
  auto at = std::make_shared<Atom>();
  at->kind = is_max ? Atom::Kind::max : Atom::Kind::min;
  std::string sa = a.str(), sb = b.str();
  // Commutative: the operands in text order, so max(b, 4) == max(4, b).
  bool swap = sb < sa;
  at->a = swap ? b : a;
  at->b = swap ? a : b;
  at->key = std::string(is_max ? "max(" : "min(") + (swap ? sb : sa) + ", " + (swap ? sa : sb) + ")";
  return DimExpr::of_atom(std::move(at));
}
DimExpr max(const DimExpr& a, const DimExpr& b) { return DimExpr::extremum(a, b, true); }
DimExpr min(const DimExpr& a, const DimExpr& b) { return DimExpr::extremum(a, b, false); }

int64_t DimExpr::evaluate(const std::map<std::string, int64_t>& env) const {
  int64_t total = 0;
  for (const auto& [m, c] : terms_) {
    int64_t v = c;
    for (const std::string& k : m) {
      const Atom& at = *atoms_.at(k);
      int64_t x = 0;
      switch (at.kind) {
        case Atom::Kind::symbol: {
          auto it = env.find(at.name);
          if (it == env.end()) throw ValueError("the dimension " + str() + " needs a value for the symbol " + at.name);
          x = it->second;
          break;
        }
        case Atom::Kind::floordiv: x = floor_div(at.a.evaluate(env), at.c); break;
        case Atom::Kind::mod: x = floor_mod(at.a.evaluate(env), at.c); break;
        case Atom::Kind::max: x = std::max(at.a.evaluate(env), at.b.evaluate(env)); break;
        case Atom::Kind::min: x = std::min(at.a.evaluate(env), at.b.evaluate(env)); break;
      }
      if (__builtin_mul_overflow(v, x, &v)) throw ValueError("the dimension " + str() + " overflows int64 for these sizes");
    }
    accumulate(total, v);
  }
  return total;
}

int DimExpr::build(Builder& b) const {
  int total = -1;
  for (const auto& [m, c] : terms_) {
    int v = m.empty() || c != 1 ? b.constant(c) : -1;  // a coefficient of 1 is not multiplied in
    for (const std::string& k : m) {
      const Atom& at = *atoms_.at(k);
      int x = 0;
      switch (at.kind) {
        case Atom::Kind::symbol: x = b.symbol(at.name); break;
        case Atom::Kind::floordiv: x = b.floordiv(at.a.build(b), at.c); break;
        case Atom::Kind::mod: x = b.mod(at.a.build(b), at.c); break;
        case Atom::Kind::max: x = b.max(at.a.build(b), at.b.build(b)); break;
        case Atom::Kind::min: x = b.min(at.a.build(b), at.b.build(b)); break;
      }
      v = v < 0 ? x : b.mul(v, x);
    }
    total = total < 0 ? v : b.add(total, v);
  }
  return total < 0 ? b.constant(0) : total;
}

std::string DimExpr::str() const {
  if (terms_.empty()) return "0";
  std::string out;
  auto term = [&](const Monomial& m, int64_t c, bool first) {
    std::string s;
    int64_t mag = c < 0 ? -c : c;
    if (!first) s += c < 0 ? " - " : " + ";
    else if (c < 0) s += "-";
    bool wrap = m.size() > 1 || c != 1;  // "2*(b // 8)" and "-(b // 8)", never "2*b // 8" or "-b // 8"
    if (m.empty() || mag != 1) s += std::to_string(mag);
    for (size_t i = 0; i < m.size(); ++i) {
      if (i || mag != 1) s += "*";
      bool composite = atoms_.at(m[i])->kind == Atom::Kind::floordiv || atoms_.at(m[i])->kind == Atom::Kind::mod;
      s += wrap && composite ? "(" + m[i] + ")" : m[i];
    }
    return s;
  };
  bool first = true;
  for (const auto& [m, c] : terms_)
    if (!m.empty()) out += term(m, c, std::exchange(first, false));
  if (auto it = terms_.find({}); it != terms_.end()) out += term({}, it->second, first);
  return out;
}

// ---- the encoding of symbolic dims in a Shape ----------------------------------------------------

namespace {
struct InternTable {
  std::mutex mu;
  std::vector<DimExpr> exprs;
  std::map<std::string, int64_t> codes;
};
InternTable& intern_table() {
  static InternTable* t = new InternTable;  // never destroyed: shapes may outlive static teardown
  return *t;
}
}  // namespace

int64_t encode_dim(const DimExpr& e) {
  if (e.is_constant()) return e.constant();
  std::string key = e.str();
  InternTable& t = intern_table();
  std::lock_guard lock(t.mu);
  auto [it, fresh] = t.codes.emplace(key, kSymbolicDimBase - int64_t(t.exprs.size()));
  if (fresh) t.exprs.push_back(e);
  return it->second;
}

bool decode_dim(int64_t d, DimExpr& out) {
  if (d >= 0) {
    out = DimExpr(d);
    return true;
  }
  if (!is_symbolic_dim(d)) return false;
  InternTable& t = intern_table();
  std::lock_guard lock(t.mu);
  uint64_t id = uint64_t(kSymbolicDimBase - d);
  if (id >= t.exprs.size()) return false;
  out = t.exprs[id];
  return true;
}

int64_t mul_dims(int64_t a, int64_t b) {
  if (!is_symbolic_dim(a) && !is_symbolic_dim(b)) return a * b;
  DimExpr ea, eb;
  if (!decode_dim(a, ea)) return a;
  if (!decode_dim(b, eb)) return b;
  return encode_dim(ea * eb);
}

std::string dim_str(int64_t d) {
  if (d >= 0) return std::to_string(d);
  DimExpr e;
  if (decode_dim(d, e)) return e.str();
  return std::to_string(d);
}

// ---- parsing ----------------------------------------------------------------------------------

namespace {
/// expr := term (('+' | '-') term)*;  term := unary (('*' unary) | ('//' int) | ('%' int))*;
/// unary := '-' unary | int | name | ('max' | 'min') '(' expr ',' expr ')' | '(' expr ')'
class DimParser {
 public:
  explicit DimParser(std::string_view text) : s_(text) {}
  DimExpr whole() {
    DimExpr e = expr();
    skip();
    if (pos_ != s_.size()) fail("an operator or the end");
    return e;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }
  [[noreturn]] void fail(const std::string& wanted) const {
    throw ValueError("the dimension expression '" + std::string(s_) + "' at position " + std::to_string(pos_) +
                     ": expected " + wanted);
  }
  int64_t integer() {
    skip();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) fail("a number that fits in int64");
      ++pos_;
    }
    if (pos_ == start) fail("an integer constant");
    return v;
  }
  DimExpr expr() {
    DimExpr e = term();
    for (;;) {
      if (eat("+")) e = e + term();
      else if (eat("-")) e = e - term();
      else return e;
    }
  }
  DimExpr term() {
    DimExpr e = unary();
    for (;;) {
      if (eat("//")) e = floordiv(e, integer());
      else if (eat("%")) e = mod(e, integer());
      else if (eat("*")) e = e * unary();
      else return e;
    }
  }
  DimExpr unary() {
    skip();
    // Bounded nesting: a hostile text ("((((...") fails instead of exhausting the stack.
    if (++depth_ > 64) fail("at most 64 nested operators");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (eat("-")) return -unary();
    if (eat("(")) {
      DimExpr e = expr();
      if (!eat(")")) fail("')'");
      return e;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) return DimExpr(integer());
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (pos_ == start) fail("a number, a symbol, max(, min( or '('");
    std::string name(s_.substr(start, pos_ - start));
    if ((name == "max" || name == "min") && eat("(")) {
      DimExpr a = expr();
      if (!eat(",")) fail("',' between the operands of " + name);
      DimExpr b = expr();
      if (!eat(")")) fail("')' closing " + name);
      return name == "max" ? max(a, b) : min(a, b);
    }
    return DimExpr::symbol(name);
  }
};
}  // namespace

DimExpr DimExpr::parse(std::string_view text) { return DimParser(text).whole(); }

}  // namespace fluxion
