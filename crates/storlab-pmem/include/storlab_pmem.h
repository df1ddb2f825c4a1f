/*
 * storlab_pmem.h - emulated persistent memory (NVMM) for C programs.
 *
 * A region is a file or a memfd mapped into memory. storlab_pmem_persist()
 * flushes the cache lines of a range with the region's flush mode (clflush,
 * clflushopt, clwb, or WOF: a non-temporal rewrite of each line), fences,
 * then busy-waits for the write-barrier latency L_WBAR. storlab_pmem_sync()
 * is msync-like: the default policy flushes every line of the range, SPF
 * only the lines of pages written since their last sync (a page only partly
 * inside the range has just the range's lines flushed and stays dirty).
 *
 * Conventions: int functions return 0 on success and -1 on error; pointer
 * functions return NULL on error. storlab_pmem_last_error() then describes
 * the error (per thread). Handles are checked on every call: a stale or
 * foreign handle is an error, not a crash. Functions are thread-safe; calls
 * on one region are serialised.
 *
 * Link with -lstorlab_pmem (libstorlab_pmem.so or libstorlab_pmem.a; the
 * static library also needs -lpthread -ldl -lm).
 */
#ifndef STORLAB_PMEM_H
#define STORLAB_PMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flush modes (M_FLUSH). */
#define STORLAB_PMEM_FLUSH_CLFLUSH 0
#define STORLAB_PMEM_FLUSH_CLFLUSHOPT 1
#define STORLAB_PMEM_FLUSH_CLWB 2
#define STORLAB_PMEM_FLUSH_WOF 3

/* Sync policies (M_SYNC). */
#define STORLAB_PMEM_SYNC_DEFAULT 0
#define STORLAB_PMEM_SYNC_SPF 1

/* Dirty tracking for SPF: a map option, and what storlab_pmem_tracking()
 * reports (never AUTO). AUTO uses UFFD (userfaultfd async write protection
 * + PAGEMAP_SCAN, Linux 6.7+) where permitted, else MPROTECT (read-only
 * pages and a process-wide SIGSEGV handler; kernel writes into such a
 * region, e.g. read(2) into it, then fail with EFAULT). */
#define STORLAB_PMEM_TRACKING_AUTO 0
#define STORLAB_PMEM_TRACKING_UFFD 1
#define STORLAB_PMEM_TRACKING_MPROTECT 2
#define STORLAB_PMEM_TRACKING_OFF 3

/* An opaque region handle. */
typedef struct storlab_pmem_region storlab_pmem_region;

/* How to map a region; fill with storlab_pmem_options_init() first. */
typedef struct storlab_pmem_options {
    uint64_t size;       /* bytes, a non-zero multiple of the page size */
    const char *path;    /* file to map (created if missing), NULL: memfd */
    int flush_mode;      /* STORLAB_PMEM_FLUSH_* (default CLFLUSH) */
    int sync_mode;       /* STORLAB_PMEM_SYNC_* (default DEFAULT) */
    int tracking;        /* STORLAB_PMEM_TRACKING_* (default AUTO) */
    int populate;        /* non-zero: fault pages in at map time (default 1) */
    uint64_t wbarrier_ns; /* L_WBAR in ns, at most 1e9 (default 0) */
} storlab_pmem_options;

/* What a region has done since it was mapped or its counters reset. */
typedef struct storlab_pmem_counters {
    uint64_t persist_calls; /* non-empty persists */
    uint64_t sync_calls;    /* non-empty syncs */
    uint64_t lines_flushed; /* cache lines flushed */
    uint64_t pages_scanned; /* pages whose dirty state SPF consulted */
    uint64_t pages_dirty;   /* pages SPF found dirty */
    uint64_t barriers;      /* fence + L_WBAR sequences */
    uint64_t flush_ns;      /* time in flush instructions */
    uint64_t tracking_ns;   /* time finding dirty pages */
    uint64_t barrier_ns;    /* time in fences and the L_WBAR spin */
} storlab_pmem_counters;

/* Defaults for a memfd region of `size` bytes. */
int storlab_pmem_options_init(storlab_pmem_options *opts, uint64_t size);

/* Map a region. NULL on error (bad size, a region too large, a flush mode
 * the CPU lacks, SPF with tracking OFF, tracking UFFD not permitted, ...). */
storlab_pmem_region *storlab_pmem_map(const storlab_pmem_options *opts);

/* Unmap; the handle is invalid afterwards. */
int storlab_pmem_unmap(storlab_pmem_region *region);

/* First byte and size of the region. */
void *storlab_pmem_base(const storlab_pmem_region *region);
uint64_t storlab_pmem_size(const storlab_pmem_region *region);

/* Flush [addr, addr+len) (inside the region) with the flush mode, fence,
 * pay L_WBAR. len 0 does nothing. */
int storlab_pmem_persist(storlab_pmem_region *region, const void *addr, size_t len);

/* msync-style sync of [addr, addr+len) with the sync policy; one fence and
 * L_WBAR if anything was flushed. */
int storlab_pmem_sync(storlab_pmem_region *region, const void *addr, size_t len);

/* Change the flush mode (refused if the CPU lacks it), the sync policy
 * (SPF refused without tracking), or L_WBAR. */
int storlab_pmem_set_flush_mode(storlab_pmem_region *region, int mode);
int storlab_pmem_set_sync_mode(storlab_pmem_region *region, int mode);
int storlab_pmem_set_wbarrier_ns(storlab_pmem_region *region, uint64_t ns);

/* STORLAB_PMEM_TRACKING_UFFD, _MPROTECT or _OFF; -1 on error. */
int storlab_pmem_tracking(const storlab_pmem_region *region);

/* Counters. */
int storlab_pmem_get_counters(const storlab_pmem_region *region, storlab_pmem_counters *out);
int storlab_pmem_reset_counters(storlab_pmem_region *region);

/* 1 if the CPU has flush mode `mode`, 0 if not (the last error names the
 * missing instruction), -1 for an unknown mode. */
int storlab_pmem_mode_supported(int mode);

/* sizeof(storlab_pmem_counters) in the library, to check the header. */
size_t storlab_pmem_counters_size(void);

/* This thread's last error message, "" if none. Valid until the next
 * failing call on this thread. */
const char *storlab_pmem_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* STORLAB_PMEM_H */
