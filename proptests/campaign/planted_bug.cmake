# The campaign's self-test (docs/fuzz.md): a planted bug (an off-by-one in a group's end offset,
# inside the code under test, planted by the test executable fp8-check-planted; the shipped
# fp8-check has no --plant) is caught by the campaign, shrunk, written as a case file, and
# replayed by the printed one-line command; the case file opens in fp8-check, replays without the
# bug, and once pinned with `golden accept` the golden.regressions suite replays it (and catches the
# bug again).
include(${CMAKE_CURRENT_LIST_DIR}/run_fp8.cmake)

# 0. The shipped fp8-check has no --plant.
run_fp8(out0 rc0 fuzz --suite gemm.forward --plant offs_off_by_one --cases 1)
if(NOT rc0 EQUAL 2)
  message(FATAL_ERROR "fp8-check accepted --plant (exit ${rc0}):\n${out0}")
endif()

# 1. The campaign catches it.
run_planted(out rc fuzz --suite gemm.forward --plant offs_off_by_one --cases 500 --seed 7 --quiet --json
        --failure-dir ${WORK}/failures)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "the planted bug was not caught (exit ${rc}):\n${out}")
endif()
string(JSON message GET "${out}" suites 0 failures 0 message)
string(JSON replay GET "${out}" suites 0 failures 0 replay)
string(JSON case_file GET "${out}" suites 0 failures 0 case_file)
message("caught: ${message}\nreplay: ${replay}\ncase file: ${case_file}")
if(NOT message MATCHES "exact model: got")
  message(FATAL_ERROR "unexpected failure message: ${message}")
endif()
if(NOT replay MATCHES "^fp8-check-planted fuzz --suite gemm\\.forward --replay [0-9a-f]+ --plant offs_off_by_one$")
  message(FATAL_ERROR "replay line is not one command: '${replay}'")
endif()
if(NOT EXISTS "${case_file}")
  message(FATAL_ERROR "case file not written: ${case_file}")
endif()

# 2. The printed command replays the same shrunk failure.
string(REGEX REPLACE "^fp8-check-planted " "" replay_args "${replay}")
separate_arguments(replay_args UNIX_COMMAND "${replay_args}")
run_planted(out2 rc2 ${replay_args} --quiet --failure-dir ${WORK}/replayed)
if(NOT rc2 EQUAL 1)
  message(FATAL_ERROR "the replay command did not fail (exit ${rc2}):\n${out2}")
endif()
string(FIND "${out2}" "${message}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the replay failed differently:\n${out2}\nexpected:\n${message}")
endif()

# 3. The case file opens in fp8-check, fails with the bug and passes without it.
run_fp8(out3 rc3 inspect ${case_file})
if(NOT rc3 EQUAL 0 OR NOT out3 MATCHES "row_group")
  message(FATAL_ERROR "fp8-check inspect of the case file failed (exit ${rc3}):\n${out3}")
endif()
run_planted(out4 rc4 fuzz --replay-file ${case_file} --plant offs_off_by_one --quiet)
if(NOT rc4 EQUAL 1)
  message(FATAL_ERROR "--replay-file with the bug did not fail (exit ${rc4}):\n${out4}")
endif()
run_fp8(out5 rc5 fuzz --replay-file ${case_file} --quiet)
if(NOT rc5 EQUAL 0)
  message(FATAL_ERROR "--replay-file without the bug failed (exit ${rc5}):\n${out5}")
endif()

# 4. Pinned as a regression (in a copy of golden/), replayed by golden.regressions.
file(COPY ${GOLDEN}/ DESTINATION ${WORK}/golden)
run_fp8(out6 rc6 golden accept ${case_file} --as planted_offs_off_by_one --root ${WORK}/golden)
if(NOT rc6 EQUAL 0)
  message(FATAL_ERROR "golden accept failed (exit ${rc6}):\n${out6}")
endif()
run_fp8(out7 rc7 golden verify --root ${WORK}/golden)
if(NOT rc7 EQUAL 0)
  message(FATAL_ERROR "golden verify after accept failed (exit ${rc7}):\n${out7}")
endif()
run_fp8(out8 rc8 fuzz --suite golden.regressions --golden ${WORK}/golden --quiet --json)
string(JSON cases GET "${out8}" suites 0 cases)
if(NOT rc8 EQUAL 0 OR cases LESS 1)
  message(FATAL_ERROR "golden.regressions did not pass the pinned case (exit ${rc8}):\n${out8}")
endif()
run_planted(out9 rc9 fuzz --suite golden.regressions --golden ${WORK}/golden --plant offs_off_by_one --quiet)
if(NOT rc9 EQUAL 1)
  message(FATAL_ERROR "golden.regressions did not catch the planted bug (exit ${rc9}):\n${out9}")
endif()
message("planted bug: caught, replayed, pinned and re-caught")
