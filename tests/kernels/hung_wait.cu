// A kernel that waits for a phase nobody completes, through mbarrier_sm100.cuh's wait: built with
// GEMM_LADDER_DEBUG_HANG it must print the report and trap, long before the host's hang deadline
// (tests/pipeline.rs). Step 01's signature and launch; only thread 0 of block (0, 0) waits, on
// sm_90a, where the header's waits assemble as they do for sm_100a.
#include "common.cuh"
#include "mbarrier_sm100.cuh"

extern "C" __global__ void gemm(const bf16* __restrict__ A, const bf16* __restrict__ B, bf16* __restrict__ C,
                                int M, int N, int K) {
    __shared__ u64 never;  // one arrival expected, none made
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
        mbarrier_init(&never, 1);
        mbarrier_init_fence();
        mbarrier_wait_relaxed_cluster(&never, 0, "never");
    }
}
