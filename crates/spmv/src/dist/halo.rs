//! The halo of a distributed CSR block: which entries of `x` this rank
//! needs from others (the columns of its rows that other ranks own), and
//! which of its own entries others need. Computed once from the column
//! pattern ([`HaloPlan::new`]); each SpMV then exchanges exactly those
//! entries with nonblocking point-to-point messages ([`HaloPlan::exchange`]),
//! one message per pair of ranks that share columns, while the caller
//! multiplies the columns it owns.

use core::ops::Range;
use std::time::Instant;

use mpi::request::multiple_scope;
use mpi::topology::Communicator;
use mpi::traits::{Destination, Source};

use super::comm::RankComm;
use crate::masa::Split;

/// The message tag of halo exchanges (one message per pair of ranks and
/// SpMV; MPI keeps messages of one pair in order).
const HALO_TAG: i32 = 0x5e1a;

/// Who sends which entries of `x` to whom, for one rank.
///
/// # Examples
///
/// See [`crate::dist::DistCsr`], which builds and uses one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaloPlan {
    /// The global column of each halo entry, grouped by owner (ranks
    /// ascending), ascending within a group.
    halo_cols: Vec<u32>,
    /// For each rank this one receives from: the rank and its entries' range
    /// in the halo buffer.
    recv: Vec<(usize, Range<usize>)>,
    /// For each rank this one sends to: the rank and its range in `send_idx`.
    send: Vec<(usize, Range<usize>)>,
    /// Local indices (into this rank's `x`) of the entries to send, grouped
    /// by destination.
    send_idx: Vec<u32>,
}

/// Where the time of one exchange went, on the thread that ran it.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub(crate) struct ExchangeTimes {
    /// From posting the messages until all had completed.
    pub(crate) total: f64,
    /// Waiting for messages after the work to overlap had run out.
    pub(crate) exposed: f64,
}

impl HaloPlan {
    /// The plan for this rank's block of rows, whose global column indices
    /// are `cols_used` (any order, repeats allowed), with the columns split
    /// over ranks as `cols`. Collective: every rank calls it at once.
    ///
    /// # Panics
    ///
    /// If `cols` does not have one chunk per rank or a column is outside it.
    pub(crate) fn new(comm: &RankComm, cols: &Split, cols_used: impl Iterator<Item = u32>) -> HaloPlan {
        assert_eq!(cols.threads(), comm.size(), "one column chunk per rank");
        let mine = cols.range(comm.rank());
        let mut halo_cols: Vec<u32> = cols_used.filter(|&j| !mine.contains(&(j as usize))).collect();
        halo_cols.sort_unstable();
        halo_cols.dedup();
        // Owners ascend with the column, so the sorted columns are grouped.
        let owner = |j: u32| cols.bounds().partition_point(|&b| b <= j as usize) - 1;
        let mut wanted: Vec<Vec<u32>> = vec![Vec::new(); comm.size()];
        let mut recv = Vec::new();
        let mut at = 0;
        while at < halo_cols.len() {
            let r = owner(halo_cols[at]);
            let end = at + halo_cols[at..].partition_point(|&j| owner(j) == r);
            wanted[r].extend_from_slice(&halo_cols[at..end]);
            recv.push((r, at..end));
            at = end;
        }
        // Tell every owner which of its columns this rank wants.
        let asked = comm.all_to_all_var(&wanted);
        let mut send = Vec::new();
        let mut send_idx = Vec::new();
        for (r, cols_wanted) in asked.into_iter().enumerate() {
            if cols_wanted.is_empty() {
                continue;
            }
            let start = send_idx.len();
            send_idx.extend(cols_wanted.iter().map(|&j| j - mine.start as u32));
            send.push((r, start..send_idx.len()));
        }
        HaloPlan { halo_cols, recv, send, send_idx }
    }

    /// The global column of each halo entry, in halo-buffer order.
    pub fn halo_cols(&self) -> &[u32] {
        &self.halo_cols
    }

    /// Entries of `x` this rank receives per SpMV.
    pub fn recv_len(&self) -> usize {
        self.halo_cols.len()
    }

    /// Entries of `x` this rank sends per SpMV.
    pub fn send_len(&self) -> usize {
        self.send_idx.len()
    }

    /// How many ranks this one receives from, and sends to.
    pub fn neighbours(&self) -> (usize, usize) {
        (self.recv.len(), self.send.len())
    }

    /// One exchange: packs the entries others need from `x` into
    /// `send_buf`, posts every receive (into `halo`) and send, then calls
    /// `overlap` (which does one piece of the work that needs no halo and
    /// returns whether more remains) until the messages complete or the
    /// work runs out, testing the messages between pieces so they progress,
    /// and waits for what is left. Any work `overlap` still has after the
    /// messages complete is done before returning.
    ///
    /// # Panics
    ///
    /// If `send_buf` or `halo` has the wrong length, or an index is outside `x`.
    pub(crate) fn exchange(
        &self,
        comm: &RankComm,
        x: &[f64],
        send_buf: &mut [f64],
        halo: &mut [f64],
        mut overlap: impl FnMut() -> bool,
    ) -> ExchangeTimes {
        assert_eq!(send_buf.len(), self.send_idx.len(), "send buffer length");
        assert_eq!(halo.len(), self.halo_cols.len(), "halo buffer length");
        let start = Instant::now();
        for (b, &i) in send_buf.iter_mut().zip(&self.send_idx) {
            *b = x[i as usize];
        }
        let world = comm.raw();
        let mut more = true;
        let exposed = multiple_scope(self.recv.len() + self.send.len(), |scope, requests| {
            let mut rest = &mut halo[..];
            for (r, range) in &self.recv {
                let (head, tail) = core::mem::take(&mut rest).split_at_mut(range.len());
                rest = tail;
                let source = world.process_at_rank(*r as i32);
                requests.add(source.immediate_receive_into_with_tag(scope, head, HALO_TAG));
            }
            let send_buf = &*send_buf;
            for (r, range) in &self.send {
                let dest = world.process_at_rank(*r as i32);
                requests.add(dest.immediate_send_with_tag(scope, &send_buf[range.clone()], HALO_TAG));
            }
            let mut done = Vec::new();
            while more {
                more = overlap();
                if requests.test_all(&mut done) {
                    return 0.0;
                }
            }
            let wait = Instant::now();
            requests.wait_all(&mut done);
            wait.elapsed().as_secs_f64()
        });
        let total = start.elapsed().as_secs_f64();
        while more {
            more = overlap();
        }
        ExchangeTimes { total, exposed }
    }
}
