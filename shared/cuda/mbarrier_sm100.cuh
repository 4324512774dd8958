// mbarrier_sm100.cuh: the mbarrier waits and cross-block arrivals of the Blackwell (sm_100a) kernels
// of steps 07–11. The Hopper kernels keep mbarrier.cuh's and cluster.cuh's forms; only Blackwell
// kernels include this header.
//
// Two things set these waits apart from mbarrier.cuh's mbarrier_wait:
//  - the memory-order form is named at every wait (_cta, _relaxed_cluster, _acquire_cluster), because
//    in a pair of blocks some handshakes cross blocks and the PTX ISA asks for a cluster-scope form
//    there (see "Cluster scope" below);
//  - every wait names its barrier, and a bring-up build bounds it. No Blackwell kernel of the ladder
//    has run yet; on first silicon, a protocol slip (a wrong parity, a missing arrival) would show as
//    the whole grid stalling until the host's deadline (GEMM_LADDER_HANG_SECONDS, 60 s) with nothing to
//    say where. Compiled with GEMM_LADDER_DEBUG_HANG=S, a wait for one phase that lasts more than S
//    seconds prints the barrier's name and shared-memory address, the parity awaited, the block, its
//    rank in the cluster and the thread (one line per waiting warp), then traps. The harness's
//    development channel passes the define without touching a file, and a run with it records nothing:
//        GEMM_LADDER_EXPERIMENT_DEFINES=GEMM_LADDER_DEBUG_HANG=5 cargo run --release --bin step08 -- --check
//    (keep S below GEMM_LADDER_HANG_SECONDS, or the host's deadline fires first). It is off by default:
//    printf gives the kernel a stack frame and the timer a few registers, and the measured kernels are
//    the ones without it (tests/kernels.rs assembles both).
//
// Cluster scope. The PTX ISA's patterns for tcgen05 across threads ("Memory consistency model for
// 5th generation of TensorCore operations", canonical synchronization patterns) wait with
// mbarrier.try_wait.relaxed.cluster and arrive with mbarrier.arrive.relaxed.cluster; the tcgen05 fences
// on the two sides (fence::before_thread_sync before the arrival, fence::after_thread_sync after the
// wait) give the ordering. The default forms are .acquire.cta / .release.cta, and two operations at
// CTA scope issued from two different blocks are not morally strong. So every handshake that hands
// TMEM from one block to the other uses the .relaxed.cluster forms: a commit from the leader's MMA
// thread that the peer waits for before its tcgen05.ld (steps 07–11), and the epilogue's
// arrival that hands an accumulator back to the leader's MMA thread (steps 10, 11). ptxas emits the
// same SASS for them as for the default forms (no MEMBAR, no CCTL), so they cost nothing. The waits
// of the ring (the copies' bytes, the free slots) keep the default form, as CUTLASS's pipelines do.
#pragma once
#include "common.cuh"
#include "mbarrier.cuh"
#include "cluster.cuh"

enum class WaitOrder { acquire_cta, relaxed_cluster, acquire_cluster };

// One mbarrier.try_wait.parity in the form `Order`: true once the phase of parity `parity` of the
// barrier at shared::cta `address` has completed. try_wait may also give up after a while (false).
template <WaitOrder Order>
__device__ __forceinline__ bool mbarrier_try_wait_parity(u32 address, u32 parity) {
    u32 done;
    if constexpr (Order == WaitOrder::acquire_cta) {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\n"
            "selp.u32 %0, 1, 0, done;\n"
            "}\n"
            : "=r"(done)
            : "r"(address), "r"(parity)
            : "memory");
    } else if constexpr (Order == WaitOrder::relaxed_cluster) {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "mbarrier.try_wait.parity.relaxed.cluster.shared::cta.b64 done, [%1], %2;\n"
            "selp.u32 %0, 1, 0, done;\n"
            "}\n"
            : "=r"(done)
            : "r"(address), "r"(parity)
            : "memory");
    } else {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%1], %2;\n"
            "selp.u32 %0, 1, 0, done;\n"
            "}\n"
            : "=r"(done)
            : "r"(address), "r"(parity)
            : "memory");
    }
    return done != 0;
}

#ifdef GEMM_LADDER_DEBUG_HANG
static_assert(GEMM_LADDER_DEBUG_HANG > 0, "GEMM_LADDER_DEBUG_HANG is the bound in seconds: at least 1");

// Nanoseconds of the GPU's global timer.
__device__ __forceinline__ u64 global_timer_ns() {
    u64 ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// Out of line: the printf and its argument buffer stay out of the kernel's main path.
__device__ __noinline__ void report_hung_wait(const char* name, u32 address, u32 parity) {
    // One line per warp: the lowest of the lanes waiting here prints.
    const u32 lane = threadIdx.x % 32;
    if ((__activemask() & ((1u << lane) - 1)) == 0) {
        printf("mbarrier wait hung: barrier %s (shared 0x%x), parity %u, block (%u,%u,%u) cluster rank %u, "
               "thread %u (warp %u): no completion in %d s\n",
               name, address, parity, blockIdx.x, blockIdx.y, blockIdx.z, cluster_ctarank(), threadIdx.x,
               threadIdx.x / 32, GEMM_LADDER_DEBUG_HANG);
    }
    __trap();
}
#endif

// ANCHOR: bounded_wait
// Block until the phase of parity `parity` of `barrier` has completed, with the memory-order form
// `Order`. `name` says which barrier in a bring-up build's report (above); otherwise it is unused.
template <WaitOrder Order>
__device__ __forceinline__ void mbarrier_wait_ordered(u64* barrier, u32 parity, const char* name) {
    const u32 address = smem_address(barrier);
#ifdef GEMM_LADDER_DEBUG_HANG
    u64 since = 0;  // when this wait first found the phase incomplete
    while (!mbarrier_try_wait_parity<Order>(address, parity)) {
        const u64 now = global_timer_ns();
        if (since == 0) {
            since = now;
        } else if (now - since > static_cast<u64>(GEMM_LADDER_DEBUG_HANG) * 1000000000ull) {
            report_hung_wait(name, address, parity);
        }
    }
#else
    (void)name;
    while (!mbarrier_try_wait_parity<Order>(address, parity)) {
    }
#endif
}
// ANCHOR_END: bounded_wait

// The three forms the Blackwell kernels use:
//  - _cta, the default semantics (.acquire.cta): the bytes of a K slice (`full`, `loaded`: the copies'
//    complete_tx, the peer's included) and the `empty` slots before the next copies, as CUTLASS's
//    2-SM pipelines wait for them;
//  - _relaxed_cluster (below, with its arrival): a TMEM hand-back between the blocks of a pair;
//  - _acquire_cluster: an arrival made with .release.cluster by the other block (step 11's relay).
__device__ __forceinline__ void mbarrier_wait_cta(u64* barrier, u32 parity, const char* name) {
    mbarrier_wait_ordered<WaitOrder::acquire_cta>(barrier, parity, name);
}
__device__ __forceinline__ void mbarrier_wait_acquire_cluster(u64* barrier, u32 parity, const char* name) {
    mbarrier_wait_ordered<WaitOrder::acquire_cluster>(barrier, parity, name);
}

// ANCHOR: relaxed_cluster
// A TMEM hand-back between the two blocks of a pair, in the PTX ISA's pattern for tcgen05 across
// threads: the thread that has read TMEM (tcgen05.ld, wait::ld, fence::before_thread_sync) arrives
// with .relaxed.cluster on the barrier of block `rank`; the thread that waits with .relaxed.cluster
// then fences (fence::after_thread_sync) before its MMA or tcgen05.ld. The same wait serves a commit
// from the leader's MMA thread that the peer's epilogue waits for before it reads TMEM. The tcgen05
// fences give the ordering; cluster scope makes the two sides morally strong across blocks.
__device__ __forceinline__ void mbarrier_arrive_relaxed_cluster(u64* barrier, u32 rank) {
    asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_map_shared(barrier, rank))
                 : "memory");
}
__device__ __forceinline__ void mbarrier_wait_relaxed_cluster(u64* barrier, u32 parity, const char* name) {
    mbarrier_wait_ordered<WaitOrder::relaxed_cluster>(barrier, parity, name);
}
// ANCHOR_END: relaxed_cluster
