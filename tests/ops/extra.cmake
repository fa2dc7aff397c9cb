# The op table's coverage (kernel x ONNX x engine per schema) is checked in as
# tests/ops/op_coverage.tsv (scripts/op_coverage.sh writes it) and must equal `ops --table`.
add_test(NAME ops.coverage_file
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ops/check_op_coverage.py
                 ${PROJECT_BINARY_DIR}/bin/torchless ${CMAKE_CURRENT_SOURCE_DIR}/ops/op_coverage.tsv)
set_tests_properties(ops.coverage_file PROPERTIES TIMEOUT 120)
