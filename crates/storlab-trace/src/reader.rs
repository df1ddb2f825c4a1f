//! Opening traces and iterating over their records.

use crate::blkparse::BlkparseSource;
use crate::blktrace::{per_cpu_files, BlktraceSource};
use crate::disksim::DisksimParser;
use crate::error::TraceError;
use crate::fio::{header_version, FioParser};
use crate::linesrc::LineSource;
use crate::msr::MsrParser;
use crate::read_options::ReadOptions;
use crate::text::Lines;
use crate::{detect, Format, OpSet, TraceRecord};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Read buffer size per input file.
const BUF_SIZE: usize = 256 * 1024;

enum Source {
    Fio(LineSource<FioParser>),
    Msr(LineSource<MsrParser>),
    Disksim(LineSource<DisksimParser>),
    Blkparse(BlkparseSource),
    Blktrace(BlktraceSource),
    /// A closed-loop trace: checked as a whole by [`crate::closed::load_from`]
    /// (so read into memory), its requests merged in arrival order.
    Closed(std::vec::IntoIter<TraceRecord>),
}

/// The requests of a closed-loop trace as open-loop records: at their
/// recorded arrival, in arrival order (streams merged; ties keep the
/// stream order), with the recorded latency (arrival to device
/// completion) and the stream.
fn closed_records(trace: crate::closed::ClosedTrace) -> Vec<TraceRecord> {
    let mut out: Vec<TraceRecord> = trace
        .streams
        .into_iter()
        .flat_map(|(_, recs)| recs)
        .map(|r| TraceRecord {
            time_ns: r.arrival_ns,
            op: r.op,
            offset: r.offset,
            len: r.len,
            device: 0,
            recorded_latency_ns: Some(r.complete_ns - r.arrival_ns),
            stream: r.stream,
        })
        .collect();
    out.sort_by_key(|r| r.time_ns);
    out
}

/// A streaming reader over one trace: an iterator of records in time
/// order. Memory stays bounded whatever the trace's size. After an error
/// the iterator ends.
pub struct TraceReader {
    source: Source,
    format: Format,
    ops: OpSet,
    start_ns: u64,
    end_ns: u64,
    disk: Option<u32>,
    rebase: bool,
    origin: Option<u64>,
    filtered: u64,
    done: bool,
}

impl std::fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("format", &self.format)
            .field("skipped", &self.skipped())
            .field("filtered", &self.filtered)
            .finish_non_exhaustive()
    }
}

impl TraceReader {
    /// The format being read.
    pub fn format(&self) -> Format {
        self.format
    }

    /// How many bad lines (or blktrace records, or runs of corrupt bytes)
    /// were skipped so far; always 0 unless
    /// [`ReadOptions::skip_bad_lines`] is set.
    pub fn skipped(&self) -> u64 {
        match &self.source {
            Source::Fio(s) => s.skipped(),
            Source::Msr(s) => s.skipped(),
            Source::Disksim(s) => s.skipped(),
            Source::Blkparse(s) => s.skipped(),
            Source::Blktrace(s) => s.skipped(),
            Source::Closed(_) => 0,
        }
    }

    /// How many good records the filters (operation, time window, disk)
    /// left out so far.
    pub fn filtered(&self) -> u64 {
        self.filtered
    }

    #[inline]
    fn next_raw(&mut self) -> Option<Result<TraceRecord, TraceError>> {
        match &mut self.source {
            Source::Fio(s) => s.next_record(),
            Source::Msr(s) => s.next_record(),
            Source::Disksim(s) => s.next_record(),
            Source::Blkparse(s) => s.next_record(),
            Source::Blktrace(s) => s.next_record(),
            Source::Closed(s) => s.next().map(Ok),
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceRecord, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            let mut rec = match self.next_raw() {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Some(Ok(r)) => r,
            };
            if rec.time_ns >= self.end_ns {
                self.done = true;
                return None;
            }
            if rec.time_ns < self.start_ns
                || !self.ops.contains(rec.op)
                || self.disk.is_some_and(|d| d != rec.device)
            {
                self.filtered += 1;
                continue;
            }
            if self.rebase {
                let origin = *self.origin.get_or_insert(rec.time_ns);
                rec.time_ns -= origin;
            }
            return Some(Ok(rec));
        }
    }
}

fn open_file(path: &Path) -> Result<BufReader<File>, TraceError> {
    File::open(path)
        .map(|f| BufReader::with_capacity(BUF_SIZE, f))
        .map_err(|e| TraceError::Io {
            path: path.display().to_string(),
            source: e,
        })
}

/// Opens a trace file. With `format` `None` the format is detected from
/// the content. For blktrace, `path` may be one per-CPU file
/// (`sda.blktrace.0`) or the run's base name (`sda`); either way all the
/// run's per-CPU files next to it are merged. Use [`open_blktrace`] to
/// choose the files yourself.
pub fn open(
    path: &Path,
    format: Option<Format>,
    opts: &ReadOptions,
) -> Result<TraceReader, TraceError> {
    if matches!(format, None | Some(Format::Blktrace)) {
        if let Some(files) = per_cpu_files(path) {
            if format.is_some() || looks_binary(&files[0])? {
                return open_blktrace(&files, opts);
            }
        }
    }
    if format == Some(Format::Blktrace) {
        return open_blktrace(&[path.to_path_buf()], opts);
    }
    let reader = open_file(path)?;
    open_reader(Box::new(reader), &path.display().to_string(), format, opts)
}

fn looks_binary(path: &Path) -> Result<bool, TraceError> {
    let mut r = open_file(path)?;
    let head = r.fill_buf().map_err(|e| TraceError::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    Ok(crate::blktrace::detect_endian(head).is_some())
}

/// Opens the given blktrace per-CPU files (any number, any byte order each)
/// and merges them by time.
pub fn open_blktrace(paths: &[PathBuf], opts: &ReadOptions) -> Result<TraceReader, TraceError> {
    let inputs = paths
        .iter()
        .map(|p| {
            let r: Box<dyn BufRead + Send> = Box::new(open_file(p)?);
            Ok((Arc::<str>::from(p.display().to_string()), r))
        })
        .collect::<Result<Vec<_>, TraceError>>()?;
    Ok(blktrace_from_readers(inputs, opts))
}

/// Merges blktrace per-CPU streams given as readers (named for errors).
pub fn blktrace_from_readers(
    inputs: Vec<(Arc<str>, Box<dyn BufRead + Send>)>,
    opts: &ReadOptions,
) -> TraceReader {
    wrap(
        Source::Blktrace(BlktraceSource::new(inputs, opts)),
        Format::Blktrace,
        opts,
    )
}

/// Reads a trace from any buffered reader (stdin, memory, a decompressor).
/// `name` is used in error messages. With `format` `None` the format is
/// detected from the first buffered bytes.
pub fn open_reader(
    mut src: Box<dyn BufRead + Send>,
    name: &str,
    format: Option<Format>,
    opts: &ReadOptions,
) -> Result<TraceReader, TraceError> {
    let path: Arc<str> = Arc::from(name);
    let io = |e| TraceError::Io {
        path: name.to_string(),
        source: e,
    };
    let format = match format {
        Some(f) => f,
        None => {
            let head = src.fill_buf().map_err(io)?;
            detect(head).map_err(|reason| TraceError::UnknownFormat {
                path: name.to_string(),
                reason,
            })?
        }
    };
    let skip = opts.skip_bad_lines;
    let source = match format {
        Format::Fio2 | Format::Fio3 => {
            let mut lines = Lines::new(src, path);
            let version = loop {
                if !lines.advance()? {
                    return Err(TraceError::Input {
                        path: name.to_string(),
                        problem: "empty file (expected a `fio version 2 iolog` or `fio version 3 iolog` header)".into(),
                    });
                }
                if crate::text::is_blank(lines.line()) {
                    continue;
                }
                match header_version(lines.line()) {
                    Some(v) => break v,
                    None => {
                        return Err(lines.error(
                            "expected the header `fio version 2 iolog` or `fio version 3 iolog`"
                                .into(),
                        ))
                    }
                }
            };
            Source::Fio(LineSource::new(lines, FioParser::new(version), skip))
        }
        Format::Msr => Source::Msr(LineSource::new(
            Lines::new(src, path),
            MsrParser::default(),
            skip,
        )),
        Format::Disksim => Source::Disksim(LineSource::new(
            Lines::new(src, path),
            DisksimParser::default(),
            skip,
        )),
        Format::Blkparse => Source::Blkparse(BlkparseSource::new(Lines::new(src, path), opts)),
        Format::Blktrace => Source::Blktrace(BlktraceSource::new(vec![(path, src)], opts)),
        Format::Closed => {
            Source::Closed(closed_records(crate::closed::load_from(src, name)?).into_iter())
        }
    };
    let format = match &source {
        Source::Fio(s) if s.parser.version() == 2 => Format::Fio2,
        Source::Fio(_) => Format::Fio3,
        _ => format,
    };
    Ok(wrap(source, format, opts))
}

fn wrap(source: Source, format: Format, opts: &ReadOptions) -> TraceReader {
    TraceReader {
        source,
        format,
        ops: opts.ops,
        start_ns: opts.start_ns.unwrap_or(0),
        end_ns: opts.end_ns.unwrap_or(u64::MAX),
        disk: opts.disk,
        rebase: opts.rebase_time,
        origin: None,
        filtered: 0,
        done: false,
    }
}
