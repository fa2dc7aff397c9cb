// A compiled KServe v2 client for bench/serve_bench.py's overhead part: the time a request takes
// seen from a client that costs next to nothing itself (no Python), over REST (cpp-httplib's
// Client, one keep-alive connection, the binary tensor extension) or gRPC (gRPC++'s generic stub
// on one channel, the ModelInferRequest serialized beforehand by Python's protobuf, so no proto
// is compiled here).
//
//   serve_client http PORT PATH REQUEST_FILE HEADER_LENGTH WARMUP COUNT ANSWER_FILE
//   serve_client grpc PORT -    REQUEST_FILE -             WARMUP COUNT ANSWER_FILE
//
// Sends the bytes of REQUEST_FILE WARMUP + COUNT times, one after the other; prints the COUNT
// timed requests' wall times in ms, one a line, and writes the last answer's body (REST: the
// whole body; gRPC: the serialized ModelInferResponse) to ANSWER_FILE for the caller to check.
// Exits 1 with a message on any failed request.
//
// Built by serve_bench.py: g++ -O2 -std=c++17 serve_client.cpp $(pkg-config --cflags --libs
// cpp-httplib grpc++).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string readFile(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "serve_client: cannot read %s\n", path);
    std::exit(1);
  }
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void writeFile(const char* path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "serve_client: %s\n", what.c_str());
  std::exit(1);
}

// One REST request on the client's keep-alive connection; the answer's body.
std::string httpInfer(httplib::Client& client, const std::string& path, const std::string& body,
                      const httplib::Headers& headers) {
  auto res = client.Post(path, headers, body, "application/octet-stream");
  if (!res) fail("POST " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200)
    fail("POST " + path + ": status " + std::to_string(res->status) + ": " + res->body);
  return std::move(res->body);
}

// One gRPC ModelInfer of the serialized request; the serialized answer.
std::string grpcInfer(grpc::GenericStub& stub, grpc::CompletionQueue& cq,
                      const std::string& request) {
  grpc::Slice slice(request.data(), request.size());
  const grpc::ByteBuffer requestBuffer(&slice, 1);
  grpc::ClientContext context;
  auto call = stub.PrepareUnaryCall(&context, "/inference.GRPCInferenceService/ModelInfer",
                                    requestBuffer, &cq);
  call->StartCall();
  grpc::ByteBuffer answer;
  grpc::Status status;
  call->Finish(&answer, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  if (!cq.Next(&tag, &ok) || !ok) fail("ModelInfer: the call did not complete");
  if (!status.ok()) fail("ModelInfer: " + status.error_message());
  std::vector<grpc::Slice> slices;
  if (!answer.Dump(&slices).ok()) fail("ModelInfer: cannot read the answer");
  std::string out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr,
                 "usage: serve_client http|grpc PORT PATH REQUEST_FILE HEADER_LENGTH WARMUP COUNT "
                 "ANSWER_FILE\n");
    return 2;
  }
  const std::string kind = argv[1];
  const int port = std::stoi(argv[2]);
  const std::string path = argv[3];
  const std::string request = readFile(argv[4]);
  const int warmup = std::stoi(argv[6]), count = std::stoi(argv[7]);
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(count));
  std::string answer;
  auto timed = [&](auto&& call) {
    for (int i = 0; i < warmup + count; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      answer = call();
      const std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
      if (i >= warmup) ms.push_back(dt.count());
    }
  };
  if (kind == "http") {
    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    client.set_read_timeout(120);
    const httplib::Headers headers{{"Inference-Header-Content-Length", argv[5]}};
    timed([&] { return httpInfer(client, path, request, headers); });
  } else if (kind == "grpc") {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                             grpc::InsecureChannelCredentials(), args);
    grpc::GenericStub stub(channel);
    grpc::CompletionQueue cq;
    timed([&] { return grpcInfer(stub, cq, request); });
  } else {
    fail("unknown kind '" + kind + "' (http or grpc)");
  }
  writeFile(argv[8], answer);
  for (double v : ms) std::printf("%.6f\n", v);
  return 0;
}
