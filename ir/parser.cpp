// Reads the text form that ir/printer.cpp writes (grammar in docs/ir.md). A recursive-descent parser
// over the raw text: every failure is a ParseError naming line, column, what was expected and what
// was found. Numbers go through std::from_chars (never std::stoll, which throws its own exceptions),
// so literal values round-trip bit-exactly with Literal::value_str.
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/dim_expr.h"
#include "ir/program.h"

namespace fluxion {

namespace {

// Sub-programs in params nest; a bound keeps hostile input from exhausting the stack.
constexpr int kMaxNesting = 64;

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
// The characters of a value token: numbers ("-1.5e+07"), words ("True", "nan", "f32") and names.
bool is_value_char(char c) { return is_ident_char(c) || c == '.' || c == '+' || c == '-'; }
bool is_inline_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_space(char c) { return is_inline_space(c) || c == '\n'; }

// Parses all of `s` as T with from_chars; false on any leftover, overflow or malformed text.
template <class T>
bool parse_number(std::string_view s, T* out) {
  if (s.empty()) return false;
  const char* first = s.data();
  if constexpr (std::is_unsigned_v<T>) {
    if (*first == '-') return false;  // from_chars would reject it too; be explicit
  }
  auto [ptr, ec] = std::from_chars(first, first + s.size(), *out);
  return ec == std::errc() && ptr == first + s.size();
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Program parse() {
    Program p = program();
    skip_space();
    if (!at_end()) fail("the end of the text after the closing '}'");
    return p;
  }

 private:
  using Scope = std::unordered_map<std::string, int32_t>;

  // ---- errors -----------------------------------------------------------------------------------
  [[noreturn]] void fail(std::string_view expected) const { fail_at(pos_, expected); }
  [[noreturn]] void fail_at(size_t at, std::string_view expected) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw ParseError("ParseError: line " + std::to_string(line) + ", column " + std::to_string(col) + ": expected " +
                     std::string(expected) + ", found " + describe(at));
  }
  // What stands at `at`, for messages: "end of text", "'x'" or the value token there.
  std::string describe(size_t at) const {
    if (at >= text_.size()) return "end of text";
    char c = text_[at];
    if (c == '\n') return "end of line";
    if (is_value_char(c)) {
      size_t end = at;
      while (end < text_.size() && end - at < 24 && is_value_char(text_[end])) ++end;
      return "'" + std::string(text_.substr(at, end - at)) + "'";
    }
    auto uc = static_cast<unsigned char>(c);
    if (uc < 0x20 || uc >= 0x7f) {
      static const char* kHex = "0123456789abcdef";
      return std::string("byte 0x") + kHex[uc >> 4] + kHex[uc & 15];
    }
    return std::string("'") + c + "'";
  }

  // ---- characters -------------------------------------------------------------------------------
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_space() {
    while (!at_end() && is_space(text_[pos_])) ++pos_;
  }
  void skip_inline_space() {
    while (!at_end() && is_inline_space(text_[pos_])) ++pos_;
  }
  void expect(char c, std::string_view what) {
    skip_space();
    if (peek() != c) fail(what);
    ++pos_;
  }
  void expect_keyword(std::string_view kw) {
    skip_space();
    size_t start = pos_;
    if (ident() != kw) fail_at(start, "'" + std::string(kw) + "'");
  }
  // An identifier at pos_, or "" (pos_ unchanged) if none starts here.
  std::string_view ident() {
    size_t start = pos_;
    if (!at_end() && is_ident_start(text_[pos_])) {
      while (!at_end() && is_ident_char(text_[pos_])) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  std::string_view value_token() {
    size_t start = pos_;
    while (!at_end() && is_value_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // ---- programs ---------------------------------------------------------------------------------
  Program program() {
    if (++depth_ > kMaxNesting) fail("at most " + std::to_string(kMaxNesting) + " levels of nested programs");
    Program p;
    Scope scope;
    expect('{', "'{' opening a program");
    expect_keyword("lambda");
    for (;;) {  // constvars, up to ';'
      skip_space();
      if (peek() == ';') break;
      p.constvars.push_back(define(p, scope, binder("a constvar binder (name:type) or ';'")));
    }
    ++pos_;
    for (;;) {  // invars, up to '.'
      skip_space();
      if (peek() == '.') break;
      p.invars.push_back(define(p, scope, binder("an invar binder (name:type) or '.'")));
    }
    ++pos_;
    expect_keyword("let");
    while (!at_in_keyword()) eqn(p, scope);
    expect_keyword("in");
    expect('(', "'(' opening the outputs");
    skip_space();
    if (peek() != ')') {
      for (;;) {
        p.outvars.push_back(atom(scope));
        skip_space();
        if (peek() != ',') break;
        ++pos_;
      }
    }
    expect(')', "',' or ')' closing the outputs");
    expect('}', "'}' closing the program");
    --depth_;
    return p;
  }

  // The eqn list ends at "in" -- unless "in" is a variable being bound ("in:f32[] = ...").
  bool at_in_keyword() {
    skip_space();
    size_t start = pos_;
    bool is_in = ident() == "in";
    pos_ = start;
    if (!is_in) return false;
    size_t after = start + 2;
    while (after < text_.size() && is_space(text_[after])) ++after;
    return after >= text_.size() || text_[after] != ':';
  }

  struct Binder {
    std::string name;
    AbstractArray type;
    size_t pos;
  };
  Binder binder(std::string_view what) {
    skip_space();
    size_t start = pos_;
    std::string_view name = ident();
    if (name.empty()) fail(what);
    if (peek() != ':') fail("':' and a type after the variable name '" + std::string(name) + "'");
    ++pos_;
    return Binder{std::string(name), type(), start};
  }
  int32_t define(Program& p, Scope& scope, const Binder& b) {
    if (scope.count(b.name)) fail_at(b.pos, "a new variable name ('" + b.name + "' is already defined)");
    int32_t v = p.new_var(b.type);
    scope.emplace(b.name, v);
    return v;
  }

  // Where a dim expression starting at pos_ ends: the next ',' or `closer` outside parentheses
  // (a type's dims end at ']', a param tuple's at ')'; "max(b, 4)" has a comma of its own).
  size_t expression_end(char closer) const {
    size_t end = pos_;
    for (int depth = 0; end < text_.size() && text_[end] != '\n' && (depth > 0 || (text_[end] != ',' && text_[end] != closer));
         ++end)
      depth += text_[end] == '(' ? 1 : text_[end] == ')' ? -1 : 0;
    return end;
  }

  // A dim of a type: a non-negative integer, or a symbolic one ("b", "2*b + 1", "max(b, 4)").
  int64_t dim() {
    size_t dim_pos = pos_;
    const size_t end = expression_end(']');
    std::string_view whole = text_.substr(pos_, end - pos_);
    if (whole.find_first_not_of("0123456789") != std::string_view::npos) {  // "b", "2*b + 1": an expression
      pos_ = end;
      try {
        DimExpr e = DimExpr::parse(text_.substr(dim_pos, pos_ - dim_pos));
        if (e.is_constant() && e.constant() < 0) fail_at(dim_pos, "a dimension (a non-negative integer or a symbolic expression)");
        for (const std::string& name : e.symbols()) symbols_.insert(name);
        return encode_dim(e);
      } catch (const ValueError& e) {
        fail_at(dim_pos, std::string("a dimension (") + e.what() + ")");
      }
    }
    int64_t d = 0;
    if (!parse_number(value_token(), &d) || d < 0) fail_at(dim_pos, "a dimension (a non-negative integer or a symbolic expression)");
    return d;
  }

  // f32[2,3], f32[b,784] or f32[]{weak}
  AbstractArray type() {
    AbstractArray t;
    size_t start = pos_;
    std::string_view name = ident();
    if (name.empty()) fail("a dtype (f32, i32, bool, ...)");
    if (!parse_dtype(name, &t.dtype)) fail_at(start, "a dtype (bool i8 i32 i64 u8 u32 f16 bf16 f32 f64)");
    if (peek() != '[') fail("'[' opening the shape");
    ++pos_;
    skip_inline_space();
    if (peek() != ']') {
      for (;;) {
        skip_inline_space();
        t.shape.push_back(dim());
        skip_inline_space();
        if (peek() != ',') break;
        ++pos_;
      }
    }
    if (peek() != ']') fail("',' or ']' in the shape");
    ++pos_;
    // A size that wraps would make every later size check compare against the wrapped value (the
    // constants deserialize reads would be that many bytes).
    if (std::string why = symbolic_shape_problem(t.shape, t.dtype); !why.empty()) fail_at(start, "a type whose size fits in int64 (" + why + ")");
    if (text_.substr(pos_, 1) == "{") {
      if (text_.substr(pos_, 6) != "{weak}") fail("'{weak}' or nothing after the shape");
      pos_ += 6;
      t.weak_type = true;
    }
    return t;
  }

  // outs = prim[params] inputs  (the inputs end with the line)
  void eqn(Program& p, Scope& scope) {
    std::vector<Binder> outs;
    for (;;) {
      skip_space();
      if (peek() == '=') break;
      outs.push_back(binder("an eqn output binder (name:type), '=' or 'in'"));
    }
    ++pos_;
    Eqn e;
    skip_space();
    size_t prim_pos = pos_;
    std::string_view name = ident();
    if (name.empty()) fail("a primitive name");
    if (!parse_prim(name, &e.prim)) fail_at(prim_pos, "a primitive name (no primitive is called '" + std::string(name) + "')");
    if (peek() == '[') e.params = params();
    for (;;) {
      skip_inline_space();
      if (peek() == '\n' || at_end()) break;
      e.inputs.push_back(atom(scope));
      if (!at_end() && !is_space(peek())) fail("a space or the end of the line after an input");
    }
    // Outputs are bound after the inputs are read: an eqn cannot use its own outputs.
    for (const Binder& b : outs) e.outputs.push_back(define(p, scope, b));
    p.eqns.push_back(std::move(e));
  }

  // A variable name, or a literal "value:type".
  Atom atom(const Scope& scope) {
    skip_space();
    size_t start = pos_;
    std::string_view tok = value_token();
    if (tok.empty()) fail("a variable or a literal (value:type)");
    if (peek() == ':') {
      ++pos_;
      return literal(tok, start);
    }
    pos_ = start;
    std::string_view name = ident();
    if (name.size() != tok.size()) fail_at(start, "a variable name or a literal (value:type)");
    auto it = scope.find(std::string(name));
    if (it == scope.end()) fail_at(start, "a defined variable ('" + std::string(name) + "' is not defined)");
    return Atom(it->second);
  }

  Literal literal(std::string_view tok, size_t start) {
    size_t type_pos = pos_;
    AbstractArray t = type();
    if (t.ndim() != 0) fail_at(type_pos, "a rank-0 type for a literal (like f32[])");
    DType d = t.dtype;
    std::string dt(dtype_name(d));
    if (d == DType::bool_) {
      if (tok == "True" || tok == "False") return Literal::of_int(tok == "True", d, t.weak_type);
      fail_at(start, "True or False for a bool literal");
    }
    if (is_signed_int(d)) {
      int64_t v = 0;
      bool in_range = false;
      if (parse_number(tok, &v)) {
        dispatch_dtype(d, [&](auto z) {
          using T = decltype(z);
          if constexpr (std::is_integral_v<T>)
            in_range = v >= int64_t(std::numeric_limits<T>::min()) && v <= int64_t(std::numeric_limits<T>::max());
        });
      }
      if (!in_range) fail_at(start, "an integer in the range of " + dt);
      return Literal::of_int(v, d, t.weak_type);
    }
    if (is_unsigned_int(d)) {
      uint64_t v = 0;
      uint64_t max = d == DType::uint8 ? 0xffu : 0xffffffffu;
      if (!parse_number(tok, &v) || v > max) fail_at(start, "a non-negative integer in the range of " + dt);
      return Literal::of_int(int64_t(v), d, t.weak_type);
    }
    if (is_complex(d)) {
      // re+imj or re-imj, each part a real literal of the part dtype.
      size_t split = std::string_view::npos;
      for (size_t k = 1; k + 1 < tok.size(); ++k)
        if ((tok[k] == '+' || tok[k] == '-') && tok[k - 1] != 'e' && tok[k - 1] != 'E') split = k;
      if (tok.back() != 'j' || split == std::string_view::npos) fail_at(start, "a complex literal re+imj for " + dt);
      const DType part = real_dtype_of(d);
      std::string_view im = tok.substr(split, tok.size() - split - 1);
      if (im[0] == '+') im.remove_prefix(1);
      return Literal::of_complex(real_value(tok.substr(0, split), part, start), real_value(im, part, start), d,
                                 t.weak_type);
    }
    return Literal::of_double(real_value(tok, d, start), d, t.weak_type);
  }

  // Floating: read at the dtype's own precision (f16/bf16 print as the float they widen to), so
  // the shortest round-trip text maps back to the same bits without double rounding.
  double real_value(std::string_view tok, DType d, size_t start) {
    const std::string dt(dtype_name(d));
    double v = 0;
    if (tok == "nan") {
      v = std::numeric_limits<double>::quiet_NaN();
    } else if (tok == "inf" || tok == "-inf") {
      v = tok[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    } else if (tok.empty() || (!is_digit(tok[0]) && !(tok[0] == '-' && tok.size() > 1 && is_digit(tok[1])))) {
      fail_at(start, "a number, nan, inf or -inf for a " + dt + " literal");
    } else if (d == DType::float64) {
      if (!parse_number(tok, &v)) fail_at(start, "a number in the range of f64");
    } else {
      float f = 0;
      if (!parse_number(tok, &f)) fail_at(start, "a number in the range of " + dt);
      v = double(f);
    }
    return v;
  }

  // ---- params -----------------------------------------------------------------------------------
  Params params() {
    ++pos_;  // '['
    Params ps;
    for (;;) {
      skip_space();
      if (peek() == ']') break;
      size_t key_pos = pos_;
      std::string_view key = ident();
      if (key.empty()) fail("a parameter name or ']'");
      if (ps.has(key)) fail_at(key_pos, "a parameter name not given before ('" + std::string(key) + "' is repeated)");
      if (peek() != '=') fail("'=' after the parameter name '" + std::string(key) + "'");
      ++pos_;
      ParamValue v = param_value();
      ps.set(std::string(key), std::move(v));
      if (!at_end() && !is_space(peek()) && peek() != ']') fail("a space or ']' after a parameter value");
    }
    ++pos_;
    return ps;
  }

  ParamValue param_value() {
    skip_space();
    char c = peek();
    if (c == '{') return ProgramRef(std::make_shared<const Program>(program()));
    if (c == '(') return tuple_value();
    if (c == '"') return string_value();
    size_t start = pos_;
    std::string_view tok = value_token();
    if (tok.empty()) fail("a parameter value");
    if (tok == "True" || tok == "False") return tok == "True";
    if (tok == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (tok == "inf" || tok == "-inf") return tok[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    if (is_digit(tok[0]) || (tok[0] == '-' && tok.size() > 1 && is_digit(tok[1]))) {
      int64_t i = 0;
      if (parse_number(tok, &i)) return i;
      double d = 0;
      // An int has neither '.' nor 'e': one that fails to parse overflowed, not a double.
      if (tok.find_first_of(".eE") != std::string_view::npos && parse_number(tok, &d)) return d;
      fail_at(start, "a number in range (an int64, or a double with '.' or 'e')");
    }
    DType dt;
    if (parse_dtype(tok, &dt)) return dt;
    fail_at(start, "a parameter value (True, False, a number, a dtype, a string, a tuple or a program)");
  }

  // () (0,) (0, 1) -- or a tuple of programs ({...},{...})
  ParamValue tuple_value() {
    ++pos_;  // '('
    skip_space();
    if (peek() == ')') {
      ++pos_;
      return IntList{};
    }
    if (peek() == '{') {
      ProgramList list;
      for (;;) {
        list.push_back(std::make_shared<const Program>(program()));
        skip_space();
        if (peek() != ',') break;
        ++pos_;
        skip_space();
        if (peek() == ')') break;
      }
      expect(')', "',' or ')' closing the tuple of programs");
      return list;
    }
    IntList ints;
    for (;;) {
      skip_space();
      ints.push_back(tuple_int());
      skip_space();
      if (peek() != ',') break;
      ++pos_;
      skip_space();
      if (peek() == ')') break;
    }
    expect(')', "',' or ')' closing the tuple");
    return ints;
  }

  // An int of a tuple, or a symbolic dim in a param (a reshape's sizes, a broadcast's shape):
  // "b", "2*b + 1", "max(b, 4)".
  int64_t tuple_int() {
    const size_t start = pos_;
    if (!at_end() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '(')) {
      const size_t end = expression_end(')');
      pos_ = end;
      try {
        const DimExpr e = DimExpr::parse(text_.substr(start, end - start));
        // A param's dim can only be one the types have: a stray name is a typo, not a new symbol.
        for (const std::string& name : e.symbols())
          if (!symbols_.count(name))
            fail_at(start, "an integer (int64) in the tuple ('" + name + "' is no symbolic dim of a type before it)");
        return encode_dim(e);
      } catch (const ValueError& e) {
        fail_at(start, std::string("an integer or a symbolic dimension in the tuple (") + e.what() + ")");
      }
    }
    int64_t v = 0;
    if (!parse_number(value_token(), &v)) fail_at(start, "an integer (int64) in the tuple");
    return v;
  }

  // "text" with \" \\ \n escapes; other characters stand for themselves.
  ParamValue string_value() {
    ++pos_;  // '"'
    std::string s;
    for (;;) {
      if (at_end()) fail("'\"' closing the string");
      char c = text_[pos_];
      if (c == '"') break;
      if (c == '\\') {
        ++pos_;
        char e = peek();
        if (e == '"' || e == '\\') s += e;
        else if (e == 'n') s += '\n';
        else fail("an escape \\\" \\\\ or \\n in the string");
      } else {
        s += c;
      }
      ++pos_;
    }
    ++pos_;
    return s;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::unordered_set<std::string> symbols_;  // the symbolic dims the types read so far mention
};

}  // namespace

Program parse_program(std::string_view text) { return Parser(text).parse(); }

}  // namespace fluxion
