# Passes layer extras (included from tests/CMakeLists.txt after the per-layer test binaries).
#
# FileCheck tests: each tests/passes/filecheck/<name>.ir names its passes on a line
# `# RUN-PASSES: pass1 pass2 ...`; the test runs `torchless graph <name>.ir --pass pass1 ...`
# and pipes the printed graph into `FileCheck <name>.ir`, which checks it against the
# file's `# CHECK` lines (LLVM's FileCheck, Debian's llvm-14-tools).
# ---- freeze oracle (Note [Fixture tests]) ------------------------------------------------------
# gen_freeze_models.py writes scripted resnet18, mobilenet_v2 and small modules with PyTorch's
# eager, torch.jit.freeze and optimize_for_inference outputs; passes_freeze_test (it needs the
# api layer, so it is its own binary) compares torchless::freeze with them, checks that the
# saved frozen archives load in torch.jit.load (check_frozen_loads.py), and runs the CLI.
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")
set(_freeze_models ${PROJECT_BINARY_DIR}/passes_freeze_models)
add_test(NAME passes_gen_freeze_models
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_freeze_models.py ${_freeze_models})
set_tests_properties(passes_gen_freeze_models PROPERTIES
  FIXTURES_SETUP passes_freeze_models TIMEOUT 900 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
file(GLOB _freeze_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/freeze/*_test.cpp)
add_executable(passes_freeze_test ${_freeze_srcs})
target_link_libraries(passes_freeze_test PRIVATE torchless_api GTest::gtest GTest::gtest_main)
target_compile_definitions(passes_freeze_test PRIVATE
  TORCHLESS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  TORCHLESS_BINARY_DIR="${PROJECT_BINARY_DIR}"
  TORCHLESS_FREEZE_MODELS="${_freeze_models}")
add_dependencies(passes_freeze_test torchless)
add_test(NAME passes_freeze_oracle COMMAND passes_freeze_test --gtest_filter=FreezeOracle.*)
set_tests_properties(passes_freeze_oracle PROPERTIES FIXTURES_REQUIRED passes_freeze_models
  TIMEOUT 900 ENVIRONMENT "TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless;PYTHONDONTWRITEBYTECODE=1")

find_program(TORCHLESS_FILECHECK FileCheck PATHS /usr/lib/llvm-14/bin NO_DEFAULT_PATH)
find_program(TORCHLESS_FILECHECK FileCheck)
if(NOT TORCHLESS_FILECHECK)
  message(STATUS "FileCheck not found (apt install llvm-14-tools): passes.filecheck.* tests skipped")
  return()
endif()
file(GLOB _filecheck_cases CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/passes/filecheck/*.ir)
foreach(_case ${_filecheck_cases})
  get_filename_component(_name ${_case} NAME_WE)
  file(STRINGS ${_case} _run REGEX "^# RUN-PASSES:")
  string(REGEX REPLACE "^# RUN-PASSES:[ ]*" "" _run "${_run}")
  separate_arguments(_passes UNIX_COMMAND "${_run}")
  set(_args "")
  foreach(_p ${_passes})
    string(APPEND _args " --pass ${_p}")
  endforeach()
  add_test(NAME passes.filecheck.${_name}
           COMMAND bash -c "set -o pipefail; \"$<TARGET_FILE:torchless>\" graph \"${_case}\"${_args} | \"${TORCHLESS_FILECHECK}\" \"${_case}\"")
endforeach()
