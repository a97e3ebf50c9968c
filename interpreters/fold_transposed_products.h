// A jit pass (interpreters/jit_passes.h): transpose[(1,0)](dot_general(a, b)), where the product
// has no batch dims, one free dim on each side and no other use, becomes dot_general(b, a) with the
// contracting dims swapped. The product is written in the transposed order directly and a pass
// over memory disappears. Reverse-mode derivatives of matmuls produce exactly this (x^T g, then
// transposed back).
#pragma once
#include "ir/program.h"

namespace fluxion {

Program fold_transposed_products(Program p);

}  // namespace fluxion
