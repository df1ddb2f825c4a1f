//! Wake assist: keep idle CPUs polling instead of halted while replies are
//! about to go out.
//!
//! A client waiting for a reply blocks in `poll`, and its CPU goes idle. A
//! halted CPU must be sent an interrupt to run the client again, and in a
//! VM that costs 15-60 µs (an exit to the host and a reschedule of the
//! virtual CPU; this project's machines run with guest halt-polling off).
//! That cost lands on every reply a client sleeps for, so fio saw a 20 µs
//! device as 46 % slower than it is, while the zero-latency floor pays it
//! only in part. A CPU idling in the kernel's polling state instead is
//! woken by a flag, with no interrupt.
//!
//! So while replies are due soon (within `LEAD_NS`) or a connection is in
//! the reactor's idle-poll window (a queue-depth-1 client about to send
//! its next request), the server holds a CPU latency request of 0 µs
//! through `/dev/cpu_dma_latency` (the kernel's PM QoS interface, the one
//! tuned's latency profiles use); idle CPUs then poll. When nothing is due
//! for longer than `RELAX_NS` the request is dropped and CPUs halt again.
//! Tightening the request wakes idle CPUs, so it is done `LEAD_NS` ahead.
//!
//! The request is held by a helper thread (not the reactor): the reactor
//! publishes its next due time and idle-poll deadline in atomics
//! ([`Assist::publish`]) and unparks the helper only when a due time
//! earlier than the helper's planned wake-up appears. While CPUs poll the
//! helper looks again only every `RELAX_NS`: its own timer wake-ups are
//! interrupts too.
//!
//! Needs write access to `/dev/cpu_dma_latency` (root); without it the
//! assist is off and the report says so.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle, Thread};
use std::time::Duration;

use storlab_model::Nanos;

use crate::clock::{set_realtime, tighten_timer_slack, Clock, WallClock};

/// Poll from this long before a due time (the helper's own wake-up from
/// a halted CPU and the kernel waking the idle CPUs fit well inside it).
const LEAD_NS: u64 = 500_000;
/// Keep polling through gaps shorter than this (toggling costs the
/// interrupts the assist avoids).
const RELAX_NS: u64 = 2_000_000;
/// How often the helper re-checks while CPUs poll. Polling stops only
/// after a `RELAX_NS` gap, so looking sooner gains nothing, and every
/// wake-up of the helper is a timer interrupt that costs whoever is on
/// that CPU 10-20 µs in a VM (at a 200 µs period it put a bump at fio's
/// p90-p95 for a 20 µs device).
const CHECK_NS: u64 = RELAX_NS;
/// "No constraint": PM QoS's default value, µs.
const NO_LIMIT_US: i32 = 2_000_000_000;

/// What the reactor and the helper share.
struct State {
    /// The next reply or device wake-up due (`u64::MAX`: none).
    due: AtomicU64,
    /// Keep polling until then (a connection's idle-poll window).
    idle_until: AtomicU64,
    /// When the sleeping helper plans to wake (0: awake).
    planned: AtomicU64,
    /// Times the CPUs were switched to polling.
    tightened: Arc<AtomicU64>,
    stop: AtomicBool,
}

/// The helper thread and the reactor's side of it.
pub(crate) struct Assist {
    state: Arc<State>,
    thread: Option<(Thread, JoinHandle<()>)>,
    why_off: Option<String>,
}

impl Assist {
    /// Start the helper (unless `on` is false or the latency request
    /// cannot be opened); `realtime`: run it `SCHED_FIFO`.
    pub(crate) fn start(
        clock: WallClock,
        on: bool,
        realtime: bool,
        tightened: Arc<AtomicU64>,
    ) -> Assist {
        let state = Arc::new(State {
            due: AtomicU64::new(u64::MAX),
            idle_until: AtomicU64::new(0),
            planned: AtomicU64::new(u64::MAX),
            tightened,
            stop: AtomicBool::new(false),
        });
        let mut assist = Assist {
            state,
            thread: None,
            why_off: None,
        };
        if !on {
            assist.why_off = Some("turned off".into());
            return assist;
        }
        let qos = match OpenOptions::new().write(true).open("/dev/cpu_dma_latency") {
            Ok(f) => f,
            Err(e) => {
                assist.why_off = Some(format!("/dev/cpu_dma_latency: {e}"));
                return assist;
            }
        };
        let s = assist.state.clone();
        match thread::Builder::new()
            .name("nbd-assist".into())
            .spawn(move || {
                // Its timer must fire on time (`LEAD_NS` ahead of a
                // deadline) even with clients on every CPU: at normal
                // priority it was seen waking 1.4 ms late, after the
                // reply it was to prepare for. It sleeps nearly always
                // and does a system call per `CHECK_NS` at most, so
                // real-time priority costs the clients nothing.
                if realtime {
                    set_realtime(true);
                }
                helper(&s, &clock, qos)
            }) {
            Ok(h) => assist.thread = Some((h.thread().clone(), h)),
            Err(e) => assist.why_off = Some(format!("spawning the helper: {e}")),
        }
        assist
    }

    /// `None` when on, else why not.
    pub(crate) fn why_off(&self) -> Option<&str> {
        self.why_off.as_deref()
    }

    /// The reactor's view at `now`: the next due time (`None`: nothing
    /// waits) and the latest idle-poll deadline.
    pub(crate) fn publish(&self, now: Nanos, due: Option<Nanos>, idle_until: Nanos) {
        let Some((thread, _)) = &self.thread else {
            return;
        };
        let s = &self.state;
        let due = due.unwrap_or(u64::MAX);
        if s.due.load(Ordering::Relaxed) == due
            && s.idle_until.load(Ordering::Relaxed) == idle_until
        {
            return;
        }
        s.idle_until.store(idle_until, Ordering::SeqCst);
        s.due.store(due, Ordering::SeqCst);
        let want_from = if idle_until > now {
            now
        } else {
            due.saturating_sub(LEAD_NS)
        };
        // The helper announces its plan, then re-reads `due`: one side
        // always sees the other.
        if want_from < s.planned.load(Ordering::SeqCst) {
            thread.unpark();
        }
    }
}

impl Drop for Assist {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        if let Some((t, h)) = self.thread.take() {
            t.unpark();
            let _ = h.join();
        }
    }
}

fn set_limit(qos: &mut File, us: i32) -> bool {
    qos.write_all(&us.to_ne_bytes()).is_ok()
}

/// What the helper does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Hold the 0 µs request; look again after this many ns.
    Poll(u64),
    /// Drop the request; wake at this time (`u64::MAX`: untimed).
    Relax(Nanos),
}

/// The decision at `now`, given the idle-poll deadline, the next due time
/// and when polling was last needed (`None`: CPUs do not poll now).
/// Hysteresis: once polling, keep on through gaps shorter than `RELAX_NS`
/// on either side.
fn plan(now: Nanos, idle_until: Nanos, due: Nanos, polling_since: Option<Nanos>) -> Plan {
    let need_from = if idle_until > now {
        now
    } else {
        due.saturating_sub(LEAD_NS)
    };
    if need_from <= now {
        return Plan::Poll(CHECK_NS);
    }
    // Polling was needed until the last window closed, whether or not the
    // helper was awake to see it: it samples only every `CHECK_NS`, and
    // one sample in a short gap between windows (a client pausing for
    // tens of µs) must not let go. (It did, every few ms at queue depth
    // 1, and the next window woke the helper to tighten again.)
    let last_need = polling_since.map(|p| p.max(idle_until.min(now)));
    if let Some(last_need) = last_need {
        if need_from - now <= RELAX_NS || now.saturating_sub(last_need) < RELAX_NS {
            return Plan::Poll((need_from - now).min(CHECK_NS));
        }
    }
    if due == u64::MAX {
        Plan::Relax(u64::MAX)
    } else {
        Plan::Relax(need_from)
    }
}

fn helper(s: &State, clock: &WallClock, mut qos: File) {
    tighten_timer_slack();
    // While CPUs poll: when polling was last needed.
    let mut polling: Option<Nanos> = None;
    loop {
        if s.stop.load(Ordering::SeqCst) {
            break;
        }
        let now = clock.now();
        let idle = s.idle_until.load(Ordering::SeqCst);
        let due = s.due.load(Ordering::SeqCst);
        let needed_now = idle > now || due.saturating_sub(LEAD_NS) <= now;
        match plan(now, idle, due, polling) {
            Plan::Poll(recheck) => {
                if polling.is_none() {
                    if !set_limit(&mut qos, 0) {
                        // The request cannot be changed: sleep as if
                        // relaxed rather than spin on the error.
                        thread::park_timeout(Duration::from_millis(100));
                        continue;
                    }
                    s.tightened.fetch_add(1, Ordering::Relaxed);
                    polling = Some(now);
                }
                if needed_now {
                    polling = Some(now);
                }
                s.planned.store(0, Ordering::SeqCst);
                thread::park_timeout(Duration::from_nanos(recheck));
            }
            Plan::Relax(wake) => {
                if polling.is_some() && set_limit(&mut qos, NO_LIMIT_US) {
                    polling = None;
                }
                s.planned.store(wake, Ordering::SeqCst);
                // Re-read after announcing the plan: a due time published
                // in between is seen here, or its publisher saw the plan.
                if s.due.load(Ordering::SeqCst) != due
                    || s.idle_until.load(Ordering::SeqCst) != idle
                    || s.stop.load(Ordering::SeqCst)
                {
                    continue;
                }
                let sleep = if wake == u64::MAX {
                    Duration::from_millis(100)
                } else {
                    Duration::from_nanos(wake - now)
                };
                thread::park_timeout(sleep);
            }
        }
    }
    // Dropping the file drops the request.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_in_idle_windows_and_ahead_of_deadlines_only() {
        let now = 10_000_000;
        // Nothing due, no window: relax, untimed.
        assert_eq!(plan(now, 0, u64::MAX, None), Plan::Relax(u64::MAX));
        // A connection's idle-poll window: poll now.
        assert_eq!(plan(now, now + 1, u64::MAX, None), Plan::Poll(CHECK_NS));
        // A reply due within the lead: poll now; later: wake at the lead.
        assert_eq!(plan(now, 0, now + LEAD_NS, None), Plan::Poll(CHECK_NS));
        let far = now + LEAD_NS + 5 * RELAX_NS;
        assert_eq!(plan(now, 0, far, None), Plan::Relax(far - LEAD_NS));
        // Past due (the reply is going out): still poll.
        assert_eq!(plan(now, 0, now - 5, None), Plan::Poll(CHECK_NS));
    }

    #[test]
    fn keeps_polling_through_short_gaps_only() {
        let now = 10_000_000;
        let near = now + LEAD_NS + RELAX_NS / 2;
        // Not polling: a near deadline still waits for its lead time.
        assert_eq!(plan(now, 0, near, None), Plan::Relax(near - LEAD_NS));
        // Polling (needed long ago): a near deadline keeps it on.
        let long_ago = Some(now - 2 * RELAX_NS);
        assert_eq!(
            plan(now, 0, near, long_ago),
            Plan::Poll((RELAX_NS / 2).min(CHECK_NS))
        );
        // Needed a moment ago, nothing due: keep on for a while...
        assert_eq!(
            plan(now, 0, u64::MAX, Some(now - RELAX_NS / 2)),
            Plan::Poll(CHECK_NS)
        );
        // ...then let go.
        assert_eq!(plan(now, 0, u64::MAX, long_ago), Plan::Relax(u64::MAX));
        // Last looked long ago, but a window closed a moment ago: keep on;
        // one that closed long ago does not count.
        assert_eq!(
            plan(now, now - 20_000, u64::MAX, long_ago),
            Plan::Poll(CHECK_NS)
        );
        assert_eq!(
            plan(now, now - 2 * RELAX_NS, u64::MAX, long_ago),
            Plan::Relax(u64::MAX)
        );
        // Not polling: a closed window does not start it.
        assert_eq!(
            plan(now, now - 20_000, u64::MAX, None),
            Plan::Relax(u64::MAX)
        );
        let far = now + LEAD_NS + 5 * RELAX_NS;
        assert_eq!(plan(now, 0, far, long_ago), Plan::Relax(far - LEAD_NS));
    }
}
