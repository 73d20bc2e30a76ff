//! `doca_comm_channel.h` (the legacy endpoint API), in one process: limits, the header's
//! error table, statistics, the service state snapshots, disconnection.

use std::time::{Duration, Instant};

use doca_cc::legacy::{self, Endpoint, InitAttr, MsgFlags, PeerAddr, INIT_FLAG_NONBLOCK};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, Error, RepFilter};

use crate::support::unique;

fn service(name: &str) -> Endpoint {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
    let ep = Endpoint::create().unwrap();
    ep.set_device(&dev).unwrap();
    ep.set_device_rep(&rep).unwrap();
    ep.listen(name).unwrap();
    ep
}

fn client(name: &str) -> (Endpoint, PeerAddr) {
    let ep = Endpoint::create().unwrap();
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    let peer = ep.connect(name).unwrap();
    (ep, peer)
}

/// Retries `f` while it says AGAIN (or the handshake is in progress), for at most 20 s.
fn retry<T, E: Copy + Into<Error>>(mut f: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        match f() {
            Err(e)
                if matches!(e.into(), Error::Again | Error::ConnectionInProgress) && Instant::now() < end =>
            {
                std::thread::sleep(Duration::from_micros(50));
            }
            r => return r,
        }
    }
}

#[test]
fn doca_comm_channel_ep_set_max_msg_size_and_queue_sizes_and_the_caps() {
    let ep = Endpoint::create().unwrap();
    ep.set_max_msg_size(100).unwrap();
    assert_eq!(ep.max_msg_size(), 256, "raised to the minimum");
    ep.set_send_queue_size(3).unwrap();
    ep.set_recv_queue_size(5).unwrap();
    assert_eq!((ep.send_queue_size(), ep.recv_queue_size()), (16, 16));
    ep.set_send_queue_size(100).unwrap();
    assert_eq!(ep.send_queue_size(), 128, "rounded up to a power of two");
    assert_eq!(ep.set_max_msg_size(4081), Err(Error::InvalidValue));
    // DOCA 2.5's library compares the size less one with its maximum (8191): 8192 is taken.
    assert_eq!(ep.set_send_queue_size(8193), Err(Error::InvalidValue));
    assert_eq!(ep.set_recv_queue_size(8193), Err(Error::InvalidValue));
    ep.set_send_queue_size(8192).unwrap();
    assert_eq!(ep.send_queue_size(), 8192);
    ep.set_send_queue_size(100).unwrap();
    ep.set_max_msg_size(4080).unwrap();
    ep.set_recv_queue_size(8190).unwrap();
    assert_eq!(
        (ep.max_msg_size(), ep.recv_queue_size()),
        (4080, 8192),
        "8190 gives 8192, as in secure_channel"
    );
    assert_eq!(legacy::get_max_service_name_len(), 120);
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    assert_eq!(legacy::get_max_message_size(dev.as_devinfo()), Ok(4080));
    assert_eq!(legacy::get_max_send_queue_size(dev.as_devinfo()), Ok(8191));
    assert_eq!(legacy::get_max_recv_queue_size(dev.as_devinfo()), Ok(8191));
    assert_eq!(legacy::get_service_max_num_connections(dev.as_devinfo()), Ok(512));

    let old = Endpoint::create_with_attr(&InitAttr {
        cookie: 7,
        flags: INIT_FLAG_NONBLOCK,
        maxmsgs: 4,
        msgsize: 64,
    })
    .unwrap();
    assert_eq!((old.cookie(), old.max_msg_size(), old.send_queue_size()), (7, 256, 16));
    let big = InitAttr { cookie: 0, flags: 0, maxmsgs: 16, msgsize: 5000 };
    assert_eq!(Endpoint::create_with_attr(&big).unwrap_err(), Error::InvalidValue);
}

#[test]
fn doca_comm_channel_ep_listen_connect_and_the_service_only_calls() {
    let name = unique("rules");
    let ep = Endpoint::create().unwrap();
    assert_eq!(ep.listen(&name), Err(Error::BadState), "no device");
    let host = open_device_with_pci("3b:00.0", None).unwrap();
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "3b:00.0").unwrap();
    ep.set_device(&dpu).unwrap();
    assert_eq!(ep.listen(&name), Err(Error::BadState), "no representor");
    let on_host = Endpoint::create().unwrap();
    on_host.set_device(&host).unwrap();
    on_host.set_device_rep(&rep).unwrap();
    assert_eq!(on_host.listen(&name), Err(Error::NotSupported), "a host device cannot serve");
    ep.set_device_rep(&rep).unwrap();
    assert_eq!(ep.listen(&"s".repeat(120)), Err(Error::InvalidValue), "name too long");
    assert_eq!(ep.get_event_channel().unwrap_err(), Error::BadState, "before listen");
    ep.listen(&name).unwrap();
    assert_eq!(ep.listen(&name), Err(Error::NotPermitted), "listening already");
    assert_eq!(ep.set_max_msg_size(512), Err(Error::BadState), "properties after listen");
    let twin = service_attempt(&name);
    assert_eq!(twin, Err(Error::InUse));

    let (cep, peer) = client(&name);
    assert_eq!(cep.connect(&name).unwrap_err(), Error::NotPermitted, "connected already");
    // The service answers handshakes inside its own calls.
    assert_eq!(
        retry(|| {
            ep.update_service_state_info().unwrap();
            peer.update_info()
        }),
        Ok(())
    );
    let nobody = Endpoint::create().unwrap();
    nobody.set_device(&host).unwrap();
    assert_eq!(nobody.connect(&unique("absent")).unwrap_err(), Error::ConnectionAborted, "no such service");
    let on_dpu = Endpoint::create().unwrap();
    on_dpu.set_device(&dpu).unwrap();
    assert_eq!(on_dpu.connect(&name).unwrap_err(), Error::NotSupported, "a DPU device cannot connect");
    // Service-only calls on a client.
    assert_eq!(cep.update_service_state_info(), Err(Error::NotSupported));
    assert_eq!(cep.get_service_event_channel().unwrap_err(), Error::NotSupported);
    assert_eq!(cep.peer_addr_list().unwrap_err(), Error::NotSupported);
    assert_eq!(cep.pending_connections().unwrap_err(), Error::NotSupported);
    assert_eq!(nobody.update_service_state_info(), Err(Error::BadState), "before listen");
}

fn service_attempt(name: &str) -> Result<(), Error> {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
    let ep = Endpoint::create().unwrap();
    ep.set_device(&dev).unwrap();
    ep.set_device_rep(&rep).unwrap();
    ep.listen(name)
}

#[test]
fn doca_comm_channel_ep_sendto_recvfrom_peer_addr_statistics_snapshots_and_disconnect() {
    let name = unique("stats");
    let svc = service(&name);
    let (cep, peer) = client(&name);
    let mut buf = [0u8; 4080];
    assert_eq!(svc.recvfrom(&mut buf, MsgFlags::NONE).unwrap_err().error, Error::Again, "nothing yet");
    retry(|| {
        svc.update_service_state_info().unwrap();
        peer.update_info()
    })
    .unwrap();
    assert_eq!(peer.user_data(), 0);
    peer.set_user_data(42);
    assert_eq!(peer.user_data(), 42);
    assert_eq!(cep.sendto(&[0u8; 4081], MsgFlags::NONE, &peer), Err(Error::InvalidValue));
    for i in 0..3u8 {
        cep.sendto(&[i; 100], MsgFlags::NONE, &peer).unwrap();
    }
    peer.update_info().unwrap();
    assert_eq!((peer.send_messages(), peer.send_bytes(), peer.send_in_flight_messages()), (3, 300, 3));
    svc.update_service_state_info().unwrap();
    assert_eq!(svc.pending_connections(), Ok(1), "connected, first message not read yet");
    let mut small = [0u8; 10];
    let too_big = svc.recvfrom(&mut small, MsgFlags::NONE).unwrap_err();
    assert_eq!((too_big.error, too_big.needed), (Error::TooBig, Some(100)), "never truncated");
    let (n, from) = svc.recvfrom(&mut buf, MsgFlags::NONE).unwrap();
    assert_eq!((n, buf[0]), (100, 0));
    assert_eq!(svc.pending_connections(), Ok(1), "a snapshot: until the next update");
    svc.update_service_state_info().unwrap();
    assert_eq!(svc.peer_addr_list(), Ok(vec![from.clone()]), "the first message completed the connection");
    assert_eq!(svc.pending_connections(), Ok(0));
    for i in 1..3u8 {
        assert_eq!(svc.recvfrom(&mut buf, MsgFlags::NONE).unwrap().0, 100);
        assert_eq!(buf[0], i, "in order");
    }
    from.update_info().unwrap();
    assert_eq!((from.recv_messages(), from.recv_bytes()), (3, 300));
    peer.update_info().unwrap();
    assert_eq!(peer.send_in_flight_messages(), 0);

    // The service's queue holds 16: the 17th send is AGAIN until the service reads.
    for _ in 0..16 {
        cep.sendto(b"fill", MsgFlags::NONE, &peer).unwrap();
    }
    assert_eq!(cep.sendto(b"over", MsgFlags::NONE, &peer), Err(Error::Again));
    svc.recvfrom(&mut buf, MsgFlags::NONE).unwrap();
    cep.sendto(b"over", MsgFlags::NONE, &peer).unwrap();

    // One-sided disconnect: the service learns it on its next send.
    svc.sendto(b"bye", MsgFlags::NONE, &from).unwrap();
    cep.disconnect(&peer).unwrap();
    // Disconnected here: no connection any more (update_info's one failure code, the other
    // calls' "no connection"), and a second disconnect finds none.
    assert_eq!(peer.update_info(), Err(Error::ConnectionAborted));
    assert_eq!(cep.sendto(b"after", MsgFlags::NONE, &peer), Err(Error::NotConnected));
    assert_eq!(cep.disconnect(&peer), Err(Error::NotConnected));
    assert_eq!(retry(|| svc.sendto(b"anyone?", MsgFlags::NONE, &from)), Err(Error::ConnectionReset));
    // A new handshake works afterwards.
    let again = cep.connect(&name).unwrap();
    retry(|| {
        svc.update_service_state_info().unwrap();
        again.update_info()
    })
    .unwrap();
    cep.sendto(b"back", MsgFlags::NONE, &again).unwrap();
    let (n, who) = retry(|| loop {
        let r = svc.recvfrom(&mut buf, MsgFlags::NONE);
        match r {
            Ok((n, _)) if &buf[..n] == b"fill" || &buf[..n] == b"over" => continue,
            other => return other,
        }
    })
    .unwrap();
    assert_eq!(&buf[..n], b"back");
    assert_ne!(who, from);
    // The departed client's handle is still the service's to disconnect (the guide asks
    // applications to disconnect peers in error state); another endpoint's peer is not.
    assert_eq!(svc.disconnect(&from), Ok(()));
    assert_eq!(svc.disconnect(&from), Err(Error::NotConnected), "twice: no connection any more");
    assert_eq!(cep.disconnect(&who), Err(Error::NotConnected), "the service's peer, not the client's");
    svc.destroy().unwrap();
}

#[test]
fn doca_comm_channel_peer_addr_update_info_reports_a_refused_handshake_and_so_does_every_call() {
    use doca_cc::proto::Reply;
    let name = unique("refused");
    let host = open_device_with_pci("3b:00.0", None).unwrap();
    // A service stand-in that refuses every client, as a full service does.
    let path = doca_link::service_path("ep", host.as_devinfo().pci_addr(), &name).unwrap();
    let listener = doca_link::Listener::bind(&path).unwrap();
    let blocking = InitAttr { cookie: 0, flags: 0, maxmsgs: 16, msgsize: 256 };
    let ep = Endpoint::create_with_attr(&blocking).unwrap();
    ep.set_device(&host).unwrap();
    let peer = ep.connect(&name).unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let sock = loop {
        if let Some(s) = listener.accept().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "the client never connected");
        std::thread::sleep(Duration::from_micros(50));
    };
    doca_link::send(std::os::fd::AsFd::as_fd(&sock), &Reply::refuse(Error::Full).encode(), &[]).unwrap();
    assert_eq!(retry(|| peer.update_info()), Err(Error::ConnectionAborted));
    assert_eq!(ep.sendto(b"hi", MsgFlags::NONE, &peer), Err(Error::ConnectionAborted));
    let mut buf = [0u8; 256];
    assert_eq!(ep.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error), Err(Error::ConnectionAborted));
}

#[test]
fn doca_comm_channel_ep_connect_to_a_service_whose_backlog_is_full_is_again() {
    let name = unique("backlog");
    let host = open_device_with_pci("3b:00.0", None).unwrap();
    // A listener that never accepts: its backlog fills up.
    let path = doca_link::service_path("ep", host.as_devinfo().pci_addr(), &name).unwrap();
    let _listener = doca_link::Listener::bind(&path).unwrap();
    let mut held = Vec::new();
    let full = loop {
        match doca_link::connect(&path) {
            Ok(Some(s)) => held.push(s),
            Ok(None) => panic!("the listener is there"),
            Err(e) => break e,
        }
        assert!(held.len() < 10_000, "the backlog never filled");
    };
    assert_eq!(full, doca_link::Error::Again);
    let ep = Endpoint::create().unwrap();
    ep.set_device(&host).unwrap();
    assert_eq!(ep.connect(&name).unwrap_err(), Error::Again, "not NOT_CONNECTED: the service is there");
}
