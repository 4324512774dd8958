// In-kernel timelines for the warp-specialised Hopper steps (08, 09, 10, 11): `stepNN --timeline`.
//
// Built with -DTIMELINE=1 (the program adds it through NVRTC), each call of TIMELINE_STAMP(event)
// writes one record into a device buffer: the global nanosecond timer, the SM, the block, the
// warpgroup (0 the producer, 1 and 2 the consumers) and the event. Only the first thread of a
// warpgroup writes, so a consumer's 128 threads leave one record per event; the producer's work is
// done by thread 0, the first thread of warpgroup 0.
//
// Without TIMELINE (the build that is timed, verified and shown) both macros expand to nothing, and
// this header declares nothing else: the kernel is the same code as before the stamps were written.
// The stamps sit at the end of the line of the event they mark, so that even the line table that
// -lineinfo puts into the cubin is unchanged.
//
// The buffer: `timeline_records` points at blocks × warpgroups × `timeline_capacity` records; the
// records of warpgroup w of block b start at (b · warpgroups + w) · capacity, for b below
// `timeline_blocks`. TIMELINE_INIT reads the globals once, into registers: each stamping thread keeps
// where its warpgroup's records start, their capacity and its count (a `TimelineCursor`), so that a
// stamp reads no memory (three dependent loads a stamp were most of its cost). Past the capacity it
// stops writing and the first record it could not write adds one to `timeline_dropped`. The host sets the globals
// (cuModuleGetGlobal) and zeroes the buffer before the launch: a record whose time is 0 was not written.
#pragma once

#if defined(TIMELINE) && TIMELINE

enum TimelineEvent : unsigned {
    TL_TILE_START = 0,      // step 10: a role begins a tile (producer and consumers)
    TL_TMA_ISSUED = 1,      // producer: both copies of a K tile issued
    TL_STAGE_FULL = 2,      // consumer: the wait on a stage's `full` barrier returned
    TL_MMA_ISSUED = 3,      // consumer: the K tile's wgmmas committed as one group
    TL_MMA_DONE = 4,        // consumer: wgmma_wait returned (the previous group has finished)
    TL_EPILOGUE_START = 5,  // consumer: accumulators final, the stores begin
    TL_EPILOGUE_END = 6,    // consumer: this warpgroup's stores issued (and read, where it waits)
    // Step 11, whose consumers convert the next K tile while the MMAs of this one run:
    TL_CONVERT_START = 7,   // consumer: the wait on the next stage's `full` barrier returned, its conversion begins
    TL_CONVERT_END = 8,     // consumer: that K tile converted (B's bf16 tile, A's registers) and its stage released
    TL_BARRIER = 9,         // consumer: the named barrier of both consumers passed
};

// 32 bytes; the host reads the same layout (shared/evidence/timeline.rs, `RECORD_BYTES`).
struct TimelineRecord {
    unsigned long long time_ns;  // %globaltimer
    unsigned sm;                 // %smid
    unsigned block;              // blockIdx.x + gridDim.x · (blockIdx.y + gridDim.y · blockIdx.z)
    unsigned warpgroup;          // threadIdx.x / 128
    unsigned event;              // TimelineEvent
    unsigned sequence;           // this warpgroup's record number
    unsigned reserved;
};

__device__ TimelineRecord* timeline_records;
__device__ unsigned timeline_capacity;
__device__ unsigned timeline_blocks;
__device__ unsigned timeline_dropped;

__device__ __forceinline__ unsigned timeline_block() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// A stamping thread's records: `first` is null for the threads that do not stamp (all but the first
// of each warpgroup) and for blocks past `timeline_blocks`.
struct TimelineCursor {
    TimelineRecord* first;
    unsigned count;
    unsigned capacity;
};

__device__ __forceinline__ TimelineCursor timeline_cursor() {
    const unsigned block = timeline_block();
    if ((threadIdx.x & 127) != 0 || block >= timeline_blocks) return TimelineCursor{nullptr, 0, 0};
    const unsigned capacity = timeline_capacity;
    const unsigned warpgroups = (blockDim.x + 127) / 128;
    const unsigned warpgroup = threadIdx.x / 128;
    return TimelineCursor{timeline_records + ((unsigned long long)block * warpgroups + warpgroup) * capacity, 0,
                          capacity};
}

__device__ __forceinline__ void timeline_stamp(TimelineCursor& cursor, unsigned event) {
    if (cursor.first == nullptr) return;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const unsigned n = cursor.count++;
    if (n >= cursor.capacity) {
        if (n == cursor.capacity) atomicAdd(&timeline_dropped, 1u);
        return;
    }
    cursor.first[n] = TimelineRecord{now, sm, timeline_block(), threadIdx.x / 128, event, n, 0};
}

#define TIMELINE_INIT() TimelineCursor timeline_cursor_ = timeline_cursor()
#define TIMELINE_STAMP(event) timeline_stamp(timeline_cursor_, (event))

#else

#define TIMELINE_INIT() ((void)0)
#define TIMELINE_STAMP(event) ((void)0)

#endif
