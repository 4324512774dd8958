// Step 07 · multicast, Blackwell (sm_100a): two SMs, one MMA.
//
// Assembled for sm_100a by the tests, but not run by this project: we have no Blackwell GPU.
//
// Until now every block loaded its own A tile and its own B tile, although the block below it in the
// grid (the next 128 rows of C, the same columns) loads the very same B tile. Here the blocks come in
// clusters of two along M, and the two blocks of a cluster (a *pair*) compute one 256×BN tile of C
// with a single 2-SM MMA, `tcgen05.mma.cta_group::2`, M = 256:
//   - each block loads its own 128 rows of A, as before;
//   - each block loads only HALF of the B tile (BN/2 rows): the MMA reads the other half from the
//     peer's shared memory. B crosses the chip once per pair and sits in shared memory once;
//   - one thread of the leader (the block of even rank) issues the MMAs for both SMs; each block
//     receives its own 128 rows of the result in its own TMEM, laid out exactly as in step 06;
//   - both blocks' copies report to the leader's `loaded` barrier (the leader waits on it alone), and
//     the leader's commit is multicast to the `computed` barrier of both blocks. The peer's wait on
//     `computed` hands TMEM across blocks (the leader's MMAs wrote it, the peer's warps read it), so it
//     takes the PTX ISA's cluster-scope form (mbarrier_sm100.cuh).
// On Hopper the same pair would multicast B (one load written into both blocks, two copies in shared
// memory); the 2-SM MMA goes one better and keeps one copy, split. So the "multicast" of this step is
// that of the commit, and of the peer's bytes arriving on the leader's barrier.
//
// The epilogue is step 06's, with the tile now 128 × 256 per block.
//
// Every object in shared memory sits at the same offset in both blocks (same code, same layout): the
// MMA, the copies and the commit name a peer's memory by this block's offset. The cluster is
// synchronised after the barriers are initialised (no copy may arrive on a barrier the leader has not
// initialised yet) and before TMEM is freed (no block may free its columns while the other may still
// use them).
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

enum : int {
    MMA_K = 16,                          // K of one tcgen05.mma.kind::f16: 16 bf16 = 32 bytes
    A_TILE_BYTES = BM * BK * 2,          // this block's BM×BK bf16 tile of A
    B_HALF_ROWS = BN / 2,                // rows of B each block of the pair holds
    B_TILE_BYTES = B_HALF_ROWS * BK * 2, // this block's half of the BN×BK tile of B
    TILE_BYTES = A_TILE_BYTES + B_TILE_BYTES,  // what the TMA delivers to one block per K slice
    PAIR_TILE_BYTES = 2 * TILE_BYTES,    // ... and to the pair: what the leader's `loaded` expects
    BOX_COLS = 64,                       // columns of C per TMA store box: one 128-byte swizzled row
    BOX_BYTES = 32 * BOX_COLS * 2,       // a box is one warp's 32 rows: 4 KiB
};
// One pair, one MMA shape: M = 256 puts row i of each block's half in lane i of that block's TMEM
// (all 128 lanes), and four warps are exactly what it takes to read 128 lanes back.
static_assert(CLUSTER_M == 2, "a 2-SM MMA is issued for a pair of blocks: clusters of two along M");
static_assert(BM == 128 && THREADS == 128, "each block holds 128 rows of the M = 256 MMA, read back by one warpgroup");
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
// rounds the grid's y up to even; a block past the bottom of C loads zeros and stores nothing). The tensor maps (shared/encoding/tma.rs) cover A (M×K, boxes of BM rows)
// and B (N×K, boxes of BN/2 rows); boxes that hang over an edge arrive zero-filled, so a ragged tile
// or a K that is not a multiple of BK only adds zeros to the accumulators.
// `c_map` (32 rows × 64 columns boxes of C, 128-byte swizzle) is used only when tma_store != 0; the
// host sets tma_store = (N % 8 == 0) and otherwise passes a map that is never read.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, int M, int N, int K,
                                                              int tma_store) {
    // Dynamic shared memory: the A tile, the half B tile, then the staging area for C (BM×BN bf16: BN/64
    // boxes of 4 KiB per warp). The staging area has its own space rather than reusing the tiles, so
    // no thread ever writes memory the copy engine or the tensor cores also used. The host asks for
    // 1 KiB more than all that needs, so everything can start on a 1024-byte boundary whatever the
    // base of the window is (the 128-byte swizzle repeats every 1024 bytes, and the tiles and boxes
    // must start on a repeat).
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    bf16* a_tile = reinterpret_cast<bf16*>(smem);
    bf16* b_tile = reinterpret_cast<bf16*>(smem + A_TILE_BYTES);
    unsigned char* c_staging = smem + TILE_BYTES;

    // The two barriers of the K loop, and the word tcgen05.alloc writes the TMEM address to. Both
    // blocks have all three; the peer's `loaded` is never used, but it keeps the layouts identical.
    __shared__ u64 loaded;    // leader's: completes when the TMA has delivered the pair's tiles of a K slice
    __shared__ u64 computed;  // both blocks': completes when the pair's MMAs of a K slice have finished
    __shared__ u32 tmem_slot;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int k_slices = (K + BK - 1) / BK;  // K >= 8, so at least one

    // ANCHOR: pair
    // With a cluster of (1, 2, 1) the rank is blockIdx.y % 2: the leader holds rows m0 .. m0+127 of the
    // pair's 256, the peer the next 128. The leader's half of B is rows n0 .. n0+BN/2-1, the peer's the
    // rest; in TMEM, column j of D is row n0 + j of B in both blocks.
    const u32 rank = cluster_ctarank();
    const bool leader = rank == pair_leader_rank(rank);
    const int b_row = n0 + static_cast<int>(rank % 2) * B_HALF_ROWS;
    // The leader's `loaded`, as an address both blocks' copies can signal; and the two blocks the
    // leader's commits reach (bit r of the mask: rank r).
    const u32 pair_loaded = cluster_map_shared(&loaded, pair_leader_rank(rank));
    const u16 pair_mask = static_cast<u16>(0b11u << pair_leader_rank(rank));
    // ANCHOR_END: pair

    // ANCHOR: tmem_alloc
    // Set-up, by two different warps at once.
    //  - Warp 0 of each block (all 32 threads) allocates BN TMEM columns for the pair: the 2-SM
    //    allocation is made by the same warp of both blocks together, and gives both the same address.
    //  - One thread of warp 1 initialises the barriers: `loaded` expects one arrival (the leader's
    //    thread that announces the pair's bytes) and `computed` one (the leader's tcgen05.commit). The
    //    fence makes them visible to the copy engine and the tensor cores, of this SM and the peer's.
    if (warp == 0) {
        tmem_alloc_2sm<BN>(&tmem_slot);
        tmem_relinquish_alloc_permit_2sm();
    } else if (warp == 1 && lane == 0) {
        mbarrier_init(&loaded, 1);
        mbarrier_init(&computed, 1);
        mbarrier_init_fence();
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (tma_store) tma_prefetch_map(&c_map);
    }
    // The allocation is a tcgen05 operation whose result (the address in tmem_slot) other warps use:
    // fence before the barrier on the allocating side, after it on every side. The barrier is the
    // cluster's: after it both blocks' barriers are initialised, so the peer may signal the leader's.
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;  // lane 0, first allocated column
    // ANCHOR_END: tmem_alloc

    // The main loop runs in thread 0 of each block alone: the leader's loads, waits for the pair's
    // tiles, issues the MMAs and commits; the peer's only loads and waits. Each waits on its barriers
    // once per phase and in order. That matters: a waiter names the phase it waits for by its parity
    // alone, so a thread that fell two phases behind would mistake phase s + 2 for phase s.
    // Because thread 0 waits for every phase of `computed` in both blocks, the last commit's
    // arrival is in before the block goes on to exit: no producer tail is needed here (step 08).
    if (threadIdx.x == 0) {
        // Phase parity: each barrier completes one phase per K slice (parity 0, 1, 0, ...), so one
        // parity serves both and flips once per slice.
        u32 phase = 0;
        for (int slice = 0; slice < k_slices; ++slice) {
            const int k0 = slice * BK;

            // ANCHOR: tma_load
            // The leader announces the bytes this phase of its `loaded` must see: both blocks' tiles.
            // Then each block starts its two copies into its own shared memory, counted on the leader's
            // barrier. The A box is BK elements × BM rows at (k0, m0); the B box BK × BN/2 rows at
            // (k0, b_row): this block's half. A peer's bytes may land before the leader has announced
            // them; the phase still cannot complete before the leader's arrival, which it waits for.
            if (leader) mbarrier_arrive_expect_bytes(&loaded, PAIR_TILE_BYTES);
            tma_load_2d_2sm(a_tile, &a_map, pair_loaded, k0, m0);
            tma_load_2d_2sm(b_tile, &b_map, pair_loaded, k0, b_row);
            // ANCHOR_END: tma_load

            // ANCHOR: mma
            if (leader) {
                // The phase completes when the leader has arrived and all PAIR_TILE_BYTES have landed
                // in the two blocks. Order the MMAs below after that wait.
                mbarrier_wait_cta(&loaded, phase, "loaded");
                tcgen05_fence_after_thread_sync();
                // BK/16 MMAs of 256 × BN × 16 for the pair. The descriptors name this block's tiles;
                // the tensor cores find the peer's halves at the same offsets. The first MMA of the
                // tile overwrites D; the others accumulate. Then one commit, multicast: `computed`
                // of both blocks receives its arrival when these MMAs have completed on both SMs.
                #pragma unroll
                for (int k = 0; k < BK / MMA_K; ++k) {
                    const u64 a_desc = umma_descriptor(A_DESC, smem_address(a_tile) + k_slice_offset(k));
                    const u64 b_desc = umma_descriptor(B_DESC, smem_address(b_tile) + k_slice_offset(k));
                    umma_f16_2sm(tmem, a_desc, b_desc, IDESC, slice > 0 || k > 0);
                }
                umma_commit_2sm_multicast(&computed, pair_mask);
            }
            // In both blocks: the next slice's copies must not overwrite the tiles while the tensor
            // cores still read them; after the last slice this is the wait for the finished accumulators.
            // In the peer the commit comes from the other block: the PTX ISA's pattern is a
            // .relaxed.cluster wait, then fence::after_thread_sync (which the epilogue's barrier
            // below passes on to every warp with the fence pair around it).
            mbarrier_wait_relaxed_cluster(&computed, phase, "computed");
            tcgen05_fence_after_thread_sync();
            // ANCHOR_END: mma
            phase ^= 1;
        }
    }

    // ANCHOR: epilogue
    // Thread 0 has seen the last commit complete: the accumulators are final. The barrier passes that
    // on to every thread; the fences order the MMAs before it and every thread's TMEM loads after it.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    // Warp w reads TMEM lanes 32w .. 32w+31, rows 32w .. 32w+31 of the tile; lane t of the warp holds
    // row 32w + t. Each tcgen05.ld brings 32 columns of that row into the thread's registers; they are
    // converted to bf16 and written to the warp's boxes in shared memory: row t of a box is 128 bytes,
    // eight 16-byte chunks, and chunk c is stored at position c ^ (t % 8) (swizzle_128b_offset).
    const int row = m0 + warp * 32 + lane;
    const u32 warp_tmem = tmem_offset(tmem, warp * 32, 0);
    unsigned char* warp_boxes = c_staging + warp * (BN / BOX_COLS) * BOX_BYTES;
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
    // Each warp's boxes hold only its own 32 rows, so a warp needs no other warp: every thread fences
    // its shared-memory writes towards the async proxy (the copy engine reads through it), the warp
    // synchronises, and then lane 0 issues one TMA store per box at (n0 + 64j, m0 + 32w). The copy
    // engine skips the parts of a box outside C; boxes entirely outside are not issued at all.
    // The stores form one bulk group; lane 0 waits until the engine has finished reading the boxes
    // (not until C is written): shared memory must stay valid until then, and it is released when the
    // block exits. The writes to C themselves are complete, and visible, when the kernel is.
    if (tma_store) {
        fence_async_shared();
        __syncwarp();
        const int box_row = m0 + warp * 32;
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

    // Free TMEM: every warp's loads have completed (tcgen05.ld waited inside tmem_load_32x32b_x32);
    // the fences order them before the barrier and the dealloc after it. The barrier is the cluster's:
    // the pair frees its columns together, once neither block reads them any more, and no block exits
    // while its peer may still need it. Warp 0 of each block allocated, so warp 0 frees.
    __syncwarp();  // barrier.cluster is .aligned: each warp arrives converged (lane 0 stored alone)
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    if (warp == 0) {
        tcgen05_fence_after_thread_sync();
        tmem_dealloc_2sm<BN>(tmem);
    }
}
// ANCHOR_END: kernel
