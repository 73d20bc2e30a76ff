//! A burst of requests from one process to a memory service that was busy meanwhile: every
//! request is served, however many piled up in the backlog (the per-process bound on
//! connections waiting for their token is for silent ones). Its own test process: the
//! memory service is the process's, and this test holds its thread up for a while.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use doca_link::rendezvous::{offer, take_connection, Offer, MAX_PENDING_PER_PEER};

#[test]
fn a_burst_of_requests_that_piled_up_while_the_service_was_busy_is_served() {
    let _fabric = doca_link::doctest::PrivateFabric::new();

    // The handler holds the service's thread at its first call until released, as a busy
    // (or descheduled) thread would; every call is counted and reported.
    let (entered_tx, entered) = mpsc::channel::<usize>();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let calls = Arc::new(AtomicUsize::new(0));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let (c, k) = (calls.clone(), kept.clone());
    let entered_tx = Mutex::new(entered_tx);
    let o = offer(Offer::Connection(Box::new(move |sock, _peer| {
        let n = c.fetch_add(1, Ordering::SeqCst) + 1;
        k.lock().unwrap().push(sock);
        let _ = entered_tx.lock().unwrap().send(n);
        if n == 1 {
            let _ = released.lock().unwrap().recv_timeout(Duration::from_secs(10));
        }
    })))
    .unwrap();

    let mut socks = vec![take_connection(o.service(), &o.token()).unwrap().0];
    assert_eq!(entered.recv_timeout(Duration::from_secs(10)), Ok(1), "the first request reached the handler");
    // While the thread is held, more requests than one process may have waiting pile up,
    // each with its token sent.
    let burst = MAX_PENDING_PER_PEER + 4;
    for _ in 0..burst {
        socks.push(take_connection(o.service(), &o.token()).unwrap().0);
    }
    release.send(()).unwrap();
    let mut last = 1;
    while last < 1 + burst {
        match entered.recv_timeout(Duration::from_secs(5)) {
            Ok(n) => last = n,
            Err(_) => break,
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1 + burst, "every request of the burst was served");
    drop(o);
    drop(socks);
}
