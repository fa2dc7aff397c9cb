#include "server/http_frontend.h"

#include "core/error.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstring>
#include <functional>

namespace torchless::serve {
using nlohmann::json;

namespace {

std::string dumpJson(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void sendError(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(dumpJson(json{{"error", message}}), "application/json");
}

void sendJson(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(dumpJson(j), "application/json");
}

const json* member(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

bool boolParameter(const json& owner, const char* key, const std::string& where) {
  const json* params = member(owner, "parameters");
  if (!params) return false;
  if (!params->is_object()) badRequest(where + ": 'parameters' must be an object");
  const json* v = member(*params, key);
  if (!v) return false;
  if (!v->is_boolean())
    badRequest(fmt::format("{}: parameter '{}' must be true or false", where, key));
  return v->get<bool>();
}

// Collects the leaves of a (possibly nested) JSON array, row-major.
void leaves(const json& j, std::vector<const json*>& out, const std::string& where, int depth) {
  if (depth > 32) badRequest(where + ": 'data' is nested too deeply");
  if (j.is_array()) {
    for (const auto& e : j) leaves(e, out, where, depth + 1);
  } else {
    out.push_back(&j);
  }
}

template <typename T>
void fillIntegers(Tensor& t, const std::vector<const json*>& data, const std::string& where) {
  T* p = t.data<T>();
  for (size_t i = 0; i < data.size(); ++i) {
    const json& v = *data[i];
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
        badRequest(fmt::format("{}: element {} ({}) is out of range", where, i, u));
      p[i] = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t s = v.get<int64_t>();
      if (s < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (s > 0 &&
           static_cast<uint64_t>(s) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        badRequest(fmt::format("{}: element {} ({}) is out of range", where, i, s));
      p[i] = static_cast<T>(s);
    } else {
      badRequest(fmt::format("{}: element {} is {}, expected an integer", where, i, v.dump()));
    }
  }
}

WireTensor parseInput(const json& j, size_t index, const char*& binary, size_t& binaryLeft,
                      bool hasBinary) {
  std::string where = fmt::format("inputs[{}]", index);
  if (!j.is_object()) badRequest(where + " must be an object");
  const json* name = member(j, "name");
  if (!name || !name->is_string()) badRequest(where + " needs a string 'name'");
  WireTensor w;
  w.name = name->get<std::string>();
  where = fmt::format("input '{}'", w.name);
  const json* datatype = member(j, "datatype");
  if (!datatype || !datatype->is_string()) badRequest(where + " needs a string 'datatype'");
  w.datatype = datatype->get<std::string>();
  const std::optional<ScalarType> dtype = scalarTypeOf(w.datatype, where);
  const json* shape = member(j, "shape");
  if (!shape || !shape->is_array()) badRequest(where + " needs a 'shape' list");
  for (const auto& d : *shape) {
    if (!d.is_number_integer())
      badRequest(fmt::format("{}: shape holds {}, expected integers", where, d.dump()));
    w.shape.push_back(d.get<int64_t>());
  }
  if (w.shape.size() > 64) badRequest(where + ": shape has more than 64 dimensions");
  const int64_t n = elementCount(w.shape, where);

  // Binary data (the binary tensor extension).
  const json* params = member(j, "parameters");
  if (params && !params->is_object()) badRequest(where + ": 'parameters' must be an object");
  const json* binarySize = params ? member(*params, "binary_data_size") : nullptr;
  if (binarySize) {
    if (!hasBinary)
      badRequest(where +
                 ": parameters.binary_data_size needs the Inference-Header-Content-Length header");
    if (!binarySize->is_number_unsigned())
      badRequest(where + ": binary_data_size must be a non-negative integer");
    const uint64_t size = binarySize->get<uint64_t>();
    if (size > binaryLeft)
      badRequest(fmt::format(
          "{}: binary data truncated: binary_data_size is {} but {} bytes are left in the body",
          where, size, binaryLeft));
    if (member(j, "data")) badRequest(where + ": both 'data' and binary_data_size given");
    if (dtype)
      w.tensor = tensorFromBytes(w.name, *dtype, w.shape, binary, size);
    else
      w.strings = stringsFromBytes(w.name, n, binary, size);
    binary += size;
    binaryLeft -= size;
    return w;
  }

  const json* data = member(j, "data");
  if (!data) badRequest(where + " has no 'data' (and no binary_data_size)");
  std::vector<const json*> items;
  leaves(*data, items, where, 0);
  if (static_cast<int64_t>(items.size()) != n)
    badRequest(fmt::format("{}: {} elements in 'data', but shape [{}] has {}", where, items.size(),
                           fmt::join(w.shape, ", "), n));
  if (!dtype) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i]->is_string())
        badRequest(fmt::format("{}: BYTES element {} is not a string", where, i));
      w.strings.push_back(items[i]->get<std::string>());
    }
    return w;
  }
  const IntList sizes(w.shape.begin(), w.shape.end());
  switch (*dtype) {
    case ScalarType::Bool: {
      w.tensor = Tensor::empty(sizes, ScalarType::Bool);
      bool* p = w.tensor.data<bool>();
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i]->is_boolean())
          badRequest(fmt::format("{}: element {} is {}, expected true or false", where, i,
                                 items[i]->dump()));
        p[i] = items[i]->get<bool>();
      }
      break;
    }
    case ScalarType::Byte:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<uint8_t>(w.tensor, items, where);
      break;
    case ScalarType::UInt16:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<uint16_t>(w.tensor, items, where);
      break;
    case ScalarType::UInt32:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<uint32_t>(w.tensor, items, where);
      break;
    case ScalarType::UInt64:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<uint64_t>(w.tensor, items, where);
      break;
    case ScalarType::Char:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<int8_t>(w.tensor, items, where);
      break;
    case ScalarType::Short:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<int16_t>(w.tensor, items, where);
      break;
    case ScalarType::Int:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<int32_t>(w.tensor, items, where);
      break;
    case ScalarType::Long:
      w.tensor = Tensor::empty(sizes, *dtype);
      fillIntegers<int64_t>(w.tensor, items, where);
      break;
    default: {  // FP16, BF16, FP32, FP64: through double
      Tensor d = Tensor::empty(sizes, ScalarType::Double);
      double* p = d.data<double>();
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i]->is_number())
          badRequest(
              fmt::format("{}: element {} is {}, expected a number", where, i, items[i]->dump()));
        p[i] = items[i]->get<double>();
      }
      w.tensor = *dtype == ScalarType::Double ? d : d.to(*dtype).contiguous();
    }
  }
  return w;
}

// A tensor's elements as a flat JSON array.
json dataOf(const WireTensor& w) {
  json out = json::array();
  if (w.datatype == "BYTES") {
    for (const auto& s : w.strings) out.push_back(s);
    return out;
  }
  const Tensor& t = w.tensor;
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case ScalarType::Bool:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<bool>()[i]);
      break;
    case ScalarType::Byte:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<uint8_t>()[i]);
      break;
    case ScalarType::UInt16:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<uint16_t>()[i]);
      break;
    case ScalarType::UInt32:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<uint32_t>()[i]);
      break;
    case ScalarType::UInt64:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<uint64_t>()[i]);
      break;
    case ScalarType::Char:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<int8_t>()[i]);
      break;
    case ScalarType::Short:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<int16_t>()[i]);
      break;
    case ScalarType::Int:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<int32_t>()[i]);
      break;
    case ScalarType::Long:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<int64_t>()[i]);
      break;
    case ScalarType::Float:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<float>()[i]);
      break;
    case ScalarType::Double:
      for (int64_t i = 0; i < n; ++i) out.push_back(t.data<double>()[i]);
      break;
    default: {
      const Tensor d = t.to(ScalarType::Double).contiguous();
      for (int64_t i = 0; i < n; ++i) out.push_back(d.data<double>()[i]);
    }
  }
  return out;
}

// The JSON object of a repository request's body: {} when the body is empty.
json repositoryBody(const std::string& body, const std::string& what) {
  if (body.empty()) return json::object();
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    badRequest(fmt::format("malformed JSON in the {} request body: {}", what, e.what()));
  }
  if (!j.is_object()) badRequest(fmt::format("the {} request body must be a JSON object", what));
  return j;
}

// Load and unload take Triton's parameters; those that change what is loaded (a config given
// inline, files) are refused rather than ignored.
void checkRepositoryParameters(const json& j, const std::string& what,
                               std::initializer_list<const char*> allowed) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "parameters")
      badRequest(fmt::format("{}: unknown key '{}' (only 'parameters')", what, it.key()));
  const json* params = member(j, "parameters");
  if (!params) return;
  if (!params->is_object()) badRequest(what + ": 'parameters' must be an object");
  for (auto it = params->begin(); it != params->end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok |= it.key() == a;
    if (!ok) badRequest(fmt::format("{}: parameter '{}' is not supported", what, it.key()));
    if (!it->is_boolean())
      badRequest(fmt::format("{}: parameter '{}' must be true or false", what, it.key()));
  }
}

}  // namespace

InferRequest parseInferBody(const std::string& body, std::optional<size_t> headerLength) {
  size_t jsonSize = body.size();
  if (headerLength) {
    if (*headerLength > body.size())
      badRequest(
          fmt::format("Inference-Header-Content-Length is {}, but the body has only {} bytes",
                      *headerLength, body.size()));
    jsonSize = *headerLength;
  }
  json j;
  try {
    j = json::parse(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(jsonSize));
  } catch (const json::parse_error& e) {
    badRequest(fmt::format("malformed JSON in the request body: {}", e.what()));
  }
  if (!j.is_object()) badRequest("the request body must be a JSON object");
  InferRequest r;
  if (const json* id = member(j, "id")) {
    if (!id->is_string()) badRequest("'id' must be a string");
    r.id = id->get<std::string>();
  }
  r.binaryOutputs = boolParameter(j, "binary_data_output", "the request");
  if (const json* params = member(j, "parameters")) {
    if (const json* t = member(*params, "timeout")) {  // Triton's, in microseconds
      if (!t->is_number_unsigned() || t->get<uint64_t>() > (uint64_t{1} << 40))
        badRequest(fmt::format(
            "parameter 'timeout' is {}, expected microseconds: an integer 0..2^40", t->dump()));
      r.timeoutUs = static_cast<int64_t>(t->get<uint64_t>());
    }
  }
  const json* inputs = member(j, "inputs");
  if (!inputs || !inputs->is_array()) badRequest("the request needs an 'inputs' list");
  const char* binary = body.data() + jsonSize;
  size_t binaryLeft = body.size() - jsonSize;
  for (size_t i = 0; i < inputs->size(); ++i)
    r.inputs.push_back(parseInput((*inputs)[i], i, binary, binaryLeft, headerLength.has_value()));
  if (binaryLeft)
    badRequest(fmt::format("{} bytes of binary data follow the last binary input", binaryLeft));
  if (const json* outputs = member(j, "outputs")) {
    if (!outputs->is_array()) badRequest("'outputs' must be a list");
    for (size_t i = 0; i < outputs->size(); ++i) {
      const json& o = (*outputs)[i];
      const std::string where = fmt::format("outputs[{}]", i);
      if (!o.is_object() || !member(o, "name") || !o["name"].is_string())
        badRequest(where + " needs a string 'name'");
      r.outputs.emplace_back(o["name"].get<std::string>(), boolParameter(o, "binary_data", where));
    }
  }
  return r;
}

std::string writeInferBody(const InferResponse& response, std::optional<size_t>* headerLength) {
  json j;
  j["model_name"] = response.model;
  j["model_version"] = response.version;
  if (!response.id.empty()) j["id"] = response.id;
  j["outputs"] = json::array();
  size_t binaryBytes = 0;
  bool anyBinary = false;
  for (const auto& w : response.outputs) {
    json o;
    o["name"] = w.name;
    o["datatype"] = w.datatype;
    o["shape"] = w.shape;
    if (w.binary) {
      const size_t size = tensorByteSize(w);
      o["parameters"] = {{"binary_data_size", size}};
      binaryBytes += size;
      anyBinary = true;
    } else {
      o["data"] = dataOf(w);
    }
    j["outputs"].push_back(std::move(o));
  }
  std::string text = dumpJson(j);
  if (anyBinary) {
    // The binary outputs follow the JSON header, each written once, straight from its tensor.
    *headerLength = text.size();
    text.reserve(text.size() + binaryBytes);
    for (const auto& w : response.outputs)
      if (w.binary) appendTensorBytes(w, text);
  }
  return text;
}

// ---- the server ----

HttpFrontend::HttpFrontend(Server& server)
    : server_(server), http_(std::make_unique<httplib::Server>()) {
  httplib::Server& h = *http_;
  const ServeOptions& o = server_.options();
  const int threads = o.httpThreads;
  h.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  h.set_payload_max_length(static_cast<size_t>(o.maxBodyBytes));
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm holds
  // the second until the client's delayed ACK (40 ms on Linux) of the first.
  h.set_tcp_nodelay(true);
  h.set_keep_alive_max_count(1000);
  h.set_keep_alive_timeout(
      5);  // httplib's default; also bounds how long shutdown waits for idle connections
  h.set_read_timeout(30);
  h.set_write_timeout(30);

  const int64_t maxBody = o.maxBodyBytes;
  h.set_pre_routing_handler([maxBody](const httplib::Request& req, httplib::Response& res) {
    // Refuse a declared body over the limit before reading it.
    if (req.has_header("Content-Length")) {
      const std::string v = req.get_header_value("Content-Length");
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size()) {
        sendError(res, 400, fmt::format("malformed Content-Length '{}'", v));
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (n > static_cast<uint64_t>(maxBody)) {
        sendError(
            res, 400,
            fmt::format("the request body is {} bytes, over --max-body-bytes ({})", n, maxBody));
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  h.set_error_handler([maxBody](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      sendError(res, 404, fmt::format("no such endpoint: {} {}", req.method, req.path));
    else if (res.status == 413)
      sendError(res, 413, fmt::format("the request body is over --max-body-bytes ({})", maxBody));
    else
      sendError(res, res.status, fmt::format("HTTP {}", res.status));
  });
  h.set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          message = e.what();
        } catch (...) {
        }
        server_.log(LogLevel::Error, fmt::format("protocol=http status=500 error=\"{}\"", message));
        sendError(res, 500, message);
      });

  h.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    sendJson(res, json{{"live", true}});
  });
  h.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = server_.ready();
    sendJson(res, json{{"ready", ready}});
    if (!ready) res.status = 503;
  });
  h.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    sendJson(res, json{{"name", "torchless"},
                       {"version", TORCHLESS_SERVER_VERSION},
                       {"extensions", {"binary_tensor_data", "model_repository"}}});
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(server_.metricsText(), "text/plain; version=0.0.4");
  });
  auto guarded = [](httplib::Response& res, const std::function<void()>& fn) {
    try {
      fn();
    } catch (const ServeError& e) {
      sendError(res, e.httpStatus(), e.what());
    }
  };
  h.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/ready)",
        [this, guarded](const httplib::Request& req, httplib::Response& res) {
          guarded(res, [&] {
            const bool ready = server_.modelReady(req.matches[1], req.matches[2]);
            sendJson(res, json{{"name", req.matches[1].str()}, {"ready", ready}});
            if (!ready) res.status = 503;
          });
        });
  h.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)",
        [this, guarded](const httplib::Request& req, httplib::Response& res) {
          guarded(res, [&] {
            const ModelMetadata md = server_.metadata(req.matches[1], req.matches[2]);
            auto tensors = [](const std::vector<TensorMetadata>& ts) {
              json a = json::array();
              for (const auto& t : ts)
                a.push_back(json{{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
              return a;
            };
            sendJson(res, json{{"name", md.name},
                               {"versions", md.versions},
                               {"platform", md.platform},
                               {"inputs", tensors(md.inputs)},
                               {"outputs", tensors(md.outputs)}});
          });
        });
  // Triton's model repository extension (Note [Repository API] in server/server.h).
  h.Post(
      "/v2/repository/index", [this, guarded](const httplib::Request& req, httplib::Response& res) {
        guarded(res, [&] {
          const json j = repositoryBody(req.body, "repository index");
          for (auto it = j.begin(); it != j.end(); ++it)
            if (it.key() != "ready" && it.key() != "repository_name")
              badRequest(fmt::format(
                  "repository index: unknown key '{}' (known: ready, repository_name)", it.key()));
          bool readyOnly = false;
          if (const json* r = member(j, "ready")) {
            if (!r->is_boolean()) badRequest("repository index: 'ready' must be true or false");
            readyOnly = r->get<bool>();
          }
          json out = json::array();
          for (const auto& e : server_.repositoryIndex(readyOnly)) {
            json m{{"name", e.name}, {"state", e.state}};
            if (!e.version.empty()) m["version"] = e.version;
            if (!e.reason.empty()) m["reason"] = e.reason;
            out.push_back(std::move(m));
          }
          sendJson(res, out);
        });
      });
  h.Post(R"(/v2/repository/models/([^/]+)/(load|unload))",
         [this, guarded](const httplib::Request& req, httplib::Response& res) {
           const std::string name = req.matches[1], action = req.matches[2];
           guarded(res, [&] {
             const json j = repositoryBody(req.body, "model " + action);
             if (action == "load") {
               checkRepositoryParameters(j, "model load", {});
               server_.loadModel(name);
             } else {
               checkRepositoryParameters(j, "model unload",
                                         {"unload_dependents"});  // no ensembles: no dependents
               server_.unloadModel(name);
             }
             res.status = 200;  // Triton answers a load or unload with an empty body
           });
         });
  h.Post(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/infer)",
         [this](const httplib::Request& req, httplib::Response& res) {
           const std::string model = req.matches[1];
           InferRequest request;
           try {
             std::optional<size_t> headerLength;
             if (req.has_header("Inference-Header-Content-Length")) {
               const std::string v = req.get_header_value("Inference-Header-Content-Length");
               size_t n = 0;
               auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
               if (ec != std::errc() || p != v.data() + v.size())
                 badRequest(fmt::format("malformed Inference-Header-Content-Length '{}'", v));
               headerLength = n;
             }
             request = parseInferBody(req.body, headerLength);
           } catch (const ServeError& e) {
             server_.logFailure("http", model, e);
             sendError(res, e.httpStatus(), e.what());
             return;
           }
           request.model = model;
           request.version = req.matches[2];
           try {
             const InferResponse response = server_.infer(request, "http");
             std::optional<size_t> headerLength;
             std::string body = writeInferBody(response, &headerLength);
             res.status = 200;
             if (headerLength) {
               res.set_header("Inference-Header-Content-Length", std::to_string(*headerLength));
               res.set_content(std::move(body), "application/octet-stream");
             } else {
               res.set_content(std::move(body), "application/json");
             }
           } catch (const ServeError& e) {
             sendError(res, e.httpStatus(), e.what());
           }
         });
}

HttpFrontend::~HttpFrontend() { stop(); }

int HttpFrontend::bind(const std::string& host, int port) {
  int bound = port;
  if (port == 0) {
    bound = http_->bind_to_any_port(host);
    if (bound <= 0) throw Error(fmt::format("cannot listen for HTTP on {}:0", host));
  } else if (!http_->bind_to_port(host, port)) {
    throw Error(fmt::format(
        "cannot listen for HTTP on {}:{} (in use, or not an address of this machine)", host, port));
  }
  return bound;
}

void HttpFrontend::start() {
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

void HttpFrontend::stop() {
  if (thread_.joinable()) {
    http_->stop();
    thread_.join();
  }
}

}  // namespace torchless::serve
