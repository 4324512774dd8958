// cluster.cuh: thread-block clusters (sm_90 and newer): blocks that run at the same time on nearby SMs
// and can reach each other's shared memory.
//
// A cluster is launched as a unit (the host asks for its shape, shared/run/registry.rs `Launch`); each
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

// ANCHOR: cluster_sync
// Every thread of every block in the cluster arrives, then waits for all of them. `release` /
// `acquire` make this block's earlier shared-memory writes (barrier initialisation included) visible
// to the peers after the wait.
__device__ __forceinline__ void cluster_sync() {
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\n"
        "barrier.cluster.wait.acquire.aligned;\n" ::
            : "memory");
}
// ANCHOR_END: cluster_sync

// The shared::cluster address of `pointer`'s variable in block `rank` of the cluster.
__device__ __forceinline__ u32 cluster_map_shared(const void* pointer, u32 rank) {
    u32 address;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(address) : "r"(smem_address(pointer)), "r"(rank));
    return address;
}

// ANCHOR: arrive_cluster
// Arrive once on `barrier` in block `rank` (this block included). The arriving thread has already
// waited for the reads it is releasing (wgmma_wait), so the arrival needs no cluster-wide release
// fence: the default semantics (release at CTA scope, as CUTLASS's ClusterBarrier::arrive) suffice, and
// a `.release.cluster` arrival would make the thread wait for all its earlier memory operations.
__device__ __forceinline__ void mbarrier_arrive_cluster(u64* barrier, u32 rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_map_shared(barrier, rank)) : "memory");
}
// ANCHOR_END: arrive_cluster

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

// ---------------------------------------------------------------------------------------------------
// 2-SM tensor cores (sm_100a, `.cta_group::2`). Two blocks of a cluster whose ranks differ only in
// bit 0 form a *pair*; the one with the even rank is the leader. One thread of the leader issues a
// tcgen05.mma that runs on the tensor cores of both SMs: each block holds its half of A (M/2 rows)
// and its half of B (N/2 rows) at the same shared-memory offset, and receives its M/2 rows of D in
// its own TMEM, at the same TMEM address. Every tcgen05 instruction of such a kernel must say
// `.cta_group::2` (alloc, relinquish, dealloc, mma, commit); tcgen05.ld, tcgen05.wait and the fences
// have no `.cta_group`. The wrappers below are the `.cta_group::2` forms of those in tcgen05.cuh.

// Rank of the leader of this block's pair: this rank with bit 0 cleared.
__device__ __forceinline__ u32 pair_leader_rank(u32 rank) {
    return rank & ~1u;
}

// Allocate `Columns` TMEM columns in both blocks of the pair. One warp of each block executes it (the
// same warp index in both, all 32 threads), with `slot` at the same offset; both blocks receive the
// same address. CUTLASS `TMEM::Allocator2Sm` states the same preconditions.
template <u32 Columns>
__device__ __forceinline__ void tmem_alloc_2sm(u32* slot) {
    static_assert(Columns >= 32 && Columns <= 512 && (Columns & (Columns - 1)) == 0,
                  "TMEM is allocated in a power of two of columns, 32 to 512");
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_address(slot)),
                 "r"(Columns)
                 : "memory");
}

// This pair will allocate no more TMEM. Whole warp, the warp that allocated.
__device__ __forceinline__ void tmem_relinquish_alloc_permit_2sm() {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory");
}

// Free what tmem_alloc_2sm allocated: the allocating warp of each block, once no tcgen05 operation of
// either block still uses the columns (the kernels put a cluster barrier before it).
template <u32 Columns>
__device__ __forceinline__ void tmem_dealloc_2sm(u32 address) {
    static_assert(Columns >= 32 && Columns <= 512 && (Columns & (Columns - 1)) == 0,
                  "TMEM is freed in the power of two of columns that was allocated");
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" ::"r"(address), "r"(Columns) : "memory");
}

// ANCHOR: umma_2sm
// D (+)= A · Bᵀ over the pair, one MMA of the shape in `idesc` (kind::f16; shared/encoding/mod.rs
// `sm100::instr_descriptor_f16_2sm`: M = 128 or 256, N a multiple of 16 up to 256). Issued by ONE
// thread of the leader. The descriptors and `d_tmem` name this block's shared memory and TMEM; the
// hardware reads the peer's halves of A and B at the same offsets and writes the peer's rows of D at
// the same TMEM address. With M = 256 the leader's TMEM receives rows 0..127 and the peer's rows
// 128..255, each in lane i = row i of its half (the layout of a 128-row MMA); D column j is B row j
// of [leader's half of B; peer's half of B].
__device__ __forceinline__ void umma_f16_2sm(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc, bool accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %4, 0;\n"
        "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, accumulate;\n"
        "}\n" ::"r"(d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<u32>(accumulate))
        : "memory");
}

// One arrival on `barrier` in every block of `cta_mask` (bit r: rank r), at `barrier`'s offset, once
// every 2-SM MMA this thread has issued so far has completed, on both SMs: their D is in TMEM and
// they have finished reading both blocks' shared memory. Issued by the thread that issued the MMAs.
__device__ __forceinline__ void umma_commit_2sm_multicast(u64* barrier, u16 cta_mask) {
    asm volatile(
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;" ::"r"(
            smem_address(barrier)),
        "h"(cta_mask)
        : "memory");
}
// ANCHOR_END: umma_2sm

// ANCHOR: tma_2sm
// Load the box at (x, y) into THIS block's shared memory at `destination`, and count its bytes on
// the barrier at shared::cluster address `pair_barrier`, which may be the peer's (cluster_map_shared
// of the leader's barrier): with `.cta_group::2` the barrier may live in either block of the pair.
// That is how both halves of a pair's tiles report to the one barrier the leader's MMA thread waits on.
__device__ __forceinline__ void tma_load_2d_2sm(void* destination, const TensorMap* map, u32 pair_barrier, int x,
                                                int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_address(destination)),
        "l"(map), "r"(pair_barrier), "r"(x), "r"(y)
        : "memory");
}
// ANCHOR_END: tma_2sm

// ---------------------------------------------------------------------------------------------------
// Block-scaled 2-SM MMA (step 11, MXFP8). The scale factors are a third and fourth operand that the
// tensor cores read from TMEM, so they take a path of their own: global -> shared (bulk copy) ->
// TMEM (tcgen05.cp) -> MMA.

// ANCHOR: tcgen05_cp
// Copy one 512-byte scale tile (32 rows of 16 bytes: the blocked ((32,4),4) layout, shared/check/mx.rs) from
// shared memory at `s_desc` (a no-swizzle descriptor, shared/encoding/mod.rs
// `sm100_mx::scale_tile_smem_descriptor`) to TMEM at `taddr`: 4 columns, and `.warpx4` repeats the 32
// rows in all four 32-lane quarters, so lane l, column j holds rows l % 32 + 32·j, one K-block a byte.
// `.cta_group::2`: issued by ONE thread of the leader, it copies each block's tile (same shared-memory
// offset) into that block's TMEM (same address). Asynchronous; a tcgen05.mma issued after it by the same
// thread sees its data (PTX ISA "Pipelined tcgen05 instructions": tcgen05.cp -> tcgen05.mma), and a
// later tcgen05.commit tracks it.
__device__ __forceinline__ void tcgen05_cp_32x128b_warpx4_2sm(u32 taddr, u64 s_desc) {
    asm volatile("tcgen05.cp.cta_group::2.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(s_desc) : "memory");
}
// ANCHOR_END: tcgen05_cp

// ANCHOR: umma_mx_2sm
// D (+)= (A · scale_A) · (B · scale_B)ᵀ over the pair, one block-scaled MMA: A, B in fp8 (types in
// `idesc`, shared/encoding/mod.rs `sm100_mx::instr_descriptor_mxf8f6f4_2sm`), K = 32 (one scale block), one
// e8m0 scale per row and 32 elements of K, D in fp32. `sfa_tmem` / `sfb_tmem` are the TMEM addresses of
// the copied scale tiles (A: 4 columns, rows of this block's half; B: 8 columns, all N = 256 rows of
// the pair's B, in both blocks); the scale-factor ids in `idesc` pick the byte (the K-block) of each
// cell. Otherwise as umma_f16_2sm: one thread of the leader, asynchronous, completion via commit.
__device__ __forceinline__ void umma_mxf8f6f4_block32_2sm(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc,
                                                          u32 sfa_tmem, u32 sfb_tmem, bool accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %6, 0;\n"
        "tcgen05.mma.cta_group::2.kind::mxf8f6f4.block_scale.block32 [%0], %1, %2, %3, [%4], [%5], accumulate;\n"
        "}\n" ::"r"(d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem), "r"(static_cast<u32>(accumulate))
        : "memory");
}
// ANCHOR_END: umma_mx_2sm

// ANCHOR: relay
// Arrive once on `barrier` in block `rank`, releasing at cluster scope: what this thread has observed
// (a completed bulk copy into this block's shared memory, through its own mbarrier wait) is visible to
// the block that waits on `barrier` with mbarrier_wait_acquire_cluster.
__device__ __forceinline__ void mbarrier_arrive_release_cluster(u64* barrier, u32 rank) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_map_shared(barrier, rank))
                 : "memory");
}

// mbarrier_wait with cluster-scope acquire: pairs with arrivals made from the other block of the pair.
__device__ __forceinline__ void mbarrier_wait_acquire_cluster(u64* barrier, u32 parity) {
    const u32 address = smem_address(barrier);
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "wait_again:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra wait_again;\n"
        "}\n" ::"r"(address),
        "r"(parity)
        : "memory");
}
// ANCHOR_END: relay
