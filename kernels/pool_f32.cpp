// fluxion_rt_pool_f32 (kernels/conv.h): pooling and the max-pool derivatives on float32 -- the loops
// of kernels/pool_loops.h for that type alone, in an object of its own, so that an exported float32
// program links them and not every dtype's.
#include "kernels/conv.h"
#include "kernels/pool_loops.h"

using namespace fluxion;

extern "C" void fluxion_rt_pool_f32(int64_t* a) {
  const runtime::WindowedCall c = runtime::read_windowed_call(a);
  if (!runtime::pool::run_window<float>(c.prim, c.in, c.out, c.params, c.threads)) runtime::run_windowed_reference(c);
}
