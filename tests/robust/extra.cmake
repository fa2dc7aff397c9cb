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
