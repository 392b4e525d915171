# Golden vectors of the hopper_wgmma step from mmasim (docs/models.md), labels cpu;golden:
# golden/regressions/hopper_wgmma_step_mmasim.safetensors, written on the GPU machine by
# proptests/fidelity/run_fidelity.sh and added with `fp8-check golden accept`. A missing file fails
# the test (FP8REF_GOLDEN_STEP_FILE in the environment points it elsewhere, e.g. at a .hex).
# Included from proptests/numerics/models/CMakeLists.txt.
get_filename_component(_fp8ref_golden_step
  "${CMAKE_CURRENT_LIST_DIR}/../../../golden/regressions/hopper_wgmma_step_mmasim.safetensors" ABSOLUTE)
add_executable(proptests_numerics_golden_step_test ${CMAKE_CURRENT_LIST_DIR}/golden_step_test.cpp)
target_link_libraries(proptests_numerics_golden_step_test PRIVATE
  fp8ref::numerics fp8ref::tensor_io GTest::gtest_main)
target_compile_definitions(proptests_numerics_golden_step_test PRIVATE
  FP8REF_GOLDEN_STEP_FILE="${_fp8ref_golden_step}" FP8REF_GOLDEN_STEP_TENSOR_IO)
add_test(NAME reference.golden_step_test COMMAND proptests_numerics_golden_step_test)
set_tests_properties(reference.golden_step_test PROPERTIES LABELS "cpu;golden" TIMEOUT 60)
