// cluster.cuh: thread-block clusters (sm_90 and newer): blocks that run at the same time on nearby SMs
// and can reach each other's shared memory.
//
// A cluster is launched as a unit (the host asks for its shape, shared/registry.rs `Launch`); each
// block knows its rank in it. A shared-memory address of this block becomes the address of the same
// variable in block `rank` with `mapa`; barriers, TMA copies and arrivals may then target the peer.
//
// Two rules every cluster kernel keeps:
//  - start: a block must not touch a peer's shared memory (arrive on its barrier, multicast into it)
//    before the peer has initialised it: cluster_sync() after the barriers are set up;
//  - exit: a block must not exit while a peer may still write to its shared memory or arrive on its
//    barriers: cluster_sync() at the end.
#pragma once
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"

// This block's rank within its cluster, 0 .. cluster size − 1.
__device__ __forceinline__ u32 cluster_ctarank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// Every thread of every block in the cluster arrives, then waits for all of them. `release` /
// `acquire` make this block's earlier shared-memory writes (barrier initialisation included) visible
// to the peers after the wait.
__device__ __forceinline__ void cluster_sync() {
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\n"
        "barrier.cluster.wait.acquire.aligned;\n" ::
            : "memory");
}

// The shared::cluster address of `pointer`'s variable in block `rank` of the cluster.
__device__ __forceinline__ u32 cluster_map_shared(const void* pointer, u32 rank) {
    u32 address;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(address) : "r"(smem_address(pointer)), "r"(rank));
    return address;
}

// Arrive once on `barrier` in block `rank` (this block included). The arriving thread has already
// waited for the reads it is releasing (wgmma_wait), so the arrival needs no cluster-wide release
// fence: the default semantics (release at CTA scope, as CUTLASS's ClusterBarrier::arrive) suffice, and
// a `.release.cluster` arrival would make the thread wait for all its earlier memory operations.
__device__ __forceinline__ void mbarrier_arrive_cluster(u64* barrier, u32 rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_map_shared(barrier, rank)) : "memory");
}

// ANCHOR: multicast
// Load the box at (x, y) once from global memory and write it into every block of `cta_mask` (bit r:
// rank r), at the same shared-memory offset `destination` has in this block; each receiving block's
// barrier at `barrier`'s offset counts the bytes it receives.
__device__ __forceinline__ void tma_load_2d_multicast(void* destination, const TensorMap* map, u64* barrier, int x,
                                                      int y, u16 cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_address(destination)),
        "l"(map), "r"(smem_address(barrier)), "r"(x), "r"(y), "h"(cta_mask)
        : "memory");
}
// ANCHOR_END: multicast
