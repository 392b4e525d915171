# ctest driver for one malformed-corpus file: `fp8-check inspect FILE` must exit 2 and write exactly
# one non-empty line to stderr (docs/design.md §16). Invoked as cmake -DEXE=... -DFILE=... -P this.
execute_process(COMMAND ${EXE} inspect ${FILE}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 20)
string(REGEX REPLACE "\n$" "" body "${err}")
string(FIND "${body}" "\n" newline)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "exit ${rc} (want 2) for ${FILE}; stderr: ${err}")
elseif(body STREQUAL "" OR NOT newline EQUAL -1 OR NOT err MATCHES "\n$")
  message(FATAL_ERROR "stderr is not exactly one line for ${FILE}: [${err}]")
endif()
message(STATUS "${body}")
