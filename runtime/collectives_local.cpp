#include "runtime/collectives_local.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/distributed.h"

namespace fluxion::runtime {

namespace {

// acc op= x over n elements, in T's compute type.
template <class T, class C>
void combine(ReduceOp op, C* acc, const T* x, int64_t n) {
  switch (op) {
    case ReduceOp::sum:
      for (int64_t i = 0; i < n; ++i) acc[i] += C(x[i]);
      break;
    case ReduceOp::max:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], C(x[i]));
      break;
    case ReduceOp::min:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], C(x[i]));
      break;
  }
}

// Elements [begin, end) of the reduction of `ins` written into every buffer of `outs`, a chunk
// at a time so that the accumulator stays in L1.
void reduce_slice(ReduceOp op, DType dtype, const std::vector<const void*>& ins, const std::vector<void*>& outs,
                  int64_t begin, int64_t end) {
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      constexpr int64_t kChunk = 2048;
      C acc[kChunk];
      for (int64_t at = begin; at < end; at += kChunk) {
        const int64_t n = std::min(kChunk, end - at);
        const T* first = static_cast<const T*>(ins[0]) + at;
        for (int64_t i = 0; i < n; ++i) acc[i] = C(first[i]);
        for (size_t j = 1; j < ins.size(); ++j) combine(op, acc, static_cast<const T*>(ins[j]) + at, n);
        for (void* o : outs) {
          T* dst = static_cast<T*>(o) + at;
          for (int64_t i = 0; i < n; ++i) dst[i] = T(acc[i]);
        }
      }
    }
  });
}

}  // namespace

class LocalGroup::Member final : public Communicator {
 public:
  Member(LocalGroup& g, int local_rank) : g_(g), r_(local_rank) {}
  int rank() const override { return g_.process_index_ * g_.local_ + r_; }
  int size() const override { return g_.processes_ * g_.local_; }
  std::string failure() const override {
    std::lock_guard<std::mutex> lock(g_.mu_);
    return g_.why_;
  }

  bool all_reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t count) override {
    if (g_.local_ == 1 && g_.processes_ > 1)  // the process's only device: MPI reads `in` itself
      return across_processes_alone([&](std::string& why) { return interprocess_all_reduce(op, dtype, in, out, count, why); });
    g_.ins_[size_t(r_)] = in;
    g_.outs_[size_t(r_)] = out;
    if (!g_.barrier(r_)) return false;
    const int64_t n = g_.local_, begin = count * r_ / n, end = count * (r_ + 1) / n;
    reduce_slice(op, dtype, g_.ins_, g_.outs_, begin, end);
    if (!g_.barrier(r_)) return false;
    if (g_.processes_ == 1) return true;
    return across_processes([&](std::string& why) { return interprocess_all_reduce(op, dtype, nullptr, out, count, why); },
                            out, size_t(count) * itemsize(dtype));
  }

  bool all_gather(const void* in, void* out, size_t bytes) override {
    if (g_.local_ == 1 && g_.processes_ > 1)
      return across_processes_alone([&](std::string& why) { return interprocess_all_gather(in, out, bytes, why); });
    g_.outs_[size_t(r_)] = out;
    if (!g_.barrier(r_)) return false;
    const size_t at = size_t(rank()) * bytes;
    for (void* o : g_.outs_) std::memcpy(static_cast<char*>(o) + at, in, bytes);
    if (!g_.barrier(r_)) return false;
    if (g_.processes_ == 1) return true;
    return across_processes(
        [&](std::string& why) { return interprocess_all_gather(nullptr, out, bytes * size_t(g_.local_), why); }, out,
        bytes * size_t(size()));
  }

 private:
  // The leader runs `exchange` on its output, then the others copy the leader's result.
  template <class F>
  bool across_processes(F exchange, void* out, size_t bytes) {
    if (r_ == 0) {
      std::string why;
      if (!exchange(why)) {
        g_.abort(why);
        return false;
      }
    }
    if (!g_.barrier(r_)) return false;
    if (r_ != 0) std::memcpy(out, g_.outs_[0], bytes);
    return g_.barrier(r_);
  }

  // The same with no other local device: no local step, nothing to share.
  template <class F>
  bool across_processes_alone(F exchange) {
    std::string why;
    if (exchange(why)) return true;
    g_.abort(why);
    return false;
  }

  LocalGroup& g_;
  const int r_;
};

LocalGroup::LocalGroup(int local, int process_index, int processes)
    : local_(local), process_index_(process_index), processes_(processes), ins_(size_t(local)), outs_(size_t(local)) {
  for (int r = 0; r < local; ++r) members_.push_back(std::make_unique<Member>(*this, r));
}

LocalGroup::~LocalGroup() = default;

Communicator& LocalGroup::member(int local_rank) { return *members_[size_t(local_rank)]; }

void LocalGroup::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_) why_ = why;
    failed_ = true;
  }
  cv_.notify_all();
}

bool LocalGroup::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

bool LocalGroup::barrier(int local_rank) {
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_) return false;
  if (++arrived_ == local_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return true;
  }
  const int64_t gen = generation_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(collective_timeout_s());
  if (!cv_.wait_until(lock, deadline, [&] { return generation_ != gen || failed_; })) {
    failed_ = true;
    why_ = "device " + std::to_string(process_index_ * local_ + local_rank) + " waited " +
           std::to_string(collective_timeout_s()) + " s for the other devices of the axis";
    cv_.notify_all();
  }
  return !failed_;
}

}  // namespace fluxion::runtime
