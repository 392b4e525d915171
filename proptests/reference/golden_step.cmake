# Golden vectors of the hopper_wgmma step from mmasim (issue 4 item 7a), labels cpu;golden.
# proptests/device/run_fidelity.sh writes them on the GPU machine, as .hex and .safetensors. The test
# reads whichever is checked in, preferring the manifest-listed one:
#   golden/regressions/hopper_wgmma_step_mmasim.safetensors   added with
#       fp8-check golden accept OUT/hopper_wgmma_step.safetensors --as hopper_wgmma_step_mmasim
#   golden/reference/hopper_wgmma_step.hex                    (golden.verify fails on it until the
#       manifest can list a captured .hex)
# With neither, the test is not registered. Included from proptests/reference/CMakeLists.txt.
get_filename_component(_fp8ref_golden_root "${CMAKE_CURRENT_LIST_DIR}/../../golden" ABSOLUTE)
set(_fp8ref_golden_step_st "${_fp8ref_golden_root}/regressions/hopper_wgmma_step_mmasim.safetensors")
set(_fp8ref_golden_step_hex "${_fp8ref_golden_root}/reference/hopper_wgmma_step.hex")
set(_fp8ref_golden_step "")
if(EXISTS "${_fp8ref_golden_step_st}" AND TARGET fp8ref::tensor_io)
  set(_fp8ref_golden_step "${_fp8ref_golden_step_st}")
elseif(EXISTS "${_fp8ref_golden_step_hex}")
  set(_fp8ref_golden_step "${_fp8ref_golden_step_hex}")
endif()
if(_fp8ref_golden_step)
  add_executable(proptests_reference_golden_step_test ${CMAKE_CURRENT_LIST_DIR}/golden_step_test.cpp)
  target_link_libraries(proptests_reference_golden_step_test PRIVATE fp8ref::numerics GTest::gtest_main)
  target_compile_definitions(proptests_reference_golden_step_test PRIVATE
    FP8REF_GOLDEN_STEP_FILE="${_fp8ref_golden_step}")
  if(_fp8ref_golden_step STREQUAL _fp8ref_golden_step_st)
    target_link_libraries(proptests_reference_golden_step_test PRIVATE fp8ref::tensor_io)
    target_compile_definitions(proptests_reference_golden_step_test PRIVATE FP8REF_GOLDEN_STEP_TENSOR_IO)
  endif()
  add_test(NAME reference.golden_step_test COMMAND proptests_reference_golden_step_test)
  set_tests_properties(reference.golden_step_test PROPERTIES LABELS "cpu;golden" TIMEOUT 60)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_fp8ref_golden_step}")
else()
  message(STATUS "fp8ref: no hopper_wgmma_step golden vectors: reference.golden_step_test not registered")
endif()
