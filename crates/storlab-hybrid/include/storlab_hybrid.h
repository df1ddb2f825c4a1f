/*
 * storlab_hybrid.h - hybrid DRAM + device memory for C programs.
 *
 * storlab_hybrid_new() maps a region whose pages live in a bounded DRAM
 * cache and on an emulated device (a storlab preset): a page not in DRAM
 * is faulted in from the device when the device model says its read
 * completes, and pages are evicted oldest first, changed ones written back
 * to the device. Use the memory at storlab_hybrid_base() like any other;
 * data written is data read back.
 *
 * Conventions: pointer functions return NULL and int functions -1 on
 * error; storlab_hybrid_last_error() then says why (per thread). Handles
 * are checked on every call: a stale or foreign handle is an error, not a
 * crash.
 *
 * Link with -lstorlab_hybrid (libstorlab_hybrid.so; the static library
 * also needs -lpthread -ldl -lm). Needs userfaultfd (root, or
 * vm.unprivileged_userfaultfd=1, or access to /dev/userfaultfd).
 */
#ifndef STORLAB_HYBRID_H
#define STORLAB_HYBRID_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct storlab_hybrid storlab_hybrid;

typedef struct storlab_hybrid_stats {
    uint64_t faults;          /* missing-page faults resolved */
    uint64_t zero_fills;      /* first touches, filled with zeros */
    uint64_t device_reads;    /* pages read from the device */
    uint64_t device_writes;   /* changed pages written back on eviction */
    uint64_t clean_evictions; /* unchanged pages evicted without a write */
    uint64_t resident_peak;   /* most pages in DRAM at once */
    uint64_t dram_pages;      /* the DRAM bound, in pages */
    double fault_mean_us;     /* time to serve a device-read fault */
    double fault_p99_us;
    double model_read_mean_us; /* the device model's read latency */
} storlab_hybrid_stats;

/* size: a multiple of the page size; dram: at least two pages; device: a
 * preset name or TOML file (NULL: fusion-io); overrides: NULL or a
 * NULL-terminated array of "key.path=value"; store: NULL, "memory" or
 * "file:PATH" (where the device's pages are kept). */
storlab_hybrid *storlab_hybrid_new(uint64_t size, uint64_t dram, const char *device,
                                   const char *const *overrides, const char *store);
void *storlab_hybrid_base(const storlab_hybrid *h);
uint64_t storlab_hybrid_size(const storlab_hybrid *h);
int storlab_hybrid_get_stats(const storlab_hybrid *h, storlab_hybrid_stats *out);
/* No thread may use the region any more. */
int storlab_hybrid_free(storlab_hybrid *h);
const char *storlab_hybrid_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
