# Passes layer extras (included from tests/CMakeLists.txt after the per-layer test binaries).
#
# FileCheck tests: each tests/passes/filecheck/<name>.ir names its passes on a line
# `# RUN-PASSES: pass1 pass2 ...`; the test runs `torchless graph <name>.ir --pass pass1 ...`
# and pipes the printed graph into `FileCheck <name>.ir`, which checks it against the
# file's `# CHECK` lines (LLVM's FileCheck, Debian's llvm-14-tools).
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
