// epilogue.cuh: a consumer warpgroup's 64 × TILE_N tile of fp32 accumulators (the wgmma fragment
// layout, wgmma.cuh) written to fp32 C. Step 11's kernels (the step's and design (a)) share it.
#pragma once
#include "common.cuh"
#include "tma.cuh"
#include "wgmma.cuh"
#include "warpgroup.cuh"

// ANCHOR: store_f32
// Step 10's chunked epilogue, in fp32: a chunk is 64 rows × 32 columns (128-byte rows, 128-byte
// swizzle), staged in one of two 8 KiB buffers (`staging`, 16 KiB, 1024-byte aligned) while the other
// drains through a TMA store; `barrier` is a named barrier of this warpgroup's 128 threads. The
// fragment's pairs (row, 8j + 2t .. + 1) go out as 8-byte stores. Without a tensor map for C
// (`use_tma_store` false: N % 4 != 0, so rows of fp32 do not start on 16 bytes) the pairs go to C
// directly. The caller waits for the last stores' reads (tma_store_wait_read<0>) before it exits.
//
// ANCHOR: banks
// The order of the stores is chosen for the banks. An 8-byte store is served a half-warp at a time:
// 16 lanes, 128 bytes, one pass through the 32 banks if no two lanes' 16-byte chunks share a bank
// group. In the fragment those lanes are rows g = 0..3 (lane / 4) and columns 2t (t = lane % 4); the
// swizzle puts column chunk c of row g at chunk c ^ g. If every lane stored the same fragment column
// j, rows g and g ^ 1 would hit the same two chunks ((2j' + h) ^ g for h = t / 2): 16 banks, twice
// each, two passes. So lanes of odd rows store column j ^ 2 while lanes of even rows store j: odd
// rows move four chunks over, and each half-warp covers all 8 chunks once. Each lane still stores
// all four of the chunk's fragment columns, in its own order; the choice costs a select per value.
// ANCHOR_END: banks
template <int TILE_N>
__device__ __forceinline__ void store_c_f32(const float (&acc)[TILE_N / 2], const WgmmaFragment& frag, int thread,
                                            int barrier, unsigned char* staging, const TensorMap* c_map,
                                            bool use_tma_store, float* C, int M, int N, int row0, int n0) {
    constexpr int BOX_COLUMNS = 32, BOX_BYTES = 64 * 128, BUFFERS = 2;
    // The buffer index restarts at 0 in every tile (`c % BUFFERS`), and each chunk waits only until
    // one store group is left pending (tma_store_wait_read<BUFFERS - 1>). That protects a buffer
    // from the store that last read it only if that store is the one before last, across tiles too:
    // so every tile must store an even number of chunks (with one chunk, tile t+1 would overwrite
    // buffer 0 while tile t's store from it may still be reading).
    static_assert((TILE_N / BOX_COLUMNS) % BUFFERS == 0,
                  "store_c_f32: the staging buffers alternate across tiles only if a tile stores an even number "
                  "of 32-column chunks");
    if (use_tma_store) {
        const u32 staging_address = smem_address(staging);
        #pragma unroll
        for (int c = 0; c < TILE_N / BOX_COLUMNS; ++c) {
            const int buffer = c % BUFFERS;
            if (thread == 0) tma_store_wait_read<BUFFERS - 1>();
            named_barrier_sync(barrier, 128);
            // Chunk (2j' + t / 2) of row g lands at chunk (2j' + t / 2) ^ g, and j' = j ^ 2 on odd rows
            // flips bit 2: all of that but 2j is one value per lane.
            const u32 odd_row = frag.row % 2;
            const u32 lane_chunk = (frag.column / 4) ^ (4 * odd_row) ^ (frag.row % 8);
            const u32 lane_address = staging_address + buffer * BOX_BYTES + frag.row * 128 + (frag.column % 4) * 4;
            #pragma unroll
            for (int j = 4 * c; j < 4 * c + 4; ++j) {
                #pragma unroll
                for (int down = 0; down < 2; ++down) {
                    const u32 address = lane_address + down * 8 * 128 + (((2 * (j % 4)) ^ lane_chunk) * 16);
                    // The select sits in the store's own statement, so that the compiler cannot hoist
                    // all of a tile's selects (a register each) ahead of the stores.
                    asm volatile(
                        "{\n .reg .pred odd;\n .reg .f32 x, y;\n setp.ne.u32 odd, %5, 0;\n"
                        " selp.f32 x, %3, %1, odd;\n selp.f32 y, %4, %2, odd;\n st.shared.v2.f32 [%0], {x, y};\n}" ::"r"(
                            address),
                        "f"(acc[4 * j + 2 * down]), "f"(acc[4 * j + 2 * down + 1]), "f"(acc[4 * (j ^ 2) + 2 * down]),
                        "f"(acc[4 * (j ^ 2) + 2 * down + 1]), "r"(odd_row)
                        : "memory");
                }
            }
            fence_async_shared();
            named_barrier_sync(barrier, 128);
            if (thread == 0) {
                tma_store_2d(c_map, staging + buffer * BOX_BYTES, n0 + c * BOX_COLUMNS, row0);
                tma_store_commit();
            }
        }
    } else {
        #pragma unroll
        for (int j = 0; j < TILE_N / 8; ++j) {
            const int col = n0 + frag.column + 8 * j;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = row0 + frag.row + 8 * down;
                if (row >= M) continue;
                float* dst = C + (i64)row * N + col;
                if (col < N) dst[0] = acc[4 * j + 2 * down];
                if (col + 1 < N) dst[1] = acc[4 * j + 2 * down + 1];
            }
        }
    }
}
// ANCHOR_END: store_f32
