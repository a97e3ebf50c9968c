// Protobuf's wire format, written by hand: the few messages Fluxion writes (TensorBoard's Event,
// Summary, HistogramProto, GraphDef: train/summary.cpp; ONNX models: transforms/onnx_proto.h) need
// varints, fixed-width numbers and length-delimited fields, nothing else -- so no protobuf library
// and no generated code.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fluxion::protobuf {

/// One message under construction: fields appended in any order (protobuf allows it).
class Message {
 public:
  Message& varint(int field, uint64_t v) {
    key(field, 0);
    raw_varint(v);
    return *this;
  }
  /// int32/int64 fields: negative values go as their 64-bit two's complement (10 bytes).
  Message& int64(int field, int64_t v) { return varint(field, uint64_t(v)); }
  Message& bytes(int field, std::string_view s) {
    key(field, 2);
    raw_varint(s.size());
    out_.append(s);
    return *this;
  }
  Message& message(int field, const Message& m) { return bytes(field, m.out_); }
  Message& fixed32(int field, uint32_t v) {
    key(field, 5);
    raw_le(v, 4);
    return *this;
  }
  Message& fixed64(int field, uint64_t v) {
    key(field, 1);
    raw_le(v, 8);
    return *this;
  }
  Message& float32(int field, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return fixed32(field, bits);
  }
  Message& float64(int field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return fixed64(field, bits);
  }
  /// A packed repeated double field (proto3's default encoding for repeated scalars).
  Message& packed_float64(int field, const std::vector<double>& vs) {
    std::string packed;
    for (double v : vs) {
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      for (int i = 0; i < 8; ++i) packed += char((bits >> (8 * i)) & 0xff);
    }
    return bytes(field, packed);
  }
  const std::string& str() const { return out_; }

 private:
  void key(int field, int wire_type) { raw_varint(uint64_t(field) << 3 | uint64_t(wire_type)); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      out_ += char((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += char(v);
  }
  void raw_le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += char((v >> (8 * i)) & 0xff);
  }
  std::string out_;
};

}  // namespace fluxion::protobuf
