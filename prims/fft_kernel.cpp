#include "prims/fft_kernel.h"

#include <fftw3.h>

#include "ir/error.h"
#include "ir/settings.h"
#include "prims/library_threads.h"

#include <complex>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace fluxion::fft_kernel {

bool parse_fft_type(std::string_view s, FftType* out) {
  for (size_t i = 0; i < std::size(kFftTypeNames); ++i)
    if (s == kFftTypeNames[i]) {
      *out = FftType(i);
      return true;
    }
  return false;
}

std::string_view fft_type_name(FftType t) { return kFftTypeNames[size_t(t)]; }

namespace {

// FFTW's parallel loops run on the compiled kernels' threads (prims/library_threads.h says why not
// FFTW's own): work(jobdata + i * elsize) for every job i.
void parallel_loop(void* (*work)(char*), char* jobdata, size_t elsize, int njobs, void*) {
  library_parallel(library_threads(), njobs, [&](int64_t i) { work(jobdata + size_t(i) * elsize); });
}

// FFTW's two precisions behind one name each (fftwf_* for float, fftw_* for double).
template <class R> struct Fftw;
#define FLUXION_FFTW_API(R, prefix)                                                                     \
  template <> struct Fftw<R> {                                                                          \
    using plan = prefix##_plan;                                                                         \
    using complex = prefix##_complex;                                                                   \
    /* idist / odist: elements between consecutive transforms of the batch */                          \
    static plan many_dft(int rank, const int* n, int howmany, complex* in, int idist, complex* out, int odist, \
                         int sign, unsigned f) {                                                        \
      return prefix##_plan_many_dft(rank, n, howmany, in, nullptr, 1, idist, out, nullptr, 1, odist, sign, f); \
    }                                                                                                   \
    static plan many_r2c(int rank, const int* n, int howmany, R* in, int idist, complex* out, int odist, \
                         unsigned f) {                                                                  \
      return prefix##_plan_many_dft_r2c(rank, n, howmany, in, nullptr, 1, idist, out, nullptr, 1, odist, f); \
    }                                                                                                   \
    static plan many_c2r(int rank, const int* n, int howmany, complex* in, int idist, R* out, int odist, \
                         unsigned f) {                                                                  \
      return prefix##_plan_many_dft_c2r(rank, n, howmany, in, nullptr, 1, idist, out, nullptr, 1, odist, f); \
    }                                                                                                   \
    static void dft(plan p, complex* in, complex* out) { prefix##_execute_dft(p, in, out); }            \
    static void r2c(plan p, R* in, complex* out) { prefix##_execute_dft_r2c(p, in, out); }              \
    static void c2r(plan p, complex* in, R* out) { prefix##_execute_dft_c2r(p, in, out); }              \
    static void* alloc(size_t bytes) { return prefix##_malloc(bytes); }                                 \
    static void release(void* p) { prefix##_free(p); }                                                  \
    static int alignment(const void* p) { return prefix##_alignment_of((R*)p); }                        \
    static void init_threads() {                                                                        \
      prefix##_init_threads();                                                                          \
      prefix##_threads_set_callback(&parallel_loop, nullptr);                                           \
    }                                                                                                   \
    static void plan_with_threads(int n) { prefix##_plan_with_nthreads(n); }                            \
  };
FLUXION_FFTW_API(float, fftwf)
FLUXION_FFTW_API(double, fftw)
#undef FLUXION_FFTW_API

// Plans are made once per (type, precision, lengths, batch, alignment) and kept for the process.
// FFTW's planner is not thread-safe, so planning holds a lock; executing a plan on new arrays
// (fftw_execute_dft & co.) is, so calls run concurrently. By default plans are made with
// FFTW_ESTIMATE: planning reads no data and takes microseconds. FLUXION_FFT_PLANNER=measure makes
// them with FFTW_MEASURE on scratch arrays (it times candidate algorithms, overwriting its arrays):
// about 2x faster transforms at 2^20 points for a planning cost of its own on first use of a shape
// (docs/linalg.md). Any other value is a ValueError.
bool measure_plans() {
  static const bool measure = choice_setting("FLUXION_FFT_PLANNER") == "measure";
  return measure;
}
// Transforms of at least this many points in all (batch included) are planned for
// library_threads() threads (libfftw3_threads, its loops handed to the kernels' pool by
// parallel_loop above); smaller ones on one, where waking threads costs more than it saves.
constexpr int64_t kThreadedFrom = int64_t(1) << 15;
int threads_for(int64_t points) { return points >= kThreadedFrom ? library_threads() : 1; }
using PlanKey = std::tuple<int, bool, IntList, int64_t, bool>;
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}
template <class R>
std::map<PlanKey, typename Fftw<R>::plan>& plans() {
  // Plans live as long as the process, and so does the map: destroyed at exit, it would drop the
  // only pointers to FFTW's plans while FFTW still holds them (LeakSanitizer's report, issue 35).
  static auto* cache = new std::map<PlanKey, typename Fftw<R>::plan>;
  return *cache;
}

template <class R>
typename Fftw<R>::plan plan_for(FftType type, const IntList& lengths, int64_t batch, void* in, void* out) {
  using F = Fftw<R>;
  using C = typename F::complex;
  const bool aligned = F::alignment(in) == 0 && F::alignment(out) == 0;
  PlanKey key{int(type), sizeof(R) == 8, lengths, batch, aligned};
  std::lock_guard<std::mutex> lock(planner_mutex());
  auto it = plans<R>().find(key);
  if (it != plans<R>().end()) return it->second;
  std::vector<int> n(lengths.begin(), lengths.end());
  // MEASURE overwrites the arrays it plans on: plan on aligned scratch arrays of the same sizes.
  const bool measure = aligned && measure_plans();
  const unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | (aligned ? 0u : unsigned(FFTW_UNALIGNED));
  std::unique_ptr<void, void (*)(void*)> scratch_in(nullptr, &F::release), scratch_out(nullptr, &F::release);
  if (measure) {
    int64_t elems = batch;
    for (int64_t l : lengths) elems *= l + 2;  // enough for either side of any kind
    scratch_in.reset(F::alloc(size_t(elems) * sizeof(C)));
    scratch_out.reset(F::alloc(size_t(elems) * sizeof(C)));
    in = scratch_in.get();
    out = scratch_out.get();
  }
  const int rank = int(n.size()), howmany = int(batch);
  // One transform's elements: all n of them, or n/2 + 1 bins along the last axis on the complex
  // side of rfft and irfft.
  int full = 1;
  for (int l : n) full *= l;
  static const bool threads_ready = (F::init_threads(), true);  // once per precision, under the lock
  (void)threads_ready;
  F::plan_with_threads(threads_for(int64_t(full) * batch));
  const int half = full / n.back() * (n.back() / 2 + 1);
  typename F::plan p = nullptr;
  switch (type) {
    case FftType::fft: case FftType::ifft:
      p = F::many_dft(rank, n.data(), howmany, static_cast<C*>(in), full, static_cast<C*>(out), full,
                      type == FftType::fft ? FFTW_FORWARD : FFTW_BACKWARD, flags);
      break;
    case FftType::rfft:
      p = F::many_r2c(rank, n.data(), howmany, static_cast<R*>(in), full, static_cast<C*>(out), half, flags);
      break;
    case FftType::irfft:
      p = F::many_c2r(rank, n.data(), howmany, static_cast<C*>(in), half, static_cast<R*>(out), full, flags);
      break;
  }
  if (!p) throw_error(ErrorKind::Value, "fft: FFTW could not plan a transform of lengths " + Shape(lengths).str());
  plans<R>().emplace(key, p);
  return p;
}

template <class R>
void run_typed(FftType type, const IntList& lengths, const View& in, const View& out) {
  using F = Fftw<R>;
  using C = typename F::complex;
  int64_t n = 1;
  for (int64_t l : lengths) n *= l;
  // The batch: the operand's leading axes (the trailing ones are the transform's).
  int64_t batch = 1;
  const Shape& s = out.shape();
  for (int d = 0; d + int(lengths.size()) < s.rank(); ++d) batch *= s[size_t(d)];
  if (batch == 0 || n == 0) return;
  void* src = in.data;
  void* dst = out.data;
  if (type == FftType::irfft) {
    // c2r transforms overwrite their input: work on a copy.
    const size_t bytes = size_t(in.size()) * sizeof(std::complex<R>);
    void* scratch = F::alloc(bytes);
    std::memcpy(scratch, in.data, bytes);
    typename F::plan p = plan_for<R>(type, lengths, batch, scratch, dst);
    F::c2r(p, static_cast<C*>(scratch), static_cast<R*>(dst));
    F::release(scratch);
  } else {
    typename F::plan p = plan_for<R>(type, lengths, batch, src, dst);
    if (type == FftType::rfft) F::r2c(p, static_cast<R*>(src), static_cast<C*>(dst));
    else F::dft(p, static_cast<C*>(src), static_cast<C*>(dst));
  }
  if (type == FftType::ifft || type == FftType::irfft) {  // FFTW's inverses are unnormalized
    const R scale = R(1) / R(n);
    R* o = static_cast<R*>(dst);
    const int64_t count = out.size() * (type == FftType::ifft ? 2 : 1);
    for (int64_t i = 0; i < count; ++i) o[i] *= scale;
  }
}

}  // namespace

void run(FftType type, const IntList& lengths, const View& in, const View& out) {
  const DType real = real_dtype_of(type == FftType::rfft ? in.dtype() : out.dtype());
  if (real == DType::float32) return run_typed<float>(type, lengths, in, out);
  return run_typed<double>(type, lengths, in, out);
}

}  // namespace fluxion::fft_kernel
