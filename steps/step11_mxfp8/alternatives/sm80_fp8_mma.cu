// Alternative to step 11's sm80.cu, design (a) on sm_89+: one fp8 `mma.sync.m16n8k32` per 32-element MX block, its fp32 partial sums promoted with both scales; error bound: the step's checks (2^-9 rel. Frobenius against the twin's kernel and cuBLAS fp32 C, 2^-10 against the f64 MX product), no exactness claimed for the MMA's own sum of a block's 32 products.
// What the recorded loop says: its time beside the step is in chapter 11's sm80 alternatives table; on sm_90 each fp8 mma.sync is assembled as fp16 conversions and two HMMA (SASS, below): there it is the step's MMAs with a conversion of its own, plus the promotion.
//
// Step 11 · MXFP8, the sm80 twin's design (a) (compute capability 8.9 or newer: L4, RTX 40/50, H100, H200).
//
// sm80.cu turns every e4m3 element into a bf16 with its block's scale folded in and runs bf16 MMAs,
// because an A100 has nothing else. From Ada on, `mma.sync` takes e4m3 itself: one
// `mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32` is 16×8 outputs of a dot product of length 32,
// exactly one MX block. So this kernel converts nothing: each MMA multiplies one block's raw e4m3 bytes
// into fresh fp32 partial sums (scratch), and the CUDA cores promote them:
//
//     acc[m][n] += scratch[m][n] · 2^(sa[m][kb] − 127) · 2^(sb[n][kb] − 127)
//
// one FMUL (the two scales' product: exact, both are powers of two) and one FFMA per output per block.
// The products inside an MMA are exact (4 significant bits each); how the tensor core adds the 32 of
// them, and so how close scratch is to their exact sum, is the hardware's and is not documented as
// fp32-exact: the step's checks against cuBLAS fp32 C and the f64 reference measure it. The GPU test
// `cargo test --release --test sm80 -- the_sm80_fp8_alternative` prints both errors at six shapes.
//
// Where it runs: ptxas refuses fp8 `mma.sync` below sm_89. On sm_89 (Ada) and sm_120 it issues one
// QMMA.16832 per MMA. Hopper's tensor cores take fp8 only through wgmma: for sm_90 ptxas converts the
// bytes to fp16 (F2FP.F16.E4M3.UNPACK_B) and issues two HMMA.16816.F32 per MMA (`step11 --emit sass
// --alternative sm80-fp8-mma --arch sm90`), so on an H100 or H200 this kernel does the main kernel's
// conversion and MMAs and the promotion besides: it runs there to be verified, not to win.
//
// What changes from sm80.cu, which it follows otherwise (ring, copies, scales beside each stage,
// persistent grid, stream-K, fp32 epilogue):
//   - one `ldmatrix.x4` of A now gives a lane exactly the m16n8k32 fragment (rows g and g + 8, k = 4t ..
//     4t+3 of both k16 halves of the block): the byte order the fp8 MMA wants is the one in shared
//     memory, so there is no K permutation and no conversion;
//   - the factors are fp32 (2^(s − 127), the bits s << 23), for C's rows (A) and C's columns (B), each
//     one shared load at a constant offset from one of two per-lane registers; a K tile holding a scale
//     byte of 0 (2^−127, an fp32 subnormal) or 255 (NaN) takes the exact conversion, chosen per warp
//     and K tile, as sm80.cu chooses its wide path (the blocked layout pads with 0, so the K tiles of a
//     ragged shape's padded rows or blocks take it too).
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)
#include "flag.cuh"
#include "mx.cuh"


#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
#error "fp8 mma.sync (e4m3) needs compute capability 8.9 or newer: this alternative is registered for sm_89+ only"
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

// ANCHOR: fp8_mma
// d = a · b for one 16×8×32 tile of e4m3 (fp32 partial sums; the accumulator input is zero, so each
// block's sums start fresh). Fragments: A, 4 registers of four e4m3 (rows g, g+8 × k 4t..4t+3, then
// k 16+4t..); B, 2 registers (k 4t..4t+3 and 16+4t.., column g); D as the bf16 MMA's.
__device__ __forceinline__ void mma_e4m3_16832(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %10, %10, %10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}
// ANCHOR_END: fp8_mma

// ANCHOR: factors
// Where a lane's factors lie in a stage's scales: the blocked layout's byte of `row`'s block 0 (its
// 128-row piece, then mx.cuh's offset), and the step from there to row + d for the rows a lane reads,
// which stay inside one piece and one 32-row group's reach (row % 32 + d % 32 < 32), so that every
// factor is one shared load at a constant offset from one of two registers.
__device__ __forceinline__ u32 scale_row_offset(int row) { return (row / 128) * SCALE_PIECE + scale_offset(row % 128); }
__device__ __forceinline__ constexpr u32 scale_step(int d) { return (d % 32) * 16 + (d / 32) * 4; }

// The fp32 factor 2^(s − 127) of the scale byte at `address`: the bits s << 23 for s = 1 .. 254;
// EXACT: mx.cuh's conversion, which also gives s = 0 (an fp32 subnormal) and s = 255 (NaN) their values.
template <bool EXACT>
__device__ __forceinline__ float factor_of(u32 address) {
    u32 s;
    asm volatile("ld.shared.u8 %0, [%1];" : "=r"(s) : "r"(address));
    return EXACT ? e8m0_to_f32(s) : __uint_as_float(s << 23);
}
// ANCHOR_END: factors

// ANCHOR: mma
// One MX block (k32, s of the K tile's four) of a warp's 64×64: one fp8 MMA per 16×8 tile, its partial
// sums promoted at once. Per block 4 ldmatrix.x4 of A (the whole fragment of a row tile each), 4 of B
// (two k16 halves of four column tiles each), 32 MMAs, and per MMA 4 FMUL + 4 FFMA. The factors: C's
// rows g and g + 8 of each row tile (A's), C's columns 2t and 2t + 1 of each column tile (B's).
// `a_lanes`/`b_lanes`: this lane's row address in the A and B tiles (chunk 0); `a_scales`/`b_scales`:
// the byte of block 0 of its first factor row of A (row g of the warp's 64) and of B (row 2t); EXACT:
// the K tile's conversion of the factors.
template <bool EXACT>
__device__ __forceinline__ void mma_block(float (&acc)[M_TILES][N_TILES][4], u32 a_lanes, u32 b_lanes, u32 a_scales,
                                          u32 b_scales, int s, int lane) {
    float a_factor[M_TILES][2];
    u32 a_op[M_TILES][4];
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        #pragma unroll
        for (int down = 0; down < 2; ++down) a_factor[i][down] = factor_of<EXACT>(a_scales + scale_step(16 * i + 8 * down) + s);
        // Lanes 0..15 name rows 0..15 at the block's first k16 chunk, lanes 16..31 at its second.
        ldmatrix_x4(a_op[i], swizzled_lane(a_lanes + 16 * ROW_BYTES * i, lane, 2 * s + lane / 16));
    }
    #pragma unroll
    for (int jj = 0; jj < N_TILES / 4; ++jj) {
        // B's operands for four column tiles: both k16 halves of the block.
        u32 b_op[2][4];
        #pragma unroll
        for (int q = 0; q < 2; ++q) ldmatrix_x4(b_op[q], swizzled_lane(b_lanes + 32 * ROW_BYTES * jj, lane, 2 * s + q));
        #pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int j = 4 * jj + r;
            float b_factor[2];
            #pragma unroll
            for (int c = 0; c < 2; ++c) b_factor[c] = factor_of<EXACT>(b_scales + scale_step(8 * j + c) + s);
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                float scratch[4];
                mma_e4m3_16832(scratch, a_op[i], b_op[0][r], b_op[1][r]);
                #pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] = fmaf(scratch[e], a_factor[i][e / 2] * b_factor[e % 2], acc[i][j][e]);
            }
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
    // And its first factor rows in a stage's scales: row g of the warp's rows of A, row 2t of its B rows.
    const u32 a_scale_row = scale_row_offset(a_rows + lane / 4), b_scale_row = A_SCALE_BYTES + scale_row_offset(b_rows + 2 * (lane % 4));
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
            // ANCHOR: exact
            // The shift needs every scale byte of the tile in 1 .. 254; the warp checks the stage's (a 0 or
            // a 255 anywhere takes the exact conversion): a byte is 0 where it has a zero byte, 255 where
            // its complement has one.
            u32 special = 0;
            #pragma unroll
            for (int c = lane; c < SCALE_STAGE_BYTES / 16; c += 32) {
                const Chunk16 chunk = ld_shared_16(scales + 16 * c);
                #pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const u32 w = chunk.w[q];
                    special |= ((w - 0x01010101u) & ~w) | ((~w - 0x01010101u) & w);
                }
            }
            const bool exact = __any_sync(0xffffffffu, (special & 0x80808080u) != 0);
            // ANCHOR_END: exact
            #pragma unroll 1
            for (int s = 0; s < BK / 32; ++s) {
                if (exact) mma_block<true>(acc, a_tile + a_lane_row, b_tile + b_lane_row, scales + a_scale_row, scales + b_scale_row, s, lane);
                else mma_block<false>(acc, a_tile + a_lane_row, b_tile + b_lane_row, scales + a_scale_row, scales + b_scale_row, s, lane);
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
