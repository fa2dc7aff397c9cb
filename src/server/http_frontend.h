#pragma once
// The v2 REST endpoints on cpp-httplib (Debian's libcpp-httplib):
//   GET  /v2/health/live, /v2/health/ready, /v2 (server metadata), /metrics (Prometheus)
//   GET  /v2/models/NAME[/versions/V], /v2/models/NAME[/versions/V]/ready
//   POST /v2/models/NAME[/versions/V]/infer
// Infer bodies are JSON, or JSON followed by binary tensors (Triton's binary tensor data
// extension: header Inference-Header-Content-Length gives the JSON's length, and each input
// with parameters.binary_data_size has that many bytes after it, in input order). An output
// is returned binary when the request says so (output parameters.binary_data, or request
// parameters.binary_data_output). Errors are {"error": "..."} with the status of ServeError.

#include "server/server.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace torchless::serve {

class HttpFrontend {
 public:
  explicit HttpFrontend(Server& server);
  ~HttpFrontend();
  /// Binds host:port (0: a free port) and returns the port. Throws torchless::Error.
  int bind(const std::string& host, int port);
  /// Serves on a thread of its own.
  void start();
  /// Stops accepting, lets in-flight requests finish, joins.
  void stop();

 private:
  Server& server_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
};

/// Parses a v2 infer request body (JSON, or JSON + binary tensors when headerLength is set).
/// Throws ServeError(BadRequest) naming what is wrong. Exposed for tests.
InferRequest parseInferBody(const std::string& body, std::optional<size_t> headerLength);
/// Writes a response: JSON (contentType application/json), or JSON + binary tensors when an
/// output is binary (then *headerLength is set).
std::string writeInferBody(const InferResponse& response, std::optional<size_t>* headerLength);

}  // namespace torchless::serve
