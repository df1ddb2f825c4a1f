//! Compile a C program against `include/storlab_hybrid.h` and the built
//! library with gcc, and run it: data survives eviction, the counters
//! add up, and misuse is an error with a message.

#[path = "../../../testsupport/c_program.rs"]
mod c_program;

use std::path::Path;
use std::process::Command;

const PROGRAM: &str = r#"
#include "storlab_hybrid.h"
#include <stdio.h>
#include <string.h>

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "line %d: %s failed; last error: %s\n", __LINE__, #cond, storlab_hybrid_last_error()); \
    return 1; } } while (0)

int main(void) {
    const char *set[] = {"device.latency_ns=20000", NULL};
    storlab_hybrid *h = storlab_hybrid_new(8u << 20, 256u << 10, "null", set, NULL);
    CHECK(h != NULL);
    CHECK(storlab_hybrid_size(h) == 8u << 20);
    unsigned char *m = storlab_hybrid_base(h);
    CHECK(m != NULL);
    for (size_t i = 0; i < (8u << 20); i++) m[i] = (unsigned char)(i * 31 + (i >> 12));
    for (size_t i = 0; i < (8u << 20); i++) CHECK(m[i] == (unsigned char)(i * 31 + (i >> 12)));
    storlab_hybrid_stats s;
    CHECK(storlab_hybrid_get_stats(h, &s) == 0);
    CHECK(s.dram_pages == 64 && s.resident_peak <= 64);
    CHECK(s.zero_fills == 2048 && s.device_reads >= 2048 - 64);
    CHECK(s.device_writes >= 2048 - 64);
    CHECK(s.model_read_mean_us > 19.9 && s.model_read_mean_us < 20.1);
    CHECK(s.fault_mean_us >= 20.0);
    printf("faults %llu, reads %llu, writes %llu, fault %.1f us (model %.1f us)\n",
           (unsigned long long)s.faults, (unsigned long long)s.device_reads,
           (unsigned long long)s.device_writes, s.fault_mean_us, s.model_read_mean_us);

    /* misuse */
    CHECK(storlab_hybrid_get_stats(h, NULL) == -1);
    CHECK(strstr(storlab_hybrid_last_error(), "NULL") != NULL);
    CHECK(storlab_hybrid_free(h) == 0);
    CHECK(storlab_hybrid_free(h) == -1);
    CHECK(strstr(storlab_hybrid_last_error(), "not a live hybrid region") != NULL);
    CHECK(storlab_hybrid_base((storlab_hybrid *)0x1234) == NULL);
    CHECK(storlab_hybrid_new(4097, 1u << 20, "null", NULL, NULL) == NULL);
    CHECK(strstr(storlab_hybrid_last_error(), "size_bytes") != NULL);
    CHECK(storlab_hybrid_new(1u << 20, 1u << 20, "nosuch", NULL, NULL) == NULL);
    CHECK(strstr(storlab_hybrid_last_error(), "nosuch") != NULL);
    CHECK(storlab_hybrid_new(1u << 20, 1u << 20, NULL, NULL, "tape:x") == NULL);
    CHECK(strstr(storlab_hybrid_last_error(), "store") != NULL);
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
        "storlab-hybrid",
        "storlab_hybrid",
        PROGRAM,
        dir.path(),
    );
    let run = Command::new(&exe).output().expect("run the C program");
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "C program failed: {:?}", run.status);
    assert!(stdout.contains("c api ok"));
}

#[test]
fn header_declares_every_exported_function() {
    let h = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include/storlab_hybrid.h"),
    )
    .expect("header");
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi.rs"))
        .expect("ffi source");
    let exported: Vec<&str> = src
        .split("extern \"C\" fn ")
        .skip(1)
        .map(|s| s.split('(').next().unwrap_or(""))
        .collect();
    assert_eq!(exported.len(), 6, "{exported:?}");
    for f in exported {
        assert!(
            h.contains(&format!("{f}(")),
            "{f} is not declared in the header"
        );
    }
    assert!(h.contains("} storlab_hybrid_stats;"));
}
