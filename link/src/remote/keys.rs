//! The link's static keys: one X25519 key pair per role, made once by
//! [`generate`] (`doca_emu keygen DIR`) and pinned on both sides.
//!
//! | file       | what                                  | who needs it         |
//! |------------|---------------------------------------|----------------------|
//! | `host.key` | the host side's private key (0600)    | the host             |
//! | `host.pub` | the host side's public key            | the DPU              |
//! | `dpu.key`  | the DPU side's private key (0600)     | the DPU              |
//! | `dpu.pub`  | the DPU side's public key             | the host             |
//!
//! Each file holds one key, 32 bytes written as 64 hexadecimal digits on one line. A process
//! loads its own role's private key and the other role's public key ([`Keys::load`]); a
//! private key that its group or others may read is refused (`NOT_PERMITTED`), as ssh does.
//! Trust is per pair of keys: every host process holding `host.key` is the host to the DPU.

use std::fmt;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};

use super::Role;
use crate::error::{bail, fail};
use crate::error::{Error, Result};

/// Bytes of an X25519 key.
pub const KEY_LEN: usize = 32;

/// One side's keys: its private key (never printed) and the other side's public key.
#[derive(Clone)]
pub struct Keys {
    role: Role,
    private: [u8; KEY_LEN],
    public: [u8; KEY_LEN],
    peer: [u8; KEY_LEN],
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("role", &self.role)
            .field("public", &fingerprint(&self.public))
            .field("peer", &fingerprint(&self.peer))
            .finish_non_exhaustive()
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.private.fill(0);
    }
}

/// The file names of `role`'s key pair: (private, public).
pub fn file_names(role: Role) -> (&'static str, &'static str) {
    match role {
        Role::Host => ("host.key", "host.pub"),
        Role::Dpu => ("dpu.key", "dpu.pub"),
    }
}

/// A short name of a public key for log lines: its first 4 bytes in hexadecimal.
pub fn fingerprint(key: &[u8; KEY_LEN]) -> String {
    hex(&key[..4])
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(text: &str) -> Option<[u8; KEY_LEN]> {
    let text = text.trim();
    if text.len() != 2 * KEY_LEN || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; KEY_LEN];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// The public key of an X25519 private key.
fn public_of(private: &[u8; KEY_LEN]) -> Result<[u8; KEY_LEN]> {
    let Some(mut dh) = DefaultResolver.resolve_dh(&DHChoice::Curve25519) else {
        bail!(Error::OperatingSystem, "link: no X25519 implementation in the Noise resolver")
    };
    dh.set(private);
    let mut public = [0u8; KEY_LEN];
    public.copy_from_slice(dh.pubkey());
    Ok(public)
}

/// A fresh X25519 key pair from the operating system's random source: (private, public).
fn keypair() -> Result<([u8; KEY_LEN], [u8; KEY_LEN])> {
    let mut private = [0u8; KEY_LEN];
    let mut filled = 0;
    while filled < KEY_LEN {
        match rustix::rand::getrandom(&mut private[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => bail!(Error::OperatingSystem, "link: getrandom: {e}"),
        }
    }
    // X25519 clamps the scalar itself; the key is stored as drawn (as the Noise resolvers do).
    let public = public_of(&private)?;
    Ok((private, public))
}

/// Makes the key directory `dir` (mode 0700; an existing directory must be this user's and
/// is set to 0700) with a fresh key pair per role: `host.key`, `host.pub`, `dpu.key`,
/// `dpu.pub` (private keys 0600, public keys 0644). Existing key files are never overwritten
/// unless `force` (`IN_USE` naming them otherwise).
pub fn generate(dir: &Path, force: bool) -> Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)
                .map_err(|e| fail!(Error::OperatingSystem, "link: key directory {}: {e}", dir.display()))?;
            if !meta.is_dir() {
                bail!(
                    Error::InvalidValue,
                    "link: key directory {} exists and is not a directory",
                    dir.display()
                );
            }
            if meta.uid() != rustix::process::getuid().as_raw() {
                bail!(
                    Error::NotPermitted,
                    "link: key directory {} belongs to uid {}, not to this user",
                    dir.display(),
                    meta.uid()
                );
            }
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| fail!(Error::OperatingSystem, "link: chmod 0700 {}: {e}", dir.display()))?;
        }
        Err(e) => bail!(Error::OperatingSystem, "link: cannot create key directory {}: {e}", dir.display()),
    }
    let names = [file_names(Role::Host), file_names(Role::Dpu)];
    if !force {
        let existing: Vec<&str> = names
            .iter()
            .flat_map(|(k, p)| [*k, *p])
            .filter(|n| std::fs::symlink_metadata(dir.join(n)).is_ok())
            .collect();
        if !existing.is_empty() {
            bail!(
                Error::InUse,
                "link: {} already holds {} (not overwritten; --force replaces them)",
                dir.display(),
                existing.join(", ")
            );
        }
    }
    for (key_name, pub_name) in names {
        let (private, public) = keypair()?;
        write_key(&dir.join(key_name), &private, 0o600)?;
        write_key(&dir.join(pub_name), &public, 0o644)?;
    }
    Ok(())
}

fn write_key(path: &Path, key: &[u8; KEY_LEN], mode: u32) -> Result<()> {
    // A replaced file is removed first: a new file gets `mode` (an existing one keeps its own).
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => bail!(Error::OperatingSystem, "link: cannot replace {}: {e}", path.display()),
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| fail!(Error::OperatingSystem, "link: cannot create {}: {e}", path.display()))?;
    let mut text = hex(key);
    text.push('\n');
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| fail!(Error::OperatingSystem, "link: cannot write {}: {e}", path.display()))
}

/// Reads one key file: `NOT_FOUND` when missing, `INVALID_VALUE` when it does not hold one
/// key, `NOT_PERMITTED` for a private key that is not this user's or that its group or
/// others may read. Each refusal is logged naming the file.
fn read_key(path: &Path, private: bool) -> Result<[u8; KEY_LEN]> {
    let file = match OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(Error::NotFound, "link: key file {} is missing (doca_emu keygen makes it)", path.display())
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            bail!(Error::NotPermitted, "link: key file {}: {e}", path.display())
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            bail!(Error::NotPermitted, "link: key file {} is a symbolic link: refused", path.display())
        }
        Err(e) => bail!(Error::OperatingSystem, "link: key file {}: {e}", path.display()),
    };
    let meta = file
        .metadata()
        .map_err(|e| fail!(Error::OperatingSystem, "link: key file {}: {e}", path.display()))?;
    if !meta.is_file() {
        bail!(Error::InvalidValue, "link: key file {} is not a regular file", path.display());
    }
    if private {
        if meta.uid() != rustix::process::getuid().as_raw() {
            bail!(
                Error::NotPermitted,
                "link: private key {} belongs to uid {}, not to this user",
                path.display(),
                meta.uid()
            );
        }
        if meta.mode() & 0o077 != 0 {
            bail!(
                Error::NotPermitted,
                "link: private key {} is readable by others (mode {:o}): chmod 600 it",
                path.display(),
                meta.mode() & 0o777
            );
        }
    }
    if meta.len() > 256 {
        bail!(Error::InvalidValue, "link: key file {} is {} bytes: not one key", path.display(), meta.len());
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut &file, &mut text)
        .map_err(|e| fail!(Error::InvalidValue, "link: key file {}: {e}", path.display()))?;
    match unhex(&text) {
        Some(key) => Ok(key),
        None => bail!(
            Error::InvalidValue,
            "link: key file {} does not hold one key (64 hexadecimal digits)",
            path.display()
        ),
    }
}

impl Keys {
    /// Loads `role`'s private key and the other role's public key from `dir` (see the module
    /// documentation for the errors).
    pub fn load(dir: &Path, role: Role) -> Result<Keys> {
        let (own, _) = file_names(role);
        let (_, other) = file_names(role.other());
        let private = read_key(&dir.join(own), true)?;
        let peer = read_key(&dir.join(other), false)?;
        let public = public_of(&private)?;
        if public == peer {
            bail!(
                Error::InvalidValue,
                "link: {} is the public key of {} itself: the other side's key is needed",
                dir.join(other).display(),
                dir.join(own).display()
            );
        }
        Ok(Keys { role, private, public, peer })
    }

    /// The role these keys are for.
    pub fn role(&self) -> Role {
        self.role
    }

    /// This side's public key.
    pub fn public(&self) -> &[u8; KEY_LEN] {
        &self.public
    }

    /// The other side's public key (the only one this side accepts).
    pub fn peer(&self) -> &[u8; KEY_LEN] {
        &self.peer
    }

    pub(crate) fn private(&self) -> &[u8; KEY_LEN] {
        &self.private
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("doca-link-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn generate_then_load_both_roles() {
        let dir = tmp("gen");
        generate(&dir, false).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        for f in ["host.key", "dpu.key"] {
            assert_eq!(std::fs::metadata(dir.join(f)).unwrap().mode() & 0o777, 0o600, "{f}");
        }
        let host = Keys::load(&dir, Role::Host).unwrap();
        let dpu = Keys::load(&dir, Role::Dpu).unwrap();
        assert_eq!(host.peer(), dpu.public());
        assert_eq!(dpu.peer(), host.public());
        assert_ne!(host.public(), dpu.public());
        assert!(!format!("{host:?}").contains(&hex(host.private())));
        // Not overwritten without force; replaced with it.
        assert_eq!(generate(&dir, false), Err(Error::InUse));
        assert_eq!(Keys::load(&dir, Role::Host).unwrap().public(), host.public());
        generate(&dir, true).unwrap();
        assert_ne!(Keys::load(&dir, Role::Host).unwrap().public(), host.public());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_refusals() {
        let dir = tmp("bad");
        generate(&dir, false).unwrap();
        std::fs::set_permissions(dir.join("dpu.key"), std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(Keys::load(&dir, Role::Dpu).unwrap_err(), Error::NotPermitted);
        std::fs::set_permissions(dir.join("dpu.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Keys::load(&dir, Role::Dpu).is_ok());
        std::fs::write(dir.join("host.pub"), "not a key\n").unwrap();
        assert_eq!(Keys::load(&dir, Role::Dpu).unwrap_err(), Error::InvalidValue);
        std::fs::remove_file(dir.join("host.pub")).unwrap();
        assert_eq!(Keys::load(&dir, Role::Dpu).unwrap_err(), Error::NotFound);
        // A side given its own public key as the peer's.
        std::fs::copy(dir.join("dpu.pub"), dir.join("host.pub")).unwrap();
        assert_eq!(Keys::load(&dir, Role::Dpu).unwrap_err(), Error::InvalidValue);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
