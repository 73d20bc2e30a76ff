//! `doca_caps` as a user runs it: the default topology, a topology file, a bad file.

use std::process::Command;

fn doca_caps(args: &[&str], topology: Option<&str>) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_doca_caps"));
    cmd.args(args);
    match topology {
        Some(path) => cmd.env(doca_core::TOPOLOGY_ENV, path),
        None => cmd.env_remove(doca_core::TOPOLOGY_ENV),
    };
    let out = cmd.output().expect("doca_caps runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn lists_the_default_devices_and_representors() {
    let (ok, out, err) = doca_caps(&[], None);
    assert!(ok, "{err}");
    for pci in ["0000:03:00.0", "0000:b1:00.0", "0000:b1:00.1", "0000:3b:00.0"] {
        assert!(out.contains(&format!("PCI: {pci}\n")), "{pci} missing:\n{out}");
    }
    assert!(out.contains("representors (3):"), "{out}");
    assert!(out.contains("Topology: embedded default"), "{out}");
    assert!(out.contains("cc.max_msg_size                 4080"), "{out}");
    assert!(out.contains("cc server                       supported"), "{out}");
    assert!(out.contains("peer.mem_per_conn               4294967296"), "the peer budgets: {out}");
    // A map: who serves whom, where the rendezvous is, which side; limits once.
    for f in ["b1:00.0", "b1:00.1", "3b:00.0"] {
        let line = format!("a server on 03:00.0 with representor {f} serves clients on {f}\n");
        assert!(out.contains(&line), "{line}{out}");
    }
    assert!(out.contains("Fabric directory: ") && out.contains("DOCA_EMU_FABRIC_DIR"), "{out}");
    assert!(out.contains("This process's side: "), "{out}");
    assert_eq!(out.matches("cc.max_msg_size ").count(), 1, "limits once, not per device: {out}");

    let (ok, out, _) = doca_caps(&["-p", "b1:00.1"], None);
    assert!(ok);
    assert_eq!(out.matches("PCI: ").count(), 1, "{out}");
    assert!(out.contains("ens1f1np1"), "{out}");

    let (ok, _, err) = doca_caps(&["-p", "not-a-pci"], None);
    assert!(!ok);
    assert!(err.contains("Invalid PCI address"), "{err}");
}

#[test]
fn a_topology_file_replaces_the_default_and_a_bad_one_names_its_line() {
    let dir = std::env::temp_dir().join(format!("doca-caps-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.topology");
    std::fs::write(
        &good,
        "device 0000:05:00.0 dpu ibdev=mlx5_9\nrep 0000:81:00.0 vf emulated\ncap cc.max_msg_size 8K\n\
         device 0000:05:00.3 dpu func=sf sf=4 clocks=fr,dpa\n",
    )
    .unwrap();
    let (ok, out, err) = doca_caps(&[], Some(good.to_str().unwrap()));
    assert!(ok, "{err}");
    assert!(out.contains("PCI: 0000:05:00.0") && out.contains("mlx5_9"), "{out}");
    assert!(out.contains("PCI: 0000:81:00.0  VF  emulated"), "{out}");
    assert!(out.contains("cc.max_msg_size") && out.contains("8192 (line 3)"), "{out}");
    assert!(out.contains("cc.max_msg_size                 8192"), "the library reads it: {out}");
    assert!(out.contains("pci_func_type                   PF\n"), "{out}");
    assert!(out.contains("nic clocks                      fr,rt,dpa\n"), "all three by default: {out}");
    assert!(out.contains("nic clocks                      fr,dpa\n"), "{out}");
    assert!(out.contains("sf_index                        none (DOCA_ERROR_NOT_SUPPORTED)\n"), "{out}");
    assert!(
        out.contains("pci_func_type                   SF\n        sf_index                        4\n"),
        "{out}"
    );

    let typo = dir.join("typo.topology");
    std::fs::write(&typo, "device 03:00.0 dpu\ncap cc.max_msg_sise 8K\n").unwrap();
    let (ok, out, err) = doca_caps(&[], Some(typo.to_str().unwrap()));
    assert!(ok);
    assert!(
        out.contains("cc.max_msg_size                 DOCA_ERROR_INVALID_VALUE")
            || out.contains("Invalid input"),
        "{out}"
    );
    assert!(err.contains("line 2: unknown capability \"cc.max_msg_sise\""), "{err}");
    assert!(!out.contains("b1:00.0"), "{out}");

    let bad = dir.join("bad.topology");
    std::fs::write(&bad, "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice b1:00.0 hots\n").unwrap();
    let (ok, _, err) = doca_caps(&[], Some(bad.to_str().unwrap()));
    assert!(!ok);
    assert!(err.contains("line 3") && err.contains("dpu or host"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn aes_gcm_rows_follow_the_topology() {
    let (ok, out, err) = doca_caps(&["-p", "b1:00.0"], None);
    assert!(ok, "{err}");
    let all = "encrypt (key 128, key 256, tag 96, tag 128); decrypt (key 128, key 256, tag 96, tag 128)";
    assert!(out.contains(&format!("aes_gcm                         {all}\n")), "{out}");
    assert!(out.contains("aes_gcm.max_buf_size            2097152"), "{out}");
    assert!(out.contains("aes_gcm.max_iv_len              12"), "{out}");
    let dir = std::env::temp_dir().join(format!("doca-caps-aes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("t.topology");
    std::fs::write(&t, "device b1:00.0 host\ncap aes_gcm.decrypt 0\ncap aes_gcm.key_128 0\ncap aes_gcm.max_list_buf_num_elem 4\n")
        .unwrap();
    let (ok, out, err) = doca_caps(&[], Some(t.to_str().unwrap()));
    assert!(ok, "{err}");
    assert!(out.contains("aes_gcm                         encrypt (key 256, tag 96, tag 128)\n"), "{out}");
    assert!(out.contains("aes_gcm.max_list_buf_num_elem   4 "), "{out}");
    std::fs::write(&t, "device b1:00.0 host\ncap aes_gcm.encrypt 0\ncap aes_gcm.decrypt 0\n").unwrap();
    let (ok, out, _) = doca_caps(&[], Some(t.to_str().unwrap()));
    assert!(ok);
    assert!(
        out.contains("aes_gcm                         not supported (DOCA_ERROR_NOT_SUPPORTED)\n"),
        "{out}"
    );
    std::fs::write(&t, "device b1:00.0 host\ncap aes_gcm.tag69 0\n").unwrap();
    let (ok, out, err) = doca_caps(&[], Some(t.to_str().unwrap()));
    assert!(ok);
    assert!(out.contains("aes_gcm.tag_96                  topology"), "{out}");
    assert!(err.contains("line 2: unknown capability \"aes_gcm.tag69\""), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
