# ctest driver for `fp8-check oracle|verify grouped-gemm` (docs/cli.md), cases written by
# cli_gemm_case.cpp. PART=ints: every scaling, both B layouts, f32/bf16/f16 and every model that
# takes the scaling against outputs summed by hand (integer operands, power-of-two scales, mx with
# F8_E8M0 scales), a 2-D B, model aliases, --within-bound. PART=random: split-K, slice length
# and epilogue against the library call, the per-group table, and bad input (exit 2, one line).
# cmake -DEXE=fp8-check -DCASE=proptests_reference_cli_gemm_case -DWORK=dir -DPART=ints|random -P this
cmake_minimum_required(VERSION 3.20)  # IN_LIST, list(POP_BACK)
file(MAKE_DIRECTORY ${WORK})

# expect(RC cmd...): the command exits RC; for RC 2 stderr is exactly one line. Leaves stdout and
# stderr in `out` / `err` of the caller.
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
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# expect_match(TEXT REGEX...): TEXT matches every REGEX.
function(expect_match text)
  foreach(re IN LISTS ARGN)
    if(NOT text MATCHES "${re}")
      message(FATAL_ERROR "output does not match [${re}]:\n${text}")
    endif()
  endforeach()
endfunction()

set(models_none exact fp32_sequential hopper_unpromoted hopper_promoted_tensorwise
    hopper_promoted_rowwise hopper_promoted_blockwise hopper_mma_sync)
set(models_tensorwise ${models_none})
set(models_rowwise ${models_none})
set(models_blockwise exact fp32_sequential hopper_promoted_blockwise hopper_mma_sync)
set(models_mx ${models_blockwise})
set(hw_none hopper_unpromoted)
set(hw_tensorwise hopper_promoted_tensorwise)
set(hw_rowwise hopper_promoted_rowwise)
set(hw_blockwise hopper_promoted_blockwise)
set(hw_mx hopper_mma_sync)
set(file_dtype_none f32)
set(file_dtype_tensorwise bf16)
set(file_dtype_rowwise f16)
set(file_dtype_blockwise bf16)
set(file_dtype_mx f16)

if(PART STREQUAL "ints")
  set(I ${WORK}/ints.safetensors)
  expect(0 ${CASE} ints ${I})
  set(g --in ${I} --a a --offs offs)
  foreach(s none tensorwise rowwise blockwise mx)
    set(sc --scaling ${s})
    if(NOT s STREQUAL "none")
      list(APPEND sc --scale-a sa_${s} --scale-b sb_${s})
    endif()
    foreach(m IN LISTS models_${s})  # every model that takes the scaling, f32, nk
      expect(0 ${EXE} verify grouped-gemm ${g} --b b --b-layout nk ${sc} --model ${m} --out-dtype f32
             --got want_${s}_f32)
    endforeach()
    foreach(d f32 bf16 f16)
      expect(0 ${EXE} verify grouped-gemm ${g} --b b --b-layout nk ${sc} --model exact --out-dtype ${d}
             --got want_${s}_${d})
      expect(0 ${EXE} verify grouped-gemm ${g} --b b_kn --b-layout kn ${sc} --model ${hw_${s}}
             --out-dtype ${d} --got want_${s}_${d})
    endforeach()
    # The oracle's file, rows outside every group (+0) included.
    expect(0 ${EXE} oracle grouped-gemm ${g} --b b_kn --b-layout kn ${sc} --model exact
           --out-dtype ${file_dtype_${s}} --out ${WORK}/y.safetensors)
    expect(0 ${EXE} diff ${WORK}/y.safetensors:out ${I}:want_${s}_${file_dtype_${s}})
    # --device auto: the GPU oracle where a device is present, else the CPU; the same bits.
    expect(0 ${EXE} verify grouped-gemm ${g} --b b_kn --b-layout kn ${sc} --model ${hw_${s}}
           --out-dtype f32 --got want_${s}_f32 --device auto)
  endforeach()
  expect(2 ${EXE} verify grouped-gemm ${g} --b b --model exact --got want_none_f32 --device tpu)
  # One 2-D B without offsets: a single group over every row.
  expect(0 ${EXE} verify grouped-gemm --in ${I} --a a --b b2d --model hopper_unpromoted --got want_b2d_f32)
  # Short model names (docs/design.md §10): the canonical name is printed and written.
  expect(0 ${EXE} oracle grouped-gemm ${g} --b b --scaling blockwise --scale-a sa_blockwise
         --scale-b sb_blockwise --model promoted_blockwise --out ${WORK}/alias.safetensors)
  expect_match("${out}" "grouped-gemm: hopper_promoted_blockwise \\(split-K S=1")
  expect(0 ${EXE} inspect ${WORK}/alias.safetensors --json)
  expect_match("${out}" "\"model\": \"hopper_promoted_blockwise\"")
  expect(0 ${EXE} diff ${WORK}/alias.safetensors:out ${I}:want_blockwise_f32)
  foreach(s tensorwise rowwise)
    expect(0 ${EXE} verify grouped-gemm ${g} --b b --scaling ${s} --scale-a sa_${s} --scale-b sb_${s}
           --model promoted_${s} --got want_${s}_f32)
    expect_match("${out}" "grouped-gemm: hopper_promoted_${s} ")
  endforeach()
  # --within-bound: the hardware model equals the hand sum here, so a 1-ulp change of a non-zero
  # f32 element (2^-23 relative) lies within its bound (>= 2^-13 relative: 13-bit truncation),
  # a change by 2^16 does not; bitwise, both differ.
  set(rw ${g} --b b --scaling rowwise --scale-a sa_rowwise --scale-b sb_rowwise --model hopper_unpromoted)
  expect(0 ${CASE} nudge ${I} ${WORK}/near.safetensors want_rowwise_f32 0 1 nonzero)
  expect(0 ${CASE} nudge ${I} ${WORK}/far.safetensors want_rowwise_f32 0 134217728 nonzero)
  expect(1 ${EXE} verify grouped-gemm ${rw} --got want_rowwise_f32 --got-file ${WORK}/near.safetensors)
  expect(0 ${EXE} verify grouped-gemm ${rw} --got want_rowwise_f32 --got-file ${WORK}/near.safetensors
         --within-bound)
  expect_match("${out}" "within the model's bound of exact" "result: PASS")
  expect(1 ${EXE} verify grouped-gemm ${rw} --got want_rowwise_f32 --got-file ${WORK}/far.safetensors
         --within-bound)
  expect_match("${out}" "\\[0, 0\\] group 0: got" "result: DIFFERS \\(1 element failing\\)")
  return()
endif()

# ---- PART=random ----------------------------------------------------------------------------
set(R ${WORK}/random.safetensors)
expect(0 ${CASE} random ${R})
set(g --in ${R} --a a --offs offs)
# Split-K, slice length and epilogue (the case tool refuses a choice that does not change the
# bits here), layouts and dtypes against the library call on the same case.
foreach(cfg "tensorwise;hopper_unpromoted;f32;2;0;model;nk"
            "blockwise;hopper_promoted_blockwise;f32;1;1;model;kn"
            "blockwise;hopper_promoted_blockwise;f32;2;0;model;nk"
            "rowwise;hopper_promoted_rowwise;f32;1;0;a_then_b;kn"
            "tensorwise;hopper_promoted_tensorwise;f32;1;0;b_then_a;nk"
            "rowwise;hopper_mma_sync;f32;2;0;a_then_b;kn"
            "mx;hopper_mma_sync;f16;1;0;model;nk")
  list(GET cfg 0 s)
  list(GET cfg 1 m)
  list(GET cfg 2 d)
  list(GET cfg 3 split)
  list(GET cfg 4 blocks)
  list(GET cfg 5 ep)
  list(GET cfg 6 layout)
  set(b b)
  if(layout STREQUAL "kn")
    set(b b_kn)
  endif()
  set(run ${g} --b ${b} --b-layout ${layout} --scaling ${s} --scale-a sa_${s} --scale-b sb_${s}
      --model ${m} --epilogue ${ep} --out-dtype ${d})
  if(blocks EQUAL 0)
    list(APPEND run --split-k ${split})
  else()
    list(APPEND run --split-k-blocks ${blocks})
  endif()
  expect(0 ${CASE} lib ${WORK}/lib.safetensors ${s} ${m} ${d} ${split} ${blocks} ${ep})
  expect(0 ${EXE} oracle grouped-gemm ${run} --out ${WORK}/y.safetensors)
  expect(0 ${EXE} diff ${WORK}/y.safetensors:out ${WORK}/lib.safetensors:out)
  expect(0 ${EXE} verify grouped-gemm ${run} --got out --got-file ${WORK}/lib.safetensors)
endforeach()

# The per-group table: one bf16 ulp changed at row 5, column 2 (group 2); a change in row 9
# (no group) is not compared.
set(bw ${g} --b b --scaling blockwise --scale-a sa_blockwise --scale-b sb_blockwise
    --model hopper_promoted_blockwise --out-dtype bf16)
expect(0 ${EXE} oracle grouped-gemm ${bw} --out ${WORK}/bw.safetensors --bound)
expect(0 ${EXE} verify grouped-gemm ${bw} --got out --got-file ${WORK}/bw.safetensors)
expect(0 ${CASE} nudge ${WORK}/bw.safetensors ${WORK}/bw1.safetensors out 32 1 nonzero)
expect(1 ${EXE} verify grouped-gemm ${bw} --got out --got-file ${WORK}/bw1.safetensors)
expect_match("${out}" "\n +0 +4 +24 +0 +0\n" "\n +1 +0 +0 +0 +0\n" "\n +2 +5 +30 +1 +[0-9]"
             "\\[5, 2\\] group 2: got" "rows outside every group: 1 \\(not compared\\)"
             "result: DIFFERS \\(1 element failing\\)")
expect(0 ${CASE} nudge ${WORK}/bw.safetensors ${WORK}/bw9.safetensors out 54 1)
expect(0 ${EXE} verify grouped-gemm ${bw} --got out --got-file ${WORK}/bw9.safetensors)
# NaN B scales of an empty group are never read.
expect(0 ${EXE} oracle grouped-gemm ${g} --b b --scaling rowwise --scale-a sa_rowwise
       --scale-b sb_rowwise_nan_idle --model hopper_promoted_rowwise --out ${WORK}/y.safetensors)

# Bad input: exit 2, one line naming the problem.
set(x --out ${WORK}/x.safetensors)
set(tw --scaling tensorwise --scale-a sa_tensorwise --scale-b sb_tensorwise)
foreach(bad
    "--scaling;blockwise;--scale-a;sa_blockwise_t;--scale-b;sb_blockwise|--scale-a: 'sa_blockwise_t' has shape \\(3, 10\\), expected \\(10, 3\\) for blockwise"
    "--scaling;mx;--scale-a;sa_mx;--scale-b;sb_mx_t|--scale-b: 'sb_mx_t' has shape \\(3, 9, 6\\), expected \\(3, 6, 9\\)"
    "--scaling;tensorwise;--scale-a;sa_rowwise;--scale-b;sb_tensorwise|--scale-a: 'sa_rowwise' has shape \\(10, 1\\), expected \\(\\)"
    "--scaling;rowwise;--scale-a;sa_rowwise;--scale-b;sb_tensorwise|--scale-b: 'sb_tensorwise' has shape \\(3,\\), expected \\(3, 6\\)"
    "--scaling;rowwise;--scale-a;sa_rowwise;--scale-b;sb_rowwise_nan|scale_b\\[13\\] = nan is not finite"
    "--scaling;mx;--scale-a;sa_mx_nan;--scale-b;sb_mx|scale_a\\[3\\] = nan is not finite"
    "--scaling;mx;--scale-a;sa_mx_f32;--scale-b;sb_mx|is not a power of two"
    "--scaling;blockwise;--scale-a;sa_blockwise;--scale-b;sb_blockwise;--model;hopper_promoted_tensorwise|needs scales constant over K"
    "--scaling;none;--scale-a;sa_tensorwise|given with --scaling none"
    "--scaling;tensorwise;--scale-a;sa_tensorwise|needs --scale-a and --scale-b")
  string(REPLACE "|" ";" parts "${bad}")
  list(POP_BACK parts want)
  set(model --model exact)
  if("--model" IN_LIST parts)
    set(model)
  endif()
  expect(2 ${EXE} oracle grouped-gemm ${g} --b b ${model} ${parts} ${x})
  expect_match("${err}" "^fp8-check: error: " "${want}")
endforeach()
foreach(bad "offs_nonmono|--offs: 'offs_nonmono': fp8ref: group offsets: non-monotonic"
            "offs_beyond|--offs: 'offs_beyond': .*is beyond M = 10"
            "offs_short|--offs: 'offs_short' has shape \\(2,\\), expected \\(3,\\)"
            "sa_tensorwise|--offs: 'sa_tensorwise' must be a 1-D integer tensor")
  string(REPLACE "|" ";" parts "${bad}")
  list(GET parts 0 offs)
  list(GET parts 1 want)
  expect(2 ${EXE} oracle grouped-gemm --in ${R} --a a --b b --offs ${offs} ${tw} --model exact ${x})
  expect_match("${err}" "${want}")
endforeach()
foreach(bad "--a;a;--b;b;--model;hopper_fast|unknown model 'hopper_fast'. models and aliases: exact, .*, promoted_rowwise"
            "--a;a;--b;b;--model;hopper_wgmma|'hopper_wgmma' is the tensor-core step"
            "--a;a;--b;b;--model;exact;--split-k;2|split-K applies to the hopper models only"
            "--a;a;--b;b;--model;exact;--epilogue;a_then_b|epilogue a_then_b does not apply to model exact"
            "--a;nope;--b;b;--model;exact|--a: .* has no tensor 'nope'"
            "--a;a;--b;b_kn;--model;exact|--b: 'b_kn' has shape \\(3, 288, 6\\), expected \\(G, N, K = 288\\)"
            "--a;a;--b;b;--b-layout;kn;--model;exact|--b: 'b' has shape \\(3, 6, 288\\), expected \\(G, K = 288, N\\)"
            "--a;a;--b;b;--b-layout;mn;--model;exact|--b-layout: expected nk or kn"
            "--a;b;--b;b;--model;exact|--a: 'b' has shape \\(3, 6, 288\\), expected \\(M, K\\)")
  string(REPLACE "|" ";" parts "${bad}")
  list(POP_BACK parts want)
  expect(2 ${EXE} oracle grouped-gemm --in ${R} --offs offs ${tw} ${parts} ${x})
  expect_match("${err}" "${want}")
endforeach()
expect(2 ${EXE} verify grouped-gemm ${g} --b b ${tw} --model exact --got a)
expect_match("${err}" "--got: 'a' is F8_E4M3 but --out-dtype is f32")
expect(2 ${EXE} verify grouped-gemm ${g} --b b ${tw} --model exact --got out --got-file ${WORK}/none.safetensors)
