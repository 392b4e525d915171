# `fp8-check fuzz` gates (docs/fuzz.md "Coverage"): --require-classes fails a suite that missed a
# required coverage class (and lists it) while the same run without the flag passes; rare classes
# are reported as such and not required below 4× the level-1 count; golden.regressions reports
# "skipped", not "passed", with no pinned case, and a missing --golden folder is an error (exit 2).
# The human-readable table is what these checks read.
include(${CMAKE_CURRENT_LIST_DIR}/run_fp8.cmake)

function(expect rc want out what)
  if(NOT rc EQUAL want)
    message(FATAL_ERROR "${what}: exit ${rc}, expected ${want}:\n${out}")
  endif()
endfunction()

# 1. Three cases cannot hit every class: without the gate the suite passes and lists the misses,
#    with it the suite fails and names them.
set(few fuzz --suite gemm.forward --cases 3 --seed 5 --quiet --golden ${GOLDEN})
run_fp8(out rc ${few})
expect(${rc} 0 "${out}" "3 cases without --require-classes")
if(NOT out MATCHES "gemm.forward +cpu +passed" OR NOT out MATCHES "classes not hit in this run: [^\n]*dist:")
  message(FATAL_ERROR "the table does not list the missed classes:\n${out}")
endif()
run_fp8(out rc ${few} --require-classes)
expect(${rc} 1 "${out}" "3 cases with --require-classes")
if(NOT out MATCHES "FAILED gemm.forward: coverage: required classes not hit in 3 cases: [^\n]*dist:")
  message(FATAL_ERROR "the coverage failure does not name the missed classes:\n${out}")
endif()

# 2. Rare classes: reported as rare, not required at the level-1 count (gemm.invariance declares
#    sizes:edge_128 and sizes:edge_256 rare). The JSON report lists them.
run_fp8(out rc fuzz --suite gemm.invariance --cases 3 --seed 5 --quiet --json --require-classes)
expect(${rc} 1 "${out}" "gemm.invariance, 3 cases, --require-classes")
string(JSON message GET "${out}" suites 0 failures 0 message)
string(JSON rare GET "${out}" suites 0 classes_rare)
if(NOT rare MATCHES "sizes:edge_128" OR message MATCHES "sizes:edge_128")
  message(FATAL_ERROR "a rare class was required below level 2 (or not listed): ${rare}\n${message}")
endif()

# 3. golden.regressions: a folder without pinned cases is "skipped"; a missing one is an error.
file(MAKE_DIRECTORY ${WORK}/empty_golden/regressions)
run_fp8(out rc fuzz --suite golden.regressions --golden ${WORK}/empty_golden --quiet)
expect(${rc} 0 "${out}" "golden.regressions without pinned cases")
if(NOT out MATCHES "golden.regressions +cpu +skipped" OR NOT out MATCHES "no pinned cases")
  message(FATAL_ERROR "golden.regressions without pinned cases did not report skipped:\n${out}")
endif()
run_fp8(out rc fuzz --suite golden.regressions --golden ${WORK}/no_such_folder --quiet)
expect(${rc} 2 "${out}" "--golden with no regressions/ folder")
run_fp8(out rc fuzz --suite golden.regressions --golden ${GOLDEN} --quiet)
expect(${rc} 0 "${out}" "golden.regressions on the pinned cases")
if(NOT out MATCHES "golden.regressions +cpu +passed")
  message(FATAL_ERROR "golden.regressions on the source tree's pinned cases did not pass:\n${out}")
endif()
run_fp8(out rc fuzz --suite gemm.forward --cases 1 --threads 0 --quiet)
expect(${rc} 2 "${out}" "--threads 0")
message("coverage gate, rare classes and golden.regressions gates behave")
