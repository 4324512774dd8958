// Step 10 · persistent (the sm80 twin: any GPU of compute capability 8.0+): one block per SM for the
// whole GEMM, tiles in step 10's grouped order, stream-K for a ragged last wave.
//
// Up to step 09 a block computed one tile and exited, and the next block on that SM started from an
// empty ring: the tensor cores idle until its first K tile landed, and idle again while the old block
// stored its tile. Here the grid is as many blocks as fit on the GPU at once (one per SM for this
// tile: step.rs asks the driver's occupancy calculator), and each block walks a list of tiles.
// The list, the order and stream-K are the Hopper twin's (`sm90.cu`), with a cluster of one block:
//   - tiles numbered in groups of GROUP_M tile rows, down the rows first, so that the blocks working
//     at the same moment share rows of A and columns of B in L2;
//   - the tiles of a ragged last wave dealt out by K tiles, one run per block; a tile split between
//     blocks is finished by the block that computed its first K tiles, which adds the others' fp32
//     partial sums (left in a workspace, each behind a flag raised to the launch's epoch) in block
//     order before it stores the tile. step.rs decides how many tiles are shared, with step 10's model.
// What takes the Hopper producer's place, running ahead into the next tile: the ring does not stop at
// the end of a tile. The copies are issued from a second walk of the same list (`LoadCursor`), always
// STAGES − 1 K tiles ahead of the MMAs, across tiles; so while a block stores one tile, the first K
// tiles of its next are already in flight. That needs step 09's staging outside the ring: on a 99 KiB
// part, whose two stages leave no room for it (STAGING = 0), the tile is stored straight from the
// registers instead (step 05's stores).
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)
#include "flag.cuh"
#include "schedule.cuh"

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
#ifndef STAGING
#error "STAGING (1: step 09's warp-private chunks beside the ring; 0: stores from registers, on a 99 KiB part) is set by step.rs"
#endif
#ifndef GROUP_M
#error "GROUP_M (tile rows per group of the tile order) is set by step.rs"
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

// ANCHOR: fragments
// One k16 slice's operands of a warp's 64×64: its four row tiles of A and eight column tiles of B.
struct Fragments {
    u32 a[M_TILES][4];
    u32 b[N_TILES / 2][4];
};
// ANCHOR_END: fragments

// ANCHOR: kernel
// __launch_bounds__(256, BLOCKS_PER_SM): one block of eight warps per SM, as in steps 07–09.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(
    const bf16* __restrict__ A, const bf16* __restrict__ B, bf16* __restrict__ C, float* __restrict__ workspace,
    u32* __restrict__ flags, int M, int N, int K, int dp_tiles, int sk_clusters, int epoch) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 ring = smem_address(smem);

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warp_row = warp / WARPS_N, warp_column = warp % WARPS_N;

    // ANCHOR: tiles
    // The grid is one row of blocks, as many as fit on the GPU at once (or as there are tiles).
    const int block = blockIdx.x;
    const TileOrder order{(M + BM - 1) / BM, (N + BN - 1) / BN};
    const Schedule schedule{order.count(), (K + BK - 1) / BK, (int)gridDim.x, dp_tiles, sk_clusters};
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * BM;
        n0 = tile_n * BN;
    };
    // ANCHOR_END: tiles

    const int a_row = warp_row * WM + (lane & 15);
    const int b_row = warp_column * WN + ((lane >> 4) << 3) + (lane & 7);
    auto a_lane = [&](u32 a_tile, int i, int s) {
        return a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4));
    };
    auto b_lane = [&](u32 b_tile, int j, int s) {
        return b_tile + swizzle_128b_offset(b_row + 16 * j, 2 * s + ((lane >> 3) & 1));
    };

    // ANCHOR: loads
    // Copies run STAGES − 1 K tiles ahead of the MMAs, across tiles: each step of the main loop
    // copies the next K tile of the cursor (or nothing, at the end of the block's work) and commits
    // one group, so the count of groups in flight means the same in every iteration of every tile.
    // K tile `copied` of the block's work goes to stage copied % STAGES.
    LoadCursor loads(schedule, block);
    int origin_of = -1, load_m0 = 0, load_n0 = 0;  // the tile the copies are in, and its origin
    // Steps the cursor to the next K tile to copy, into stage `copied` % STAGES; `copy` issues it.
    struct Copy {
        u32 a_tile;
        int m0, n0, k0;
    };
    auto next_copy = [&](u32 copied) {
        int tile, t;
        const bool more = loads.next(tile, t);
        // The tile's origin only when the cursor enters a new one (its divisions would otherwise
        // cost every K tile).
        if (more && tile != origin_of) {
            origin(tile, load_m0, load_n0);
            origin_of = tile;
        }
        // Past the end of the block's work the copies are of column K: zeros into a free slot, so
        // that the copies need no branch of their own and mix with the MMAs.
        return Copy{ring + (copied % STAGES) * STAGE_BYTES, load_m0, load_n0, more ? t * BK : K};
    };
    auto copy = [&](const Copy& c) {
        load_tile<BM>(c.a_tile, A, M, K, c.m0, c.k0, tid);
        load_tile<BN>(c.a_tile + A_TILE_BYTES, B, N, K, c.n0, c.k0, tid);
        cp_async_commit();
    };
    auto load_next = [&](u32 copied) { copy(next_copy(copied)); };
    for (int p = 0; p < STAGES - 1; ++p) load_next(p);
    // ANCHOR_END: loads

    // ANCHOR: partials
    // Where this block leaves, or finds, a tile's partial sums: BM×BN fp32 a block, each thread's 128
    // accumulators as 32 float4 in its own order (float4 v of thread tid at 256·v + tid), so a warp's
    // 16-byte stores and loads are 512 contiguous bytes. One flag a block.
    auto slot = [&](int g) { return reinterpret_cast<float4*>(workspace) + (i64)g * (BM * BN / 4); };
    // ANCHOR_END: partials

    float acc[M_TILES][N_TILES][4];
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
    // The first K tile of the block's work has landed: its first slice's fragments are read before
    // the loop.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    Fragments fragments[2];  // slice s is multiplied from fragments[s % 2] while slice s + 1 is read
    load_fragments(fragments[0], ring, 0);
    u32 it = 0;  // K tiles computed so far, across tiles: tile `it` of the ring is in stage it % STAGES
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

        // ANCHOR: ring
        for (int t = w.k_begin; t < w.k_end; ++t, ++it) {
            // Step 08's ring, across tiles: the copies of K tile it + STAGES − 1 of the block's work go
            // into the slot of K tile it − 1, which every warp finished reading before the barrier of
            // the previous K tile; after a tile's last K tile, the fragments read are the next tile's.
            const Copy next = next_copy(it + STAGES - 1);
            const u32 a_tile = ring + (it % STAGES) * STAGE_BYTES;
            #pragma unroll
            for (int s = 0; s < BK / 16; ++s) {
                if (s == BK / 16 - 1) {
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();
                }
                const bool last = s == BK / 16 - 1;
                load_fragments(fragments[(s + 1) % 2], last ? ring + ((it + 1) % STAGES) * STAGE_BYTES : a_tile,
                               last ? 0 : s + 1);
                multiply(fragments[s % 2]);
                // The copies after the first slice's MMAs are queued, so that they mix with them.
                if (s == 0) copy(next);
            }
        }
        // ANCHOR_END: ring

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
        // While this runs, the copies of the next tile's first K tiles are in flight (`loads`).
        const MmaFragment frag(lane);
        if (STAGING && N % 8 == 0) {
            // Step 09's warp-private chunks, beside the ring.
            const u32 staging = ring + STAGES * STAGE_BYTES + warp * WARP_STAGING_BYTES;
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                #pragma unroll
                for (int down = 0; down < 2; ++down) {
                    const u32 chunk = staging + ((2 * i + down) % 2) * CHUNK_BYTES;
                    #pragma unroll
                    for (int j = 0; j < N_TILES; ++j) {
                        st_shared_b32(chunk + swizzle_128b_offset(frag.row, j) + 2 * frag.column,
                                      pack_bf16x2(acc[i][j][2 * down], acc[i][j][2 * down + 1]));
                    }
                    __syncwarp();
                    #pragma unroll
                    for (int p = 0; p < 2; ++p) {
                        const int row = lane / 8 + 4 * p, piece = lane % 8;
                        const int global_row = m0 + warp_row * WM + 16 * i + 8 * down + row;
                        const int col = n0 + warp_column * WN + 8 * piece;
                        if (global_row < M && col < N) {
                            st_global_16(C + (i64)global_row * N + col,
                                         ld_shared_16(chunk + swizzle_128b_offset(row, piece)));
                        }
                    }
                }
            }
            continue;
        }
        // Straight from the fragment, pair by pair where N is even.
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
    // The groups committed past the block's last K tile are empty; nothing is left in flight.
    cp_async_wait<0>();
}
// ANCHOR_END: kernel
