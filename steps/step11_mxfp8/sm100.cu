// Step 11 · mxfp8 (Blackwell, sm_100a): placeholder until the kernel lands.
//
// The contract the kernel fulfils (shared/registry.rs, `launch_mx_with_maps_in`):
//   A: M×K e4m3 bytes, B: N×K e4m3 bytes (row-major, K contiguous), read through the tensor maps;
//   scale_a, scale_b: one e8m0 byte per 1×32 block along K (2^(byte−127); 255 is NaN), in the blocked
//   layout of shared/mx.rs (rows padded to 128, blocks to 4; 512-byte tiles, byte (r%32)·16 + (r/32)·4 + c);
//   C: M×N fp32, row-major; K is a multiple of 32.
#include "common.cuh"
#include "tma.cuh"

extern "C" __global__ void gemm(const __grid_constant__ TensorMap a_map, const __grid_constant__ TensorMap b_map,
                                const __grid_constant__ TensorMap c_map, const u8* scale_a, const u8* scale_b,
                                float* C, int M, int N, int K, int use_tma_store) {
    // placeholder until the kernel lands
    __trap();
}
