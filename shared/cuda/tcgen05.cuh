// tcgen05.cuh: Blackwell's fifth-generation tensor cores (sm_100a only).
//
// On Hopper a warpgroup's wgmma writes its accumulators into the registers of the 128 threads that
// issued it. Blackwell moves the accumulators out of the register file into Tensor Memory (TMEM), a
// 256 KiB on-chip memory of every SM laid out as 128 lanes × 512 columns of 32-bit cells. One thread
// issues a tcgen05.mma that reads A and B from shared memory and accumulates D in TMEM; the threads
// read D back into registers (tcgen05.ld) only once, for the epilogue.
//
// The life of a TMEM accumulator in a kernel that uses `.cta_group::1` (one CTA per MMA):
//   1. one whole warp allocates columns (tmem_alloc); the address lands in shared memory;
//   2. one thread issues MMAs into it (umma_f16) and commits them to an mbarrier (umma_commit);
//   3. after that barrier's phase completes, every warp copies its lanes to registers (tmem_load_*);
//   4. the warp that allocated frees the columns (tmem_dealloc) before the kernel exits. The PTX ISA
//      requires every allocation to be freed explicitly; it promises nothing for a CTA that exits
//      holding columns, which the next CTA on that SM may be waiting for in its own tcgen05.alloc.
//
// Ordering. tcgen05.mma and tcgen05.ld run asynchronously to the thread that issued them, and the
// compiler and hardware may move them across ordinary synchronisation unless told not to. Whenever a
// tcgen05 operation in one thread must be ordered with one in another thread through a thread
// barrier (__syncthreads, an mbarrier wait), the pattern is:
//     tcgen05 operations ...;  tcgen05_fence_before_thread_sync();   // producer side
//     <barrier or mbarrier arrive/wait>
//     tcgen05_fence_after_thread_sync();  tcgen05 operations ...;   // consumer side
// The one exception is an mbarrier signalled by tcgen05.commit: the commit itself orders the MMAs
// before the arrival, so only the consumer's fence::after_thread_sync is needed after the wait.
//
// Every tcgen05 instruction of a kernel must use the same `.cta_group`; the ones here are all
// `.cta_group::1`. Instructions marked `.sync.aligned` must be executed by all 32 threads of a warp
// together, with the same operands (never under a condition that differs between lanes).
#pragma once
#include "common.cuh"
#include "mbarrier.cuh"

// ---------------------------------------------------------------------------------------------------
// Tensor Memory addresses. A TMEM address is 32 bits: the lane in bits 31..16, the column in bits
// 15..0 (shared/encoding/mod.rs `tmem_address` computes the same on the host). The address tcgen05.alloc
// returns names lane 0 and the first allocated column; add (lane << 16) and a column to reach a cell.
__device__ __forceinline__ u32 tmem_offset(u32 base, u32 lane, u32 column) {
    return base + (lane << 16) + column;
}

// ---------------------------------------------------------------------------------------------------
// Allocation. Rules (PTX ISA, "Tensor Memory Allocation and Management Instructions"):
//  - the unit is a column across all 128 lanes; the count is a power of two from 32 to 512;
//  - with .cta_group::1 a single warp of the CTA, all 32 threads together, allocates, and a single
//    warp frees; the ladder uses the same warp for both, as CUTLASS does;
//  - tcgen05.alloc blocks while fewer free columns are available on the SM (other resident CTAs may
//    hold them), and writes the address of the allocation to shared memory at `slot` rather than to
//    a register, so that the other warps can read it after a barrier;
//  - everything allocated must be freed with tcgen05.dealloc before the kernel exits.
template <u32 Columns>
__device__ __forceinline__ void tmem_alloc(u32* slot) {
    static_assert(Columns >= 32 && Columns <= 512 && (Columns & (Columns - 1)) == 0,
                  "TMEM is allocated in a power of two of columns, 32 to 512");
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_address(slot)),
                 "r"(Columns)
                 : "memory");
}

// Give up this CTA's right to allocate: any tcgen05.alloc in this CTA afterwards is illegal. The
// ladder's kernels allocate once, at the start, and relinquish right away, telling the hardware that
// this CTA will ask for no more Tensor Memory. Whole warp (.sync.aligned).
__device__ __forceinline__ void tmem_relinquish_alloc_permit() {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}

// Free `Columns` columns starting at `address` (the value tcgen05.alloc returned). Whole warp, the
// same warp that allocated, after every tcgen05.ld and tcgen05.mma touching them has completed and
// been ordered before it (see the ordering pattern at the top).
template <u32 Columns>
__device__ __forceinline__ void tmem_dealloc(u32 address) {
    static_assert(Columns >= 32 && Columns <= 512 && (Columns & (Columns - 1)) == 0,
                  "TMEM is freed in the power of two of columns that was allocated");
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(address), "r"(Columns) : "memory");
}

// ---------------------------------------------------------------------------------------------------
// Shared-memory matrix descriptors. A descriptor (64 bits) tells tcgen05.mma where an operand tile
// starts and how its 8-row × 16-byte core matrices are laid out: leading and stride byte offsets, the
// swizzle mode, a fixed version field. Everything but the start address is computed in Rust
// (shared/encoding/mod.rs, `sm100::smem_descriptor` with start address 0) and reaches the kernel as a
// define; the kernel adds the start address: bits 13..0 hold (address & 0x3FFFF) >> 4. Shared memory
// is below 256 KiB, so an address of a tile and every offset into it fits the 14-bit field, and the
// addition never carries into the next field.
__device__ __forceinline__ u64 umma_descriptor(u64 layout, u32 shared_address) {
    return layout | static_cast<u64>((shared_address & 0x3FFFF) >> 4);
}

// ---------------------------------------------------------------------------------------------------
// D[tmem] (+)= A[a_desc] · B[b_desc]ᵀ for one MMA of the shape in `idesc` (kind::f16: fp16 or bf16
// inputs, K = 16 per instruction, D in fp32 or fp16). The instruction descriptor `idesc` (32 bits,
// from shared/encoding/mod.rs `sm100::instr_descriptor_f16`) gives the types, the majorness of A and B
// and M, N. `accumulate` false overwrites D (the first MMA of a tile), true adds to it.
//
// Issued by ONE thread; the instruction is asynchronous: it returns at once and the tensor core works
// on its own. MMAs from the same thread into the same accumulator run in issue order, so a chain of
// them needs no synchronisation in between. Their completion is observed only through umma_commit.
__device__ __forceinline__ void umma_f16(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc, bool accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %4, 0;\n"
        "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, accumulate;\n"
        "}\n" ::"r"(d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<u32>(accumulate))
        : "memory");
}

// Make `barrier` receive one arrival once every tcgen05.mma this thread has issued so far (and not
// yet committed) has completed: its results are in TMEM and it has finished reading shared memory.
// Issued by the thread that issued the MMAs; the barrier's expected arrival count must account for it
// (one commit = one arrival). The `.shared::cluster` form takes a shared::cta address of this CTA,
// which is also a valid shared::cluster address (a CTA launched without a cluster is a cluster of one).
__device__ __forceinline__ void umma_commit(u64* barrier) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(
                     smem_address(barrier))
                 : "memory");
}

// ---------------------------------------------------------------------------------------------------
// TMEM -> registers. Which lanes a warp may touch is fixed by hardware: warp w of the CTA reaches only
// lanes 32·(w % 4) .. 32·(w % 4) + 31. So reading all 128 lanes takes four warps whose indices cover
// 0..3 modulo 4 (one warpgroup), and with M = 128 and .cta_group::1 (the PTX ISA's data-path
// "Layout D") lane i holds row i of the accumulator tile: warp w reads rows 32·(w % 4) onwards.
//
// Shape .32x32b: 32 lanes × 32 bits; thread t of the warp receives lane (lane of `address`) + t.
// With .x32 the shape repeats over 32 consecutive columns, so thread t receives columns
// column(address) .. +31 of its own lane, in v[0..31]: one thread holds 32 consecutive fp32
// accumulators of one row of D.
//
// tcgen05.ld is asynchronous: its destination registers are valid only after tcgen05.wait::ld. Were
// the two in separate asm statements, the compiler could move a use of v[] (a conversion, say) above
// the wait, since nothing ties that use to the second statement. Issuing both in one statement makes
// "registers written" and "load complete" the same point in the program. (A later step that wants
// several loads in flight before one wait would pass the registers through the wait as operands.)
// Whole warp (.sync.aligned), the same `address` in every thread.
__device__ __forceinline__ void tmem_load_32x32b_x32(u32 address, u32 (&v)[32]) {
    asm volatile(
        "tcgen05.ld.sync.aligned.32x32b.x32.b32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];\n"
        "tcgen05.wait::ld.sync.aligned;\n"
        : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7]),
          "=r"(v[8]), "=r"(v[9]), "=r"(v[10]), "=r"(v[11]), "=r"(v[12]), "=r"(v[13]), "=r"(v[14]), "=r"(v[15]),
          "=r"(v[16]), "=r"(v[17]), "=r"(v[18]), "=r"(v[19]), "=r"(v[20]), "=r"(v[21]), "=r"(v[22]), "=r"(v[23]),
          "=r"(v[24]), "=r"(v[25]), "=r"(v[26]), "=r"(v[27]), "=r"(v[28]), "=r"(v[29]), "=r"(v[30]), "=r"(v[31])
        : "r"(address)
        : "memory");
}

// ---------------------------------------------------------------------------------------------------
// Fences around thread synchronisation (see "Ordering" at the top). They order this thread's tcgen05
// operations against its barrier operations, in the direction their names say:
//  - before_thread_sync: tcgen05 operations issued earlier are ordered before the barrier that follows
//    (e.g. the tcgen05.ld of every warp before the __syncthreads that precedes tcgen05.dealloc; the
//    tcgen05.alloc before the __syncthreads after which other warps use the address);
//  - after_thread_sync: tcgen05 operations issued later are ordered after the barrier or mbarrier
//    wait that came before (e.g. tcgen05.mma after the wait for the TMA's bytes; tcgen05.ld after the
//    wait for the MMAs' commit; tcgen05.dealloc after the __syncthreads that follows the last load).
__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}

__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}
