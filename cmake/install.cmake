# Install rules and the exported CMake package `fp8ref` (docs/design.md §3.2: `find_package(fp8ref)`
# gives fp8ref::numerics, fp8ref::reference, fp8ref::gpu when built, and the fp8-check program).
# Included last by the top-level CMakeLists.txt, so every target exists by now; each rule is
# guarded by if(TARGET ...) so a tree with some folders still empty configures and installs.
include(CMakePackageConfigHelpers)

set(FP8REF_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/fp8ref")
set(FP8REF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/fp8ref")

# A raw source- or build-tree path in INTERFACE_INCLUDE_DIRECTORIES cannot be exported: wrap it in
# $<BUILD_INTERFACE:...>, and give a target with include dirs but no $<INSTALL_INTERFACE:...> the
# installed include dir, so users write #include "numerics/codec.h" as the tree does.
function(_fp8ref_fix_include_dirs tgt)
  get_target_property(dirs ${tgt} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT dirs)
    return()
  endif()
  set(fixed "")
  set(has_install_dir OFF)
  foreach(d IN LISTS dirs)
    set(in_tree OFF)
    if(d MATCHES "^\\$<INSTALL_INTERFACE:")
      set(has_install_dir ON)
    elseif(NOT d MATCHES "^\\$<")
      cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${d}" NORMALIZE in_src)
      cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${d}" NORMALIZE in_bin)
      if(in_src OR in_bin)
        set(in_tree ON)
      endif()
    endif()
    if(in_tree)
      list(APPEND fixed "$<BUILD_INTERFACE:${d}>")
    else()
      list(APPEND fixed "${d}")
    endif()
  endforeach()
  if(NOT has_install_dir)
    list(APPEND fixed "$<INSTALL_INTERFACE:${FP8REF_INSTALL_INCLUDEDIR}>")
  endif()
  set_target_properties(${tgt} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${fixed}")
endfunction()

# Project targets reachable from `tgt` through its interface link libraries (plain names and
# $<LINK_ONLY:name>, aliases resolved). They must be exported too, or install(EXPORT) fails.
function(_fp8ref_internal_deps tgt out_var)
  set(found "")
  get_target_property(libs ${tgt} INTERFACE_LINK_LIBRARIES)
  if(libs)
    foreach(lib IN LISTS libs)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
      if(lib MATCHES "^\\$<" OR NOT TARGET "${lib}")
        continue()
      endif()
      get_target_property(aliased "${lib}" ALIASED_TARGET)
      if(aliased)
        set(lib "${aliased}")
      endif()
      get_target_property(imported "${lib}" IMPORTED)
      if(NOT imported)
        list(APPEND found "${lib}")
        _fp8ref_internal_deps("${lib}" sub)
        list(APPEND found ${sub})
      endif()
    endforeach()
  endif()
  list(REMOVE_DUPLICATES found)
  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()

# --- targets ------------------------------------------------------------------------------------
set(_fp8ref_exported "")
foreach(pair IN ITEMS "fp8ref_numerics:numerics" "fp8ref_reference:reference" "fp8ref_gpu:gpu")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 tgt)
  list(GET pair 1 export_name)
  if(TARGET ${tgt})
    set_target_properties(${tgt} PROPERTIES EXPORT_NAME ${export_name})
    list(APPEND _fp8ref_exported ${tgt})
  endif()
endforeach()

set(_fp8ref_extra "")
foreach(tgt IN LISTS _fp8ref_exported)
  _fp8ref_internal_deps(${tgt} deps)
  foreach(dep IN LISTS deps)
    if(NOT dep IN_LIST _fp8ref_exported AND NOT dep IN_LIST _fp8ref_extra)
      message(STATUS "fp8ref install: also exporting ${dep} (an interface dependency)")
      list(APPEND _fp8ref_extra ${dep})
    endif()
  endforeach()
endforeach()
list(APPEND _fp8ref_exported ${_fp8ref_extra})

foreach(tgt IN LISTS _fp8ref_exported)
  _fp8ref_fix_include_dirs(${tgt})
endforeach()

# Users need C++20 for the headers. In the build tree CMAKE_CXX_STANDARD gives it and the target
# carries no feature (CMake 3.25 would then demand a CUDA20 dialect for gpu/); the installed
# fp8ref::numerics carries cxx_std_20 itself.
if(TARGET fp8ref_numerics)
  get_target_property(features fp8ref_numerics INTERFACE_COMPILE_FEATURES)
  if(NOT features OR NOT "cxx_std_20" IN_LIST features)
    set_property(TARGET fp8ref_numerics APPEND PROPERTY
      INTERFACE_COMPILE_FEATURES "$<INSTALL_INTERFACE:cxx_std_20>")
  endif()
endif()

if(_fp8ref_exported)
  install(TARGETS ${_fp8ref_exported}
    EXPORT fp8refTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

if(TARGET fp8-check)
  install(TARGETS fp8-check EXPORT fp8refTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  list(APPEND _fp8ref_exported fp8-check)
endif()

# --- headers: numerics/codec.h -> include/fp8ref/numerics/codec.h -------------------------------
install(DIRECTORY numerics/ DESTINATION ${FP8REF_INSTALL_INCLUDEDIR}/numerics
  FILES_MATCHING PATTERN "*.h")
if(TARGET fp8ref_reference)
  install(DIRECTORY reference/ DESTINATION ${FP8REF_INSTALL_INCLUDEDIR}/reference
    FILES_MATCHING PATTERN "*.h")
endif()
if(TARGET fp8ref_gpu)
  install(DIRECTORY gpu/ DESTINATION ${FP8REF_INSTALL_INCLUDEDIR}/gpu
    FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
endif()

# --- the package: which dependencies the exported targets drag in -------------------------------
set(_fp8ref_links "")
foreach(tgt IN LISTS _fp8ref_exported)
  get_target_property(libs ${tgt} INTERFACE_LINK_LIBRARIES)
  if(libs)
    string(APPEND _fp8ref_links ";${libs}")
  endif()
endforeach()
foreach(dep IN ITEMS Eigen3 OpenMP Threads Boost CUDA)
  string(FIND "${_fp8ref_links}" "${dep}::" pos)
  if(pos GREATER_EQUAL 0)
    set(FP8REF_NEEDS_${dep} ON)
  else()
    set(FP8REF_NEEDS_${dep} OFF)
  endif()
endforeach()
# A CUDA static library needs the CUDA runtime at the consumer's link step even when it names
# no CUDA:: target itself.
if(TARGET fp8ref_gpu)
  set(FP8REF_NEEDS_CUDA ON)
endif()
foreach(component IN ITEMS numerics reference gpu)
  if(TARGET fp8ref_${component})
    set(FP8REF_HAS_${component} ON)
  else()
    set(FP8REF_HAS_${component} OFF)
  endif()
endforeach()
if(TARGET fp8-check)
  set(FP8REF_HAS_fp8_check ON)
else()
  set(FP8REF_HAS_fp8_check OFF)
endif()

if(_fp8ref_exported)
  install(EXPORT fp8refTargets
    NAMESPACE fp8ref::
    FILE fp8refTargets.cmake
    DESTINATION ${FP8REF_INSTALL_CMAKEDIR})
endif()

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/fp8refConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fp8refConfig.cmake
  INSTALL_DESTINATION ${FP8REF_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/fp8refConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/fp8refConfig.cmake
  ${PROJECT_BINARY_DIR}/fp8refConfigVersion.cmake
  DESTINATION ${FP8REF_INSTALL_CMAKEDIR})
