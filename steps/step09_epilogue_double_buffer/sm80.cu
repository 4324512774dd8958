// Step 09 · double-buffered epilogue (the sm80 twin: any GPU of compute capability 8.0+).
//
// The Hopper twin of this step stores C in chunks through two staging buffers: the TMA drains one
// while the warps pack the other, and the 64 KiB the whole staging tile took buys the ring a stage.
// Below sm_90 there is no engine to drain a buffer: a warp's `st.global` is the drain. But a store is
// fire-and-forget (the warp does not wait for it), so what holds an sm80 epilogue back is not the
// store; it is the block barrier: step 08 stages the whole tile in the ring's place, so every warp
// waits for the slowest before any can stage, and again before any can store.
//
// Here each warp stores its own 64×64 part of C through two private chunks of 8 rows × 64 columns
// (1 KiB each, 128-byte rows swizzled as in step 05), outside the ring:
//   - pack: the warp's pairs for 8 rows go into chunk c % 2 (`st.shared.b32`, conflict-free);
//   - `__syncwarp()`: the warp's lanes see each other's pairs; and, since every lane read chunk c − 1
//     before it got here, chunk c + 1 may now overwrite the buffer chunk c − 1 used;
//   - drain: 16 bytes a lane, `ld.shared.v4` then `st.global.v4`, eight lanes per 128-byte row of C.
// One warp barrier per chunk, no block barrier: a warp that finishes its MMAs stores at once, while
// others still compute. 8 warps × 2 KiB = 16 KiB, beside a ring of three stages: 160 KiB, within an
// A100's 163. A 99 KiB part has no room beside its two stages: there the chunks are carved from the
// ring after one block barrier (STAGING_IN_RING, step.rs), and this rung is worth less.
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory) is set by step.rs"
#endif
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (the occupancy the register budget is planned for) is set by step.rs"
#endif
#ifndef STAGES
#error "STAGES (K tiles in the ring) is set by step.rs"
#endif
#ifndef STAGING_IN_RING
#error "STAGING_IN_RING (1: the epilogue's chunks are carved from the ring, on a 99 KiB part) is set by step.rs"
#endif

enum : int {
    WARPS_M = BM / 64,            // warps along M: 4 for the 256-row tile
    WARPS_N = 2,                  // warps along N
    THREADS = 32 * WARPS_M * WARPS_N,
    WM = BM / WARPS_M,            // rows of C per warp
    WN = BN / WARPS_N,            // columns of C per warp
    M_TILES = WM / 16,            // mma tiles of 16 rows per warp
    N_TILES = WN / 8,             // mma tiles of 8 columns per warp
    ROW_BYTES = 128,              // one row of a tile: BK = 64 bf16, eight 16-byte chunks
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES,
    A_PIECES = BM * BK / 8,       // 16-byte pieces per A tile
    B_PIECES = BN * BK / 8,
    CHUNK_ROWS = 8,               // rows of C per staging chunk: half an mma tile's 16
    CHUNK_BYTES = CHUNK_ROWS * WN * 2,
    WARP_STAGING_BYTES = 2 * CHUNK_BYTES,  // two chunks: one packed while the other drains
};
static_assert(WN * 2 == ROW_BYTES, "a chunk row is one 128-byte swizzled row: 64 columns of bf16");
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp computes whole 16×16 pairs of mma tiles");
static_assert(BK * 2 == ROW_BYTES, "the 128-byte swizzle works on rows of 128 bytes: BK = 64");
static_assert(A_PIECES % THREADS == 0 && B_PIECES % THREADS == 0, "every thread copies the same count");
static_assert(STAGES >= 2, "a ring has a stage being filled and a stage being read");
static_assert(BK / 16 % 2 == 0, "slices alternate between two sets of fragments, and a K tile's first is in the first set");

// ANCHOR: load
// Copies the K tile that starts at k0 as ROWS rows of 128 bytes, swizzled. Piece p is chunk p % 8 of
// row p / 8: eight consecutive threads copy one whole row, a warp four whole 128-byte lines. Each piece
// lands where the swizzle puts it. Pieces past the edge of the matrix arrive as zeros, as in step 04.
// A thread's pieces are chunk tid % 8 of rows tid / 8 + 32i: the same row % 8, so the same swizzle;
// their places are one address plus multiples of 32 rows, their sources one pointer plus multiples of
// 32 rows of the matrix, and piece i is inside while 32i is short of the rows left below the first:
// a few instructions a piece.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 tile, const bf16* __restrict__ matrix, int rows, int K, int row0,
                                          int k0, int tid) {
    constexpr int ROWS_PER_PASS = THREADS / 8;
    const int row = row0 + tid / 8, chunk = tid % 8;
    const u32 dst = tile + swizzle_128b_offset(tid / 8, chunk);
    const int k = k0 + 8 * chunk;
    const int rows_left = k < K ? rows - row : 0;
    const bf16* src = matrix + (i64)row * K + k;
    #pragma unroll
    for (int i = 0; i < ROWS / ROWS_PER_PASS; ++i) {
        const bool inside = i * ROWS_PER_PASS < rows_left;
        cp_async_16(dst + i * ROWS_PER_PASS * ROW_BYTES, inside ? src : matrix, inside);
        src += (i64)ROWS_PER_PASS * K;
    }
}
// ANCHOR_END: load

// ANCHOR: fragments
// One k16 slice's operands of a warp's 64×64: its four row tiles of A and eight column tiles of B.
struct Fragments {
    u32 a[M_TILES][4];
    u32 b[N_TILES / 2][4];
};
// ANCHOR_END: fragments

// ANCHOR: kernel
// __launch_bounds__(256, BLOCKS_PER_SM): one block of eight warps per SM. Its 96 KiB would let two fit
// in shared memory, but not in registers: a thread holds 128 accumulators and a k16 slice's fragments,
// as in step 06, well over the 65536 / 512 = 128 registers two blocks of 256 threads would leave it.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(const bf16* __restrict__ A,
                                                                         const bf16* __restrict__ B,
                                                                         bf16* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 ring = smem_address(smem);

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warp_row = warp / WARPS_N, warp_column = warp % WARPS_N;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    // ANCHOR: addresses
    // Each lane's ldmatrix row, as in step 04, now in the swizzled tile: the reader applies the swizzle
    // the writer did. A: lane l names row l % 16 of a 16-row tile, chunk 2s + l / 16 of slice s. B: lane
    // l names row (l / 16) · 8 + l % 8 of a 16-row pair of tiles, chunk 2s + (l / 8) % 2. The eight lanes
    // of a phase read one chunk of eight consecutive rows, which the swizzle spreads over all 32 banks.
    const int a_row = warp_row * WM + (lane & 15);
    const int b_row = warp_column * WN + ((lane >> 4) << 3) + (lane & 7);
    auto a_lane = [&](u32 a_tile, int i, int s) {
        return a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4));
    };
    auto b_lane = [&](u32 b_tile, int j, int s) {
        return b_tile + swizzle_128b_offset(b_row + 16 * j, 2 * s + ((lane >> 3) & 1));
    };
    // ANCHOR_END: addresses

    float acc[M_TILES][N_TILES][4];
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i)
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // ANCHOR: slice
    // Slice s of a K tile (chunks 2s and 2s + 1 of every row) into registers, and its 32 MMAs.
    auto load_fragments = [&](Fragments& f, u32 a_tile, int s) {
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i) ldmatrix_x4(f.a[i], a_lane(a_tile, i, s));
        #pragma unroll
        for (int j = 0; j < N_TILES / 2; ++j) ldmatrix_x4(f.b[j], b_lane(a_tile + A_TILE_BYTES, j, s));
    };
    auto multiply = [&](const Fragments& f) {
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i)
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j)
                mma_bf16_16816(acc[i][j], f.a[i], f.b[j / 2][2 * (j % 2)], f.b[j / 2][2 * (j % 2) + 1]);
    };
    // ANCHOR_END: slice

    const int k_tiles = (K + BK - 1) / BK;
    // ANCHOR: ring
    // Stage t % STAGES holds K tile t: its A tile, then its B tile.
    auto load_stage = [&](int t) {
        const u32 a_tile = ring + (t % STAGES) * STAGE_BYTES;
        load_tile<BM>(a_tile, A, M, K, m0, t * BK, tid);
        load_tile<BN>(a_tile + A_TILE_BYTES, B, N, K, n0, t * BK, tid);
    };
    // The prologue: the first STAGES - 1 tiles in flight, one group of copies each. Once tile 0 has
    // landed, the first slice's fragments are read before the loop.
    for (int p = 0; p < STAGES - 1; ++p) {
        if (p < k_tiles) load_stage(p);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    Fragments fragments[2];  // slice s is multiplied from fragments[s % 2] while slice s + 1 is read
    load_fragments(fragments[0], ring, 0);
    for (int t = 0; t < k_tiles; ++t) {
        // Tile t + STAGES - 1 flies while tile t is multiplied, into the slot of tile t - 1, which every
        // warp finished reading before the barrier of iteration t - 1. A group is committed even when
        // no tile is left, so that the count of groups in flight means the same in every iteration.
        if (t + STAGES - 1 < k_tiles) load_stage(t + STAGES - 1);
        cp_async_commit();
        const u32 a_tile = ring + (t % STAGES) * STAGE_BYTES;
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            if (s == BK / 16 - 1) {
                // The last slice's fragments are in registers, so every warp is done reading tile t.
                // At most STAGES - 2 groups still in flight: this thread's copies of tile t + 1 have
                // landed. The barrier makes everyone's visible, and frees tile t's slot for the copies
                // of iteration t + 1.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
            }
            // The next slice's fragments are read while this slice's MMAs run: after the last slice,
            // the first of tile t + 1 (past the last K tile, a slot nobody writes, read for nothing).
            const bool last = s == BK / 16 - 1;
            load_fragments(fragments[(s + 1) % 2], last ? ring + ((t + 1) % STAGES) * STAGE_BYTES : a_tile,
                           last ? 0 : s + 1);
            multiply(fragments[s % 2]);
        }
        // ANCHOR_END: ring
    }

    // ANCHOR: epilogue
    const MmaFragment frag(lane);
    // Every copy has landed (the last groups were empty): nothing writes the ring any more.
    cp_async_wait<0>();
    if (N % 8 == 0) {
        // ANCHOR: staging
        // This warp's two chunks: after the ring, or, on a 99 KiB part, in the ring's place once every
        // warp is done reading it (the epilogue's one block barrier there).
        if (STAGING_IN_RING) __syncthreads();
        const u32 staging = ring + (STAGING_IN_RING ? 0 : STAGES * STAGE_BYTES) + warp * WARP_STAGING_BYTES;
        // ANCHOR_END: staging
        // ANCHOR: chunks
        // Chunk c = 2i + down: rows 16i + 8·down .. + 7 of the warp's 64, all its 64 columns.
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const u32 chunk = staging + ((2 * i + down) % 2) * CHUNK_BYTES;
                // Pack: lane (g, t) holds columns 8j + 2t, 8j + 2t + 1 of row g, in 16-byte piece j of
                // the row; the swizzle puts the 8 rows' piece j in 8 different bank groups.
                #pragma unroll
                for (int j = 0; j < N_TILES; ++j) {
                    st_shared_b32(chunk + swizzle_128b_offset(frag.row, j) + 2 * frag.column,
                                  pack_bf16x2(acc[i][j][2 * down], acc[i][j][2 * down + 1]));
                }
                __syncwarp();
                // Drain: lane l copies piece l % 8 of rows l / 8 and l / 8 + 4.
                #pragma unroll
                for (int p = 0; p < 2; ++p) {
                    const int row = lane / 8 + 4 * p, piece = lane % 8;
                    const int global_row = m0 + warp_row * WM + 16 * i + 8 * down + row;
                    const int col = n0 + warp_column * WN + 8 * piece;
                    if (global_row < M && col < N) {
                        st_global_16(C + (i64)global_row * N + col, ld_shared_16(chunk + swizzle_128b_offset(row, piece)));
                    }
                }
            }
        }
        // ANCHOR_END: chunks
        return;
    }
    // N % 8 != 0: step 05's stores, straight from the fragment, pair by pair where N is even.
    const bool pairs_ok = (N % 2) == 0;
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            const int col = n0 + warp_column * WN + 8 * j + frag.column;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = m0 + warp_row * WM + 16 * i + frag.row + 8 * down;
                const float lo = acc[i][j][2 * down], hi = acc[i][j][2 * down + 1];
                if (row >= M || col >= N) continue;
                bf16* dst = C + (i64)row * N + col;
                if (pairs_ok) {
                    *reinterpret_cast<u32*>(dst) = pack_bf16x2(lo, hi);
                } else {
                    dst[0] = float_to_bf16(lo);
                    if (col + 1 < N) dst[1] = float_to_bf16(hi);
                }
            }
        }
    }
    // ANCHOR_END: epilogue
}
// ANCHOR_END: kernel
