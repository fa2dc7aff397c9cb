# torchless serve (issue 20): a real v2 client against the server on loopback.
# (Included from tests/CMakeLists.txt; CMAKE_CURRENT_LIST_DIR is tests/server.)
#
#   server.gen_models  (fixture) gen_serve_models.py: a model repository written by PyTorch
#   server.rest        rest_test.py (pytest, http.client): metadata, JSON and binary tensors,
#                      strings, several inputs/outputs, outputs equal to `torchless run`'s,
#                      every bad input answered 400/500 while the server goes on, metrics, logs,
#                      batch sizes planned at load and run on another thread (Winograd convs)
#   server.grpc        grpc_test.py (pytest, grpcio; the proto compiled by grpc_tools at test time;
#                      outputs equal `torchless run`'s; Triton's RPCs we do not serve answer
#                      UNIMPLEMENTED)
#   server.lifecycle   lifecycle_test.py: start-up errors and exit codes, readiness while models
#                      load, the thread-budget warning, back-pressure (429), RSS flat over
#                      10,000 requests of batch sizes 1..8, SIGTERM answering every accepted
#                      request (two held by a slow model; six closed-loop clients)
#   server.repository  repository_test.py: Triton's repository API (index, load, unload, reload
#                      of a new version, failed loads) over HTTP and gRPC, request timeouts
#                      (parameter, config default, gRPC deadline), each with its bad inputs
#   server.deploy      deploy_test.py: deploy/ manifests parse (yaml), agree, and their args,
#                      ports and probe paths start and answer on a real server
# Servers pick free ports (port 0) and are killed at the end of each test; ctest's TIMEOUT
# bounds each run.
set(_server_models ${PROJECT_BINARY_DIR}/server_models)
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")
add_test(NAME server.gen_models
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_serve_models.py ${_server_models})
set_tests_properties(server.gen_models PROPERTIES FIXTURES_SETUP server_models TIMEOUT 300
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
foreach(_t rest grpc lifecycle repository deploy)
  add_test(NAME server.${_t}
    COMMAND ${TORCHLESS_ORACLE_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}/${_t}_test.py
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(server.${_t} PROPERTIES FIXTURES_REQUIRED server_models TIMEOUT 300
    ENVIRONMENT "TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless;TORCHLESS_SERVE_MODELS=${_server_models};PYTHONDONTWRITEBYTECODE=1")
endforeach()
