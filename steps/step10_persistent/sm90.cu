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
// A cluster owns CLUSTER_M · 128 rows × CLUSTER_N · BN columns of C, each block 128 × BN of them. A pair
// along M shares B as in step 07; a pair along N shares A the same way (each block loads half of the
// A tile into both). The staging buffers of C now carry over from tile to tile, so every
// chunk, the first of a tile too, waits until its buffer's previous store has read it.
//
// Too few tiles to fill the GPU (128 × 8192 × 8192 has 32 tiles of 128 × 256 for 132 blocks), or a
// last wave that leaves clusters idle, is the other half of the lesson: stream-K. The tiles that would run in a
// ragged last wave are not handed out whole; their K tiles, all of them, are dealt out in equal
// shares, one contiguous run of K tiles per cluster (`Schedule` below). A tile whose K tiles are
// split between clusters is finished by the cluster that computed its first K tiles: the others
// leave their fp32 partial sums in a workspace and raise a flag, and the finisher adds them, in
// cluster order, before it stores the tile. step.rs chooses, from the shape, how many tiles are
// data-parallel (whole, as before) and how many are shared this way.
//
// And the tile itself is chosen from the shape. BN, CLUSTER_M and CLUSTER_N are compile-time constants,
// so step.rs compiles this file once per tile shape it may choose (128×256 blocks on their own by
// default, or in step 07's pairs; 128×128 and 128×64 blocks, alone or paired, for shapes whose tiles
// would leave SMs idle or compute columns that are not there) and launches the one whose modelled time
// is least.
//
// Two changes inside a tile, each measured (chapter 10b). The epilogue is no longer a pause between tiles: a consumer rounds its
// finished tile to bf16 into registers (`held`, half the registers of the accumulators), stores its
// first chunk at once and the others one at a time while the next tile's first K tiles run on the
// tensor cores: the Hopper counterpart of Blackwell's second accumulator in TMEM. And both roles' loop
// arithmetic is unsigned and 32-bit, and a K tile's four wgmmas are one statement (WgmmaK64), so that
// between two wgmmas there is nothing to compute.
// Everything else is step 09's.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "stmatrix.cuh"
#include "wgmma.cuh"
#include "cluster.cuh"
#include "warpgroup.cuh"
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
#ifndef STAGES
#error "STAGES (depth of the ring of shared-memory tiles) is set by step.rs"
#endif
#if !defined(CLUSTER_M) || !defined(CLUSTER_N)
#error "CLUSTER_M and CLUSTER_N (blocks per cluster along M, sharing each B tile, or along N, sharing A) are set by step.rs"
#endif
#ifndef GROUP_M
#error "GROUP_M (tile-rows per group of the tile order) is set by step.rs"
#endif
#if !defined(PRODUCER_REGISTERS) || !defined(CONSUMER_REGISTERS)
#error "PRODUCER_REGISTERS and CONSUMER_REGISTERS (setmaxnreg targets) are set by step.rs"
#endif
#if !defined(MMA_IN_FLIGHT) || (MMA_IN_FLIGHT != 0 && MMA_IN_FLIGHT != 1)
#error "MMA_IN_FLIGHT (wgmma groups a consumer leaves in flight: 0 or 1) is set by step.rs"
#endif
#ifndef C_BUFFERS
#error "C_BUFFERS (staging buffers of C per consumer) is set by step.rs"
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
    CLUSTER = CLUSTER_M * CLUSTER_N,     // blocks per cluster
    B_SLICE_ROWS = BN / CLUSTER_M,       // the rows of B each block of the cluster loads for everyone
    B_SLICE_BYTES = B_SLICE_ROWS * SWIZZLE_BYTES,
    A_SLICE_ROWS = BM / CLUSTER_N,       // and of A, in a pair along N
    A_SLICE_BYTES = A_SLICE_ROWS * SWIZZLE_BYTES,
    CLUSTER_MASK = (1 << CLUSTER) - 1,
    C_BOX_COLUMNS = SWIZZLE_BYTES / 2,   // a TMA store box: WG_ROWS rows × 64 bf16 (128 bytes)
    C_BOX_BYTES = WG_ROWS * SWIZZLE_BYTES,
    C_BOXES = BN / C_BOX_COLUMNS,
    C_STAGING_BYTES = CONSUMERS * C_BUFFERS * C_BOX_BYTES,
};
static_assert(WG_ROWS == 64, "each consumer computes one 64-row wgmma tile");
static_assert(BN == 256 || BN == 128 || BN == 64, "one wgmma m64nBNk16 covers the tile's columns");
static_assert(BK * 2 == SWIZZLE_BYTES, "the K tile is one 128-byte swizzled row per matrix row");
static_assert(A_SLICE_BYTES % 1024 == 0 && B_SLICE_BYTES % 1024 == 0, "tiles keep 1024-byte alignment");
static_assert(CLUSTER_M == 1 || CLUSTER_N == 1, "a cluster pairs blocks along M or along N, not both");
static_assert(STAGES >= 2, "a ring needs two stages to overlap loads and MMAs");
static_assert(C_BUFFERS == 2, "two staging buffers a consumer: one fills while one drains");
// setmaxnreg moves registers within what the block got at launch: __launch_bounds__(THREADS, 1) gives
// each thread 65536 / THREADS, rounded down to a multiple of 8 (168 for 384 threads).
static_assert((PRODUCER_REGISTERS + CONSUMER_REGISTERS * CONSUMERS) * 128 <= (65536 / THREADS) / 8 * 8 * THREADS,
              "the registers the block got at launch");

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

// Who computes what: `Schedule` (the data-parallel tiles, then the stream-K runs of K tiles) and
// each cluster's `WorkList` of pieces, which the producer and the consumers walk, are schedule.cuh's.

// ANCHOR: kernel
// __launch_bounds__(384, 1): one block per SM; the cap it implies (65536 / 384 = 170, so 168
// registers a thread at entry) is what setmaxnreg redistributes.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, float* __restrict__ workspace,
                                                              u32* __restrict__ flags, int M, int N, int K,
                                                              int use_tma_store, int dp_tiles, int sk_clusters,
                                                              int epoch) {
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
    // ANCHOR: tiles
    // The grid is one row of clusters, as many as fit on the GPU at once (or as there are tiles).
    const int cluster = blockIdx.x / CLUSTER;
    const int clusters = gridDim.x / CLUSTER;
    const TileOrder order{(M + CLUSTER_M * BM - 1) / (CLUSTER_M * BM), (N + CLUSTER_N * BN - 1) / (CLUSTER_N * BN)};
    const Schedule schedule{order.count(), (K + BK - 1) / BK, clusters, dp_tiles, sk_clusters};
    // This block's rows and columns of C in tile `index`.
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = (tile_m * CLUSTER_M + rank % CLUSTER_M) * BM;
        n0 = (tile_n * CLUSTER_N + rank / CLUSTER_M) * BN;
    };
    // ANCHOR_END: tiles

    // ANCHOR: barriers
    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (use_tma_store) tma_prefetch_map(&c_map);
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);                       // the producer's expect_tx
            mbarrier_init(&empty[s], CONSUMERS * CLUSTER);  // every consumer of every block
        }
        mbarrier_init_fence();
    }
    // The barriers must be initialised before anyone uses them: in every block of the cluster, or,
    // for a block on its own, in this block (a plain barrier, without the cluster barrier's fences).
    if (CLUSTER > 1) cluster_sync();
    else __syncthreads();
    // ANCHOR_END: barriers

    if (warpgroup == 0) {
        // ANCHOR: producer
        // Step 09's producer, over every K tile of every piece of this cluster's work: `it` counts
        // K tiles across pieces, so stage and parity run on where the previous piece left them.
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        if (tid == 0) {
            u32 it = 0;  // unsigned: stage and parity are a mask and a shift, no sign to carry
            WorkList work(schedule, cluster);
            Work w;
            while (work.next(w)) {
                int m0, n0;
                origin(w.tile, m0, n0); TIMELINE_STAMP(TL_TILE_START);
                for (int t = w.k_begin; t < w.k_end; ++t, ++it) {
                    const u32 stage = it % STAGES;
                    const u32 parity = (it / STAGES) & 1;
                    mbarrier_wait(&empty[stage], parity ^ 1);
                    mbarrier_arrive_expect_bytes(&full[stage], STAGE_BYTES);
                    if (CLUSTER_N == 1) {
                        tma_load_2d(a_tile(stage), &a_map, &full[stage], t * BK, m0);
                    } else {
                        tma_load_2d_multicast(a_tile(stage) + rank * A_SLICE_BYTES, &a_map, &full[stage], t * BK,
                                              m0 + rank * A_SLICE_ROWS, CLUSTER_MASK);
                    }
                    if (CLUSTER_M == 1) {
                        tma_load_2d(b_tile(stage), &b_map, &full[stage], t * BK, n0);
                    } else {
                        tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,
                                              n0 + rank * B_SLICE_ROWS, CLUSTER_MASK);
                    }
                    TIMELINE_STAMP(TL_TMA_ISSUED);
                }
            }
        }
        // ANCHOR_END: producer
    } else {
        setmaxnreg_inc<CONSUMER_REGISTERS>();
        const int consumer = warpgroup - 1;       // rows 64·consumer .. of the tile
        const int ctid = tid - 128 * warpgroup;   // thread within the consumer warpgroup

        // ANCHOR: descriptors
        // As in step 06, for this consumer's 64 rows of A and all BN rows of B.
        // Only the low word changes from stage to stage: the start address (bits 0-13, in 16-byte
        // units) of a tile inside the 227 KiB of shared memory never carries into the stride above
        // it, so the adds are 32-bit and the high word stays a constant.
        const u32 a_low0 = (u32)A_DESC | ((smem_address(a_tile(0) + consumer * WG_ROWS * SWIZZLE_BYTES) & 0x3FFFF) >> 4);
        const u32 b_low0 = (u32)B_DESC | ((smem_address(b_tile(0)) & 0x3FFFF) >> 4);
        auto a_desc = [&](u32 stage, int slice) {
            return (A_DESC & 0xFFFFFFFF00000000ull) | (a_low0 + (stage * STAGE_BYTES + slice * 32) / 16);
        };
        auto b_desc = [&](u32 stage, int slice) {
            return (B_DESC & 0xFFFFFFFF00000000ull) | (b_low0 + (stage * STAGE_BYTES + slice * 32) / 16);
        };
        // ANCHOR_END: descriptors

        // ANCHOR: release
        // One thread of this warpgroup arrives on the stage's `empty` barrier in every block of the
        // cluster: each of them multicasts a slice of B (or, paired along N, of A) into our copy of
        // the stage.
        auto release = [&](u32 stage) {
            if (ctid == 0) {
                for (u32 r = 0; r < CLUSTER; ++r) mbarrier_arrive_cluster(&empty[stage], r);
            }
        };
        // ANCHOR_END: release

        // ANCHOR: partials
        // Where this warpgroup leaves, or finds, the partial sums of a cluster: 64×BN fp32 per
        // warpgroup, stored in the accumulators' own order (thread ctid's acc[4q .. 4q+3] at float4
        // number 128·q + ctid), so a warp's 16-byte stores and loads are 512 contiguous bytes.
        auto slot = [&](int g) {
            return reinterpret_cast<float4*>(workspace) + (i64)((g * CLUSTER + rank) * CONSUMERS + consumer) * (WG_ROWS * BN / 4);
        };
        auto flag = [&](int g) { return flags + (g * CLUSTER + rank) * CONSUMERS + consumer; };
        // ANCHOR_END: partials

        // The last tile's result, rounded to bf16 and packed two to a register, waiting to be stored
        // while the next tile's first K tiles run (below: `held`): half the registers of `acc`, of
        // which the first chunk's are free again as soon as it is stored.
        u32 held[BN / 4];
        bool holding = false;   // `held` is a tile not yet stored
        int held_row0 = 0, held_n0 = 0;
        int stores = 0;         // TMA stores this consumer has issued: its buffers alternate across tiles

        // ANCHOR: chunks
        // Step 09's chunks, from the held tile: chunk c is its columns 64·c .. 64·c+63, staged into
        // the buffer after the one the last store used and stored from there. The buffers alternate
        // across tiles (a 128×64 tile has a single chunk), so each chunk waits until the store that
        // last used its buffer, two stores ago, has read it; on a block's first stores there is
        // nothing to wait for.
        unsigned char* my_staging = staging + consumer * C_BUFFERS * C_BOX_BYTES;
        auto store_held_chunk = [&](int c) {
            const int buffer = stores % C_BUFFERS;
            const u32 box_address = smem_address(my_staging) + buffer * C_BOX_BYTES;
            int lane = ctid % 32;
            // Computed again at every chunk: kept from one to the next, these addresses would take
            // registers that the accumulators and the held tile need (they spilled).
            asm volatile("" : "+r"(lane));
            const int warp = ctid / 32, matrix = lane / 8;
            const int row = 16 * warp + 8 * (matrix % 2) + lane % 8;
            if (ctid == 0) tma_store_wait_read<C_BUFFERS - 1>();
            named_barrier_sync(1 + consumer, 128); TIMELINE_STAMP(TL_EPILOGUE_START);
            #pragma unroll
            for (int j = 8 * c; j < 8 * c + 8; j += 2) {
                const int chunk = j % 8 + matrix / 2;
                stmatrix_x4(box_address + swizzle_128b_offset(row, chunk), held[2 * j], held[2 * j + 1],
                            held[2 * j + 2], held[2 * j + 3]);
            }
            fence_async_shared();
            named_barrier_sync(1 + consumer, 128);
            if (ctid == 0) {
                tma_store_2d(&c_map, my_staging + buffer * C_BOX_BYTES, held_n0 + c * C_BOX_COLUMNS, held_row0);
                tma_store_commit(); TIMELINE_STAMP(TL_EPILOGUE_END);
            }
            ++stores;
        };
        // ANCHOR_END: chunks

        // ANCHOR: consumer_tiles
        float acc[BN / 2];  // this consumer's 64×BN part of the current tile: BN / 2 fp32 a thread

        u32 it = 0;  // K tiles consumed so far, across pieces: the producer's count, in step
        WorkList work(schedule, cluster);
        Work w;
        while (work.next(w)) {
            int m0, n0;
            origin(w.tile, m0, n0); TIMELINE_STAMP(TL_TILE_START);
            // ANCHOR_END: consumer_tiles

            // ANCHOR: consumer
            // Step 09's main loop, with stage and parity taken from the running count `it`; the first
            // MMA of each piece overwrites the accumulators. A K tile is issued, then retired: with
            // MMA_IN_FLIGHT = 1 (step.rs), as in step 09, a consumer keeps its newest group running
            // and releases the stage of the one before (with 0 it would wait for all and release at
            // once: the `wait-all` alternative).
            auto issue = [&](int t) {
                const u32 stage = it % STAGES;
                mbarrier_wait(&full[stage], (it / STAGES) & 1); TIMELINE_STAMP(TL_STAGE_FULL);
                wgmma_fence_operands(acc);
                wgmma_fence();
                static_assert(BK == 64, "one WgmmaK64 covers the K tile");
                WgmmaK64<BN>::mma(acc, a_desc(stage, 0), b_desc(stage, 0), t > w.k_begin ? 1 : 0);
                wgmma_commit(); TIMELINE_STAMP(TL_MMA_ISSUED);
            };
            auto retire = [&](int t) {
                wgmma_wait<MMA_IN_FLIGHT>(); TIMELINE_STAMP(TL_MMA_DONE);
                wgmma_fence_operands(acc);
                if (MMA_IN_FLIGHT == 0) release(it % STAGES);
                else if (t > w.k_begin) release((it - 1) % STAGES);
            };
            int t = w.k_begin;
            if (holding) {
                // The rest of the last tile's epilogue, hidden under this piece's first K tiles: one
                // chunk of it is staged and stored while each K tile's MMAs run (and the other
                // consumer's), so the tensor cores do not wait for it.
                #pragma unroll
                for (int c = 1; c < C_BOXES; ++c) {
                    const bool issued = t < w.k_end;
                    if (issued) issue(t);
                    store_held_chunk(c);
                    if (issued) {
                        retire(t);
                        ++t, ++it;
                    }
                }
                holding = false;
            }
            for (; t < w.k_end; ++t, ++it) {
                issue(t);
                retire(t);
            }
            wgmma_wait<0>(); TIMELINE_STAMP(TL_MMA_DONE);
            wgmma_fence_operands(acc);
            if (MMA_IN_FLIGHT == 1) release((it - 1) % STAGES);
            // ANCHOR_END: consumer
            // ANCHOR: fixup
            if (w.k_begin > 0) {
                // Not the tile's first K tiles: leave the partial sums for the cluster that has them,
                // raise this warpgroup's flag, and go on. A cluster's run starts here at most once.
                float4* mine = slot(cluster);
                #pragma unroll
                for (int q = 0; q < BN / 8; ++q) {
                    __stcg(&mine[128 * q + ctid], make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
                }
                named_barrier_sync(1 + consumer, 128);
                if (ctid == 0) flag_release(flag(cluster), epoch);
                continue;
            }
            if (w.k_end < schedule.k_tiles) {
                // The tile's first K tiles, and others computed the rest: the clusters after this one
                // whose runs start inside the tile. Add their partial sums, in cluster order, so the
                // result is the same on every run.
                const i64 tile_end = (i64)(w.tile - schedule.dp_tiles + 1) * schedule.k_tiles;
                for (int g = cluster + 1; g < schedule.sk_clusters && schedule.sk_begin(g) < tile_end; ++g) {
                    if (schedule.sk_begin(g) == schedule.sk_begin(g + 1)) continue;  // an empty run
                    if (ctid == 0) flag_wait_acquire(flag(g), (u32)epoch, g);
                    named_barrier_sync(1 + consumer, 128);
                    const float4* theirs = slot(g);
                    #pragma unroll
                    for (int q = 0; q < BN / 8; ++q) {
                        const float4 p = __ldcg(&theirs[128 * q + ctid]);
                        acc[4 * q] += p.x;
                        acc[4 * q + 1] += p.y;
                        acc[4 * q + 2] += p.z;
                        acc[4 * q + 3] += p.w;
                    }
                }
            }
            // ANCHOR_END: fixup

            // ANCHOR: epilogue
            const int row0 = m0 + consumer * WG_ROWS;  // this consumer's first row of C
            if (use_tma_store) {
                // ANCHOR: hold
                // Round the tile to bf16 and keep it, packed, for the next piece's first K tiles to
                // store: the accumulators are free for that piece's MMAs at once. The first chunk goes
                // out now, so that its registers are free again (holding all four, a consumer ran out
                // of registers in the main loop).
                #pragma unroll
                for (int j = 0; j < BN / 8; ++j) {
                    held[2 * j] = pack_bf16x2(acc[4 * j + 0], acc[4 * j + 1]);
                    held[2 * j + 1] = pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
                }
                holding = true;
                held_row0 = row0;
                held_n0 = n0;
                store_held_chunk(0);
                // ANCHOR_END: hold
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
        // The last tile has no next piece to hide under: its chunks go out now.
        if (holding) {
            #pragma unroll
            for (int c = 1; c < C_BOXES; ++c) store_held_chunk(c);
        }
        // The block's shared memory must outlive the last stores' reads.
        if (use_tma_store && ctid == 0) tma_store_wait_read<0>();
    }
    // A peer may still arrive on our `empty` barriers after its last tile: stay until every block is
    // done. A block on its own has no peer, and its idle producer warps may leave at once.
    if (CLUSTER > 1) cluster_sync();
}
// ANCHOR_END: kernel
