//! How byte ranges fall onto cache lines and pages: the geometry the
//! cost model's flushes and SPF's page tracking count in.

/// Number of cache lines of `line_bytes` touched by `[offset, offset+len)`.
/// Zero for an empty range. Saturates instead of overflowing.
pub fn covered_lines(offset: u64, len: u64, line_bytes: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    let last = offset.saturating_add(len - 1);
    last / line_bytes - offset / line_bytes + 1
}

/// The part of one page that a range covers, when it does not cover the
/// whole page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialPage {
    /// Page index (byte offset / page size).
    pub page: u64,
    /// First byte of the covered part, as an offset from the region start.
    pub offset: u64,
    /// Bytes covered (less than a page).
    pub len: u64,
}

/// How a byte range falls onto pages: an optional partly covered page at
/// each end and a run of wholly covered pages between them. SPF treats the
/// two kinds differently (see [`super::NvmmParams::sync_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSplit {
    /// Partly covered first page.
    pub head: Option<PartialPage>,
    /// First wholly covered page.
    pub full_first: u64,
    /// One past the last wholly covered page (`full_first == full_end`: none).
    pub full_end: u64,
    /// Partly covered last page (never the same page as `head`).
    pub tail: Option<PartialPage>,
}

impl PageSplit {
    /// Number of distinct pages the range touches.
    pub fn pages(&self) -> u64 {
        (self.full_end - self.full_first)
            + u64::from(self.head.is_some())
            + u64::from(self.tail.is_some())
    }
}

/// Split `[offset, offset+len)` into partial and whole pages of `page_bytes`.
/// The caller guarantees `offset + len` does not overflow.
pub fn split_pages(offset: u64, len: u64, page_bytes: u64) -> PageSplit {
    let none = PageSplit {
        head: None,
        full_first: 0,
        full_end: 0,
        tail: None,
    };
    if len == 0 {
        return none;
    }
    let end = offset + len;
    let full_first = offset.div_ceil(page_bytes);
    let full_end = end / page_bytes;
    if full_first < full_end {
        let head = (offset < full_first * page_bytes).then(|| PartialPage {
            page: offset / page_bytes,
            offset,
            len: full_first * page_bytes - offset,
        });
        let tail = (end > full_end * page_bytes).then(|| PartialPage {
            page: full_end,
            offset: full_end * page_bytes,
            len: end - full_end * page_bytes,
        });
        return PageSplit {
            head,
            full_first,
            full_end,
            tail,
        };
    }
    // No whole page: one partial page, or two adjacent partial pages.
    let first = offset / page_bytes;
    let last = (end - 1) / page_bytes;
    if first == last {
        PageSplit {
            head: Some(PartialPage {
                page: first,
                offset,
                len,
            }),
            full_first: first + 1,
            full_end: first + 1,
            tail: None,
        }
    } else {
        let boundary = last * page_bytes;
        PageSplit {
            head: Some(PartialPage {
                page: first,
                offset,
                len: boundary - offset,
            }),
            full_first: last,
            full_end: last,
            tail: Some(PartialPage {
                page: last,
                offset: boundary,
                len: end - boundary,
            }),
        }
    }
}
