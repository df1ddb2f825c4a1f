//! Parse fio job files or a fio command line and print the jobs, or the
//! error: `cargo run --example fio_check -- job.fio` or
//! `cargo run --example fio_check -- --name=x --rw=randread`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match storlab_workload::fio::parse_cli_args(&args) {
        Ok(jf) => {
            for j in &jf.jobs {
                println!(
                    "{} (group {}): rw={} bs={:?} iodepth={} numjobs={} size={:?}",
                    j.name,
                    j.group_id,
                    j.rw.fio_name(),
                    j.bs,
                    j.iodepth,
                    j.numjobs,
                    j.size
                );
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
