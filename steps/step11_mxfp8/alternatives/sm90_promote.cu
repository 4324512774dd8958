// Alternative to step 11's sm90.cu, design (a): one fp8 wgmma per 32-element scale block, promoted into fp32 with both scales on the CUDA cores.
// What the recorded loop says: recorded at a4451ea: 0.270× the step at 4096³, 0.236× at 8192³ (slower).
//
// Step 11 · mxfp8, design (a) (Hopper, sm_90a): the alternative to sm90.cu, built to be measured.
//
// sm90.cu turns every e4m3 element into bf16 with its block's scale folded in and runs bf16 MMAs. This
// kernel does the other thing the chapter weighs: it gives the e4m3 tiles to Hopper's fp8 wgmma as they
// are, one MMA of K = 32 per scale block, and applies the two scales afterwards on the CUDA cores:
//
//     acc[m][n] += scratch[m][n] · 2^(sa[m][kb] − 127) · 2^(sb[n][kb] − 127)
//
// where scratch is the block's fp32 partial sum, fresh from the MMA. The scale product differs for every
// (m, n), so the promotion costs an FMUL and an FFMA per output per block of 32: twice the fp8 MMA's own
// time, by the chapter's count. This kernel exists to measure how much of that shows.
//
// What changes from sm90.cu, which it follows otherwise (persistent clusters of two along M with B
// multicast, the producer warpgroup, two consumer warpgroups, step 10's tile order, the fp32 epilogue):
//   - the K tile is 128 e4m3 = one 128-byte row with the 128-byte swizzle, as step 10's bf16 tile: the
//     wgmma reads it through the same descriptors, one k32 slice (32 bytes) per scale block, and a stage
//     needs exactly one 512-byte tile of the blocked scale layout for A and one for B;
//   - the tile is 128 × 128, each consumer 64 × 128: the accumulators and the scratch accumulators take
//     2 × 64 registers a thread, as many as sm90.cu's 64 × 256 accumulators. A second scratch set, so
//     that a consumer's MMA of block kb + 1 runs while it promotes block kb, does not fit the 224
//     registers a consumer thread has (ptxas spills and serializes the wgmmas); the two consumers
//     overlap instead, one's MMA running while the other promotes;
//   - the producer warpgroup's second warp turns each stage's scale bytes into fp32 factors, once, in a
//     table in the stage laid out for the consumers' vector loads, and announces it on a third barrier
//     per stage (`ready`); the consumers wait for that one;
//   - nothing is converted: no bf16 tile, no register operand, no barrier between the consumers.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "wgmma.cuh"
#include "cluster.cuh"
#include "warpgroup.cuh"
#include "mx.cuh"
#include "epilogue.cuh"

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory, in elements) is set by step.rs"
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
#error "A_DESC and B_DESC (wgmma descriptor templates of the e4m3 tiles, start address 0) are computed in step.rs"
#endif

enum : int {
    CONSUMERS = 2,                       // consumer warpgroups, 64 rows of the tile each
    THREADS = 128 * (1 + CONSUMERS),     // + the producer warpgroup
    WG_ROWS = BM / CONSUMERS,            // rows of C per consumer: one wgmma tile of 64 rows
    ROW_BYTES = BK,                      // an e4m3 row of the K tile: 128 bytes, 128-byte swizzle
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    B_SLICE_ROWS = BN / CLUSTER_M,       // the rows of B each block of the cluster loads for everyone
    B_SLICE_BYTES = B_SLICE_ROWS * ROW_BYTES,
    SCALE_BLOCKS = BK / 32,              // scale blocks per K tile, one k32 wgmma each
    SCALE_TILE_BYTES = 512,              // the blocked layout: 128 rows × 4 scales
    SCALE_BYTES = 2 * SCALE_TILE_BYTES,  // the stage's A tile of scales, then B's
    FACTOR_BYTES = SCALE_BLOCKS * (BM + BN) * 4,  // the same scales as fp32 factors
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES + SCALE_BYTES + FACTOR_BYTES,
    CLUSTER_MASK = (1 << CLUSTER_M) - 1,
    ACC = BN / 2,                        // fp32 accumulators a thread holds for a 64 × BN wgmma tile
    C_BOX_BYTES = WG_ROWS * 128,         // a TMA store box of C: WG_ROWS rows × 32 fp32 (epilogue.cuh)
    C_BUFFERS = 2,                       // staging buffers per consumer: one fills while one drains
    C_STAGING_BYTES = CONSUMERS * C_BUFFERS * C_BOX_BYTES,
};
static_assert(WG_ROWS == 64, "each consumer computes one 64-row wgmma tile");
static_assert(BM == 128 && BN == 128, "one 128-row tile of the blocked scale layout each for A and B");
static_assert(BK == 128, "a K tile is one 128-byte row: four scale blocks, one 512-byte column of the scale layout");
static_assert(STAGE_BYTES % 1024 == 0 && B_SLICE_BYTES % 1024 == 0, "tiles keep 1024-byte alignment");
static_assert(STAGES >= 2, "a ring needs two stages to overlap loads and MMAs");
// setmaxnreg moves registers between the warpgroups of a block; it cannot add any. The block starts
// with what ptxas gave every thread under __launch_bounds__(THREADS, 1): 65536 / THREADS, rounded down
// to a multiple of 8 (168). A consumer's setmaxnreg.inc beyond that waits forever.
static_assert(PRODUCER_REGISTERS * 128 + CONSUMER_REGISTERS * 128 * CONSUMERS <= (65536 / THREADS) / 8 * 8 * THREADS,
              "the registers the block is launched with");

// Step 10's tile order.
struct TileOrder {
    int tiles_m, tiles_n;
    __device__ __forceinline__ int count() const { return tiles_m * tiles_n; }
    __device__ __forceinline__ void locate(int index, int& tile_m, int& tile_n) const {
        const int per_group = GROUP_M * tiles_n;
        const int group = index / per_group;
        const int first_m = group * GROUP_M;
        const int rows = min(GROUP_M, tiles_m - first_m);
        const int within = index - group * per_group;
        tile_m = first_m + within % rows;
        tile_n = within / rows;
    }
};

// Which tiles this block computes: its cluster takes every clusters-th tile of the order, and the block
// is the rank-th of its cluster along M.
struct Schedule {
    u32 rank;
    int cluster, clusters;
    TileOrder order;
    __device__ __forceinline__ Schedule(int M, int N)
        : rank(cluster_ctarank()),
          cluster(blockIdx.x / CLUSTER_M),
          clusters(gridDim.x / CLUSTER_M),
          order{(M + CLUSTER_M * BM - 1) / (CLUSTER_M * BM), (N + BN - 1) / BN} {}
    __device__ __forceinline__ void origin(int index, int& m0, int& n0) const {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * CLUSTER_M * BM + rank * BM;
        n0 = tile_n * BN;
    }
};

// ANCHOR: factor_layout
// Where column n's factor for one scale block sits in B's table: thread t (= lane % 4) of every warp
// holds columns 8j + 2t and 8j + 2t + 1 of each 8-column group j (wgmma.cuh's fragment), so those are
// put side by side, t's BN / 4 factors in one run: a thread reads its 32 with eight 16-byte loads, and
// the four t of a warp read four different runs (the eight rows of a warp read the same ones).
__device__ __forceinline__ int b_factor_index(int n) {
    return ((n % 8) / 2) * (BN / 4) + (n / 8) * 2 + n % 2;
}
// ANCHOR_END: factor_layout

// ANCHOR: kernel
// __launch_bounds__(384, 1) as in step 10; the kernel's parameters are sm90.cu's.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              const unsigned char* __restrict__ scale_a,
                                                              const unsigned char* __restrict__ scale_b,
                                                              float* __restrict__ C, int M, int N, int K,
                                                              int use_tma_store) {
    // Dynamic shared memory: STAGES × (A tile, B tile, A and B scale bytes, their fp32 factors), the
    // staging buffers of C, then the barriers.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES; };
    auto scales = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES + B_TILE_BYTES; };
    // A's factors [block][row], then B's [block][b_factor_index(column)].
    auto factors = [&](int stage) { return reinterpret_cast<float*>(scales(stage) + SCALE_BYTES); };
    unsigned char* staging = smem + STAGES * STAGE_BYTES;
    u64* full = reinterpret_cast<u64*>(staging + C_STAGING_BYTES);
    u64* ready = full + STAGES;
    u64* empty = ready + STAGES;

    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;
    // Where this block's tiles are. Each role works it out after its setmaxnreg: values computed
    // before it and kept across, ptxas spills.
    auto schedule = [&]() { return Schedule(M, N); };

    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (use_tma_store) tma_prefetch_map(&c_map);
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&ready[s], 32);
            mbarrier_init(&empty[s], 4 * CONSUMERS * CLUSTER_M);  // every consumer warp of both blocks
        }
        mbarrier_init_fence();
    }
    cluster_sync();

    if (warpgroup == 0) {
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        const Schedule tiles = schedule();
        const int k_tiles = (K + BK - 1) / BK;
        if (tid == 0) {
            // ANCHOR: producer
            // sm90.cu's producer with one tile of scales for A and one for B per stage: a K tile of 128
            // is exactly one 512-byte column of the blocked layout.
            const int scale_blocks_k = (K / 32 + 3) / 4;  // 512-byte tiles along K
            int it = 0;
            for (int index = tiles.cluster; index < tiles.order.count(); index += tiles.clusters) {
                int m0, n0;
                tiles.origin(index, m0, n0);
                // Scale tiles of rows wholly past M or N do not exist (the arrays are padded to 128 rows
                // only): not copied, and `full` expects fewer bytes.
                const bool a_rows = m0 < M, b_rows = n0 < N;
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int stage = it % STAGES;
                    const u32 parity = (it / STAGES) & 1;
                    mbarrier_wait(&empty[stage], parity ^ 1);
                    const u32 bytes = A_TILE_BYTES + B_TILE_BYTES + (a_rows ? 512 : 0) + (b_rows ? 512 : 0);
                    mbarrier_arrive_expect_bytes(&full[stage], bytes);
                    tma_load_2d(a_tile(stage), &a_map, &full[stage], t * BK, m0);
                    tma_load_2d_multicast(b_tile(stage) + tiles.rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,
                                          n0 + tiles.rank * B_SLICE_ROWS, CLUSTER_MASK);
                    if (a_rows) {
                        bulk_load(scales(stage), scale_a + ((i64)(m0 / 128) * scale_blocks_k + t) * 512, 512,
                                  &full[stage]);
                    }
                    if (b_rows) {
                        bulk_load(scales(stage) + SCALE_TILE_BYTES,
                                  scale_b + ((i64)(n0 / 128) * scale_blocks_k + t) * 512, 512, &full[stage]);
                    }
                }
            }
            // ANCHOR_END: producer
        } else if (tid / 32 == 1) {
            // ANCHOR: factors
            // The second warp: once a stage has landed, turn its scale bytes into fp32 factors. Word w
            // of a 512-byte tile holds the four blocks' bytes of row (w / 4) + 32 · (w % 4)
            // (sm90.cu's scale_offset, read four bytes at a time).
            const int lane = tid % 32;
            int it = 0;
            for (int index = tiles.cluster; index < tiles.order.count(); index += tiles.clusters) {
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int stage = it % STAGES;
                    mbarrier_wait(&full[stage], (it / STAGES) & 1);
                    const u32* words = reinterpret_cast<const u32*>(scales(stage));
                    float* a_factors = factors(stage);
                    float* b_factors = a_factors + SCALE_BLOCKS * BM;
                    #pragma unroll
                    for (int w = lane; w < 128; w += 32) {
                        const int row = w / 4 + 32 * (w % 4);
                        const u32 a = words[w], b = words[128 + w];
                        #pragma unroll
                        for (int block = 0; block < SCALE_BLOCKS; ++block) {
                            a_factors[block * BM + row] = e8m0_to_f32((a >> (8 * block)) & 0xFF);
                            b_factors[block * BN + b_factor_index(row)] = e8m0_to_f32((b >> (8 * block)) & 0xFF);
                        }
                    }
                    mbarrier_arrive(&ready[stage]);
                }
            }
            // ANCHOR_END: factors
        }
    } else {
        setmaxnreg_inc<CONSUMER_REGISTERS>();
        const Schedule tiles = schedule();
        const int k_tiles = (K + BK - 1) / BK;
        const int consumer = warpgroup - 1;
        const int ctid = tid - 128 * warpgroup;
        const int lane = ctid % 32;

        // Each warp releases a stage for itself, as in sm90.cu: besides the MMAs (waited for by the whole
        // warpgroup), each thread's own loads of the stage's factors read it.
        auto release = [&](int stage) {
            __syncwarp();
            if (lane == 0) {
                for (u32 r = 0; r < CLUSTER_M; ++r) mbarrier_arrive_cluster(&empty[stage], r);
            }
        };

        // Descriptors: this consumer's 64 rows of the A tile, all BN rows of the B tile; scale block
        // `block` is the k32 slice 32 bytes along the (swizzled) row.
        const u64 a_desc0 = A_DESC | ((smem_address(smem) & 0x3FFFF) >> 4);
        const u64 b_desc0 = B_DESC | ((smem_address(smem) & 0x3FFFF) >> 4);
        auto a_desc = [&](int stage, int block) {
            return a_desc0 + ((stage * STAGE_BYTES + consumer * WG_ROWS * ROW_BYTES + block * 32) >> 4);
        };
        auto b_desc = [&](int stage, int block) {
            return b_desc0 + ((stage * STAGE_BYTES + A_TILE_BYTES + block * 32) >> 4);
        };

        // ANCHOR: promote
        // acc += scratch · sa · sb for one scale block: this thread's rows g and g + 8 of the warp's 16
        // take one A factor each; its 2 · BN / 8 columns take B's, eight 16-byte loads. An FMUL and an
        // FFMA per accumulator: the cost the chapter counts.
        const int a_row = consumer * WG_ROWS + WgmmaFragment(ctid).row;  // row of the block's tile; + 8 for d[4j + 2]
        float acc[ACC];
        auto promote = [&](const float (&scratch)[ACC], int stage, int block) {
            const float* a_factors = factors(stage) + block * BM;
            const float sa[2] = {a_factors[a_row], a_factors[a_row + 8]};
            const float4* b_factors = reinterpret_cast<const float4*>(factors(stage) + SCALE_BLOCKS * BM +
                                                                      block * BN + (lane % 4) * (BN / 4));
            #pragma unroll
            for (int q = 0; q < BN / 16; ++q) {  // groups j = 2q, 2q + 1
                const float4 sb = b_factors[q];
                const float column[4] = {sb.x, sb.y, sb.z, sb.w};
                #pragma unroll
                for (int r = 0; r < 8; ++r) {  // d[8q + r]: group 2q + r / 4, row g + 8 · (r / 2 % 2), column r % 2
                    const int i = 8 * q + r;
                    acc[i] = fmaf(scratch[i] * sa[(r / 2) % 2], column[2 * (r / 4) + r % 2], acc[i]);
                }
            }
        };
        // ANCHOR_END: promote

        float scratch[ACC];
        int it = 0;
        for (int index = tiles.cluster; index < tiles.order.count(); index += tiles.clusters) {
            int m0, n0;
            tiles.origin(index, m0, n0);

            // ANCHOR: consumer
            // Per scale block: one fp8 MMA into the scratch accumulators (scale-d 0: no zeroing), wait
            // for it, promote. This warpgroup's tensor-core work and CUDA-core work take turns; the
            // other consumer's MMA runs while this one promotes, and the other way round.
            #pragma unroll
            for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
            for (int t = 0; t < k_tiles; ++t, ++it) {
                const int stage = it % STAGES;
                const u32 parity = (it / STAGES) & 1;
                mbarrier_wait(&full[stage], parity);
                mbarrier_wait(&ready[stage], parity);
                #pragma unroll
                for (int block = 0; block < SCALE_BLOCKS; ++block) {
                    wgmma_fence_operands(scratch);
                    wgmma_fence();
                    WgmmaE4m3<BN>::mma(scratch, a_desc(stage, block), b_desc(stage, block), 0);
                    wgmma_commit();
                    wgmma_wait<0>();
                    wgmma_fence_operands(scratch);
                    promote(scratch, stage, block);
                }
                release(stage);
            }
            // ANCHOR_END: consumer

            // sm90.cu's epilogue (epilogue.cuh), with BN / 32 chunks. Its fragment is worked out here
            // from a lane index the compiler cannot hoist: kept live through the main loop, its addresses
            // cost registers the promotion needs (ptxas spilled them).
            const int row0 = m0 + consumer * WG_ROWS;
            u32 lane_now;
            asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane_now));
            const WgmmaFragment frag(ctid - lane + lane_now);
            store_c_f32<BN>(acc, frag, ctid, 2 + consumer, staging + consumer * C_BUFFERS * C_BOX_BYTES, &c_map,
                            use_tma_store, C, M, N, row0, n0);
        }
        if (use_tma_store && ctid == 0) tma_store_wait_read<0>();
    }
    cluster_sync();
}
// ANCHOR_END: kernel
