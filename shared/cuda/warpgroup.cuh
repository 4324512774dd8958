// warpgroup.cuh: what a warp-specialised kernel needs beyond the MMA itself (sm_90a).
//
// In a warp-specialised kernel each warpgroup (four consecutive warps, 128 threads) has a role: one
// issues the copies, the others compute. The roles need very different numbers of registers, and the
// register file is split evenly at launch. `setmaxnreg` moves registers between them at run time, and
// named barriers let the threads of one role synchronise without stopping the others.
#pragma once
#include "common.cuh"

// ANCHOR: setmaxnreg
// Give back registers: this warpgroup continues with at most `Count` registers a thread (a multiple of
// 8 in 24 .. 256). Every thread of the warpgroup executes it. The kernel must have a register limit at
// entry (`__launch_bounds__(threads, 1)`), or ptxas ignores the instruction (warning C7508).
template <int Count>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(Count % 8 == 0 && Count >= 24 && Count <= 256, "setmaxnreg takes a multiple of 8 in 24..256");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Count));
}

// Take registers: blocks until the pool given back by other warpgroups holds enough, then continues with
// `Count` registers a thread.
template <int Count>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(Count % 8 == 0 && Count >= 24 && Count <= 256, "setmaxnreg takes a multiple of 8 in 24..256");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Count));
}
// ANCHOR_END: setmaxnreg

// Barrier `id` (1 .. 15; 0 is __syncthreads') for `threads` threads (a multiple of 32): only the warps
// that take part wait, so one warpgroup can synchronise while the others run on.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
