# Quantize / dequantize (issue 3): included from reference/CMakeLists.txt.
target_sources(fp8ref_reference PRIVATE ${CMAKE_CURRENT_LIST_DIR}/quantize.cpp)
# Lets GCC if-convert (and so vectorize) the cast loops of encode_f32_rne.h; it permits no
# transformation that changes a value (no reassociation, no contraction, RNE kept).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/quantize.cpp PROPERTIES COMPILE_OPTIONS -fno-trapping-math)
