#pragma once
// The Open Inference Protocol (KServe v2) in protocol-neutral form: the tensors, requests and
// responses that the HTTP (http_frontend.cpp) and gRPC (grpc_frontend.cpp) frontends parse
// into and write from, the datatype names, and the errors with their HTTP status / gRPC code.
// https://kserve.github.io/website/latest/modelserving/data_plane/v2_protocol/

#include "core/scalar_type.h"
#include "core/tensor.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace torchless::serve {

/// What went wrong, in the protocol's classes. HTTP status / gRPC code:
///   BadRequest 400 / INVALID_ARGUMENT, NotFound 400 / NOT_FOUND (an unknown model or version),
///   Unavailable 429 / UNAVAILABLE (queue full, shutting down, not ready),
///   ModelFailed 500 / INTERNAL (the model raised), Internal 500 / INTERNAL,
///   Timeout 504 / DEADLINE_EXCEEDED (the request's timeout passed; google.rpc.Code's mapping).
enum class ErrorKind { BadRequest, NotFound, Unavailable, ModelFailed, Internal, Timeout };

/// An error answered to the client: `what()` is the message of the v2 error body.
class ServeError : public std::runtime_error {
 public:
  ServeError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  /// 400, 429, 500 or 504.
  int httpStatus() const;

 private:
  ErrorKind kind_;
};

[[noreturn]] void badRequest(const std::string& message);

/// A v2 datatype name ("FP32", "INT64", "BYTES" ...) as a ScalarType; nullopt for BYTES.
/// Throws BadRequest naming `what` for a name that is not a v2 datatype.
std::optional<ScalarType> scalarTypeOf(const std::string& datatype, const std::string& what);
/// The v2 datatype of a ScalarType ("FP32"); throws BadRequest for types v2 has no name for.
std::string datatypeOf(ScalarType t);
/// True for the v2 datatype names we know, BYTES included.
bool isDatatype(const std::string& datatype);

/// One tensor of a request or response. Numeric datatypes keep their elements in `tensor`
/// (contiguous, row-major, of shape `shape`); BYTES keeps one string per element in `strings`.
struct WireTensor {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  Tensor tensor;
  std::vector<std::string> strings;
  /// HTTP only: the client asked for this output in the binary tensor extension.
  bool binary = false;
};

/// The number of elements of `shape`; throws BadRequest naming `what` for a negative
/// dimension or a product over 2^40.
int64_t elementCount(const std::vector<int64_t>& shape, const std::string& what);

/// A numeric tensor of `datatype` and `shape` filled from `bytes` (row-major, little-endian).
/// Throws BadRequest naming the tensor when the byte count is not elements × element size.
Tensor tensorFromBytes(const std::string& name, ScalarType dtype, const std::vector<int64_t>& shape,
                       const char* bytes, size_t size);
/// BYTES elements from the binary layout (each a 4-byte little-endian length, then the bytes).
/// Throws BadRequest when the data is truncated or the count is not `count`.
std::vector<std::string> stringsFromBytes(const std::string& name, int64_t count, const char* bytes,
                                          size_t size);
/// The binary layout of a tensor (raw elements, or length-prefixed strings for BYTES).
std::string tensorBytes(const WireTensor& t);
/// The size of tensorBytes(t), without building it.
size_t tensorByteSize(const WireTensor& t);
/// Appends tensorBytes(t) to `out` (no intermediate copy).
void appendTensorBytes(const WireTensor& t, std::string& out);

/// One inference request, after parsing.
struct InferRequest {
  std::string model;
  std::string version;  // "" = the server's choice
  std::string id;
  std::vector<WireTensor> inputs;
  /// Requested outputs by name (empty: all), with whether each is wanted binary (HTTP).
  std::vector<std::pair<std::string, bool>> outputs;
  /// HTTP: request parameter binary_data_output (every output binary).
  bool binaryOutputs = false;
  /// Triton's request parameter `timeout`, in microseconds (0: none given).
  int64_t timeoutUs = 0;
};

/// One inference response.
struct InferResponse {
  std::string model;
  std::string version;
  std::string id;
  std::vector<WireTensor> outputs;
};

/// A tensor's metadata: name, datatype, shape with -1 for a free dimension.
struct TensorMetadata {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
};

/// The model metadata response.
struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
};

}  // namespace torchless::serve
