# ctest script: runs `fp8-check sweep` over every input of SOURCE and requires exit 0 and the
# line "INPUTS inputs, 0 mismatches" (so a sweep over fewer inputs cannot pass). Arguments:
# -DEXE= -DFORMAT= -DPROFILE= -DSOURCE= -DPEER= -DINPUTS=. Registered by CMakeLists.txt here.
foreach(v IN ITEMS EXE FORMAT PROFILE SOURCE PEER INPUTS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "sweep_expect_clean.cmake: -D${v}= is missing")
  endif()
endforeach()
execute_process(
  COMMAND ${EXE} sweep --format ${FORMAT} --profile ${PROFILE} --from ${SOURCE} --against ${PEER}
          --quiet
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "fp8-check sweep output:\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fp8-check sweep exited ${rc}, expected 0")
endif()
if(NOT out MATCHES "(^|\n)${INPUTS} inputs, 0 mismatches\n")
  message(FATAL_ERROR "fp8-check sweep did not print \"${INPUTS} inputs, 0 mismatches\"")
endif()
