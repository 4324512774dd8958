// tma.cuh: the Tensor Memory Accelerator (bulk tensor copies between global and shared memory).
//
// A copy is described by a tensor map built on the host (shared/encoding/tma.rs) and passed to the kernel by
// value as a `const __grid_constant__ TensorMap`. One thread issues a copy; loads complete on an
// mbarrier (by bytes), stores complete in bulk groups the issuing thread commits and waits for.
// Out-of-bounds parts of a box read as zeros on load and are not written on store.
#pragma once
#include "common.cuh"
#include "mbarrier.cuh"

// The 128 opaque bytes of a CUtensorMap; only the copy engine reads them.
struct alignas(64) TensorMap {
    u64 opaque[16];
};

// Fetch the tensor map into the copy engine's cache ahead of the first copy.
__device__ __forceinline__ void tma_prefetch_map(const TensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// Load the box at element coordinates (x, y) (x innermost) into shared memory at `destination`;
// the bytes count towards `barrier`'s current phase.
__device__ __forceinline__ void tma_load_2d(void* destination, const TensorMap* map, u64* barrier, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
            smem_address(destination)),
        "l"(map), "r"(smem_address(barrier)), "r"(x), "r"(y)
        : "memory");
}

// The same for a 3D map: (x, y, z), x innermost.
__device__ __forceinline__ void tma_load_3d(void* destination, const TensorMap* map, u64* barrier, int x, int y,
                                            int z) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::
            "r"(smem_address(destination)),
        "l"(map), "r"(smem_address(barrier)), "r"(x), "r"(y), "r"(z)
        : "memory");
}

// Store the box at (x, y) from shared memory at `source` to global memory (parts outside the
// matrix are skipped). The copy joins the issuing thread's current bulk group.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, const void* source, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
                 "r"(smem_address(source)), "r"(x), "r"(y)
                 : "memory");
}

// Close the current bulk group of stores.
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Wait until at most `Pending` committed groups are still reading their shared memory (the buffer
// of every older group may be overwritten).
template <int Pending>
__device__ __forceinline__ void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(Pending) : "memory");
}

// Wait until at most `Pending` committed groups are incomplete (their writes are done).
template <int Pending>
__device__ __forceinline__ void tma_store_wait_all() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(Pending) : "memory");
}

// Order this thread's ordinary shared-memory writes before later async-proxy reads of them (a TMA
// store, or an MMA reading shared memory). Each writing thread fences, then the block synchronises.
__device__ __forceinline__ void fence_async_shared() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// A plain bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory to
// shared memory, no tensor map: the bytes count towards `barrier`'s current phase.
__device__ __forceinline__ void bulk_load(void* destination, const void* source, u32 bytes, u64* barrier) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_address(destination)),
        "l"(source), "r"(bytes), "r"(smem_address(barrier))
        : "memory");
}
