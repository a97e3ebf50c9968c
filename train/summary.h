// fx::summary: TensorBoard event files, written without TensorFlow or protobuf.
//
//   fx::summary::writer tb("runs/mnist");                 // creates the directory
//   tb.scalar("train/loss", loss, step);                   // a number, or a one-element Array
//   tb.histogram("dense1/w", params.w, step);              // bucketed values of an Array
//   tb.image("samples", x[0], step);                       // [H,W] or [H,W,C] (C 1, 3 or 4)
//   tb.text("config", "lr=1e-3, batch 64", step);
//   tb.graph(fx::make_ir(step_fn)(params, batch));         // the program, in the Graphs tab
//   // then: tensorboard --logdir runs
//
// Each writer owns one file, <dir>/events.out.tfevents.<seconds>.<host>.<pid>.<n>, a sequence of
// TFRecords (length, masked CRC-32C of the length, an Event protobuf, masked CRC-32C of it) that
// begins with the file_version record TensorBoard looks for. By default every call is written
// through to the file (TensorBoard reads a run while it grows); with flush_seconds > 0 records are
// buffered and written when that many seconds have passed since the last write, on flush(), and
// when the writer is destroyed. Failures to create or write the file are IOErrors naming the path;
// a tag that is empty, an image of the wrong shape or dtype, a histogram with no finite value or
// fewer than one bin is a ValueError naming the call, the operand's type and the caller's line.
// docs/tensorboard.md describes the format and how the tests read it back.
#pragma once
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>

#include "ir/array.h"
#include "ir/program.h"

namespace fluxion::summary {

class writer {
 public:
  explicit writer(const std::string& dir, double flush_seconds = 0);
  ~writer();
  writer(writer&&) noexcept;
  writer& operator=(writer&&) noexcept;
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;

  /// A point on the curve `tag` at `step` (Summary.Value.simple_value, a float32).
  void scalar(const std::string& tag, double value, int64_t step,
              std::source_location loc = std::source_location::current());
  /// A one-element Array (any real dtype) as a scalar; its value is read, so call it outside jit.
  void scalar(const std::string& tag, const Array& value, int64_t step,
              std::source_location loc = std::source_location::current());
  /// The values of `values` (any shape, any real dtype) in `bins` equal-width buckets between
  /// their min and max (HistogramProto: min, max, count, sum, sum of squares, bucket edges, counts).
  /// NaNs and infinities are left out of the buckets; a histogram with no finite value is an error.
  void histogram(const std::string& tag, const Array& values, int64_t step, int bins = 30,
                 std::source_location loc = std::source_location::current());
  /// An image as a PNG: [H,W] (grey), [H,W,1], [H,W,3] (RGB) or [H,W,4] (RGBA); uint8 as is,
  /// floating dtypes scaled from [0,1] (and clipped to it).
  void image(const std::string& tag, const Array& image, int64_t step,
             std::source_location loc = std::source_location::current());
  /// Markdown text (the Text tab; a string tensor under the "text" plugin).
  void text(const std::string& tag, const std::string& text, int64_t step,
            std::source_location loc = std::source_location::current());
  /// The program as a GraphDef (the Graphs tab): one node per equation, named by its primitive
  /// and position, whose inputs are the nodes of its operands; sub-programs under a name scope.
  void graph(const Program& program);
  /// Writes whatever is buffered and flushes the file.
  void flush();
  /// The event file's path.
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fluxion::summary
