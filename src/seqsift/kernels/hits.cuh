// Device-side hit compaction shared by every search kernel.
//
// A kernel that finds a hit asks the global counter for a slot and writes
// (row, end, distance) there. The launcher allocates ``capacity`` slots; if
// the counter ends above it, the launcher reruns the kernel with room for all
// (kernels/cuda.py: compact_hits_buffers, launch_into_hit_buffers). Hits come
// out in no order.
#pragma once

__device__ __forceinline__ void emit(unsigned long long *count, unsigned long long capacity,
                                     int *out_row, long long *out_end, short *out_dist,
                                     int row, long long end, int dist) {
    unsigned long long slot = atomicAdd(count, 1ULL);
    if (slot < capacity) {
        out_row[slot] = row;
        out_end[slot] = end;
        out_dist[slot] = (short)dist;
    }
}
