#pragma once
// The v2 gRPC service (inference.GRPCInferenceService, grpc_predict_v2.proto) on gRPC++:
// ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata, ModelInfer. Inputs come
// in raw_input_contents or in typed contents; outputs go out in raw_output_contents, as
// Triton's server does. Errors are the gRPC status of ServeError (INVALID_ARGUMENT, NOT_FOUND,
// UNAVAILABLE, INTERNAL) with its message; a message over --max-body-bytes is refused by gRPC
// itself (RESOURCE_EXHAUSTED).

#include "server/server.h"

#include <memory>
#include <string>

namespace torchless::serve {

class GrpcFrontend {
 public:
  explicit GrpcFrontend(Server& server);
  ~GrpcFrontend();
  /// Listens on host:port (0: a free port) and serves; returns the port. Throws torchless::Error.
  int start(const std::string& host, int port);
  /// Stops accepting, lets in-flight calls finish (at most 30 s), joins.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchless::serve
