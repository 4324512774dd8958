// mbarrier.cuh: shared-memory barriers that count arrivals *and* bytes.
//
// An mbarrier lives in shared memory (8 bytes) and completes a *phase* when the expected number of
// threads have arrived and the expected number of bytes (announced with expect_tx) have landed. The
// copy engine (TMA) and the tensor cores (tcgen05.commit) arrive on it from outside the thread world.
// Waiters name the phase they wait for by its parity (0, 1, 0, 1, ...): a waiter whose parity bit
// matches a phase that has not completed yet blocks; the bit flips each time the barrier completes.
#pragma once
#include "common.cuh"

// The 32-bit shared-memory address PTX instructions take, from a generic pointer.
__device__ __forceinline__ u32 smem_address(const void* pointer) {
    u32 address;
    asm volatile("{ .reg .u64 wide; cvta.to.shared.u64 wide, %1; cvt.u32.u64 %0, wide; }"
                 : "=r"(address)
                 : "l"(pointer));
    return address;
}

// Set up a barrier that completes a phase after `arrivals` arrive() calls (plus any expected bytes).
__device__ __forceinline__ void mbarrier_init(u64* barrier, u32 arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(barrier)), "r"(arrivals));
}

// Make initialised barriers visible to the async proxy (TMA, tensor cores) before anyone uses them.
__device__ __forceinline__ void mbarrier_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// ANCHOR: arrive_expect
// Arrive once and announce `bytes` more bytes that asynchronous copies will deliver this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(u64* barrier, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(barrier)), "r"(bytes)
                 : "memory");
}
// ANCHOR_END: arrive_expect

// Arrive once.
__device__ __forceinline__ void mbarrier_arrive(u64* barrier) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(barrier)) : "memory");
}

// ANCHOR: wait
// Block until the phase of parity `parity` has completed. try_wait may give up after a while
// (returning false), so it sits in a loop.
__device__ __forceinline__ void mbarrier_wait(u64* barrier, u32 parity) {
    const u32 address = smem_address(barrier);
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "wait_again:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra wait_again;\n"
        "}\n" ::"r"(address),
        "r"(parity)
        : "memory");
}
// ANCHOR_END: wait
