// mbarrier_sm80.cuh: what an mbarrier ring needs below sm_90 (compute capability 8.0 and newer).
//
// Ampere has mbarriers, but no `try_wait` (a wait that may sleep in hardware), no `expect_tx` (bytes
// counted by the barrier) and no TMA to count them. So:
//   - a waiter polls `mbarrier.test_wait.parity`, which answers at once;
//   - a copier's `cp.async`s report to the barrier with `cp.async.mbarrier.arrive.noinc`: the arrival
//     happens when all of that thread's earlier copies have landed. `.noinc` means the arrival is one
//     of the count the barrier was initialised with (each copying thread is counted), not an extra.
// mbarrier.cuh's init and arrive are sm_80 instructions and are used as they are.
#pragma once
#include "mbarrier.cuh"

// ANCHOR: wait
// Block until the phase of parity `parity` has completed, polling.
__device__ __forceinline__ void mbarrier_wait_polling(u64* barrier, u32 parity) {
    const u32 address = smem_address(barrier);
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "poll_again:\n"
        "mbarrier.test_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra poll_again;\n"
        "}\n" ::"r"(address),
        "r"(parity)
        : "memory");
}
// ANCHOR_END: wait

// ANCHOR: arrive_noinc
// Arrive on `barrier` once every cp.async this thread issued before has landed (one of the arrivals
// the barrier counts).
__device__ __forceinline__ void cp_async_arrive_noinc(u64* barrier) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_address(barrier)) : "memory");
}
// ANCHOR_END: arrive_noinc
