// fx::data: datasets held in host memory and a loader that batches them -- shuffled with a key,
// mapped, prefetched on a background thread -- deterministically: the batches of epoch e depend
// only on the dataset, the options and the key (the order is permutation(fold_in(key, e))).
//
//   auto ds = fx::data::mnist_idx("/usr/share/datasets/fashion-mnist", "train");  // image u8[N,28,28], label i32[N]
//   auto loader = fx::data::loader(ds, /*batch=*/128, fx::data::shuffle(key), fx::data::prefetch(2));
//   for (const fx::data::Batch& batch : loader) { batch.at("image"); batch.at("label"); }   // one epoch
//
// Each `for` over a loader is one epoch; the loader counts them (epoch()), or set_epoch(e) picks one.
#pragma once
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/array.h"

namespace fluxion::data {

/// A batch (or an example): arrays by name.
using Batch = std::map<std::string, Array>;

/// Named columns of equal length along axis 0, concrete arrays in host memory.
class Dataset {
 public:
  Dataset() = default;
  /// A ShapeError if the columns' leading dimensions differ; a ValueError for a tracer or a 0-d array.
  explicit Dataset(std::map<std::string, Array> columns);
  int64_t size() const { return size_; }
  const std::map<std::string, Array>& columns() const { return columns_; }
  const Array& at(const std::string& name) const;
  /// The given rows of every column, copied into new arrays.
  Batch gather(std::span<const int64_t> rows) const;
  /// Rows [begin, end).
  Dataset slice(int64_t begin, int64_t end) const;

 private:
  std::map<std::string, Array> columns_;
  int64_t size_ = 0;
};

Dataset from_arrays(std::map<std::string, Array> columns);
/// The arrays of a .npz or .safetensors file as columns.
Dataset from_file(const std::string& path);
/// An IDX file (MNIST's format; gzip or not): u8/i8/i32/f32/f64 with the file's shape.
Array read_idx(const std::string& path);
/// MNIST-style IDX files in `dir` for `split` "train" or "test" (train-images-idx3-ubyte[.gz], ...):
/// "image" u8[N, 28, 28] and "label" i32[N].
Dataset mnist_idx(const std::string& dir, const std::string& split);
/// CIFAR-10's binary version in `dir` (data_batch_1..5.bin or test_batch.bin): "image" u8[N, 3, 32, 32]
/// and "label" i32[N].
Dataset cifar10_binary(const std::string& dir, const std::string& split);

struct Options {
  std::optional<Array> shuffle_key;
  int prefetch = 0;
  bool drop_remainder = false;
  std::vector<std::function<Batch(Batch)>> maps;
};
struct Option {
  std::function<void(Options&)> apply;
};
/// Shuffle every epoch with permutation(fold_in(key, epoch)).
Option shuffle(const Array& key);
/// Prepare up to `n` batches ahead on a background thread (0: on the caller's thread).
Option prefetch(int n);
/// Drop the last, partial batch.
Option drop_remainder(bool drop = true);
/// Apply `fn` to every batch (in order, on the thread that prepares it: keep it free of traces).
Option map(std::function<Batch(Batch)> fn);

class Loader {
 public:
  struct Epoch;  // one pass: the order and, with prefetch, the worker thread
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    explicit Iterator(std::shared_ptr<Epoch> epoch);
    const Batch& operator*() const { return current_; }
    const Batch* operator->() const { return &current_; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return done_; }

   private:
    std::shared_ptr<Epoch> epoch_;
    Batch current_;
    bool done_ = true;
  };

  Loader(Dataset dataset, int64_t batch_size, Options options);
  /// Starts the next epoch.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }
  /// Batches per epoch.
  int64_t num_batches() const;
  /// Epochs started so far (the next begin() runs epoch number epoch()).
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t e) { epoch_ = e; }
  /// The order of rows in epoch `e`.
  std::vector<int64_t> order(int64_t e) const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  int64_t batch_size_;
  Options options_;
  int64_t epoch_ = 0;
};

template <class... Opts>
Loader loader(const Dataset& dataset, int64_t batch_size, const Opts&... opts) {
  Options o;
  (opts.apply(o), ...);
  return Loader(dataset, batch_size, std::move(o));
}

}  // namespace fluxion::data
