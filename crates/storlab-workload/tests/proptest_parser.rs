//! Property tests: no input makes the parser or the generator panic.

mod common;

use common::no_env;
use proptest::prelude::*;
use storlab_workload::fio::{parse_cli_args_with_env, parse_job_str_with_env};
use storlab_workload::gen::JobThread;

/// Option names (some unknown) and values that exercise every value syntax.
const KEYS: &[&str] = &[
    "rw",
    "bs",
    "bsrange",
    "bssplit",
    "blockalign",
    "size",
    "io_size",
    "offset",
    "offset_increment",
    "offset_align",
    "number_ios",
    "loops",
    "runtime",
    "time_based",
    "random_distribution",
    "percentage_random",
    "norandommap",
    "fsync",
    "fdatasync",
    "end_fsync",
    "rwmixread",
    "rwmixwrite",
    "iodepth",
    "numjobs",
    "rate",
    "rate_iops",
    "thinktime",
    "stonewall",
    "new_group",
    "kb_base",
    "randseed",
    "randrepeat",
    "rw_sequencer",
    "bs_unaligned",
    "direct",
    "verify",
];
const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "2",
    "4k",
    "512",
    "64k",
    "1m",
    "1g",
    "10%",
    "100%",
    "0x1000",
    "4KiB",
    "read",
    "write",
    "randread",
    "randwrite",
    "randrw",
    "rw",
    "trimwrite",
    "randtrimwrite",
    "randread:4",
    "write:4k",
    "4k,8k",
    ",8k",
    "8k,,",
    "1k-4k",
    "4k:64k,512-1k",
    "4k/50:64k/50",
    "4k/10:8k",
    "zipf:1.2",
    "zipf:0.5:0.5",
    "pareto:0.2",
    "normal:10:0.9",
    "zoned:60/10:40/90",
    "zoned_abs:50/1m:50/2m",
    "random",
    "identical",
    "sequential",
    "1000",
    "1024",
    "18446744073709551615",
    "99999999999999999999",
    "-1",
    "1.5",
    "${X}",
];

/// Plausible values for a key, so that most generated jobs parse.
fn good_values(key: &str) -> &'static [&'static str] {
    match key {
        "rw" => &[
            "read",
            "randread",
            "randrw",
            "rw",
            "randwrite:2",
            "write:4k",
            "trimwrite",
            "randtrimwrite",
        ],
        "bs" | "blockalign" => &["512", "4k", "64k", "4k,8k", ",16k", "1m"],
        "bsrange" => &["512-4k", "4k-64k", "1k:8k,4k-4k"],
        "bssplit" => &["4k/50:64k/50", "4k/10:8k", "512/:1m/90,4k"],
        "size" | "io_size" | "offset" | "offset_increment" => {
            &["1m", "64k", "10%", "100%", "1g", "4k"]
        }
        "random_distribution" => &[
            "zipf:1.2",
            "zipf:0.5:0.5",
            "pareto:0.2",
            "normal:10:0.9",
            "zoned:60/10:40/90",
            "zoned_abs:50/1m:50/2m",
            "random",
        ],
        "percentage_random" | "rwmixread" | "rwmixwrite" => &["0", "50", "100", "20,80"],
        "runtime" => &["1", "10ms", "2m"],
        "rw_sequencer" => &["identical", "sequential"],
        "kb_base" => &["1000", "1024"],
        "time_based" | "norandommap" | "stonewall" | "new_group" | "bs_unaligned" | "end_fsync"
        | "direct" | "randrepeat" => &["1", "0"],
        _ => &["1", "2", "16", "100"],
    }
}

fn job_text() -> impl Strategy<Value = String> {
    let line = (0..KEYS.len(), 0..VALUES.len(), 0..8usize, 0..10u8).prop_map(|(k, v, g, pick)| {
        let key = KEYS[k];
        match pick {
            0 => key.to_string(),
            1 => format!("{key}={}", VALUES[v]),
            _ => {
                let good = good_values(key);
                format!("{key}={}", good[g % good.len()])
            }
        }
    });
    (prop::collection::vec(line, 0..8), any::<bool>()).prop_map(|(lines, global)| {
        let mut text = String::new();
        if global {
            text.push_str("[global]\nsize=1m\n");
        }
        text.push_str("[job]\n");
        for l in lines {
            text.push_str(&l);
            text.push('\n');
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in ".*") {
        let _ = parse_job_str_with_env("p.fio", &text, &no_env);
    }

    #[test]
    fn ini_like_text_never_panics(text in "(\\[[a-z]{0,4}\\]?|[a-z_=0-9kKmM%:,/.;# -]{0,20}|include x|\\$\\{[A-Z]{0,2}\\}?)(\n(\\[[a-z]{0,4}\\]?|[a-z_=0-9kKmM%:,/.;# -]{0,20}))*") {
        let _ = parse_job_str_with_env("p.fio", &text, &no_env);
    }

    #[test]
    fn arbitrary_arguments_never_panic(args in prop::collection::vec("(--)?[a-z_=0-9kKm%:,-]{0,12}", 0..8)) {
        // Positional arguments would be read as files; keep them options.
        let args: Vec<String> = args.into_iter().filter(|a| a.starts_with("--")).collect();
        let _ = parse_cli_args_with_env(&args, &no_env);
    }

    /// Whatever option mix parses, every thread of it generates IOs inside
    /// the device without panicking.
    #[test]
    fn parsed_jobs_generate_without_panicking(
        text in job_text(),
        capacity in prop::sample::select(vec![4096u64, 1 << 20, 3 << 30, u64::MAX / 2, u64::MAX]),
        thread_index in 0u32..3,
    ) {
        if let Ok(jf) = parse_job_str_with_env("p.fio", &text, &no_env) {
            for job in &jf.jobs {
                if let Ok(mut t) = JobThread::new(job, thread_index, capacity, 9) {
                    let (start, len) = t.region();
                    prop_assert!(start + len <= capacity);
                    for _ in 0..2000 {
                        match t.next_io() {
                            // A sequential walk's last block may run past
                            // the region's end (fio's too), never past the
                            // device's.
                            Some(io) => prop_assert!(
                                io.len == 0
                                    || (io.offset >= start
                                        && io.offset < start + len
                                        && io.len <= capacity - io.offset),
                                "{:?} outside [{}, {}) or the device of {}", io, start, start + len, capacity
                            ),
                            None => break,
                        }
                    }
                }
            }
        }
    }
}

/// The generator property above is only meaningful if many generated jobs
/// parse and start; check that they do.
#[test]
fn generated_jobs_mostly_parse() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = job_text();
    let (mut parsed, mut started, total) = (0, 0, 1000);
    for _ in 0..total {
        let text = strategy.new_tree(&mut runner).unwrap().current();
        if let Ok(jf) = parse_job_str_with_env("p.fio", &text, &no_env) {
            parsed += 1;
            if JobThread::new(&jf.jobs[0], 0, 1 << 30, 1).is_ok() {
                started += 1;
            }
        }
    }
    assert!(parsed * 5 > total, "only {parsed} of {total} parsed");
    assert!(started * 5 > total, "only {started} of {total} started");
}
