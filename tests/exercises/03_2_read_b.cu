// Exercise 03.2 · fill the gap, solved.
// Bs is stored transposed, Bs[buf][k][n]: this thread's TN columns start at tx·TN, four floats per
// float4, 16-byte aligned because TN is a multiple of 4 and the array is __align__(16).
//
// Step 03 · register_tiling: each thread computes an 8×8 tile of C held in registers.
//
// Step 02 did two shared-memory loads (As[ty][kk] and Bs[tx][kk]) for every multiply-add, so the
// shared-memory pipe, not the FMA units, set the pace. Here each thread owns a TM×TN = 8×8 tile of C.
// For every k it reads 8 values of A and 8 values of B from shared memory into registers and does
// all 8×8 = 64 multiply-adds between them: 16 values loaded feed 64 FMAs, where 2 fed 1 before. One
// thread now does the work of 64, so a 128×128 tile of C needs only 256 threads, and each block
// reuses every value it copies from global memory 128 times instead of 32.
//
// Three supporting changes make the register tile pay:
//  - the tiles are stored transposed (As[k][m], Bs[k][n]) so a thread's 8 values for one k are
//    contiguous and arrive as two 128-bit loads;
//  - global loads are 16 bytes (8 bf16 along K) per thread, straight into registers;
//  - shared memory is double-buffered: the next slice is fetched while the current one is consumed.
#include "common.cuh"

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K slice held in shared memory) is set by step.rs"
#endif
#ifndef TM
#error "TM (rows of the per-thread register tile) is set by step.rs"
#endif
#ifndef TN
#error "TN (columns of the per-thread register tile) is set by step.rs"
#endif
#ifndef THREADS
#error "THREADS (threads per block) is set by step.rs"
#endif

// The block's BM×BN tile is cut into TM×TN thread tiles, one per thread.
enum : int {
    THREADS_M = BM / TM,  // thread tiles down the block tile
    THREADS_N = BN / TN,  // thread tiles across it
};
static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must cover the block tile exactly");
static_assert(THREADS_M * THREADS_N == THREADS, "one thread per TM×TN tile of C");
// Register-tile reads are float4 (4 values of one k); stores of C are 16 bytes (8 bf16).
static_assert(TM % 4 == 0 && TN % 8 == 0, "TM must be a multiple of 4 and TN a multiple of 8");
// A warp covers 4 thread tiles down by 8 across (see "Who computes what" below).
static_assert(THREADS_N % 8 == 0 && THREADS_M % 4 == 0, "the warp layout needs 8 | BN/TN and 4 | BM/TM");
// Each thread stages exactly one 16-byte piece (8 bf16 along K) of A and one of B per slice.
static_assert(BK % 8 == 0, "slices are made of 8-element pieces");
static_assert(BM * (BK / 8) == THREADS && BN * (BK / 8) == THREADS, "one piece of A and one of B per thread");
// The thread that stages a piece owns one row; a warp must not straddle two pieces of K (see below).
static_assert(BM % 32 == 0 && BN % 32 == 0, "a warp stages 32 consecutive rows");

// ANCHOR: kernel
// __launch_bounds__(THREADS, 2) promises at most THREADS threads per block and asks for two blocks per
// SM, which caps the compiler at 65536 / (2 × 256) = 128 registers per thread: 64 accumulators, 16
// operands, 8 staging words and the addresses fit, and 16 warps per SM hide each other's latency.
extern "C" __global__ __launch_bounds__(THREADS, 2) void gemm(const bf16* __restrict__ A,
                                                               const bf16* __restrict__ B,
                                                               bf16* __restrict__ C, int M, int N, int K) {
    // Tiles in fp32, transposed: As[buf][k][m] = A[block_row + m][k0 + k], Bs[buf][k][n] likewise.
    // Two buffers of each: while the block computes on one, the next slice is written into the other.
    // 2 × 2 × 16 × 128 × 4 bytes = 32 KiB for the default sizes, so two blocks fit on one SM.
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;

    // Who computes what. Thread (ty, tx) owns rows ty*TM .. ty*TM+TM-1 and columns tx*TN .. tx*TN+TN-1
    // of the block tile. The 32 lanes of a warp are laid out 4 tiles down by 8 across (a 32×64 patch
    // of C), not 2 down by 16 across, so a warp's read of Bs touches 8 float4s 32 bytes apart and its
    // read of As 4 float4s instead of 16. Fewer distinct addresses, fewer shared-memory wavefronts: but
    // the hardware serves 128-bit loads a quarter-warp at a time, and the recorded counters (chapter
    // 03's evidence table) show shared memory, not the FMAs, still sets this kernel's pace.
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int tx = (warp % (THREADS_N / 8)) * 8 + lane % 8;
    const int ty = (warp / (THREADS_N / 8)) * 4 + lane / 8;

    // Who loads what. Each thread fetches one 16-byte piece of A (8 bf16 of one row, along K) and
    // one of B per slice: row a_row of the A tile, elements a_k .. a_k+7 of the slice. The rows run
    // fastest with tid, so a warp fetches 32 consecutive rows at the same k: writing them transposed
    // into shared memory (As[a_k + e][a_row]) then touches 32 consecutive floats, one per bank, with
    // no conflict and no padding. The price: a warp uses half of each 32-byte sector it reads; the
    // other half is read by threads tid + BM (another warp) at the same point of the loop, and is
    // normally found in L1 rather than fetched again.
    const int a_row = tid % BM;
    const int a_k = (tid / BM) * 8;
    const int b_row = tid % BN;
    const int b_k = (tid / BN) * 8;
    // K % 8 == 0 and rows start 16-byte aligned, so a piece is either wholly inside K or wholly past it.
    const bool a_row_in = block_row + a_row < M;
    const bool b_row_in = block_col + b_row < N;
    const bf16* a_src = A + (i64)(block_row + a_row) * K + a_k;
    const bf16* b_src = B + (i64)(block_col + b_row) * K + b_k;

    // ANCHOR: load_tile
    // Global -> registers: 8 bf16 of A and 8 of B, as one 16-byte load each. Out of range: zeros.
    uint4 a_stage, b_stage;
    auto load_tile = [&](int k0) {
        a_stage = make_uint4(0, 0, 0, 0);
        b_stage = make_uint4(0, 0, 0, 0);
        if (a_row_in && k0 + a_k < K) a_stage = *reinterpret_cast<const uint4*>(a_src + k0);
        if (b_row_in && k0 + b_k < K) b_stage = *reinterpret_cast<const uint4*>(b_src + k0);
    };
    // Registers -> shared memory, converted to fp32 and transposed: element e of the piece is k = a_k + e.
    auto store_tile = [&](int buf) {
        const u32 a_words[4] = {a_stage.x, a_stage.y, a_stage.z, a_stage.w};
        const u32 b_words[4] = {b_stage.x, b_stage.y, b_stage.z, b_stage.w};
        #pragma unroll
        for (int w = 0; w < 4; ++w) {
            As[buf][a_k + 2 * w][a_row] = bf16x2_low(a_words[w]);
            As[buf][a_k + 2 * w + 1][a_row] = bf16x2_high(a_words[w]);
            Bs[buf][b_k + 2 * w][b_row] = bf16x2_low(b_words[w]);
            Bs[buf][b_k + 2 * w + 1][b_row] = bf16x2_high(b_words[w]);
        }
    };
    // ANCHOR_END: load_tile

    // The thread's 8×8 tile of C, in 64 registers. Every index into acc, a and b below is a
    // compile-time constant (the loops are fully unrolled): an array indexed at run time would be
    // placed in local memory, which is as slow as global memory.
    float acc[TM][TN] = {};

    const int num_tiles = (K + BK - 1) / BK;
    load_tile(0);
    store_tile(0);
    __syncthreads();

    for (int t = 0; t < num_tiles; ++t) {
        const int cur = t & 1;
        const bool has_next = t + 1 < num_tiles;
        // Start fetching the next slice now; the loads are in flight while we compute on this one.
        if (has_next) load_tile((t + 1) * BK);

        // ANCHOR: register_tile
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            // TM values of A (a column of the thread tile) and TN values of B (a row of it) for this k,
            // each group of 4 in one 128-bit shared-memory load ...
            float a[TM], b[TN];
            #pragma unroll
            for (int q = 0; q < TM; q += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[cur][k][ty * TM + q]);
                a[q] = v.x; a[q + 1] = v.y; a[q + 2] = v.z; a[q + 3] = v.w;
            }
            #pragma unroll
            for (int q = 0; q < TN; q += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * TN + q]);
                b[q] = v.x; b[q + 1] = v.y; b[q + 2] = v.z; b[q + 3] = v.w;
            }
            // ... then their outer product: TM×TN FMAs, every operand already in a register.
            #pragma unroll
            for (int i = 0; i < TM; ++i) {
                #pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
        // ANCHOR_END: register_tile

        // The other buffer was last read in the previous iteration, before the barrier that ended it,
        // so it is free to overwrite. One barrier per slice then covers both hazards: nobody reads
        // the next slice before it is complete, and nobody overwrites this one while it is being read.
        if (has_next) store_tile(cur ^ 1);
        __syncthreads();
    }

    // ANCHOR: store
    // Registers -> C as bf16. A row of the thread tile is TN = 8 bf16 = 16 bytes. When it lies wholly
    // inside C and is 16-byte aligned (every row of C starts 16-byte aligned when N % 8 == 0, and col0
    // is a multiple of 8), it goes out as one 16-byte store; otherwise (the ragged right edge, or
    // N % 8 != 0) element by element.
    const int row0 = block_row + ty * TM;
    const int col0 = block_col + tx * TN;
    const bool vector_ok = (N % 8 == 0) && (col0 + TN <= N);
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + i;
        if (row >= M) break;
        bf16* dst = C + (i64)row * N + col0;
        if (vector_ok) {
            #pragma unroll
            for (int j = 0; j < TN; j += 8) {
                uint4 packed;
                packed.x = pack_bf16x2(acc[i][j + 0], acc[i][j + 1]);
                packed.y = pack_bf16x2(acc[i][j + 2], acc[i][j + 3]);
                packed.z = pack_bf16x2(acc[i][j + 4], acc[i][j + 5]);
                packed.w = pack_bf16x2(acc[i][j + 6], acc[i][j + 7]);
                *reinterpret_cast<uint4*>(dst + j) = packed;
            }
        } else {
            #pragma unroll
            for (int j = 0; j < TN; ++j) {
                if (col0 + j < N) dst[j] = float_to_bf16(acc[i][j]);
            }
        }
    }
    // ANCHOR_END: store
}
// ANCHOR_END: kernel
