#include "ir/serialize.h"

#include <cstdio>
#include <sstream>

#include "ir/eval_rules.h"
#include "ir/trace.h"

namespace fluxion {

namespace {
constexpr std::string_view kMagic = "fluxion-program 1\n";

[[noreturn]] void bad(const std::string& why) { throw ParseError("ParseError: deserialize: " + why); }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

std::string serialize(const Program& p) {
  if (has_effect(p))
    throw ValueError("ValueError: serialize: the program has a debug callback (a host function of this process)");
  std::string out(kMagic);
  out += p.str();
  if (out.back() != '\n') out += '\n';
  out += "consts " + std::to_string(p.consts.size()) + "\n";
  for (size_t i = 0; i < p.consts.size(); ++i) {
    const Array& c = p.consts[i];
    if (!c.valid() || c.is_tracer())
      throw ValueError("ValueError: serialize: constant " + std::to_string(i) + " is not a concrete array");
    out += c.aval().str() + ' ';
    const auto* bytes = static_cast<const unsigned char*>(c.data());
    static const char* digits = "0123456789abcdef";
    for (size_t b = 0; b < c.aval().nbytes(); ++b) {
      out += digits[bytes[b] >> 4];
      out += digits[bytes[b] & 15];
    }
    out += '\n';
  }
  return out;
}

Program deserialize(std::string_view text) {
  if (text.substr(0, kMagic.size()) != kMagic) bad("the text does not start with \"fluxion-program 1\"");
  const size_t at = text.rfind("\nconsts ");
  if (at == std::string_view::npos) bad("no \"consts\" line after the program");
  Program p = parse_program(text.substr(kMagic.size(), at + 1 - kMagic.size()));
  std::istringstream rest{std::string(text.substr(at + 8))};
  size_t n = 0;
  if (!(rest >> n) || n != p.constvars.size())
    bad("the program has " + std::to_string(p.constvars.size()) + " constvars; the consts line disagrees");
  for (size_t i = 0; i < n; ++i) {
    std::string type, hex;
    if (!(rest >> type >> hex)) bad("constant " + std::to_string(i) + " is missing");
    const AbstractArray& want = p.type(p.constvars[i]);
    if (type != want.str()) bad("constant " + std::to_string(i) + " has type " + type + ", its constvar " + want.str());
    if (hex.size() != 2 * want.nbytes()) bad("constant " + std::to_string(i) + " has the wrong number of bytes");
    std::string bytes(want.nbytes(), '\0');
    for (size_t b = 0; b < bytes.size(); ++b) {
      const int hi = hex_digit(hex[2 * b]), lo = hex_digit(hex[2 * b + 1]);
      if (hi < 0 || lo < 0) bad("constant " + std::to_string(i) + " has a byte that is not lowercase hex");
      bytes[b] = char(hi * 16 + lo);
    }
    p.consts.push_back(make_concrete(want, bytes.data()));
  }
  return p;
}

}  // namespace fluxion
