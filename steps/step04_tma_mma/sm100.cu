// Step 04 · tma_mma, Blackwell (sm_100a): the copy engine loads the tiles, the tensor cores multiply
// them, and the accumulators live in Tensor Memory.
//
// Assembled for sm_100a by the tests, but not run by this project: we have no Blackwell GPU.
//
// Step 03 spent its threads on everything: loading A and B, converting and transposing them into
// shared memory, and 64 FMAs per thread per k. Here no thread moves an operand or multiplies
// anything. Per BK-deep slice of K:
//   - one thread asks the Tensor Memory Accelerator (TMA) to copy the A and B tiles from global into
//     shared memory; an mbarrier (`loaded`) counts the bytes as they land;
//   - the same thread issues BK/16 tcgen05.mma instructions, each a 128×BN×16 matrix product read
//     straight from shared memory and accumulated into Tensor Memory (TMEM), and commits them to a
//     second mbarrier (`computed`), which completes when they have finished;
//   - it waits for `computed` before the next slice's copies overwrite the tiles.
// The other 127 threads have nothing to do meanwhile and wait at a barrier. After the last slice the
// four warps copy the 128×BN fp32 accumulator tile out of TMEM into their registers (tcgen05.ld),
// convert it to bf16 and store it to C.
//
// The tiles must sit in shared memory in a layout the tensor cores understand. The unit is the core
// matrix: 8 rows × 16 bytes (8 bf16 along K), 128 contiguous bytes. Without swizzling, a K-major tile
// is a grid of core matrices; the descriptor of each operand says how far apart they are along M (or
// N), the "stride byte offset" (SBO), and along K, the "leading byte offset" (LBO). The host builds
// the TMA tensor maps so that one copy lays a tile out as BK/8 columns of 16 bytes, one after the
// other, each column BM rows tall: core matrices then sit 128 bytes apart down a column (SBO = 128)
// and BM·16 bytes apart across columns (LBO = BM·16). Step 05 replaces this layout by a swizzled one.
//
// This kernel is deliberately not pipelined: the TMA waits for the MMA and the MMA for the TMA, and
// the epilogue does not overlap anything. Steps 08 to 10 take those waits away one by one.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "tcgen05.cuh"

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
};
// One CTA, one MMA shape: M = 128 puts row i of the tile in TMEM lane i (all 128 lanes), and four
// warps are exactly what it takes to read 128 lanes back (each warp reaches 32 of them).
static_assert(BM == 128 && THREADS == 128, "M = 128 tiles are read back by one warpgroup");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "an M = 128 MMA has N <= 256; the epilogue reads 32 columns");
static_assert((BN & (BN - 1)) == 0, "TMEM is allocated in powers of two of columns: BN must be one");
static_assert(BK % MMA_K == 0 && BK % 8 == 0, "a K slice is a whole number of MMAs and of 16-byte columns");

// Byte offset, inside a tile of `rows` rows, of the k-th MMA_K-wide slice of K. In the 16-byte-column
// layout an MMA consumes two whole columns (32 bytes of K), each rows·16 bytes long.
// ANCHOR: k_slice
__device__ __forceinline__ u32 k_slice_offset(int k, int rows) {
    return static_cast<u32>(k * 2 * rows * 16);
}
// ANCHOR_END: k_slice

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
//
// Occupancy and TMEM. Each block allocates BN = 128 of the SM's 512 TMEM columns, so at most 4 blocks
// of this kernel can hold their accumulators on one SM at once. The tiles alone (33 KiB of shared
// memory, 44 registers a thread) would let 6 blocks in, and the 5th and 6th would wait in
// tcgen05.alloc. So the host asks for more dynamic shared memory than the tiles use, 45,671 bytes
// (step.rs, `sm100::smem_capping_tmem`): 5 blocks would need 5 × (45,671 + 1,024 reserved) bytes,
// more than the SM's 228 KiB, so at most 4 are resident: 4 × 128 = 512 columns.
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const __grid_constant__ TensorMap a_map,
                                                              const __grid_constant__ TensorMap b_map,
                                                              bf16* __restrict__ C, int M, int N, int K) {
    // Dynamic shared memory: the A tile, then the B tile. The host asks for 1 KiB more than the tiles
    // need, so the tiles can start on a 1024-byte boundary whatever the base of the window is (the
    // copy engine needs 128-byte alignment here, the swizzled layout of step 05 needs 1024).
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    bf16* a_tile = reinterpret_cast<bf16*>(smem);
    bf16* b_tile = reinterpret_cast<bf16*>(smem + A_TILE_BYTES);

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
            // 8 elements × BM rows × BK/8 columns of 16 bytes, at (0, m0, k0/8) of the map that views A
            // as 16-byte columns; it lands as the BK/8 columns one after another. B likewise. The byte
            // count is always the full boxes: parts outside the matrix arrive as zeros, and count.
            mbarrier_arrive_expect_bytes(&loaded, TILE_BYTES);
            tma_load_3d(a_tile, &a_map, &loaded, 0, m0, k0 / 8);
            tma_load_3d(b_tile, &b_map, &loaded, 0, n0, k0 / 8);
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
                const u64 a_desc = umma_descriptor(A_DESC, smem_address(a_tile) + k_slice_offset(k, BM));
                const u64 b_desc = umma_descriptor(B_DESC, smem_address(b_tile) + k_slice_offset(k, BN));
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
    // converted to bf16 and stored. A thread writes 64 contiguous bytes of its own row, so the 32
    // threads of a warp write to 32 different rows at once: correct, but poorly coalesced (step 06
    // fixes that by staging the tile in shared memory).
    const int row = m0 + warp * 32 + lane;
    const u32 warp_tmem = tmem_offset(tmem, warp * 32, 0);
    #pragma unroll 1
    for (int col = 0; col < BN; col += 32) {
        u32 acc[32];
        tmem_load_32x32b_x32(warp_tmem + col, acc);  // whole warp, returns with the values in acc
        u32 packed[16];
        #pragma unroll
        for (int i = 0; i < 16; ++i) {
            packed[i] = pack_bf16x2(__uint_as_float(acc[2 * i]), __uint_as_float(acc[2 * i + 1]));
        }
        store_row_piece(C, M, N, row, n0 + col, packed);
    }
    // ANCHOR_END: epilogue

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
