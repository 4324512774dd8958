// Step 05 · the 128-byte swizzle, applied by hand (the sm80 twin: any GPU of compute capability 8.0+).
//
// Step 04's tiles were 16-byte columns: a warp's 32 copies named 32 rows of one column, 32 different
// 128-byte lines of global memory, each touched for 16 bytes. Here a tile is what the matrix is, rows of
// 128 bytes (BK = 64 bf16): eight consecutive threads copy one whole row, so a warp's copies are four
// whole lines, and the L2 serves a quarter of the requests for the same bytes.
//
// Stored plainly, rows of 128 bytes would put the eight rows an ldmatrix phase reads (one 16-byte chunk
// of eight consecutive rows) in the same four banks: an 8-way conflict. So the tile is stored with the
// 128-byte XOR swizzle the Hopper twin asks the TMA for: chunk c of row r goes to chunk c ^ (r % 8)
// (swizzle_128b_offset, stmatrix.cuh). On Hopper the hardware applies it on both sides, the TMA writing and wgmma reading;
// here nothing does it for us: the writer (each cp.async destination) and the reader (each lane's
// ldmatrix address) apply the same function.
//
// Everything else is step 04's kernel: the same 128×128×64 tile, four warps of 64×64, ldmatrix.x4 and
// mma.sync, one K tile at a time, the same epilogue.
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
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
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (the occupancy the register budget is planned for) is set by step.rs"
#endif

enum : int {
    WARPS_M = 2,                  // warps along M
    WARPS_N = 2,                  // warps along N
    THREADS = 32 * WARPS_M * WARPS_N,
    WM = BM / WARPS_M,            // rows of C per warp
    WN = BN / WARPS_N,            // columns of C per warp
    M_TILES = WM / 16,            // mma tiles of 16 rows per warp
    N_TILES = WN / 8,             // mma tiles of 8 columns per warp
    ROW_BYTES = 128,              // one row of a tile: BK = 64 bf16, eight 16-byte chunks
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    A_PIECES = BM * BK / 8,       // 16-byte pieces per A tile
    B_PIECES = BN * BK / 8,
};
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp computes whole 16×16 pairs of mma tiles");
static_assert(BK * 2 == ROW_BYTES, "the 128-byte swizzle works on rows of 128 bytes: BK = 64");
static_assert(A_PIECES % THREADS == 0 && B_PIECES % THREADS == 0, "every thread copies the same count");

// ANCHOR: load
// Copies the K tile that starts at k0 as ROWS rows of 128 bytes, swizzled. Piece p is chunk p % 8 of
// row p / 8: eight consecutive threads copy one whole row, a warp four whole 128-byte lines. Each piece
// lands where the swizzle puts it. Pieces past the edge of the matrix arrive as zeros, as in step 04.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 tile, const bf16* __restrict__ matrix, int rows, int K, int row0,
                                          int k0, int tid) {
    #pragma unroll
    for (int i = 0; i < ROWS * BK / 8 / THREADS; ++i) {
        const int piece = tid + i * THREADS;
        const int row = piece / 8, chunk = piece % 8;
        const int global_row = row0 + row, k = k0 + 8 * chunk;
        const bool inside = global_row < rows && k < K;
        const bf16* src = inside ? matrix + (i64)global_row * K + k : matrix;
        cp_async_16(tile + swizzle_128b_offset(row, chunk), src, inside);
    }
}
// ANCHOR_END: load

// ANCHOR: kernel
// __launch_bounds__(128, BLOCKS_PER_SM): mma.sync takes its operands from registers, so besides the 128
// accumulators a thread holds one k16 slice's fragments of A (16 registers) and B (16); two blocks per
// SM leave it up to 255 registers, where the Hopper twin (operands read from shared memory) fit three.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(const bf16* __restrict__ A,
                                                                         const bf16* __restrict__ B,
                                                                         bf16* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 a_tile = smem_address(smem);
    const u32 b_tile = a_tile + A_TILE_BYTES;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warp_row = warp / WARPS_N, warp_column = warp % WARPS_N;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    // ANCHOR: addresses
    // Each lane's ldmatrix row, as in step 04, now in the swizzled tile: the reader applies the swizzle
    // the writer did. A: lane l names row l % 16 of a 16-row tile, chunk 2s + l / 16 of slice s. B: lane
    // l names row (l / 16) · 8 + l % 8 of a 16-row pair of tiles, chunk 2s + (l / 8) % 2. The eight lanes
    // of a phase read one chunk of eight consecutive rows, which the swizzle spreads over all 32 banks.
    const int a_row = warp_row * WM + (lane & 15);
    const int b_row = warp_column * WN + ((lane >> 4) << 3) + (lane & 7);
    auto a_lane = [&](int i, int s) {
        return a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4));
    };
    auto b_lane = [&](int j, int s) {
        return b_tile + swizzle_128b_offset(b_row + 16 * j, 2 * s + ((lane >> 3) & 1));
    };
    // ANCHOR_END: addresses

    float acc[M_TILES][N_TILES][4];
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i)
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    const int k_tiles = (K + BK - 1) / BK;
    for (int t = 0; t < k_tiles; ++t) {
        // ANCHOR: copy_and_wait
        load_tile<BM>(a_tile, A, M, K, m0, t * BK, tid);
        load_tile<BN>(b_tile, B, N, K, n0, t * BK, tid);
        cp_async_commit();
        // A thread's wait covers its own copies only; the barrier makes everyone's visible.
        cp_async_wait<0>();
        __syncthreads();
        // ANCHOR_END: copy_and_wait

        // ANCHOR: mma
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            // Slice s is chunks 2s and 2s + 1 of every row.
            u32 a[M_TILES][4], b[N_TILES / 2][4];
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                ldmatrix_x4(a[i], a_lane(i, s));
            }
            #pragma unroll
            for (int j = 0; j < N_TILES / 2; ++j) {
                ldmatrix_x4(b[j], b_lane(j, s));
            }
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                #pragma unroll
                for (int j = 0; j < N_TILES; ++j) {
                    mma_bf16_16816(acc[i][j], a[i], b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]);
                }
            }
        }
        // Single stage: the next copies overwrite this tile, so every warp must be done reading it.
        __syncthreads();
        // ANCHOR_END: mma
    }

    // ANCHOR: epilogue
    // Registers -> C, as bf16, straight from the mma fragment (mma_sm80.cuh), as the Hopper twin stores
    // its wgmma fragment: pairs of neighbouring columns go out as one 4-byte store when aligned (N even)
    // and inside C; otherwise element by element. Rows and columns past M and N are skipped.
    const MmaFragment frag(lane);
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
    // ANCHOR_END: epilogue
}
// ANCHOR_END: kernel
