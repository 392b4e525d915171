// The Hopper tensor-core FP8 step models and their chains (docs/design.md §10): `hopper_wgmma_step`
// (numerics/wgmma_step.h) and `hopper_mma_sync_step` (numerics/mma_sync_step.h), each with a
// running per-element error bound against the exact result (numerics/bounded.h).
#pragma once

#include "numerics/bounded.h"
#include "numerics/mma_sync_step.h"
#include "numerics/wgmma_step.h"
#include "numerics/wgmma_tile.h"
