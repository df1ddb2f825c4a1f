//! Misuse gets a clear error, never a crash: bad sizes and ranges, a region
//! too large, a mode the CPU lacks, SPF without tracking, userfaultfd
//! forbidden, bad benchmark flags. Two cases need a process of their own
//! (a seccomp filter, a deliberate segfault): the test binary re-runs
//! itself with `STORLAB_PMEM_CHILD` set and checks how the child ended.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use storlab_pmem::{
    cpu_features, CpuFeatures, FlushMode, MsyncBenchOptions, PmemError, Region, RegionOptions,
    SyncMode, TrackingChoice, TrackingKind,
};

const PAGE: u64 = 4096;

fn err(opts: RegionOptions) -> PmemError {
    match Region::map(&opts) {
        Ok(_) => panic!("mapping {opts:?} should fail"),
        Err(e) => e,
    }
}

#[test]
fn bad_sizes() {
    let e = err(RegionOptions::memfd(0));
    assert!(matches!(e, PmemError::InvalidArgument(_)), "{e}");
    let e = err(RegionOptions::memfd(PAGE + 1));
    assert!(matches!(e, PmemError::Unaligned { align: 4096, .. }), "{e}");
    assert!(e.to_string().contains("not a multiple of 4096"), "{e}");
    let e = err(RegionOptions::memfd(1 << 50));
    assert!(matches!(e, PmemError::RegionTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("too large"), "{e}");
    let e = err(RegionOptions::memfd(PAGE).wbarrier_ns(5_000_000_000));
    assert!(e.to_string().contains("write-barrier latency"), "{e}");
}

#[test]
fn out_of_range_arguments() {
    let mut r = Region::map(&RegionOptions::memfd(2 * PAGE)).unwrap();
    for (o, l) in [
        (0, 2 * PAGE + 1),
        (2 * PAGE, 1),
        (u64::MAX, 2),
        (1, u64::MAX),
    ] {
        let e = r.sync(o, l).unwrap_err();
        assert!(matches!(e, PmemError::OutOfRange { .. }), "{e}");
        assert!(
            e.to_string().contains("outside the region of 8192 bytes"),
            "{e}"
        );
        assert!(matches!(r.persist(o, l), Err(PmemError::OutOfRange { .. })));
    }
    assert!(r.write_at(2 * PAGE - 1, &[1, 2]).is_err());
    let mut buf = [0u8; 4];
    assert!(r.read_at(2 * PAGE - 3, &mut buf).is_err());
    let outside = 0x10usize as *const u8;
    let e = r.offset_of(outside, 1).unwrap_err();
    assert!(e.to_string().contains("not inside the region"), "{e}");
    let p = r.as_ptr();
    assert_eq!(r.offset_of(p.wrapping_add(100), 10).unwrap(), 100);
    assert!(r.offset_of(p.wrapping_add(8190), 10).is_err());
    assert_eq!(r.counters(), Default::default(), "failed calls do nothing");
}

#[test]
fn a_mode_the_cpu_lacks_is_refused_by_name() {
    let none = CpuFeatures::NONE;
    for m in FlushMode::ALL {
        let e = none.check(m).unwrap_err();
        assert!(
            matches!(e, PmemError::UnsupportedMode { mode, .. } if mode == m),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(m.name()) && msg.contains("CPUID does not report"),
            "{msg}"
        );
    }
    let no_clwb = CpuFeatures {
        clwb: false,
        ..cpu_features()
    };
    let msg = no_clwb.check(FlushMode::Clwb).unwrap_err().to_string();
    assert!(msg.contains("CLWB"), "{msg}");
    // And modes the CPU does have map fine.
    for m in FlushMode::ALL
        .into_iter()
        .filter(|m| cpu_features().supports(*m))
    {
        Region::map(&RegionOptions::memfd(PAGE).flush_mode(m)).unwrap();
    }
}

#[test]
fn spf_without_tracking_is_refused() {
    let e = err(RegionOptions::memfd(PAGE)
        .tracking(TrackingChoice::Off)
        .sync_mode(SyncMode::Spf));
    assert!(matches!(e, PmemError::NoTracking), "{e}");
    assert!(e.to_string().contains("tracking `off`"));
}

#[test]
fn bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let e = err(RegionOptions::file(dir.path(), PAGE));
    assert!(
        e.to_string().contains(&dir.path().display().to_string()),
        "{e}"
    );
    let missing = dir.path().join("no/such/dir/x.pmem");
    let e = err(RegionOptions::file(&missing, PAGE));
    assert!(matches!(e, PmemError::Sys { call: "open", .. }), "{e}");
    assert!(e.to_string().contains("no/such/dir"), "{e}");
}

#[test]
fn bad_bench_flags() {
    let cases: [(&str, &str, &str); 9] = [
        ("modes", "clflush,bogus", "expected clflush"),
        ("modes", ",", "empty"),
        ("sync", "sometimes", "expected default or spf"),
        ("sizes", "64,0", "must be > 0"),
        ("sizes", "12q", "suffix"),
        ("wbarrier-ns", "-5", "whole number"),
        ("reps", "0", "1 to"),
        ("backing", "tape", "memfd or file:PATH"),
        ("tracking", "psychic", "auto, uffd or mprotect"),
    ];
    for (flag, value, want) in cases {
        let e = MsyncBenchOptions::parse(&[(flag, value)]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(flag) && msg.contains(want),
            "{flag}={value}: {msg}"
        );
    }
    let e = MsyncBenchOptions::parse(&[("colour", "blue")]).unwrap_err();
    assert!(matches!(e, PmemError::UnknownFlag(_)), "{e}");
    let o = MsyncBenchOptions::parse(&[("--modes", "wof,disk"), ("reps", "7")]).unwrap();
    assert_eq!(o.reps, Some(7));
}

// ---- cases that need their own process -----------------------------------

fn run_child(test: &str, role: &str) -> std::process::ExitStatus {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("STORLAB_PMEM_CHILD", role)
        .output()
        .unwrap();
    eprintln!(
        "child {role}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.status
}

fn child_role() -> Option<String> {
    std::env::var("STORLAB_PMEM_CHILD").ok()
}

/// Install a seccomp filter on this thread that fails `userfaultfd(2)` and
/// `ioctl(USERFAULTFD_IOC_NEW)` with EPERM, as a container runtime's
/// default profile does.
#[cfg(target_arch = "x86_64")]
fn forbid_userfaultfd() {
    #[repr(C)]
    struct SockFilter {
        code: u16,
        jt: u8,
        jf: u8,
        k: u32,
    }
    #[repr(C)]
    struct SockFprog {
        len: u16,
        filter: *const SockFilter,
    }
    // BPF_LD | BPF_W | BPF_ABS (0x00 | 0x00 | 0x20), BPF_JMP | BPF_JEQ |
    // BPF_K (0x05 | 0x10 | 0x00), BPF_RET | BPF_K (0x06 | 0x00).
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const USERFAULTFD_IOC_NEW: u32 = 0xAA00;
    let f = |code, jt, jf, k| SockFilter { code, jt, jf, k };
    let prog = [
        f(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        f(JEQ_K, 0, 1, libc::SYS_userfaultfd as u32),
        f(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32),
        f(JEQ_K, 0, 3, libc::SYS_ioctl as u32),
        f(LD_W_ABS, 0, 0, 24), // low half of seccomp_data.args[1]
        f(JEQ_K, 0, 1, USERFAULTFD_IOC_NEW),
        f(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32),
        f(RET_K, 0, 0, RET_ALLOW),
    ];
    let fprog = SockFprog {
        len: prog.len() as u16,
        filter: prog.as_ptr(),
    };
    // SAFETY: prctl with documented arguments; the filter outlives the call
    // (the kernel copies it).
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(libc::PR_SET_SECCOMP, 2, &fprog as *const SockFprog, 0, 0),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
fn child_without_userfaultfd() {
    if child_role().as_deref() != Some("no-uffd") {
        return;
    }
    forbid_userfaultfd();
    let e = err(RegionOptions::memfd(4 * PAGE).tracking(TrackingChoice::Uffd));
    assert!(matches!(e, PmemError::UffdPermission { .. }), "{e}");
    assert!(e.to_string().contains("not permitted"), "{e}");
    println!("explicit uffd: {e}");
    // Auto falls back to mprotect and says why; SPF still works.
    let mut r = Region::map(
        &RegionOptions::memfd(4 * PAGE)
            .tracking(TrackingChoice::Auto)
            .sync_mode(SyncMode::Spf),
    )
    .unwrap();
    assert_eq!(r.tracking(), TrackingKind::Mprotect);
    let note = r.tracking_note().unwrap().to_string();
    assert!(note.contains("uffd-wp-async unavailable"), "{note}");
    println!("auto: {note}");
    r.as_mut_slice()[PAGE as usize * 2] = 1;
    r.sync(0, 4 * PAGE).unwrap();
    assert_eq!(r.counters().lines_flushed, 64);
    assert_eq!(
        storlab_pmem::capabilities().dirty_tracking,
        TrackingKind::Mprotect
    );
}

#[test]
fn missing_userfaultfd_permission_is_a_clear_error() {
    if child_role().is_some() {
        return;
    }
    let st = run_child("child_without_userfaultfd", "no-uffd");
    assert!(st.success(), "child failed: {st:?}");
}

#[test]
fn child_foreign_segfault() {
    if child_role().as_deref() != Some("segv") {
        return;
    }
    // A fallback region installs the SIGSEGV handler...
    let mut r =
        Region::map(&RegionOptions::memfd(PAGE).tracking(TrackingChoice::Mprotect)).unwrap();
    r.as_mut_slice()[0] = 1; // ...which handles this fault,
                             // SAFETY: a fresh inaccessible page; the write below is meant to fault.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE as usize,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    } as *mut u8;
    println!("about to fault");
    // SAFETY: deliberately invalid (PROT_NONE); the process must die.
    unsafe { std::ptr::write_volatile(p, 1) };
    println!("survived a wild write: the handler swallowed a foreign fault");
    std::process::exit(0);
}

#[test]
fn a_foreign_segfault_still_kills_the_process() {
    if child_role().is_some() {
        return;
    }
    let st = run_child("child_foreign_segfault", "segv");
    assert_eq!(st.signal(), Some(libc::SIGSEGV), "{st:?}");
}
