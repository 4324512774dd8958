// Alternative to step 11's sm80.cu, design (c) on compute capability 12.x (sm_120a: RTX 50, RTX PRO 6000): the block-scaled `mma.sync … kind::mxf8f6f4.block_scale`, which applies both e8m0 scales itself; error: the hardware's (products and scales exact, its sum of 32 products into fp32 undocumented).
// What the recorded loop says: nothing, and it never will here: assembled only (ptxas, sm_120a), not run by this project.
//
// Step 11 · MXFP8, the sm80 twin's design (c) (compute capability 12.x, arch-specific sm_120a / sm_121a).
//
// sm80.cu converts every e4m3 element to bf16 with its scale folded in; design (a) (sm80_fp8_mma.cu)
// multiplies the e4m3 bytes as they are and promotes each block's partial sums with both scales on the
// CUDA cores. The consumer Blackwell GPUs do the promotion in the MMA: one
//
//     mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0
//
// is D = (A · 2^(sa − 127)) (B · 2^(sb − 127)) + C for one 16×8 tile and one MX block (K = 32, one scale
// per row of A and per column of B: scale_vec::1X), accumulating straight into C. Nothing is converted,
// nothing is promoted: the loop is loads and MMAs, as step 10's.
//
// What changes from sm80.cu, which it follows otherwise (ring, copies, scales beside each stage,
// persistent grid, stream-K, fp32 epilogue):
//   - one `ldmatrix.x4` of A gives a lane exactly the m16n8k32 fragment (rows g and g + 8, k = 4t ..
//     4t+3 of both k16 halves of the block), in the byte order of shared memory: no permutation;
//   - the scales go to the MMA as registers: each lane loads, per K tile, the blocked layout's word of
//     one row of each row tile of A and of one column of each column tile of B (the word holds the row's
//     four blocks, block 0 in the lowest byte), and the MMA of block s reads byte s of it (byte-id s).
//     With thread-id 0 the MMA reads row m of the A tile's scales from lane 4·(m % 8) + m / 8 and
//     column n of the B tile's from lane 4·n, and no other lane's word: the layout public sm_120
//     kernels use, not checked on silicon by this project.
// This kernel has not run: no GPU this project has is of compute capability 12.x.
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)
#include "flag.cuh"
#include "mx.cuh"


#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM120_ALL) && !defined(__CUDA_ARCH_FEAT_SM121_ALL)
#error "the block-scaled mma.sync needs the arch-specific sm_120a or sm_121a target"
#endif

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
// Who computes what. Tiles 0 .. dp_tiles-1 (in the order above) are data-parallel: cluster c takes
// tiles c, c + clusters, ... whole. The rest are stream-K: their K tiles, numbered tile by tile
// (tile dp_tiles's K tiles first), are cut into `sk_clusters` runs of equal length, one per cluster.
// A run may start and end inside a tile, so a cluster's run is: the end of one tile, whole tiles,
// the start of another.
struct Schedule {
    int tiles, k_tiles, clusters;
    int dp_tiles;     // tiles computed whole, one cluster each
    int sk_clusters;  // clusters sharing the K tiles of the other tiles (0: none)
    // The first K tile of cluster g's run, counted from the first stream-K tile's first K tile.
    __device__ __forceinline__ i64 sk_begin(int g) const {
        const i64 total = (i64)(tiles - dp_tiles) * k_tiles;
        return g >= sk_clusters ? total : total * g / sk_clusters;
    }
};

// One piece of work: K tiles k_begin .. k_end-1 of tile `tile`.
struct Work {
    int tile, k_begin, k_end;
};

// A cluster's pieces, in order; the producer and the consumers walk the same list.
struct WorkList {
    Schedule s;
    int cluster;
    int next_tile;  // the next data-parallel tile
    i64 sk_next;    // the next K tile of this cluster's stream-K run (it ends where the next one's begins)
    __device__ __forceinline__ WorkList(const Schedule& schedule, int cluster)
        : s(schedule), cluster(cluster), next_tile(cluster), sk_next(schedule.sk_begin(cluster)) {}
    __device__ __forceinline__ bool next(Work& w) {
        if (next_tile < s.dp_tiles) {
            w = Work{next_tile, 0, s.k_tiles};
            next_tile += s.clusters;
            return true;
        }
        // Computed when needed rather than kept: one register pair fewer beside the accumulators.
        const i64 sk_end = s.sk_begin(cluster + 1);
        if (sk_next >= sk_end) return false;
        const int t = (int)(sk_next / s.k_tiles);
        w.tile = s.dp_tiles + t;
        w.k_begin = (int)(sk_next - (i64)t * s.k_tiles);
        w.k_end = (int)min((i64)s.k_tiles, w.k_begin + (sk_end - sk_next));
        sk_next += w.k_end - w.k_begin;
        return true;
    }
};

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

// ANCHOR: block_scaled_mma
// d += (a · 2^(sa − 127)) · (b · 2^(sb − 127)) for one 16×8×32 tile of e4m3: byte BLOCK of `sa` and `sb`
// are the scales (byte-id), read from the lanes thread-id 0 names (see the top). Fragments as the fp8
// MMA's: A, 4 registers of four e4m3 (rows g, g+8 × k 4t..4t+3, then k 16+4t..); B, 2 registers.
template <int BLOCK>
__device__ __forceinline__ void mma_mx_e4m3_16832(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, u32 sa, u32 sb) {
    asm volatile(
        "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, %10, {%12, %13}, %11, {%12, %13};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(sa), "r"(sb), "n"(BLOCK), "n"(0));
}
// ANCHOR_END: block_scaled_mma

// The word of row `row`'s four scale bytes for the K tile, from the stage's scales (blocked layout).
__device__ __forceinline__ u32 scale_word(u32 scales, int row) {
    u32 w;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w) : "r"(scales + (row / 128) * SCALE_PIECE + scale_offset(row % 128)));
    return w;
}

// ANCHOR: mma
// One MX block (k32, BLOCK of the K tile's four) of a warp's 64×64: one block-scaled MMA per 16×8 tile,
// accumulating in place. Per block 4 ldmatrix.x4 of A (the whole fragment of a row tile each), 4 of B
// (two k16 halves of four column tiles each), 32 MMAs, and nothing else. `a_lanes`/`b_lanes`: this
// lane's row address in the A and B tiles (chunk 0); `a_scale`/`b_scale`: this lane's scale words for
// each row tile of A and each column tile of B.
template <int BLOCK>
__device__ __forceinline__ void mma_block(float (&acc)[M_TILES][N_TILES][4], u32 a_lanes, u32 b_lanes,
                                          const u32 (&a_scale)[M_TILES], const u32 (&b_scale)[N_TILES], int lane) {
    u32 a_op[M_TILES][4];
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        // Lanes 0..15 name rows 0..15 at the block's first k16 chunk, lanes 16..31 at its second.
        ldmatrix_x4(a_op[i], swizzled_lane(a_lanes + 16 * ROW_BYTES * i, lane, 2 * BLOCK + lane / 16));
    }
    #pragma unroll
    for (int jj = 0; jj < N_TILES / 4; ++jj) {
        // B's operands for four column tiles: both k16 halves of the block.
        u32 b_op[2][4];
        #pragma unroll
        for (int q = 0; q < 2; ++q) ldmatrix_x4(b_op[q], swizzled_lane(b_lanes + 32 * ROW_BYTES * jj, lane, 2 * BLOCK + q));
        #pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int j = 4 * jj + r;
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i)
                mma_mx_e4m3_16832<BLOCK>(acc[i][j], a_op[i], b_op[0][r], b_op[1][r], a_scale[i], b_scale[j]);
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
    // A: an x4 per row tile and MX block, lanes 0..15 and 16..31 each naming its 16 rows; B: an x4 per
    // four column tiles (32 rows, one a lane) and k16 slice. The lane's row in each tile, in bytes:
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
            // ANCHOR: scales
            // This lane's scale words (see the top): row 4·(m % 8) + m / 8 → lane, so lane l gives row
            // l / 4 + 8·(l % 2) of each row tile; lane 4n gives column n of each column tile.
            u32 a_scale[M_TILES], b_scale[N_TILES];
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) a_scale[i] = scale_word(scales, a_rows + 16 * i + lane / 4 + 8 * (lane % 2));
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j) b_scale[j] = scale_word(scales + A_SCALE_BYTES, b_rows + 8 * j + lane / 4);
            // ANCHOR_END: scales
            // The byte-id of each MMA is an immediate: the K tile's four blocks, unrolled.
            mma_block<0>(acc, a_tile + a_lane_row, b_tile + b_lane_row, a_scale, b_scale, lane);
            mma_block<1>(acc, a_tile + a_lane_row, b_tile + b_lane_row, a_scale, b_scale, lane);
            mma_block<2>(acc, a_tile + a_lane_row, b_tile + b_lane_row, a_scale, b_scale, lane);
            mma_block<3>(acc, a_tile + a_lane_row, b_tile + b_lane_row, a_scale, b_scale, lane);
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
