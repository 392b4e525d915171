# ctest driver for `fp8-check oracle|verify grouped-gemm` (issue 4 item 8): write a small case
# with the tensor_io writer, compute it with `oracle`, `verify` it (exit 0), verify a copy with one
# element perturbed (exit 1), and check that bad input exits 2 with one line on stderr.
# cmake -DEXE=fp8-check -DCASE=proptests_reference_cli_gemm_case -DWORK=dir -P this
file(MAKE_DIRECTORY ${WORK})
set(base --in ${WORK}/case.safetensors --offs offs --b-layout nk --scaling blockwise --out-dtype bf16)
set(common ${base} --a a --b b --scale-a scale_a --scale-b scale_b)

function(expect rc_want)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
  if(NOT rc EQUAL rc_want)
    message(FATAL_ERROR "exit ${rc} (want ${rc_want}): ${ARGN}\nstdout: ${out}\nstderr: ${err}")
  endif()
  if(rc_want EQUAL 2)
    string(REGEX REPLACE "\n$" "" body "${err}")
    string(FIND "${body}" "\n" newline)
    if(body STREQUAL "" OR NOT newline EQUAL -1)
      message(FATAL_ERROR "stderr is not exactly one line: [${err}] for ${ARGN}")
    endif()
  endif()
  message(STATUS "exit ${rc}: ${out}${err}")
endfunction()

expect(0 ${CASE} write ${WORK}/case.safetensors)
foreach(model exact hopper_promoted_blockwise hopper_mma_sync fp32_sequential)
  expect(0 ${EXE} oracle grouped-gemm ${common} --model ${model} --out ${WORK}/${model}.safetensors --bound)
  expect(0 ${EXE} verify grouped-gemm ${common} --model ${model} --got out --got-file ${WORK}/${model}.safetensors)
endforeach()
expect(0 ${CASE} perturb ${WORK}/hopper_promoted_blockwise.safetensors ${WORK}/perturbed.safetensors out)
expect(1 ${EXE} verify grouped-gemm ${common} --model hopper_promoted_blockwise --got out
       --got-file ${WORK}/perturbed.safetensors)
# Bad input: a model that cannot take 128x128 scales, a missing tensor, a scale tensor of the
# wrong size, an unknown model, a result of the wrong dtype.
expect(2 ${EXE} oracle grouped-gemm ${common} --model hopper_promoted_tensorwise --out ${WORK}/x.safetensors)
expect(2 ${EXE} oracle grouped-gemm ${base} --a nope --b b --scale-a scale_a --scale-b scale_b --model exact
       --out ${WORK}/x.safetensors)
expect(2 ${EXE} oracle grouped-gemm ${base} --a a --b b --scale-a scale_b --scale-b scale_b --model exact
       --out ${WORK}/x.safetensors)
expect(2 ${EXE} oracle grouped-gemm ${common} --model hopper_fast --out ${WORK}/x.safetensors)
expect(2 ${EXE} verify grouped-gemm ${common} --model exact --got a)
