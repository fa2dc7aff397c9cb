# api tests: end-to-end oracles (load + run against PyTorch's numbers) and the CLI contract.
# (Included from tests/CMakeLists.txt; CMAKE_CURRENT_LIST_DIR is tests/api.)
#
#   api.gen_models  (fixture) builds small scripted and traced models with real PyTorch
#                   (gen_models.py): archives, inputs, outputs, parameters and buffers
#   api.oracle      the *Oracle suites of api_test: the generated models, ../shared/wild and
#                   examples/tiny_cnn.pt, each either passing or failing with its stated error
#
# Everything generated goes to the build tree.
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")
set(_api_models ${PROJECT_BINARY_DIR}/api_models)
if(TARGET api_test)
  target_link_libraries(api_test PRIVATE nlohmann_json::nlohmann_json)
  target_compile_definitions(api_test PRIVATE TORCHLESS_API_MODELS="${_api_models}")
  add_dependencies(api_test torchless)  # the CLI tests run the binary

  add_test(NAME api.gen_models
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_models.py ${_api_models})
  set_tests_properties(api.gen_models PROPERTIES
    FIXTURES_SETUP api_models TIMEOUT 900
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

  add_test(NAME api.oracle COMMAND api_test --gtest_filter=*Oracle.*:*Oracle/*)
  set_tests_properties(api.oracle PROPERTIES
    FIXTURES_REQUIRED api_models TIMEOUT 900
    ENVIRONMENT "TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless")
endif()
