// Step 11 · MXFP8 (the sm80 twin: any GPU of compute capability 8.0+): exact conversion in registers.
//
// A and B are e4m3 bytes with one e8m0 scale per 32 elements along K (shared/check/mx.rs), C is fp32.
// An A100 has no fp8 MMA at all, and no GPU of this twin has Blackwell's block-scaled tcgen05 MMA; but
// every MX value, e4m3 · 2^(s − 127), is exactly a bf16 (mx.cuh), so step 10's twin can multiply them
// with its bf16 `mma.sync`, converting each fragment in registers between `ldmatrix` and the MMA. The
// products and their fp32 sums are then those of a bf16 GEMM on the dequantised operands.
//
// What changes from step 10's twin:
//   - a K tile is 128 e4m3 elements: a row is still 128 bytes, swizzled as in step 05, so the ring,
//     its 48 KiB stages and the copies are step 10's; with the tiles come their scales (four blocks of
//     32 a row, one 512-byte piece of the blocked layout per 128 rows: 1.5 KiB a stage);
//   - one `ldmatrix.x4` now brings a lane four e4m3 bytes of a row from each of four 8×16-byte
//     matrices: two k16 slices of an MMA's operand. The lane holds k = 4t .. 4t+3 of its row where
//     the MMA wants k = 2t, 2t+1 and 2t+8, 2t+9; a dot product does not care in which order k is
//     summed, as long as A and B agree. So the lane's even bytes (k = 4t, 4t+2) serve as the MMA's
//     k = 2t, 2t+1 and its odd bytes (4t+1, 4t+3) as 2t+8, 2t+9, for A and for B alike (mx.cuh's
//     `e4m3x4_place` splits them);
//   - each placed pair is multiplied by its row's block factor (mx.cuh: exact; one bf16x2 multiply
//     where every scale of the K tile is below 2^1, two otherwise, chosen per warp and K tile);
//   - C is fp32: 8 bytes a pair, staged through the same warp-private chunks (of 32 columns).
// The persistent grid, the grouped order and stream-K are step 10's.
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)
#include "flag.cuh"
#include "schedule.cuh"
#include "mx.cuh"


#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory, in e4m3 elements) is set by step.rs"
#endif
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (the occupancy the register budget is planned for) is set by step.rs"
#endif
#ifndef STAGES
#error "STAGES (K tiles in the ring) is set by step.rs"
#endif
#ifndef STAGING
#error "STAGING (1: warp-private chunks beside the ring; 0: stores from registers, on a 99 KiB part) is set by step.rs"
#endif
#ifndef GROUP_M
#error "GROUP_M (tile rows per group of the tile order) is set by step.rs"
#endif

enum : int {
    WARPS_M = BM / 64,
    WARPS_N = 2,
    THREADS = 32 * WARPS_M * WARPS_N,
    WM = BM / WARPS_M,
    WN = BN / WARPS_N,
    M_TILES = WM / 16,
    N_TILES = WN / 8,
    ROW_BYTES = 128,              // one row of a tile: BK = 128 e4m3, eight 16-byte chunks
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    SCALE_PIECE = 512,            // the blocked layout's 128 rows × 4 blocks of scales
    A_SCALE_BYTES = BM / 128 * SCALE_PIECE,
    B_SCALE_BYTES = BN / 128 * SCALE_PIECE,
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES,
    SCALE_STAGE_BYTES = A_SCALE_BYTES + B_SCALE_BYTES,
    CHUNK_ROWS = 8,               // rows of C per staging chunk
    CHUNK_COLUMNS = 32,           // fp32 columns per chunk: one 128-byte row
    CHUNK_BYTES = CHUNK_ROWS * CHUNK_COLUMNS * 4,
    WARP_STAGING_BYTES = 2 * CHUNK_BYTES,
};
static_assert(BK == ROW_BYTES && BK == 4 * 32, "a K tile is one 128-byte row of e4m3: four MX blocks");
static_assert(BM % 128 == 0 && BN % 128 == 0, "tiles cover whole 128-row pieces of the blocked scale layout");
static_assert(BM * BK / 16 % THREADS == 0 && BN * BK / 16 % THREADS == 0, "every thread copies the same count");
static_assert(STAGES >= 2, "a ring has a stage being filled and a stage being read");

// ANCHOR: load
// Step 10's copy, of bytes: ROWS rows of 128 e4m3, swizzled; pieces past the matrix arrive as zeros.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 tile, const u8* __restrict__ matrix, int rows, int K, int row0, int k0,
                                          int tid) {
    // Thread tid copies chunk tid % 8 of rows tid / 8 + 32i: one source pointer and one swizzled
    // destination, stepped by 32 rows (a multiple of the swizzle's 8).
    constexpr int ROWS_PER_PASS = THREADS / 8;
    const int row = tid / 8, chunk = tid % 8;
    const int k = k0 + 16 * chunk;
    const u8* src = matrix + (i64)(row0 + row) * K + k;
    const u32 dst = tile + swizzle_128b_offset(row, chunk);
    #pragma unroll
    for (int i = 0; i < ROWS / ROWS_PER_PASS; ++i) {
        const bool inside = row0 + row + ROWS_PER_PASS * i < rows && k < K;
        cp_async_16(dst + ROWS_PER_PASS * ROW_BYTES * i, inside ? src + (i64)ROWS_PER_PASS * i * K : matrix, inside);
    }
}

// The scales of ROWS rows for K tile t: one 512-byte piece of the blocked layout per 128 rows (its
// four blocks are the K tile's), 16 bytes a thread. A piece past the last 128 rows the layout holds
// arrives as zeros (its rows are past M or N, and their elements are zeros too).
template <int ROWS>
__device__ __forceinline__ void load_scales(u32 dst, const u8* __restrict__ scales, int rows, int K, int row0, int t,
                                            int tid) {
    const int pieces = ROWS / 128 * SCALE_PIECE / 16;
    if (tid < pieces) {
        const int row_tile = row0 / 128 + tid / (SCALE_PIECE / 16);
        const bool inside = row_tile * 128 < rows;
        const i64 at = ((i64)row_tile * ((K / 32 + 3) / 4) + t) * SCALE_PIECE + 16 * (tid % (SCALE_PIECE / 16));
        cp_async_16(dst + 16 * tid, inside ? scales + at : scales, inside);
    }
}
// ANCHOR_END: load

// Step 10's schedule, as the Hopper twin has it (sm90.cu), where a cluster is here one block.
// ANCHOR: schedule
// The order of the tiles. A tile here is a cluster's CLUSTER_M · BM rows × CLUSTER_N · BN columns of C.
struct TileOrder {
    int tiles_m, tiles_n;  // tiles down M and along N
    __device__ __forceinline__ int count() const { return tiles_m * tiles_n; }
    // Tile `index` -> (tile row, tile column): groups of GROUP_M tile rows; inside a group the index
    // runs down the rows first, then along N.
    __device__ __forceinline__ void locate(int index, int& tile_m, int& tile_n) const {
        const int per_group = GROUP_M * tiles_n;
        const int group = index / per_group;
        const int first_m = group * GROUP_M;
        const int rows = min(GROUP_M, tiles_m - first_m);  // the last group may be shorter
        const int within = index - group * per_group;
        tile_m = first_m + within % rows;
        tile_n = within / rows;
    }
};
// ANCHOR_END: schedule

// ANCHOR: stream_k
// Who computes what: `Schedule` (the data-parallel tiles, then the stream-K runs of K tiles) and
// each block's `WorkList` of pieces (a block is a cluster of one) are schedule.cuh's.
// The flags between blocks are flag.cuh's: `flag_release` after the partial sums (the warp's
// threads synchronised first), `flag_wait` before a finisher loads them.
// ANCHOR_END: stream_k

// ANCHOR: cursor
// The K tiles this block copies, in the order it computes them: a second walk of the same list,
// which the copies run STAGES − 1 K tiles ahead of, from one tile into the next.
struct LoadCursor {
    WorkList list;
    Work w;
    bool more;
    int k;
    __device__ __forceinline__ LoadCursor(const Schedule& schedule, int block) : list(schedule, block) {
        more = list.next(w);
        k = w.k_begin;
    }
    // The next K tile to copy (tile index, K tile); false when the block has copied all of its work.
    __device__ __forceinline__ bool next(int& tile, int& t) {
        if (!more) return false;
        tile = w.tile;
        t = k;
        if (++k == w.k_end) {
            more = list.next(w);
            k = w.k_begin;
        }
        return true;
    }
};
// ANCHOR_END: cursor

// The address of 16-byte chunk `chunk` of this lane's row, from the row's start: step 05's swizzle,
// with row % 8 = lane % 8 (every row a lane names here is a multiple of 8 rows past its lane's).
__device__ __forceinline__ u32 swizzled_lane(u32 row_start, int lane, int chunk) {
    return row_start + ((chunk ^ (lane % 8)) * 16);
}

// ANCHOR: convert
// An MMA operand's four registers from two `ldmatrix` words of e4m3 (rows g and g + 8, k = 4t .. 4t+3
// of a k16 slice): even bytes as k = 2t, 2t+1, odd bytes as k = 2t+8, 2t+9 (see the top), each pair
// times its row's block factor.
template <bool WIDE>
__device__ __forceinline__ void a_operand(u32 (&a)[4], u32 top, u32 bottom, u32 top_factor, u32 bottom_factor) {
    e4m3x4_to_bf16x4(top, top_factor, WIDE, a[0], a[2]);
    e4m3x4_to_bf16x4(bottom, bottom_factor, WIDE, a[1], a[3]);
}
// ANCHOR_END: convert

// The factor of row `row`'s block `block` of the K tile, from the stage's scales (blocked layout).
template <bool WIDE>
__device__ __forceinline__ u32 factor_of(u32 scales, int row, int block) {
    u32 s;
    asm volatile("ld.shared.u8 %0, [%1];" : "=r"(s) : "r"(scales + (row / 128) * SCALE_PIECE + scale_offset(row % 128) + block));
    return scale_bf16x2(s, WIDE);
}

// ANCHOR: mma
// One MX block (k32, s of the K tile's four) of a warp's 64×64, one k16 slice at a time, so that beside
// the 128 accumulators a thread holds only one slice's converted B (16 registers) and the block's 16
// factors: per slice 2 ldmatrix.x4 of B (four column tiles each) and 4 ldmatrix.x2 of A, the
// conversion, 32 MMAs. `a_lanes`/`b_lanes`: this lane's row address in the A and B tiles (chunk 0);
// `a_rows`/`b_rows`: the first row of the warp's 64 in each; WIDE: the K tile's conversion.
template <bool WIDE>
__device__ __forceinline__ void mma_block(float (&acc)[M_TILES][N_TILES][4], u32 a_lanes, u32 b_lanes, u32 scales,
                                          int s, int a_rows, int b_rows, int lane) {
    const int g = lane / 4;
    u32 b_factor[N_TILES], a_factor[M_TILES][2];
    #pragma unroll
    for (int j = 0; j < N_TILES; ++j) b_factor[j] = factor_of<WIDE>(scales + A_SCALE_BYTES, b_rows + 8 * j + g, s);
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i)
        #pragma unroll
        for (int down = 0; down < 2; ++down) a_factor[i][down] = factor_of<WIDE>(scales, a_rows + 16 * i + 8 * down + g, s);
    #pragma unroll
    for (int q = 0; q < 2; ++q) {  // the block's two k16 slices
        const int chunk = 2 * s + q;
        // B's operands for the slice, converted once for the four row tiles of A.
        u32 b_op[N_TILES][2];
        #pragma unroll
        for (int jj = 0; jj < N_TILES / 4; ++jj) {
            u32 b[4];
            ldmatrix_x4(b, swizzled_lane(b_lanes + 32 * ROW_BYTES * jj, lane, chunk));
            #pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int j = 4 * jj + r;
                e4m3x4_to_bf16x4(b[r], b_factor[j], WIDE, b_op[j][0], b_op[j][1]);
            }
        }
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            u32 top, bottom, a_op[4];
            ldmatrix_x2(top, bottom, swizzled_lane(a_lanes + 16 * ROW_BYTES * i, lane, chunk));
            a_operand<WIDE>(a_op, top, bottom, a_factor[i][0], a_factor[i][1]);
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j) mma_bf16_16816(acc[i][j], a_op, b_op[j][0], b_op[j][1]);
        }
    }
}
// ANCHOR_END: mma

// ANCHOR: kernel
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(
    const u8* __restrict__ A, const u8* __restrict__ B, const u8* __restrict__ scale_a, const u8* __restrict__ scale_b,
    float* __restrict__ C, float* __restrict__ workspace, u32* __restrict__ flags, int M, int N, int K, int dp_tiles,
    int sk_clusters, int epoch) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 ring = smem_address(smem);
    const u32 scale_ring = ring + STAGES * STAGE_BYTES;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warp_row = warp / WARPS_N, warp_column = warp % WARPS_N;

    const int block = blockIdx.x;
    const TileOrder order{(M + BM - 1) / BM, (N + BN - 1) / BN};
    const Schedule schedule{order.count(), (K + BK - 1) / BK, (int)gridDim.x, dp_tiles, sk_clusters};
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * BM;
        n0 = tile_n * BN;
    };

    // For e4m3 a matrix of an ldmatrix is 8 rows × 16 bytes: 16 elements of K, one k16 slice (a chunk).
    // A: an x2 per row tile and slice, lanes 0..15 naming its 16 rows; B: an x4 per four column tiles
    // (32 rows, one a lane) and slice. The lane's row in each tile, in bytes:
    const int a_rows = warp_row * WM, b_rows = warp_column * WN;
    const u32 a_lane_row = (a_rows + (lane & 15)) * ROW_BYTES, b_lane_row = (b_rows + lane) * ROW_BYTES;
    const MmaFragment frag(lane);

    LoadCursor loads(schedule, block);
    int origin_of = -1, load_m0 = 0, load_n0 = 0;  // the tile the copies are in, and its origin
    auto load_next = [&](u32 copied) {
        int tile, t;
        if (loads.next(tile, t)) {
            // The tile's origin only when the cursor enters a new one (its divisions would otherwise
            // cost every K tile).
            if (tile != origin_of) {
                origin(tile, load_m0, load_n0);
                origin_of = tile;
            }
            const int m0 = load_m0, n0 = load_n0;
            const u32 a_tile = ring + (copied % STAGES) * STAGE_BYTES;
            load_tile<BM>(a_tile, A, M, K, m0, t * BK, tid);
            load_tile<BN>(a_tile + A_TILE_BYTES, B, N, K, n0, t * BK, tid);
            const u32 scales = scale_ring + (copied % STAGES) * SCALE_STAGE_BYTES;
            load_scales<BM>(scales, scale_a, M, K, m0, t, tid);
            load_scales<BN>(scales + A_SCALE_BYTES, scale_b, N, K, n0, t, tid);
        }
        cp_async_commit();
    };
    for (int p = 0; p < STAGES - 1; ++p) load_next(p);

    auto slot = [&](int g) { return reinterpret_cast<float4*>(workspace) + (i64)g * (BM * BN / 4); };

    float acc[M_TILES][N_TILES][4];

    u32 it = 0;
    WorkList work(schedule, block);
    Work w;
    while (work.next(w)) {
        int m0, n0;
        origin(w.tile, m0, n0);
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i)
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j)
                #pragma unroll
                for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

        for (int t = w.k_begin; t < w.k_end; ++t, ++it) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            load_next(it + STAGES - 1);
            const u32 a_tile = ring + (it % STAGES) * STAGE_BYTES;
            const u32 b_tile = a_tile + A_TILE_BYTES;
            const u32 scales = scale_ring + (it % STAGES) * SCALE_STAGE_BYTES;
            // ANCHOR: wide
            // The narrow factor needs every scale byte of the tile below 135; the warp checks the stage's
            // (a byte of 128 or more, its top bit set, takes the exact two-multiply path).
            u32 high = 0;
            #pragma unroll
            for (int c = lane; c < SCALE_STAGE_BYTES / 16; c += 32) {
                const Chunk16 chunk = ld_shared_16(scales + 16 * c);
                high |= (chunk.w[0] | chunk.w[1] | chunk.w[2] | chunk.w[3]) & 0x80808080u;
            }
            const bool wide = __any_sync(0xffffffffu, high != 0);
            // ANCHOR_END: wide
            #pragma unroll 1
            for (int s = 0; s < BK / 32; ++s) {
                if (wide) mma_block<true>(acc, a_tile + a_lane_row, b_tile + b_lane_row, scales, s, a_rows, b_rows, lane);
                else mma_block<false>(acc, a_tile + a_lane_row, b_tile + b_lane_row, scales, s, a_rows, b_rows, lane);
            }
        }
        // ANCHOR: fixup
        if (w.k_begin > 0) {
            // Not the tile's first K tiles: leave the partial sums for the block that has them, raise
            // this block's flag, and go on. A block's run starts inside a tile at most once.
            float4* mine = slot(block);
            #pragma unroll
            for (int v = 0; v < M_TILES * N_TILES; ++v) {
                const float* q = acc[v / N_TILES][v % N_TILES];
                __stcg(&mine[THREADS * v + tid], make_float4(q[0], q[1], q[2], q[3]));
            }
            __syncthreads();
            if (tid == 0) flag_release(&flags[block], epoch);
            continue;
        }
        if (w.k_end < schedule.k_tiles) {
            // The tile's first K tiles, and others computed the rest: the blocks after this one whose
            // runs start inside the tile. Add their partial sums, in block order.
            const i64 tile_end = (i64)(w.tile - schedule.dp_tiles + 1) * schedule.k_tiles;
            for (int g = block + 1; g < schedule.sk_clusters && schedule.sk_begin(g) < tile_end; ++g) {
                if (schedule.sk_begin(g) == schedule.sk_begin(g + 1)) continue;  // an empty run
                if (tid == 0) flag_wait_acquire(&flags[g], (u32)epoch, g);
                __syncthreads();
                const float4* theirs = slot(g);
                #pragma unroll
                for (int v = 0; v < M_TILES * N_TILES; ++v) {
                    const float4 p = __ldcg(&theirs[THREADS * v + tid]);
                    float* q = acc[v / N_TILES][v % N_TILES];
                    q[0] += p.x;
                    q[1] += p.y;
                    q[2] += p.z;
                    q[3] += p.w;
                }
            }
        }
        // ANCHOR_END: fixup

        // ANCHOR: epilogue
        if (STAGING && N % 4 == 0) {
            // Step 10's warp-private chunks, of fp32: 8 rows × 32 columns (128 bytes a row) each, the
            // warp's 64 columns in two halves.
            const u32 staging = ring + STAGES * STAGE_BYTES + STAGES * SCALE_STAGE_BYTES + warp * WARP_STAGING_BYTES;
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                #pragma unroll
                for (int down = 0; down < 2; ++down) {
                    #pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const u32 chunk = staging + ((2 * down + half) % 2) * CHUNK_BYTES;
                        #pragma unroll
                        for (int jj = 0; jj < N_TILES / 2; ++jj) {
                            const int j = 4 * half + jj;
                            const int byte = 32 * jj + 4 * frag.column;  // column 8jj + 2t of the half
                            asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(chunk + swizzle_128b_offset(frag.row, byte / 16) + byte % 16),
                                         "f"(acc[i][j][2 * down]), "f"(acc[i][j][2 * down + 1])
                                         : "memory");
                        }
                        __syncwarp();
                        #pragma unroll
                        for (int p = 0; p < 2; ++p) {
                            const int row = lane / 8 + 4 * p, piece = lane % 8;
                            const int global_row = m0 + warp_row * WM + 16 * i + 8 * down + row;
                            const int col = n0 + warp_column * WN + CHUNK_COLUMNS * half + 4 * piece;
                            if (global_row < M && col < N) {
                                st_global_16(C + (i64)global_row * N + col,
                                             ld_shared_16(chunk + swizzle_128b_offset(row, piece)));
                            }
                        }
                    }
                }
            }
            continue;
        }
        // Straight from the fragment.
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j) {
                const int col = n0 + warp_column * WN + 8 * j + frag.column;
                #pragma unroll
                for (int down = 0; down < 2; ++down) {
                    const int row = m0 + warp_row * WM + 16 * i + frag.row + 8 * down;
                    if (row >= M || col >= N) continue;
                    float* dst = C + (i64)row * N + col;
                    dst[0] = acc[i][j][2 * down];
                    if (col + 1 < N) dst[1] = acc[i][j][2 * down + 1];
                }
            }
        }
        // ANCHOR_END: epilogue
    }
    cp_async_wait<0>();
}
// ANCHOR_END: kernel
