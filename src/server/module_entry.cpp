// The entry point of libtorchless_server.so for the torchless CLI, which opens the library
// only when `serve` runs (Note [Server loaded on use] in tools/cmd_serve.cpp).
#include "server/server.h"

/// Runs serve::runServer(*options); what it throws passes through (torchless::Error).
extern "C" __attribute__((visibility("default"))) int torchless_serve_run(
    const torchless::serve::ServeOptions* options) {
  return torchless::serve::runServer(*options);
}
