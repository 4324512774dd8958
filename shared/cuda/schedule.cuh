// schedule.cuh: who computes what in a persistent GEMM with stream-K (step 10's kernels and their sm80
// twins, step 11's sm80 twin): the data-parallel tiles, then the stream-K runs of K tiles, and the list
// of pieces of work each cluster (on the sm80 twins, each block: a cluster of one) walks. The host
// side, which chooses `dp_tiles` and `sk_clusters` for a shape, is shared/run/persistent.rs's
// `Decomposition`; the tile order (`TileOrder`) stays in each kernel, beside its GROUP_M.
#pragma once
#include "common.cuh"

// ANCHOR: stream_k
// Who computes what. Tiles 0 .. dp_tiles-1 (in the kernel's tile order) are data-parallel: cluster c
// takes tiles c, c + clusters, ... whole. The rest are stream-K: their K tiles, numbered tile by tile
// (tile dp_tiles's K tiles first), are cut into `sk_clusters` runs of equal length, one per cluster.
// A run may start and end inside a tile, so a cluster's run is: the end of one tile, whole tiles,
// the start of another.
struct Schedule {
    int tiles, k_tiles, clusters;
    int dp_tiles;     // tiles computed whole, one cluster each
    int sk_clusters;  // clusters sharing the K tiles of the other tiles (0: none)
    // The first K tile of cluster g's run, counted from the first stream-K tile's first K tile.
    __device__ __forceinline__ i64 sk_begin(int g) const {
        const i64 total = (i64)(tiles - dp_tiles) * k_tiles;
        return g >= sk_clusters ? total : total * g / sk_clusters;
    }
};

// One piece of work: K tiles k_begin .. k_end-1 of tile `tile`.
struct Work {
    int tile, k_begin, k_end;
};

// A cluster's pieces, in order; the producer and the consumers walk the same list.
struct WorkList {
    Schedule s;
    int cluster;
    int next_tile;  // the next data-parallel tile
    i64 sk_next;    // the next K tile of this cluster's stream-K run (it ends where the next one's begins)
    __device__ __forceinline__ WorkList(const Schedule& schedule, int cluster)
        : s(schedule), cluster(cluster), next_tile(cluster), sk_next(schedule.sk_begin(cluster)) {}
    __device__ __forceinline__ bool next(Work& w) {
        if (next_tile < s.dp_tiles) {
            w = Work{next_tile, 0, s.k_tiles};
            next_tile += s.clusters;
            return true;
        }
        // Computed when needed rather than kept: one register pair fewer beside the accumulators.
        const i64 sk_end = s.sk_begin(cluster + 1);
        if (sk_next >= sk_end) return false;
        const int t = (int)(sk_next / s.k_tiles);
        w.tile = s.dp_tiles + t;
        w.k_begin = (int)(sk_next - (i64)t * s.k_tiles);
        w.k_end = (int)min((i64)s.k_tiles, w.k_begin + (sk_end - sk_next));
        sk_next += w.k_end - w.k_begin;
        return true;
    }
};
// ANCHOR_END: stream_k
