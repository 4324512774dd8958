// Alternative to step 08's sm80.cu: the Hopper twin's warp specialisation on sm_80, a producer warp and eight consumer warps around the same ring, full/empty mbarriers instead of the block barrier, no setmaxnreg.
// What the recorded loop says: recorded at fa1f7154c5 on the H200: 0.401× the step at 4096³ (slower).
//
// Step 08 · the ring, warp-specialised (an alternative of the sm80 twin; compute capability 8.0+).
//
// The Hopper twin's design in sm80 terms: one producer warp fills a ring of STAGES stages, eight
// consumer warps (4 × 2 of 64×64, step 07's tile) compute, and each stage has a `full` and an `empty`
// mbarrier, waited on with parities as in the Hopper twin. What changes below sm_90:
//   - no TMA: the producer's 32 lanes issue the stage's 3072 16-byte copies themselves (96 each), and
//     each lane's `cp.async.mbarrier.arrive.noinc` arrives on `full` when its copies have landed
//     (`full` counts 32 arrivals and no bytes: there is no expect_tx);
//   - no `try_wait`: waiters poll `mbarrier.test_wait`;
//   - no `setmaxnreg` (sm_90a only; ptxas refuses it for sm_80/86/89/90/120): every warp keeps what
//     `__launch_bounds__(288, 1)` gives all. That is 168, not 65536 / 288: registers are split among
//     an SM's four schedulers (16384 each), and nine warps put three on one, 16384 / 96 → 168. The
//     producer holds a consumer's share it does not use, and the consumers have 168 where the ring of
//     `sm80.cu` has 222–255: too few to keep a 64×64 warp tile's fragments in flight.
// What it buys: no block barrier. A consumer warp waits only for the stage it needs and releases it on
// its own (one arrival per warp on `empty`), so warps drift apart and hide each other's waits.
#include "common.cuh"
#include "cp_async.cuh"
#include "mbarrier_sm80.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory) is set by step.rs"
#endif
#ifndef STAGES
#error "STAGES (K tiles in the ring) is set by step.rs"
#endif

enum : int {
    WARPS_M = BM / 64,            // consumer warps along M: 4 for the 256-row tile
    WARPS_N = 2,                  // consumer warps along N
    CONSUMER_THREADS = 32 * WARPS_M * WARPS_N,
    THREADS = 32 + CONSUMER_THREADS,  // the producer warp first
    WM = BM / WARPS_M,
    WN = BN / WARPS_N,
    M_TILES = WM / 16,
    N_TILES = WN / 8,
    ROW_BYTES = 128,
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES,
    CONSUMER_BARRIER = 1,         // named barrier of the consumer warps (0 is __syncthreads)
};
static_assert(BK * 2 == ROW_BYTES, "the 128-byte swizzle works on rows of 128 bytes: BK = 64");
static_assert(BM * BK / 8 % 32 == 0 && BN * BK / 8 % 32 == 0, "every producer lane copies the same count");
static_assert(BN % 64 == 0 && BM * BN * 2 <= STAGES * STAGE_BYTES, "C's tile fits in the operands' place");
static_assert(STAGES >= 2, "a ring has a stage being filled and a stage being read");

// ANCHOR: load
// The producer warp's copy of a K tile: step 07's, with 32 lanes doing what 256 threads did.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 tile, const bf16* __restrict__ matrix, int rows, int K, int row0,
                                          int k0, int lane) {
    #pragma unroll 4
    for (int i = 0; i < ROWS * BK / 8 / 32; ++i) {
        const int piece = lane + i * 32;
        const int row = piece / 8, chunk = piece % 8;
        const int global_row = row0 + row, k = k0 + 8 * chunk;
        const bool inside = global_row < rows && k < K;
        const bf16* src = inside ? matrix + (i64)global_row * K + k : matrix;
        cp_async_16(tile + swizzle_128b_offset(row, chunk), src, inside);
    }
}
// ANCHOR_END: load

// The consumer warps wait for each other (named barrier 1; the producer warp is not counted).
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync %0, %1;" ::"r"((int)CONSUMER_BARRIER), "r"((int)CONSUMER_THREADS) : "memory");
}

// ANCHOR: kernel
extern "C" __global__ __launch_bounds__(THREADS, 1) void gemm(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                                              bf16* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 ring = smem_address(smem);
    // The barriers after the ring: full[s], then empty[s].
    u64* full = reinterpret_cast<u64*>(smem + STAGES * STAGE_BYTES);
    u64* empty = full + STAGES;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;
    const int k_tiles = (K + BK - 1) / BK;

    // ANCHOR: barriers
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 32);                    // every producer lane's noinc arrival
            mbarrier_init(&empty[s], WARPS_M * WARPS_N);   // one arrival per consumer warp
        }
    }
    __syncthreads();
    // ANCHOR_END: barriers

    if (warp == 0) {
        // ANCHOR: producer
        // Before filling stage s for round n the producer waits for phase n − 1 of empty[s]: for the
        // first round that is the phase before the first, which a fresh barrier counts as complete.
        for (int t = 0; t < k_tiles; ++t) {
            const int stage = t % STAGES;
            mbarrier_wait_polling(&empty[stage], ((t / STAGES) & 1) ^ 1);
            const u32 a_tile = ring + stage * STAGE_BYTES;
            load_tile<BM>(a_tile, A, M, K, m0, t * BK, lane);
            load_tile<BN>(a_tile + A_TILE_BYTES, B, N, K, n0, t * BK, lane);
            cp_async_arrive_noinc(&full[stage]);
        }
        // ANCHOR_END: producer
        return;
    }

    const int consumer = warp - 1;
    const int ctid = tid - 32;
    const int warp_row = consumer / WARPS_N, warp_column = consumer % WARPS_N;
    const int a_row = warp_row * WM + (lane & 15);
    const int b_row = warp_column * WN + ((lane >> 4) << 3) + (lane & 7);
    auto a_lane = [&](u32 a_tile, int i, int s) {
        return a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4));
    };
    auto b_lane = [&](u32 b_tile, int j, int s) {
        return b_tile + swizzle_128b_offset(b_row + 16 * j, 2 * s + ((lane >> 3) & 1));
    };

    float acc[M_TILES][N_TILES][4];
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i)
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // ANCHOR: consumer
    for (int t = 0; t < k_tiles; ++t) {
        const int stage = t % STAGES;
        mbarrier_wait_polling(&full[stage], (t / STAGES) & 1);
        const u32 a_tile = ring + stage * STAGE_BYTES;
        const u32 b_tile = a_tile + A_TILE_BYTES;
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            u32 a[M_TILES][4], b[N_TILES / 2][4];
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) ldmatrix_x4(a[i], a_lane(a_tile, i, s));
            #pragma unroll
            for (int j = 0; j < N_TILES / 2; ++j) ldmatrix_x4(b[j], b_lane(b_tile, j, s));
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i)
                #pragma unroll
                for (int j = 0; j < N_TILES; ++j)
                    mma_bf16_16816(acc[i][j], a[i], b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]);
        }
        // Every lane's ldmatrix of this stage has returned (the mma.syncs consumed them): the warp
        // gives the stage back, once.
        __syncwarp();
        if (lane == 0) mbarrier_arrive(&empty[stage]);
    }
    // ANCHOR_END: consumer
    // Every stage was waited full, so every copy has landed; the consumers wait for each other before
    // C is staged over the ring (the producer has left: a named barrier of the consumers only).
    consumers_sync();

    const MmaFragment frag(lane);
    if (N % 8 == 0) {
        const u32 staging = ring;
        auto staged = [&](int row, int col) {
            return staging + (col / 64) * (BM * ROW_BYTES) + swizzle_128b_offset(row, (col % 64) / 8) +
                   2 * (col % 8);
        };
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j) {
                const int col = warp_column * WN + 8 * j + frag.column;
                #pragma unroll
                for (int down = 0; down < 2; ++down) {
                    const int row = warp_row * WM + 16 * i + frag.row + 8 * down;
                    st_shared_b32(staged(row, col), pack_bf16x2(acc[i][j][2 * down], acc[i][j][2 * down + 1]));
                }
            }
        }
        consumers_sync();
        #pragma unroll
        for (int i = 0; i < BM * BN / 8 / CONSUMER_THREADS; ++i) {
            const int piece = ctid + i * CONSUMER_THREADS;
            const int row = piece / (BN / 8), chunk = piece % (BN / 8);
            const int global_row = m0 + row, col = n0 + 8 * chunk;
            if (global_row >= M || col >= N) continue;
            const u32 address = staging + (chunk / 8) * (BM * ROW_BYTES) + swizzle_128b_offset(row, chunk % 8);
            st_global_16(C + (i64)global_row * N + col, ld_shared_16(address));
        }
        return;
    }
    const bool pairs_ok = (N % 2) == 0;
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            const int col = n0 + warp_column * WN + 8 * j + frag.column;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = m0 + warp_row * WM + 16 * i + frag.row + 8 * down;
                const float lo = acc[i][j][2 * down], hi = acc[i][j][2 * down + 1];
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
}
// ANCHOR_END: kernel
