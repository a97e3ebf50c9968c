// kernels/pool.h: the reduce_window family and the max-pool derivatives as strided loops
// (kernels/pool_loops.h) -- here the entry for every dtype but float32 (kernels/pool_f32.cpp).
#include "kernels/pool.h"

#include "kernels/conv.h"
#include "kernels/pool_loops.h"

namespace fluxion::runtime {

uint64_t fast_window_runs() { return pool::g_runs.load(std::memory_order_relaxed); }

bool fast_window(Prim prim, std::span<const View> in, std::span<const View> out, const Params& params, int threads) {
  bool done = false;
  dispatch_dtype(in.back().dtype(), [&](auto tag) { done = pool::run_window<decltype(tag)>(prim, in, out, params, threads); });
  return done;
}

}  // namespace fluxion::runtime

using namespace fluxion;

extern "C" void fluxion_rt_pool(int64_t* a) {
  const runtime::WindowedCall c = runtime::read_windowed_call(a);
  if (!runtime::fast_window(c.prim, c.in, c.out, c.params, c.threads)) runtime::run_windowed_reference(c);
}
