// Exercise 08.3 · predict, then measure: the step's own kernel, three stages, for comparison.
//
// Step 08 · pipeline (Hopper, sm_90a): warp specialisation — one warpgroup loads, two compute.
//
// Up to step 07 the same threads issued the copies and the MMAs, so each block's work went in lock
// step: wait for a tile, multiply it, release it, ask for the next. The SM stayed busy only because
// three blocks took turns. Here a block has three warpgroups with fixed roles:
//   - the producer (warpgroup 0; one thread does the work) runs ahead around a ring of STAGES tiles,
//     refilling a stage as soon as every reader has released it;
//   - two consumers (warpgroups 1 and 2) each own 64 rows of a 128×256 tile of C and issue
//     `wgmma … m64n256k16`s as soon as a stage is full, keeping one batch of MMAs in flight while they
//     release the stage the batch before used.
// One block per SM: the 128×256 tile reads 48 KiB per K tile for 2·128·256·64 flops, a quarter fewer
// bytes per flop than step 07's 128×128 tile, and the ring hides the loads instead of other blocks.
//
// Registers: 256 accumulators a thread would not fit one warpgroup (ptxas would serialise the wgmmas),
// so the tile is split between two consumers of 128 accumulators each. The producer needs few registers;
// `setmaxnreg` hands its share to the consumers: the block starts with 168 a thread (384 · 168 =
// 64,512), the producer keeps 48 and the consumers grow to 224 (128·48 + 256·224 = 63,488).
//
// Barriers, per stage: `full` (the producer's expect_tx plus the bytes of both blocks of the cluster)
// and `empty` (one arrival from each consumer warpgroup of each block of the cluster). Every waiter
// names the phase it waits for by its parity. The producer's first pass over the ring must not wait at
// all: it waits on `empty` with the parity of the phase *before* the current one, which a fresh barrier
// counts as complete.
//
// Multicast of B across a cluster of two blocks along M is step 07's. The epilogue is step 06's, done by
// each consumer for its own 64 rows, with its own named barrier.
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
    C_STAGING_BYTES = BM * BN * 2,       // the whole tile of C, as bf16, apart from the ring
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

// ANCHOR: kernel
// __launch_bounds__(384, 1): one block per SM; the cap it implies (65536 / 384 = 170, so 168
// registers a thread at entry) is what setmaxnreg redistributes. With fewer than 48 the producer
// spills in step 09 (values computed before the roles split stay live in both).
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, int M, int N, int K,
                                                              int use_tma_store) {
    // Dynamic shared memory: STAGES × (A tile, B tile), the staging tile of C, then the barriers.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES; };
    unsigned char* staging = smem + STAGES * STAGE_BYTES;
    u64* full = reinterpret_cast<u64*>(staging + C_STAGING_BYTES);
    u64* empty = full + STAGES;

    const int tid = threadIdx.x; TIMELINE_INIT();
    const int warpgroup = tid / 128;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const u32 rank = cluster_ctarank();
    const int k_tiles = (K + BK - 1) / BK;

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
        // The producer: one thread walks the K tiles around the ring. Filling n of a stage (n = t / STAGES)
        // may start once phase n − 1 of its `empty` barrier is complete: every consumer of the cluster
        // has released filling n − 1. For n = 0 that is the phase "before the first", parity 1, which a
        // freshly initialised barrier reports as complete: the first pass goes straight through.
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        if (tid == 0) {
            for (int t = 0; t < k_tiles; ++t) {
                const int stage = t % STAGES;
                const u32 parity = (t / STAGES) & 1;
                mbarrier_wait(&empty[stage], parity ^ 1);
                mbarrier_arrive_expect_bytes(&full[stage], STAGE_BYTES);
                tma_load_2d(a_tile(stage), &a_map, &full[stage], t * BK, m0);
                tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,
                                      n0 + rank * B_SLICE_ROWS, CLUSTER_MASK); TIMELINE_STAMP(TL_TMA_ISSUED);
            }
        }
        // ANCHOR_END: producer
    } else {
        // ANCHOR: consumer_role
        setmaxnreg_inc<CONSUMER_REGISTERS>();
        const int consumer = warpgroup - 1;       // rows 64·consumer .. of the tile
        const int ctid = tid - 128 * warpgroup;   // thread within the consumer warpgroup
        // ANCHOR_END: consumer_role

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

        float acc[BN / 2];  // this consumer's 64×256 tile: 128 fp32 a thread

        // ANCHOR: consumer
        // Wait for the stage, issue its four k16 MMAs as one group, then wait until at most this group
        // is still running: the group of the previous K tile has finished reading its stage, which can
        // be released while the tensor cores work on this one.
        for (int t = 0; t < k_tiles; ++t) {
            const int stage = t % STAGES;
            mbarrier_wait(&full[stage], (t / STAGES) & 1); TIMELINE_STAMP(TL_STAGE_FULL);
            wgmma_fence_operands(acc);
            wgmma_fence();
            #pragma unroll
            for (int s = 0; s < BK / 16; ++s) {
                Wgmma<BN>::mma(acc, a_desc(stage, s), b_desc(stage, s), (t > 0 || s > 0) ? 1 : 0);
            }
            wgmma_commit(); TIMELINE_STAMP(TL_MMA_ISSUED);
            wgmma_wait<1>(); TIMELINE_STAMP(TL_MMA_DONE);
            wgmma_fence_operands(acc);
            if (t > 0) release((t - 1) % STAGES);
        }
        wgmma_wait<0>(); TIMELINE_STAMP(TL_MMA_DONE);
        wgmma_fence_operands(acc);
        release((k_tiles - 1) % STAGES); TIMELINE_STAMP(TL_EPILOGUE_START);
        // ANCHOR_END: consumer

        // ANCHOR: epilogue
        const int row0 = m0 + consumer * WG_ROWS;  // this consumer's first row of C
        if (use_tma_store) {
            // ANCHOR: stmatrix
            // Step 06's stmatrix, into this consumer's part of the staging tile: C_BOXES boxes of
            // 64 rows × 64 columns, 128-byte swizzled.
            unsigned char* my_staging = staging + consumer * C_BOXES * C_BOX_BYTES;
            const u32 staging_address = smem_address(my_staging);
            const int warp = ctid / 32, lane = ctid % 32;
            const int matrix = lane / 8;
            const int row = 16 * warp + 8 * (matrix % 2) + lane % 8;
            #pragma unroll
            for (int j = 0; j < BN / 8; j += 2) {
                const int chunk = j + matrix / 2;
                const u32 address = staging_address + (chunk / 8) * C_BOX_BYTES + swizzle_128b_offset(row, chunk % 8);
                stmatrix_x4(address, pack_bf16x2(acc[4 * j + 0], acc[4 * j + 1]),
                            pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]),
                            pack_bf16x2(acc[4 * j + 4], acc[4 * j + 5]),
                            pack_bf16x2(acc[4 * j + 6], acc[4 * j + 7]));
            }
            // ANCHOR_END: stmatrix

            // ANCHOR: tma_store
            // Proxy fence, then a barrier of this warpgroup only (named barrier 1 + consumer): the other
            // consumer may still be computing.
            fence_async_shared();
            named_barrier_sync(1 + consumer, 128);
            if (ctid == 0) {
                #pragma unroll
                for (int b = 0; b < C_BOXES; ++b) {
                    tma_store_2d(&c_map, my_staging + b * C_BOX_BYTES, n0 + b * C_BOX_COLUMNS, row0);
                }
                tma_store_commit();
                tma_store_wait_read<0>(); TIMELINE_STAMP(TL_EPILOGUE_END);
            }
            // ANCHOR_END: tma_store
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
    // A peer may still arrive on our `empty` barriers after its last tile: stay until every block is done.
    cluster_sync();
}
// ANCHOR_END: kernel
