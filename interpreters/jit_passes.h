// The Program-level passes of fx::jit, in order, shared by every backend: what runs between the
// traced program and a backend's lowering (lowering/pipeline_cpu.cpp is the CPU's list after it).
//
//   simplify                  fold, identities, CSE and DCE over the top level (interpreters/simplify.h):
//                             what the transforms left behind, before inlining exposes
//                             checkpoints' recomputations to CSE
//   inline_calls              custom_jvp_call / custom_vjp_call / checkpoint wrappers have done
//                             their work once the program is final: their bodies go in place,
//                             in sub-programs too (interpreters/inline.h)
//   hoist_scan_invariants     work that needs no loop leaves scan bodies (interpreters/scan_hoist.h)
//   fold_transposed_products  transpose(dot_general(a, b)) -> dot_general(b, a)
//                             (interpreters/fold_transposed_products.h)
//
// `verify` runs after each pass, so a pass that breaks the program fails here, naming itself,
// instead of somewhere in MLIR. With FLUXION_DUMP=dir, the program before the passes and after
// each one is written to dir/<stem>.<k>-<pass>.program.txt.
#pragma once
#include <string>

#include "ir/program.h"

namespace fluxion {

struct JitPass {
  const char* name;
  Program (*run)(Program);
};

/// The list above.
const std::vector<JitPass>& jit_pass_list();

/// Runs the list on `p`. `dump_stem` names the dump files (jit_dump_stem).
Program jit_passes(Program p, const std::string& dump_stem);

/// The stem of a compile's dump files: "jit-<file>-<line>-<hash>", with the user's file and line
/// of the first eqn that has one (the jitted function's first op), or "jit-<hash>".
std::string jit_dump_stem(const Program& p);

}  // namespace fluxion
