// cp_async.cuh: the copy every sm80 twin uses to fill shared memory (compute capability 8.0 and newer).
//
// `cp.async.cg.shared.global [dst], [src], 16, src_size` copies 16 bytes from global to shared memory
// without passing through the thread's registers, and without making the thread wait: the copy is in
// flight until the thread waits for its group. Each thread issues its own copies (there is no TMA
// below sm_90), so a tile takes one instruction per 16-byte piece, spread over the block.
//
// Ragged edges: when `src_size` is 0 nothing is read and the 16 bytes are written as zeros. The shape
// contract (K % 8 == 0) makes every 16-byte piece of A and B wholly inside the matrix or wholly
// outside, so zero fill is all the edge handling the loads need: the zeros add nothing to a dot
// product.
#pragma once
#include "common.cuh"
#include "mbarrier.cuh"  // smem_address (the mbarriers themselves are not used by the sm80 twins)

// ANCHOR: copy
// One 16-byte piece, or 16 zero bytes when `inside` is false. The source address is still formed by
// the caller; it must be a valid address even when nothing is read, so callers pass the matrix's base
// then.
__device__ __forceinline__ void cp_async_16(u32 dst, const void* src, bool inside) {
    const u32 src_size = inside ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_size) : "memory");
}
// ANCHOR_END: copy

// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most `PENDING` of this thread's committed groups are still in flight. It covers this
// thread's own copies only: a block barrier must follow before other threads read them.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}
