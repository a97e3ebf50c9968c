// fx::summary::writer (train/summary.h): Event protobufs (TensorFlow's event.proto and
// summary.proto field numbers, noted where used) framed as TFRecords (train/tfrecord.h).
#include "train/summary.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "train/file_io.h"
#include "train/png.h"
#include "train/protobuf_wire.h"
#include "train/summary_graph.h"
#include "train/tfrecord.h"

namespace fluxion::summary {

using protobuf::Message;

namespace {

// event.proto: Event
enum EventField : int { wall_time = 1, step = 2, file_version = 3, graph_def_field = 4, summary_field = 5 };
// summary.proto: Summary.value = 1; Summary.Value
enum ValueField : int { tag = 1, simple_value = 2, image_field = 4, histo = 5, tensor = 8, metadata = 9 };

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string event_file_name(const std::string& dir) {
  static std::atomic<int> counter{0};
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  return dir + "/events.out.tfevents." + std::to_string(int64_t(now_seconds())) + "." + host + "." +
         std::to_string(getpid()) + "." + std::to_string(counter++);
}

void check_tag(const std::string& tag, const char* op, const SourceLoc& loc) {
  if (tag.empty()) op_error(ErrorKind::Value, op, {}, loc, "the tag is empty");
}

/// The HistogramProto (summary.proto: min 1, max 2, num 3, sum 4, sum_squares 5, bucket_limit 6,
/// bucket 7) of the finite values: `bins` equal-width buckets from min to max, each named by its
/// right edge (the last is max), as TensorBoard reads them.
Message histogram_proto(const std::vector<double>& finite, int bins) {
  double lo = finite[0], hi = finite[0], sum = 0, sum_sq = 0;
  for (double v : finite) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sum_sq += v * v;
  }
  if (hi == lo) bins = 1;
  std::vector<double> limits(size_t(bins), 0.0), counts(size_t(bins), 0.0);
  const double width = (hi - lo) / bins;
  for (int b = 0; b < bins; ++b) limits[size_t(b)] = b + 1 == bins ? hi : lo + width * (b + 1);
  for (double v : finite) {
    int b = width > 0 ? int((v - lo) / width) : 0;
    counts[size_t(std::clamp(b, 0, bins - 1))] += 1;
  }
  Message h;
  h.float64(1, lo).float64(2, hi).float64(3, double(finite.size())).float64(4, sum).float64(5, sum_sq);
  h.packed_float64(6, limits).packed_float64(7, counts);
  return h;
}

/// The image's samples as 8-bit values: uint8 as is, floating dtypes from [0,1] (clipped).
std::vector<uint8_t> image_samples(const Array& image, const SourceLoc& loc) {
  const AbstractArray t = image.aval();
  const int channels = t.ndim() == 2 ? 1 : int(t.shape[2]);
  if ((t.ndim() != 2 && t.ndim() != 3) || (t.ndim() == 3 && channels != 1 && channels != 3 && channels != 4) ||
      t.size() == 0)
    op_error(ErrorKind::Value, "summary::image", std::span(&t, 1), loc,
             "an image is [H,W] or [H,W,C] with C 1 (grey), 3 (RGB) or 4 (RGBA), and not empty");
  if (t.dtype == DType::uint8) return image.to_vector<uint8_t>();
  if (!is_float(t.dtype))
    op_error(ErrorKind::Type, "summary::image", std::span(&t, 1), loc,
             "an image is uint8 (0-255) or floating point (0-1)");
  std::vector<double> v = image.to_vector<double>();
  std::vector<uint8_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = std::isnan(v[i]) ? 0 : uint8_t(std::lround(std::clamp(v[i], 0.0, 1.0) * 255.0));
  return out;
}

}  // namespace

struct writer::Impl {
  std::string path;
  std::FILE* file = nullptr;
  double flush_seconds = 0;
  std::string pending;  // framed records not yet written (flush_seconds > 0)
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();

  void write_out() {
    if (!pending.empty() && std::fwrite(pending.data(), 1, pending.size(), file) != pending.size())
      io::fail(path, std::string("cannot write: ") + std::strerror(errno));
    pending.clear();
    if (std::fflush(file) != 0) io::fail(path, std::string("cannot write: ") + std::strerror(errno));
    last_write = std::chrono::steady_clock::now();
  }
  void record(const Message& event) {
    pending += tfrecord::frame(event.str());
    const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_write).count();
    if (flush_seconds <= 0 || since >= flush_seconds) write_out();
  }
  void summary(int64_t step, const Message& value) {
    Message summary;
    summary.message(1, value);
    Message event;
    event.float64(wall_time, now_seconds()).int64(EventField::step, step).message(summary_field, summary);
    record(event);
  }
};

writer::writer(const std::string& dir, double flush_seconds) : impl_(std::make_unique<Impl>()) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) io::fail(dir, "cannot create the directory: " + ec.message());
  impl_->path = event_file_name(dir);
  impl_->flush_seconds = flush_seconds;
  impl_->file = std::fopen(impl_->path.c_str(), "wb");
  if (!impl_->file) io::fail(impl_->path, std::string("cannot open: ") + std::strerror(errno));
  // The first record names the format; TensorBoard skips a file without it.
  Message event;
  event.float64(wall_time, now_seconds()).bytes(file_version, "brain.Event:2");
  impl_->pending = tfrecord::frame(event.str());
  impl_->write_out();
}

writer::~writer() {
  if (!impl_) return;
  try {
    impl_->write_out();
  } catch (const Error&) {  // a destructor does not throw; flush() reports the same failure
  }
  std::fclose(impl_->file);
}

writer::writer(writer&&) noexcept = default;
writer& writer::operator=(writer&&) noexcept = default;

void writer::scalar(const std::string& tag, double value, int64_t step, std::source_location loc) {
  check_tag(tag, "summary::scalar", loc);
  Message v;
  v.bytes(ValueField::tag, tag).float32(simple_value, float(value));
  impl_->summary(step, v);
}

void writer::scalar(const std::string& tag, const Array& value, int64_t step, std::source_location loc) {
  const AbstractArray t = value.aval();
  if (t.size() != 1 || is_complex(t.dtype))
    op_error(ErrorKind::Value, "summary::scalar", std::span(&t, 1), loc, "a scalar is one real value");
  scalar(tag, value.to_vector<double>(loc)[0], step, loc);
}

void writer::histogram(const std::string& tag, const Array& values, int64_t step, int bins,
                       std::source_location loc) {
  check_tag(tag, "summary::histogram", loc);
  const AbstractArray t = values.aval();
  if (is_complex(t.dtype))
    op_error(ErrorKind::Type, "summary::histogram", std::span(&t, 1), loc, "a histogram is of real values");
  if (bins < 1)
    op_error(ErrorKind::Value, "summary::histogram", std::span(&t, 1), loc,
             "bins must be at least 1, got " + std::to_string(bins));
  std::vector<double> finite;
  for (double v : values.to_vector<double>(loc))
    if (std::isfinite(v)) finite.push_back(v);
  if (finite.empty())
    op_error(ErrorKind::Value, "summary::histogram", std::span(&t, 1), loc, "there is no finite value to count");
  Message v;
  v.bytes(ValueField::tag, tag).message(histo, histogram_proto(finite, bins));
  impl_->summary(step, v);
}

void writer::image(const std::string& tag, const Array& image, int64_t step, std::source_location loc) {
  check_tag(tag, "summary::image", loc);
  std::vector<uint8_t> samples = image_samples(image, loc);
  const AbstractArray t = image.aval();
  const int channels = t.ndim() == 2 ? 1 : int(t.shape[2]);
  // summary.proto: Summary.Image height 1, width 2, colorspace 3, encoded_image_string 4.
  Message img;
  img.varint(1, uint64_t(t.shape[0])).varint(2, uint64_t(t.shape[1])).varint(3, uint64_t(channels));
  img.bytes(4, png::encode(t.shape[0], t.shape[1], channels, samples.data()));
  Message v;
  v.bytes(ValueField::tag, tag).message(image_field, img);
  impl_->summary(step, v);
}

void writer::text(const std::string& tag, const std::string& text, int64_t step, std::source_location loc) {
  check_tag(tag, "summary::text", loc);
  // The text plugin's form: SummaryMetadata{plugin_data{plugin_name "text"}} and a scalar string
  // TensorProto (tensor.proto: dtype 1 = DT_STRING 7, tensor_shape 2 empty, string_val 8).
  Message plugin;
  plugin.bytes(1, "text");
  Message meta;
  meta.message(1, plugin);
  Message tensor_proto;
  tensor_proto.varint(1, 7).message(2, Message()).bytes(8, text);
  Message v;
  v.bytes(ValueField::tag, tag).message(metadata, meta).message(tensor, tensor_proto);
  impl_->summary(step, v);
}

void writer::graph(const Program& program) {
  Message event;
  event.float64(wall_time, now_seconds()).bytes(graph_def_field, graph_def(program));
  impl_->record(event);
}

void writer::flush() { impl_->write_out(); }

const std::string& writer::path() const { return impl_->path; }

}  // namespace fluxion::summary
