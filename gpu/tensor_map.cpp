// TMA tensor maps of FP8 operand and f32 / bf16 output tiles (gpu/tensor_map.h):
// cuTensorMapEncodeTiled through the runtime's driver entry point, zero fill out of bounds.
#include "gpu/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <string>

#include "gpu/device.h"

namespace fp8ref::gpu::detail {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    FP8REF_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                       cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw CudaError("fp8ref gpu: the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A 2D row-major tensor of `rows` rows of `cols` elements of `bytes` bytes (`what` names the
// element in the error message), read or written in boxes of box_cols × box_rows with `swizzle`.
CUtensorMap tile_map_2d(const void* base, CUtensorMapDataType type, int bytes, const char* what,
                        std::int64_t cols, std::int64_t rows, int box_cols, int box_rows,
                        CUtensorMapSwizzle swizzle) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(cols) * cuuint64_t(bytes)};  // bytes between rows
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)},
                   element_strides[2] = {1, 1};
  const CUresult r =
      encode_tiled()(&map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("fp8ref gpu: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(r) +
                    ") on " + std::to_string(rows) + " x " + std::to_string(cols) + " " + what);
  return map;
}

}  // namespace

CUtensorMap fp8_tile_map(const void* base, std::int64_t cols, std::int64_t rows, int box_rows) {
  return tile_map_2d(base, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, "bytes", cols, rows, 128, box_rows,
                     CU_TENSOR_MAP_SWIZZLE_128B);
}

CUtensorMap out_tile_map(const void* base, bool bf16, std::int64_t cols, std::int64_t rows,
                         int box_rows) {
  return bf16 ? tile_map_2d(base, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, "bf16", cols, rows, 32,
                            box_rows, CU_TENSOR_MAP_SWIZZLE_64B)
              : tile_map_2d(base, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, "f32", cols, rows, 32,
                            box_rows, CU_TENSOR_MAP_SWIZZLE_128B);
}

CUtensorMap f32_row_map(const void* base, std::int64_t cols, std::int64_t rows, int box_cols) {
  return tile_map_2d(base, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, "f32 scales", cols, rows, box_cols,
                     1, CU_TENSOR_MAP_SWIZZLE_NONE);
}

}  // namespace fp8ref::gpu::detail
