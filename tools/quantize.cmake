# `fp8-check quantize` and the quantize benchmark program (issue 3 items 8-9); included at the
# end of tools/CMakeLists.txt. The subcommand needs tools/tensor_io; proptests/scale tests it
# when the global property FP8REF_CLI_HAVE_QUANTIZE is set.
if(TARGET fp8ref_tensor_io AND TARGET fp8-check)
  target_sources(fp8-check PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cli/quantize.cpp)
  target_compile_definitions(fp8-check PRIVATE FP8REF_CLI_HAVE_QUANTIZE)
  target_link_libraries(fp8-check PRIVATE fp8ref::reference fp8ref_tensor_io)
  set_property(GLOBAL PROPERTY FP8REF_CLI_HAVE_QUANTIZE ON)
endif()

# A program that prints throughput ratios to memcpy, not a test (DESIGN §6).
add_executable(fp8ref_quantize_bench ${CMAKE_CURRENT_LIST_DIR}/bench/quantize_bench.cpp)
target_link_libraries(fp8ref_quantize_bench PRIVATE fp8ref::reference)
