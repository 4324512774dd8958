// Alternative to step 11's sm90.cu: no pre-pass; the producer warpgroup's three idle warps convert B into the bf16 copy while the GEMM runs, unit by unit.
// What the recorded loop says: recorded at a4451ea: 0.854× the step at 4096³, 0.799× at 8192³ (slower).
//
// Step 11 · mxfp8 (Hopper, sm_90a), the alternative "overlapped": the step's kernel (sm90.cu) with B's
// conversion moved from the pre-pass into the GEMM.
//
// The step's kernel converts all of B into a bf16 copy with a pre-pass, a memory-bound kernel of its
// own, before the GEMM starts; the GEMM loads that copy with the TMA as step 10 loads B. Here there is
// no pre-pass: the producer warpgroup has one thread issuing loads and three warps with nothing to do,
// and those warps convert B into the same copy while the GEMM runs.
//   - B's conversion is cut into units of 32 rows × one K tile, dealt round-robin to the converting
//     warps of every block in the order the GEMM needs them: the panels of B that the first turn of
//     tiles uses first, K tile by K tile, then those of the next turn. A warp raises a flag in global
//     memory for each unit it finishes, to the launch's epoch.
//   - A converting warp keeps four units' loads in flight: its lane 0 loads each unit's e4m3 bytes (a
//     TMA box) and scales (a bulk copy) into a slot of shared memory, and the warp converts from there.
//   - The TMA thread checks the flags of its slice of B (four units) before it loads a K tile of the
//     converted B, several K tiles at once; a flag is never cleared, a launch raises it to a newer epoch.
//   - Every block of the grid must be running for this to finish, so the grid is a cooperative launch.
// Everything else (A converted into the wgmma's registers by the consumers, the ring, the epilogue) is
// sm90.cu's; its header explains the A fragments' order of K, which B's copy takes too. On the H200 this
// design is slower than the pre-pass it hides; the chapter has the measurements.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "wgmma.cuh"
#include "cluster.cuh"
#include "warpgroup.cuh"
#include "mx.cuh"
#include "epilogue.cuh"
#include "flag.cuh"

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
#ifndef UNIT_SLOTS
#error "UNIT_SLOTS (units of B's conversion in flight per converting warp) is set by step.rs"
#endif
#ifndef B_DESC
#error "B_DESC (wgmma descriptor template of the bf16 B tile, start address 0) is computed in step.rs"
#endif

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
    UNIT_ROWS = 32,                      // rows of B in a unit of conversion, one K tile deep
    UNITS_PER_PANEL = BN / UNIT_ROWS,    // a panel: the 256 rows of B one tile of C uses
    UNITS_PER_SLICE = B_SLICE_ROWS / UNIT_ROWS,  // the units behind one TMA load of B
    HALVES_PER_ROW = BK / 8,             // a unit row's K tile in half-slices of 8 elements (a lane's item)
    CONVERTING_WARPS = 3,                // the producer warpgroup's warps 1..3
    UNIT_BYTES = UNIT_ROWS * BK,         // a unit's e4m3 bytes: a TMA box of 32 rows × 64 bytes
    UNIT_SLOT_BYTES = UNIT_BYTES + SCALE_BLOCK_BYTES,  // + the 512-byte scale block its rows lie in
    CONVERTER_BYTES = CONVERTING_WARPS * UNIT_SLOTS * UNIT_SLOT_BYTES,
    FLAG_LOOKAHEAD = 4,                  // K tiles whose flags the TMA thread reads at once
};
static_assert(UNITS_PER_SLICE == 4, "the TMA thread reads its slice's four flags of a K tile as one vector");
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


// ANCHOR: convert_b
// A warp converts unit (K tile t, rows 32u .. 32u + 31) of B from its slot in shared memory (the e4m3
// rows, 64 bytes each, then the 512-byte scale block of rows 128 (u / 4) .. + 127) into the bf16 copy.
// Lane l converts half-slice l % 8 of the K tile in rows l / 8 + 4i, i = 0..7: a warp's store covers
// 4 rows × 128 contiguous bytes. Rows past N and K past the end are not stored (the TMA zero-filled
// them, and the GEMM's box clips them).
__device__ __forceinline__ void convert_b_unit(const unsigned char* slot, bf16* __restrict__ out, int N, int K, int t,
                                               int u, int lane) {
    constexpr int ROWS = 32 / HALVES_PER_ROW;  // 4 rows a pass of the warp
    const int half = lane % HALVES_PER_ROW;   // in the K tile, in 8-element halves
    const bool k_inside = (t * HALVES_PER_ROW + half) * 8 < K;
    // The blocked scale layout (mx.cuh): a unit is a quarter of a 128-row tile; row r's scale for block b
    // is byte (r % 32)·16 + (r / 32)·4 + b % 4 of the tile; this K tile's blocks are 2 (t % 2) and one more.
    const unsigned char* scales = slot + UNIT_BYTES + (u % 4) * 4 + 2 * (t % 2) + half / 4;
    bf16* to = out + static_cast<i64>(u * UNIT_ROWS + lane / HALVES_PER_ROW) * K + t * BK + half * 8;
    #pragma unroll
    for (int pass = 0; pass < UNIT_ROWS / ROWS; ++pass) {
        const int row = lane / HALVES_PER_ROW + ROWS * pass;
        const uint4 bytes = *reinterpret_cast<const uint4*>(slot + row * BK + (half / 2) * 16);
        const u32 s = scales[row * 16];
        if (k_inside && u * UNIT_ROWS + row < N) {
            *reinterpret_cast<uint4*>(to + static_cast<i64>(ROWS * pass) * K) = e4m3x16_half_to_bf16x8(bytes, s, half % 2);
        }
    }
}
// ANCHOR_END: convert_b

// ANCHOR: kernel
// __launch_bounds__(384, 1) as in step 10. `b_converted` is the bf16 copy of B, behind b_map, written
// by the converting warps from B's e4m3 bytes (b_e4m3_map: boxes of 32 rows × 64 bytes) and `scale_b`;
// `flags` holds one flag per unit, K tile by K tile. A's scales are a plain pointer: the producer copies 512-byte blocks of
// them with bulk copies, no tensor map.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              const __grid_constant__ TensorMap b_e4m3_map,
                                                              const unsigned char* __restrict__ scale_a,
                                                              const unsigned char* __restrict__ scale_b,
                                                              float* __restrict__ C,
                                                              bf16* __restrict__ b_converted, u32* __restrict__ flags,
                                                              int M, int N, int K, int use_tma_store, u32 epoch) {
    // Dynamic shared memory: STAGES × (B tile, A tile), STAGES × A's scales, the staging buffers of C,
    // then the barriers. (B's scales are folded into the bf16 B: only the converting warps read them.)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    auto b_tile = [&](int stage) { return smem + stage * STAGE_BYTES; };
    auto a_tile = [&](int stage) { return smem + stage * STAGE_BYTES + B_TILE_BYTES; };
    auto a_scales = [&](int stage) { return smem + STAGES * STAGE_BYTES + stage * SCALE_BLOCK_BYTES; };
    unsigned char* staging = smem + STAGES * (STAGE_BYTES + SCALE_BLOCK_BYTES);
    unsigned char* unit_slots = staging + C_STAGING_BYTES;
    u64* full = reinterpret_cast<u64*>(unit_slots + CONVERTER_BYTES);
    u64* empty = full + STAGES;
    u64* unit_loaded = empty + STAGES;  // one per slot of each converting warp

    const int tid = threadIdx.x; TIMELINE_INIT();
    const int warpgroup = tid / 128;
    const u32 rank = cluster_ctarank();
    const int k_tiles = (K + BK - 1) / BK;
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
        tma_prefetch_map(&b_e4m3_map);
        for (int s = 0; s < CONVERTING_WARPS * UNIT_SLOTS; ++s) mbarrier_init(&unit_loaded[s], 1);
        mbarrier_init_fence();
    }
    cluster_sync();

    // The units of B's conversion: 8 per panel of 256 rows (the flags of a ragged last panel too).
    const int units = UNITS_PER_PANEL * order.tiles_n;
    auto flag = [&](int t, int u) { return flags + static_cast<i64>(t) * units + u; };

    // ANCHOR: wait_converted
    // How many K tiles from t on the converting warps have finished for the four units of this block's
    // slice of B (at least one: it waits for K tile t). The four flags of a K tile are one 16-byte word;
    // the words of FLAG_LOOKAHEAD K tiles are read at once, relaxed, so that one round trip to L2 covers
    // several K tiles when the conversion is ahead, as it is after the first few. Only a K tile not yet
    // converted waits, with flag.cuh's acquire loop. Then the acquire fence orders the TMA loads after
    // the flags (and the proxy fence, the converters' generic stores before the TMA's async reads).
    auto wait_converted = [&](int t, int slice_unit) {
        u32 word[FLAG_LOOKAHEAD][UNITS_PER_SLICE];
        #pragma unroll
        for (int i = 0; i < FLAG_LOOKAHEAD; ++i) {
            const int tile = min(t + i, k_tiles - 1);
            asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(word[i][0]), "=r"(word[i][1]), "=r"(word[i][2]), "=r"(word[i][3])
                         : "l"(flag(tile, slice_unit))
                         : "memory");
        }
        int ready = 0;
        bool gap = false;
        #pragma unroll
        for (int i = 0; i < FLAG_LOOKAHEAD; ++i) {
            gap = gap || t + i >= k_tiles || word[i][0] != epoch || word[i][1] != epoch || word[i][2] != epoch ||
                  word[i][3] != epoch;
            ready += gap ? 0 : 1;
        }
        if (ready == 0) {
            for (int unit = 0; unit < UNITS_PER_SLICE; ++unit) flag_wait_acquire(flag(t, slice_unit + unit), epoch, -1);
            ready = 1;
        }
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        asm volatile("fence.proxy.async.global;" ::: "memory");
        return ready;
    };
    // ANCHOR_END: wait_converted

    if (warpgroup == 0) {
        // ANCHOR: producer
        // Step 10's producer, plus A's scales. The blocked layout stores the scales of 128 rows × 128
        // elements of K as one 512-byte block; a K tile (64 elements) uses half of one, so each stage
        // gets the whole block (the copy is tiny) and the consumers pick their half. A block of rows
        // wholly past M does not exist in the scale array (it is padded to 128 rows only): it is not
        // copied, and `full` expects fewer bytes.
        setmaxnreg_dec<PRODUCER_REGISTERS>();
        if (tid == 0) {
            const int scale_blocks_k = (K / 32 + 3) / 4;  // 512-byte blocks along K
            const int a_row_blocks = (M + SCALE_BLOCK_ROWS - 1) / SCALE_BLOCK_ROWS;
            int it = 0;
            for (int index = blockIdx.x / CLUSTER_M; index < order.count(); index += clusters) {
                int m0, n0;
                origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);
                const bool scales_exist = m0 / 128 < a_row_blocks;
                const int slice_unit = (n0 + rank * B_SLICE_ROWS) / UNIT_ROWS;  // the first of this block's 4
                int converted = 0;  // K tiles of this slice known to be converted
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int stage = it % STAGES;
                    const u32 parity = (it / STAGES) & 1;
                    if (t >= converted) converted = t + wait_converted(t, slice_unit);
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
        else if (tid >= 32) {
            // ANCHOR: converters
            // Warps 1..3: B's conversion. Batch by batch (the panels the tiles of one turn of the grid
            // reach first: panel p is first used by tile p · rows of the order, in turn p · rows /
            // clusters), K tile by K tile, panel by panel, unit by unit; unit i of that sequence goes
            // to converting warp i % (all of them). This warp's j-th unit is unit converter + j ·
            // converters of the sequence; `locate` finds its K tile and rows (a few batches to walk).
            const int warp = tid / 32 - 1, lane = tid % 32;
            const int converter = blockIdx.x * CONVERTING_WARPS + warp;
            const int converters = gridDim.x * CONVERTING_WARPS;
            const int rows = min(GROUP_M, order.tiles_m);
            auto locate = [&](int j, int& t, int& u) {
                int i = converter + j * converters;
                for (int p0 = 0; p0 < order.tiles_n;) {
                    const int turn = p0 * rows / clusters;
                    int p1 = p0 + 1;
                    while (p1 < order.tiles_n && p1 * rows / clusters == turn) ++p1;
                    const int batch_units = (p1 - p0) * UNITS_PER_PANEL;
                    if (i < batch_units * k_tiles) {
                        t = i / batch_units;
                        u = p0 * UNITS_PER_PANEL + i % batch_units;
                        return true;
                    }
                    i -= batch_units * k_tiles;
                    p0 = p1;
                }
                return false;
            };
            unsigned char* slots = unit_slots + warp * UNIT_SLOTS * UNIT_SLOT_BYTES;
            u64* loaded = unit_loaded + warp * UNIT_SLOTS;
            const int scale_blocks_k = (K / 32 + 3) / 4;  // 512-byte blocks along K
            // Lane 0 loads unit j into its slot: the e4m3 box and the scale block. A unit wholly past N
            // has no scales in the array (padded to 128 rows only) and nothing to convert: its slot's
            // barrier is only arrived at.
            auto load = [&](int j) {
                int t, u;
                if (lane != 0 || !locate(j, t, u)) return;
                unsigned char* slot = slots + (j % UNIT_SLOTS) * UNIT_SLOT_BYTES;
                u64* barrier = &loaded[j % UNIT_SLOTS];
                if (u * UNIT_ROWS < N) {
                    mbarrier_arrive_expect_bytes(barrier, UNIT_SLOT_BYTES);
                    tma_load_2d(slot, &b_e4m3_map, barrier, t * BK, u * UNIT_ROWS);
                    bulk_load(slot + UNIT_BYTES, scale_b + (static_cast<i64>(u / 4) * scale_blocks_k + t / 2) * 512, 512,
                              barrier);
                } else {
                    mbarrier_arrive(barrier);
                }
            };
            for (int j = 0; j < UNIT_SLOTS; ++j) load(j);
            int t, u;
            for (int j = 0; locate(j, t, u); ++j) {
                mbarrier_wait(&loaded[j % UNIT_SLOTS], (j / UNIT_SLOTS) & 1);
                if (u * UNIT_ROWS < N) convert_b_unit(slots + (j % UNIT_SLOTS) * UNIT_SLOT_BYTES, b_converted, N, K, t, u, lane);
                // The unit's bytes are read by other blocks' TMA loads (the async proxy): each lane
                // orders its stores before the proxy fence, the warp meets (its reads of the slot are
                // done too), and one lane raises the flag with release semantics at GPU scope, then
                // refills the slot.
                asm volatile("fence.proxy.async.global;" ::: "memory");
                __syncwarp();
                if (lane == 0) flag_release(flag(t, u), epoch);
                load(j + UNIT_SLOTS);
            }
            // ANCHOR_END: converters
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
        for (int index = blockIdx.x / CLUSTER_M; index < order.count(); index += clusters) {
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
