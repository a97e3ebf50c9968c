#include "transforms/export.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <functional>
#include <vector>

#include "ir/dim_expr.h"
#include "ir/eval_rules.h"
#include "ir/serialize.h"
#include "kernels/conv.h"
#include "lowering/codegen_cpu.h"
#include "lowering/compile.h"
#include "lowering/target.h"
#include "interpreters/jit_passes.h"
#include "transforms/refuse_complex.h"

namespace fluxion {

namespace {

// Compiled code of these calls a reference kernel of libfluxion (kernels/library_calls.h), which
// the AOT runtime does not carry: primitives lowered to fluxion_rt_call_prim, and windowed ones
// (convolutions, pooling) of types no kernel of kernels/conv.h takes (fluxion_rt_windowed).
bool windowed_by_reference(const Program& p, const Eqn& e) {
  if (!runtime::is_windowed(e.prim)) return false;
  std::vector<AbstractArray> in, out;
  for (const Atom& a : e.inputs) in.push_back(p.aval(a));
  for (int32_t v : e.outputs) out.push_back(p.type(v));
  return !runtime::windowed_has_kernel(e.prim, in, out, e.params);
}

void refuse_library_calls(const Program& p) {
  for (const Eqn& e : p.eqns) {
    if (!eval_rules(e.prim).kernel_params.empty() || windowed_by_reference(p, e))
      throw CompileError("CompileError: export: " + std::string(prim_name(e.prim)) + " at " + e.loc.str() +
                         " runs a reference kernel of libfluxion as a library call; an exported object links "
                         "only the AOT runtime, so the program cannot be exported");
    any_sub_program(e, [](const Program& q) {
      refuse_library_calls(q);
      return false;
    });
  }
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  out.close();
  if (!out) throw ValueError("ValueError: export: cannot write " + path);
}

// The C type of a buffer element (float16 and bfloat16 as their bits).
const char* c_type(DType d) {
  switch (d) {
    case DType::bool_: case DType::uint8: return "uint8_t";
    case DType::int8: return "int8_t";
    case DType::int32: return "int32_t";
    case DType::uint32: return "uint32_t";
    case DType::int64: return "int64_t";
    case DType::float16: case DType::bfloat16: return "uint16_t";
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::complex64: case DType::complex128: break;  // refused before (transforms/refuse_complex.h)
  }
  throw CompileError("CompileError: export: no C type for " + std::string(dtype_name(d)));
}

// One element of a constant as a C literal, exactly (hex floats).
std::string c_literal(const unsigned char* p, DType d) {
  char buf[64];
  switch (d) {
    case DType::float32: { float v; std::memcpy(&v, p, 4); std::snprintf(buf, sizeof buf, "%af", double(v)); break; }
    case DType::float64: { double v; std::memcpy(&v, p, 8); std::snprintf(buf, sizeof buf, "%a", v); break; }
    case DType::float16: case DType::bfloat16: { uint16_t v; std::memcpy(&v, p, 2); std::snprintf(buf, sizeof buf, "%u", unsigned(v)); break; }
    case DType::int64: { int64_t v; std::memcpy(&v, p, 8); std::snprintf(buf, sizeof buf, "INT64_C(%lld)", static_cast<long long>(v)); break; }
    default: return Literal::load(p, d).value_str();
  }
  if (std::strstr(buf, "inf") || std::strstr(buf, "nan"))
    return std::string(buf).find('-') != std::string::npos ? "-(1.0/0.0)" : std::strstr(buf, "nan") ? "(0.0/0.0)" : "(1.0/0.0)";
  return buf;
}

std::string dims(const AbstractArray& a) { return a.str(); }

// The elements of a constant as C literals, eight to a line; `keep(k)` chooses which.
template <class Keep>
std::string literals(const Array& c, Keep keep) {
  const auto* bytes = static_cast<const unsigned char*>(c.data());
  const size_t size = itemsize(c.dtype());
  std::string out;
  int64_t written = 0;
  for (int64_t k = 0; k < c.aval().size(); ++k) {
    if (!keep(k)) continue;
    out += (written++ % 8 == 0) ? "\n  " : " ";
    out += c_literal(bytes + size_t(k) * size, c.dtype()) + ",";
  }
  return written ? out : "\n  0,";  // C has no empty arrays
}

// Whether element k of a constant is zero: all its bytes (so -0.0 is kept, exactly).
bool zero_at(const Array& c, int64_t k) {
  const auto* p = static_cast<const unsigned char*>(c.data()) + size_t(k) * itemsize(c.dtype());
  for (size_t b = 0; b < itemsize(c.dtype()); ++b)
    if (p[b]) return false;
  return true;
}

// Sparse storage -- a bitmap of the nonzero elements, then their values -- takes under 3/4 of the
// dense bytes (so the unpacking pays for itself): from about 1/3 zeros for float32, 2/3 for int8.
bool sparse_is_smaller(const Array& c) {
  const int64_t n = c.aval().size(), size = int64_t(itemsize(c.dtype()));
  if (n < 64) return false;
  int64_t nonzero = 0;
  for (int64_t k = 0; k < n; ++k) nonzero += !zero_at(c, k);
  return 4 * ((n + 7) / 8 + nonzero * size) < 3 * n * size;
}

std::string dense_constant(const Array& c, const std::string& name) {
  const AbstractArray& a = c.aval();
  return "/* " + dims(a) + " */\nstatic const " + std::string(c_type(a.dtype)) + " " + name + "[" +
         std::to_string(std::max<int64_t>(a.size(), 1)) + "] __attribute__((aligned(64))) = {" +
         literals(c, [](int64_t) { return true; }) + "\n};\n\n";
}

// name_bits (bit k % 8 of byte k / 8: element k is nonzero), name_values (the nonzero elements in
// order), and name itself, zero-initialised, which the unpacking fills.
std::string sparse_constant(const Array& c, const std::string& name) {
  const AbstractArray& a = c.aval();
  const int64_t n = a.size();
  std::vector<unsigned char> bits(size_t((n + 7) / 8), 0);
  int64_t nonzero = 0;
  for (int64_t k = 0; k < n; ++k)
    if (!zero_at(c, k)) bits[size_t(k / 8)] |= static_cast<unsigned char>(1u << (k % 8)), ++nonzero;
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * double(n - nonzero) / double(n));
  std::string h = "/* " + dims(a) + ", " + share + " zeros: stored sparse, unpacked into " + name +
                  " at the first call */\nstatic const uint8_t " + name + "_bits[" + std::to_string(bits.size()) + "] = {";
  for (size_t k = 0; k < bits.size(); ++k) h += std::string(k % 16 == 0 ? "\n  " : " ") + std::to_string(bits[k]) + ",";
  h += "\n};\nstatic const " + std::string(c_type(a.dtype)) + " " + name + "_values[" +
       std::to_string(std::max<int64_t>(nonzero, 1)) + "] = {" + literals(c, [&](int64_t k) { return !zero_at(c, k); }) +
       "\n};\nstatic " + c_type(a.dtype) + " " + name + "[" + std::to_string(n) + "] __attribute__((aligned(64)));\n\n";
  return h;
}

// entry_unpack (one sparse constant), entry_unpack_all (every one: `calls`), and the once flag
// the entry point runs it under.
std::string unpack_functions(const std::string& entry, const std::string& calls) {
  return "/* Sparse constants: element k is the next value where bit k is set, else 0. */\n"
         "static void " + entry + "_unpack(const uint8_t* bits, const void* values, void* to, long n, long size) {\n"
         "  const char* v = (const char*)values;\n"
         "  for (long k = 0; k < n; ++k)\n"
         "    if ((bits[k >> 3] >> (k & 7)) & 1) {\n"
         "      memcpy((char*)to + k * size, v, (size_t)size);\n"
         "      v += size;\n"
         "    }\n"
         "}\n"
         "static void " + entry + "_unpack_all(void) {\n" + calls + "}\n"
         "static pthread_once_t " + entry + "_once = PTHREAD_ONCE_INIT;\n\n";
}

}  // namespace

namespace export_detail {
std::vector<AbstractArray> spec_avals(const PolymorphicShapes& ps) {
  std::vector<AbstractArray> out;
  for (size_t i = 0; i < ps.specs.size(); ++i) {
    Shape shape;
    for (const SpecDim& d : ps.specs[i]) {
      if (d.any)
        throw ValueError("ValueError: export_: the shape of argument " + std::to_string(i) +
                         " has '_', which only an example argument can fill in (pass examples after the shapes)");
      shape.push_back(encode_dim(d.expr));
    }
    out.push_back(AbstractArray{shape, DType::float32, false});
  }
  return out;
}
}  // namespace export_detail

Exported::Exported(Program program) {
  const std::string stem = jit_dump_stem(program);
  program_ = jit_passes(std::move(program), stem);
  refuse_complex(program_, "export",
                 "complex values have no C type in the exported header, and the AOT runtime is real-only "
                 "(pass real and imaginary parts)");
  refuse_library_calls(program_);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(serialize(program_)));
  symbol_ = std::string("fluxion_export_") + hex;
}

std::string Exported::serialized() const { return serialize(program_); }

void Exported::write_object(const std::string& path, const std::string& cpu, int threads) const {
  if (threads < 1) throw ValueError("ValueError: export: threads must be at least 1, got " + std::to_string(threads));
  lowering::ScopedCpuTarget target(lowering::resolve_cpu_target(cpu == "host" ? "" : cpu));
  lowering::CompileOptions options;
  options.num_threads = threads;  // > 1: OpenMP parallel loops (__kmpc_*), so the program links libomp
  options.dump_name = symbol_;
  write_file(path, lowering::compile_object_cpu(program_, options, symbol_));
}

void Exported::write_header(const std::string& path, const std::string& entry, bool sparse) const {
  bool ok = !entry.empty() && !std::isdigit(static_cast<unsigned char>(entry[0]));
  for (char c : entry) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw ValueError("ValueError: export: the entry point name \"" + entry + "\" is not a C identifier");
  std::string guard = entry + "_H";
  for (char& c : guard) c = char(std::toupper(static_cast<unsigned char>(c)));
  const std::vector<AbstractArray> outs = program_.out_avals();
  std::string h = "/* Generated by fluxion::export_ (docs/export.md). Do not edit.\n *\n * void " + entry + "(";
  std::string params;
  std::vector<std::string> args;  // the kernel's arguments, in its order
  for (size_t i = 0; i < program_.invars.size(); ++i) {
    const AbstractArray& a = program_.type(program_.invars[i]);
    h += (i ? ", " : "") + std::string("in") + std::to_string(i) + ": " + dims(a);
    params += std::string(params.empty() ? "" : ", ") + "const " + c_type(a.dtype) + "* in" + std::to_string(i);
    args.push_back("in" + std::to_string(i));
  }
  for (size_t i = 0; i < program_.constvars.size(); ++i)
    args.push_back(entry + "_const" + std::to_string(i));
  h += " -> ";
  for (size_t i = 0; i < outs.size(); ++i) {
    h += (i ? ", " : "") + std::string("out") + std::to_string(i) + ": " + dims(outs[i]);
    params += std::string(params.empty() ? "" : ", ") + c_type(outs[i].dtype) + "* out" + std::to_string(i);
    args.push_back("out" + std::to_string(i));
  }
  // A polymorphic program: each symbol's value after the buffers (runtime/kernel.h's ABI).
  std::vector<AbstractArray> in_types = program_.in_avals();
  for (int32_t v : program_.constvars) in_types.push_back(program_.type(v));
  const std::vector<std::string> symbols = symbols_of(in_types);
  for (const std::string& name : symbols) {
    params += ", int64_t " + name;
    args.push_back(name);
  }
  if (!symbols.empty()) h += " for every size of its symbols, passed last";
  h += ")\n *\n * Every buffer is contiguous, row-major and 64-byte aligned; the outputs are written.\n"
       " * Link with the object written beside this header and libfluxion_aot_rt.a:\n"
       " *   cc main.c " + entry + ".o libfluxion_aot_rt.a -lstdc++ -lm -lmvec -lpthread\n */\n";
  h += "#ifndef " + guard + "\n#define " + guard + "\n#include <pthread.h>\n#include <stdint.h>\n#include <string.h>\n\n"
       "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h += "/* The object's entry point: the inputs, the constants below, then the outputs. */\nvoid " + symbol_ + "(";
  for (size_t i = 0; i < args.size() - symbols.size(); ++i) h += i ? ", void*" : "void*";
  for (size_t j = 0; j < symbols.size(); ++j) h += ", int64_t";
  h += ");\n\n";
  std::string unpack;  // the sparse constants' unpacking, run once before the first call
  for (size_t i = 0; i < program_.constvars.size(); ++i) {
    const std::string name = entry + "_const" + std::to_string(i);
    const Array& c = program_.consts[i];
    if (sparse && sparse_is_smaller(c)) {
      h += sparse_constant(c, name);
      unpack += "  " + entry + "_unpack(" + name + "_bits, " + name + "_values, " + name + ", " +
                std::to_string(c.aval().size()) + ", " + std::to_string(itemsize(c.dtype())) + ");\n";
    } else {
      h += dense_constant(c, name);
    }
  }
  if (!unpack.empty()) h += unpack_functions(entry, unpack);
  h += "static inline void " + entry + "(" + params + ") {\n  ";
  if (!unpack.empty()) h += "pthread_once(&" + entry + "_once, " + entry + "_unpack_all);\n  ";
  h += symbol_ + "(";
  // The kernel takes void*: constness is the header's promise, not the ABI's.
  for (size_t i = 0; i < args.size(); ++i)
    h += (i ? ", " : "") + std::string(i < args.size() - symbols.size() ? "(void*)" : "") + args[i];
  h += ");\n}\n\n#ifdef __cplusplus\n}\n#endif\n#endif\n";
  write_file(path, h);
}

}  // namespace fluxion
