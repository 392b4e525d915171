# `fp8-check fuzz merge` and `--junit` (docs/fuzz.md "Merging shards, JUnit"). PART=passing: two
# shards' --json reports merge into one summary whose cases add up; the same shard twice, or a file
# that is not a report, is refused with one line and exit 2. PART=failing (needs the test
# executable fp8-check-planted, PLANTED): a report with a failure (the planted bug) makes the merge
# with the passing shards exit 1 and its JUnit file carry a <failure> with the replay command.
include(${CMAKE_CURRENT_LIST_DIR}/run_fp8.cmake)
if(NOT PART STREQUAL "passing" AND NOT PART STREQUAL "failing")
  message(FATAL_ERROR "merge_junit.cmake: PART must be passing or failing, got '${PART}'")
endif()

function(fuzz_json exe file)  # EXE fuzz ARGN --json --quiet > WORK/file; sets rc
  execute_process(COMMAND ${exe} fuzz ${ARGN} --json --quiet RESULT_VARIABLE r
                  OUTPUT_FILE ${WORK}/${file} ERROR_VARIABLE err WORKING_DIRECTORY ${WORK})
  set(rc ${r} PARENT_SCOPE)
  if(NOT err STREQUAL "")
    message(FATAL_ERROR "fuzz ${ARGN} wrote to stderr: ${err}")
  endif()
endfunction()

foreach(i 0 1)
  fuzz_json(${EXE} report-${i}.json --suite gemm.forward --cases 50 --seed 7 --shard ${i}/2)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "shard ${i}/2 failed (exit ${rc})")
  endif()
endforeach()
run_fp8(out rc fuzz merge report-0.json report-1.json --json)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "merge of two passing shards: exit ${rc}\n${out}")
endif()
string(JSON cases GET "${out}" suites 0 cases)
string(JSON status GET "${out}" suites 0 status)
if(NOT cases EQUAL 100 OR NOT status STREQUAL "passed")
  message(FATAL_ERROR "merged gemm.forward: ${cases} cases, ${status} (want 100, passed)")
endif()

if(PART STREQUAL "passing")
  # Bad input: one line, exit 2.
  file(WRITE ${WORK}/not-a-report.json "{\"schema\": \"something/1\"}")
  foreach(args "report-0.json;report-0.json" "not-a-report.json" "missing.json")
    run_fp8(out rc fuzz merge ${args})
    string(REGEX REPLACE "\n$" "" body "${out}")
    if(NOT rc EQUAL 2 OR body MATCHES "\n" OR body STREQUAL "")
      message(FATAL_ERROR "fuzz merge ${args}: exit ${rc} (want 2, one line): ${out}")
    endif()
    message(STATUS "fuzz merge ${args}: ${body}")
  endforeach()
  return()
endif()

# A failing run (the planted-bug build fp8-check-planted): its own --junit, then a merge with the
# passing shards.
fuzz_json(${PLANTED} report-bug.json --suite gemm.forward --plant offs_off_by_one --cases 500 --seed 8
          --failure-dir ${WORK}/failures --junit ${WORK}/bug.xml)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "the planted bug was not caught (exit ${rc})")
endif()
run_fp8(out rc fuzz merge report-0.json report-1.json report-bug.json --junit merged.xml)
if(NOT rc EQUAL 1 OR NOT out MATCHES "FAILED gemm\\.forward")
  message(FATAL_ERROR "merge with a failing report: exit ${rc} (want 1)\n${out}")
endif()
foreach(xml bug.xml merged.xml)
  file(READ ${WORK}/${xml} x)
  if(NOT x MATCHES "<testcase classname=\"fp8ref\\.fuzz\\.cpu\" name=\"gemm\\.forward\""
     OR NOT x MATCHES "<failure type=\"property\" message=\"exact model: got"
     OR NOT x MATCHES "replay: fp8-check-planted fuzz --suite gemm\\.forward --replay [0-9a-f]+"
     OR NOT x MATCHES "tests=\"1\" failures=\"1\"")
    message(FATAL_ERROR "${xml} lacks the testcase / failure / replay command:\n${x}")
  endif()
endforeach()

