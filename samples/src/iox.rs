//! The bench's iceoryx2 rows (cargo feature `iceoryx2`, not built by default or by CI):
//! publish-subscribe ping-pong between two processes through iceoryx2 0.10, with the payload
//! copied in on send and out on receive, timed like the library's rows (one clock read per
//! round trip). The peer answers each ping on a second service.

use std::time::{Duration, Instant};

use iceoryx2::prelude::*;

/// One end: a publisher on `tx` and a subscriber on `rx`, for `N`-byte payloads.
struct End<const N: usize> {
    _node: Node<ipc::Service>,
    publisher: iceoryx2::port::publisher::Publisher<ipc::Service, [u8; N], ()>,
    subscriber: iceoryx2::port::subscriber::Subscriber<ipc::Service, [u8; N], ()>,
}

type Failure = Box<dyn std::error::Error>;

impl<const N: usize> End<N> {
    fn open(name: &str, tx: &str, rx: &str) -> Result<End<N>, Failure> {
        let node = NodeBuilder::new().create::<ipc::Service>()?;
        let service = |dir: &str| -> Result<_, Failure> {
            let name: ServiceName = format!("{name}/{dir}").as_str().try_into()?;
            Ok(node.service_builder(&name).publish_subscribe::<[u8; N]>().open_or_create()?)
        };
        let (out, inp) = (service(tx)?, service(rx)?);
        let publisher = out.publisher_builder().create()?;
        let subscriber = inp.subscriber_builder().create()?;
        Ok(End { _node: node, publisher, subscriber })
    }

    /// Sends a copy of `msg`.
    fn send(&self, msg: &[u8; N]) -> Result<(), Failure> {
        self.publisher.send_copy(*msg)?;
        Ok(())
    }

    /// Spins until a message arrives (copied into `out`) or `deadline` passes (looked at
    /// every 1024 polls, as the library's rows do).
    fn recv(&self, out: &mut [u8; N], deadline: Instant) -> Result<bool, Failure> {
        for poll in 1u32.. {
            if let Some(sample) = self.subscriber.receive()? {
                out.copy_from_slice(&*sample);
                return Ok(true);
            }
            if poll % 1024 == 0 && Instant::now() > deadline {
                return Ok(false);
            }
            std::hint::spin_loop();
        }
        Ok(false)
    }
}

/// The peer: answers every ping of `size` bytes (64 or 4096) on service `name` until none
/// came for two seconds.
pub fn pong(name: &str, size: usize) -> Result<(), Failure> {
    match size {
        64 => pong_n::<64>(name),
        _ => pong_n::<4096>(name),
    }
}

fn pong_n<const N: usize>(name: &str) -> Result<(), Failure> {
    let end = End::<N>::open(name, "pong", "ping")?;
    println!("ready");
    let mut buf = [0u8; N];
    while end.recv(&mut buf, Instant::now() + Duration::from_secs(2))? {
        end.send(&buf)?;
    }
    Ok(())
}

/// The measuring side: `n` round trips of `size` bytes (64 or 4096); their times in ns.
pub fn ping(name: &str, size: usize, n: u64) -> Result<Vec<f64>, Failure> {
    match size {
        64 => ping_n::<64>(name, n),
        _ => ping_n::<4096>(name, n),
    }
}

fn ping_n<const N: usize>(name: &str, n: u64) -> Result<Vec<f64>, Failure> {
    let end = End::<N>::open(name, "ping", "pong")?;
    // The peer's subscriber may not be connected yet: wait until a first ping comes back.
    let (mut msg, mut back) = ([7u8; N], [0u8; N]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        end.send(&msg)?;
        if end.recv(&mut back, Instant::now() + Duration::from_millis(20))? {
            break;
        }
        if Instant::now() > deadline {
            return Err("the iceoryx2 peer does not answer".into());
        }
    }
    // Late answers to the first pings: none may be left for the timed loop.
    while end.recv(&mut back, Instant::now() + Duration::from_millis(100))? {}
    let mut rtts = Vec::with_capacity(n as usize);
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 1..n {
        msg[0] = i as u8;
        let t = Instant::now();
        end.send(&msg)?;
        if !end.recv(&mut back, deadline)? {
            break;
        }
        rtts.push(t.elapsed().as_nanos() as f64);
    }
    Ok(rtts)
}
