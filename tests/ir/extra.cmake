# IR layer extras (included from tests/CMakeLists.txt after the per-layer test binaries).

# The schema oracle: every schema the installed PyTorch knows must parse and reprint
# byte-identically (tests/ir/schema_oracle.py drives schema_roundtrip).
add_executable(schema_roundtrip ${CMAKE_CURRENT_SOURCE_DIR}/ir/schema_roundtrip_main.cpp)
target_link_libraries(schema_roundtrip PRIVATE torchless_ir)
add_test(NAME ir.schema_roundtrip
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ir/schema_oracle.py
                 --roundtrip $<TARGET_FILE:schema_roundtrip>
                 --torchless ${PROJECT_BINARY_DIR}/bin/torchless)
