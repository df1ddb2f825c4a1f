//! Page runs `[a, b)` as both trackers report them.

/// Append `[a, b)` to `out`, merging with the last run when adjacent.
pub(crate) fn push_run(out: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    if let Some(last) = out.last_mut() {
        if last.1 == a {
            last.1 = b;
            return;
        }
    }
    out.push((a, b));
}
