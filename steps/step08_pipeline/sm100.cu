// Step 08 · pipeline, Blackwell (sm_100a): warp specialisation and a ring of stages.
//
// Assembled for sm_100a by the tests, but not run by this project: we have no Blackwell GPU.
//
// Step 07 still takes turns: a block's thread 0 starts the copies of a K slice, waits for them, lets
// the tensor cores work, waits for them, and only then starts the next copies. Copy engine and tensor
// cores are each idle half the time. Here the two work at once, on different slices:
//   - shared memory holds a ring of STAGES slots, each one K slice (this block's A tile and half B
//     tile); the copies run up to STAGES slices ahead of the MMAs;
//   - each slot has two barriers: `full` (its bytes have landed: the MMAs may read it) and `empty`
//     (the MMAs that read it have completed: the copies may overwrite it);
//   - each job gets its own warp, so that neither waits for the other in program order:
//       warp 0      the producer: waits for a slot to be empty, starts its copies;
//       warp 1      the MMA warp: allocates TMEM; in the leader, waits for a slot to be full, issues
//                   its MMAs and commits them to the slot's `empty` barrier;
//       warps 2..5  the epilogue: wait once, on `done`, for the last MMA, then step 07's epilogue.
// The pair, the 2-SM MMA and the multicast commits are step 07's; only the schedule changed.
//
// Shared memory (per block): STAGES × (16 KiB of A + 16 KiB of B) + 64 KiB of C staging + 1 KiB
// of alignment slack = 5 × 32 + 64 + 1 = 225 KiB of the 227 KiB a block may have. One block per SM,
// so TMEM (256 of 512 columns) is never contended.
//
// Who waits on what, with which parity. A slot is used in rounds: slice s is slot s % STAGES, round
// s / STAGES. A barrier completes one phase per round, so round r waits for the phase of parity r % 2:
//   - the MMA thread waits on full[slot] with parity r & 1 (phase r: round r's bytes are in);
//   - the producers wait on empty[slot] with parity (r & 1) ^ 1: in round 0 that names the phase
//     "before" phase 0, which counts as complete, so the first STAGES slices start at once; in round
//     r > 0 it is phase r − 1, which the MMAs of round r − 1 complete;
//   - the epilogue waits on done with parity 0 (it completes once);
//   - at the end, each producer waits once more on every empty[slot], for the last round's commits
//     (the producer's tail), so that none of them arrives after its block has exited.
// full[] lives in the leader (count 1: the leader's producer announces the pair's bytes; both blocks'
// copies count their bytes on it). empty[] and done live in both blocks (count 1: one multicast
// commit from the leader arrives on both). The peer's epilogue waits on a commit of the other block
// before it reads TMEM, so that wait takes the PTX ISA's cluster-scope form (mbarrier_sm100.cuh).
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "tcgen05.cuh"
#include "cluster.cuh"
#include "mbarrier_sm100.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset

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

enum : int {
    MMA_K = 16,                          // K of one tcgen05.mma.kind::f16: 16 bf16 = 32 bytes
    A_TILE_BYTES = BM * BK * 2,          // this block's BM×BK bf16 tile of A
    B_HALF_ROWS = BN / 2,                // rows of B each block of the pair holds
    B_TILE_BYTES = B_HALF_ROWS * BK * 2, // this block's half of the BN×BK tile of B
    TILE_BYTES = A_TILE_BYTES + B_TILE_BYTES,  // one slot of the ring: one block's K slice
    PAIR_TILE_BYTES = 2 * TILE_BYTES,    // ... and the pair's: what the leader's full[slot] expects
    BOX_COLS = 64,                       // columns of C per TMA store box: one 128-byte swizzled row
    BOX_BYTES = 32 * BOX_COLS * 2,       // a box is one warp's 32 rows: 4 KiB
};
// One pair, one MMA shape: M = 256 puts row i of each block's half in lane i of that block's TMEM
// (all 128 lanes), and four epilogue warps are exactly what it takes to read 128 lanes back.
static_assert(CLUSTER_M == 2, "a 2-SM MMA is issued for a pair of blocks: clusters of two along M");
static_assert(BM == 128, "each block holds 128 rows of the M = 256 MMA: all 128 TMEM lanes");
static_assert(THREADS == 6 * 32, "a producer warp, an MMA warp and four epilogue warps");
static_assert(STAGES >= 2, "a ring needs at least two slots to overlap copies and MMAs");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "a 2-SM MMA has N <= 256; the epilogue reads 32 columns");
static_assert((BN & (BN - 1)) == 0, "TMEM is allocated in powers of two of columns: BN must be one");
static_assert(BK % MMA_K == 0 && BK % 8 == 0, "a K slice is a whole number of MMAs and of 16-byte columns");

// ANCHOR: swizzle
// Byte offset, inside a tile, of the k-th MMA_K-wide slice of K. A slice is 32 bytes of every 128-byte
// row; the descriptor points at where it starts in row 0 and the hardware swizzles the rest.
static_assert(BK * 2 == 128, "one 128-byte swizzled row per row of the tile: BK = 64 bf16");
static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "every tile starts 1024-byte aligned");
static_assert(BN % BOX_COLS == 0, "the C tile is a whole number of 64-column boxes");
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

// ANCHOR: kernel
// The grid has one block per BM×BN tile of C: blockIdx.x along N, blockIdx.y along M, in clusters of
// CLUSTER_M = 2 blocks along M (the host asks for the cluster shape at launch, step.rs `CLUSTER`, and
// rounds the grid's y up to even; a block past the bottom of C loads zeros and stores nothing). The
// tensor maps (shared/encoding/tma.rs) cover A (M×K, boxes of BM rows) and B (N×K, boxes of BN/2 rows); boxes
// that hang over an edge arrive zero-filled, so a ragged tile or a K that is not a multiple of BK only
// adds zeros to the accumulators.
// `c_map` (32 rows × 64 columns boxes of C, 128-byte swizzle) is used only when tma_store != 0; the
// host sets tma_store = (N % 8 == 0) and otherwise passes a map that is never read.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, int M, int N, int K,
                                                              int tma_store) {
    // Dynamic shared memory: STAGES slots of (A tile, half B tile), then the staging area for C (BM×BN
    // bf16: BN/64 boxes of 4 KiB per epilogue warp). The host asks for 1 KiB more than all that needs,
    // so everything can start on a 1024-byte boundary (where the 128-byte swizzle repeats).
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    unsigned char* c_staging = smem + STAGES * TILE_BYTES;

    // ANCHOR: ring
    // The ring's barriers, the end-of-mainloop barrier and the TMEM address word. Both blocks have all
    // of them at the same offsets; the peer's full[] are never used.
    __shared__ u64 full[STAGES];   // leader's: slot's bytes (both blocks') have landed
    __shared__ u64 empty[STAGES];  // both blocks': the MMAs that read the slot have completed
    __shared__ u64 done;           // both blocks': every MMA of the tile has completed
    __shared__ u32 tmem_slot;
    // ANCHOR_END: ring

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int k_slices = (K + BK - 1) / BK;  // K >= 8, so at least one

    // ANCHOR: pair
    // The pair, as in step 07: the leader (even rank) holds rows m0 .. m0+127 of the pair's 256 and
    // B rows n0 .. n0+BN/2-1; the peer the next 128 rows of A and the other half of B.
    const u32 rank = cluster_ctarank();
    const bool leader = rank == pair_leader_rank(rank);
    const int b_row = n0 + static_cast<int>(rank % 2) * B_HALF_ROWS;
    const u16 pair_mask = static_cast<u16>(0b11u << pair_leader_rank(rank));
    // ANCHOR_END: pair

    // ANCHOR: tmem_alloc
    // Set-up, by two different warps at once.
    //  - Warp 1 of each block (the MMA warp, all 32 threads) allocates BN TMEM columns for the pair;
    //    the same warp of both blocks, together; both get the same address. It frees them at the end.
    //  - One thread of warp 0 initialises the barriers and makes them visible to the copy engine and
    //    the tensor cores, of this SM and the peer's.
    if (warp == 1) {
        tmem_alloc_2sm<BN>(&tmem_slot);
        tmem_relinquish_alloc_permit_2sm();
    } else if (warp == 0 && lane == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 1);
        }
        mbarrier_init(&done, 1);
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
        if (lane == 0) {
            const u32 leader_full = cluster_map_shared(&full[0], pair_leader_rank(rank));
            int slot = 0;
            u32 phase = 0;  // parity of the current round of the ring
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
            // ANCHOR: producer_tail
            // The producer's tail (CUTLASS's producer_tail): wait for the last round of `empty`
            // commits, one per slot, before this block may exit. The MMA thread multicasts them to
            // both blocks, and nothing else orders their arrivals before the block's exit (the
            // epilogue waits for `done`, a later commit, but the PTX ISA does not say that two
            // commits' arrivals land in issue order): one that landed later would change a word in
            // the shared memory of the next block on this SM. A slot the last round never used
            // passes at once (the phase before its first).
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
        // the leader's MMAs run on both SMs.
        if (leader && lane == 0) {
            int slot = 0;
            u32 phase = 0;
            for (int slice = 0; slice < k_slices; ++slice) {
                mbarrier_wait_cta(&full[slot], phase, "full");
                tcgen05_fence_after_thread_sync();  // the MMAs below come after the wait
                const u32 a_tile = smem_address(smem + slot * TILE_BYTES);
                const u32 b_tile = a_tile + A_TILE_BYTES;
                #pragma unroll
                for (int k = 0; k < BK / MMA_K; ++k) {
                    const u64 a_desc = umma_descriptor(A_DESC, a_tile + k_slice_offset(k));
                    const u64 b_desc = umma_descriptor(B_DESC, b_tile + k_slice_offset(k));
                    umma_f16_2sm(tmem, a_desc, b_desc, IDESC, slice > 0 || k > 0);
                }
                // When these MMAs have completed on both SMs, the slot is free in both blocks. The
                // issuing thread does not wait: it goes on to the next full slot at once.
                umma_commit_2sm_multicast(&empty[slot], pair_mask);
                if (++slot == STAGES) {
                    slot = 0;
                    phase ^= 1;
                }
            }
            // Every MMA issued so far, the whole tile, completes: tell both blocks' epilogues.
            umma_commit_2sm_multicast(&done, pair_mask);
        }
        // ANCHOR_END: mma
    } else {
        // ANCHOR: epilogue
        // The epilogue warps 2..5. TMEM lanes are reached by warp index modulo 4: warp w reads lanes
        // 32·(w % 4) .. +31, rows m0 + 32·(w % 4) .. of the tile (warps 4, 5, 2, 3 for rows 0, 32, 64,
        // 96). Every thread waits for `done` itself, then fences: its tcgen05.ld come after the MMAs.
        // In the peer, `done` is signalled from the leader: the ISA's pattern for a commit, a wait and a
        // tcgen05.ld in another thread is this .relaxed.cluster wait, then fence::after_thread_sync.
        const int quarter = warp % 4;
        mbarrier_wait_relaxed_cluster(&done, 0, "done");
        __syncwarp();  // tcgen05.ld is .sync.aligned: the warp goes on converged
        tcgen05_fence_after_thread_sync();
        // Lane t of the warp holds row 32·quarter + t. Each tcgen05.ld brings 32 columns of that row
        // into the thread's registers; they are converted to bf16 and written to the warp's boxes in
        // shared memory: row t of a box is 128 bytes, eight 16-byte chunks, and chunk c is stored at
        // position c ^ (t % 8) (swizzle_128b_offset).
        const int row = m0 + quarter * 32 + lane;
        const u32 warp_tmem = tmem_offset(tmem, quarter * 32, 0);
        unsigned char* warp_boxes = c_staging + quarter * (BN / BOX_COLS) * BOX_BYTES;
        #pragma unroll 1
        for (int col = 0; col < BN; col += 32) {
            u32 acc[32];
            tmem_load_32x32b_x32(warp_tmem + col, acc);  // whole warp, returns with the values in acc
            u32 packed[16];
            #pragma unroll
            for (int i = 0; i < 16; ++i) {
                packed[i] = pack_bf16x2(__uint_as_float(acc[2 * i]), __uint_as_float(acc[2 * i + 1]));
            }
            if (tma_store) {
                // Columns col .. col+31 are chunks (col % 64) / 8 .. +3 of row `lane` of box col / 64.
                unsigned char* box = warp_boxes + (col / BOX_COLS) * BOX_BYTES;
                const u32 first_chunk = (col % BOX_COLS) / 8;
                #pragma unroll
                for (int q = 0; q < 4; ++q) {
                    *reinterpret_cast<uint4*>(box + swizzle_128b_offset(lane, first_chunk + q)) =
                        make_uint4(packed[4 * q], packed[4 * q + 1], packed[4 * q + 2], packed[4 * q + 3]);
                }
            } else {
                store_row_piece(C, M, N, row, n0 + col, packed);  // N % 8 != 0: no TMA store possible
            }
        }
        // ANCHOR_END: epilogue

        // ANCHOR: tma_store
        // Step 06's store: each warp fences its writes towards the async proxy, synchronises, and lane
        // 0 stores the warp's boxes, then waits until the engine has read them.
        if (tma_store) {
            fence_async_shared();
            __syncwarp();
            const int box_row = m0 + quarter * 32;
            if (lane == 0 && box_row < M) {
                #pragma unroll
                for (int j = 0; j < BN / BOX_COLS; ++j) {
                    const int box_col = n0 + j * BOX_COLS;
                    if (box_col < N) tma_store_2d(&c_map, warp_boxes + j * BOX_BYTES, box_col, box_row);
                }
                tma_store_commit();
                tma_store_wait_read<0>();
            }
        }
        // ANCHOR_END: tma_store
    }

    // ANCHOR: teardown
    // Every warp arrives here once its role is done. The cluster barrier: the epilogue warps of both
    // blocks have finished reading TMEM (their fences order the loads before it), the producers' copies
    // have all landed (the MMAs that consumed them completed before `done`), and no block exits while
    // the other may still touch it. Then warp 1 of each block frees the pair's columns.
    __syncwarp();  // barrier.cluster is .aligned: each warp arrives converged
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    if (warp == 1) {
        tcgen05_fence_after_thread_sync();
        tmem_dealloc_2sm<BN>(tmem);
    }
    // ANCHOR_END: teardown
}
// ANCHOR_END: kernel
