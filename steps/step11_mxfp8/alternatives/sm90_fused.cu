// Alternative to step 11's sm90.cu: no pre-pass; a 256×128 tile, A converted into registers, B into a ring of bf16 tiles in shared memory by the consumers.
// What the recorded loop says: recorded at a4451ea: 0.717× the step at 4096³, 0.649× at 8192³ (slower).
//
// Step 11 · mxfp8 (Hopper, sm_90a): an MXFP8 GEMM on a GPU without block-scaled MMA.
//
// A and B arrive as e4m3 bytes with one e8m0 scale per 32 elements along K (mx.cuh says what they
// mean), C leaves as fp32. Hopper's fp8 wgmma multiplies e4m3 at twice the bf16 rate, but it knows only
// one scale for a whole MMA; with a scale every 32 elements of K the partial sums of each 32-wide
// block would have to be multiplied by their two scales on the CUDA cores, two fp32 instructions per
// output per block, twice the tensor cores' own time (the chapter does the arithmetic). So this kernel
// does the other thing: it turns every element into bf16 with its block's scale folded in, which is
// exact (mx.cuh), and runs bf16 MMAs on the result. The conversion is paid once per element per tile,
// on CUDA cores that the bf16 MMAs leave idle.
//
// The cost that decides the design is shared memory, not the conversion: the two operands do not
// cost the same. The operand the wgmma takes from registers (A of the MMA) goes e4m3 → ldmatrix →
// convert → registers: it is read from shared memory once, as bytes. The operand the wgmma reads from
// shared memory must be a bf16 tile there: written once as e4m3 by the TMA, read once, written again
// as bf16 and read by every MMA. So the larger operand goes through registers: a block computes a
// 256×128 tile of C (not step 10's 128×256), its 256 rows of A enter the MMAs as register operands
// (each consumer warpgroup 128 rows, two m64 slabs) and only B's 128 rows become a bf16 tile.
//
// What changes from step 10, which this kernel follows everywhere else (persistent clusters of two,
// a multicast operand, the producer warpgroup, two consumer warpgroups, the chunked epilogue):
//   - the tile is 256 × 128 and the cluster's two blocks sit side by side along N, sharing A (each
//     loads one half of the A tile for both); the cluster's tile is 256 × 256, step 10's;
//   - the ring holds e4m3 tiles: a K tile of 64 elements is 64 bytes a row, stored by the TMA with the
//     64-byte swizzle, and each stage also gets the K tile's scales, copied by the producer as plain
//     bulk copies of 512-byte blocks of the blocked scale layout (step.rs and shared/check/mx.rs say how
//     it is laid out: 128 rows × 4 scales per block, row r's four at byte (r % 32)·16 + (r / 32)·4);
//   - B goes through a converted copy: consumer 0 converts the first 32 elements of each of the 128
//     rows, consumer 1 the last 32 (one scale block a thread), into a ring of three 128-byte-swizzled
//     bf16 tiles that the wgmmas read with the usual descriptor. The ring has barriers of its own: a
//     converted tile is `converted` once all eight consumer warps have written their part, and `drained`
//     once both warpgroups' MMAs that read it have completed. No named barrier stops both consumers in
//     a K tile, and the MMAs of one K tile are still running while the next is converted;
//   - A never becomes a bf16 tile: each thread loads its part of the e4m3 A tile with ldmatrix,
//     converts it in registers and hands it to the wgmma as the register operand (RS);
//   - the accumulators leave as fp32 (no rounding to bf16), in 64×32 chunks.
//
// One more trick makes the register operand cheap. The wgmma's A fragment wants, in each thread, the
// elements k = 2t, 2t+1 and 2t+8, 2t+9 of a 16-wide K slice (t = lane % 4); ldmatrix on e4m3 bytes
// delivers k = 4t .. 4t+3, and the cheapest conversion (mx.cuh) turns those four bytes into the pairs
// (4t, 4t+2) and (4t+1, 4t+3). A sum over k does not care in which order k is taken, as long as A and
// B take the same order. So the fragment's positions 2t, 2t+1 hold k = 4t, 4t+2 and 2t+8, 2t+9 hold
// 4t+1, 4t+3: A gets that order from ldmatrix and the conversion for free, and B's converter writes its
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
#error "STAGES (depth of the ring of e4m3 tiles) is set by step.rs"
#endif
#ifndef CONVERTED
#error "CONVERTED (depth of the ring of converted bf16 B tiles) is set by step.rs"
#endif
#ifndef CLUSTER_N
#error "CLUSTER_N (blocks per cluster along N, sharing each A tile) is set by step.rs"
#endif
#ifndef GROUP_M
#error "GROUP_M (tile-rows per group of the tile order) is set by step.rs"
#endif
#if !defined(PRODUCER_REGISTERS) || !defined(CONSUMER_REGISTERS)
#error "PRODUCER_REGISTERS and CONSUMER_REGISTERS (setmaxnreg targets) are set by step.rs"
#endif
#ifndef B_DESC
#error "B_DESC (wgmma descriptor template of the converted bf16 B tile, start address 0) is computed in step.rs"
#endif

enum : int {
    CONSUMERS = 2,                       // consumer warpgroups, 128 rows of the tile each
    THREADS = 128 * (1 + CONSUMERS),     // + the producer warpgroup
    WG_ROWS = BM / CONSUMERS,            // rows of C per consumer: two wgmma slabs of 64 rows
    SLABS = WG_ROWS / 64,
    ROW_BYTES = BK,                      // an e4m3 row of the K tile: 64 bytes, 64-byte swizzle
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    A_SLICE_ROWS = BM / CLUSTER_N,       // the rows of A each block of the cluster loads for everyone
    A_SLICE_BYTES = A_SLICE_ROWS * ROW_BYTES,
    SCALE_BLOCK_ROWS = 128,              // the blocked scale layout: 128 rows × 4 scales = 512 bytes
    SCALE_BLOCK_BYTES = 512,
    A_SCALE_BLOCKS = BM / SCALE_BLOCK_ROWS,
    B_SCALE_BLOCKS = BN / SCALE_BLOCK_ROWS,
    SCALE_BYTES = 2048,                  // the stage's scale blocks (A: 2, B: 1), padded to keep 1024-byte alignment
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES + SCALE_BYTES,
    CLUSTER_MASK = (1 << CLUSTER_N) - 1,
    BF16_ROW_BYTES = BK * 2,             // a converted bf16 row: 128 bytes, 128-byte swizzle
    B_BF16_BYTES = BN * BF16_ROW_BYTES,
    C_BOX_BYTES = 64 * 128,              // a TMA store box of C: 64 rows × 32 fp32 (epilogue.cuh)
    C_BUFFERS = 2,                       // staging buffers per consumer: one fills while one drains
    C_STAGING_BYTES = CONSUMERS * C_BUFFERS * C_BOX_BYTES,
    CONSUMER_WARPS = 4 * CONSUMERS,      // each releases a stage and marks its part converted for itself
};
static_assert(WG_ROWS == 128 && SLABS == 2, "each consumer computes two 64-row wgmma slabs");
static_assert(BN == 128, "one wgmma m64n128k16 covers the tile's columns; each consumer thread converts half a row of B");
static_assert(BK == 64 && BK / 32 == CONSUMERS, "a K tile is two 32-element scale blocks, one per consumer");
static_assert((A_SCALE_BLOCKS + B_SCALE_BLOCKS) * SCALE_BLOCK_BYTES <= SCALE_BYTES, "the scales fit their room");
static_assert(BM % SCALE_BLOCK_ROWS == 0 && BN % SCALE_BLOCK_ROWS == 0, "tiles cover whole blocks of scales");
static_assert(A_SLICE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0,
              "tiles keep 1024-byte alignment");
static_assert(STAGES >= 2 && CONVERTED >= 2, "rings need two slots to overlap");
// setmaxnreg moves registers within what the block got at launch: __launch_bounds__(THREADS, 1) gives
// each thread 65536 / THREADS, rounded down to a multiple of 8 (168 for 384 threads).
static_assert((PRODUCER_REGISTERS + CONSUMER_REGISTERS * CONSUMERS) * 128 <= (65536 / THREADS) / 8 * 8 * THREADS,
              "the registers the block got at launch");

// Step 10's tile order, over the cluster's 256 × 256 tiles.
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
// __launch_bounds__(384, 1) as in step 10. The scales are plain pointers: the producer copies 512-byte
// blocks of them with bulk copies, no tensor map.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              const unsigned char* __restrict__ scale_a,
                                                              const unsigned char* __restrict__ scale_b,
                                                              float* __restrict__ C, int M, int N, int K,
                                                              int use_tma_store) {
    // Dynamic shared memory: STAGES × (A tile, B tile, A scales, B scales), the ring of converted bf16
    // B tiles, the staging buffers of C, then the barriers.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES; };
    auto a_scales = [&](int stage) { return smem + stage * STAGE_BYTES + A_TILE_BYTES + B_TILE_BYTES; };
    auto b_scales = [&](int stage) { return a_scales(stage) + A_SCALE_BLOCKS * SCALE_BLOCK_BYTES; };
    unsigned char* b_bf16 = smem + STAGES * STAGE_BYTES;
    unsigned char* staging = b_bf16 + CONVERTED * B_BF16_BYTES;
    u64* full = reinterpret_cast<u64*>(staging + C_STAGING_BYTES);
    u64* empty = full + STAGES;
    u64* converted = empty + STAGES;     // a bf16 B tile is written (CONVERTED of them)
    u64* drained = converted + CONVERTED;  // ... and read by every MMA that reads it

    const int tid = threadIdx.x; TIMELINE_INIT();
    const int warpgroup = tid / 128;
    const u32 rank = cluster_ctarank();
    const int k_tiles = (K + BK - 1) / BK;
    const int cluster = blockIdx.x / CLUSTER_N;
    const int clusters = gridDim.x / CLUSTER_N;
    const TileOrder order{(M + BM - 1) / BM, (N + CLUSTER_N * BN - 1) / (CLUSTER_N * BN)};
    // This block's rows and columns of C in tile `index`: all of the cluster tile's rows, its own
    // columns.
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * BM;
        n0 = tile_n * CLUSTER_N * BN + rank * BN;
    };

    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (use_tma_store) tma_prefetch_map(&c_map);
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMER_WARPS * CLUSTER_N);
        }
        for (int s = 0; s < CONVERTED; ++s) {
            mbarrier_init(&converted[s], CONSUMER_WARPS);
            mbarrier_init(&drained[s], CONSUMER_WARPS);
        }
        mbarrier_init_fence();
    }
    cluster_sync();

    if (warpgroup == 0) {
        // ANCHOR: producer
        // Step 10's producer, with A the shared operand, plus the scales. The blocked layout stores the
        // scales of 128 rows × 128 elements of K as one 512-byte block; a K tile (64 elements) uses half
        // of one, so each stage gets the whole blocks (the copies are tiny) and the consumers pick their
        // half. Blocks of rows wholly past M or N do not exist in the scale arrays (they are padded to
        // 128 rows only): those are not copied, and `full` expects fewer bytes.
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        if (tid == 0) {
            const int scale_blocks_k = (K / 32 + 3) / 4;           // 512-byte blocks along K
            const int a_row_blocks = (M + SCALE_BLOCK_ROWS - 1) / SCALE_BLOCK_ROWS;
            const int b_row_blocks = (N + SCALE_BLOCK_ROWS - 1) / SCALE_BLOCK_ROWS;
            int it = 0;
            for (int index = cluster; index < order.count(); index += clusters) {
                int m0, n0;
                origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int stage = it % STAGES;
                    const u32 parity = (it / STAGES) & 1;
                    mbarrier_wait(&empty[stage], parity ^ 1);
                    const int kb = (t * BK) / 128;  // the 512-byte block column of this K tile
                    u32 bytes = A_TILE_BYTES + B_TILE_BYTES;
                    for (int i = 0; i < A_SCALE_BLOCKS; ++i) bytes += (m0 / 128 + i < a_row_blocks) ? 512 : 0;
                    for (int i = 0; i < B_SCALE_BLOCKS; ++i) bytes += (n0 / 128 + i < b_row_blocks) ? 512 : 0;
                    mbarrier_arrive_expect_bytes(&full[stage], bytes);
                    tma_load_2d_multicast(a_tile(stage) + rank * A_SLICE_BYTES, &a_map, &full[stage], t * BK,
                                          m0 + rank * A_SLICE_ROWS, CLUSTER_MASK);
                    tma_load_2d(b_tile(stage), &b_map, &full[stage], t * BK, n0);
                    for (int i = 0; i < A_SCALE_BLOCKS; ++i) {
                        const int row_block = m0 / 128 + i;
                        if (row_block < a_row_blocks) {
                            bulk_load(a_scales(stage) + i * 512,
                                      scale_a + ((i64)row_block * scale_blocks_k + kb) * 512, 512, &full[stage]);
                        }
                    }
                    for (int i = 0; i < B_SCALE_BLOCKS; ++i) {
                        const int row_block = n0 / 128 + i;
                        if (row_block < b_row_blocks) {
                            bulk_load(b_scales(stage) + i * 512,
                                      scale_b + ((i64)row_block * scale_blocks_k + kb) * 512, 512, &full[stage]);
                        }
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

        // A stage goes back once every consumer warp of both blocks has read it: each warp's loads of
        // it are its own, so each warp arrives for itself, once its lanes are done.
        auto release = [&](int stage) {
            __syncwarp();
            if (lane == 0) {
                for (u32 r = 0; r < CLUSTER_N; ++r) mbarrier_arrive_cluster(&empty[stage], r);
            }
        };
        // The same for the converted ring, within the block.
        auto arrive_warp = [&](u64* barrier) {
            __syncwarp();
            if (lane == 0) mbarrier_arrive(barrier);
        };

        // ANCHOR: scales
        // The scale bytes this thread's conversions of K tile t use: B's for its half row (block
        // `consumer` of the K tile), and A's for its rows g and g + 8 of each slab (below).
        const int b_row = ctid;  // the row of B this thread converts half of (0 .. 127)
        const int g = lane / 4;
        auto a_row = [&](int slab, int r) { return consumer * WG_ROWS + 64 * slab + 16 * warp + g + 8 * r; };
        struct Scales {
            u32 b;           // this thread's block of B
            u32 a[2][2][2];  // [slab][row g, g + 8][block]
        };
        auto read_scales = [&](int stage, int t) {
            Scales s;
            u32 b[2];
            tile_scales(*reinterpret_cast<const u32*>(b_scales(stage) + scale_offset(b_row)), t, b);
            s.b = consumer == 0 ? b[0] : b[1];  // a select: an array indexed at run time would go to local memory
            #pragma unroll
            for (int slab = 0; slab < SLABS; ++slab) {
                #pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const int row = a_row(slab, r);
                    const u32 word = *reinterpret_cast<const u32*>(a_scales(stage) + (row / 128) * 512 + scale_offset(row % 128));
                    tile_scales(word, t, s.a[slab][r]);
                }
            }
            return s;
        };
        // Whether any block this warp converts needs the two-multiplication path (mx.cuh): decided once
        // per warp and K tile, so that the warp never diverges; ordinary data never takes it.
        auto any_wide = [&](const Scales& s) {
            u32 largest = s.b;
            #pragma unroll
            for (int slab = 0; slab < SLABS; ++slab) {
                largest = max(largest, max(max(s.a[slab][0][0], s.a[slab][0][1]), max(s.a[slab][1][0], s.a[slab][1][1])));
            }
            return __any_sync(0xFFFFFFFFu, largest > NARROW_SCALE_MAX);
        };
        // ANCHOR_END: scales

        // ANCHOR: convert_b
        // Consumer thread `b_row` turns its half of row `b_row` of the stage's e4m3 B tile (the K tile's
        // block `consumer`: two 16-element slices) into bf16 with the scale folded in, into a
        // 128-byte-swizzled tile. Each 4-byte word of a slice becomes two bf16 pairs: its even bytes go
        // to the slice's first 8 positions, its odd bytes to the last 8 (the order of K that A's
        // fragments get, below).
        auto convert_b = [&](bool wide, int stage, int slot, const Scales& s) {
            const u32 factor = scale_bf16x2(s.b, wide);
            const u32 source = smem_address(b_tile(stage));
            const u32 destination = smem_address(b_bf16 + slot * B_BF16_BYTES) + b_row * BF16_ROW_BYTES;
            // Both slices are loaded before any store: a load that came after a store would wait for it
            // (they might overlap, as far as the hardware knows).
            u32 w[2][4];
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(w[h][0]), "=r"(w[h][1]), "=r"(w[h][2]), "=r"(w[h][3])
                             : "r"(source + swizzle_64b_offset(b_row, 2 * consumer + h)));
            }
            #pragma unroll
            for (int h = 0; h < 2; ++h) {  // one k16 slice of the MMA at a time
                u32 even[4], odd[4];
                #pragma unroll
                for (int i = 0; i < 4; ++i) e4m3x4_to_bf16x4(w[h][i], factor, wide, even[i], odd[i]);
                const int q = 2 * consumer + h;             // the slice within the K tile
                const int first = 2 * q, second = 2 * q + 1;  // its two 16-byte chunks of the bf16 row
                asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(destination + ((first ^ (b_row % 8)) * 16)),
                             "r"(even[0]), "r"(even[1]), "r"(even[2]), "r"(even[3])
                             : "memory");
                asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(destination + ((second ^ (b_row % 8)) * 16)),
                             "r"(odd[0]), "r"(odd[1]), "r"(odd[2]), "r"(odd[3])
                             : "memory");
            }
            // The MMAs read this tile through the async proxy.
            fence_async_shared();
        };
        // ANCHOR_END: convert_b

        // ANCHOR: convert_a
        // This thread's A fragments of both slabs for the four k16 slices of a K tile. ldmatrix gives,
        // for rows g and g + 8 of the warp's 16, the word of bytes 4t .. 4t+3 of each slice
        // (t = lane % 4). The fragment wants positions 2t, 2t+1 in a[0] (a[1] for row g + 8) and 2t+8,
        // 2t+9 in a[2] (a[3]): the word's even bytes go to the first, its odd bytes to the second, as
        // B's converter puts them. A sum over K does not care in which order K is taken, as long as A
        // and B take the same.
        auto convert_a = [&](bool wide, int stage, const Scales& s, u32 (&a)[SLABS][4][4]) {
            const u32 source = smem_address(a_tile(stage));
            // Lane l names row l % 8 of matrix l / 8: matrices (rows g, slice s), (rows g + 8, slice s),
            // (rows g, slice s + 1), (rows g + 8, slice s + 1).
            const int matrix = lane / 8;
            #pragma unroll
            for (int slab = 0; slab < SLABS; ++slab) {
                u32 factor[2][2];  // [row g, g + 8][block]
                #pragma unroll
                for (int r = 0; r < 2; ++r) {
                    #pragma unroll
                    for (int b = 0; b < 2; ++b) factor[r][b] = scale_bf16x2(s.a[slab][r][b], wide);
                }
                const int ld_row = consumer * WG_ROWS + 64 * slab + 16 * warp + 8 * (matrix % 2) + lane % 8;
                #pragma unroll
                for (int pair = 0; pair < 2; ++pair) {
                    u32 r[4];
                    ldmatrix_x4(source + swizzle_64b_offset(ld_row, 2 * pair + matrix / 2), r[0], r[1], r[2], r[3]);
                    #pragma unroll
                    for (int m = 0; m < 4; ++m) {
                        const int slice = 2 * pair + m / 2, row8 = m % 2;
                        e4m3x4_to_bf16x4(r[m], factor[row8][slice / 2], wide, a[slab][slice][row8], a[slab][slice][row8 + 2]);
                    }
                }
            }
        };
        // ANCHOR_END: convert_a

        const u64 b_desc0 = B_DESC | ((smem_address(b_bf16) & 0x3FFFF) >> 4);
        auto b_desc = [&](int slot, int slice) {
            return b_desc0 + ((slot * B_BF16_BYTES + slice * 32) >> 4);
        };

        float acc[SLABS][BN / 2];  // this consumer's 128 × 128 part of the tile: two slabs of 64 rows
        u32 a[2][SLABS][4][4];     // A fragments of two K tiles: one read by the MMAs while the next is converted

        int it = 0;  // K tiles consumed so far, across tiles: the producer's count, in step
        for (int index = cluster; index < order.count(); index += clusters) {
            int m0, n0;
            origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);

            // ANCHOR: consumer
            // K tile j (the running count; t within the tile): wait for its e4m3 stage and for the
            // converted slot it will fill to be drained (by K tile j − CONVERTED's MMAs, in both
            // warpgroups), convert this thread's half row of B into the slot and its A fragments into
            // registers, then give the stage back.
            auto convert = [&](int t, int j, u32 (&a_next)[SLABS][4][4]) {
                const int stage = j % STAGES, slot = j % CONVERTED;
                mbarrier_wait(&full[stage], (j / STAGES) & 1); TIMELINE_STAMP(TL_CONVERT_START);
                mbarrier_wait(&drained[slot], ((j / CONVERTED) & 1) ^ 1);
                const Scales scales = read_scales(stage, t);
                if (any_wide(scales)) {
                    convert_b(true, stage, slot, scales);
                    arrive_warp(&converted[slot]);
                    convert_a(true, stage, scales, a_next);
                } else {
                    convert_b(false, stage, slot, scales);
                    arrive_warp(&converted[slot]);
                    convert_a(false, stage, scales, a_next);
                }
                release(stage); TIMELINE_STAMP(TL_CONVERT_END);
            };
            convert(0, it, a[0]);
            // K tile t's MMAs read a_now and its converted B; once they are issued, the previous K tile's
            // MMAs are waited for (one group stays in flight), which frees a_next and that K tile's
            // converted slot, and K tile t + 1 is converted while K tile t's MMAs run. The loop is
            // unrolled by two so that which register set is which is known at compile time: registers
            // cannot be indexed at run time (the array would go to local memory).
            auto mma_tile = [&](int t, u32 (&a_now)[SLABS][4][4], u32 (&a_next)[SLABS][4][4]) {
                const int slot = it % CONVERTED;
                mbarrier_wait(&converted[slot], (it / CONVERTED) & 1); TIMELINE_STAMP(TL_STAGE_FULL);
                #pragma unroll
                for (int slab = 0; slab < SLABS; ++slab) wgmma_fence_operands(acc[slab]);
                wgmma_fence();
                #pragma unroll
                for (int s = 0; s < BK / 16; ++s) {
                    #pragma unroll
                    for (int slab = 0; slab < SLABS; ++slab) {
                        WgmmaRs<BN>::mma(acc[slab], a_now[slab][s], b_desc(slot, s), (t > 0 || s > 0) ? 1 : 0);
                    }
                }
                wgmma_commit(); TIMELINE_STAMP(TL_MMA_ISSUED);
                wgmma_wait<1>(); TIMELINE_STAMP(TL_MMA_DONE);
                #pragma unroll
                for (int slab = 0; slab < SLABS; ++slab) {
                    wgmma_fence_operands(acc[slab]);
                    #pragma unroll
                    for (int s = 0; s < BK / 16; ++s) wgmma_fence_operands(a_next[slab][s]);  // read until here
                }
                if (t > 0) arrive_warp(&drained[(it - 1) % CONVERTED]);
                if (t + 1 < k_tiles) convert(t + 1, it + 1, a_next);
                ++it;
            };
            for (int t = 0; t < k_tiles; t += 2) {
                mma_tile(t, a[0], a[1]);
                if (t + 1 < k_tiles) mma_tile(t + 1, a[1], a[0]);
            }
            wgmma_wait<0>(); TIMELINE_STAMP(TL_MMA_DONE);
            #pragma unroll
            for (int slab = 0; slab < SLABS; ++slab) wgmma_fence_operands(acc[slab]);
            arrive_warp(&drained[(it - 1) % CONVERTED]);
            // ANCHOR_END: consumer

            // ANCHOR: epilogue
            // Step 10's chunked epilogue, in fp32 (epilogue.cuh), slab by slab.
            TIMELINE_STAMP(TL_EPILOGUE_START);
            #pragma unroll
            for (int slab = 0; slab < SLABS; ++slab) {
                const int row0 = m0 + consumer * WG_ROWS + 64 * slab;
                store_c_f32<BN>(acc[slab], WgmmaFragment(ctid), ctid, 1 + consumer,
                                staging + consumer * C_BUFFERS * C_BOX_BYTES, &c_map, use_tma_store, C, M, N, row0, n0);
            } TIMELINE_STAMP(TL_EPILOGUE_END);
            // ANCHOR_END: epilogue
        }
        if (use_tma_store && ctid == 0) tma_store_wait_read<0>();
    }
    cluster_sync();
}
// ANCHOR_END: kernel
