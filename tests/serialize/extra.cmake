# serialize tests: the PyTorch oracle fixture and the fuzz targets.
# (Included from tests/CMakeLists.txt; CMAKE_CURRENT_LIST_DIR is tests/serialize.)

# ---- oracle archives written by real PyTorch ---------------------------------------------------
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")
set(_ser_archives ${PROJECT_BINARY_DIR}/serialize_archives)
if(TARGET serialize_test)
  target_link_libraries(serialize_test PRIVATE nlohmann_json::nlohmann_json)
  target_compile_definitions(serialize_test PRIVATE
    TORCHLESS_SERIALIZE_ARCHIVES="${_ser_archives}")
  target_include_directories(serialize_test PRIVATE ${CMAKE_CURRENT_LIST_DIR})
endif()

add_test(NAME serialize_gen_archives
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_archives.py ${_ser_archives}
          ${PROJECT_SOURCE_DIR}/../shared/wild)
set_tests_properties(serialize_gen_archives PROPERTIES
  FIXTURES_SETUP serialize_archives TIMEOUT 600 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# The SerializeOracle suite needs the generator's files: discovery leaves it out (Note [Fixture
# tests] in tests/CMakeLists.txt) and it runs here as one test under the fixture.
if(TARGET serialize_test)
  add_test(NAME serialize_oracle COMMAND serialize_test --gtest_filter=SerializeOracle.*)
  set_tests_properties(serialize_oracle PROPERTIES FIXTURES_REQUIRED serialize_archives
    TIMEOUT 300)
endif()

# ---- fuzz targets (libFuzzer; need clang++ and libclang-rt-14-dev) -----------------------------
# Built on demand by the serialize_fuzz_build test (not part of `all`): core + serialize sources
# compiled with -fsanitize=fuzzer,address,undefined. Each target then runs for a bounded time on
# seeds the oracle fixture writes (data.pkl files and small archives from real PyTorch) and on
# fuzz/regressions/TARGET (every input a fuzz run ever failed on). The seed is fixed so that CI
# replays the same mutations each run; open-ended random runs are scripts/fuzz.sh's job.
find_program(TORCHLESS_FUZZ_CXX NAMES clang++ clang++-14)
set(TORCHLESS_FUZZ_SECONDS 20 CACHE STRING "Seconds each serialize fuzz target runs under ctest")
set(_fz_ok FALSE)
if(TORCHLESS_FUZZ_CXX)
  execute_process(COMMAND ${TORCHLESS_FUZZ_CXX} -print-runtime-dir
                  OUTPUT_VARIABLE _fz_rt OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  file(GLOB _fz_lib_rt "${_fz_rt}/libclang_rt.fuzzer-*.a")
  if(_fz_lib_rt)
    set(_fz_ok TRUE)
  endif()
endif()
if(_fz_ok)
  # Only what the reader needs: the writer and the printer depend on ir/ and are not fuzzed here.
  file(GLOB _fz_lib CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/core/*.cpp)
  list(APPEND _fz_lib ${PROJECT_SOURCE_DIR}/src/serialize/zip_reader.cpp
       ${PROJECT_SOURCE_DIR}/src/serialize/unpickler.cpp
       ${PROJECT_SOURCE_DIR}/src/serialize/archive_reader.cpp)
  set(_fz_dir ${PROJECT_BINARY_DIR}/fuzz)
  set(_fz_outputs)
  foreach(fz unpickler archive)
    set(_out ${_fz_dir}/fuzz_${fz})
    add_custom_command(OUTPUT ${_out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_fz_dir}
      COMMAND ${TORCHLESS_FUZZ_CXX} -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
              -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR}/src ${_fz_lib}
              ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_${fz}.cpp -lfmt -lzip -ldeflate -lz -o ${_out}
      DEPENDS ${_fz_lib} ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_${fz}.cpp
      COMMENT "Building libFuzzer target fuzz_${fz}" VERBATIM)
    list(APPEND _fz_outputs ${_out})
  endforeach()
  add_custom_target(serialize_fuzzers DEPENDS ${_fz_outputs})
  add_test(NAME serialize_fuzz_build
    COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target serialize_fuzzers)
  set_tests_properties(serialize_fuzz_build PROPERTIES FIXTURES_SETUP serialize_fuzzers
    TIMEOUT 1200)
  foreach(fz unpickler archive)
    add_test(NAME serialize_fuzz_${fz}
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
              ${_fz_dir}/fuzz_${fz} -seed=1 -max_total_time=${TORCHLESS_FUZZ_SECONDS} -timeout=10
              -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
              -artifact_prefix=${_fz_dir}/artifact_${fz}-
              ${_fz_dir}/corpus_${fz} ${_ser_archives}/fuzz_seeds/${fz}
              ${CMAKE_CURRENT_LIST_DIR}/fuzz/regressions/${fz})
    set_tests_properties(serialize_fuzz_${fz} PROPERTIES
      FIXTURES_REQUIRED "serialize_fuzzers;serialize_archives"
      TIMEOUT 300)
  endforeach()
  file(MAKE_DIRECTORY ${_fz_dir}/corpus_unpickler ${_fz_dir}/corpus_archive)
else()
  message(FATAL_ERROR "the serialize fuzz tests need clang++ and libFuzzer (libclang-rt-14-dev); "
                      "scripts/setup.sh installs them")
endif()

# ---- TorchBind objects: mobile-optimized and quantized archives (gen_torchbind.py) -------------
# torchbind_test.cpp loads and runs models, so the serialize tests link the whole API.
set(_ser_torchbind ${PROJECT_BINARY_DIR}/serialize_torchbind)
if(TARGET serialize_test)
  target_link_libraries(serialize_test PRIVATE torchless_api)
endif()
add_test(NAME serialize_gen_torchbind
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_torchbind.py ${_ser_torchbind})
set_tests_properties(serialize_gen_torchbind PROPERTIES
  FIXTURES_SETUP serialize_torchbind TIMEOUT 600 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
if(TARGET serialize_test)
  add_test(NAME serialize_torchbind_oracle COMMAND serialize_test --gtest_filter=TorchBindOracle.*)
  set_tests_properties(serialize_torchbind_oracle PROPERTIES FIXTURES_REQUIRED serialize_torchbind
    TIMEOUT 300)
endif()

# ---- memory: peak RSS of loading a 330 MB archive (gen_big_model.py, load_memory_test.cpp) -----
set(_ser_big ${PROJECT_BINARY_DIR}/serialize_big)
add_test(NAME serialize_gen_big_model
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_big_model.py ${_ser_big})
set_tests_properties(serialize_gen_big_model PROPERTIES
  FIXTURES_SETUP serialize_big_model TIMEOUT 900 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
if(TARGET serialize_test)
  add_test(NAME serialize_load_memory
    COMMAND serialize_test --gtest_filter=LoadMemoryOracle.PeakRss*)
  set_tests_properties(serialize_load_memory PROPERTIES FIXTURES_REQUIRED serialize_big_model
    TIMEOUT 600)
endif()
