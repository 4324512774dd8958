// Step 11 · mxfp8, Blackwell (sm_100a): step 10's persistent 2-SM kernel on MXFP8 operands, with the
// block-scaled MMA `tcgen05.mma.cta_group::2.kind::mxf8f6f4.block_scale.block32` (the design of
// "MXFP8 GEMM: Up to 99% of cuBLAS", the MXFP8 text of the References).
//
// Assembled for sm_100a by the tests, but not run by this project: we have no Blackwell GPU.
//
// The problem changes: A (M×K) and B (N×K) are fp8 e4m3, with one e8m0 scale byte per row and 32
// elements of K (2^(byte − 127)), and C is fp32. The tensor cores apply the scales themselves, inside
// the MMA: each MMA of K = 32 is exactly one scale block, and reads one scale per row of A and per row
// of B. What that changes in step 10's kernel:
//   - the tiles: a K slice is still 128 bytes a row (one 128-byte swizzled row), now 128 e4m3, four
//     scale blocks; an MMA consumes 32 of them (K = 32) instead of 16 bf16;
//   - the scales' path: global -> shared -> TMEM. The MMA reads scales from Tensor Memory only. The
//     scale bytes come in shared/check/mx.rs's blocked layout, in which the 4 scale blocks of 128 rows for one
//     128-element slice of K are one contiguous 512-byte tile; the producer brings each block's tiles
//     (its 128 rows of A; all 256 rows of the pair's B, which both SMs need) into the ring slot with a
//     plain bulk copy, and the MMA thread copies them to TMEM with `tcgen05.cp … 32x128b.warpx4` just
//     before the slice's MMAs, into one of two scale sets that alternate slice by slice (the copy
//     must not overwrite scales that MMAs still read: the `scale_sets` region);
//   - the peer's scale bytes: A and B tiles are tensor copies that can count their bytes on the
//     leader's barrier (`.cta_group::2`); a plain bulk copy cannot, so the peer counts its scale bytes
//     on a barrier of its own, and the peer's otherwise idle MMA warp relays its completion to the
//     leader (the `relay` region);
//   - TMEM: two 256-column accumulators already fill all 512 columns. The scales need 12 more
//     (4 for A, 8 for B) per set, 24 for two sets. As the MXFP8 text does, the two accumulators overlap:
//     accumulator 1 starts 32 columns before accumulator 0 ends, and the freed 32 columns hold the
//     scale sets. The epilogue reads the shared 32 columns first and says so on one more barrier,
//     `overlap_empty`, which the MMA warp waits on before the next tile's first MMA;
//   - the instruction: `…kind::mxf8f6f4.block_scale.block32`, with two more operands (the scales'
//     TMEM addresses) and a different instruction descriptor (shared/encoding/mod.rs `sm100_mx`), whose
//     scale-factor ids pick the K-block of the copied tile each MMA uses;
//   - C is fp32: the epilogue stores the accumulators as they are, through 128-byte swizzled boxes.
//
// Shared memory: 5 slots of (16 KiB A + 16 KiB half B) and 1.5 KiB of scales, two 16 KiB fp32 staging
// buffers, 1 KiB to align: 200.5 KiB, one block per SM (step 10 had 6 slots; fp32 staging is twice
// bf16's).
//
// Everything else (persistent grid of pairs, grouped tile order, ring, two accumulators handed over by
// acc_full / acc_empty at cluster scope, the producer's tail, double-buffered TMA-store epilogue) is
// step 10's.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "tcgen05.cuh"
#include "cluster.cuh"
#include "mbarrier_sm100.cuh"

// Set by step.rs (the Rust side owns every encoding; see shared/encoding/mod.rs).
#ifndef BM
#error "BM (rows of C per block: half the M of the 2-SM MMA) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block, the N of the MMA, TMEM columns of one accumulator) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K slice loaded per step, in e4m3 elements) is set by step.rs"
#endif
#ifndef THREADS
#error "THREADS (threads per block) is set by step.rs"
#endif
#ifndef A_DESC
#error "A_DESC (shared-memory descriptor of the A tile, start address 0) is set by step.rs"
#endif
#ifndef B_DESC
#error "B_DESC (shared-memory descriptor of the B tile, start address 0) is set by step.rs"
#endif
#ifndef SF_DESC
#error "SF_DESC (shared-memory descriptor of one 512-byte scale tile, the tcgen05.cp source) is set by step.rs"
#endif
#ifndef IDESC
#error "IDESC (block-scaled instruction descriptor: e4m3 x e4m3, ue8m0 scales, K-major, 2*BM x BN, ids 0) is set by step.rs"
#endif
#ifndef IDESC_SF_ID_STEP
#error "IDESC_SF_ID_STEP (what one more scale-factor id, for A and B, adds to IDESC) is set by step.rs"
#endif
#ifndef CLUSTER_M
#error "CLUSTER_M (blocks per cluster along M: the pair) is set by step.rs"
#endif
#ifndef STAGES
#error "STAGES (slots in the ring of K slices) is set by step.rs"
#endif
#ifndef GROUP_M
#error "GROUP_M (tile rows per group of the tile order) is set by step.rs"
#endif
#ifndef ACCUMULATORS
#error "ACCUMULATORS (TMEM accumulators of BN columns each, filled and drained in turn) is set by step.rs"
#endif

enum : int {
    MMA_K = 32,                          // K of one tcgen05.mma.kind::mxf8f6f4: 32 e4m3 = 32 bytes = one scale block
    A_TILE_BYTES = BM * BK,              // this block's BM×BK e4m3 tile of A
    B_HALF_ROWS = BN / 2,                // rows of B each block of the pair holds
    B_TILE_BYTES = B_HALF_ROWS * BK,     // this block's half of the BN×BK tile of B
    TILE_BYTES = A_TILE_BYTES + B_TILE_BYTES,  // one slot of the ring: one block's K slice
    PAIR_TILE_BYTES = 2 * TILE_BYTES,    // ... and the pair's: what the leader's full[slot] expects
    CHUNK_COLS = 32,                     // columns of C per chunk: one tcgen05.ld .32x32b.x32
    CHUNKS = BN / CHUNK_COLS,            // chunks of one accumulator
    WARP_BOX_BYTES = 32 * CHUNK_COLS * 4,  // one warp's 32 rows of a chunk: one TMA store box, 4 KiB
    BUFFER_BYTES = BM * CHUNK_COLS * 4,  // one staging buffer: the four epilogue warps' boxes, 16 KiB
};
// ANCHOR: scale_budget
// The scales of one slot, in the blocked layout (shared/check/mx.rs): one 512-byte tile covers 128 rows and
// 4 scale blocks of 32 along K, i.e. 128 rows of one 128-element slice. A block needs its own 128 rows
// of A (one tile) and all BN = 256 rows of B (two tiles: the 2-SM MMA reads the scales of the whole N
// from each SM's TMEM, though each SM holds only half of B).
enum : int {
    SF_TILE_BYTES = 512,                   // 32 rows × 16 bytes
    SF_TILE_COLS = 4,                      // ... in TMEM: 4 columns of 4 bytes, repeated in the 4 lane quarters
    SFB_TILES = BN / 128,                  // scale tiles of B per slice
    SCALE_SLOT_BYTES = (1 + SFB_TILES) * SF_TILE_BYTES,  // one block's scales of one slot: 1.5 KiB
    // TMEM: accumulator 0 in columns 0..BN-1, accumulator 1 starting OVERLAP_COLS before that ends,
    // the scales in the OVERLAP_COLS columns this frees at the top: two sets, used by alternate slices.
    OVERLAP_COLS = CHUNK_COLS,             // the shared columns: one epilogue chunk
    ACC1_COL = BN - OVERLAP_COLS,          // accumulator 1: columns 224..479
    SF_SETS = 2,                           // scale sets in TMEM, one per slice in turn
    SF_SET_COLS = (1 + SFB_TILES) * SF_TILE_COLS,  // one set: A's 4 columns, then B's 8
    SFA_COL = 2 * BN - OVERLAP_COLS,       // set 0: scale A 480..483, scale B 484..491;
    SFB_COL = SFA_COL + SF_TILE_COLS,      // set 1: the same, 12 columns on (492..495, 496..503)
};
static_assert(SFA_COL + SF_SETS * SF_SET_COLS <= 2 * BN, "both scale sets fit in the columns the overlap frees");
// ANCHOR_END: scale_budget
// One pair, one MMA shape: M = 256 puts row i of each block's half in lane i of that block's TMEM
// (all 128 lanes), and four epilogue warps are exactly what it takes to read 128 lanes back.
static_assert(CLUSTER_M == 2, "a 2-SM MMA is issued for a pair of blocks: clusters of two along M");
static_assert(BM == 128, "each block holds 128 rows of the M = 256 MMA: all 128 TMEM lanes, one scale tile");
static_assert(THREADS == 6 * 32, "a producer warp, an MMA warp and four epilogue warps");
static_assert(STAGES >= 2, "a ring needs at least two slots to overlap copies and MMAs");
static_assert(STAGES >= SF_SETS, "a scale set is reused two slices on: its last slot is then in this round or the last");
static_assert(BN % 128 == 0 && BN <= 256, "a 2-SM MMA has N <= 256; B's scales come in tiles of 128 rows");
static_assert(ACCUMULATORS == 2 && 2 * BN == 512, "two accumulators of BN columns, overlapped, in TMEM's 512");
static_assert(BK % MMA_K == 0 && BK / MMA_K == 4, "a K slice is four MMAs: the four scale-factor ids of a tile");

// ANCHOR: swizzle
// Byte offset, inside a tile, of the k-th MMA_K-wide slice of K. A slice is 32 bytes of every 128-byte
// row; the descriptor points at where it starts in row 0 and the hardware swizzles the rest.
static_assert(BK == 128, "one 128-byte swizzled row per row of the tile: BK = 128 e4m3, one scale tile of K");
static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "every tile starts 1024-byte aligned");
static_assert(BN % CHUNK_COLS == 0, "the C tile is a whole number of 32-column chunks");
__device__ __forceinline__ u32 k_slice_offset(int k) {
    return static_cast<u32>(k * MMA_K);
}
// ANCHOR_END: swizzle

// Writes 32 consecutive elements of one row of C (row `row`, columns col .. col+31, the fp32 bits in
// `acc`) and nothing that lies outside C. Used only when N % 4 != 0 (no TMA store: C's rows are not
// 16-byte aligned), so element by element.
__device__ __forceinline__ void store_row_piece(float* C, int M, int N, int row, int col, const u32 (&acc)[32]) {
    if (row >= M) return;
    float* dst = C + (i64)row * N + col;
    #pragma unroll
    for (int e = 0; e < 32; ++e) {
        if (col + e < N) dst[e] = __uint_as_float(acc[e]);
    }
}

// ANCHOR: schedule
// The tile a pair computes on its i-th turn: tile = pair + i · pairs, numbered in the grouped order
// (the Hopper twin's). A tile here is a pair's 256×256 (CLUSTER_M · BM rows × BN columns) part of C.
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
// The grid is one row of pairs (clusters of CLUSTER_M = 2 blocks along x, step.rs `CLUSTER`), as many
// as fit on the GPU at once, or one per tile when there are fewer tiles. In each tile the leader (even
// rank) holds the first 128 rows and the peer the next 128; when M ends inside the leader's half, the
// peer loads zeros and stores nothing. The tensor maps (shared/encoding/tma.rs) cover A (M×K e4m3, boxes of BM
// rows × 128 bytes) and B (N×K, boxes of BN/2 rows); boxes that hang over an edge arrive zero-filled, so
// a ragged tile or a K that is not a multiple of BK only adds zeros to the accumulators (whatever the
// scale: a padded scale byte is 0, 2^-127, never NaN). `scale_a` / `scale_b` are the blocked layouts.
// `c_map` (32 rows × 32 fp32 boxes of C, 128-byte swizzle) is used only when tma_store != 0; the host
// sets tma_store = (N % 4 == 0) and otherwise passes a map that is never read.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              const u8* __restrict__ scale_a,
                                                              const u8* __restrict__ scale_b,
                                                              float* __restrict__ C, int M, int N, int K,
                                                              int tma_store) {
    // Dynamic shared memory: STAGES slots of (A tile, half B tile), then the two staging buffers for C
    // (each BM × 32 fp32: a 4 KiB box per epilogue warp), then STAGES slots of scales. The host asks for
    // 1 KiB more than all that needs, so everything can start on a 1024-byte boundary (where the
    // 128-byte swizzle repeats).
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    unsigned char* c_staging = smem + STAGES * TILE_BYTES;
    unsigned char* scales = c_staging + 2 * BUFFER_BYTES;  // slot s: A's tile, then B's tiles

    // ANCHOR: ring
    // The ring's barriers, the end-of-mainloop barrier and the TMEM address word. Both blocks have all
    // of them at the same offsets; the peer's full[] are never used, nor the leader's sf_full[].
    __shared__ u64 full[STAGES];     // leader's: slot's bytes (both blocks') have landed
    __shared__ u64 empty[STAGES];    // both blocks': the MMAs that read the slot have completed
    __shared__ u64 sf_full[STAGES];  // peer's: the peer's scale bytes of the slot have landed
    __shared__ u32 tmem_slot;
    // ANCHOR_END: ring
    // ANCHOR: accumulator_barriers
    // The accumulators' barriers, a ring of ACCUMULATORS slots between the MMA warp and the epilogue.
    __shared__ u64 acc_full[ACCUMULATORS];   // both blocks': every MMA of the tile in accumulator a has completed
    __shared__ u64 acc_empty[ACCUMULATORS];  // leader's: both blocks' epilogue threads have read accumulator a
    __shared__ u64 overlap_empty;            // leader's: ... have read the 32 columns the accumulators share
    // ANCHOR_END: accumulator_barriers

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int k_slices = (K + BK - 1) / BK;  // K >= 32, so at least one; also the blocked layout's tile columns

    // ANCHOR: pair
    // The pair, as in step 07: in every tile the leader (even rank) holds rows m0 .. m0+127 of the
    // pair's 256 and B rows n0 .. n0+BN/2-1; the peer the next 128 rows of A and the other half of B.
    const u32 rank = cluster_ctarank();
    const bool leader = rank == pair_leader_rank(rank);
    const u16 pair_mask = static_cast<u16>(0b11u << pair_leader_rank(rank));
    // ANCHOR_END: pair

    // ANCHOR: tiles
    // This pair's place in the row of pairs, and the tiles of C in the grouped order.
    const int pair = blockIdx.x / CLUSTER_M;
    const int pairs = gridDim.x / CLUSTER_M;
    const TileOrder order{(M + CLUSTER_M * BM - 1) / (CLUSTER_M * BM), (N + BN - 1) / BN};
    // This block's first row and the tile's first column of C in tile `index`.
    auto origin = [&](int index, int& m0, int& n0) {
        int tile_m, tile_n;
        order.locate(index, tile_m, tile_n);
        m0 = tile_m * CLUSTER_M * BM + static_cast<int>(rank % 2) * BM;
        n0 = tile_n * BN;
    };
    // ANCHOR_END: tiles

    // ANCHOR: tmem_alloc
    // Set-up, by two different warps at once.
    //  - Warp 1 of each block (the MMA warp, all 32 threads) allocates all 512 TMEM columns (two
    //    overlapping accumulators and the scales) for the pair; the same warp of both blocks, together;
    //    both get the same address. It frees them at the end.
    //  - One thread of warp 0 initialises the barriers and makes them visible to the copy engine and
    //    the tensor cores, of this SM and the peer's.
    if (warp == 1) {
        tmem_alloc_2sm<2 * BN>(&tmem_slot);
        tmem_relinquish_alloc_permit_2sm();
    } else if (warp == 0 && lane == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 2);  // the leader's producer (with the bytes) and the peer's relay
            mbarrier_init(&empty[s], 1);
            mbarrier_init(&sf_full[s], 1);  // the peer's producer, with its scale bytes
        }
        for (int a = 0; a < ACCUMULATORS; ++a) {
            mbarrier_init(&acc_full[a], 1);                  // the MMA warp's commit
            mbarrier_init(&acc_empty[a], CLUSTER_M * 4 * 32);  // every epilogue thread of the pair
        }
        mbarrier_init(&overlap_empty, CLUSTER_M * 4 * 32);
        mbarrier_init_fence();
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (tma_store) tma_prefetch_map(&c_map);
    }
    // The cluster barrier: after it both blocks' barriers are initialised (the peer may signal the
    // leader's) and the TMEM address is in tmem_slot (the fences order the allocation before it).
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;  // lane 0, first allocated column
    // ANCHOR_END: tmem_alloc

    if (warp == 0) {
        // ANCHOR: producer
        // The producer: one thread of warp 0, in both blocks. It runs ahead of the MMAs by as many
        // slices as the ring has slots, and waits only when the slot it wants is still being read.
        // Slot and phase run on across tiles: the next tile's first slices load into the slots the
        // last tile's MMAs free, while the epilogue is still busy with that tile.
        if (lane == 0) {
            const u32 leader_full = cluster_map_shared(&full[0], pair_leader_rank(rank));
            // Row tiles of the blocked scale layouts (128 rows each; the buffers are padded to whole tiles).
            const int sfa_row_tiles = (M + 127) / 128;
            const int sfb_row_tiles = (N + 127) / 128;
            int slot = 0;
            u32 phase = 0;  // parity of the current round of the ring
            for (int index = pair; index < order.count(); index += pairs) {
                int m0, n0;
                origin(index, m0, n0);
                const int b_row = n0 + static_cast<int>(rank % 2) * B_HALF_ROWS;
                for (int slice = 0; slice < k_slices; ++slice) {
                    // Round 0: parity 1, the phase before the first: passes at once.
                    mbarrier_wait_cta(&empty[slot], phase ^ 1, "empty");
                    unsigned char* a_tile = smem + slot * TILE_BYTES;
                    unsigned char* b_tile = a_tile + A_TILE_BYTES;
                    const u32 pair_full = leader_full + slot * static_cast<u32>(sizeof(u64));
                    // ANCHOR: scale_loads
                    // This block's scales of the slice: its 128 rows of A, and B's rows n0 .. n0+255,
                    // each a 512-byte tile of the blocked layout at (row tile · k_slices + slice) · 512.
                    // A row tile past the end of A or B (the peer's half below M, the second half of
                    // a ragged N) would read past the buffer: load the last one instead, whose values
                    // only reach rows and columns of C that are never stored.
                    unsigned char* sf_slot = scales + slot * SCALE_SLOT_BYTES;
                    const int sfa_tile = min(m0 / 128, sfa_row_tiles - 1);
                    // The leader's scale bytes count on its full[slot] with the pair's tiles; the
                    // peer's on its own sf_full[slot] (a bulk copy signals a barrier of the block it
                    // writes), which its MMA warp relays to the leader.
                    u64* sf_barrier = leader ? &full[slot] : &sf_full[slot];
                    if (leader) {
                        mbarrier_arrive_expect_bytes(&full[slot], PAIR_TILE_BYTES + SCALE_SLOT_BYTES);
                    } else {
                        mbarrier_arrive_expect_bytes(&sf_full[slot], SCALE_SLOT_BYTES);
                    }
                    bulk_load(sf_slot, scale_a + ((i64)sfa_tile * k_slices + slice) * SF_TILE_BYTES, SF_TILE_BYTES,
                              sf_barrier);
                    #pragma unroll
                    for (int t = 0; t < SFB_TILES; ++t) {
                        const int sfb_tile = min(n0 / 128 + t, sfb_row_tiles - 1);
                        bulk_load(sf_slot + (1 + t) * SF_TILE_BYTES,
                                  scale_b + ((i64)sfb_tile * k_slices + slice) * SF_TILE_BYTES, SF_TILE_BYTES,
                                  sf_barrier);
                    }
                    // ANCHOR_END: scale_loads
                    tma_load_2d_2sm(a_tile, &a_map, pair_full, slice * BK, m0);
                    tma_load_2d_2sm(b_tile, &b_map, pair_full, slice * BK, b_row);
                    if (++slot == STAGES) {
                        slot = 0;
                        phase ^= 1;
                    }
                }
            }
            // ANCHOR: producer_tail
            // The producer's tail (CUTLASS's producer_tail), as in step 10: wait for the last round of
            // `empty` commits, one per slot, before this block may exit. The MMA thread multicasts them
            // to both blocks, and nothing else orders their arrivals before the block's exit: one that
            // landed later would change a word in the shared memory of the next block on this SM.
            // A slot the last round never used passes at once (the phase before its first).
            for (int i = 0; i < STAGES; ++i) {
                mbarrier_wait_cta(&empty[slot], phase ^ 1, "empty (producer tail)");
                if (++slot == STAGES) {
                    slot = 0;
                    phase ^= 1;
                }
            }
            // ANCHOR_END: producer_tail
        }
        // ANCHOR_END: producer
    } else if (warp == 1) {
        // ANCHOR: mma
        // The MMA issuer: one thread of the leader's warp 1. The peer's warp 1 has no MMAs to issue:
        // the leader's MMAs run on both SMs. It needs no tile coordinates, only how many tiles there
        // are: the producer chose what lands in the ring, the epilogue where the results go.
        if (leader && lane == 0) {
            int slot = 0;
            u32 phase = 0;
            int turn = 0;           // tiles this pair has computed so far
            int slices_issued = 0;  // K slices issued so far, across tiles: they alternate scale sets
            for (int index = pair; index < order.count(); index += pairs, ++turn) {
                // ANCHOR: acc_acquire
                // Tile `turn` goes to accumulator turn % 2, in its round turn / 2. Wait until both
                // blocks' epilogues have read what the round before left there (round 0: parity 1,
                // the phase before the first, passes at once, as the producer's first wait does), and
                // until they have read the 32 columns it shares with the other accumulator, where the
                // tile before (turn − 1) lies.
                const int accum = turn % ACCUMULATORS;
                mbarrier_wait_relaxed_cluster(&acc_empty[accum], ((turn / ACCUMULATORS) & 1) ^ 1, "acc_empty");
                if (turn > 0) mbarrier_wait_relaxed_cluster(&overlap_empty, (turn - 1) & 1, "overlap_empty");
                tcgen05_fence_after_thread_sync();  // the MMAs below come after the epilogue's loads
                const u32 d_tmem = tmem + static_cast<u32>(accum * ACC1_COL);
                // ANCHOR_END: acc_acquire
                for (int slice = 0; slice < k_slices; ++slice, ++slices_issued) {
                    // Both blocks' tiles and the leader's scales counted here; the peer's scales
                    // arrive from its relay, at cluster scope.
                    mbarrier_wait_acquire_cluster(&full[slot], phase, "full");
                    // ANCHOR: scale_sets
                    // This slice's scales go to set slices_issued % 2, the set that the MMAs of two
                    // slices ago read. The PTX ISA orders a tcgen05.cp before a later MMA of the same
                    // thread (cp -> mma, "Pipelined tcgen05 instructions"), but not an MMA before a
                    // later cp: only the MMAs' completion does. So, as in the ISA's pattern for
                    // non-pipelined operations of one thread (commit, wait, fence, then the next), wait
                    // for that slice's commit: empty[] of its slot, with the parity of its round. The
                    // phase before has completed (the producer refilled the slot for that slice), and
                    // the one after needs this thread's next commit there. Meanwhile the slice in
                    // between keeps the tensor cores busy.
                    const u32 sf_set = static_cast<u32>(slices_issued % SF_SETS) * SF_SET_COLS;
                    if (slices_issued >= SF_SETS) {
                        const bool same_round = slot >= SF_SETS;
                        mbarrier_wait_cta(&empty[same_round ? slot - SF_SETS : slot + STAGES - SF_SETS],
                                          same_round ? phase : phase ^ 1, "empty (scale set)");
                    }
                    // ANCHOR_END: scale_sets
                    tcgen05_fence_after_thread_sync();  // the copies and MMAs below come after the waits
                    const u32 a_tile = smem_address(smem + slot * TILE_BYTES);
                    const u32 b_tile = a_tile + A_TILE_BYTES;
                    const u32 sfa_tmem = tmem + SFA_COL + sf_set;  // lane 0: the copy fills all four lane quarters
                    const u32 sfb_tmem = tmem + SFB_COL + sf_set;
                    // ANCHOR: scales_to_tmem
                    // The slot's scale tiles to TMEM, in both blocks (each from its own shared memory),
                    // into this slice's set: the MMAs below see them (cp -> mma), and those of the
                    // slice before, which read the other set, may still be running.
                    const u32 sf_slot = smem_address(scales + slot * SCALE_SLOT_BYTES);
                    tcgen05_cp_32x128b_warpx4_2sm(sfa_tmem, umma_descriptor(SF_DESC, sf_slot));
                    #pragma unroll
                    for (int t = 0; t < SFB_TILES; ++t) {
                        tcgen05_cp_32x128b_warpx4_2sm(sfb_tmem + t * SF_TILE_COLS,
                                                      umma_descriptor(SF_DESC, sf_slot + (1 + t) * SF_TILE_BYTES));
                    }
                    // ANCHOR_END: scales_to_tmem
                    #pragma unroll
                    for (int k = 0; k < BK / MMA_K; ++k) {
                        const u64 a_desc = umma_descriptor(A_DESC, a_tile + k_slice_offset(k));
                        const u64 b_desc = umma_descriptor(B_DESC, b_tile + k_slice_offset(k));
                        // MMA k uses scale block k of the slice: byte k of every scale cell, for A and B.
                        const u32 idesc = IDESC + static_cast<u32>(k) * IDESC_SF_ID_STEP;
                        umma_mxf8f6f4_block32_2sm(d_tmem, a_desc, b_desc, idesc, sfa_tmem, sfb_tmem,
                                                  slice > 0 || k > 0);
                    }
                    // When these MMAs have completed on both SMs, the slot is free in both blocks. The
                    // issuing thread does not wait: it goes on to the next full slot at once.
                    umma_commit_2sm_multicast(&empty[slot], pair_mask);
                    if (++slot == STAGES) {
                        slot = 0;
                        phase ^= 1;
                    }
                }
                // ANCHOR: acc_release_full
                // Every MMA of the tile completes: tell both blocks' epilogues that accumulator `accum`
                // is full, and go straight on to the next tile, in the other accumulator.
                umma_commit_2sm_multicast(&acc_full[accum], pair_mask);
                // ANCHOR_END: acc_release_full
            }
        } else if (!leader && lane == 0) {
            // ANCHOR: relay
            // The peer's warp 1 relays: for every slice, in the producer's order, once the peer's
            // scale bytes have landed it arrives on the leader's full[slot] (its second arrival).
            const u32 leader_rank = pair_leader_rank(rank);
            int slot = 0;
            u32 phase = 0;
            for (int index = pair; index < order.count(); index += pairs) {
                for (int slice = 0; slice < k_slices; ++slice) {
                    mbarrier_wait_cta(&sf_full[slot], phase, "sf_full");
                    mbarrier_arrive_release_cluster(&full[slot], leader_rank);
                    if (++slot == STAGES) {
                        slot = 0;
                        phase ^= 1;
                    }
                }
            }
            // ANCHOR_END: relay
        }
        // ANCHOR_END: mma
    } else {
        // ANCHOR: epilogue
        // The epilogue warps 2..5, as in step 08: warp w reads TMEM lanes 32·(w % 4) .. +31, rows
        // m0 + 32·(w % 4) .. of the tile, now tile after tile, from the accumulators in turn.
        const int quarter = warp % 4;
        const u32 leader_rank = pair_leader_rank(rank);
        int issued = 0;  // TMA stores this warp has started, across tiles: they alternate buffers
        int turn = 0;
        for (int index = pair; index < order.count(); index += pairs, ++turn) {
            int m0, n0;
            origin(index, m0, n0);
            // ANCHOR: acc_wait_full
            // Every thread waits for accumulator turn % 2 to be full in this round (cluster scope: in
            // the peer the commit comes from the leader), then fences.
            const int accum = turn % ACCUMULATORS;
            mbarrier_wait_relaxed_cluster(&acc_full[accum], (turn / ACCUMULATORS) & 1, "acc_full");
            __syncwarp();  // tcgen05.ld is .sync.aligned: the warp goes on converged
            tcgen05_fence_after_thread_sync();
            // ANCHOR_END: acc_wait_full
            const int row = m0 + quarter * 32 + lane;
            const int box_row = m0 + quarter * 32;
            const bool stores = tma_store && box_row < M;  // this warp has rows of C to store with the TMA
            const u32 warp_tmem = tmem_offset(tmem, quarter * 32, accum * ACC1_COL);
            // ANCHOR: overlap_first
            // The chunk shared with the other accumulator goes first: accumulator 0's last chunk,
            // accumulator 1's first. Then the rest in order.
            const int first = accum == 0 ? CHUNKS - 1 : 0;
            #pragma unroll 1
            for (int step = 0; step < CHUNKS; ++step) {
                const int chunk = (first + step) % CHUNKS;
                const int col = chunk * CHUNK_COLS;
                if (n0 + col < N) {  // the same for the whole block: C reaches this chunk
                    u32 acc[32];
                    tmem_load_32x32b_x32(warp_tmem + col, acc);  // whole warp, returns with the values in acc
                    if (step == 0) {
                        // The shared columns are read: the MMA warp may start the next tile. (A chunk
                        // right of C's end is never read; its arrival below comes all the same.)
                        tcgen05_fence_before_thread_sync();
                        mbarrier_arrive_relaxed_cluster(&overlap_empty, leader_rank);
                    }
                    // ANCHOR_END: overlap_first
                    if (stores) {
                        // ANCHOR: double_buffer
                        // This warp's box in buffer issued % 2: 32 rows of 128 bytes, row `lane` at lane · 128.
                        // The count runs across tiles (a ragged tile may store an odd number of chunks).
                        unsigned char* box = c_staging + (issued % 2) * BUFFER_BYTES + quarter * WARP_BOX_BYTES;
                        // The buffer was last given to the engine two stores ago, perhaps in the previous
                        // tile. Lane 0 committed every store of this warp, so lane 0 waits until only the
                        // newest group (the previous store's, in the other buffer) may still be reading;
                        // then the warp may overwrite this one. On the first two stores nothing is pending.
                        if (lane == 0) tma_store_wait_read<1>();
                        __syncwarp();
                        // Eight 16-byte pieces per thread, where the 128-byte swizzle of the map puts
                        // them: piece p of row r at p ^ (r % 8). Any 8 consecutive lanes then write 8
                        // different 16-byte bank groups.
                        #pragma unroll
                        for (int p = 0; p < 8; ++p) {
                            const u32 at = static_cast<u32>(p) ^ static_cast<u32>(lane % 8);
                            *reinterpret_cast<uint4*>(box + lane * (CHUNK_COLS * 4) + at * 16) =
                                make_uint4(acc[4 * p], acc[4 * p + 1], acc[4 * p + 2], acc[4 * p + 3]);
                        }
                        // Every thread fences its writes towards the async proxy, the warp synchronises, and
                        // lane 0 stores the box at (n0 + col, box_row) and closes a bulk group, without
                        // waiting. The engine clips what lies outside C.
                        fence_async_shared();
                        __syncwarp();
                        if (lane == 0) {
                            tma_store_2d(&c_map, box, n0 + col, box_row);
                            tma_store_commit();
                        }
                        ++issued;
                        // ANCHOR_END: double_buffer
                    } else if (!tma_store) {
                        store_row_piece(C, M, N, row, n0 + col, acc);  // N % 4 != 0: no TMA store possible
                    }
                } else if (step == 0) {
                    mbarrier_arrive_relaxed_cluster(&overlap_empty, leader_rank);
                }
            }
            // ANCHOR: acc_release_empty
            // This thread's loads of accumulator `accum` are complete (tcgen05.wait::ld): order them
            // before the arrival, and arrive on the leader's acc_empty[accum]. When all 256 epilogue
            // threads of the pair have, the MMA warp may overwrite it with tile turn + 2.
            tcgen05_fence_before_thread_sync();
            mbarrier_arrive_relaxed_cluster(&acc_empty[accum], leader_rank);
            // ANCHOR_END: acc_release_empty
        }
        // The last two stores may still be reading their buffers, which must stay valid until they
        // are done (the writes to C complete, and become visible, with the kernel).
        if (tma_store && lane == 0) tma_store_wait_read<0>();
        // ANCHOR_END: epilogue
    }

    // ANCHOR: teardown
    // Every warp arrives here once its role is done, all tiles included. The cluster barrier: the
    // epilogue warps of both blocks have finished reading TMEM (their fences order the loads before
    // it) and made their last arrivals on the leader's barriers, the producers' copies have all landed
    // (the MMAs that consumed them completed before the last acc_full), the last empty[] commits have
    // arrived (the producer's tail), and no block exits while the other may still touch it. Then warp 1
    // of each block frees the pair's columns.
    __syncwarp();  // barrier.cluster is .aligned: each warp arrives converged
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    if (warp == 1) {
        tcgen05_fence_after_thread_sync();
        tmem_dealloc_2sm<2 * BN>(tmem);
    }
    // ANCHOR_END: teardown
}
// ANCHOR_END: kernel
