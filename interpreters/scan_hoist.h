// Moving work out of scan loops, before jit compiles a program. A scan's body runs once per step;
// these rewrites take out what does not need to be there:
//   * loop-invariant eqns (only the body's consts and literals as inputs) run once, before the
//     scan, and enter it as new consts;
//   * eqns of the scanned inputs alone (no carry in their inputs) run for all steps at once,
//     batched with vmap, and enter as new scanned inputs: an RNN's U x_t over 1,000 steps becomes
//     one matrix product instead of 1,000 matrix-vector products. Pure expansions (broadcasts,
//     outer products) are stacked only if no larger than their inputs, anything else up to 16x
//     (scan_hoist.cpp, worth_stacking);
//   * a carry that only accumulates products, c' = c + dot_general(a, b) -- the weight gradients
//     of a reverse scan -- leaves the carry: a and b are stacked per step (or taken as they are
//     when they are consts or scanned inputs) and one dot_general after the scan contracts them
//     over the steps as well. A computed factor is stacked only if no larger than the carry (and
//     within 64M elements); with a const factor, the other is summed over the steps first, which
//     is done only in f32/f64 and the carry's own dtype (an f16 sum could overflow where the
//     loop's products into an f32 carry did not).
// Scanned inputs and consts the body no longer reads are dropped. Results agree with the loop up
// to the order of floating-point additions. Nested scans (in scan, cond and while bodies) are
// rewritten first.
#pragma once
#include "ir/program.h"

namespace fluxion {

Program hoist_scan_invariants(Program p);

}  // namespace fluxion
