//! Signals while serving: SIGTERM and SIGINT stop the server cleanly,
//! SIGUSR1 cuts the power (see [`ServeOptions::handle_signals`]).
//!
//! [`ServeOptions::handle_signals`]: crate::ServeOptions::handle_signals

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

pub(super) static SIGNALS: AtomicU32 = AtomicU32::new(0);
pub(super) const SIG_STOP: u32 = 1;
pub(super) const SIG_POWERCUT: u32 = 2;

extern "C" fn on_signal(sig: libc::c_int) {
    let bit = match sig {
        libc::SIGUSR1 => SIG_POWERCUT,
        _ => SIG_STOP,
    };
    // An atomic read-modify-write is async-signal-safe.
    SIGNALS.fetch_or(bit, Ordering::SeqCst);
}

/// Installs the handlers and puts the old ones back when dropped.
pub(super) struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    pub(super) fn install() -> io::Result<Self> {
        SIGNALS.store(0, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGUSR1] {
            // SAFETY: we build a zeroed sigaction, set a handler that only
            // does an atomic RMW (async-signal-safe), and keep the previous
            // action to restore it; all pointers are to live locals.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) != 0 {
                    return Err(io::Error::last_os_error());
                }
                old.push((sig, prev));
            }
        }
        Ok(SignalGuard { old })
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores an action previously returned by sigaction.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
    }
}
