// Opt-in checks for debugging numerics (JAX's debug_nans and checkify's index checks):
//
//   FLUXION_DEBUG_NANS=1, fx::config::debug_nans(true) or a scoped fx::config::DebugNans on(true):
//     every eager op whose result holds a NaN or Inf that its operands did not raises
//     fx::FloatingPointError naming the primitive, its operand types and the user's line; a jitted
//     function whose result holds a NaN or Inf its inputs did not is re-run primitive by primitive
//     to find the one (transforms/jit.cpp). Primitives of a derivative carry the line of the
//     forward op they came from (transforms hold a LocationScope while a rule runs).
//   FLUXION_CHECK_BOUNDS=1, fx::config::check_bounds(true) or fx::config::CheckBounds on(true):
//     fx::take and fx::dynamic_slice traced under jit, vmap or grad check their indices when the
//     program runs and raise a ValueError instead of clamping (api/indexing.cpp).
//
// Off, each costs one relaxed atomic load where it is asked.
#pragma once
#include <atomic>
#include <span>

#include "ir/array.h"
#include "ir/params.h"
#include "ir/primitive.h"

namespace fluxion::config {

namespace detail {
extern std::atomic<bool> g_debug_nans;
extern std::atomic<bool> g_check_bounds;
}  // namespace detail

inline bool debug_nans() { return detail::g_debug_nans.load(std::memory_order_relaxed); }
void debug_nans(bool on);
inline bool check_bounds() { return detail::g_check_bounds.load(std::memory_order_relaxed); }
void check_bounds(bool on);

/// Sets a check for the life of the scope, then restores what was set before. The setting is
/// process-wide: scopes on several threads at once do not nest.
template <void (*Set)(bool), bool (*Get)()>
class ScopedCheck {
 public:
  explicit ScopedCheck(bool on) : saved_(Get()) { Set(on); }
  ~ScopedCheck() { Set(saved_); }
  ScopedCheck(const ScopedCheck&) = delete;
  ScopedCheck& operator=(const ScopedCheck&) = delete;

 private:
  bool saved_;
};
using DebugNans = ScopedCheck<static_cast<void (*)(bool)>(&debug_nans), static_cast<bool (*)()>(&debug_nans)>;
using CheckBounds = ScopedCheck<static_cast<void (*)(bool)>(&check_bounds), static_cast<bool (*)()>(&check_bounds)>;

}  // namespace fluxion::config

namespace fluxion {

/// Whether a concrete array holds a NaN or an infinity (false for non-float dtypes).
bool has_nonfinite(const Array& a);

/// debug_nans' check of one eager op (bind calls it after the kernel when debug_nans is on):
/// raises FloatingPointError if an output holds a NaN or Inf and no operand did.
void check_nonfinite(Prim p, std::span<const Array> inputs, std::span<const Array> outputs, const Params& params,
                     SourceLoc loc);

}  // namespace fluxion
