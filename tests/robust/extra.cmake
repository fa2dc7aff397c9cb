# Issue #18: hostile inputs. Each case of hostile_test.py writes its file (billion-laughs
# pickles, deep nestings, absurd sizes) into the build tree and runs `torchless` on it under an
# address-space limit and a timeout (hostile.run_limited), checking the exit code and message.
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")
add_test(NAME robust.hostile
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/hostile_test.py
          ${PROJECT_BINARY_DIR}/bin/torchless ${PROJECT_BINARY_DIR}/robust_hostile)
set_tests_properties(robust.hostile PROPERTIES TIMEOUT 900 LABELS robust
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# Part 8: writes killed mid-way (SIGINT, SIGTERM, SIGKILL) leave no temporary and no half file
# (Note [Atomic writes], src/core/atomic_file.h).
add_test(NAME robust.interrupted_writes
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/interrupted_writes_test.py
          ${PROJECT_BINARY_DIR}/bin/torchless ${PROJECT_BINARY_DIR}/robust_writes)
set_tests_properties(robust.interrupted_writes PROPERTIES TIMEOUT 900 LABELS robust
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# Part 9: libFuzzer targets (tests/robust/fuzz/: the TorchScript frontend, the IR text parser,
# .npy, the type-string parsers; fuzz_onnx by scripts/fuzz.sh only, see below). robust.fuzz_build
# builds them as a project of its own with clang and sanitizers; each then runs for
# TORCHLESS_ROBUST_FUZZ_SECONDS on seeds from the test corpora and generated hostile shapes
# (make_seeds.py, which also adds shared-value pickles to the serialize unpickler's corpus).
# Long runs with figures: scripts/fuzz.sh.
set(TORCHLESS_ROBUST_FUZZ_SECONDS 12 CACHE STRING "Seconds each robust fuzz target runs under ctest")
set(_rfz ${PROJECT_BINARY_DIR}/fuzz_robust)
set(_rfz_targets script ir npy types)
set(_rfz_launcher "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_rfz_launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()
add_test(NAME robust.fuzz_build
  COMMAND sh -c "${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/fuzz -B ${_rfz} -G Ninja \
-DCMAKE_CXX_COMPILER=${TORCHLESS_FUZZ_CXX} -DTORCHLESS_SOURCE_DIR=${PROJECT_SOURCE_DIR} \
${_rfz_launcher} >/dev/null && ${CMAKE_COMMAND} --build ${_rfz} -j2 \
--target fuzz_script fuzz_ir fuzz_npy fuzz_types && ${TORCHLESS_ORACLE_PYTHON} \
${CMAKE_CURRENT_LIST_DIR}/fuzz/make_seeds.py ${PROJECT_SOURCE_DIR} ${_rfz}/seeds && mkdir -p \
${PROJECT_BINARY_DIR}/fuzz/corpus_unpickler && cp ${_rfz}/seeds/unpickler/* \
${PROJECT_BINARY_DIR}/fuzz/corpus_unpickler/")
set_tests_properties(robust.fuzz_build PROPERTIES FIXTURES_SETUP robust_fuzzers TIMEOUT 2400
  LABELS robust ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
# Leak checks are on for every target (an interface's self-typed method schemas no longer leak:
# ~CompilationUnit breaks the cycle).
foreach(fz ${_rfz_targets})
  add_test(NAME robust.fuzz_${fz}
    COMMAND sh -c "mkdir -p ${_rfz}/corpus_${fz} && ASAN_OPTIONS=detect_leaks=1 ${_rfz}/fuzz_${fz} \
-seed=1 -max_total_time=${TORCHLESS_ROBUST_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
-print_final_stats=1 -artifact_prefix=${_rfz}/artifact_${fz}- ${_rfz}/corpus_${fz} ${_rfz}/seeds/${fz}")
  set_tests_properties(robust.fuzz_${fz} PROPERTIES FIXTURES_REQUIRED robust_fuzzers TIMEOUT 300
    LABELS robust)
endforeach()
