//! The codecs of the emulated engine, over plain byte slices: raw DEFLATE both ways
//! (`miniz_oxide`, streamed so that a large task is spread over progress passes), LZ4 blocks
//! (`lz4_flex`'s block API) and the framing around them (LZ4 block headers, the LZ4 frame
//! header), and the checksums a task reports (`crc32fast`, `adler2`, `xxhash-rust`).
//!
//! Nothing here allocates per task: a context keeps one compressor, one inflater and one LZ4
//! scratch area, and resets them for each task.

use doca_core::{bail, fail, Error, Result};
use miniz_oxide::deflate::core::{compress, CompressorOxide, TDEFLFlush, TDEFLStatus};
use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

/// The deflate level of compress tasks: zlib's default (6).
pub const DEFLATE_LEVEL: u8 = 6;

/// The largest block an LZ4 stream may hold, decoded (the LZ4 frame format's largest block
/// size, 4 MiB).
pub const LZ4_MAX_BLOCK: usize = 4 << 20;

/// How far back an LZ4 match of a dependent block may reach (64 KiB).
pub const LZ4_WINDOW: usize = 64 << 10;

/// The LZ4 frame's magic number (little-endian on the wire).
pub const LZ4_MAGIC: u32 = 0x184D_2204;

/// The checksums of the uncompressed bytes of a task: zlib's CRC-32 and Adler-32, and
/// xxHash-32 (seed 0, as the LZ4 frame's content checksum).
#[derive(Clone)]
pub struct Sums {
    crc: crc32fast::Hasher,
    adler: adler2::Adler32,
    xxh: xxhash_rust::xxh32::Xxh32,
    xxh_wanted: bool,
}

impl Sums {
    /// Fresh sums; xxHash-32 only when `xxh` (it costs a pass over the bytes).
    pub fn new(xxh: bool) -> Sums {
        Sums {
            crc: crc32fast::Hasher::new(),
            adler: adler2::Adler32::new(),
            xxh: xxhash_rust::xxh32::Xxh32::new(0),
            xxh_wanted: xxh,
        }
    }

    /// Adds uncompressed bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
        self.adler.write_slice(bytes);
        if self.xxh_wanted {
            self.xxh.update(bytes);
        }
    }

    /// (CRC-32, Adler-32, xxHash-32) of the bytes so far (xxHash-32 of nothing when not
    /// wanted).
    pub fn values(&self) -> (u32, u32, u32) {
        (self.crc.clone().finalize(), self.adler.checksum(), self.xxh.digest())
    }
}

/// One raw-DEFLATE compression at a time, fed piece by piece.
pub struct Deflater {
    c: Box<CompressorOxide>,
}

impl Default for Deflater {
    fn default() -> Self {
        let mut c = Box::<CompressorOxide>::default();
        c.set_format_and_level(DataFormat::Raw, DEFLATE_LEVEL);
        Deflater { c }
    }
}

impl Deflater {
    /// Starts a new stream.
    pub fn reset(&mut self) {
        self.c.reset();
        self.c.set_format_and_level(DataFormat::Raw, DEFLATE_LEVEL);
    }

    /// Compresses from `input` into `output`; `last` when `input` ends the data. Returns the
    /// bytes consumed and written, and whether the stream is complete.
    pub fn step(&mut self, input: &[u8], output: &mut [u8], last: bool) -> Result<(usize, usize, bool)> {
        let flush = if last { TDEFLFlush::Finish } else { TDEFLFlush::None };
        let (status, consumed, written) = compress(&mut self.c, input, output, flush);
        match status {
            TDEFLStatus::Done => Ok((consumed, written, true)),
            TDEFLStatus::Okay => Ok((consumed, written, false)),
            other => bail!(Error::Unexpected, "compress: the deflate compressor failed ({other:?})"),
        }
    }
}

/// What one inflate call did.
pub struct Inflated {
    /// Bytes of the input consumed.
    pub consumed: usize,
    /// Bytes written to the output.
    pub written: usize,
    /// The final block ended.
    pub ended: bool,
    /// Nothing could move: more input or more room is needed.
    pub stuck: bool,
}

/// One raw-DEFLATE decompression at a time, fed piece by piece.
pub struct Inflater {
    s: Box<InflateState>,
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater { s: InflateState::new_boxed(DataFormat::Raw) }
    }
}

impl Inflater {
    /// Starts a new stream.
    pub fn reset(&mut self) {
        self.s.reset(DataFormat::Raw);
    }

    /// Decompresses from `input` into `output`. A corrupt stream is `INVALID_VALUE`.
    pub fn step(&mut self, input: &[u8], output: &mut [u8]) -> Result<Inflated> {
        let r = inflate(&mut self.s, input, output, MZFlush::None);
        let (consumed, written) = (r.bytes_consumed, r.bytes_written);
        match r.status {
            Ok(MZStatus::StreamEnd) => Ok(Inflated { consumed, written, ended: true, stuck: false }),
            Ok(_) => Ok(Inflated { consumed, written, ended: false, stuck: consumed == 0 && written == 0 }),
            Err(MZError::Buf) => Ok(Inflated { consumed, written, ended: false, stuck: true }),
            Err(e) => {
                bail!(Error::InvalidValue, "compress: the source is not a valid DEFLATE stream ({e:?})")
            }
        }
    }
}

/// An LZ4 block's 4-byte header: its stored size and whether it is stored uncompressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Bytes of block data that follow (0: the end mark).
    pub size: usize,
    /// The data is stored as is (the header's high bit).
    pub uncompressed: bool,
}

impl BlockHeader {
    /// Reads a header (little-endian).
    pub fn parse(b: [u8; 4]) -> BlockHeader {
        let v = u32::from_le_bytes(b);
        BlockHeader { size: (v & 0x7FFF_FFFF) as usize, uncompressed: v & 0x8000_0000 != 0 }
    }
}

/// What an LZ4 frame header says (the frame descriptor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// Each block is followed by its xxHash-32.
    pub block_checksum: bool,
    /// Blocks never refer to earlier blocks.
    pub independent: bool,
    /// The end mark is followed by the xxHash-32 of the content.
    pub content_checksum: bool,
    /// The largest block, decoded.
    pub block_max: usize,
    /// The header's length in bytes (magic included).
    pub header_len: usize,
}

/// The length of a frame header whose first 6 bytes (magic, FLG, BD) are `head`.
pub fn frame_header_len(head: &[u8; 6]) -> Result<usize> {
    let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if magic != LZ4_MAGIC {
        bail!(
            Error::InvalidValue,
            "compress: the source does not start with an LZ4 frame (magic {magic:#010x})"
        );
    }
    let flg = head[4];
    Ok(7 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 })
}

/// Parses a whole frame header (`header`, of [`frame_header_len`] bytes).
pub fn parse_frame_header(header: &[u8]) -> Result<FrameInfo> {
    let (flg, bd) = (header[4], header[5]);
    if flg >> 6 != 0b01 {
        bail!(Error::InvalidValue, "compress: LZ4 frame version {} (only 1 exists)", flg >> 6);
    }
    if flg & 0x02 != 0 || bd & 0x8F != 0 {
        bail!(Error::InvalidValue, "compress: the LZ4 frame header sets reserved bits");
    }
    if flg & 0x01 != 0 {
        bail!(Error::NotSupported, "compress: LZ4 frames with a dictionary ID are not supported");
    }
    let block_max = match (bd >> 4) & 0x7 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        other => {
            bail!(Error::InvalidValue, "compress: LZ4 frame block maximum size code {other} is not defined")
        }
    };
    let hc = header[header.len() - 1];
    let want = (xxhash_rust::xxh32::xxh32(&header[4..header.len() - 1], 0) >> 8) as u8;
    if hc != want {
        bail!(Error::InvalidValue, "compress: the LZ4 frame header's checksum is {hc:#04x}, not {want:#04x}");
    }
    Ok(FrameInfo {
        block_checksum: flg & 0x10 != 0,
        independent: flg & 0x20 != 0,
        content_checksum: flg & 0x04 != 0,
        block_max,
        header_len: header.len(),
    })
}

/// A context's LZ4 working memory: the block being read, the block decoded, the window of
/// earlier output that dependent blocks refer to. Grown once, then reused.
#[derive(Default)]
pub struct Lz4Scratch {
    /// The stored bytes of the block being decoded (when they are not read in place).
    pub input: Vec<u8>,
    /// A decoded block task's output on its way to a destination list.
    pub spread: Vec<u8>,
    out: Vec<u8>,
    history: Vec<u8>,
}

impl Lz4Scratch {
    /// Forgets the history (a new task).
    pub fn reset(&mut self) {
        self.history.clear();
    }

    /// Decodes the block held in [`Lz4Scratch::input`] (compressed unless `uncompressed`),
    /// at most `block_max` bytes; `independent` blocks see no earlier output. Returns the
    /// decoded bytes.
    pub fn decode(&mut self, uncompressed: bool, independent: bool, block_max: usize) -> Result<&[u8]> {
        let n = if uncompressed {
            if self.input.len() > block_max {
                bail!(
                    Error::InvalidValue,
                    "compress: an LZ4 block stores {} bytes, above the {block_max}-byte maximum",
                    self.input.len()
                );
            }
            self.out.clear();
            self.out.extend_from_slice(&self.input);
            self.input.len()
        } else {
            if self.out.len() < block_max {
                self.out.resize(block_max, 0);
            }
            let dict: &[u8] = if independent { &[] } else { &self.history };
            let r = lz4_flex::block::decompress_into_with_dict(&self.input, &mut self.out[..block_max], dict);
            r.map_err(|e| fail!(Error::InvalidValue, "compress: a corrupt LZ4 block ({e})"))?
        };
        if !independent {
            let keep = LZ4_WINDOW.saturating_sub(n).min(self.history.len());
            self.history.drain(..self.history.len() - keep);
            self.history.extend_from_slice(&self.out[n.saturating_sub(LZ4_WINDOW)..n]);
        }
        Ok(&self.out[..n])
    }
}

/// The xxHash-32 of an LZ4 block's stored bytes (its block checksum).
pub fn block_checksum(stored: &[u8]) -> u32 {
    xxhash_rust::xxh32::xxh32(stored, 0)
}

/// Decodes one LZ4 block (`lz4_flex`) into `output`: the decoded length, `TOO_BIG` when
/// `output` is too small, `INVALID_VALUE` when the block is corrupt.
pub fn decode_block_into(input: &[u8], output: &mut [u8]) -> Result<usize> {
    match lz4_flex::block::decompress_into(input, output) {
        Ok(n) => Ok(n),
        Err(lz4_flex::block::DecompressError::OutputTooSmall { expected, actual }) => bail!(
            Error::TooBig,
            "compress: the LZ4 block decodes to at least {expected} bytes, the destination has room for {actual}"
        ),
        Err(e) => bail!(Error::InvalidValue, "compress: a corrupt LZ4 block ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflate_in_small_pieces_inflates_back() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 ^ (i / 1000) as u8).collect();
        let mut d = Deflater::default();
        let mut out = vec![0u8; 300_000];
        let (mut at, mut w) = (0, 0);
        loop {
            let end = (at + 777).min(data.len());
            let cap = (w + 1000).min(out.len());
            let (c, n, done) = d.step(&data[at..end], &mut out[w..cap], end == data.len()).unwrap();
            at += c;
            w += n;
            if done {
                break;
            }
        }
        assert_eq!(miniz_oxide::inflate::decompress_to_vec(&out[..w]).unwrap(), data);
        let mut i = Inflater::default();
        let mut back = vec![0u8; data.len()];
        let r = i.step(&out[..w], &mut back).unwrap();
        assert!(r.ended);
        assert_eq!(r.written, data.len());
        assert_eq!(back, data);
    }

    #[test]
    fn sums_are_zlibs_and_xxhashs() {
        let mut s = Sums::new(true);
        s.update(b"hello ");
        s.update(b"world");
        let (crc, adler, xxh) = s.values();
        assert_eq!(crc, 0x0D4A_1185);
        assert_eq!(adler, 0x1A0B_045D);
        assert_eq!(xxh, xxhash_rust::xxh32::xxh32(b"hello world", 0));
    }

    #[test]
    fn a_dependent_block_sees_the_previous_output() {
        let first = b"abcdefghijklmnopqrstuvwxyz0123456789".repeat(4);
        let second = first.clone();
        let mut out = vec![0; 1000];
        let n2 = lz4_flex::block::compress_into_with_dict(&second, &mut out, &first).unwrap();
        let mut s = Lz4Scratch { input: first.clone(), ..Default::default() };
        assert_eq!(s.decode(true, false, LZ4_MAX_BLOCK).unwrap(), &first[..]);
        s.input = out[..n2].to_vec();
        assert_eq!(s.decode(false, false, LZ4_MAX_BLOCK).unwrap(), &second[..]);
        // The same block without the history is corrupt.
        s.reset();
        assert_eq!(s.decode(false, true, LZ4_MAX_BLOCK).unwrap_err(), Error::InvalidValue);
    }
}
