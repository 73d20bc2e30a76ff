//! For the workspace's doc examples: a fabric directory of their own. Cargo runs test
//! binaries through `.cargo/test-fabric`, which gives each a private fabric directory, but
//! runs doc examples itself; an example that makes an engine or a device (a status page, a
//! socket) starts with a hidden `let _fabric = doca_link::doctest::PrivateFabric::new();`
//! so that it never touches the user's default fabric directory.

use std::path::PathBuf;

/// A fresh 0700 directory named in [`crate::FABRIC_ENV`] for this process (unless the
/// variable is set already), removed when dropped.
pub struct PrivateFabric(Option<PathBuf>);

impl PrivateFabric {
    /// Makes the directory and sets the variable (nothing when it is set already).
    pub fn new() -> PrivateFabric {
        use std::os::unix::fs::DirBuilderExt;
        if std::env::var_os(crate::FABRIC_ENV).is_some_and(|v| !v.is_empty()) {
            return PrivateFabric(None);
        }
        let dir = std::env::temp_dir().join(format!("doca-emu-doctest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).expect("a private fabric directory");
        std::env::set_var(crate::FABRIC_ENV, &dir);
        PrivateFabric(Some(dir))
    }
}

impl Default for PrivateFabric {
    fn default() -> Self {
        PrivateFabric::new()
    }
}

impl Drop for PrivateFabric {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
