//! The machine's own codecs as reference rows of the bench: the system zlib (loaded at run
//! time, so nothing is needed to build) and `openssl speed`. They say how the emulator's
//! well-kept Rust crates compare with what a host program would otherwise call — NVIDIA's
//! `file_compression` falls back to zlib when no device compresses. A machine without them
//! prints the row as skipped.

use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::process::Command;

/// The system zlib (`libz.so.1`), loaded with `dlopen`: `compress2` (a zlib stream: deflate
/// plus the Adler-32 trailer) and `crc32`, together the work of a DOCA compress-deflate task
/// (raw deflate, CRC-32 and Adler-32).
pub struct Zlib {
    compress2: Compress2,
    crc32: Crc32,
    // Kept open for the life of the function pointers.
    _handle: Handle,
}

type Compress2 = unsafe extern "C" fn(*mut u8, *mut c_ulong, *const u8, c_ulong, c_int) -> c_int;
type Crc32 = unsafe extern "C" fn(c_ulong, *const u8, u32) -> c_ulong;

struct Handle(*mut c_void);

impl Drop for Handle {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: a handle `dlopen` returned, closed once; the function pointers taken from it
        // live in the same `Zlib` and are dropped with it.
        unsafe {
            libc::dlclose(self.0);
        }
    }
}

#[allow(unsafe_code)]
impl Zlib {
    /// The system zlib, or why not.
    pub fn load() -> Result<Zlib, String> {
        let name: &CStr = c"libz.so.1";
        // SAFETY: a NUL-terminated name; RTLD_NOW resolves everything before returning.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err("libz.so.1 not found".into());
        }
        let handle = Handle(h);
        let sym = |n: &CStr| {
            // SAFETY: a live handle and a NUL-terminated symbol name.
            let p = unsafe { libc::dlsym(handle.0, n.as_ptr() as *const c_char) };
            (!p.is_null()).then_some(p).ok_or_else(|| format!("libz.so.1 has no {n:?}"))
        };
        let (c2, crc) = (sym(c"compress2")?, sym(c"crc32")?);
        // SAFETY: zlib's documented prototypes of these two functions (zlib.h; `uLong` is the
        // platform's `unsigned long`, `uInt` 32 bits).
        let (compress2, crc32) = unsafe {
            (
                std::mem::transmute::<*mut c_void, Compress2>(c2),
                std::mem::transmute::<*mut c_void, Crc32>(crc),
            )
        };
        Ok(Zlib { compress2, crc32, _handle: handle })
    }

    /// Compresses `src` into `dst` at `level` and computes its CRC-32; the compressed length,
    /// or `None` when zlib refused (a destination too small).
    pub fn compress_crc(&self, src: &[u8], dst: &mut [u8], level: i32) -> Option<(usize, u32)> {
        let mut len = dst.len() as c_ulong;
        // SAFETY: both slices are valid for their lengths; zlib writes at most `len` bytes.
        let rc = unsafe {
            (self.compress2)(dst.as_mut_ptr(), &mut len, src.as_ptr(), src.len() as c_ulong, level)
        };
        if rc != 0 {
            return None;
        }
        let mut crc: c_ulong = 0;
        for chunk in src.chunks(1 << 30) {
            // SAFETY: a valid slice of at most 2^30 bytes.
            crc = unsafe { (self.crc32)(crc, chunk.as_ptr(), chunk.len() as u32) };
        }
        Some((len as usize, crc as u32))
    }
}

/// `openssl speed -evp aes-256-gcm -bytes SIZE -seconds 1`: the machine's OpenSSL encrypting
/// `size`-byte blocks, in bytes per second, or why not.
pub fn openssl_aes256gcm(size: usize) -> Result<f64, String> {
    let out = Command::new("openssl")
        .args(["speed", "-evp", "aes-256-gcm", "-bytes", &size.to_string(), "-seconds", "1"])
        .output()
        .map_err(|e| format!("openssl: {e}"))?;
    if !out.status.success() {
        return Err(format!("openssl speed failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    parse_openssl_speed(&String::from_utf8_lossy(&out.stdout))
        .ok_or_else(|| "openssl speed printed no AES-256-GCM figure".to_string())
}

/// The figure of `openssl speed`'s result line (`AES-256-GCM  5817412.27k`: thousands of bytes
/// per second) in bytes per second.
pub fn parse_openssl_speed(text: &str) -> Option<f64> {
    let line = text.lines().rev().find(|l| l.to_ascii_uppercase().starts_with("AES-256-GCM"))?;
    let v = line.split_whitespace().last()?;
    let k = v.strip_suffix('k')?;
    k.parse::<f64>().ok().map(|k| k * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_openssl_result_line_is_read_in_bytes_per_second() {
        let text = "The 'numbers' are in 1000s of bytes per second processed.\n\
                    type        1048576 bytes\nAES-256-GCM    5817412.27k\n";
        assert_eq!(parse_openssl_speed(text), Some(5_817_412_270.0));
        assert_eq!(parse_openssl_speed("type 16 bytes\n"), None);
    }

    #[test]
    fn the_system_zlib_compresses_what_miniz_oxide_inflates_back() {
        let Ok(z) = Zlib::load() else {
            eprintln!("skipped: no libz.so.1 on this machine");
            return;
        };
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = vec![0u8; 200_000];
        let (n, crc) = z.compress_crc(&data, &mut out, 6).expect("zlib compresses");
        assert_eq!(crc, crc32fast::hash(&data));
        let back = miniz_oxide::inflate::decompress_to_vec_zlib(&out[..n]).expect("a zlib stream");
        assert_eq!(back, data);
        assert!(z.compress_crc(&data, &mut out[..10], 6).is_none(), "a destination too small is refused");
    }
}
