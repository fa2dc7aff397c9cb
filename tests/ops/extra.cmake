# The ops oracle: gen_op_cases.py writes PyTorch's inputs/outputs into the build dir, then
# ops_oracle runs the OpsOracle gtest against them (FIXTURES_SETUP / FIXTURES_REQUIRED).
# The discovered OpsOracle.AllCases runs too and skips while the files are missing.
if(TARGET ops_test)
  find_package(nlohmann_json REQUIRED)
  target_link_libraries(ops_test PRIVATE nlohmann_json::nlohmann_json)
  add_test(NAME ops_gen_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ops/gen_op_cases.py ${PROJECT_BINARY_DIR}/ops_cases)
  set_tests_properties(ops_gen_cases PROPERTIES FIXTURES_SETUP ops_cases TIMEOUT 300
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME ops_oracle COMMAND ops_test --gtest_filter=OpsOracle.*)
  set_tests_properties(ops_oracle PROPERTIES FIXTURES_REQUIRED ops_cases TIMEOUT 300)
endif()

# The op table's coverage (kernel x ONNX x engine per schema) is checked in as
# tests/ops/op_coverage.tsv (scripts/op_coverage.sh writes it) and must equal `ops --table`.
add_test(NAME ops.coverage_file
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ops/check_op_coverage.py
                 ${PROJECT_BINARY_DIR}/bin/torchless ${CMAKE_CURRENT_SOURCE_DIR}/ops/op_coverage.tsv)
set_tests_properties(ops.coverage_file PROPERTIES TIMEOUT 120)
