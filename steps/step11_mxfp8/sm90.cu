// Step 11 · mxfp8 (Hopper, sm_90a): an MXFP8 GEMM on a GPU without block-scaled MMA.
//
// A and B arrive as e4m3 bytes with one e8m0 scale per 32 elements along K (mx.cuh says what they
// mean), C leaves as fp32. Hopper's fp8 wgmma multiplies e4m3 at twice the bf16 rate, but it knows only
// one scale for a whole MMA; with a scale every 32 elements of K the partial sums of each 32-wide
// block would have to be multiplied by their two scales on the CUDA cores, two fp32 instructions per
// output per block, twice the tensor cores' own time (the chapter does the arithmetic). So this step
// does the other thing: it turns every element into bf16 with its block's scale folded in, which is
// exact (mx.cuh), and runs step 10's bf16 pipeline on the result.
//
// Where the conversion happens is the whole design. A block computes a 128 × 256 tile of C; every K
// tile it needs 128 rows of A and 256 rows of B. Converting both inside the GEMM (the chapter measures
// two such designs) costs 384 rows of conversions per block and K tile, and each row of B is converted
// again by every block that uses it: M / 128 times over the GEMM. Here B is converted once, by a
// pre-pass over all of B (`dequantize_b`, a memory-bound kernel: one byte in, two out per element),
// into a bf16 scratch copy that the GEMM loads with the TMA exactly as step 10 loads B. Only A is
// converted inside the GEMM, 128 rows per block and K tile, a third of the fully fused count, and
// straight into registers (the alternative "overlapped", sm90_overlapped.cu, hides the pre-pass inside
// the GEMM instead, and is slower: the chapter has the measurements):
//   - each consumer thread loads its part of the e4m3 A tile with ldmatrix, converts it in registers
//     and hands it to the wgmma as the register operand (RS); A never becomes a bf16 tile;
//   - a K tile's A is converted while the previous K tile's MMAs run (two sets of fragment registers),
//     and one group of MMAs stays in flight, as in step 10: no barrier between the consumers;
//   - the ring holds e4m3 A (64 bytes a row, 64-byte swizzle), the bf16 B tile (step 10's) and A's
//     scales, copied by the producer as a plain bulk copy of one 512-byte block of the blocked scale
//     layout (step.rs and shared/check/mx.rs say how it is laid out: 128 rows × 4 scales per block, row
//     r's four at byte (r % 32)·16 + (r / 32)·4);
//   - the accumulators leave as fp32 (no rounding to bf16), in 64×32 chunks.
//
// One more trick makes the register operand cheap. The wgmma's A fragment wants, in each thread, the
// elements k = 2t, 2t+1 and 2t+8, 2t+9 of a 16-wide K slice (t = lane % 4); ldmatrix on e4m3 bytes
// delivers k = 4t .. 4t+3, and the cheapest conversion (mx.cuh) turns those four bytes into the pairs
// (4t, 4t+2) and (4t+1, 4t+3). A sum over k does not care in which order k is taken, as long as A and
// B take the same order. So the fragment's positions 2t, 2t+1 hold k = 4t, 4t+2 and 2t+8, 2t+9 hold
// 4t+1, 4t+3: A gets that order from ldmatrix and the conversion for free, and the pre-pass writes B's
// bf16 rows in the same order, also for free.
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
#ifndef B_DESC
#error "B_DESC (wgmma descriptor template of the bf16 B tile, start address 0) is computed in step.rs"
#endif

// ANCHOR: dequantize_b
// The pre-pass: B (rows × K e4m3, blocked scales) into bf16 with the scales folded in, each 16-element
// slice of K in the order the A fragments take (the even bytes of its four words first, then the odd
// bytes: see above), so that the GEMM's MMAs pair every k of A with the same k of B. Two neighbouring
// threads share a slice: both load its 16 bytes, one converts and stores the even half, the other the
// odd half, so that a warp's stores cover 512 contiguous bytes (one thread storing both halves would
// leave every other 16 bytes of each store instruction empty, twice the L2 transactions).
extern "C" __global__ void dequantize_b(const unsigned char* __restrict__ q, const unsigned char* __restrict__ scales,
                                        bf16* __restrict__ out, int rows, int K) {
    const int halves = K / 8;  // two per 16-element slice
    // The GEMM after it may start now, on the SMs this kernel's last blocks leave (a programmatic
    // dependent launch): it waits for this kernel's writes (griddepcontrol.wait) before it loads B.
    asm volatile("griddepcontrol.launch_dependents;");
    const i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<i64>(rows) * halves) return;
    const int row = static_cast<int>(t / halves), half = static_cast<int>(t % halves);
    const int slice = half / 2;
    const u32 s = scales[blocked_scale_offset(row, slice / 2, K)];
    const uint4 in = *reinterpret_cast<const uint4*>(q + static_cast<i64>(row) * K + slice * 16);
    *reinterpret_cast<uint4*>(out + static_cast<i64>(row) * K + half * 8) = e4m3x16_half_to_bf16x8(in, s, half % 2);
}
// ANCHOR_END: dequantize_b

enum : int {
    CONSUMERS = 2,                       // consumer warpgroups, 64 rows of the tile each
    THREADS = 128 * (1 + CONSUMERS),     // + the producer warpgroup
    WG_ROWS = BM / CONSUMERS,            // rows of C per consumer: one wgmma tile of 64 rows
    A_ROW_BYTES = BK,                    // an e4m3 row of the K tile: 64 bytes, 64-byte swizzle
    A_TILE_BYTES = BM * A_ROW_BYTES,
    SWIZZLE_BYTES = 128,                 // a bf16 row of B's K tile: 128 bytes, 128-byte swizzle (step 10's)
    B_TILE_BYTES = BN * SWIZZLE_BYTES,
    B_SLICE_ROWS = BN / CLUSTER_M,       // the rows of B each block of the cluster loads for everyone
    B_SLICE_BYTES = B_SLICE_ROWS * SWIZZLE_BYTES,
    SCALE_BLOCK_ROWS = 128,              // the blocked scale layout: 128 rows × 4 scales = 512 bytes
    SCALE_BLOCK_BYTES = 512,
    STAGE_BYTES = B_TILE_BYTES + A_TILE_BYTES,  // a stage's tiles; its scale block lies apart (alignment)
    CLUSTER_MASK = (1 << CLUSTER_M) - 1,
    C_BOX_BYTES = 64 * 128,              // a TMA store box of C: 64 rows × 32 fp32 (epilogue.cuh)
    C_BUFFERS = 2,                       // staging buffers per consumer: one fills while one drains
    C_STAGING_BYTES = CONSUMERS * C_BUFFERS * C_BOX_BYTES,
    CONSUMER_WARPS = 4 * CONSUMERS,      // each releases a stage for itself (below)
};
static_assert(WG_ROWS == 64, "each consumer computes one 64-row wgmma tile");
static_assert(BN == 256, "one wgmma m64n256k16 covers the tile's columns");
static_assert(BK == 64 && BK * 2 == SWIZZLE_BYTES, "a K tile is two 32-element scale blocks, one 128-byte bf16 row of B");
static_assert(BM == SCALE_BLOCK_ROWS, "the tile's rows of A are one block of scales");
static_assert(B_SLICE_BYTES % 1024 == 0 && A_TILE_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0,
              "tiles keep 1024-byte alignment");
static_assert(STAGES >= 2, "a ring needs two stages to overlap loads and MMAs");
// setmaxnreg moves registers within what the block got at launch: __launch_bounds__(THREADS, 1) gives
// each thread 65536 / THREADS, rounded down to a multiple of 8 (168 for 384 threads).
static_assert((PRODUCER_REGISTERS + CONSUMER_REGISTERS * CONSUMERS) * 128 <= (65536 / THREADS) / 8 * 8 * THREADS,
              "the registers the block got at launch");

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

// ANCHOR: scale_of
// A row's scales for four 32-element blocks of K are one word of a 512-byte tile of the blocked layout
// (mx.cuh, scale_offset). The two scale bytes K tile t (64 elements: two blocks) uses, out of that
// word: a K tile is half of a 512-byte tile.
__device__ __forceinline__ void tile_scales(u32 word, int t, u32 (&scale)[2]) {
    const int block0 = ((t * BK) % 128) / 32;  // 0 or 2
    scale[0] = (word >> (8 * block0)) & 0xFF;
    scale[1] = (word >> (8 * block0 + 8)) & 0xFF;
}
// ANCHOR_END: scale_of

// ANCHOR: kernel
// __launch_bounds__(384, 1) as in step 10. `b_bf16` is the pre-pass's output, behind b_map; A's scales
// are a plain pointer: the producer copies 512-byte blocks of them with bulk copies, no tensor map.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              const unsigned char* __restrict__ scale_a,
                                                              const unsigned char* __restrict__ scale_b,
                                                              float* __restrict__ C, int M, int N, int K,
                                                              int use_tma_store) {
    // Dynamic shared memory: STAGES × (B tile, A tile), STAGES × A's scales, the staging buffers of C,
    // then the barriers. (B's scales are folded into the bf16 B already: scale_b is not read here.)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES + B_TILE_BYTES; };
    auto a_scales = [&](int stage) { return smem + STAGES * STAGE_BYTES + stage * SCALE_BLOCK_BYTES; };
    unsigned char* staging = smem + STAGES * (STAGE_BYTES + SCALE_BLOCK_BYTES);
    u64* full = reinterpret_cast<u64*>(staging + C_STAGING_BYTES);
    u64* empty = full + STAGES;

    const int tid = threadIdx.x; TIMELINE_INIT();
    const int warpgroup = tid / 128;
    const u32 rank = cluster_ctarank();
    const int k_tiles = (K + BK - 1) / BK;
    const int cluster = blockIdx.x / CLUSTER_M;
    const int clusters = gridDim.x / CLUSTER_M;
    const TileOrder order{(M + CLUSTER_M * BM - 1) / (CLUSTER_M * BM), (N + BN - 1) / BN};
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * CLUSTER_M * BM + rank * BM;
        n0 = tile_n * BN;
    };

    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (use_tma_store) tma_prefetch_map(&c_map);
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMER_WARPS * CLUSTER_M);
        }
        mbarrier_init_fence();
    }
    cluster_sync();

    if (warpgroup == 0) {
        // ANCHOR: producer
        // Step 10's producer, plus A's scales. The blocked layout stores the scales of 128 rows × 128
        // elements of K as one 512-byte block; a K tile (64 elements) uses half of one, so each stage
        // gets the whole block (the copy is tiny) and the consumers pick their half. A block of rows
        // wholly past M does not exist in the scale array (it is padded to 128 rows only): it is not
        // copied, and `full` expects fewer bytes.
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        if (tid == 0) {
            // Launched under the pre-pass's tail: the converted B is complete and visible past here.
            asm volatile("griddepcontrol.wait;" ::: "memory");
            const int scale_blocks_k = (K / 32 + 3) / 4;  // 512-byte blocks along K
            const int a_row_blocks = (M + SCALE_BLOCK_ROWS - 1) / SCALE_BLOCK_ROWS;
            int it = 0;
            for (int index = cluster; index < order.count(); index += clusters) {
                int m0, n0;
                origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);
                const bool scales_exist = m0 / 128 < a_row_blocks;
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int stage = it % STAGES;
                    const u32 parity = (it / STAGES) & 1;
                    mbarrier_wait(&empty[stage], parity ^ 1);
                    mbarrier_arrive_expect_bytes(&full[stage], B_TILE_BYTES + A_TILE_BYTES + (scales_exist ? 512 : 0));
                    tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,
                                          n0 + rank * B_SLICE_ROWS, CLUSTER_MASK);
                    tma_load_2d(a_tile(stage), &a_map, &full[stage], t * BK, m0);
                    if (scales_exist) {
                        const int kb = (t * BK) / 128;  // the 512-byte block column of this K tile
                        bulk_load(a_scales(stage), scale_a + ((i64)(m0 / 128) * scale_blocks_k + kb) * 512, 512,
                                  &full[stage]);
                    } TIMELINE_STAMP(TL_TMA_ISSUED);
                }
            }
        }
        // ANCHOR_END: producer
    } else {
        setmaxnreg_inc<CONSUMER_REGISTERS>();
        const int consumer = warpgroup - 1;
        const int ctid = tid - 128 * warpgroup;
        const int warp = ctid / 32, lane = ctid % 32;

        // A stage goes back once every consumer warp of both blocks is done with it: its own loads of
        // A (ldmatrix) and its MMAs' reads of B, which a warp knows are over once its wgmma_wait says so.
        // Each warp arrives for itself.
        auto release = [&](int stage) {
            __syncwarp();
            if (lane == 0) {
                for (u32 r = 0; r < CLUSTER_M; ++r) mbarrier_arrive_cluster(&empty[stage], r);
            }
        };

        // ANCHOR: convert_a
        // This thread's A fragments for the four k16 slices of K tile t. ldmatrix gives, for rows g and
        // g + 8 of the warp's 16, the word of bytes 4t .. 4t+3 of each slice (t = lane % 4). The
        // fragment wants positions 2t, 2t+1 in a[0] (a[1] for row g + 8) and 2t+8, 2t+9 in a[2] (a[3]):
        // the word's even bytes go to the first, its odd bytes to the second, as the pre-pass puts B's.
        // A sum over K does not care in which order K is taken, as long as A and B take the same.
        const int g = lane / 4;
        const int a_row = consumer * WG_ROWS + 16 * warp + g;  // row of the block's A tile; + 8 for a[1], a[3]
        auto load_a = [&](int stage, u32 (&raw)[2][4]) {
            // Lane l names row l % 8 of matrix l / 8: matrices (rows g, slice s), (rows g + 8, slice s),
            // (rows g, slice s + 1), (rows g + 8, slice s + 1).
            const u32 source = smem_address(a_tile(stage));
            const int matrix = lane / 8;
            const int ld_row = consumer * WG_ROWS + 16 * warp + 8 * (matrix % 2) + lane % 8;
            #pragma unroll
            for (int pair = 0; pair < 2; ++pair) {
                ldmatrix_x4(source + swizzle_64b_offset(ld_row, 2 * pair + matrix / 2), raw[pair][0], raw[pair][1],
                            raw[pair][2], raw[pair][3]);
            }
        };
        auto convert_a = [&](bool wide, const u32 (&raw)[2][4], const u32 (&scale)[2][2], u32 (&a)[4][4]) {
            u32 factor[2][2];  // [row g, g + 8][block]
            #pragma unroll
            for (int r = 0; r < 2; ++r) {
                #pragma unroll
                for (int b = 0; b < 2; ++b) factor[r][b] = scale_bf16x2(scale[r][b], wide);
            }
            #pragma unroll
            for (int pair = 0; pair < 2; ++pair) {
                #pragma unroll
                for (int m = 0; m < 4; ++m) {
                    const int slice = 2 * pair + m / 2, row8 = m % 2;
                    e4m3x4_to_bf16x4(raw[pair][m], factor[row8][slice / 2], wide, a[slice][row8], a[slice][row8 + 2]);
                }
            }
        };
        // K tile t from stage `stage`: its A bytes and its scales (A's rows g and g + 8, the K tile's two
        // blocks) are loaded together, then converted. Whether any of the warp's blocks needs the
        // two-multiplication path (mx.cuh) is decided once per warp and K tile, so that the warp never
        // diverges; ordinary data never takes it.
        auto convert = [&](int t, int stage, u32 (&a)[4][4]) {
            u32 raw[2][4];
            load_a(stage, raw);
            u32 scale[2][2];
            #pragma unroll
            for (int r = 0; r < 2; ++r) {
                tile_scales(*reinterpret_cast<const u32*>(a_scales(stage) + scale_offset(a_row + 8 * r)), t, scale[r]);
            }
            const u32 largest = max(max(scale[0][0], scale[0][1]), max(scale[1][0], scale[1][1]));
            if (__any_sync(0xFFFFFFFFu, largest > NARROW_SCALE_MAX)) {
                convert_a(true, raw, scale, a);
            } else {
                convert_a(false, raw, scale, a);
            }
        };
        // ANCHOR_END: convert_a

        const u64 b_desc0 = B_DESC | ((smem_address(b_tile(0)) & 0x3FFFF) >> 4);
        auto b_desc = [&](int stage, int slice) { return b_desc0 + ((stage * STAGE_BYTES + slice * 32) >> 4); };

        float acc[BN / 2];  // this consumer's 64×256 part of the tile: 128 fp32 a thread
        u32 a[2][4][4];     // A fragments of two K tiles: one read by the MMAs while the next is converted

        int it = 0;  // K tiles consumed so far, across tiles: the producer's count, in step
        for (int index = cluster; index < order.count(); index += clusters) {
            int m0, n0;
            origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);

            // ANCHOR: consumer
            // K tile t's MMAs read a_now and the stage's B. Once they are issued, the previous K tile's
            // MMAs are waited for (one group stays in flight, as in step 10), which frees their stage
            // and a_next, and K tile t + 1's A is converted into a_next while K tile t's MMAs run. The
            // loop is unrolled by two so that which register set is which is known at compile time:
            // registers cannot be indexed at run time (the array would go to local memory).
            auto convert_next = [&](int t, int j, u32 (&a_set)[4][4]) {
                mbarrier_wait(&full[j % STAGES], (j / STAGES) & 1); TIMELINE_STAMP(TL_CONVERT_START);
                convert(t, j % STAGES, a_set); TIMELINE_STAMP(TL_CONVERT_END);
            };
            convert_next(0, it, a[0]);
            auto mma_tile = [&](int t, u32 (&a_now)[4][4], u32 (&a_next)[4][4]) {
                const int stage = it % STAGES;
                wgmma_fence_operands(acc);
                wgmma_fence();
                #pragma unroll
                for (int s = 0; s < BK / 16; ++s) {
                    WgmmaRs<BN>::mma(acc, a_now[s], b_desc(stage, s), (t > 0 || s > 0) ? 1 : 0);
                }
                wgmma_commit(); TIMELINE_STAMP(TL_MMA_ISSUED);
                wgmma_wait<1>(); TIMELINE_STAMP(TL_MMA_DONE);
                wgmma_fence_operands(acc);
                #pragma unroll
                for (int s = 0; s < BK / 16; ++s) wgmma_fence_operands(a_next[s]);  // read until here
                if (t > 0) release((it - 1) % STAGES);
                if (t + 1 < k_tiles) convert_next(t + 1, it + 1, a_next);
                ++it;
            };
            for (int t = 0; t < k_tiles; t += 2) {
                mma_tile(t, a[0], a[1]);
                if (t + 1 < k_tiles) mma_tile(t + 1, a[1], a[0]);
            }
            wgmma_wait<0>(); TIMELINE_STAMP(TL_MMA_DONE);
            wgmma_fence_operands(acc);
            release((it - 1) % STAGES);
            // ANCHOR_END: consumer

            // ANCHOR: epilogue
            // Step 10's chunked epilogue, in fp32 (epilogue.cuh).
            const int row0 = m0 + consumer * WG_ROWS; TIMELINE_STAMP(TL_EPILOGUE_START);
            store_c_f32<BN>(acc, WgmmaFragment(ctid), ctid, 1 + consumer, staging + consumer * C_BUFFERS * C_BOX_BYTES,
                            &c_map, use_tma_store, C, M, N, row0, n0); TIMELINE_STAMP(TL_EPILOGUE_END);
            // ANCHOR_END: epilogue
        }
        if (use_tma_store && ctid == 0) tma_store_wait_read<0>();
    }
    cluster_sync();
}
// ANCHOR_END: kernel
