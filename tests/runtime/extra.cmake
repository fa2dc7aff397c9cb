# The interpreter oracle: gen_graph_cases.py writes PyTorch's graphs, inputs and outputs into
# the build dir, then runtime_graph_oracle runs GraphOracle against them (FIXTURES_SETUP /
# FIXTURES_REQUIRED). The discovered GraphOracle.AllCases runs too and skips while the files
# are missing.
if(TARGET runtime_test)
  find_package(nlohmann_json REQUIRED)
  target_link_libraries(runtime_test PRIVATE nlohmann_json::nlohmann_json)
  add_test(NAME runtime_gen_graph_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/runtime/gen_graph_cases.py
                   ${PROJECT_BINARY_DIR}/runtime_graph_cases)
  set_tests_properties(runtime_gen_graph_cases PROPERTIES FIXTURES_SETUP runtime_graph_cases TIMEOUT 600
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME runtime_graph_oracle COMMAND runtime_test --gtest_filter=GraphOracle.*)
  set_tests_properties(runtime_graph_oracle PROPERTIES FIXTURES_REQUIRED runtime_graph_cases TIMEOUT 600)
endif()

# Kernel oracle for scatter / index / search / unique / einsum / embedding_bag / torchvision ops
# and packed-sequence RNNs: gen_kernel_cases.py writes cases in the same format, GraphOracle
# runs them from the directory TORCHLESS_GRAPH_CASES_DIR names.
if(TARGET runtime_test)
  add_test(NAME runtime_gen_kernel_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/runtime/gen_kernel_cases.py
                   ${PROJECT_BINARY_DIR}/runtime_kernel_cases)
  set_tests_properties(runtime_gen_kernel_cases PROPERTIES FIXTURES_SETUP runtime_kernel_cases TIMEOUT 600
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME runtime_kernel_oracle COMMAND runtime_test --gtest_filter=GraphOracle.*)
  set_tests_properties(runtime_kernel_oracle PROPERTIES FIXTURES_REQUIRED runtime_kernel_cases TIMEOUT 600
                       ENVIRONMENT "TORCHLESS_GRAPH_CASES_DIR=${PROJECT_BINARY_DIR}/runtime_kernel_cases")
endif()

# The ops oracle, keyed by schema: gen_op_cases.py traces each op with PyTorch and records the
# schemas its nodes call; GraphOracle checks each node matches the same op-table entry, then
# runs the graph through the kernel registry (graph_oracle_test.cpp).
if(TARGET runtime_test)
  add_test(NAME runtime_gen_op_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/runtime/gen_op_cases.py
                   ${PROJECT_BINARY_DIR}/ops_cases)
  set_tests_properties(runtime_gen_op_cases PROPERTIES FIXTURES_SETUP ops_cases TIMEOUT 300
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME runtime_ops_oracle COMMAND runtime_test --gtest_filter=GraphOracle.*)
  set_tests_properties(runtime_ops_oracle PROPERTIES FIXTURES_REQUIRED ops_cases TIMEOUT 300
                       ENVIRONMENT "TORCHLESS_GRAPH_CASES_DIR=${PROJECT_BINARY_DIR}/ops_cases")
endif()
