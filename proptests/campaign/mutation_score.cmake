# The campaign as a continuous mutation test (docs/fuzz.md "Planted bugs"): `fuzz` of the test
# executable fp8-check-planted runs every CPU suite once per catalogued bug (numerics/plant.h) at
# the CI seed with a fixed case budget (--cases, so the result is deterministic), and the test
# fails unless every bug is caught by at least MIN_KILLERS independent suites (so weakening one
# suite cannot let a bug through). Prints the mutation score and, per bug, every suite that caught
# it (its killers) with the cases each needed.
# Variables: PLANTED (fp8-check-planted), WORK, SEED, CASES (per suite), MIN_KILLERS (default 2).
if(NOT DEFINED MIN_KILLERS)
  set(MIN_KILLERS 2)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/run_fp8.cmake)

run_planted(list rc fuzz --list-plants)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fp8-check-planted fuzz --list-plants failed (exit ${rc}):\n${list}")
endif()
string(STRIP "${list}" list)
string(REPLACE "\n" ";" plants "${list}")

# Without a plant the hooked build must pass: a catch then means the bug, not the hooks.
run_planted(out rc fuzz --cases ${CASES} --seed ${SEED} --quiet --failure-dir ${WORK}/failures)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fp8-check-planted without a plant failed (exit ${rc}):\n${out}")
endif()

set(table "")
set(caught 0)
set(total 0)
set(missed "")
set(weak "")
foreach(plant IN LISTS plants)
  math(EXPR total "${total} + 1")
  run_planted(out rc fuzz --plant ${plant} --cases ${CASES} --seed ${SEED} --quiet --json
              --failure-dir ${WORK}/failures)
  if(rc EQUAL 0)
    string(APPEND table "  ${plant}  no  0  -  -\n")
    list(APPEND missed ${plant})
    continue()
  elseif(NOT rc EQUAL 1)
    message(FATAL_ERROR "planted ${plant}: the campaign did not run (exit ${rc}):\n${out}")
  endif()
  math(EXPR caught "${caught} + 1")
  string(JSON n LENGTH "${out}" suites)
  math(EXPR last "${n} - 1")
  set(by "")
  set(first "")
  foreach(i RANGE ${last})
    string(JSON status GET "${out}" suites ${i} status)
    if(status STREQUAL "failed")
      string(JSON name GET "${out}" suites ${i} name)
      string(JSON cases GET "${out}" suites ${i} cases)
      list(APPEND by "${name}(${cases})")
      if(first STREQUAL "" OR cases LESS first)
        set(first ${cases})
      endif()
    endif()
  endforeach()
  list(LENGTH by killers)
  if(killers LESS MIN_KILLERS)
    list(APPEND weak "${plant}(${killers})")
  endif()
  string(REPLACE ";" " " by "${by}")
  string(APPEND table "  ${plant}  yes  ${killers}  ${first}  ${by}\n")
endforeach()

message("mutation score: ${caught}/${total} planted bugs caught by `fuzz --cases ${CASES} --seed ${SEED}`\n"
        "  plant  caught  killers  cases-to-catch  killer-suites(cases)\n${table}")
if(NOT caught EQUAL total)
  message(FATAL_ERROR "planted bugs not caught: ${missed}")
endif()
if(weak)
  message(FATAL_ERROR "planted bugs caught by fewer than ${MIN_KILLERS} suites: ${weak}")
endif()
