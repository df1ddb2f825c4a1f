//! A cold tree: files that were on the device before the run (a source
//! tree unpacked earlier) with neither their names nor their inodes in
//! memory, as after a boot or `echo 3 > /proc/sys/vm/drop_caches`, which
//! drops the dentry and inode caches with the page cache
//! (Documentation/sysctl/vm.txt). The first request for such a file
//! reads, on the requesting thread's behalf, its directory's block (the
//! name's lookup: `xfs_dir_lookup`, `ext3_find_entry`) and then the block
//! holding its inode (`xfs_iread` reads the whole inode cluster,
//! `__ext3_get_inode_loc` the inode table's block), one after the other
//! as the path walk does; each block is read once, so the later files of
//! a directory or of an inode block find it cached, and a request that
//! needs a block another request is reading waits for that read.
//!
//! Where the blocks lie: XFS allocates a directory's inodes in chunks
//! beside the directory and a file's first data near its inode
//! (`xfs_ialloc_ag_select` keeps a directory's files in its allocation
//! group, `xfs_bmap_btalloc` aims a new file's first extent at its
//! inode's block), and ext3's block groups keep a directory's files,
//! their inodes and data together; so a tree laid out in order has each
//! directory block and inode block just before the files they serve
//! ([`FileLayer::create_tree_file`] takes their space as it lays the
//! files out).
//!
//! Simplifications: a directory is one block (a lookup in a directory of
//! more entries than a block holds would read its hash index first); the
//! blocks stay cached for the run (neither the buffer cache nor the
//! inode cache is sized); a read goes through the host stack on the
//! thread of the request that found the block cold (the one that sleeps
//! on it), and the other requests for that block wait for it.

use crate::breakdown::Component;
use crate::device::{Nanos, Op};
use crate::host::io::HostCx;
use crate::host::stack::Host;

use super::behaviour::{Layout, DIR_BLOCK_BYTES, INODE_BYTES};
use super::config::PAGE;
use super::layer::FileLayer;
use super::request::FsError;
use super::state::{ChildKind, MetaBuf, MetaState, Stage};

impl FileLayer {
    /// Create a file of `size` bytes of a cold tree, allocated as
    /// [`Layout::Allocated`], in directory `dir` (numbered by the
    /// caller; a new number starts a new directory, which takes its
    /// block beside this file), taking `inodes` inodes (1 for a file;
    /// more when the file stands for several files the run never opens,
    /// which fill inode blocks all the same). Its first request reads
    /// its directory's block and its inode's block unless they are
    /// cached (the module's notes). On a file system whose inodes are
    /// not read from the device (tmpfs, PMFS) it is a plain
    /// [`FileLayer::create_file`].
    pub fn create_tree_file(&mut self, size: u64, dir: u64, inodes: u64) -> Result<u32, FsError> {
        let Some(block) = self.be.inode_block_bytes.filter(|_| self.be.block_device) else {
            return self.create_file(size, Layout::Allocated);
        };
        let per_block = (block / INODE_BYTES).max(1);
        let dir_buf = match self.tree.dir {
            Some((d, b)) if d == dir => b,
            _ => {
                let b = self.meta_buf(DIR_BLOCK_BYTES)?;
                self.tree.dir = Some((dir, b));
                b
            }
        };
        let inode_buf = match self.tree.inode_block {
            Some(b) if self.tree.slots < per_block => b,
            _ => {
                let b = self.meta_buf(block)?;
                self.tree.inode_block = Some(b);
                // what a file standing for several spilled over
                self.tree.slots %= per_block;
                b
            }
        };
        self.tree.slots += inodes.max(1);
        let f = self.create_file(size, Layout::Allocated)?;
        self.files[f as usize].cold = Some((dir_buf, inode_buf));
        Ok(f)
    }

    /// A metadata block of `bytes`, placed where the next file would go.
    fn meta_buf(&mut self, bytes: u64) -> Result<u32, FsError> {
        let ext = self.take_space(bytes, PAGE, bytes)?;
        self.meta_bufs.push(MetaBuf {
            dev: ext[0].0,
            bytes,
            state: MetaState::Cold,
        });
        Ok(self.meta_bufs.len() as u32 - 1)
    }

    /// Parent `i`'s file is of a cold tree and a block it needs is not
    /// cached: read it, or wait for the read under way. True: the request
    /// waits in [`Stage::ColdMeta`]; false: nothing to read, go on.
    pub(super) fn cold_wait(
        &mut self,
        now: Nanos,
        i: u32,
        host: &mut Host,
        cx: &mut HostCx,
    ) -> bool {
        let file = self.parents[i as usize].req.file;
        let Some((dir, inode)) = self.files[file as usize].cold else {
            return false;
        };
        // the lookup, then the inode
        for b in [dir, inode] {
            let m = &mut self.meta_bufs[b as usize];
            match &mut m.state {
                MetaState::Cached => continue,
                MetaState::Reading(waiters) => waiters.push(i),
                MetaState::Cold => {
                    m.state = MetaState::Reading(vec![i]);
                    let (dev, bytes) = (m.dev, m.bytes);
                    self.counters.metadata_reads += 1;
                    self.child(
                        now,
                        i,
                        ChildKind::ColdMeta { buf: b },
                        Op::Read,
                        dev,
                        bytes,
                        false,
                        host,
                        cx,
                    );
                }
            }
            self.parents[i as usize].stage = Stage::ColdMeta;
            return true;
        }
        self.files[file as usize].cold = None;
        false
    }

    /// Metadata block `buf` has been read: it is cached, and the requests
    /// that waited for it go on (to the next block they need, or their
    /// own work, the wait charged to the file system).
    pub(super) fn cold_read_done(
        &mut self,
        now: Nanos,
        buf: u32,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        let waiters =
            match std::mem::replace(&mut self.meta_bufs[buf as usize].state, MetaState::Cached) {
                MetaState::Reading(w) => w,
                _ => Vec::new(),
            };
        for i in waiters {
            if self.cold_wait(now, i, host, cx) {
                continue;
            }
            let p = &mut self.parents[i as usize];
            p.bd.add(Component::FileSystem, now - p.submitted);
            p.lock_since = now;
            self.dispatch(now, i, host, cx);
        }
    }
}
