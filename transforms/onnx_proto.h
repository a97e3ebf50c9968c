// The few ONNX protobuf messages fx::onnx::export_ writes (transforms/onnx.cpp), encoded by hand in
// protobuf's wire format: varints and length-delimited fields, with the field numbers of onnx.proto
// (ONNX 1.12, as Debian's libonnx-dev ships it). No protobuf library is needed to write a model.
#pragma once
#include "train/protobuf_wire.h"

namespace fluxion::onnx::proto {

/// One message under construction (train/protobuf_wire.h: the same encoder writes TensorBoard's
/// event files).
using Message = protobuf::Message;

// Field numbers (onnx.proto).
namespace model { enum : int { ir_version = 1, producer_name = 2, graph = 7, opset_import = 8 }; }
namespace opset { enum : int { domain = 1, version = 2 }; }
namespace graph { enum : int { node = 1, name = 2, initializer = 5, input = 11, output = 12 }; }
namespace node { enum : int { input = 1, output = 2, name = 3, op_type = 4, attribute = 5 }; }
namespace attribute { enum : int { name = 1, i = 3, s = 4, ints = 8, type = 20 }; }
namespace attribute_type { enum : int { int_ = 2, string = 3, ints = 7 }; }
namespace tensor { enum : int { dims = 1, data_type = 2, name = 8, raw_data = 9 }; }
namespace value_info { enum : int { name = 1, type = 2 }; }
namespace type { enum : int { tensor_type = 1 }; }
namespace tensor_type { enum : int { elem_type = 1, shape = 2 }; }
namespace shape { enum : int { dim = 1 }; }
namespace dimension { enum : int { dim_value = 1, dim_param = 2 }; }

/// TensorProto.DataType.
namespace dtype {
enum : int { float_ = 1, uint8 = 2, int8 = 3, int32 = 6, int64 = 7, bool_ = 9, float16 = 10, double_ = 11, uint32 = 12,
             bfloat16 = 16 };
}

}  // namespace fluxion::onnx::proto
