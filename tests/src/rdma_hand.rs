//! A hand-made RDMA peer: an offer of its own, where the context under test's connector
//! lands, and a socket to that context's offer, named with the offer's token — what a
//! hostile (or merely unusual) peer process would do, from inside the test.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, Mutex};

use doca_core::Dev;
use doca_link::discard::PeerFd;
use doca_link::rendezvous::{Offer, Offered};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::wire::{Desc, Hdr, Kind};

/// The peer's offer and what reached it.
pub struct HandMade {
    /// Its offer (service and token, in its descriptor).
    pub offered: Offered,
    /// The context's connector's socket, once it reached the offer (kept open: the
    /// connection lives while it does).
    pub inbox: Arc<Mutex<Option<PeerFd>>>,
}

impl HandMade {
    /// A peer with its offer up.
    pub fn new() -> HandMade {
        let inbox: Arc<Mutex<Option<PeerFd>>> = Arc::default();
        let slot = inbox.clone();
        let offered = doca_link::rendezvous::offer(Offer::Connection(Box::new(move |fd, _| {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(fd);
        })))
        .expect("an offer");
        HandMade { offered, inbox }
    }

    /// The peer's connection descriptor, granting `perms` (`doca_rdma_set_permissions`
    /// bits), with a context's default MTU (1 KiB) and GRH (off).
    pub fn desc(&self, perms: u32) -> Vec<u8> {
        Desc {
            transport: 0,
            mtu: 1024,
            grh: false,
            service: self.offered.service(),
            token: self.offered.token(),
            perms,
            gid_index: 0,
            max_msg: 65536,
            conn_id: 0,
        }
        .encode()
    }

    /// Connects to the context's offer `theirs` and names itself, handing `fds` over with
    /// the greeting (a shared rings area and a doorbell, or nothing: socket mode).
    pub fn dial(&self, theirs: &[u8], fds: &[BorrowedFd<'_>]) -> PeerFd {
        let d = Desc::parse(theirs).expect("the context's descriptor");
        let (sock, _) = doca_link::rendezvous::take_connection(d.service, &d.token).expect("its offer");
        let mut hello = Hdr { kind: Kind::Hello, flags: 0, seq: 0, imm: 0, len: 0 }.encode().to_vec();
        hello.extend_from_slice(&self.offered.token());
        doca_link::send(sock.as_fd(), &hello, fds).expect("the greeting");
        sock
    }
}

impl Default for HandMade {
    fn default() -> Self {
        HandMade::new()
    }
}

/// A started map of `len` zero bytes of this process's heap, for local reads and writes on
/// `dev` (the buffers a test's RDMA tasks send from and receive into).
pub fn local_map(dev: &Dev, len: usize) -> Mmap {
    let map = Mmap::create().expect("a map");
    map.set_memrange(vec![0u8; len]).expect("its memory");
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE).expect("its permissions");
    map.add_dev(dev).expect("its device");
    map.start().expect("started");
    map
}
