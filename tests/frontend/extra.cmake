# Frontend corpus: the code/ records of real archives, parsed by frontend_test.
#
#   frontend_corpus_wild      (fixture) extracts code/*.py of ../shared/wild/*/model.pt
#   frontend_corpus_generate  (fixture) builds models with PyTorch (gen_corpus.py) and extracts
#                             their code/*.py
#   frontend_corpus           runs the frontend_corpus.* gtest cases over both
#
# Everything is written under the build tree; nothing generated is committed.
set(TORCHLESS_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with torch and torchvision, for generating test archives")
set(_fe_corpus ${PROJECT_BINARY_DIR}/frontend_corpus)
file(GLOB _fe_wild_archives ${PROJECT_SOURCE_DIR}/../shared/wild/*/model.pt)

add_test(NAME frontend_corpus_wild
         COMMAND ${TORCHLESS_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/frontend/extract_code.py
                 ${_fe_corpus}/wild ${_fe_wild_archives})
set_tests_properties(frontend_corpus_wild PROPERTIES FIXTURES_SETUP frontend_corpus)

add_test(NAME frontend_corpus_generate
         COMMAND ${TORCHLESS_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/frontend/gen_corpus.py
                 ${_fe_corpus})
set_tests_properties(frontend_corpus_generate PROPERTIES
  FIXTURES_SETUP frontend_corpus
  TIMEOUT 900
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

add_test(NAME frontend_corpus
         COMMAND frontend_test --gtest_filter=frontend_corpus.*)
set_tests_properties(frontend_corpus PROPERTIES
  FIXTURES_REQUIRED frontend_corpus
  ENVIRONMENT "TORCHLESS_FRONTEND_CORPUS=${_fe_corpus}")

# `torchless script` against PyTorch scripting the same sources (tests/frontend/script_cases/):
# archives torch.jit.load accepts with PyTorch's outputs, and the compile errors' messages.
add_test(NAME frontend.script_cli
         COMMAND ${TORCHLESS_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/frontend/check_script_cli.py
                 $<TARGET_FILE:torchless> ${PROJECT_BINARY_DIR}/frontend_script_cli)
set_tests_properties(frontend.script_cli PROPERTIES
  TIMEOUT 300
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
