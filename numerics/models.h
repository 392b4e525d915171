// The accumulation models (docs/design.md §10-12, definitions and bounds in docs/models.md): the
// exact arithmetic a kernel performs for one output element of an FP8 GEMM, each evaluated with a
// rigorous error bound against the exact value. This is the entry point: code outside
// numerics/models/ includes this header, not the pieces.
//
// The pieces, each including only those above it:
//   numerics/out_dtype.h              output types f32 / bf16 / f16: tokens, bit patterns
//   numerics/models/model_types.h     names and parameters: AccumulationModel, Epilogue, SplitK,
//                                     ElementScales (the scales of one output element)
//   numerics/models/exact_sum.h       FP8 operands as integer parts, exact dot products and sums,
//                                     the single rounding to an output type (round_to,
//                                     f32_to_out_bits)
//   numerics/models/bounded.h         Bounded{z, bound}, f32 rounding bounds, what steps share
//   numerics/models/wgmma_step.h      step model hopper_wgmma_step and its chains (codes, planes)
//   numerics/models/wgmma_tile.h      one wgmma instruction m{M}n{N}k32 of hopper_wgmma steps
//   numerics/models/mma_sync_step.h   step model hopper_mma_sync_step and its chain
//   numerics/models/hopper_models.h   the Hopper models of one element: promoted / unpromoted
//                                     chains, split-K slices, scale epilogues
//   numerics/models/model_dot.h       exact_dot, fp32_sequential_dot, and model_dot: any named
//                                     model with its split-K and epilogue order (CheckedModel:
//                                     the preconditions checked once per operation)
//   numerics/models/blackwell_step.h  Blackwell tcgen05 / sm_120 block-scaled step models (with
//                                     blackwell_mxf4_step.h) and their chains (blackwell_chain.h)
//   numerics/models/blackwell_models.h the Blackwell models of one element: chains over K with
//                                     the block scales in each step, then the scalar scales
#pragma once

#include "numerics/models/blackwell_models.h"
#include "numerics/models/bounded.h"
#include "numerics/models/exact_sum.h"
#include "numerics/models/hopper_models.h"
#include "numerics/models/mma_sync_step.h"
#include "numerics/models/model_dot.h"
#include "numerics/models/model_types.h"
#include "numerics/models/wgmma_step.h"
#include "numerics/models/wgmma_tile.h"
#include "numerics/out_dtype.h"
