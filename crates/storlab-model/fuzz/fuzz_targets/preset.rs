#![no_main]
//! The preset loader on arbitrary input: a preset file's text, then after
//! a line `--`, one `--set key=value` override per line. Whatever loads
//! must build or be refused with an error, and whatever builds must serve
//! a small mixed workload to the end with consistent times (the checks of
//! the model's own tests, `tests/common`). Never a panic or a hang.

use libfuzzer_sys::fuzz_target;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

#[path = "../../tests/common/mod.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (preset, sets) = text.split_once("\n--\n").unwrap_or((text, ""));
    let overrides: Vec<String> = sets.lines().map(String::from).collect();
    let store = PresetStore::default().with_text("fuzz", preset);
    let Ok((_, cfg)) = SystemConfig::load(&store, "fuzz", &overrides) else {
        return;
    };
    let Ok(mut dev) = cfg.build_device_in(&store) else {
        return;
    };
    let reqs = common::workload(dev.capacity());
    if let Err(e) = common::drive(dev.as_mut(), &reqs, 1_000_000) {
        panic!("a device that loaded misbehaved: {e}");
    }
});
