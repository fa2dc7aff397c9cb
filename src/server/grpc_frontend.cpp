#include "server/grpc_frontend.h"

#include "core/error.h"
#include "grpc_predict_v2.grpc.pb.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>

namespace torchless::serve {
namespace {

grpc::Status statusOf(const ServeError& e) {
  switch (e.kind()) {
    case ErrorKind::BadRequest: return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
    case ErrorKind::NotFound: return {grpc::StatusCode::NOT_FOUND, e.what()};
    case ErrorKind::Unavailable: return {grpc::StatusCode::UNAVAILABLE, e.what()};
    case ErrorKind::ModelFailed:
    case ErrorKind::Internal: return {grpc::StatusCode::INTERNAL, e.what()};
    case ErrorKind::Timeout: return {grpc::StatusCode::DEADLINE_EXCEEDED, e.what()};
  }
  return {grpc::StatusCode::INTERNAL, e.what()};
}

template <typename T, typename Field>
Tensor typedTensor(const std::string& name, ScalarType dtype, const std::vector<int64_t>& shape,
                   const Field& field) {
  const int64_t n = elementCount(shape, fmt::format("input '{}'", name));
  if (static_cast<int64_t>(field.size()) != n)
    badRequest(fmt::format("input '{}': {} elements in contents, but shape [{}] has {}", name,
                           field.size(), fmt::join(shape, ", "), n));
  Tensor t = Tensor::empty(IntList(shape.begin(), shape.end()), dtype);
  T* p = t.data<T>();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(field[static_cast<int>(i)]);
  return t;
}

WireTensor inputOf(const inference::ModelInferRequest& req, int i) {
  const auto& in = req.inputs(i);
  WireTensor w;
  w.name = in.name();
  w.datatype = in.datatype();
  w.shape.assign(in.shape().begin(), in.shape().end());
  const std::string where = fmt::format("input '{}'", w.name);
  if (w.shape.size() > 64) badRequest(where + ": shape has more than 64 dimensions");
  const std::optional<ScalarType> dtype = scalarTypeOf(w.datatype, where);
  const int64_t n = elementCount(w.shape, where);
  if (req.raw_input_contents_size() > 0) {
    if (req.raw_input_contents_size() != req.inputs_size())
      badRequest(fmt::format("{} raw_input_contents for {} inputs", req.raw_input_contents_size(),
                             req.inputs_size()));
    const std::string& raw = req.raw_input_contents(i);
    if (dtype)
      w.tensor = tensorFromBytes(w.name, *dtype, w.shape, raw.data(), raw.size());
    else
      w.strings = stringsFromBytes(w.name, n, raw.data(), raw.size());
    return w;
  }
  const auto& c = in.contents();
  if (!dtype) {
    if (c.bytes_contents_size() != n)
      badRequest(fmt::format("{}: {} bytes_contents, but the shape has {}", where,
                             c.bytes_contents_size(), n));
    w.strings.assign(c.bytes_contents().begin(), c.bytes_contents().end());
    return w;
  }
  switch (*dtype) {
    case ScalarType::Bool:
      w.tensor = typedTensor<bool>(w.name, *dtype, w.shape, c.bool_contents());
      break;
    case ScalarType::Char:
      w.tensor = typedTensor<int8_t>(w.name, *dtype, w.shape, c.int_contents());
      break;
    case ScalarType::Short:
      w.tensor = typedTensor<int16_t>(w.name, *dtype, w.shape, c.int_contents());
      break;
    case ScalarType::Int:
      w.tensor = typedTensor<int32_t>(w.name, *dtype, w.shape, c.int_contents());
      break;
    case ScalarType::Long:
      w.tensor = typedTensor<int64_t>(w.name, *dtype, w.shape, c.int64_contents());
      break;
    case ScalarType::Byte:
      w.tensor = typedTensor<uint8_t>(w.name, *dtype, w.shape, c.uint_contents());
      break;
    case ScalarType::UInt16:
      w.tensor = typedTensor<uint16_t>(w.name, *dtype, w.shape, c.uint_contents());
      break;
    case ScalarType::UInt32:
      w.tensor = typedTensor<uint32_t>(w.name, *dtype, w.shape, c.uint_contents());
      break;
    case ScalarType::UInt64:
      w.tensor = typedTensor<uint64_t>(w.name, *dtype, w.shape, c.uint64_contents());
      break;
    case ScalarType::Float:
      w.tensor = typedTensor<float>(w.name, *dtype, w.shape, c.fp32_contents());
      break;
    case ScalarType::Double:
      w.tensor = typedTensor<double>(w.name, *dtype, w.shape, c.fp64_contents());
      break;
    default:
      badRequest(fmt::format("{}: {} travels only in raw_input_contents", where, w.datatype));
  }
  return w;
}

class Service final : public inference::GRPCInferenceService::Service {
 public:
  explicit Service(Server& server) : server_(server) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* res) override {
    res->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* res) override {
    res->set_ready(server_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* req,
                          inference::ModelReadyResponse* res) override {
    try {
      res->set_ready(server_.modelReady(req->name(), req->version()));
      return grpc::Status::OK;
    } catch (const ServeError& e) {
      return statusOf(e);
    }
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* res) override {
    res->set_name("torchless");
    res->set_version(TORCHLESS_SERVER_VERSION);
    res->add_extensions("binary_tensor_data");
    res->add_extensions("model_repository");
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* req,
                             inference::ModelMetadataResponse* res) override {
    try {
      const serve::ModelMetadata md = server_.metadata(req->name(), req->version());
      res->set_name(md.name);
      for (const auto& v : md.versions) res->add_versions(v);
      res->set_platform(md.platform);
      auto fill = [](const std::vector<TensorMetadata>& from, auto* to) {
        for (const auto& t : from) {
          auto* m = to->Add();
          m->set_name(t.name);
          m->set_datatype(t.datatype);
          for (int64_t d : t.shape) m->add_shape(d);
        }
      };
      fill(md.inputs, res->mutable_inputs());
      fill(md.outputs, res->mutable_outputs());
      return grpc::Status::OK;
    } catch (const ServeError& e) {
      return statusOf(e);
    }
  }
  grpc::Status ModelInfer(grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                          inference::ModelInferResponse* res) override {
    InferRequest request;
    request.model = req->model_name();
    request.version = req->model_version();
    request.id = req->id();
    try {
      auto t = req->parameters().find("timeout");  // Triton's, in microseconds
      if (t != req->parameters().end()) {
        if (t->second.parameter_choice_case() != inference::InferParameter::kInt64Param ||
            t->second.int64_param() < 0 || t->second.int64_param() > (int64_t{1} << 40))
          badRequest("parameter 'timeout' must be an int64_param of 0..2^40 microseconds");
        request.timeoutUs = t->second.int64_param();
      }
      for (int i = 0; i < req->inputs_size(); ++i) request.inputs.push_back(inputOf(*req, i));
      for (const auto& o : req->outputs()) request.outputs.emplace_back(o.name(), false);
    } catch (const ServeError& e) {
      server_.logFailure("grpc", request.model, e);
      return statusOf(e);
    }
    try {
      // The client's gRPC deadline bounds the wait too (none: a far time point).
      const auto left = ctx->deadline() - std::chrono::system_clock::now();
      auto deadline = std::chrono::steady_clock::time_point::max();
      if (left < std::chrono::hours(24 * 365))
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
      const InferResponse r = server_.infer(request, "grpc", deadline);
      res->set_model_name(r.model);
      res->set_model_version(r.version);
      res->set_id(r.id);
      for (const auto& w : r.outputs) {
        auto* o = res->add_outputs();
        o->set_name(w.name);
        o->set_datatype(w.datatype);
        for (int64_t d : w.shape) o->add_shape(d);
        res->add_raw_output_contents(tensorBytes(w));
      }
      return grpc::Status::OK;
    } catch (const ServeError& e) {
      return statusOf(e);
    }
  }

  // Triton's model repository extension (Note [Repository API] in server/server.h).
  grpc::Status RepositoryIndex(grpc::ServerContext*, const inference::RepositoryIndexRequest* req,
                               inference::RepositoryIndexResponse* res) override {
    for (const auto& e : server_.repositoryIndex(req->ready())) {
      auto* m = res->add_models();
      m->set_name(e.name);
      m->set_version(e.version);
      m->set_state(e.state);
      m->set_reason(e.reason);
    }
    return grpc::Status::OK;
  }
  grpc::Status RepositoryModelLoad(grpc::ServerContext*,
                                   const inference::RepositoryModelLoadRequest* req,
                                   inference::RepositoryModelLoadResponse*) override {
    try {
      if (!req->parameters().empty())
        badRequest(fmt::format("model load: parameter '{}' is not supported",
                               req->parameters().begin()->first));
      server_.loadModel(req->model_name());
      return grpc::Status::OK;
    } catch (const ServeError& e) {
      return statusOf(e);
    }
  }
  grpc::Status RepositoryModelUnload(grpc::ServerContext*,
                                     const inference::RepositoryModelUnloadRequest* req,
                                     inference::RepositoryModelUnloadResponse*) override {
    try {
      for (const auto& [key, value] : req->parameters())
        if (key != "unload_dependents" ||
            value.parameter_choice_case() != inference::ModelRepositoryParameter::kBoolParam)
          badRequest(fmt::format(
              "model unload: parameter '{}' is not supported (only unload_dependents, a bool)",
              key));
      server_.unloadModel(req->model_name());
      return grpc::Status::OK;
    } catch (const ServeError& e) {
      return statusOf(e);
    }
  }

  int64_t maxBody() const { return server_.options().maxBodyBytes; }

 private:
  Server& server_;
};

}  // namespace

struct GrpcFrontend::Impl {
  explicit Impl(Server& s) : service(s) {}
  Service service;
  std::unique_ptr<grpc::Server> server;
};

GrpcFrontend::GrpcFrontend(Server& server) : impl_(std::make_unique<Impl>(server)) {}

GrpcFrontend::~GrpcFrontend() { stop(); }

int GrpcFrontend::start(const std::string& host, int port) {
  grpc::ServerBuilder builder;
  int selected = 0;
  const std::string address = host.find(':') != std::string::npos
                                  ? fmt::format("[{}]:{}", host, port)
                                  : fmt::format("{}:{}", host, port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected);
  const int64_t maxBody =
      std::min<int64_t>(impl_->service.maxBody(), std::numeric_limits<int>::max());
  builder.SetMaxReceiveMessageSize(static_cast<int>(maxBody));
  builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  builder.RegisterService(&impl_->service);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || selected == 0)
    throw Error(fmt::format(
        "cannot listen for gRPC on {} (in use, or not an address of this machine)", address));
  return selected;
}

void GrpcFrontend::stop() {
  if (!impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(30));
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace torchless::serve
