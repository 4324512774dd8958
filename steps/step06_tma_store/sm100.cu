// Step 06 · tma_store, Blackwell (sm_100a): C leaves through shared memory and the copy engine.
//
// Assembled for sm_100a by the tests, but not run by this project: we have no Blackwell GPU.
//
// Step 05's epilogue stored C straight from registers: each thread wrote 64 bytes of its own row, so
// one store instruction of a warp touched 32 rows, 32 different lines of global memory, 16 bytes in
// each. Here the warps first write their bf16 results into shared memory, in 64-column boxes laid out
// with the same 128-byte swizzle the loads use, and one thread per warp then hands each box to the
// TMA, which writes whole 128-byte lines of C and clips whatever lies outside C.
//
// Shared memory is written with ordinary 16-byte stores. A warp's 16-byte store is served 8 threads
// at a time; those 8 threads hold 8 consecutive rows at the same columns, which the swizzle puts in 8
// different 16-byte positions, covering each of the 32 banks once: no conflict. (Without the swizzle
// the 8 rows, 128 bytes apart, would all hit the same four banks.) The Hopper twin uses stmatrix
// because wgmma leaves its accumulators in stmatrix's 8×8 fragment layout; tcgen05.ld's 32x32b shape
// gives every thread a run of its own row instead, which a plain store writes just as well.
//
// The Blackwell texts measured no gain from this step alone (the main loop, still unpipelined, is the
// bottleneck). What it buys is an asynchronous epilogue: once the store is issued, the threads could
// go on with other work, which step 09 will use.
//
// A TMA store needs C's rows to be a multiple of 16 bytes apart (N % 8 == 0). For other N the host
// passes tma_store = 0 and the kernel stores from registers as step 05 did.
//
// Everything else (barriers, TMEM, swizzled loads, MMA loop) is step 05's.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "tcgen05.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset

// Set by step.rs (the Rust side owns every encoding; see shared/encoding/mod.rs).
#ifndef BM
#error "BM (rows of C per block, the M of the MMA) is set by step.rs"
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
#error "IDESC (tcgen05.mma instruction descriptor: bf16 x bf16 -> fp32, K-major, BM x BN) is set by step.rs"
#endif

enum : int {
    MMA_K = 16,                          // K of one tcgen05.mma.kind::f16: 16 bf16 = 32 bytes
    A_TILE_BYTES = BM * BK * 2,          // one BM×BK bf16 tile of A
    B_TILE_BYTES = BN * BK * 2,          // one BN×BK bf16 tile of B
    TILE_BYTES = A_TILE_BYTES + B_TILE_BYTES,  // what the TMA delivers per K slice
    BOX_COLS = 64,                       // columns of C per TMA store box: one 128-byte swizzled row
    BOX_BYTES = 32 * BOX_COLS * 2,       // a box is one warp's 32 rows: 4 KiB
};
// One CTA, one MMA shape: M = 128 puts row i of the tile in TMEM lane i (all 128 lanes), and four
// warps are exactly what it takes to read 128 lanes back (each warp reaches 32 of them).
static_assert(BM == 128 && THREADS == 128, "M = 128 tiles are read back by one warpgroup");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "an M = 128 MMA has N <= 256; the epilogue reads 32 columns");
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
// The grid has one block per BM×BN tile of C: blockIdx.x along N, blockIdx.y along M. The tensor maps
// (shared/encoding/tma.rs) cover A (M×K) and B (N×K); boxes that hang over an edge arrive zero-filled, so a
// ragged tile or a K that is not a multiple of BK only adds zeros to the accumulators.
// `c_map` (32 rows × 64 columns boxes of C, 128-byte swizzle) is used only when tma_store != 0; the
// host sets tma_store = (N % 8 == 0) and otherwise passes a map that is never read.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              const __grid_constant__ TensorMap c_map,
                                                              bf16* __restrict__ C, int M, int N, int K,
                                                              int tma_store) {
    // Dynamic shared memory: the A tile, the B tile, then the staging area for C (BM×BN bf16: BN/64
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

    // The two barriers of the K loop, and the word tcgen05.alloc writes the TMEM address to.
    __shared__ u64 loaded;    // completes when the TMA has delivered both tiles of a K slice
    __shared__ u64 computed;  // completes when the MMAs of a K slice have finished
    __shared__ u32 tmem_slot;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int k_slices = (K + BK - 1) / BK;  // K >= 8, so at least one

    // ANCHOR: tmem_alloc
    // Set-up, by two different warps at once.
    //  - Warp 0 (all 32 threads: the instruction is warp-wide) allocates BN TMEM columns, one fp32
    //    accumulator column per column of the tile, all 128 lanes, then gives up its right to
    //    allocate again: this CTA needs no more TMEM. Warp 0 is also the warp that frees the columns.
    //  - One thread of warp 1 initialises the barriers: `loaded` expects one arrival (the thread that
    //    issues the copies, with the byte count) and `computed` one (the tcgen05.commit). The fence
    //    makes the initialised barriers visible to the copy engine and the tensor cores.
    if (warp == 0) {
        tmem_alloc<BN>(&tmem_slot);
        tmem_relinquish_alloc_permit();
    } else if (warp == 1 && lane == 0) {
        mbarrier_init(&loaded, 1);
        mbarrier_init(&computed, 1);
        mbarrier_init_fence();
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        if (tma_store) tma_prefetch_map(&c_map);
    }
    // The allocation is a tcgen05 operation whose result (the address in tmem_slot) other warps use:
    // fence before the barrier on the allocating side, after it on every side.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;  // lane 0, first allocated column
    // ANCHOR_END: tmem_alloc

    // The main loop runs in thread 0 alone: it is the only thread with work to do until the
    // accumulators are complete, and the other 127 go straight to the barrier after the loop. It is
    // also the only thread that waits on the two barriers, once per phase and in order. That matters:
    // a waiter names the phase it waits for by its parity alone, so a thread that fell two phases
    // behind would mistake phase s + 2 for phase s and wait for a phase that never comes.
    if (threadIdx.x == 0) {
        // Phase parity: each barrier completes one phase per K slice (parity 0, 1, 0, ...), so one
        // parity serves both and flips once per slice.
        u32 phase = 0;
        for (int slice = 0; slice < k_slices; ++slice) {
            const int k0 = slice * BK;

            // ANCHOR: tma_load
            // Announce the bytes this phase of `loaded` must see, then start the two copies. The A box is
            // BK elements × BM rows at (k0, m0) of A, with the 128-byte swizzle (set in the tensor map,
            // shared/encoding/tma.rs); it lands as BM swizzled 128-byte rows. B likewise. The byte count is
            // always the full boxes: parts outside the matrix arrive as zeros, and count.
            mbarrier_arrive_expect_bytes(&loaded, TILE_BYTES);
            tma_load_2d(a_tile, &a_map, &loaded, k0, m0);
            tma_load_2d(b_tile, &b_map, &loaded, k0, n0);
            // The phase completes when this thread has arrived and all TILE_BYTES have landed.
            mbarrier_wait(&loaded, phase);
            // ANCHOR_END: tma_load

            // ANCHOR: mma
            // Order the MMAs below after the wait above (the tiles are in shared memory now).
            tcgen05_fence_after_thread_sync();
            // BK/16 MMAs: D[tmem] (+)= A[:, 16k .. 16k+15] · B[:, 16k .. 16k+15]ᵀ. The descriptors are the
            // Rust-built templates plus the start address of the slice. The very first MMA of the tile
            // overwrites D (TMEM is not zeroed by the allocation); all the others accumulate. Then a
            // commit: `computed` receives its arrival when all of these MMAs have completed.
            #pragma unroll
            for (int k = 0; k < BK / MMA_K; ++k) {
                const u64 a_desc = umma_descriptor(A_DESC, smem_address(a_tile) + k_slice_offset(k));
                const u64 b_desc = umma_descriptor(B_DESC, smem_address(b_tile) + k_slice_offset(k));
                umma_f16(tmem, a_desc, b_desc, IDESC, slice > 0 || k > 0);
            }
            umma_commit(&computed);
            // The next slice's copies must not overwrite a_tile and b_tile while the tensor cores still
            // read them; after the last slice this is the wait for the finished accumulators.
            mbarrier_wait(&computed, phase);
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
    // the fences order them before the barrier and the dealloc after it. Warp 0 allocated, so warp 0
    // frees, all 32 threads together.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (warp == 0) {
        tcgen05_fence_after_thread_sync();
        tmem_dealloc<BN>(tmem);
    }
}
// ANCHOR_END: kernel
