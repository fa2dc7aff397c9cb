# The ONNX export oracle: gen_export_cases.py writes PyTorch's graphs, parameters, inputs and
# outputs into the build dir; convert_export_oracle runs the ExportOracle suite under that
# fixture (Note [Fixture tests] in tests/CMakeLists.txt), with ONNX Runtime through node.
if(TARGET convert_test)
  target_link_libraries(convert_test PRIVATE nlohmann_json::nlohmann_json)
  add_test(NAME convert_gen_export_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/convert/gen_export_cases.py
                   ${PROJECT_BINARY_DIR}/convert_export_cases)
  set_tests_properties(convert_gen_export_cases PROPERTIES FIXTURES_SETUP convert_export_cases
                       TIMEOUT 1200 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME convert_export_oracle
           COMMAND convert_test --gtest_filter=Cases/ExportOracle.*:CliExportOracle.*:ExternalDataOracle.*:WildExportOracle.*)
  set_tests_properties(convert_export_oracle PROPERTIES FIXTURES_REQUIRED convert_export_cases
                       TIMEOUT 1200 ENVIRONMENT "TORCHLESS_BIN=$<TARGET_FILE:torchless>")
  # Issue 14's coverage corpus: its own fixture, so that it generates in parallel with the above.
  add_test(NAME convert_gen_export_coverage_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/convert/gen_export_coverage_cases.py
                   ${PROJECT_BINARY_DIR}/convert_export_coverage_cases)
  set_tests_properties(convert_gen_export_coverage_cases PROPERTIES FIXTURES_SETUP convert_export_coverage_cases
                       TIMEOUT 600 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME convert_export_coverage_oracle
           COMMAND convert_test --gtest_filter=Coverage/CoverageExportOracle.*:CoverageExportErrorOracle.*:SequenceOutputOracle.*:DataSizedOutputOracle.*)
  set_tests_properties(convert_export_coverage_oracle PROPERTIES FIXTURES_REQUIRED convert_export_coverage_cases
                       TIMEOUT 900 ENVIRONMENT "TORCHLESS_BIN=$<TARGET_FILE:torchless>")
  # Module state (prim::SetAttr) as inputs and outputs: scripted models and the streaming
  # archives of ../shared/wild, each run twice in ONNX Runtime against two PyTorch calls.
  add_test(NAME convert_gen_export_state_cases
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/convert/gen_export_state_cases.py
                   ${PROJECT_BINARY_DIR}/convert_export_state_cases)
  set_tests_properties(convert_gen_export_state_cases PROPERTIES FIXTURES_SETUP convert_export_state_cases
                       TIMEOUT 300 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME convert_export_state_oracle
           COMMAND convert_test --gtest_filter=StateExportOracle.*)
  set_tests_properties(convert_export_state_oracle PROPERTIES FIXTURES_REQUIRED convert_export_state_cases
                       TIMEOUT 600 ENVIRONMENT "TORCHLESS_BIN=$<TARGET_FILE:torchless>")
  # Issue 14 part 8: the cases of both corpora with dynamic axes, exported at two shapes.
  add_test(NAME convert_export_dynamic_oracle
           COMMAND convert_test --gtest_filter=Dynamic/DynamicExportOracle.*)
  set_tests_properties(convert_export_dynamic_oracle PROPERTIES
                       FIXTURES_REQUIRED "convert_export_cases;convert_export_coverage_cases" TIMEOUT 900)
endif()
# Issue 14 part 9: the ATen operators torch.onnx exports against `torchless ops --onnx`; the
# README's list of gaps must be exact.
add_test(NAME convert_onnx_coverage
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/convert/check_onnx_coverage.py
                 $<TARGET_FILE:torchless> ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(convert_onnx_coverage PROPERTIES TIMEOUT 120 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
