// flag.cuh: a flag in global memory that one block raises and another waits for (step 10's stream-K
// fixup: a contributor stores its partial sums and raises its flag to the launch's epoch; the finisher
// of the tile waits for that value before it reads them. Step 11's `overlapped` alternative: a
// converting warp raises a unit's flag once B's unit is converted).
//
// The raise is a release store at GPU scope (after the raising warpgroup has synchronised); the wait
// is an acquire load at GPU scope in a loop, so the loads after it see what the raiser stored before
// its release. It assumes the
// raiser is running: a block that waits for a block the GPU has not scheduled spins forever, which is
// why such grids are launched cooperatively (registry::Launch::co_resident).
//
// Like mbarrier_sm100.cuh's waits, a bring-up build bounds it: compiled with GEMM_LADDER_DEBUG_HANG=S,
// a wait that sees no `value` for more than S seconds prints the flag's address, the value awaited
// (the epoch) and the one it holds, which cluster's flag it is, and the waiting block and thread, then
// traps:
//     GEMM_LADDER_EXPERIMENT_DEFINES=GEMM_LADDER_DEBUG_HANG=5 cargo run --release --bin step10 -- --check
// (keep S below GEMM_LADDER_HANG_SECONDS, or the host's deadline fires first). Off by default: the
// measured kernels have no timer, printf or trap (tests/kernels.rs assembles both builds).
#pragma once
#include "common.cuh"

// One read of the flag, with acquire semantics at GPU scope.
__device__ __forceinline__ u32 flag_load_acquire(const u32* flag) {
    u32 value;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
    return value;
}

// ANCHOR: flag_release
// Raise `*flag` to `value`, with release semantics at GPU scope: the stores this thread made before it
// (and, after a barrier, its warpgroup's or warp's) are seen by whoever acquires `value` from the flag.
__device__ __forceinline__ void flag_release(u32* flag, u32 value) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
// ANCHOR_END: flag_release

#ifdef GEMM_LADDER_DEBUG_HANG
static_assert(GEMM_LADDER_DEBUG_HANG > 0, "GEMM_LADDER_DEBUG_HANG is the bound in seconds: at least 1");

// Out of line: the printf and its argument buffer stay out of the kernel's main path.
__device__ __noinline__ void report_hung_flag_wait(const u32* flag, u32 value, u32 seen, int raiser) {
    printf("flag wait hung: flag 0x%llx (raised by cluster %d) awaited %u (the epoch), holds %u, block (%u,%u,%u) "
           "thread %u: not raised in %d s\n",
           reinterpret_cast<u64>(flag), raiser, value, seen, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
           GEMM_LADDER_DEBUG_HANG);
    __trap();
}
#endif

// ANCHOR: flag_wait
// Block until `*flag == value`, with acquire semantics at GPU scope. `raiser` names who raises the
// flag (step 10: the cluster g whose partial sums it guards), for a bring-up build's report (above);
// otherwise it is unused. One thread waits; its warpgroup then synchronises on a named barrier.
__device__ __forceinline__ void flag_wait_acquire(const u32* flag, u32 value, int raiser) {
#ifdef GEMM_LADDER_DEBUG_HANG
    u64 since = 0;  // when this wait first found the flag not yet raised
    for (u32 seen = flag_load_acquire(flag); seen != value; seen = flag_load_acquire(flag)) {
        u64 now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (since == 0) {
            since = now;
        } else if (now - since > static_cast<u64>(GEMM_LADDER_DEBUG_HANG) * 1000000000ull) {
            report_hung_flag_wait(flag, value, seen, raiser);
        }
    }
#else
    (void)raiser;
    while (flag_load_acquire(flag) != value) {
    }
#endif
}
// ANCHOR_END: flag_wait
