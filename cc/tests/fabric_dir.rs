//! The fabric directory is trusted only when it is a real directory of this user, closed to
//! others. (Its own test binary: it changes `DOCA_EMU_FABRIC_DIR` for the whole process.)

use std::os::unix::fs::PermissionsExt;

use doca_cc::Server;
use doca_core::{open_device_rep_with_pci, open_device_with_pci, Error, Pe, RepFilter};

fn start_server(name: &str) -> Result<(), Error> {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
    let pe = Pe::create().unwrap();
    let server = Server::create(&dev, &rep, name).unwrap();
    pe.connect_ctx(&server.as_ctx()).unwrap();
    server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    server.event_msg_recv_register(|_, _| {}).unwrap();
    server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    let started = server.as_ctx().start();
    if started.is_ok() {
        server.as_ctx().stop().unwrap();
    }
    started
}

#[test]
fn only_a_private_real_directory_is_used_as_the_fabric() {
    let base = std::env::temp_dir().join(format!("doca-fabric-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let real = base.join("real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();

    // A symlink to a perfectly good directory: refused (it could be swapped).
    let link = base.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    std::env::set_var(doca_link::FABRIC_ENV, &link);
    assert_eq!(start_server("fabric-link"), Err(Error::NotPermitted));

    // A directory others can enter: refused.
    let open = base.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::set_var(doca_link::FABRIC_ENV, &open);
    assert_eq!(start_server("fabric-open"), Err(Error::NotPermitted));

    // A private directory under one that anybody may write and that is not sticky:
    // another user could rename it away and put theirs in its place. Refused.
    let shared = base.join("shared");
    std::fs::create_dir_all(shared.join("fabric")).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(shared.join("fabric"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::env::set_var(doca_link::FABRIC_ENV, shared.join("fabric"));
    assert_eq!(start_server("fabric-shared-parent"), Err(Error::NotPermitted));
    // The same under a sticky one (as /tmp is): nobody else may rename what is ours. Used.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(start_server("fabric-sticky-parent"), Ok(()));

    // A regular file in its place: refused.
    let file = base.join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    std::env::set_var(doca_link::FABRIC_ENV, &file);
    assert_eq!(start_server("fabric-file"), Err(Error::NotPermitted));

    // One that cannot be created (even root may not create directories in /sys): refused
    // as not permitted, not as an operating-system failure.
    std::env::set_var(doca_link::FABRIC_ENV, "/sys/doca-emu-fabric-test");
    assert_eq!(start_server("fabric-unwritable"), Err(Error::NotPermitted));

    // The real one: used, and the socket is created inside it.
    std::env::set_var(doca_link::FABRIC_ENV, &real);
    assert_eq!(start_server("fabric-real"), Ok(()));
    let missing = base.join("new");
    std::env::set_var(doca_link::FABRIC_ENV, &missing);
    assert_eq!(start_server("fabric-new"), Ok(()), "a missing directory is created");
    let mode = std::fs::metadata(&missing).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let _ = std::fs::remove_dir_all(&base);
}
