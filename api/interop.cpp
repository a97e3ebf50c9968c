// fx::from_buffer and DLPack (api/interop.h): arrays whose Buffer wraps foreign memory
// (memory/buffer.h's external buffers), and DLPack tensors sharing an array's Buffer.
#include "api/interop.h"

#include <cstring>
#include <string>
#include <vector>

#include "memory/buffer.h"

namespace fluxion {
namespace {

[[noreturn]] void fail(ErrorKind kind, std::string_view op, const AbstractArray& aval, SourceLoc loc, const std::string& why) {
  op_error(kind, op, std::span<const AbstractArray>(&aval, 1), loc, why);
}

Array wrap(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner, std::string_view op, SourceLoc loc) {
  const AbstractArray aval{shape, dtype, false};
  if (data == nullptr && aval.nbytes() != 0) fail(ErrorKind::Value, op, aval, loc, "the data pointer is null");
  if (reinterpret_cast<uintptr_t>(data) % itemsize(dtype) != 0)
    fail(ErrorKind::Value, op, aval, loc, "the data pointer is not aligned to the element size " + std::to_string(itemsize(dtype)));
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = aval;
  impl->buffer = Buffer::wrap(data, aval.nbytes(), std::move(owner));
  return Array(std::move(impl));
}

}  // namespace

Array from_buffer(void* data, const Shape& shape, DType dtype, std::function<void(void*)> deleter, SourceLoc loc) {
  std::shared_ptr<void> owner;
  if (deleter) owner = std::shared_ptr<void>(data, [d = std::move(deleter)](void* p) { d(p); });
  return wrap(data, shape, dtype, std::move(owner), "from_buffer", loc);
}

Array from_buffer(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner, SourceLoc loc) {
  return wrap(data, shape, dtype, std::move(owner), "from_buffer", loc);
}

// ---- DLPack ------------------------------------------------------------------------------------------

namespace {

// What an exported tensor owns: the array's Buffer (its bytes stay alive) and the shape it points to.
struct ExportContext {
  DLManagedTensor tensor{};
  std::shared_ptr<Buffer> buffer;
  std::vector<int64_t> shape;
};

DLDataType to_dl(DType d) {
  const uint8_t bits = uint8_t(itemsize(d) * 8);
  switch (d) {
    case DType::bool_: return {kDLBool, 8, 1};
    case DType::int8: case DType::int32: case DType::int64: return {kDLInt, bits, 1};
    case DType::uint8: case DType::uint32: return {kDLUInt, bits, 1};
    case DType::bfloat16: return {kDLBfloat, 16, 1};
    case DType::complex64: case DType::complex128: return {kDLComplex, bits, 1};  // interleaved pairs
    default: return {kDLFloat, bits, 1};  // float16, float32, float64
  }
}

bool from_dl(DLDataType t, DType& out) {
  if (t.lanes != 1) return false;
  for (int i = 0; i < kNumDTypes; ++i) {
    const DLDataType c = to_dl(DType(i));
    if (c.code == t.code && c.bits == t.bits) {
      out = DType(i);
      return true;
    }
  }
  return false;
}

}  // namespace

DLManagedTensor* to_dlpack(const Array& x, SourceLoc loc) {
  if (x.is_tracer()) throw ConcretizationError("ConcretizationError: to_dlpack at " + loc.str() +
                                               ": a traced array has no memory to share (export the result of the transformed call)");
  const ArrayImpl& impl = *x.impl();
  (void)host_data(impl);  // gathers a sharded array once, so its bytes are one host buffer
  auto ctx = std::make_unique<ExportContext>();
  ctx->buffer = impl.buffer ? impl.buffer : impl.sharding->gathered;
  if (ctx->buffer->device.memory_kind() != MemoryKind::host)
    fail(ErrorKind::Device, "to_dlpack", x.aval(), loc, "only host memory is exported");
  ctx->shape.assign(x.shape().begin(), x.shape().end());
  DLTensor& t = ctx->tensor.dl_tensor;
  t.data = ctx->buffer->data;
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(x.ndim());
  t.dtype = to_dl(x.dtype());
  t.shape = ctx->shape.data();
  t.strides = nullptr;  // compact row-major
  t.byte_offset = 0;
  ctx->tensor.manager_ctx = ctx.get();
  ctx->tensor.deleter = [](DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
  return &ctx.release()->tensor;
}

Array from_dlpack(DLManagedTensor* t, SourceLoc loc) {
  if (t == nullptr) throw ValueError("ValueError: from_dlpack at " + loc.str() + ": the tensor is null");
  // Owned from here: every exit, error or not, ends in the producer's deleter exactly once.
  std::shared_ptr<DLManagedTensor> owner(t, [](DLManagedTensor* m) {
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& d = t->dl_tensor;
  Shape shape(std::vector<int64_t>(d.shape, d.shape + d.ndim));
  DType dtype = DType::float32;
  if (!from_dl(d.dtype, dtype))
    throw TypeError("TypeError: from_dlpack" + shape.str() + " at " + loc.str() + ": unsupported DLPack dtype (code " +
                    std::to_string(d.dtype.code) + ", " + std::to_string(d.dtype.bits) + " bits, " +
                    std::to_string(d.dtype.lanes) + " lanes)");
  const AbstractArray aval{shape, dtype, false};
  if (d.device.device_type != kDLCPU && d.device.device_type != kDLCUDAHost)
    fail(ErrorKind::Device, "from_dlpack", aval, loc, "only CPU tensors are imported (device type " + std::to_string(d.device.device_type) + ")");
  if (d.strides != nullptr) {
    int64_t expected = 1;
    for (int i = d.ndim - 1; i >= 0; --i) {
      if (d.shape[i] != 1 && d.strides[i] != expected)
        fail(ErrorKind::Value, "from_dlpack", aval, loc, "the tensor is not compact row-major (axis " + std::to_string(i) +
                                                            " has stride " + std::to_string(d.strides[i]) + ", expected " +
                                                            std::to_string(expected) + "): make it contiguous first");
      expected *= d.shape[i];
    }
  }
  void* data = static_cast<char*>(d.data) + d.byte_offset;
  return wrap(data, shape, dtype, std::move(owner), "from_dlpack", loc);
}

}  // namespace fluxion

// ---- Eigen (api/interop_eigen.h): the non-template checks --------------------------------------------

namespace fluxion::interop_detail {

const void* eigen_view_data(const Array& x, DType want, SourceLoc loc) {
  if (x.is_tracer())
    throw ConcretizationError("ConcretizationError: as_eigen at " + loc.str() + ": a traced array has no memory to view");
  if (x.dtype() != want)
    fail(ErrorKind::Type, "as_eigen", x.aval(), loc, "the Eigen scalar type is " + std::string(dtype_name(want)));
  if (x.ndim() > 2) fail(ErrorKind::Shape, "as_eigen", x.aval(), loc, "views rank 0, 1 or 2 (reshape first)");
  const void* p = x.data(loc);  // gathers a sharded array into host memory
  const ArrayImpl& impl = *x.impl();
  if (impl.buffer && impl.buffer->device.memory_kind() != MemoryKind::host)
    fail(ErrorKind::Device, "as_eigen", x.aval(), loc, "only host memory is viewed");
  return p;
}

void not_row_major(int64_t rows, int64_t cols, DType dtype, SourceLoc loc) {
  fail(ErrorKind::Value, "from_eigen", AbstractArray{Shape{rows, cols}, dtype, false}, loc,
       "shares row-major matrices without padding only (Fluxion arrays are row-major): use "
       "Eigen::RowMajor, or copy into one");
}

}  // namespace fluxion::interop_detail
