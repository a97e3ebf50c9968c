#include "train/json.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

#include "ir/error.h"

namespace fluxion::json {

namespace {

struct Parser {
  std::string_view s;
  const std::string& what;
  size_t i = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw IOError("IOError: " + what + ": malformed JSON header at byte " + std::to_string(i) + ": " + msg);
  }
  void skip_space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    skip_space();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    if (s.substr(i, w.size()) != w) return false;
    i += w.size();
    return true;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c != '\\') { out += c; continue; }
      if (i >= s.size()) fail("unterminated escape");
      char e = s[i++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          unsigned code = 0;
          const char* end = s.data() + std::min(s.size(), i + 4);
          auto [p, ec] = std::from_chars(s.data() + i, end, code, 16);
          if (ec != std::errc() || p != s.data() + i + 4) fail("a \\u escape needs four hex digits");
          i += 4;
          if (code < 0x80) { out += char(code); }
          else if (code < 0x800) { out += char(0xC0 | (code >> 6)); out += char(0x80 | (code & 0x3F)); }
          else { out += char(0xE0 | (code >> 12)); out += char(0x80 | ((code >> 6) & 0x3F)); out += char(0x80 | (code & 0x3F)); }
          break;
        }
        default: out += e;  // \" \\ \/
      }
    }
    if (i >= s.size()) fail("unterminated string");
    ++i;
    return out;
  }

  Value value(int depth) {
    if (depth > 64) fail("nested too deeply");
    skip_space();
    Value v;
    if (i >= s.size()) fail("unexpected end");
    char c = s[i];
    if (c == '{') {
      ++i;
      v.kind = Value::Kind::object;
      if (eat('}')) return v;
      do {
        skip_space();
        std::string key = string();
        expect(':');
        v.object[key] = value(depth + 1);
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i;
      v.kind = Value::Kind::array;
      if (eat(']')) return v;
      do v.array.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::Kind::string;
      v.string = string();
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i++;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i < s.size() && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) fail("only integers are expected here");
      v.kind = Value::Kind::number;
      auto [p, ec] = std::from_chars(s.data() + start, s.data() + i, v.number);
      const std::string text(s.substr(start, std::min<size_t>(i - start, 24)));
      if (ec == std::errc::result_out_of_range) i = start, fail("the integer " + text + " does not fit in 64 bits");
      if (ec != std::errc() || p != s.data() + i) i = start, fail("a malformed number '" + text + "'");
    } else if (word("true") || word("false")) {
      v.kind = Value::Kind::boolean;
      v.boolean = s[i - 1] == 'e' && s[i - 2] == 'u';
    } else if (word("null")) {
      v.kind = Value::Kind::null;
    } else {
      fail(std::string("unexpected '") + c + "'");
    }
    return v;
  }
};

}  // namespace

Value parse(std::string_view text, const std::string& what) {
  Parser p{text, what};
  Value v = p.value(0);
  p.skip_space();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += c; }
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace fluxion::json
