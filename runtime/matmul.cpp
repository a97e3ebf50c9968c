// runtime::matmul: picks the Eigen build for the call's level and cuts the product into blocks for
// the threads.
#include "runtime/matmul.h"

#include <algorithm>
#include <atomic>

#include "runtime/matmul_block.h"
#include "runtime/openmp.h"

namespace fluxion::runtime {

namespace {

using BuildFn = void (*)(bool is_double, const MatmulBlock& b);

// Index: the x86-64 level. Only the baseline build exists off x86-64 (runtime/meson.build).
#if defined(__x86_64__)
constexpr BuildFn kBuilds[] = {nullptr, &matmul_eigen_level1, &matmul_eigen_level2, &matmul_eigen_level3,
                               &matmul_eigen_level4};
#else
constexpr BuildFn kBuilds[] = {nullptr, &matmul_eigen_level1};
#endif
constexpr int kTopLevel = int(sizeof kBuilds / sizeof kBuilds[0]) - 1;

std::atomic<uint64_t> g_blocks[kTopLevel + 1];

int level_for(int isa_level) { return std::clamp(isa_level, 1, host_isa_level()); }

// Products below this many multiply-adds stay on the calling thread: waking the pool costs more
// than half of them (measured in docs/jit.md: 256 x 512 x 10, the MLP's output layer, gains).
constexpr int64_t kThreadedMacs = int64_t(1) << 20;
// Slab boundaries fall on multiples of this many rows or columns (whole vectors and register tiles).
constexpr int64_t kSlabAlign = 16;

}  // namespace

std::string matmul_implementation(int isa_level) {
  const int level = level_for(isa_level);
#if defined(__x86_64__)
  return level == 1 ? "eigen x86-64" : "eigen x86-64-v" + std::to_string(level);
#else
  (void)level;
  return "eigen baseline";
#endif
}

uint64_t matmul_blocks_computed(int level) {
  return level >= 1 && level <= kTopLevel ? g_blocks[level].load(std::memory_order_relaxed) : 0;
}

void matmul(const Matmul& mm, int isa_level, int threads) {
  const int level = level_for(isa_level);
  const BuildFn build = kBuilds[level];
  const int64_t size = mm.is_double ? 8 : 4;
  const int64_t lhs_stride = mm.trans_lhs ? mm.m : mm.k, rhs_stride = mm.trans_rhs ? mm.k : mm.n;
  auto at = [size](const void* p, int64_t elements) { return static_cast<const char*>(p) + elements * size; };

  // Rows [r0, r1) and columns [c0, c1) of batch entry b. A row slab of op(lhs) starts r0 rows (or,
  // transposed, r0 columns) in; a column slab of op(rhs) c0 columns (or rows) in.
  auto compute = [&](int64_t b, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    MatmulBlock blk{r1 - r0,
                    c1 - c0,
                    mm.k,
                    at(mm.lhs, b * mm.m * mm.k + r0 * (mm.trans_lhs ? 1 : lhs_stride)),
                    lhs_stride,
                    mm.trans_lhs,
                    at(mm.rhs, b * mm.k * mm.n + c0 * (mm.trans_rhs ? rhs_stride : 1)),
                    rhs_stride,
                    mm.trans_rhs,
                    const_cast<char*>(at(mm.out, b * mm.m * mm.n + r0 * mm.n + c0)),
                    mm.n};
    build(mm.is_double, blk);
    g_blocks[level].fetch_add(1, std::memory_order_relaxed);
  };

  const int64_t macs = mm.batch * mm.m * mm.n * mm.k;
  const int64_t parts = threads > 1 && macs >= kThreadedMacs ? threads : 1;
  if (mm.batch >= parts) {  // whole batch entries per thread
    parallel_chunks(int(parts), parts, [&](int64_t t) {
      for (int64_t b = mm.batch * t / parts; b < mm.batch * (t + 1) / parts; ++b) compute(b, 0, mm.m, 0, mm.n);
    });
    return;
  }
  // Fewer batch entries than threads: each entry in slabs of output rows (a thread then packs all
  // of rhs, which costs little next to its share of the product), or of columns where the rows
  // are too few. Column slabs share a cache line per output row between threads, which made the
  // MLP's 256 x 10 x 512 product (k = 10: output writes dominate) 3x slower than one thread.
  const bool rows = mm.m >= kSlabAlign * parts || mm.m >= mm.n;
  const int64_t extent = rows ? mm.m : mm.n;
  const int64_t slabs = std::clamp<int64_t>(extent / kSlabAlign, 1, parts);
  auto edge = [&](int64_t s) { return s == slabs ? extent : (extent * s / slabs) / kSlabAlign * kSlabAlign; };
  parallel_chunks(threads, mm.batch * slabs, [&](int64_t i) {
    const int64_t b = i / slabs, s = i % slabs;
    if (rows) compute(b, edge(s), edge(s + 1), 0, mm.n);
    else compute(b, 0, mm.m, edge(s), edge(s + 1));
  });
}

}  // namespace fluxion::runtime
