# fp8ref_cpu_tests: a target that builds every program of the project except those no test with
# label cpu and without label exhaustive runs, so .ci/run's sanitizer job (ctest -L cpu -LE
# exhaustive) compiles only what it runs. It is a deny list on purpose: a new program is built
# unless marked, so a forgotten mark costs build time, never a silently missing test.
# Included by the top-level CMakeLists.txt; the target is made at its end.

# fp8ref_not_cpu_test_programs(<targets>): exhaustive-only suites, benchmark and table-printing
# programs, GPU suites. fp8ref_add_proptest (proptests/CMakeLists.txt) marks its own.
function(fp8ref_not_cpu_test_programs)
  set_property(GLOBAL APPEND PROPERTY FP8REF_NOT_CPU_TEST_PROGRAMS ${ARGN})
endfunction()

function(_fp8ref_executables_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  set(found "")
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found ${t})
    endif()
  endforeach()
  foreach(d IN LISTS subdirs)
    _fp8ref_executables_under(${d} below)
    list(APPEND found ${below})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(fp8ref_add_cpu_tests_target)
  _fp8ref_executables_under(${PROJECT_SOURCE_DIR} programs)
  get_property(skip GLOBAL PROPERTY FP8REF_NOT_CPU_TEST_PROGRAMS)
  if(skip)
    list(REMOVE_ITEM programs ${skip})
  endif()
  add_custom_target(fp8ref_cpu_tests)
  if(programs)
    add_dependencies(fp8ref_cpu_tests ${programs})
  endif()
endfunction()
