#include "train/data.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "api/creation.h"
#include "api/random.h"
#include "ir/error.h"

namespace fluxion::data {

Dataset::Dataset(std::map<std::string, Array> columns) : columns_(std::move(columns)) {
  bool first = true;
  for (const auto& [name, a] : columns_) {
    if (!a.valid() || a.is_tracer())
      throw ValueError("ValueError: data::Dataset: column '" + name + "' must be a concrete array");
    if (a.ndim() < 1) throw ValueError("ValueError: data::Dataset: column '" + name + "' is 0-d (rows run along axis 0)");
    const int64_t n = a.shape()[0];
    if (!first && n != size_)
      throw ShapeError("ShapeError: data::Dataset: column '" + name + "' has " + std::to_string(n) +
                       " rows, the others " + std::to_string(size_));
    size_ = n;
    first = false;
  }
}

const Array& Dataset::at(const std::string& name) const {
  auto it = columns_.find(name);
  if (it == columns_.end()) throw ValueError("ValueError: data::Dataset: no column named '" + name + "'");
  return it->second;
}

Batch Dataset::gather(std::span<const int64_t> rows) const {
  Batch out;
  for (const auto& [name, a] : columns_) {
    Shape shape = a.shape();
    const size_t row_bytes = size_t(shape.numel() / std::max<int64_t>(1, shape[0])) * itemsize(a.dtype());
    shape[0] = int64_t(rows.size());
    std::vector<char> buf(rows.size() * row_bytes);
    const char* src = static_cast<const char*>(a.data());
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < 0 || rows[i] >= size_)
        throw ValueError("ValueError: data::Dataset: row " + std::to_string(rows[i]) + " is outside [0, " +
                         std::to_string(size_) + ")");
      std::memcpy(buf.data() + i * row_bytes, src + size_t(rows[i]) * row_bytes, row_bytes);
    }
    out[name] = detail::array_from_host(buf.data(), a.dtype(), shape, size_t(shape.numel()), {});
  }
  return out;
}

Dataset Dataset::slice(int64_t begin, int64_t end) const {
  begin = std::clamp<int64_t>(begin, 0, size_);
  end = std::clamp<int64_t>(end, begin, size_);
  std::vector<int64_t> rows(size_t(end - begin));
  std::iota(rows.begin(), rows.end(), begin);
  return Dataset(gather(rows));
}

Dataset from_arrays(std::map<std::string, Array> columns) { return Dataset(std::move(columns)); }

Option shuffle(const Array& key) {
  return {[key](Options& o) { o.shuffle_key = key; }};
}
Option prefetch(int n) {
  return {[n](Options& o) { o.prefetch = std::max(0, n); }};
}
Option drop_remainder(bool drop) {
  return {[drop](Options& o) { o.drop_remainder = drop; }};
}
Option map(std::function<Batch(Batch)> fn) {
  return {[fn = std::move(fn)](Options& o) { o.maps.push_back(fn); }};
}

// One epoch: the batches in order, made on the caller's thread or by a worker that stays up to
// `prefetch` batches ahead. The worker stops when the epoch ends or its last iterator goes away.
struct Loader::Epoch {
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;
  int64_t batch_size, num_batches;
  std::vector<std::function<Batch(Batch)>> maps;
  int64_t next = 0;  // the next batch to make

  // prefetch
  int capacity = 0;
  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Batch> ready;
  bool stop = false, finished = false;
  std::exception_ptr error;

  Batch make(int64_t b) {
    const int64_t begin = b * batch_size, end = begin + std::min<int64_t>(batch_size, int64_t(order.size()) - begin);
    Batch batch = dataset->gather(std::span<const int64_t>(order.data() + begin, size_t(end - begin)));
    for (const auto& fn : maps) batch = fn(std::move(batch));
    return batch;
  }

  void run() {
    try {
      for (int64_t b = 0; b < num_batches; ++b) {
        Batch batch = make(b);
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || int(ready.size()) < capacity; });
        if (stop) return;
        ready.push_back(std::move(batch));
        cv.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
    cv.notify_all();
  }

  /// The next batch, or nullopt at the end of the epoch.
  std::optional<Batch> pull() {
    if (capacity == 0) {
      if (next >= num_batches) return std::nullopt;
      return make(next++);
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !ready.empty() || finished; });
    if (!ready.empty()) {
      Batch b = std::move(ready.front());
      ready.pop_front();
      cv.notify_all();
      return b;
    }
    if (error) std::rethrow_exception(error);
    return std::nullopt;
  }

  ~Epoch() {
    if (worker.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        stop = true;
      }
      cv.notify_all();
      worker.join();
    }
  }
};

Loader::Iterator::Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)), done_(false) { ++*this; }

Loader::Iterator& Loader::Iterator::operator++() {
  std::optional<Batch> b = epoch_->pull();
  if (b) current_ = std::move(*b);
  else done_ = true, current_.clear();
  return *this;
}

Loader::Loader(Dataset dataset, int64_t batch_size, Options options)
    : dataset_(std::make_shared<const Dataset>(std::move(dataset))), batch_size_(batch_size), options_(std::move(options)) {
  if (batch_size <= 0) throw ValueError("ValueError: data::loader: batch size must be positive, got " + std::to_string(batch_size));
}

int64_t Loader::num_batches() const {
  const int64_t n = dataset_->size();
  return options_.drop_remainder ? n / batch_size_ : n == 0 ? 0 : 1 + (n - 1) / batch_size_;  // no n + batch - 1: it may overflow
}

std::vector<int64_t> Loader::order(int64_t e) const {
  const int64_t n = dataset_->size();
  if (!options_.shuffle_key) {
    std::vector<int64_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    return rows;
  }
  Array perm = random::permutation(random::fold_in(*options_.shuffle_key, scalar(uint32_t(e))), n);
  std::vector<int32_t> p = perm.to_vector<int32_t>();
  return std::vector<int64_t>(p.begin(), p.end());
}

Loader::Iterator Loader::begin() {
  auto epoch = std::make_shared<Epoch>();
  epoch->dataset = dataset_;
  epoch->order = order(epoch_++);
  epoch->batch_size = batch_size_;
  epoch->num_batches = num_batches();
  epoch->maps = options_.maps;
  epoch->capacity = options_.prefetch;
  if (epoch->capacity > 0) epoch->worker = std::thread([e = epoch.get()] { e->run(); });
  return Iterator(std::move(epoch));
}

}  // namespace fluxion::data
