#pragma once
// The ONNX protobuf classes (Debian's libonnx-dev, built with ONNX_ML and namespace `onnx`).
// Include this instead of <onnx/onnx_pb.h> so the two macros are always set the same way.
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>
