// Exercise 07.1 · find the bug.
// Step 07's Hopper kernel with one planted bug in how B is shared: `exercise check 07.1` never sees
// the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS. Count the
// bytes that reach each block's `full` barrier per stage against the bytes it expects.
//
// Step 07 · multicast (Hopper, sm_90a): two blocks of a cluster share one load of B.
//
// In step 06 every block fetched its own A tile and its own B tile for every K tile. Blocks that sit
// above each other in the grid (same n0, neighbouring m0) fetch the *same* B tile: at 4096³ each B tile
// is read by 32 blocks, and all those reads go through L2. Here two such blocks form a thread-block
// cluster (CLUSTER_M = 2 blocks along M, launched together on neighbouring SMs). Each block loads its
// own A tile and *half* of the shared B tile, and the TMA writes that half into both blocks' shared
// memory at once (`.multicast::cluster`). Each block then finds the whole B tile in its own shared
// memory, having asked L2 for half of it: B traffic from L2 is halved.
//
// A peer now writes into this block's shared memory, so "the tile is free again" is no longer a local
// fact. Each stage of shared memory gets two barriers: `full` (this block's copy engine counts the bytes
// arriving from both blocks' loads) and `empty` (every block of the cluster arrives once it has finished
// reading the stage; a block waits for all of them before it overwrites the stage in anyone's memory).
// With one stage the loads of tile t+1 could start only after both blocks finished tile t, so the ring
// has STAGES = 2: the loads of tile t+1 fly while the tensor cores work on tile t.
//
// Two cluster-wide rules: a block must not send bytes or arrivals to a peer before the peer has set up
// its barriers (cluster_sync after the initialisation), and must not exit while a peer may still
// arrive on its barriers (cluster_sync before exit).
//
// The MMAs and the epilogue are step 06's.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "stmatrix.cuh"
#include "wgmma.cuh"
#include "cluster.cuh"

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
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (the occupancy the register budget is planned for) is set by step.rs"
#endif
#if !defined(A_DESC) || !defined(B_DESC)
#error "A_DESC and B_DESC (wgmma descriptor templates, start address 0) are computed in step.rs"
#endif

enum : int {
    THREADS = 128,                // one warpgroup
    HALVES = BM / 64,             // wgmma is 64 rows tall: the warpgroup computes BM / 64 of them
    SWIZZLE_BYTES = 128,          // one swizzled row: the whole K tile of one row, 64 bf16
    A_TILE_BYTES = BM * SWIZZLE_BYTES,
    B_TILE_BYTES = BN * SWIZZLE_BYTES,
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES,
    B_SLICE_ROWS = BN / CLUSTER_M,  // the rows of B each block of the cluster loads for everyone
    B_SLICE_BYTES = B_SLICE_ROWS * SWIZZLE_BYTES,
    CLUSTER_MASK = (1 << CLUSTER_M) - 1,  // multicast to every block of the cluster
    C_BOX_COLUMNS = SWIZZLE_BYTES / 2,     // a TMA store box: BM rows × 64 bf16 (128 bytes)
    C_BOX_BYTES = BM * SWIZZLE_BYTES,
    C_BOXES = BN / C_BOX_COLUMNS,
};
static_assert(BM % 64 == 0 && HALVES >= 1 && HALVES <= 2, "one warpgroup computes 64 or 128 rows");
static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma n is one of 64, 128, 256 here");
static_assert(BK * 2 == SWIZZLE_BYTES, "the K tile is one 128-byte swizzled row per matrix row");
// The swizzle pattern repeats every 1024 bytes and is computed from address bits, so every tile must
// start on a 1024-byte boundary: the A tile is BM × 128 bytes, a multiple of 1024 when BM % 8 == 0.
static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "tiles keep 1024-byte alignment");
static_assert(B_SLICE_BYTES % 1024 == 0, "each block's slice of B starts on a 1024-byte swizzle boundary");
static_assert(CLUSTER_M >= 1 && CLUSTER_M <= 8 && BN % (8 * CLUSTER_M) == 0, "B splits into whole 8-row groups");
static_assert(STAGES >= 2, "with one stage the next load would wait for both blocks to finish the tile");
static_assert(BN % C_BOX_COLUMNS == 0, "the tile of C is a whole number of 64-column store boxes");
static_assert(C_BOX_BYTES * C_BOXES <= STAGE_BYTES * STAGES, "the staging tile fits in the ring");

// ANCHOR: kernel
// __launch_bounds__(128, BLOCKS_PER_SM): three blocks per SM, as in step 06 (168 registers a thread);
// each now holds STAGES tiles of A and B, 3 · (2 · 32 KiB + 1 KiB) of the SM's 227 KiB.
// `c_map` describes C in boxes of BM rows × 64 columns with the 128-byte swizzle; it is only read when
// `use_tma_store` is set (N % 8 == 0). `b_map`'s box is one block's slice of B: B_SLICE_ROWS × 64.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(const __grid_constant__ TensorMap a_map,
                                                                         const __grid_constant__ TensorMap b_map,
                                                                         const __grid_constant__ TensorMap c_map,
                                                                         bf16* __restrict__ C, int M, int N, int K,
                                                                         int use_tma_store) {
    // Dynamic shared memory: STAGES × (A tile, B tile), then the barriers. The swizzled tiles need
    // 1024-byte alignment; step.rs asks for 1 KiB extra so the start can be rounded up here. Every block
    // of the cluster computes the same layout, so a tile's offset names the same tile in the peer.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES; };
    u64* full = reinterpret_cast<u64*>(smem + STAGES * STAGE_BYTES);
    u64* empty = full + STAGES;

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    // The cluster is CLUSTER_M blocks stacked along M (grid y): they share n0, so they share B.
    const u32 rank = cluster_ctarank();

    // ANCHOR: barriers
    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (use_tma_store) tma_prefetch_map(&c_map);
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);           // this block's expect_tx; the bytes come from every block
            mbarrier_init(&empty[s], CLUSTER_M);  // one arrival from each block that reads stage s
        }
        mbarrier_init_fence();
    }
    // No block may multicast into a peer, or arrive on its barriers, before the peer has initialised them.
    cluster_sync();
    // ANCHOR_END: barriers

    // ANCHOR: descriptors
    // As in step 06: the templates from step.rs hold the layout; the start address is added here, and
    // the k16 slice s of a swizzled 128-byte row starts 32·s bytes in. Each stage's tiles start on
    // 1024-byte boundaries, so the same arithmetic holds in every stage.
    const u64 a_desc0 = A_DESC | ((smem_address(a_tile(0)) & 0x3FFFF) >> 4);
    const u64 b_desc0 = B_DESC | ((smem_address(b_tile(0)) & 0x3FFFF) >> 4);
    auto a_desc = [&](int stage, int half, int slice) {
        return a_desc0 + ((stage * STAGE_BYTES + half * 64 * SWIZZLE_BYTES + slice * 32) >> 4);
    };
    auto b_desc = [&](int stage, int slice) {
        return b_desc0 + ((stage * STAGE_BYTES + slice * 32) >> 4);
    };
    // ANCHOR_END: descriptors

    // ANCHOR: tma_load
    // Fill stage `stage` with K tile `t`: this block's A tile, and this block's slice of B written into
    // the same place in every block of the cluster. `full` expects the whole stage: the A tile, our slice
    // and the peers' slices, which land on our barrier as their bytes arrive. Parts past M, N or K arrive
    // as zeros and count all the same, so a block whose rows lie wholly past M (the grid is rounded up to
    // whole clusters) still delivers its slice of B.
    auto load_stage = [&](int t, int stage) {
        mbarrier_arrive_expect_bytes(&full[stage], STAGE_BYTES);
        tma_load_2d(a_tile(stage), &a_map, &full[stage], t * BK, m0);
        tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,
                              n0 + rank * B_SLICE_ROWS, 1u << rank);
    };
    // ANCHOR_END: tma_load

    // The block's BM×BN tile of C: HALVES wgmma tiles of 64×BN, BN/2 fp32 per thread each.
    float acc[HALVES][BN / 2];

    // ANCHOR: ring
    const int k_tiles = (K + BK - 1) / BK;
    if (tid == 0) {
        for (int t = 0; t < STAGES && t < k_tiles; ++t) load_stage(t, t);
    }
    for (int t = 0; t < k_tiles; ++t) {
        // K tile t lives in stage t % STAGES; it is that stage's (t / STAGES)-th filling, and the
        // barriers' parity flips with each filling.
        const int stage = t % STAGES;
        const u32 parity = (t / STAGES) & 1;
        mbarrier_wait(&full[stage], parity);
        // ANCHOR_END: ring

        // ANCHOR: mma
        // Step 06's batch: BK/16 slices × HALVES wgmmas, then wait for all of them.
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) wgmma_fence_operands(acc[h]);
        wgmma_fence();
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            #pragma unroll
            for (int h = 0; h < HALVES; ++h) {
                Wgmma<BN>::mma(acc[h], a_desc(stage, h, s), b_desc(stage, s), (t > 0 || s > 0) ? 1 : 0);
            }
        }
        wgmma_commit();
        wgmma_wait<0>();
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) wgmma_fence_operands(acc[h]);
        // ANCHOR_END: mma

        // ANCHOR: release
        // Every warp has finished reading the stage. Tell every block of the cluster (ourselves
        // included): each of them writes a slice of B into our copy of this stage. Then, before
        // refilling the stage with tile t + STAGES, wait until every block has said the same to us: our
        // slice of B is about to land in their copies too.
        __syncthreads();
        if (tid == 0) {
            for (u32 r = 0; r < CLUSTER_M; ++r) mbarrier_arrive_cluster(&empty[stage], r);
            if (t + STAGES < k_tiles) {
                mbarrier_wait(&empty[stage], parity);
                load_stage(t + STAGES, stage);
            }
        }
        // ANCHOR_END: release
    }

    // ANCHOR: epilogue
    if (use_tma_store) {
        // ANCHOR: stmatrix
        // Registers -> shared memory, as bf16. One stmatrix.x4 stores a 16×16 patch of the warp's 16
        // rows: 8×8 matrices (rows 0-7, columns 8j..), (rows 8-15, 8j..), (rows 0-7, 8j+8..) and
        // (rows 8-15, 8j+8..), which are exactly the accumulator pairs d[4j .. 4j+7] (wgmma.cuh).
        // Lane l names row l % 8 of matrix l / 8. Column chunk c (16 bytes, 8 columns) of the tile
        // lies in store box c / 8, at chunk c % 8 of its 128-byte row, swizzled by the row.
        // Every byte any block sent us has landed (we waited on every filling), so the ring is free.
        unsigned char* staging = smem;
        const u32 staging_address = smem_address(staging);
        const int warp = tid / 32, lane = tid % 32;
        const int matrix = lane / 8;
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) {
            const int row = 64 * h + 16 * warp + 8 * (matrix % 2) + lane % 8;
            #pragma unroll
            for (int j = 0; j < BN / 8; j += 2) {
                const int chunk = j + matrix / 2;
                const u32 address =
                    staging_address + (chunk / 8) * C_BOX_BYTES + swizzle_128b_offset(row, chunk % 8);
                stmatrix_x4(address, pack_bf16x2(acc[h][4 * j + 0], acc[h][4 * j + 1]),
                            pack_bf16x2(acc[h][4 * j + 2], acc[h][4 * j + 3]),
                            pack_bf16x2(acc[h][4 * j + 4], acc[h][4 * j + 5]),
                            pack_bf16x2(acc[h][4 * j + 6], acc[h][4 * j + 7]));
            }
        }
        // ANCHOR_END: stmatrix

        // ANCHOR: tma_store
        // The TMA reads shared memory through the async proxy: each thread orders its own stmatrix
        // writes before it with a proxy fence, and the barrier makes all of them happen before thread 0
        // issues the stores. One store per 64-column box; the parts outside C are not written.
        fence_async_shared();
        __syncthreads();
        if (tid == 0) {
            #pragma unroll
            for (int b = 0; b < C_BOXES; ++b) {
                tma_store_2d(&c_map, staging + b * C_BOX_BYTES, n0 + b * C_BOX_COLUMNS, m0);
            }
            tma_store_commit();
            // The block's shared memory must outlive the copy: wait until the TMA has read it all.
            // (Reading is enough; the writes to C complete on their own before the kernel is done.)
            tma_store_wait_read<0>();
        }
        // ANCHOR_END: tma_store
        // A peer may still arrive on our `empty` barriers after its last tile: stay until all are done.
        cluster_sync();
        return;
    }

    // N % 8 != 0: no tensor map for C. Step 05's direct stores.
    // Registers -> C, as bf16, straight from the wgmma fragment (wgmma.cuh): each thread holds pairs of
    // neighbouring columns, so a pair goes out as one 4-byte store when it is aligned (N even) and
    // inside C; otherwise element by element. Rows and columns past M and N are skipped.
    const WgmmaFragment frag(tid);
    const bool pairs_ok = (N % 2) == 0;
    #pragma unroll
    for (int h = 0; h < HALVES; ++h) {
        #pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = n0 + frag.column + 8 * j;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = m0 + 64 * h + frag.row + 8 * down;
                const float lo = acc[h][4 * j + 2 * down], hi = acc[h][4 * j + 2 * down + 1];
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
    cluster_sync();
}
// ANCHOR_END: kernel
