# SDK tests (issue 19): the installed package used from an outside project, the C API from
# Python ctypes, and the libtorch-compatible headers against libtorch itself.
# (Included from tests/CMakeLists.txt; CMAKE_CURRENT_LIST_DIR is tests/sdk.)
#
#   sdk.install         (fixture) cmake --install into build/sdk_install
#   sdk.headers_clean   the installed headers, and every header in include/torchless, name no fmt
#                       and no internal (src/) header
#   sdk.cli_uses_library  the installed torchless CLI runs on the installed libtorchless.so
#   sdk.compile_fails   what the compat headers lack does not compile (compile_fails.py)
#   sdk.gen_models      (fixture) the archives, written by PyTorch (gen_models.py)
#   sdk.project_build   (fixture) configures and builds tests/sdk/project against the installed
#                       tree: a C program, a static C++ one, and every programs/*.cpp twice,
#                       against torchless::compat and against libtorch (Debian's libtorch-dev).
#                       Its build directory is kept, so ctest rebuilds only what changed.
#   sdk.c_smoke, sdk.static_smoke, sdk.pkg_config   the installed library used three ways
#   sdk.compat.<prog>   both builds of a program on the same archive: same stdout bytes, same
#                       exit code (compare.py); sdk.compat.random_no_avx: random with
#                       ATEN_CPU_CAPABILITY=default
#   sdk.c_api           c_api_test.py (pytest): the C API through ctypes
#   sdk.deb             cpack -G DEB, and what the package holds
set(_sdk_install ${PROJECT_BINARY_DIR}/sdk_install)
set(_sdk_models ${PROJECT_BINARY_DIR}/sdk_models)
set(_sdk_project ${PROJECT_BINARY_DIR}/sdk_project)
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")

add_test(NAME sdk.install COMMAND ${CMAKE_COMMAND} --install ${PROJECT_BINARY_DIR} --prefix ${_sdk_install})
set_tests_properties(sdk.install PROPERTIES FIXTURES_SETUP sdk_install TIMEOUT 300)

add_test(NAME sdk.headers_clean COMMAND sh -c
  "! grep -rnE '#include [<\"](fmt/|core/|api/|ir/|runtime/|ops/|convert/|serialize/|frontend/|passes/)' \
     '${_sdk_install}/include/torchless' '${PROJECT_SOURCE_DIR}/include/torchless'")
set_tests_properties(sdk.headers_clean PROPERTIES FIXTURES_REQUIRED sdk_install)

# The installed CLI runs on the installed library (the launcher opens libtorchless_cli.so, whose
# RUNPATH $ORIGIN finds libtorchless.so), nothing else (cli_uses_library.sh).
add_test(NAME sdk.cli_uses_library COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_uses_library.sh ${_sdk_install})
set_tests_properties(sdk.cli_uses_library PROPERTIES FIXTURES_REQUIRED sdk_install)

# What the compat headers lack fails to compile (compile_fails.py), never at run time.
add_test(NAME sdk.compile_fails COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compile_fails.py
         ${CMAKE_CXX_COMPILER} ${_sdk_install})
set_tests_properties(sdk.compile_fails PROPERTIES FIXTURES_REQUIRED sdk_install TIMEOUT 600
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

add_test(NAME sdk.gen_models COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_models.py ${_sdk_models})
set_tests_properties(sdk.gen_models PROPERTIES FIXTURES_SETUP sdk_models TIMEOUT 900
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

set(_launcher "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()
add_test(NAME sdk.project_build COMMAND sh -c
  "'${CMAKE_COMMAND}' -S '${CMAKE_CURRENT_LIST_DIR}/project' -B '${_sdk_project}' -G Ninja -DCMAKE_BUILD_TYPE=Release \
   -DCMAKE_PREFIX_PATH='${_sdk_install}' ${_launcher} && '${CMAKE_COMMAND}' --build '${_sdk_project}' -j2")
set_tests_properties(sdk.project_build PROPERTIES FIXTURES_SETUP sdk_project FIXTURES_REQUIRED sdk_install
  TIMEOUT 1800)

add_test(NAME sdk.c_smoke COMMAND ${_sdk_project}/c_smoke ${_sdk_models}/classifier.pt)
add_test(NAME sdk.static_smoke COMMAND ${_sdk_project}/static_smoke ${_sdk_models}/classifier.pt)
set_tests_properties(sdk.c_smoke sdk.static_smoke PROPERTIES FIXTURES_REQUIRED "sdk_project;sdk_models")
add_test(NAME sdk.pkg_config COMMAND sh -c
  "g++ -std=c++17 -o '${PROJECT_BINARY_DIR}/sdk_pkg_config_smoke' -x c '${CMAKE_CURRENT_LIST_DIR}/project/c_smoke.c' \
   $(pkg-config --cflags --libs torchless) -Wl,-rpath,$(pkg-config --variable=libdir torchless) \
   && '${PROJECT_BINARY_DIR}/sdk_pkg_config_smoke'")
set_tests_properties(sdk.pkg_config PROPERTIES FIXTURES_REQUIRED sdk_install
  ENVIRONMENT "PKG_CONFIG_PATH=${_sdk_install}/lib/pkgconfig")

# Each program and the archive it is given.
set(_sdk_programs
  tutorial=resnet18_traced.pt classify_topk=classifier.pt from_blob_image=classifier.pt
  outputs=multi_out.pt bert_tokens=bert_like.pt tuple_input=tuple_in.pt errors=.
  timing=classifier.pt yolo_nms=detector.pt printing=. random=. indexing=. inplace=. module_api=classifier.pt
  batching=classifier.pt)
foreach(entry ${_sdk_programs})
  string(REPLACE "=" ";" _pair ${entry})
  list(GET _pair 0 _prog)
  list(GET _pair 1 _arg)
  add_test(NAME sdk.compat.${_prog}
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare.py
            ${_sdk_project}/${_prog}_libtorch ${_sdk_project}/${_prog}_torchless ${_sdk_models}/${_arg})
  set_tests_properties(sdk.compat.${_prog} PROPERTIES FIXTURES_REQUIRED "sdk_project;sdk_models" TIMEOUT 600
    ENVIRONMENT "OMP_NUM_THREADS=1")
endforeach()

# PyTorch computes normal_ differently per CPU capability (Note [CPU capability of normal_] in
# src/ops/random.h); both binaries honour ATEN_CPU_CAPABILITY, so the no-AVX code is checked too.
add_test(NAME sdk.compat.random_no_avx
  COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare.py
          ${_sdk_project}/random_libtorch ${_sdk_project}/random_torchless ${_sdk_models})
set_tests_properties(sdk.compat.random_no_avx PROPERTIES FIXTURES_REQUIRED "sdk_project;sdk_models" TIMEOUT 600
  ENVIRONMENT "OMP_NUM_THREADS=1;ATEN_CPU_CAPABILITY=default")

add_test(NAME sdk.c_api COMMAND ${TORCHLESS_ORACLE_PYTHON} -m pytest -q -p no:cacheprovider
         ${CMAKE_CURRENT_LIST_DIR}/c_api_test.py)
set_tests_properties(sdk.c_api PROPERTIES FIXTURES_REQUIRED sdk_models TIMEOUT 600
  ENVIRONMENT "TORCHLESS_LIB=$<TARGET_FILE:torchless_shared>;TORCHLESS_SDK_MODELS=${_sdk_models};PYTHONDONTWRITEBYTECODE=1")

# The .deb (CPack): built from the same install rules; it must hold the library, the headers,
# the CMake package and the CLI.
add_test(NAME sdk.deb COMMAND sh -c
  "cd '${PROJECT_BINARY_DIR}' && '${CMAKE_CPACK_COMMAND}' -G DEB -B '${PROJECT_BINARY_DIR}/sdk_deb' >/dev/null \
   && dpkg-deb --contents '${PROJECT_BINARY_DIR}'/sdk_deb/torchless*.deb > '${PROJECT_BINARY_DIR}/sdk_deb/contents.txt' \
   && for f in usr/lib/libtorchless.so usr/lib/libtorchless.a usr/include/torchless/c_api.h \
        usr/include/torchless/compat/torch/script.h usr/include/torchless/cxx/ops_generated.h \
        usr/lib/cmake/torchless/torchlessConfig.cmake usr/lib/pkgconfig/torchless.pc usr/bin/torchless \
        usr/lib/libtorchless_cli.so; do \
        grep -q \"\\./$f\\b\" '${PROJECT_BINARY_DIR}/sdk_deb/contents.txt' || { echo \"missing $f\"; exit 1; }; done")
set_tests_properties(sdk.deb PROPERTIES TIMEOUT 900)
