# Shared by the fuzz CLI scripts (cmake -P with EXE and WORK): a fresh working folder and
# run_fp8(out rc ARGS...), which runs fp8-check there and returns its stdout + stderr and exit code;
# run_planted(out rc ARGS...) the same with the test executable fp8-check-planted (PLANTED).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run_fp8 out_var rc_var)
  execute_process(COMMAND ${EXE} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY ${WORK})
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${rc_var} ${rc} PARENT_SCOPE)
endfunction()

function(run_planted out_var rc_var)
  execute_process(COMMAND ${PLANTED} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err WORKING_DIRECTORY ${WORK})
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${rc_var} ${rc} PARENT_SCOPE)
endfunction()
