# The oracles GraphOracle runs (graph_oracle_test.cpp), one generator each: the generator
# writes PyTorch's graphs, inputs and outputs into the build dir (FIXTURES_SETUP), then
# runtime_<name>_oracle runs GraphOracle on the directory TORCHLESS_GRAPH_CASES_DIR names
# (FIXTURES_REQUIRED). The discovered GraphOracle.AllCases runs too and skips while the files
# are missing.
#   graph:  gen_graph_cases.py, scripted and traced functions and models (the interpreter)
#   kernel: gen_kernel_cases.py, scatter / index / search / unique / einsum / embedding_bag /
#           torchvision ops and packed-sequence RNNs
#   ops:    gen_op_cases.py, keyed by schema: PyTorch traces each op and records the schemas
#           its nodes call; each of our nodes must match the same op-table entry, then the
#           graph runs through the kernel registry
function(torchless_graph_oracle name generator timeout)
  set(_dir ${PROJECT_BINARY_DIR}/runtime_${name}_cases)
  add_test(NAME runtime_gen_${name}_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/runtime/${generator} ${_dir})
  set_tests_properties(runtime_gen_${name}_cases PROPERTIES FIXTURES_SETUP runtime_${name}_cases
                       TIMEOUT ${timeout} ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME runtime_${name}_oracle COMMAND runtime_test --gtest_filter=GraphOracle.*)
  set_tests_properties(runtime_${name}_oracle PROPERTIES FIXTURES_REQUIRED runtime_${name}_cases
                       TIMEOUT ${timeout} ENVIRONMENT "TORCHLESS_GRAPH_CASES_DIR=${_dir}")
endfunction()

if(TARGET runtime_test)
  find_package(nlohmann_json REQUIRED)
  target_link_libraries(runtime_test PRIVATE nlohmann_json::nlohmann_json)
  torchless_graph_oracle(graph gen_graph_cases.py 600)
  torchless_graph_oracle(kernel gen_kernel_cases.py 600)
  torchless_graph_oracle(ops gen_op_cases.py 300)
endif()
