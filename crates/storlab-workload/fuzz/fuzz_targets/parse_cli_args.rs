//! Any bytes as command-line arguments (split at NUL and newlines).
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab_workload::fio::parse_cli_args_with_env;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Only option-like arguments: a positional one would name a file to read.
    let args: Vec<String> = text
        .split(['\0', '\n'])
        .filter(|a| a.starts_with("--"))
        .map(str::to_string)
        .collect();
    let _ = parse_cli_args_with_env(&args, &|_| None);
});
