//! The peer budgets' limits as the topology sets them. The ledger itself — peer identity,
//! accounts and holds, one per peer process — is [`doca_link::budget`]'s, re-exported here.
//!
//! | item                    | what                                                          |
//! |-------------------------|---------------------------------------------------------------|
//! | [`limits`], [`global_limits`] | the limits in force: the topology's `cap peer.<name>` lines and `RLIMIT_NOFILE` |
//! | the rest                | [`doca_link::budget`]                                         |

use doca_core::Topology;

pub use doca_link::budget::*;

/// The limits of `topology` (its `cap peer.*` lines, else the defaults) with this process's
/// `RLIMIT_NOFILE` soft limit. A misspelt `peer.*` line → `INVALID_VALUE`.
pub fn limits(topology: &Topology) -> doca_core::Result<Limits> {
    if let Err(e) = topology.check_caps("peer", &CAPS) {
        doca_core::bail!(e.code(), "{e}");
    }
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let soft = nofile.current.or(nofile.maximum).unwrap_or(1 << 20).min(1 << 30);
    Ok(Limits::with_nofile(soft, |spec| topology.cap(spec)))
}

/// The limits of the process-wide topology (see [`Topology::global`]).
pub fn global_limits() -> doca_core::Result<Limits> {
    limits(Topology::global()?.as_ref())
}
