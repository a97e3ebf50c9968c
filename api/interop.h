// Zero-copy interop: arrays over memory Fluxion did not allocate, and Fluxion's memory handed out.
//
//   auto x = fx::from_buffer(ptr, {3, 4}, fx::float32, [](void* p) { delete[] (float*)p; });
//   auto y = fx::from_buffer(ptr, {3, 4}, fx::float32, owner);   // a shared_ptr kept alive instead
//   DLManagedTensor* t = fx::to_dlpack(x);   // a consumer (NumPy, PyTorch) takes it and calls t->deleter
//   auto z = fx::from_dlpack(t);             // takes t; calls t->deleter when the last array goes
//   (Eigen: api/interop_eigen.h, fx::from_eigen / fx::as_eigen.)
//
// An array made this way reads the caller's bytes directly: no copy is made, and the memory
// stays alive (the deleter or the owner runs) until the last array holding it is gone. Fluxion never
// writes into an array's memory after creating it, but the caller may: changing the bytes while an
// array over them is alive changes what that array reads (as numpy's views do). The bytes must be
// row-major, contiguous, host memory, aligned to the element size.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "api/elementwise.h"
#include "ir/array.h"

// The DLPack ABI (dlpack.h v0.8, the unversioned DLManagedTensor every framework exchanges),
// declared from the public specification so Fluxion needs no extra package. The layout must match
// the C header exactly: these are plain C structs passed between libraries.
extern "C" {
enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};
enum DLDataTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLOpaqueHandle = 3, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
}

namespace fluxion {

/// An array over `data` ([shape] of dtype, row-major); `deleter(data)` runs when the last array
/// using the bytes is gone. A null deleter borrows: the caller keeps the memory alive meanwhile.
Array from_buffer(void* data, const Shape& shape, DType dtype, std::function<void(void*)> deleter, FLUXION_LOC);
/// The same with any shared owner of the memory kept alive instead of a deleter.
Array from_buffer(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner, FLUXION_LOC);

/// DLPack export of a concrete array: the tensor shares the array's bytes and keeps them alive
/// until its deleter runs (the consumer calls it; a caller that never hands it on calls it itself).
DLManagedTensor* to_dlpack(const Array& x, FLUXION_LOC);
/// DLPack import: takes ownership of `t` (its deleter runs when the last array is gone, or at once
/// on an error). CPU memory, compact row-major strides (or none), Fluxion's dtypes only: a
/// ValueError/TypeError otherwise.
Array from_dlpack(DLManagedTensor* t, FLUXION_LOC);

}  // namespace fluxion
