// The C entry points of kernels/library_calls.h.
#include "kernels/library_calls.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "ir/eval_rules.h"
#include "ir/primitive.h"
#include "kernels/call_arrays.h"
#include "kernels/conv.h"

namespace fluxion::runtime {

std::span<const KernelParam> library_call_params(Prim prim) { return eval_rules(prim).kernel_params; }

namespace {
thread_local std::exception_ptr t_pending;

void keep_library_call_error(std::exception_ptr e) {
  if (!t_pending) t_pending = std::move(e);
}
}  // namespace

void windowed_reference(Prim p, std::span<const View> in, std::span<const View> out, const Params& params) {
  eval_rules(p).kernel(in, out, params);
}

void rethrow_library_call_error() {
  if (!t_pending) return;
  std::exception_ptr e = std::exchange(t_pending, nullptr);
  std::rethrow_exception(e);
}

}  // namespace fluxion::runtime

using namespace fluxion;

namespace {
// The params as the lowering encoded them (KernelParam, ir/eval_rules.h), advancing p past them.
Params read_params(std::span<const KernelParam> names, int64_t count, const int64_t*& p) {
  Params params;
  for (int64_t i = 0; i < count && i < int64_t(names.size()); ++i) {
    const KernelParam& k = names[size_t(i)];
    if (k.is_bool) {
      params.set(k.name, *p++ != 0);
    } else if (k.is_ints) {
      const int64_t n = *p++;
      params.set(k.name, IntList(p, p + n));
      p += n;
    } else if (!k.choices.empty()) {
      params.set(k.name, std::string(k.choices[size_t(*p++)]));
    } else {
      params.set(k.name, *p++);
    }
  }
  return params;
}

void call_prim(int64_t* a) {
  const Prim prim = Prim(a[0]);
  const int64_t n_in = a[1], n_out = a[2], n_params = a[3];
  const int64_t* p = a + 4;
  const Params params = read_params(runtime::library_call_params(prim), n_params, p);
  const runtime::CallArrays arrays = runtime::read_call_arrays(p, n_in + n_out);
  const std::vector<View>& views = arrays.views;
  eval_rules(prim).kernel(std::span<const View>(views.data(), size_t(n_in)),
                     std::span<const View>(views.data() + n_in, size_t(n_out)), params);
}
}  // namespace

extern "C" void fluxion_rt_call_prim(int64_t* a) {
  try {
    call_prim(a);
  } catch (...) {
    runtime::keep_library_call_error(std::current_exception());
  }
}

// The reference kernel of a windowed equation none of kernels/conv.h's kernels takes.
extern "C" void fluxion_rt_windowed(int64_t* a) {
  try {
    runtime::run_windowed_reference(runtime::read_windowed_call(a));
  } catch (...) {
    runtime::keep_library_call_error(std::current_exception());
  }
}
