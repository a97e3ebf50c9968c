// debug_callback: the primitive behind fx::debug::print and fx::debug::callback (api/debug.h).
//
// An eqn `debug_callback[callback=N] ops...` has no outputs and an effect (ir/eval_rules.h): the
// passes never drop, merge or hoist it, and it runs where the program puts it -- at once in eager
// mode, when the compiled code reaches it under jit (a library call back into the process,
// lowering/lower_library.cpp). N names a host function in this process's table below; the
// program text holds only the number, so such a program is neither cached on disk nor exported.
//
// Under vmap the callback runs once per example, in batch order, and learns the example's index:
// the batching rule registers a new entry that remembers where each operand's batch dimension is
// (one level per vmap), and the kernel slices the operands on the host.
#pragma once
#include <cstdint>
#include <functional>
#include <span>

#include "ir/array.h"

namespace fluxion {

/// A host function a debug_callback eqn calls: the operands (one example of them under vmap) and
/// that example's batch index, outermost vmap first (empty outside vmap).
using DebugCallbackFn = std::function<void(std::span<const Array> args, std::span<const int64_t> batch_index)>;

/// Calls fn on args now (no trace is live) or records a debug_callback eqn that calls it when the
/// program runs.
void bind_debug_callback(DebugCallbackFn fn, std::span<const Array> args, SourceLoc loc);

/// How many host functions the table holds (each traced debug_callback adds one; they live as long
/// as the process, since compiled code may call them).
int64_t debug_callback_count();

}  // namespace fluxion
