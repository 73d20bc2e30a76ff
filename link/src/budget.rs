//! What one peer process may make this process hold: bytes of its memory mapped here, file
//! descriptors kept for it and threads serving it (a served export's, one per importer), per
//! connection and per peer process, with a reserve of descriptors kept for peers that hold
//! nothing yet (new honest handshakes).
//!
//! | item                    | what                                                          |
//! |-------------------------|---------------------------------------------------------------|
//! | [`CAPS`]                | the limits, as topology lines `cap peer.<name> <value>`       |
//! | [`Limits`]              | the limits in force (`doca_mmap::budget` reads them from the topology and `RLIMIT_NOFILE`) |
//! | [`PeerId`], [`peer_of`] | a peer process: its pid and an identity a reused pid does not share |
//! | [`Account`]             | what one connection (or one import) holds for its peer        |
//! | [`Hold`]                | one claim on an account, given back when it drops             |
//!
//! Every claim is checked against the connection's limit, the peer process's limit and the
//! reserve at once, under one process-wide lock (claims are rare: a handshake, a consumer
//! registration, an import; never on the data path). Beyond a limit the claim is refused
//! with `NO_MEMORY` (bytes) or `FULL` (descriptors) and a sentence naming the peer and the
//! limit, for the caller's one log line; nothing else is affected. What one peer holds never
//! counts against another.

use std::collections::HashMap;
use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::error::peer_fail;
use crate::{CapSpec, Error};
use parking_lot::Mutex;

/// Bytes of one peer's memory mapped here for one connection (its consumers' rings and
/// memory), or for one import of an export.
pub const MEM_PER_CONN: CapSpec = CapSpec {
    name: "peer.mem_per_conn",
    default: 4 << 30,
    descr: "bytes of a peer's memory mapped for one connection or one import",
};
/// Bytes of one peer process's memory mapped here, all its connections and exports together.
pub const MEM_PER_PROCESS: CapSpec = CapSpec {
    name: "peer.mem_per_process",
    default: 16 << 30,
    descr: "bytes of one peer process's memory mapped here, in all",
};
/// Descriptors one connection may hold here, in percent of `RLIMIT_NOFILE` (soft). The
/// percentages may exceed 100 (up to 10000): a budget larger than the process's limit is no
/// budget at all.
pub const FDS_PER_CONN_PCT: CapSpec = CapSpec {
    name: "peer.fds_per_conn_pct",
    default: 12,
    descr: "descriptors held for one connection, percent of RLIMIT_NOFILE (at least 16)",
};
/// Descriptors one peer process may hold here, all its connections together, in percent.
pub const FDS_PER_PROCESS_PCT: CapSpec = CapSpec {
    name: "peer.fds_per_process_pct",
    default: 25,
    descr: "descriptors held for one peer process, percent of RLIMIT_NOFILE",
};
/// Descriptors kept for peers that hold none yet, in percent of `RLIMIT_NOFILE`.
pub const FD_RESERVE_PCT: CapSpec = CapSpec {
    name: "peer.fd_reserve_pct",
    default: 12,
    descr: "descriptors kept for peers holding none yet (new handshakes), percent of RLIMIT_NOFILE (0: none)",
};
/// Threads of this process serving one peer process (a served export's threads: one per
/// importing connection, see `doca_mmap`'s served exports), all exports together.
pub const THREADS_PER_PROCESS: CapSpec = CapSpec {
    name: "peer.threads_per_process",
    default: 64,
    descr: "threads serving one peer process (served exports: one per importing connection)",
};
/// Doorbells one peer process may register here (engines of its to be woken by this
/// process's updates: a sync event's importers, see `doca_sync_event`), all objects together.
pub const DOORBELLS_PER_PROCESS: CapSpec = CapSpec {
    name: "peer.doorbells_per_process",
    default: 8,
    descr: "doorbells one peer process may register here (engines woken by this process's sync events)",
};
/// Every peer budget.
pub const CAPS: [CapSpec; 7] = [
    MEM_PER_CONN,
    MEM_PER_PROCESS,
    FDS_PER_CONN_PCT,
    FDS_PER_PROCESS_PCT,
    FD_RESERVE_PCT,
    THREADS_PER_PROCESS,
    DOORBELLS_PER_PROCESS,
];

/// The fewest descriptors a connection may hold (a connection and a few consumers), whatever
/// the percentage gives.
const MIN_FDS_PER_CONN: u64 = 16;

/// The limits in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes per connection (or import).
    pub mem_per_conn: u64,
    /// Bytes per peer process.
    pub mem_per_process: u64,
    /// Descriptors per connection.
    pub fds_per_conn: u64,
    /// Descriptors per peer process.
    pub fds_per_process: u64,
    /// Descriptors all peers together may hold: `RLIMIT_NOFILE` minus the reserve. A peer
    /// that holds none yet may go beyond (into the reserve) for its first claim.
    pub fds_all_peers: u64,
    /// Threads serving one peer process.
    pub threads_per_process: u64,
    /// Doorbells one peer process may register.
    pub doorbells_per_process: u64,
}

impl Limits {
    /// No limit at all.
    pub const NONE: Limits = Limits {
        mem_per_conn: u64::MAX,
        mem_per_process: u64::MAX,
        fds_per_conn: u64::MAX,
        fds_per_process: u64::MAX,
        fds_all_peers: u64::MAX,
        threads_per_process: u64::MAX,
        doorbells_per_process: u64::MAX,
    };

    /// The limits for a descriptor limit of `nofile`, reading each cap with `cap`.
    pub fn with_nofile(nofile: u64, cap: impl Fn(&CapSpec) -> u64) -> Limits {
        let pct = |spec: &CapSpec| nofile.saturating_mul(cap(spec).min(10_000)) / 100;
        let fds_per_conn = pct(&FDS_PER_CONN_PCT).max(MIN_FDS_PER_CONN);
        Limits {
            mem_per_conn: cap(&MEM_PER_CONN),
            mem_per_process: cap(&MEM_PER_PROCESS),
            fds_per_conn,
            fds_per_process: pct(&FDS_PER_PROCESS_PCT).max(fds_per_conn),
            // No reserve: no limit on all peers together either.
            fds_all_peers: match cap(&FD_RESERVE_PCT) {
                0 => u64::MAX,
                _ => nofile.saturating_sub(pct(&FD_RESERVE_PCT)),
            },
            threads_per_process: cap(&THREADS_PER_PROCESS),
            doorbells_per_process: cap(&DOORBELLS_PER_PROCESS),
        }
    }
}

/// A peer process: its pid, and an identity that a later process reusing the pid does not
/// share (the pidfd's inode where the kernel keeps pidfds in their own file system, Linux
/// 6.9 and later; else the process's start time, read while a pidfd held it alive).
///
/// The pid is for messages only: a peer in a PID namespace this process cannot see (a
/// container beside this one) has pid 0 here, and every such peer is still told apart by
/// its identity — budgets and places are counted per `PeerId`, never per pid. Without pidfs
/// (Linux before 6.9) such a peer has no identity: `NOT_FOUND` (see [`PeerId::from_pidfd`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerId {
    pid: i32,
    tag: u64,
}

/// `statfs` type of pidfs.
const PIDFS_MAGIC: u64 = 0x5049_4446;

impl PeerId {
    /// The identity of the process `pidfd` refers to, whose pid is `pid` (from the socket's
    /// credentials, or the pid the pidfd was opened for). `NOT_FOUND` when the process is
    /// gone (its pid may already name another).
    pub fn from_pidfd(pidfd: &OwnedFd, pid: i32) -> crate::Result<PeerId> {
        let gone = |e: &dyn fmt::Display| peer_fail!(Error::NotFound, "peer process {pid} is gone ({e})");
        if let Ok(fs) = rustix::fs::fstatfs(pidfd) {
            if fs.f_type as u64 == PIDFS_MAGIC {
                let st = rustix::fs::fstat(pidfd).map_err(|e| gone(&e))?;
                return Ok(PeerId { pid, tag: st.st_ino as u64 });
            }
        }
        if pid <= 0 {
            return Err(peer_fail!(
                Error::NotFound,
                "a peer of another PID namespace is told apart by its pidfd's inode, which this kernel does not give (pidfs, Linux 6.9)"
            ));
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| gone(&e))?;
        // Field 22 (start time), counted after the command name's closing parenthesis.
        let start = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(19))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| peer_fail!(Error::NotFound, "unreadable /proc/{pid}/stat"))?;
        // Still alive after the read: the file read was that process's, not a successor's.
        // (A pidfd turns readable when its process exits.)
        let mut fds = [rustix::event::PollFd::new(pidfd, rustix::event::PollFlags::IN)];
        let zero = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
        match rustix::event::poll(&mut fds, Some(&zero)) {
            Ok(0) => {}
            Ok(_) => return Err(gone(&"exited")),
            Err(e) => return Err(gone(&e)),
        }
        Ok(PeerId { pid, tag: start })
    }

    /// The identity of the process that has pid `pid` now (through `pidfd_open`): `NOT_FOUND`
    /// when there is none, `FULL` when this process has no descriptor left for the pidfd.
    pub fn of_pid(pid: i32) -> crate::Result<PeerId> {
        let raw = rustix::process::Pid::from_raw(pid)
            .ok_or_else(|| peer_fail!(Error::NotFound, "no process {pid}"))?;
        let fd =
            rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()).map_err(|e| match e {
                rustix::io::Errno::MFILE | rustix::io::Errno::NFILE => {
                    peer_fail!(Error::Full, "no descriptor left for a pidfd of process {pid}")
                }
                e => peer_fail!(Error::NotFound, "peer process {pid} is gone ({e})"),
            })?;
        PeerId::from_pidfd(&fd, pid)
    }

    /// The pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether it is this process.
    pub fn is_this_process(&self) -> bool {
        static ME: std::sync::OnceLock<Option<PeerId>> = std::sync::OnceLock::new();
        *ME.get_or_init(|| PeerId::of_pid(std::process::id() as i32).ok()) == Some(*self)
    }
}

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            0 => write!(f, "a process of another PID namespace (#{:x})", self.tag),
            pid => write!(f, "pid {pid}"),
        }
    }
}

/// The identity of the process at the other end of a socket whose credentials gave `pid`
/// (see [`PeerId`]): through the socket's own pidfd (`SO_PEERPIDFD`) where the kernel has
/// it, else a pidfd opened for `pid` right away (a peer that died and whose pid was reused
/// in between would be taken for the new process: its connection is dead anyway).
/// `NOT_FOUND` when that process is gone; `FULL` when no descriptor is left.
pub fn peer_of(sock: std::os::fd::BorrowedFd<'_>, pid: i32) -> crate::Result<PeerId> {
    match crate::pidfd::peer_pidfd(sock) {
        Some(pidfd) => PeerId::from_pidfd(&pidfd, pid),
        None if crate::pidfd::out_of_descriptors() => {
            Err(peer_fail!(Error::Full, "no descriptor left for the pidfd of peer {pid}"))
        }
        None => PeerId::of_pid(pid),
    }
}

/// A claim refused: the code (`NO_MEMORY` for bytes, `FULL` for descriptors) and a sentence
/// naming the peer and the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The DOCA code to return.
    pub code: Error,
    /// Why, naming the peer and the budget.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

/// What a claim, an account or a peer process holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Amounts {
    bytes: u64,
    fds: u64,
    threads: u64,
    doorbells: u64,
}

impl Amounts {
    fn add(&mut self, o: Amounts) {
        self.bytes += o.bytes;
        self.fds += o.fds;
        self.threads += o.threads;
        self.doorbells += o.doorbells;
    }

    fn sub(&mut self, o: Amounts) {
        self.bytes -= o.bytes;
        self.fds -= o.fds;
        self.threads -= o.threads;
        self.doorbells -= o.doorbells;
    }
}

#[derive(Default)]
struct Totals {
    held: Amounts,
    /// Accounts open for the peer (the entry goes with the last).
    accounts: u64,
}

#[derive(Default)]
struct Ledger {
    peers: HashMap<PeerId, Totals>,
    /// Descriptors held for every peer.
    fds: u64,
}

/// What every peer holds in this process.
static LEDGER: Mutex<Option<Ledger>> = Mutex::new(None);

struct AccountInner {
    peer: PeerId,
    limits: Limits,
    /// What the account holds (changed under the ledger's lock).
    held: Mutex<Amounts>,
}

/// What one connection (or one import) holds for its peer. Cloning gives another handle to
/// the same account; what it still holds is given back when the last handle and the last
/// [`Hold`] on it are gone.
#[derive(Clone)]
pub struct Account {
    inner: Arc<AccountInner>,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = *self.inner.held.lock();
        write!(
            f,
            "Account({}, {} bytes, {} fds, {} threads, {} doorbells)",
            self.inner.peer, h.bytes, h.fds, h.threads, h.doorbells
        )
    }
}

/// One claim on an [`Account`]: its bytes and descriptors are given back when it drops.
pub struct Hold {
    account: Account,
    amounts: Amounts,
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.amounts;
        write!(f, "Hold({}, {} bytes, {} fds)", self.account.inner.peer, a.bytes, a.fds)
    }
}

impl Account {
    /// A new account for a connection (or import) of `peer`, under `limits` — none when the
    /// peer is this very process (a server and its client in one process, an import of its
    /// own export): what it holds is counted, never refused.
    pub fn open(peer: PeerId, limits: Limits) -> Account {
        let limits = if peer.is_this_process() { Limits::NONE } else { limits };
        let mut ledger = LEDGER.lock();
        ledger.get_or_insert_with(Ledger::default).peers.entry(peer).or_default().accounts += 1;
        Account { inner: Arc::new(AccountInner { peer, limits, held: Mutex::default() }) }
    }

    /// The peer.
    pub fn peer(&self) -> PeerId {
        self.inner.peer
    }

    /// The limits it was opened with.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// What it holds now: (bytes, descriptors).
    pub fn held(&self) -> (u64, u64) {
        let h = *self.inner.held.lock();
        (h.bytes, h.fds)
    }

    /// What the peer process holds now, all its accounts together: (bytes, descriptors).
    pub fn peer_held(&self) -> (u64, u64) {
        let ledger = LEDGER.lock();
        let t = ledger.as_ref().and_then(|l| l.peers.get(&self.inner.peer));
        t.map_or((0, 0), |t| (t.held.bytes, t.held.fds))
    }

    /// Threads of this process serving the peer process now, all its accounts together.
    pub fn peer_threads(&self) -> u64 {
        let ledger = LEDGER.lock();
        ledger.as_ref().and_then(|l| l.peers.get(&self.inner.peer)).map_or(0, |t| t.held.threads)
    }

    /// Doorbells the peer process has registered here now, all its accounts together.
    pub fn peer_doorbells(&self) -> u64 {
        let ledger = LEDGER.lock();
        ledger.as_ref().and_then(|l| l.peers.get(&self.inner.peer)).map_or(0, |t| t.held.doorbells)
    }

    /// One doorbell the peer registers here, with the descriptor this process keeps to ring
    /// it: within the peer process's doorbell limit (`FULL` beyond it) and its descriptors.
    pub fn claim_doorbell(&self, what: &str) -> Result<Hold, Refusal> {
        self.claim_amounts(Amounts { fds: 1, doorbells: 1, ..Amounts::default() }, what)
    }

    /// Claims `bytes` mapped and `fds` descriptors for `what` (for the refusal's sentence):
    /// within the connection's and the peer process's limits, and — unless the peer holds
    /// no descriptor yet — within what all peers together may hold.
    pub fn claim(&self, bytes: u64, fds: u64, what: &str) -> Result<Hold, Refusal> {
        self.claim_with_threads(bytes, fds, 0, what)
    }

    /// [`Account::claim`] with `threads` threads of this process serving the peer, within
    /// the peer process's thread limit too (`FULL` beyond it).
    pub fn claim_with_threads(
        &self,
        bytes: u64,
        fds: u64,
        threads: u64,
        what: &str,
    ) -> Result<Hold, Refusal> {
        self.claim_amounts(Amounts { bytes, fds, threads, doorbells: 0 }, what)
    }

    fn claim_amounts(&self, c: Amounts, what: &str) -> Result<Hold, Refusal> {
        let Amounts { bytes, fds, threads, doorbells } = c;
        let (peer, l) = (self.inner.peer, &self.inner.limits);
        let mut guard = LEDGER.lock();
        let ledger = guard.get_or_insert_with(Ledger::default);
        let mut held = self.inner.held.lock();
        let totals = ledger.peers.entry(peer).or_default();
        let over = |code: Error, why: String| Err(Refusal { code, why: format!("{peer}: {what}: {why}") });
        if bytes > 0 {
            let conn = held.bytes.saturating_add(bytes);
            if conn > l.mem_per_conn {
                return over(
                    Error::NoMemory,
                    format!(
                        "{bytes} bytes of its memory would make {conn} mapped for this connection (budget {}, cap peer.mem_per_conn)",
                        l.mem_per_conn
                    ),
                );
            }
            let all = totals.held.bytes.saturating_add(bytes);
            if all > l.mem_per_process {
                return over(
                    Error::NoMemory,
                    format!(
                        "{bytes} bytes of its memory would make {all} mapped for this process (budget {}, cap peer.mem_per_process)",
                        l.mem_per_process
                    ),
                );
            }
        }
        if fds > 0 {
            let conn = held.fds + fds;
            if conn > l.fds_per_conn {
                return over(
                    Error::Full,
                    format!(
                        "{fds} descriptors would make {conn} for this connection (budget {}, cap peer.fds_per_conn_pct)",
                        l.fds_per_conn
                    ),
                );
            }
            let all = totals.held.fds + fds;
            if all > l.fds_per_process {
                return over(
                    Error::Full,
                    format!(
                        "{fds} descriptors would make {all} held for this process (budget {}, cap peer.fds_per_process_pct)",
                        l.fds_per_process
                    ),
                );
            }
            if totals.held.fds > 0 && ledger.fds + fds > l.fds_all_peers {
                return over(
                    Error::Full,
                    format!(
                        "{fds} descriptors would make {} held for all peers: the rest is kept for new peers (cap peer.fd_reserve_pct)",
                        ledger.fds + fds
                    ),
                );
            }
        }
        if threads > 0 && totals.held.threads + threads > l.threads_per_process {
            return over(
                Error::Full,
                format!(
                    "{threads} threads would make {} serving this process (budget {}, cap peer.threads_per_process)",
                    totals.held.threads + threads,
                    l.threads_per_process
                ),
            );
        }
        if doorbells > 0 && totals.held.doorbells + doorbells > l.doorbells_per_process {
            return over(
                Error::Full,
                format!(
                    "{doorbells} doorbells would make {} registered by this process (budget {}, cap peer.doorbells_per_process)",
                    totals.held.doorbells + doorbells,
                    l.doorbells_per_process
                ),
            );
        }
        totals.held.add(c);
        ledger.fds += fds;
        held.add(c);
        Ok(Hold { account: self.clone(), amounts: c })
    }

    fn give_back(&self, c: Amounts) {
        let mut guard = LEDGER.lock();
        let Some(ledger) = guard.as_mut() else { return };
        self.inner.held.lock().sub(c);
        ledger.fds -= c.fds;
        if let Some(t) = ledger.peers.get_mut(&self.inner.peer) {
            t.held.sub(c);
        }
    }
}

impl Hold {
    /// The account it is a claim on.
    pub fn account(&self) -> &Account {
        &self.account
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.amounts.bytes
    }

    /// Descriptors held.
    pub fn fds(&self) -> u64 {
        self.amounts.fds
    }

    /// Threads held.
    pub fn threads(&self) -> u64 {
        self.amounts.threads
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.account.give_back(self.amounts);
    }
}

impl Drop for AccountInner {
    /// Every hold keeps its account alive: nothing is held any more here.
    fn drop(&mut self) {
        let mut guard = LEDGER.lock();
        let Some(ledger) = guard.as_mut() else { return };
        if let Some(t) = ledger.peers.get_mut(&self.peer) {
            t.accounts -= 1;
            if t.accounts == 0 {
                ledger.peers.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::with_nofile(256, |spec| match spec.name {
            "peer.mem_per_conn" => 1 << 20,
            "peer.mem_per_process" => 2 << 20,
            _ => spec.default,
        })
    }

    /// A peer made up for the test (never a live process's identity).
    fn peer(n: u64) -> PeerId {
        PeerId { pid: -(n as i32), tag: n ^ 0xdead_beef_0000 ^ std::process::id() as u64 }
    }

    #[test]
    fn the_defaults_follow_the_descriptor_limit() {
        let l = Limits::with_nofile(20_000, |s| s.default);
        assert_eq!((l.fds_per_conn, l.fds_per_process, l.fds_all_peers), (2_400, 5_000, 17_600));
        assert_eq!((l.mem_per_conn, l.mem_per_process), (4 << 30, 16 << 30));
        let small = Limits::with_nofile(48, |s| s.default);
        assert_eq!((small.fds_per_conn, small.fds_per_process), (16, 16), "floors");
    }

    #[test]
    fn memory_beyond_the_connection_or_the_process_budget_is_refused_and_given_back_on_drop() {
        let p = peer(1);
        let a = Account::open(p, limits());
        let refused = a.claim(2 << 20, 0, "consumer 2").unwrap_err();
        assert_eq!(refused.code, Error::NoMemory);
        assert!(
            refused.why.contains(&p.to_string()) && refused.why.contains("peer.mem_per_conn"),
            "{refused}"
        );
        let h = a.claim(1 << 20, 1, "consumer 2").unwrap();
        assert_eq!(a.claim(1, 0, "more").unwrap_err().code, Error::NoMemory, "the connection is full");
        let (b, c) = (Account::open(p, limits()), Account::open(p, limits()));
        let _h2 = b.claim(1 << 20, 0, "x").unwrap();
        let err = c.claim(1 << 20, 0, "x").unwrap_err();
        assert!(err.why.contains("peer.mem_per_process"), "{err}");
        // Another peer is not affected by this one's claims.
        let other = Account::open(peer(2), limits());
        assert!(other.claim(1 << 20, 0, "x").is_ok());
        drop(h);
        assert_eq!(a.held(), (0, 0));
        assert!(c.claim(1 << 20, 0, "x").is_ok(), "given back");
    }

    #[test]
    fn this_process_is_not_budgeted_against_itself() {
        let me = PeerId::of_pid(std::process::id() as i32).unwrap();
        assert!(me.is_this_process() && !peer(4).is_this_process());
        let a = Account::open(me, limits());
        let h = a.claim(1 << 40, 1 << 20, "itself").unwrap();
        assert_eq!(a.held(), (1 << 40, 1 << 20), "counted");
        drop(h);
    }

    #[test]
    fn descriptors_are_capped_per_connection_and_per_process() {
        let l = limits();
        let p = peer(3);
        let a = Account::open(p, l);
        let _first = a.claim(0, l.fds_per_conn, "a connection").unwrap();
        assert_eq!(a.claim(0, 1, "one more").unwrap_err().code, Error::Full);
        let mut holds = Vec::new();
        let err = loop {
            let acct = Account::open(p, l);
            match acct.claim(0, 6, "a connection") {
                Ok(h) => holds.push(h),
                Err(e) => break e,
            }
        };
        assert_eq!(err.code, Error::Full);
        assert!(err.why.contains("peer.fds_per_process_pct"), "{err}");
        assert!(a.peer_held().1 <= l.fds_per_process);
    }

    #[test]
    fn threads_are_capped_per_process_and_given_back_on_drop() {
        let l = Limits { threads_per_process: 3, ..limits() };
        let p = peer(5);
        let holds: Vec<Hold> =
            (0..3).map(|_| Account::open(p, l).claim_with_threads(0, 5, 1, "an importer").unwrap()).collect();
        let a = Account::open(p, l);
        assert_eq!(a.peer_threads(), 3);
        let err = a.claim_with_threads(0, 5, 1, "an importer").unwrap_err();
        assert_eq!(err.code, Error::Full);
        assert!(err.why.contains("peer.threads_per_process"), "{err}");
        assert_eq!(a.peer_held().1, 15, "the refused claim took nothing");
        assert!(
            Account::open(peer(6), l).claim_with_threads(0, 5, 1, "x").is_ok(),
            "another peer is not affected"
        );
        drop(holds);
        assert_eq!(a.peer_threads(), 0);
        assert!(a.claim_with_threads(0, 5, 1, "an importer").is_ok(), "given back");
    }

    #[test]
    fn doorbells_are_capped_per_process_and_each_holds_a_descriptor() {
        let l = Limits { doorbells_per_process: 2, ..limits() };
        let p = peer(7);
        let (a, b) = (Account::open(p, l), Account::open(p, l));
        let first = a.claim_doorbell("a doorbell").unwrap();
        let _second = b.claim_doorbell("a doorbell").unwrap();
        assert_eq!((a.peer_doorbells(), a.peer_held().1), (2, 2), "one descriptor each");
        let err = a.claim_doorbell("a doorbell").unwrap_err();
        assert_eq!(err.code, Error::Full);
        assert!(err.why.contains("peer.doorbells_per_process"), "{err}");
        assert!(Account::open(peer(8), l).claim_doorbell("x").is_ok(), "another peer is not affected");
        drop(first);
        assert!(a.claim_doorbell("a doorbell").is_ok(), "given back");
    }
}
