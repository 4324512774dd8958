// Step 10 · persistent (Hopper, sm_90a): one block per SM for the whole GEMM, tiles in an L2-friendly order.
//
// Up to step 09 a block computed one tile of C and exited; the next block on that SM then started
// from nothing: barriers set up again, the ring empty, the tensor cores idle until the first stage of
// the new tile arrived, and idle again while the old block's epilogue ran. Here the grid has exactly as
// many clusters as fit on the GPU at once (step.rs asks the driver), and each cluster walks a list of
// tiles: tile `cluster`, then `cluster + clusters`, ... The producer does not stop at the end of a
// tile: it goes straight on to the next tile's K tiles, so while the consumers run a tile's epilogue
// the ring fills up with the next tile's operands, and the barriers' phases simply carry on (the
// stage and parity come from a K-tile count that runs across tiles).
//
// The order of the tiles matters for L2: the clusters that run at the same moment should share rows of
// A and columns of B. Tiles are numbered in groups of GROUP_M tile-rows: inside a group, down the rows
// first, then along N (the "grouped" order of Triton and CUTLASS's swizzle), so the tiles in flight
// at any moment cover a compact block of C instead of a few whole rows of it.
//
// A cluster (two blocks along M) owns a 256×256 tile: each block its 128 rows, sharing B as in step 07.
// The staging buffers of C now carry over from tile to tile, so every chunk, the first of a tile too,
// waits until its buffer's previous store has read it.
//
// Everything else is step 09's.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "stmatrix.cuh"
#include "wgmma.cuh"
#include "cluster.cuh"
#include "warpgroup.cuh"

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory) is set by step.rs"
#endif
#ifndef STAGES
#error "STAGES (depth of the ring of shared-memory tiles) is set by step.rs"
#endif
#ifndef CLUSTER_M
#error "CLUSTER_M (blocks per cluster along M, sharing each B tile) is set by step.rs"
#endif
#ifndef GROUP_M
#error "GROUP_M (tile-rows per group of the tile order) is set by step.rs"
#endif
#if !defined(PRODUCER_REGISTERS) || !defined(CONSUMER_REGISTERS)
#error "PRODUCER_REGISTERS and CONSUMER_REGISTERS (setmaxnreg targets) are set by step.rs"
#endif
#if !defined(A_DESC) || !defined(B_DESC)
#error "A_DESC and B_DESC (wgmma descriptor templates, start address 0) are computed in step.rs"
#endif

enum : int {
    CONSUMERS = 2,                       // consumer warpgroups, 64 rows of the tile each
    THREADS = 128 * (1 + CONSUMERS),     // + the producer warpgroup
    WG_ROWS = BM / CONSUMERS,            // rows of C per consumer: one wgmma tile of 64 rows
    SWIZZLE_BYTES = 128,                 // one swizzled row: the whole K tile of one row, 64 bf16
    A_TILE_BYTES = BM * SWIZZLE_BYTES,
    B_TILE_BYTES = BN * SWIZZLE_BYTES,
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES,
    B_SLICE_ROWS = BN / CLUSTER_M,       // the rows of B each block of the cluster loads for everyone
    B_SLICE_BYTES = B_SLICE_ROWS * SWIZZLE_BYTES,
    CLUSTER_MASK = (1 << CLUSTER_M) - 1,
    C_BOX_COLUMNS = SWIZZLE_BYTES / 2,   // a TMA store box: WG_ROWS rows × 64 bf16 (128 bytes)
    C_BOX_BYTES = WG_ROWS * SWIZZLE_BYTES,
    C_BOXES = BN / C_BOX_COLUMNS,
    C_BUFFERS = 2,                       // staging buffers per consumer: one fills while one drains
    C_STAGING_BYTES = CONSUMERS * C_BUFFERS * C_BOX_BYTES,
};
static_assert(WG_ROWS == 64, "each consumer computes one 64-row wgmma tile");
static_assert(BN == 256, "one wgmma m64n256k16 covers the tile's columns");
static_assert(BK * 2 == SWIZZLE_BYTES, "the K tile is one 128-byte swizzled row per matrix row");
static_assert(A_TILE_BYTES % 1024 == 0 && B_SLICE_BYTES % 1024 == 0, "tiles keep 1024-byte alignment");
static_assert(STAGES >= 2, "a ring needs two stages to overlap loads and MMAs");
// setmaxnreg moves registers within what the block got at launch: __launch_bounds__(THREADS, 1) gives
// each thread 65536 / THREADS, rounded down to a multiple of 8 (168 for 384 threads).
static_assert((PRODUCER_REGISTERS + CONSUMER_REGISTERS * CONSUMERS) * 128 <= (65536 / THREADS) / 8 * 8 * THREADS,
              "the registers the block got at launch");

// ANCHOR: schedule
// The tile a cluster computes on its i-th turn: tile = cluster + i · clusters, numbered in the grouped
// order. A tile here is a cluster's 256×256 (CLUSTER_M · BM rows × BN columns) part of C.
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

// ANCHOR: kernel
// __launch_bounds__(384, 1): one block per SM; the cap it implies (65536 / 384 = 170, so 168
// registers a thread at entry) is what setmaxnreg redistributes. With fewer than 48 the producer
// spills (values computed before the roles split stay live in both).
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, int M, int N, int K,
                                                              int use_tma_store) {
    // Dynamic shared memory: STAGES × (A tile, B tile), the staging buffers of C, then the barriers.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES; };
    unsigned char* staging = smem + STAGES * STAGE_BYTES;
    u64* full = reinterpret_cast<u64*>(staging + C_STAGING_BYTES);
    u64* empty = full + STAGES;

    const int tid = threadIdx.x; TIMELINE_INIT();
    const int warpgroup = tid / 128;
    const u32 rank = cluster_ctarank();
    const int k_tiles = (K + BK - 1) / BK;
    // ANCHOR: tiles
    // The grid is one row of clusters, as many as fit on the GPU at once.
    const int cluster = blockIdx.x / CLUSTER_M;
    const int clusters = gridDim.x / CLUSTER_M;
    const TileOrder order{(M + CLUSTER_M * BM - 1) / (CLUSTER_M * BM), (N + BN - 1) / BN};
    // This block's rows and columns of C in tile `index`.
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * CLUSTER_M * BM + rank * BM;
        n0 = tile_n * BN;
    };
    // ANCHOR_END: tiles

    // ANCHOR: barriers
    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (use_tma_store) tma_prefetch_map(&c_map);
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);                       // the producer's expect_tx
            mbarrier_init(&empty[s], CONSUMERS * CLUSTER_M);  // every consumer of every block
        }
        mbarrier_init_fence();
    }
    cluster_sync();
    // ANCHOR_END: barriers

    if (warpgroup == 0) {
        // ANCHOR: producer
        // Step 09's producer, over every K tile of every tile of this cluster: `it` counts K tiles
        // across tiles, so stage and parity run on where the previous tile left them.
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        if (tid == 0) {
            int it = 0;
            for (int index = cluster; index < order.count(); index += clusters) {
                int m0, n0;
                origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int stage = it % STAGES;
                    const u32 parity = (it / STAGES) & 1;
                    mbarrier_wait(&empty[stage], parity ^ 1);
                    mbarrier_arrive_expect_bytes(&full[stage], STAGE_BYTES);
                    tma_load_2d(a_tile(stage), &a_map, &full[stage], t * BK, m0);
                    tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,
                                          n0 + rank * B_SLICE_ROWS, CLUSTER_MASK); TIMELINE_STAMP(TL_TMA_ISSUED);
                }
            }
        }
        // ANCHOR_END: producer
    } else {
        setmaxnreg_inc<CONSUMER_REGISTERS>();
        const int consumer = warpgroup - 1;       // rows 64·consumer .. of the tile
        const int ctid = tid - 128 * warpgroup;   // thread within the consumer warpgroup

        // ANCHOR: descriptors
        // As in step 06, for this consumer's 64 rows of A and all 256 rows of B.
        const u64 a_desc0 = A_DESC | ((smem_address(a_tile(0) + consumer * WG_ROWS * SWIZZLE_BYTES) & 0x3FFFF) >> 4);
        const u64 b_desc0 = B_DESC | ((smem_address(b_tile(0)) & 0x3FFFF) >> 4);
        auto a_desc = [&](int stage, int slice) { return a_desc0 + ((stage * STAGE_BYTES + slice * 32) >> 4); };
        auto b_desc = [&](int stage, int slice) { return b_desc0 + ((stage * STAGE_BYTES + slice * 32) >> 4); };
        // ANCHOR_END: descriptors

        // ANCHOR: release
        // One thread of this warpgroup arrives on the stage's `empty` barrier in every block of the
        // cluster: each of them multicasts a slice of B into our copy of the stage.
        auto release = [&](int stage) {
            if (ctid == 0) {
                for (u32 r = 0; r < CLUSTER_M; ++r) mbarrier_arrive_cluster(&empty[stage], r);
            }
        };
        // ANCHOR_END: release

        // ANCHOR: consumer_tiles
        float acc[BN / 2];  // this consumer's 64×256 part of the current tile: 128 fp32 a thread

        int it = 0;  // K tiles consumed so far, across tiles: the producer's count, in step
        for (int index = cluster; index < order.count(); index += clusters) {
            int m0, n0;
            origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);
            // ANCHOR_END: consumer_tiles

            // ANCHOR: consumer
            // Step 09's main loop, with stage and parity taken from the running count `it`; the first
            // MMA of each tile overwrites the accumulators.
            for (int t = 0; t < k_tiles; ++t, ++it) {
                const int stage = it % STAGES;
                mbarrier_wait(&full[stage], (it / STAGES) & 1); TIMELINE_STAMP(TL_STAGE_FULL);
                wgmma_fence_operands(acc);
                wgmma_fence();
                #pragma unroll
                for (int s = 0; s < BK / 16; ++s) {
                    Wgmma<BN>::mma(acc, a_desc(stage, s), b_desc(stage, s), (t > 0 || s > 0) ? 1 : 0);
                }
                wgmma_commit(); TIMELINE_STAMP(TL_MMA_ISSUED);
                wgmma_wait<1>(); TIMELINE_STAMP(TL_MMA_DONE);
                wgmma_fence_operands(acc);
                if (t > 0) release((it - 1) % STAGES);
            }
            wgmma_wait<0>(); TIMELINE_STAMP(TL_MMA_DONE);
            wgmma_fence_operands(acc);
            release((it - 1) % STAGES); TIMELINE_STAMP(TL_EPILOGUE_START);
            // ANCHOR_END: consumer

            // ANCHOR: epilogue
            const int row0 = m0 + consumer * WG_ROWS;  // this consumer's first row of C
            if (use_tma_store) {
                // ANCHOR: chunks
                // Step 09's chunks. The buffers carry over from the previous tile, so every chunk waits
                // until the store that last used its buffer (two chunks ago, maybe in the previous tile)
                // has read it; on a block's first chunks there is nothing to wait for.
                unsigned char* my_staging = staging + consumer * C_BUFFERS * C_BOX_BYTES;
                const u32 staging_address = smem_address(my_staging);
                const int warp = ctid / 32, lane = ctid % 32;
                const int matrix = lane / 8;
                const int row = 16 * warp + 8 * (matrix % 2) + lane % 8;
                #pragma unroll
                for (int c = 0; c < C_BOXES; ++c) {
                    const int buffer = c % C_BUFFERS;
                    if (ctid == 0) tma_store_wait_read<C_BUFFERS - 1>();
                    named_barrier_sync(1 + consumer, 128);
                    #pragma unroll
                    for (int j = 8 * c; j < 8 * c + 8; j += 2) {
                        const int chunk = j % 8 + matrix / 2;
                        const u32 address = staging_address + buffer * C_BOX_BYTES + swizzle_128b_offset(row, chunk);
                        stmatrix_x4(address, pack_bf16x2(acc[4 * j + 0], acc[4 * j + 1]),
                                    pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]),
                                    pack_bf16x2(acc[4 * j + 4], acc[4 * j + 5]),
                                    pack_bf16x2(acc[4 * j + 6], acc[4 * j + 7]));
                    }
                    fence_async_shared();
                    named_barrier_sync(1 + consumer, 128);
                    if (ctid == 0) {
                        tma_store_2d(&c_map, my_staging + buffer * C_BOX_BYTES, n0 + c * C_BOX_COLUMNS, row0);
                        tma_store_commit(); TIMELINE_STAMP(TL_EPILOGUE_END);
                    }
                }
                // ANCHOR_END: chunks
            } else {
                // N % 8 != 0: no tensor map for C. Step 05's direct stores, for this consumer's 64 rows.
                const WgmmaFragment frag(ctid);
                const bool pairs_ok = (N % 2) == 0;
                #pragma unroll
                for (int j = 0; j < BN / 8; ++j) {
                    const int col = n0 + frag.column + 8 * j;
                    #pragma unroll
                    for (int down = 0; down < 2; ++down) {
                        const int row = row0 + frag.row + 8 * down;
                        const float lo = acc[4 * j + 2 * down], hi = acc[4 * j + 2 * down + 1];
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
        // The block's shared memory must outlive the last stores' reads.
        if (use_tma_store && ctid == 0) tma_store_wait_read<0>();
    }
    // A peer may still arrive on our `empty` barriers after its last tile: stay until every block is done.
    cluster_sync();
}
// ANCHOR_END: kernel
