//! Compile a small C program against `include/storlab_pmem.h` and the built
//! library with gcc, and run it.

#[path = "../../../testsupport/c_program.rs"]
mod c_program;

use std::path::Path;
use std::process::Command;

const PROGRAM: &str = r#"
#include "storlab_pmem.h"
#include <stdio.h>
#include <string.h>

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "line %d: %s failed; last error: %s\n", __LINE__, #cond, storlab_pmem_last_error()); \
    return 1; } } while (0)

_Static_assert(sizeof(storlab_pmem_options) == 40, "options layout");

int main(int argc, char **argv) {
    CHECK(argc == 2);
    CHECK(storlab_pmem_counters_size() == sizeof(storlab_pmem_counters));
    CHECK(storlab_pmem_mode_supported(STORLAB_PMEM_FLUSH_CLFLUSH) == 1);
    CHECK(storlab_pmem_mode_supported(42) == -1);

    /* A memfd region, default sync: every line of the range. */
    storlab_pmem_options o;
    CHECK(storlab_pmem_options_init(&o, 16 * 4096) == 0);
    o.wbarrier_ns = 100;
    storlab_pmem_region *r = storlab_pmem_map(&o);
    CHECK(r != NULL);
    CHECK(storlab_pmem_size(r) == 16 * 4096);
    char *base = storlab_pmem_base(r);
    CHECK(base != NULL);
    int t = storlab_pmem_tracking(r);
    CHECK(t == STORLAB_PMEM_TRACKING_UFFD || t == STORLAB_PMEM_TRACKING_MPROTECT);
    printf("tracking %s\n", t == STORLAB_PMEM_TRACKING_UFFD ? "uffd-wp-async" : "mprotect");

    base[100] = 1;
    CHECK(storlab_pmem_sync(r, base, 8192) == 0);
    storlab_pmem_counters c;
    CHECK(storlab_pmem_get_counters(r, &c) == 0);
    CHECK(c.lines_flushed == 128 && c.barriers == 1 && c.sync_calls == 1);
    CHECK(storlab_pmem_persist(r, base + 63, 2) == 0);
    CHECK(storlab_pmem_get_counters(r, &c) == 0);
    CHECK(c.lines_flushed == 130 && c.persist_calls == 1);

    /* SPF: only the written page. */
    CHECK(storlab_pmem_set_sync_mode(r, STORLAB_PMEM_SYNC_SPF) == 0);
    CHECK(storlab_pmem_sync(r, base, 16 * 4096) == 0); /* take earlier writes */
    CHECK(storlab_pmem_reset_counters(r) == 0);
    base[5 * 4096 + 7] = 2;
    CHECK(storlab_pmem_sync(r, base, 16 * 4096) == 0);
    CHECK(storlab_pmem_get_counters(r, &c) == 0);
    CHECK(c.lines_flushed == 64 && c.pages_dirty == 1 && c.pages_scanned == 16);

    /* Modes. */
    for (int m = 0; m < 4; m++) {
        if (storlab_pmem_mode_supported(m) == 1) {
            CHECK(storlab_pmem_set_flush_mode(r, m) == 0);
            CHECK(storlab_pmem_persist(r, base, 4096) == 0);
        }
    }

    /* Misuse: errors with messages, no crash. */
    CHECK(storlab_pmem_sync(r, base + 16 * 4096, 1) == -1);
    CHECK(strstr(storlab_pmem_last_error(), "not inside the region") != NULL);
    CHECK(storlab_pmem_persist(r, base - 1, 2) == -1);
    CHECK(storlab_pmem_set_flush_mode(r, 9) == -1);
    CHECK(strstr(storlab_pmem_last_error(), "unknown flush mode") != NULL);
    CHECK(storlab_pmem_set_wbarrier_ns(r, 5000000000ull) == -1);
    CHECK(storlab_pmem_get_counters(r, NULL) == -1);
    CHECK(storlab_pmem_map(NULL) == NULL);
    storlab_pmem_options bad;
    CHECK(storlab_pmem_options_init(&bad, 4097) == 0);
    CHECK(storlab_pmem_map(&bad) == NULL);
    CHECK(strstr(storlab_pmem_last_error(), "not a multiple of 4096") != NULL);
    bad.size = 4096; bad.tracking = STORLAB_PMEM_TRACKING_OFF; bad.sync_mode = STORLAB_PMEM_SYNC_SPF;
    CHECK(storlab_pmem_map(&bad) == NULL);
    CHECK(strstr(storlab_pmem_last_error(), "tracking") != NULL);

    CHECK(storlab_pmem_unmap(r) == 0);
    CHECK(storlab_pmem_unmap(r) == -1);
    CHECK(strstr(storlab_pmem_last_error(), "not a live region handle") != NULL);
    CHECK(storlab_pmem_sync(r, base, 1) == -1);
    CHECK(storlab_pmem_base((storlab_pmem_region *)0x1234) == NULL);

    /* A file region: data survives sync, unmap and re-map. */
    storlab_pmem_options f;
    CHECK(storlab_pmem_options_init(&f, 4 * 4096) == 0);
    f.path = argv[1];
    f.flush_mode = STORLAB_PMEM_FLUSH_CLFLUSHOPT;
    if (storlab_pmem_mode_supported(f.flush_mode) != 1) f.flush_mode = STORLAB_PMEM_FLUSH_CLFLUSH;
    storlab_pmem_region *fr = storlab_pmem_map(&f);
    CHECK(fr != NULL);
    char *fb = storlab_pmem_base(fr);
    strcpy(fb + 4000, "hello, persistent world");
    CHECK(storlab_pmem_sync(fr, fb + 4000, 24) == 0);
    CHECK(storlab_pmem_unmap(fr) == 0);
    fr = storlab_pmem_map(&f);
    CHECK(fr != NULL);
    fb = storlab_pmem_base(fr);
    CHECK(strcmp(fb + 4000, "hello, persistent world") == 0);
    CHECK(storlab_pmem_unmap(fr) == 0);

    printf("c api ok\n");
    return 0;
}
"#;

#[test]
fn c_program_against_header_and_library() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = c_program::compile(
        manifest,
        "storlab-pmem",
        "storlab_pmem",
        PROGRAM,
        dir.path(),
    );
    let run = Command::new(&exe)
        .arg(dir.path().join("region.pmem"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "C program failed: {:?}", run.status);
    assert!(stdout.contains("c api ok"));
}

#[test]
fn header_constants_match_the_library() {
    use storlab_pmem::ffi::*;
    let h = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include/storlab_pmem.h"),
    )
    .unwrap();
    for (name, v) in [
        ("STORLAB_PMEM_FLUSH_CLFLUSH", STORLAB_PMEM_FLUSH_CLFLUSH),
        (
            "STORLAB_PMEM_FLUSH_CLFLUSHOPT",
            STORLAB_PMEM_FLUSH_CLFLUSHOPT,
        ),
        ("STORLAB_PMEM_FLUSH_CLWB", STORLAB_PMEM_FLUSH_CLWB),
        ("STORLAB_PMEM_FLUSH_WOF", STORLAB_PMEM_FLUSH_WOF),
        ("STORLAB_PMEM_SYNC_DEFAULT", STORLAB_PMEM_SYNC_DEFAULT),
        ("STORLAB_PMEM_SYNC_SPF", STORLAB_PMEM_SYNC_SPF),
        ("STORLAB_PMEM_TRACKING_AUTO", STORLAB_PMEM_TRACKING_AUTO),
        ("STORLAB_PMEM_TRACKING_UFFD", STORLAB_PMEM_TRACKING_UFFD),
        (
            "STORLAB_PMEM_TRACKING_MPROTECT",
            STORLAB_PMEM_TRACKING_MPROTECT,
        ),
        ("STORLAB_PMEM_TRACKING_OFF", STORLAB_PMEM_TRACKING_OFF),
    ] {
        assert!(h.contains(&format!("#define {name} {v}\n")), "{name} = {v}");
    }
    for f in [
        "storlab_pmem_options_init",
        "storlab_pmem_map",
        "storlab_pmem_unmap",
        "storlab_pmem_base",
        "storlab_pmem_size",
        "storlab_pmem_persist",
        "storlab_pmem_sync",
        "storlab_pmem_set_flush_mode",
        "storlab_pmem_set_sync_mode",
        "storlab_pmem_set_wbarrier_ns",
        "storlab_pmem_tracking",
        "storlab_pmem_get_counters",
        "storlab_pmem_reset_counters",
        "storlab_pmem_mode_supported",
        "storlab_pmem_counters_size",
        "storlab_pmem_last_error",
    ] {
        assert!(h.contains(&format!("{f}(")), "{f} missing from the header");
    }
    assert_eq!(std::mem::size_of::<StorlabPmemOptions>(), 40);
}
