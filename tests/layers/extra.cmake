# The layer check (Note [Layer check] in scripts/check_layers.py): every #include of src/ and
# include/ against the README's layer table, which must agree with design.md where that is
# checked out beside the repository; and the check's own test on planted includes.
set(_design_doc ${PROJECT_SOURCE_DIR}/../shared/docs/design.md)
set(_compare)
if(EXISTS ${_design_doc})
  set(_compare --compare ${_design_doc})
endif()
add_test(NAME layers.includes
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/check_layers.py
                 --design ${PROJECT_SOURCE_DIR}/README.md --root ${PROJECT_SOURCE_DIR}
                 --known-edges ${_compare})
add_test(NAME layers.check_fails_on_bad_includes
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers_test.py)
