//! Presets built into the binary from `presets/*.toml` (see build.rs).

include!(concat!(env!("OUT_DIR"), "/presets_gen.rs"));
