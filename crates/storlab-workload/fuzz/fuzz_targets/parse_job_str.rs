//! Any bytes as a job file: the parser must return, never panic; whatever
//! parses must also generate IOs without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab_workload::fio::parse_job_str_with_env;
use storlab_workload::gen::JobThread;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let env = |k: &str| (k == "FUZZ").then(|| "4k".to_string());
    if let Ok(jf) = parse_job_str_with_env("fuzz.fio", &text, &env) {
        for job in jf.jobs.iter().take(4) {
            if let Ok(mut t) = JobThread::new(job, 1, 1 << 30, 0) {
                for _ in 0..256 {
                    if t.next_io().is_none() {
                        break;
                    }
                }
            }
        }
    }
});
