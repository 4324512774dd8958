// Step 10 · persistent, Blackwell (sm_100a): one pair of blocks per pair of SMs for the whole GEMM,
// tiles in a grouped order, and two TMEM accumulators so that the epilogue of one tile runs while the
// tensor cores compute the next.
//
// Assembled for sm_100a by the tests, but not run by this project: we have no Blackwell GPU.
//
// Up to step 09 a pair computed one 256 × 256 tile of C and exited, and the next pair on those SMs
// started from nothing: TMEM allocated and barriers initialised again, the ring empty, and the tensor
// cores idle for the whole epilogue, since the MMAs of the next tile had nowhere to write until the
// epilogue had read TMEM. Here:
//   - the grid is one row of pairs, exactly as many as fit on the GPU at once (step.rs asks the
//     driver), and pair p computes tiles p, p + pairs, p + 2·pairs, ... in the grouped order of the
//     Hopper twin (`TileOrder`: GROUP_M tile rows at a time, down M first), so that the pairs at work
//     at the same moment share rows of A and columns of B in L2;
//   - the producer and the MMA warp do not stop at the end of a tile: their slot and phase in the ring
//     run on across tiles, so the next tile's slices load while the last tile's MMAs finish;
//   - TMEM holds two accumulators of BN columns each (2 × 256 = all 512 columns). Tile i goes to
//     accumulator i % 2. A second pair of barriers hands an accumulator back and forth, a ring of two
//     slots like the ring of K slices, with the MMA warp as its producer and the epilogue as consumer:
//       acc_full[a]  (in both blocks, 1 arrival): the MMA warp's commit after the tile's last MMA;
//                    the epilogue warps of both blocks wait on it, then read TMEM;
//       acc_empty[a] (in the leader, 2 × 128 arrivals): every epilogue thread of both blocks arrives
//                    once it has read its lanes of accumulator a; the MMA warp waits on it before the
//                    first MMA of the next tile that uses a.
//     So the MMA warp fills accumulator 1 with tile i + 1 while the epilogue drains accumulator 0 of
//     tile i, and waits only if the epilogue is more than one whole tile behind.
//   - the staging buffers of C carry over from tile to tile: a warp's stores alternate between them
//     by a count that runs across tiles, and each one waits until its buffer's previous store has read it.
//
// Shared memory is step 09's (6 × 32 + 16 + 1 = 209 KiB, plus 4 more barriers), and so one block per
// SM, as the persistent grid assumes; the 512 TMEM columns need that too.
//
// Scheduling is static: every pair knows its list of tiles from its index alone. Blackwell's cluster
// launch control (CLC) would let the grid keep one cluster per tile and have each running pair cancel
// a not-yet-launched cluster and take its tile (the next step that "Matrix Multiplication on
// Blackwell: Part 3" names); see the book's chapter.
//
// Everything else (pair, 2-SM MMA, ring, chunked double-buffered epilogue) is step 09's.
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
#error "BN (columns of C per block, the N of the MMA, TMEM columns allocated) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K slice loaded per step) is set by step.rs"
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
#ifndef IDESC
#error "IDESC (tcgen05.mma instruction descriptor: bf16 x bf16 -> fp32, K-major, 2*BM x BN, cta_group::2) is set by step.rs"
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
    MMA_K = 16,                          // K of one tcgen05.mma.kind::f16: 16 bf16 = 32 bytes
    A_TILE_BYTES = BM * BK * 2,          // this block's BM×BK bf16 tile of A
    B_HALF_ROWS = BN / 2,                // rows of B each block of the pair holds
    B_TILE_BYTES = B_HALF_ROWS * BK * 2, // this block's half of the BN×BK tile of B
    TILE_BYTES = A_TILE_BYTES + B_TILE_BYTES,  // one slot of the ring: one block's K slice
    PAIR_TILE_BYTES = 2 * TILE_BYTES,    // ... and the pair's: what the leader's full[slot] expects
    CHUNK_COLS = 32,                     // columns of C per chunk: one tcgen05.ld .32x32b.x32
    WARP_BOX_BYTES = 32 * CHUNK_COLS * 2,  // one warp's 32 rows of a chunk: one TMA store box, 2 KiB
    BUFFER_BYTES = BM * CHUNK_COLS * 2,  // one staging buffer: the four epilogue warps' boxes, 8 KiB
};
// One pair, one MMA shape: M = 256 puts row i of each block's half in lane i of that block's TMEM
// (all 128 lanes), and four epilogue warps are exactly what it takes to read 128 lanes back.
static_assert(CLUSTER_M == 2, "a 2-SM MMA is issued for a pair of blocks: clusters of two along M");
static_assert(BM == 128, "each block holds 128 rows of the M = 256 MMA: all 128 TMEM lanes");
static_assert(THREADS == 6 * 32, "a producer warp, an MMA warp and four epilogue warps");
static_assert(STAGES >= 2, "a ring needs at least two slots to overlap copies and MMAs");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "a 2-SM MMA has N <= 256; the epilogue reads 32 columns");
static_assert((BN & (BN - 1)) == 0, "TMEM is allocated in powers of two of columns: BN must be one");
static_assert(ACCUMULATORS == 2 && ACCUMULATORS * BN <= 512, "two accumulators of BN columns fit TMEM's 512");
static_assert(BK % MMA_K == 0 && BK % 8 == 0, "a K slice is a whole number of MMAs and of 16-byte columns");

// ANCHOR: swizzle
// Byte offset, inside a tile, of the k-th MMA_K-wide slice of K. A slice is 32 bytes of every 128-byte
// row; the descriptor points at where it starts in row 0 and the hardware swizzles the rest.
static_assert(BK * 2 == 128, "one 128-byte swizzled row per row of the tile: BK = 64 bf16");
static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "every tile starts 1024-byte aligned");
static_assert(BN % CHUNK_COLS == 0, "the C tile is a whole number of 32-column chunks");
__device__ __forceinline__ u32 k_slice_offset(int k) {
    return static_cast<u32>(k * MMA_K * 2);
}
// ANCHOR_END: swizzle

// Writes 32 consecutive elements of one row of C (row `row`, columns col .. col+31; `packed` holds
// them as 16 pairs of bf16) and nothing that lies outside C. When N % 8 == 0 every row of C starts
// 16-byte aligned and col is a multiple of 8, so each group of 8 goes out as one 16-byte store;
// otherwise element by element.
__device__ __forceinline__ void store_row_piece(bf16* C, int M, int N, int row, int col, const u32 (&packed)[16]) {
    if (row >= M) return;
    bf16* dst = C + (i64)row * N + col;
    if (N % 8 == 0) {
        #pragma unroll
        for (int q = 0; q < 4; ++q) {
            if (col + 8 * q < N) {
                *reinterpret_cast<uint4*>(dst + 8 * q) =
                    make_uint4(packed[4 * q], packed[4 * q + 1], packed[4 * q + 2], packed[4 * q + 3]);
            }
        }
    } else {
        #pragma unroll
        for (int e = 0; e < 32; ++e) {
            if (col + e < N) dst[e] = static_cast<bf16>(packed[e / 2] >> (16 * (e % 2)));
        }
    }
}

// ANCHOR: rotate
// The 16-byte piece p (columns 8p .. 8p+7 of the chunk) of a thread's row, chosen at run time. p is
// not a compile-time constant, so the four pieces are selected by comparisons rather than by indexing
// an array: indexing with a run-time value would move `packed` from registers to local memory.
__device__ __forceinline__ uint4 chunk_piece(const u32 (&packed)[16], u32 p) {
    const uint4 v0 = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    const uint4 v1 = make_uint4(packed[4], packed[5], packed[6], packed[7]);
    const uint4 v2 = make_uint4(packed[8], packed[9], packed[10], packed[11]);
    const uint4 v3 = make_uint4(packed[12], packed[13], packed[14], packed[15]);
    return p == 0 ? v0 : p == 1 ? v1 : p == 2 ? v2 : v3;
}
// ANCHOR_END: rotate

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
// peer loads zeros and stores nothing. The tensor maps (shared/encoding/tma.rs) cover A (M×K, boxes of BM
// rows) and B (N×K, boxes of BN/2 rows); boxes that hang over an edge arrive zero-filled, so a ragged
// tile or a K that is not a multiple of BK only adds zeros to the accumulators.
// `c_map` (32 rows × 32 columns boxes of C, no swizzle) is used only when tma_store != 0; the host
// sets tma_store = (N % 8 == 0) and otherwise passes a map that is never read.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, int M, int N, int K,
                                                              int tma_store) {
    // Dynamic shared memory: STAGES slots of (A tile, half B tile), then the two staging buffers for C
    // (each BM × 32 bf16: a 2 KiB box per epilogue warp). The host asks for 1 KiB more than all that
    // needs, so everything can start on a 1024-byte boundary (where the 128-byte swizzle repeats).
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    unsigned char* c_staging = smem + STAGES * TILE_BYTES;

    // ANCHOR: ring
    // The ring's barriers, the end-of-mainloop barrier and the TMEM address word. Both blocks have all
    // of them at the same offsets; the peer's full[] are never used.
    __shared__ u64 full[STAGES];   // leader's: slot's bytes (both blocks') have landed
    __shared__ u64 empty[STAGES];  // both blocks': the MMAs that read the slot have completed
    __shared__ u32 tmem_slot;
    // ANCHOR_END: ring
    // ANCHOR: accumulator_barriers
    // The accumulators' barriers, a ring of ACCUMULATORS slots between the MMA warp and the epilogue.
    __shared__ u64 acc_full[ACCUMULATORS];   // both blocks': every MMA of the tile in accumulator a has completed
    __shared__ u64 acc_empty[ACCUMULATORS];  // leader's: both blocks' epilogue threads have read accumulator a
    // ANCHOR_END: accumulator_barriers

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int k_slices = (K + BK - 1) / BK;  // K >= 8, so at least one

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
    //  - Warp 1 of each block (the MMA warp, all 32 threads) allocates ACCUMULATORS · BN TMEM columns
    //    (all 512) for the pair; the same warp of both blocks, together; both get the same address.
    //    It frees them at the end.
    //  - One thread of warp 0 initialises the barriers and makes them visible to the copy engine and
    //    the tensor cores, of this SM and the peer's.
    if (warp == 1) {
        tmem_alloc_2sm<ACCUMULATORS * BN>(&tmem_slot);
        tmem_relinquish_alloc_permit_2sm();
    } else if (warp == 0 && lane == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 1);
        }
        for (int a = 0; a < ACCUMULATORS; ++a) {
            mbarrier_init(&acc_full[a], 1);                  // the MMA warp's commit
            mbarrier_init(&acc_empty[a], CLUSTER_M * 4 * 32);  // every epilogue thread of the pair
        }
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
    const u32 tmem = tmem_slot;  // lane 0, first allocated column: accumulator a starts at column a · BN
    // ANCHOR_END: tmem_alloc

    if (warp == 0) {
        // ANCHOR: producer
        // The producer: one thread of warp 0, in both blocks. It runs ahead of the MMAs by as many
        // slices as the ring has slots, and waits only when the slot it wants is still being read.
        // Slot and phase run on across tiles: the next tile's first slices load into the slots the
        // last tile's MMAs free, while the epilogue is still busy with that tile.
        if (lane == 0) {
            const u32 leader_full = cluster_map_shared(&full[0], pair_leader_rank(rank));
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
                    // The leader announces the pair's bytes on its full[slot]; both blocks' copies count on it.
                    if (leader) mbarrier_arrive_expect_bytes(&full[slot], PAIR_TILE_BYTES);
                    tma_load_2d_2sm(a_tile, &a_map, pair_full, slice * BK, m0);
                    tma_load_2d_2sm(b_tile, &b_map, pair_full, slice * BK, b_row);
                    if (++slot == STAGES) {
                        slot = 0;
                        phase ^= 1;
                    }
                }
            }
            // ANCHOR: producer_tail
            // The producer's tail (CUTLASS's producer_tail): wait for the last round of `empty`
            // commits, one per slot, before this block may exit. The MMA thread multicasts them to
            // both blocks, and nothing else orders their arrivals before the block's exit: one that
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
        // The MMA issuer: one thread of the leader's warp 1. The peer's warp 1 has nothing to issue:
        // the leader's MMAs run on both SMs. It needs no tile coordinates, only how many tiles there
        // are: the producer chose what lands in the ring, the epilogue where the results go.
        if (leader && lane == 0) {
            int slot = 0;
            u32 phase = 0;
            int turn = 0;  // tiles this pair has computed so far
            for (int index = pair; index < order.count(); index += pairs, ++turn) {
                // ANCHOR: acc_acquire
                // Tile `turn` goes to accumulator turn % 2, in its round turn / 2. Wait until both
                // blocks' epilogues have read what the round before left there (round 0: parity 1,
                // the phase before the first, passes at once, as the producer's first wait does).
                const int accum = turn % ACCUMULATORS;
                mbarrier_wait_relaxed_cluster(&acc_empty[accum], ((turn / ACCUMULATORS) & 1) ^ 1, "acc_empty");
                tcgen05_fence_after_thread_sync();  // the MMAs below come after the epilogue's loads
                const u32 d_tmem = tmem + static_cast<u32>(accum * BN);
                // ANCHOR_END: acc_acquire
                for (int slice = 0; slice < k_slices; ++slice) {
                    mbarrier_wait_cta(&full[slot], phase, "full");
                    tcgen05_fence_after_thread_sync();  // the MMAs below come after the wait
                    const u32 a_tile = smem_address(smem + slot * TILE_BYTES);
                    const u32 b_tile = a_tile + A_TILE_BYTES;
                    #pragma unroll
                    for (int k = 0; k < BK / MMA_K; ++k) {
                        const u64 a_desc = umma_descriptor(A_DESC, a_tile + k_slice_offset(k));
                        const u64 b_desc = umma_descriptor(B_DESC, b_tile + k_slice_offset(k));
                        umma_f16_2sm(d_tmem, a_desc, b_desc, IDESC, slice > 0 || k > 0);
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
            const u32 warp_tmem = tmem_offset(tmem, quarter * 32, accum * BN);
            #pragma unroll 1
            for (int chunk = 0; chunk < BN / CHUNK_COLS; ++chunk) {
                const int col = chunk * CHUNK_COLS;
                if (n0 + col >= N) break;  // the same for the whole block: C ends left of this chunk
                u32 acc[32];
                tmem_load_32x32b_x32(warp_tmem + col, acc);  // whole warp, returns with the values in acc
                u32 packed[16];
                #pragma unroll
                for (int i = 0; i < 16; ++i) {
                    packed[i] = pack_bf16x2(__uint_as_float(acc[2 * i]), __uint_as_float(acc[2 * i + 1]));
                }
                if (stores) {
                    // ANCHOR: double_buffer
                    // This warp's box in buffer issued % 2: 32 rows of 64 bytes, row `lane` at lane · 64.
                    // The count runs across tiles (a ragged tile may store an odd number of chunks).
                    unsigned char* box = c_staging + (issued % 2) * BUFFER_BYTES + quarter * WARP_BOX_BYTES;
                    // The buffer was last given to the engine two stores ago, perhaps in the previous
                    // tile. Lane 0 committed every store of this warp, so lane 0 waits until only the
                    // newest group (the previous store's, in the other buffer) may still be reading;
                    // then the warp may overwrite this one. On the first two stores nothing is pending.
                    if (lane == 0) tma_store_wait_read<1>();
                    __syncwarp();
                    // Four 16-byte pieces per thread, in the rotated order that keeps the banks apart.
                    #pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const u32 p = (q + lane / 2) % 4;
                        *reinterpret_cast<uint4*>(box + lane * (CHUNK_COLS * 2) + p * 16) = chunk_piece(packed, p);
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
                    store_row_piece(C, M, N, row, n0 + col, packed);  // N % 8 != 0: no TMA store possible
                }
            }
            // ANCHOR: acc_release_empty
            // This thread's loads of accumulator `accum` are complete (tcgen05.wait::ld): order them
            // before the arrival, and arrive on the leader's acc_empty[accum]. When all 256 epilogue
            // threads of the pair have, the MMA warp may overwrite it with tile turn + 2. The arrival
            // and the MMA warp's wait cross blocks: the .relaxed.cluster forms (mbarrier_sm100.cuh).
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
    // it) and made their last arrivals on the leader's acc_empty, the producers' copies have all landed
    // (the MMAs that consumed them completed before the last acc_full), and no block exits while the
    // other may still touch it. Then warp 1 of each block frees the pair's columns.
    __syncwarp();  // barrier.cluster is .aligned: each warp arrives converged
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    if (warp == 1) {
        tcgen05_fence_after_thread_sync();
        tmem_dealloc_2sm<ACCUMULATORS * BN>(tmem);
    }
    // ANCHOR_END: teardown
}
// ANCHOR_END: kernel
