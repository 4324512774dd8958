// Exercise 05.1 · fill the gap.
// Step 05's Hopper kernel without the descriptor's step along K (the `descriptors` part). Until you
// write it, `exercise check 05.1` stops at NVRTC's error on the `____` line. The swizzle scatters the
// slice's chunks: does the step have to know about that?
//
// Step 05 · swizzle128 (Hopper, sm_90a): 128-byte TMA rows in the 128-byte swizzled layout.
//
// Step 04 fetched every K tile as 16-byte columns: the copy engine moved a 128×64 bf16 tile of A as
// 8 × 128 pieces of 16 bytes, and the tensor cores read it back as the no-swizzle ("interleaved")
// core-matrix layout. Here each row of the tile is fetched whole: a K tile of 64 bf16 is exactly 128
// bytes of one row of A, so one 2D box of BM rows × 128 bytes moves the tile in 128-byte rows, the
// size the memory system works in.
//
// Stored plainly, those 128-byte rows would put the eight rows of a core matrix (8 rows × 16 bytes, the
// unit the tensor cores read) 128 bytes apart, all in the same 4 of the 32 shared-memory banks, and
// wgmma could not even describe that layout. So the TMA writes them *swizzled*: in every group of 8
// rows (1024 bytes), the 16-byte chunk c of row r lands at chunk c ^ r. A core matrix is then spread
// over all 32 banks. wgmma is told the same thing in its descriptors (layout "128B swizzle", SBO =
// 1024 bytes from one group of 8 rows to the next) and applies the same XOR on its reads. Nothing else
// in the kernel knows about the swizzle.
//
// Where the speed comes from: step 04's core matrices were 128 contiguous bytes, so its wgmma reads
// had no bank conflicts either. What changes is the copy: the TMA walks a box in pieces of its
// innermost extent, so 16-byte columns meant eight times as many requests to L2 per tile as 128-byte
// rows, each bringing a whole 32-byte sector for 16 useful bytes. Step 04 was limited by L2 requests;
// the recorded Nsight Compute counters (chapter 05's evidence table) show far fewer here.
//
// Everything else is step 04: one mbarrier, one K tile in flight, a warpgroup of wgmmas, direct stores.
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory) is set by step.rs"
#endif
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (the occupancy the register budget is planned for) is set by step.rs"
#endif
#if !defined(A_DESC) || !defined(B_DESC)
#error "A_DESC and B_DESC (wgmma descriptor templates, start address 0) are computed in step.rs"
#endif

enum : int {
    THREADS = 128,                // one warpgroup
    HALVES = BM / 64,             // wgmma is 64 rows tall: the warpgroup computes BM / 64 of them
    SWIZZLE_BYTES = 128,          // one swizzled row: the whole K tile of one row, 64 bf16
    A_TILE_BYTES = BM * SWIZZLE_BYTES,
    B_TILE_BYTES = BN * SWIZZLE_BYTES,
};
static_assert(BM % 64 == 0 && HALVES >= 1 && HALVES <= 2, "one warpgroup computes 64 or 128 rows");
static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma n is one of 64, 128, 256 here");
static_assert(BK * 2 == SWIZZLE_BYTES, "the K tile is one 128-byte swizzled row per matrix row");
// The swizzle pattern repeats every 1024 bytes and is computed from address bits, so every tile must
// start on a 1024-byte boundary: the A tile is BM × 128 bytes, a multiple of 1024 when BM % 8 == 0.
static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "tiles keep 1024-byte alignment");

// ANCHOR: kernel
// __launch_bounds__(128, BLOCKS_PER_SM): with one K tile in flight per block, the tensor cores idle while
// a block waits for its next tile unless another block on the same SM has one ready. Three blocks per
// SM cap a thread at 65536 / (3 · 128) = 170, in practice 168 registers
// (they are allocated in groups of 8): 128 accumulators plus addressing fit.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(const __grid_constant__ TensorMap a_map,
                                                                         const __grid_constant__ TensorMap b_map,
                                                                         bf16* __restrict__ C, int M, int N, int K) {
    // Dynamic shared memory: A tile, B tile, then the barrier. The swizzled tiles need 1024-byte
    // alignment; step.rs asks for 1 KiB extra so the start can be rounded up here.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    bf16* a_tile = reinterpret_cast<bf16*>(smem);
    bf16* b_tile = reinterpret_cast<bf16*>(smem + A_TILE_BYTES);
    u64* loaded = reinterpret_cast<u64*>(smem + A_TILE_BYTES + B_TILE_BYTES);

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        mbarrier_init(loaded, 1);  // one arrival per phase: the thread that issues the copies
        mbarrier_init_fence();
    }
    __syncthreads();

    // ANCHOR: descriptors
    // The descriptor templates from step.rs hold the layout (128B swizzle, SBO = 8 rows × 128 bytes =
    // 1024); only the start address (bits 0..13, in 16-byte units) is added here.
    //
    // Inside a swizzled 128-byte row, the k16 slice s starts at byte 32·s: a plain +32 bytes per slice
    // (+2 in the descriptor). That is right even though the slice's data are scattered by the XOR: the
    // hardware applies the swizzle to the *final* address of every 16-byte chunk it reads, (start +
    // row·128 + chunk·16) with bits 4..6 XORed by bits 7..9. Because each tile starts 1024-byte aligned,
    // bits 7..9 of that address are exactly the row within its group of eight, as they were when the
    // TMA wrote the chunk; and +32 only touches bits 5..6, below them. So the MMA finds each chunk where
    // the TMA put it. The lower 64 rows of A start 64 · 128 bytes further on, also 1024-byte aligned.
    const u64 a_desc0 = A_DESC | ((smem_address(a_tile) & 0x3FFFF) >> 4);
    const u64 b_desc0 = B_DESC | ((smem_address(b_tile) & 0x3FFFF) >> 4);
    // TODO(exercise 05.1): how many bytes further along a swizzled 128-byte row does k16 slice s
    // start? (Bytes, not descriptor units: the lambdas below shift by 4.)
    constexpr int SLICE_BYTES = ____;
    auto a_desc = [&](int half, int slice) {
        return a_desc0 + ((half * 64 * SWIZZLE_BYTES + slice * SLICE_BYTES) >> 4);
    };
    auto b_desc = [&](int slice) {
        return b_desc0 + ((slice * SLICE_BYTES) >> 4);
    };
    // ANCHOR_END: descriptors

    // The block's BM×BN tile of C: HALVES wgmma tiles of 64×BN, BN/2 fp32 per thread each.
    float acc[HALVES][BN / 2];

    const int k_tiles = (K + BK - 1) / BK;
    u32 phase = 0;
    for (int t = 0; t < k_tiles; ++t) {
        // ANCHOR: tma_load
        // One thread asks the TMA for the tile: one 2D box each of A and B, BM (BN) rows × 64 bf16, at
        // (t·BK, m0). Parts past M, N or K arrive as zeros and count as bytes all the same.
        if (tid == 0) {
            mbarrier_arrive_expect_bytes(loaded, A_TILE_BYTES + B_TILE_BYTES);
            tma_load_2d(a_tile, &a_map, loaded, t * BK, m0);
            tma_load_2d(b_tile, &b_map, loaded, t * BK, n0);
        }
        // Everyone waits for the tile's bytes; the barrier's parity flips with every tile.
        mbarrier_wait(loaded, phase);
        phase ^= 1;
        // ANCHOR_END: tma_load

        // ANCHOR: mma
        // BK/16 slices × HALVES wgmmas, issued back to back as one group; the first slice of the first
        // tile overwrites the accumulators, everything after adds.
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) wgmma_fence_operands(acc[h]);
        wgmma_fence();
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            #pragma unroll
            for (int h = 0; h < HALVES; ++h) {
                Wgmma<BN>::mma(acc[h], a_desc(h, s), b_desc(s), (t > 0 || s > 0) ? 1 : 0);
            }
        }
        wgmma_commit();
        // Single stage: the next tile goes into the same shared memory, so the MMAs must have finished
        // reading it, in every warp, before thread 0 starts the next copy.
        wgmma_wait<0>();
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) wgmma_fence_operands(acc[h]);
        __syncthreads();
        // ANCHOR_END: mma
    }

    // ANCHOR: epilogue
    // Registers -> C, as bf16, straight from the wgmma fragment (wgmma.cuh): each thread holds pairs of
    // neighbouring columns, so a pair goes out as one 4-byte store when it is aligned (N even) and
    // inside C; otherwise element by element. Rows and columns past M and N are skipped.
    const WgmmaFragment frag(tid);
    const bool pairs_ok = (N % 2) == 0;
    #pragma unroll
    for (int h = 0; h < HALVES; ++h) {
        #pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = n0 + frag.column + 8 * j;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = m0 + 64 * h + frag.row + 8 * down;
                const float lo = acc[h][4 * j + 2 * down], hi = acc[h][4 * j + 2 * down + 1];
                if (row >= M || col >= N) continue;
                bf16* dst = C + (i64)row * N + col;
                if (pairs_ok) {
                    *reinterpret_cast<u32*>(dst) = pack_bf16x2(lo, hi);
                } else {
                    dst[0] = float_to_bf16(lo);
                    if (col + 1 < N) dst[1] = float_to_bf16(hi);
                }
            }
        }
    }
    // ANCHOR_END: epilogue
}
// ANCHOR_END: kernel
