//! The fingerprints of a saved index being built (`key << 32 | document` pairs): gathered in
//! memory up to a block, each full block sorted and written to an unnamed temporary file beside
//! the index (a sorted run, gone with the process whatever its end), and read back as one
//! sorted stream by merging the runs, as many times as the writer needs it. The memory is one
//! block's, whatever the collection's size.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::file::read_at;

/// Pairs read from a run at a time (1 MiB).
const READ_PAIRS: usize = 1 << 17;

/// Sorted runs of pairs, and the block being filled.
#[derive(Debug)]
pub(crate) struct SortedRuns {
    dir: PathBuf,
    block: usize,
    current: Vec<u64>,
    /// Each run and its count of pairs.
    runs: Vec<(fs::File, u64)>,
    total: u64,
}

impl SortedRuns {
    /// Runs written in `dir`, each of `block` pairs (at least one).
    pub(crate) fn new(dir: &Path, block: usize) -> SortedRuns {
        SortedRuns {
            dir: dir.to_path_buf(),
            block: block.max(1),
            current: Vec::new(),
            runs: Vec::new(),
            total: 0,
        }
    }

    /// Adds pairs, writing a sorted run each time the block fills.
    pub(crate) fn extend(&mut self, pairs: impl IntoIterator<Item = u64>) -> io::Result<()> {
        for p in pairs {
            if self.current.len() >= self.block {
                self.spill()?;
            }
            if self.current.capacity() == 0 {
                self.current.reserve_exact(self.block);
            }
            self.current.push(p);
            self.total += 1;
        }
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        use rayon::prelude::*;
        self.current.par_sort_unstable();
        let file = tempfile::tempfile_in(&self.dir)?;
        let mut w = io::BufWriter::with_capacity(1 << 20, &file);
        for chunk in self.current.chunks(READ_PAIRS) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
        w.flush()?;
        drop(w);
        self.runs.push((file, self.current.len() as u64));
        self.current.clear();
        Ok(())
    }

    /// Sorts the block being filled; call before [`SortedRuns::for_each_key`].
    pub(crate) fn finish(&mut self) {
        use rayon::prelude::*;
        self.current.par_sort_unstable();
    }

    /// Pairs added.
    pub(crate) fn len(&self) -> u64 {
        self.total
    }

    /// Calls `f` with each key and its documents, ascending (the pairs merged from every run
    /// and the block); stops at `f`'s first error.
    pub(crate) fn for_each_key(
        &self,
        f: &mut dyn FnMut(u32, &[u32]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut sources: Vec<Source<'_>> = self
            .runs
            .iter()
            .map(|(file, n)| Source::Run { file, left: *n, at: 0, buf: Vec::new(), pos: 0 })
            .collect();
        sources.push(Source::Memory(self.current.iter()));
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(p) = s.next()? {
                heap.push(Reverse((p, i)));
            }
        }
        let (mut key, mut docs) = (None::<u32>, Vec::<u32>::new());
        while let Some(Reverse((p, i))) = heap.pop() {
            if let Some(next) = sources[i].next()? {
                heap.push(Reverse((next, i)));
            }
            let k = (p >> 32) as u32;
            if key != Some(k) {
                if let Some(k0) = key {
                    f(k0, &docs)?;
                }
                key = Some(k);
                docs.clear();
            }
            docs.push(p as u32);
        }
        match key {
            Some(k) => f(k, &docs),
            None => Ok(()),
        }
    }
}

/// One sorted source of pairs: a run read by position, or the block in memory.
enum Source<'a> {
    Run { file: &'a fs::File, left: u64, at: u64, buf: Vec<u64>, pos: usize },
    Memory(std::slice::Iter<'a, u64>),
}

impl Source<'_> {
    fn next(&mut self) -> io::Result<Option<u64>> {
        match self {
            Source::Memory(it) => Ok(it.next().copied()),
            Source::Run { file, left, at, buf, pos } => {
                if *pos == buf.len() {
                    if *left == 0 {
                        return Ok(None);
                    }
                    let n = (*left).min(READ_PAIRS as u64) as usize;
                    let mut bytes = vec![0u8; n * 8];
                    read_at(file, &mut bytes, *at)?;
                    buf.clear();
                    buf.extend(
                        bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8"))),
                    );
                    (*at, *left, *pos) = (*at + bytes.len() as u64, *left - n as u64, 0);
                }
                *pos += 1;
                Ok(Some(buf[*pos - 1]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn grouped(runs: &SortedRuns) -> Vec<(u32, Vec<u32>)> {
        let mut out = Vec::new();
        runs.for_each_key(&mut |k, docs| {
            out.push((k, docs.to_vec()));
            Ok(())
        })
        .expect("read back");
        out
    }

    proptest! {
        /// Whatever the block size, the stream is the pairs sorted, grouped by key.
        #[test]
        fn the_merged_runs_are_the_pairs_sorted(
            pairs in proptest::collection::vec((0u32..50, 0u32..1000), 0..400),
            block in 1usize..64,
        ) {
            let dir = tempfile::tempdir().expect("test dir");
            let pairs: Vec<u64> = pairs.iter().map(|&(k, d)| (u64::from(k) << 32) | u64::from(d)).collect();
            let mut runs = SortedRuns::new(dir.path(), block);
            runs.extend(pairs.iter().copied()).expect("spilled");
            runs.finish();
            prop_assert_eq!(runs.len(), pairs.len() as u64);
            let mut sorted = pairs.clone();
            sorted.sort_unstable();
            let mut expected: Vec<(u32, Vec<u32>)> = Vec::new();
            for p in sorted {
                let (k, d) = ((p >> 32) as u32, p as u32);
                match expected.last_mut() {
                    Some((k0, docs)) if *k0 == k => docs.push(d),
                    _ => expected.push((k, vec![d])),
                }
            }
            prop_assert_eq!(grouped(&runs), expected.clone());
            // Read again: the runs are read by position, not consumed.
            prop_assert_eq!(grouped(&runs), expected);
        }
    }
}
