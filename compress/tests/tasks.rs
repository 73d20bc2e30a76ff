//! Compress tasks from progress: DEFLATE round trips checked against `miniz_oxide` and zlib's
//! checksums, LZ4 frames, streams and blocks made by `lz4_flex`'s encoder, buffer lists, large
//! tasks spread over passes, and every documented failure with its status (fatal to the
//! context, as on DOCA's engine).

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_compress::caps::{self, TaskType};
use doca_compress::{codec, Compress, FLUSH_STATUS};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};

/// A completion: (task user data, status, destination data, crc, adler or xxh).
type Done = (u64, Result<(), Error>, Vec<u8>, u32, u32);
type Seen = Rc<RefCell<Vec<Done>>>;

/// Compressible pseudo-random bytes (deterministic): words from a small alphabet.
fn text(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let words: [&[u8]; 8] =
        [b"doca ", b"compress ", b"deflate ", b"lz4 ", b"block ", b"stream ", b"\n", b"42 "];
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(words[(x % 8) as usize]);
        if x % 5 == 0 {
            out.push((x >> 8) as u8);
        }
    }
    out.truncate(len);
    out
}

fn map(dev: &Dev, data: Vec<u8>, perms: AccessFlags) -> Mmap {
    let m = Mmap::create().unwrap();
    m.set_memrange(data).unwrap();
    m.set_permissions(perms).unwrap();
    m.add_dev(dev).unwrap();
    m.start().unwrap();
    m
}

struct Rig {
    pe: Pe,
    cmp: Compress,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
    maps: RefCell<Vec<Mmap>>,
}

macro_rules! recorder {
    ($seen:expr, $second:ident) => {{
        let seen = $seen.clone();
        move |t, td: Data, _| {
            let d = t.dst().map_or(Vec::new(), |b: Buf| b.data_to_vec().unwrap());
            seen.borrow_mut().push((td.as_u64(), t.status(), d, t.crc_cs(), t.$second()));
        }
    }};
}

fn rig_on(dev: Dev) -> Rig {
    let pe = Pe::create().unwrap();
    let cmp = Compress::create(&dev).unwrap();
    pe.connect_ctx(&cmp.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    cmp.task_compress_deflate_set_conf(recorder!(seen, adler_cs), recorder!(seen, adler_cs), 8).unwrap();
    cmp.task_decompress_deflate_set_conf(recorder!(seen, adler_cs), recorder!(seen, adler_cs), 8).unwrap();
    cmp.task_decompress_lz4_set_conf(recorder!(seen, adler_cs), recorder!(seen, adler_cs), 4).unwrap();
    cmp.task_decompress_lz4_stream_set_conf(recorder!(seen, xxh_cs), recorder!(seen, xxh_cs), 4).unwrap();
    cmp.task_decompress_lz4_block_set_conf(recorder!(seen, xxh_cs), recorder!(seen, xxh_cs), 4).unwrap();
    cmp.as_ctx().start().unwrap();
    let inv = Inventory::create(64).unwrap();
    inv.start().unwrap();
    Rig { pe, cmp, dev, inv, seen, maps: RefCell::default() }
}

fn rig() -> Rig {
    rig_on(open_device_with_pci("03:00.0", None).unwrap())
}

impl Rig {
    /// A source buffer holding `data`, in a map of its own.
    fn src(&self, data: &[u8]) -> Buf {
        let m = map(&self.dev, data.to_vec(), AccessFlags::LOCAL_READ_WRITE);
        let b = self.inv.buf_get_data_at(&m, 0, data.len()).unwrap();
        self.maps.borrow_mut().push(m);
        b
    }

    /// A destination of `room` bytes with no data, in a map of its own.
    fn dst(&self, room: usize) -> Buf {
        let m = map(&self.dev, vec![0; room], AccessFlags::LOCAL_READ_WRITE);
        let b = self.inv.buf_get_at(&m, 0, room).unwrap();
        self.maps.borrow_mut().push(m);
        b
    }

    /// Progresses until `n` completions were seen; the number of progress calls.
    fn wait(&self, n: usize) -> usize {
        for i in 0..100_000 {
            if self.seen.borrow().len() >= n {
                return i;
            }
            self.pe.progress();
        }
        panic!(
            "the engine did not finish: {:?}",
            self.seen.borrow().iter().map(|d| (d.0, d.1)).collect::<Vec<_>>()
        );
    }

    fn last(&self) -> Done {
        self.seen.borrow().last().cloned().unwrap()
    }

    /// Progresses until the context is Idle (after a failure), then starts it again.
    fn restart(&self) {
        for _ in 0..10_000 {
            if self.cmp.as_ctx().state() == CtxState::Idle {
                self.cmp.as_ctx().start().unwrap();
                return;
            }
            self.pe.progress();
        }
        panic!("the context did not reach Idle");
    }

    fn compress(&self, data: &[u8]) -> Vec<u8> {
        let n = self.seen.borrow().len();
        let t = self.cmp.task_compress_deflate_alloc_init(
            Some(&self.src(data)),
            Some(&self.dst(data.len() + 1024)),
            Data::from_u64(1),
        );
        t.unwrap().submit().unwrap();
        self.wait(n + 1);
        let d = self.last();
        assert_eq!(d.1, Ok(()));
        d.2
    }
}

fn adler(data: &[u8]) -> u32 {
    adler2::adler32_slice(data)
}

#[test]
fn compress_deflate_output_is_raw_deflate_with_zlibs_checksums() {
    let r = rig();
    let data = text(300_000, 1);
    let out = r.compress(&data);
    assert!(out.len() < data.len() / 2, "text compresses ({} of {})", out.len(), data.len());
    assert_eq!(miniz_oxide::inflate::decompress_to_vec(&out).unwrap(), data);
    let d = r.last();
    assert_eq!((d.3, d.4), (crc32fast::hash(&data), adler(&data)));
}

#[test]
fn decompress_deflate_restores_the_bytes_with_the_same_checksums() {
    let r = rig();
    let data = text(200_000, 2);
    let z = miniz_oxide::deflate::compress_to_vec(&data, 9);
    let t = r.cmp.task_decompress_deflate_alloc_init(
        Some(&r.src(&z)),
        Some(&r.dst(data.len())),
        Data::from_u64(7),
    );
    t.unwrap().submit().unwrap();
    r.wait(1);
    let d = r.last();
    assert_eq!((d.0, d.1), (7, Ok(())));
    assert!(d.2 == data, "the output is the original bytes");
    assert_eq!((d.3, d.4), (crc32fast::hash(&data), adler(&data)));
}

#[test]
fn a_large_task_is_spread_over_passes_and_round_trips() {
    let r = rig();
    let data = text(5 << 20, 3);
    let n0 = r.seen.borrow().len();
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&r.src(&data)), Some(&r.dst(data.len())), Data::NONE);
    t.unwrap().submit().unwrap();
    let passes = r.wait(n0 + 1);
    assert!(passes >= 5, "5 MiB at 1 MiB a pass takes 5 passes or more, took {passes}");
    let z = r.last().2;
    let t = r.cmp.task_decompress_deflate_alloc_init(Some(&r.src(&z)), Some(&r.dst(data.len())), Data::NONE);
    t.unwrap().submit().unwrap();
    let passes = r.wait(n0 + 2);
    assert!(passes >= 5, "5 MiB of output takes 5 passes or more, took {passes}");
    assert!(r.last().2 == data);
}

#[test]
fn source_and_destination_lists_are_read_and_filled_in_order() {
    let r = rig();
    let data = text(100_000, 4);
    // The source in three elements of three maps.
    let parts = [&data[..10_000], &data[10_000..60_000], &data[60_000..]];
    let bufs: Vec<Buf> = parts.iter().map(|p| r.src(p)).collect();
    bufs[0].chain_list(&bufs[1]).unwrap();
    bufs[0].chain_list(&bufs[2]).unwrap();
    // The destination: two small elements, then a large one.
    let d = [r.dst(100), r.dst(100), r.dst(200_000)];
    d[0].chain_list(&d[1]).unwrap();
    d[0].chain_list(&d[2]).unwrap();
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&bufs[0]), Some(&d[0]), Data::NONE).unwrap();
    t.submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Ok(()));
    let z: Vec<u8> = d.iter().flat_map(|b| b.data_to_vec().unwrap()).collect();
    assert_eq!(d[0].data_len().unwrap(), 100);
    assert_eq!(d[1].data_len().unwrap(), 100);
    assert_eq!(miniz_oxide::inflate::decompress_to_vec(&z).unwrap(), data);
    assert_eq!(r.last().3, crc32fast::hash(&data));
}

#[test]
fn corrupt_deflate_input_fails_with_invalid_value_and_stops_the_context() {
    let r = rig();
    let states: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let s = states.clone();
    r.cmp.as_ctx().set_state_changed_cb(move |_, _, _, next| s.borrow_mut().push(next)).unwrap();
    // Block type 3 is reserved: not DEFLATE.
    let bad = [0xffu8; 64];
    let t =
        r.cmp.task_decompress_deflate_alloc_init(Some(&r.src(&bad)), Some(&r.dst(1000)), Data::from_u64(1));
    t.unwrap().submit().unwrap();
    let data = text(1000, 5);
    let t =
        r.cmp.task_compress_deflate_alloc_init(Some(&r.src(&data)), Some(&r.dst(2000)), Data::from_u64(2));
    t.unwrap().submit().unwrap();
    r.wait(2);
    // (Completions come pool by pool: the order across task types is not submission order.)
    let mut seen: Vec<_> = r.seen.borrow().iter().map(|d| (d.0, d.1)).collect();
    seen.sort_by_key(|d| d.0);
    assert_eq!(seen, [(1, Err(Error::InvalidValue)), (2, Err(FLUSH_STATUS))]);
    r.restart();
    assert!(states.borrow().contains(&CtxState::Stopping));
    // Running again: the next task works.
    r.compress(&data);
}

#[test]
fn truncated_deflate_input_fails_with_invalid_value() {
    let r = rig();
    let data = text(50_000, 6);
    let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
    let t = r.cmp.task_decompress_deflate_alloc_init(
        Some(&r.src(&z[..z.len() / 2])),
        Some(&r.dst(data.len())),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
}

#[test]
fn an_output_larger_than_the_room_fails_with_too_big_both_ways() {
    let r = rig();
    let data = text(50_000, 7);
    let t = r.cmp.task_decompress_deflate_alloc_init(
        Some(&r.src(&miniz_oxide::deflate::compress_to_vec(&data, 6))),
        Some(&r.dst(data.len() - 1)),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Err(Error::TooBig));
    r.restart();
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&r.src(&data)), Some(&r.dst(100)), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(2);
    assert_eq!(r.last().1, Err(Error::TooBig));
    r.restart();
    // Exactly the room needed is enough.
    let t = r.cmp.task_decompress_deflate_alloc_init(
        Some(&r.src(&miniz_oxide::deflate::compress_to_vec(&data, 6))),
        Some(&r.dst(data.len())),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(3);
    assert_eq!(r.last().1, Ok(()));
}

/// An LZ4 frame of `data` made by `lz4_flex`.
fn lz4_frame(data: &[u8], checksums: bool, linked: bool, block: lz4_flex::frame::BlockSize) -> Vec<u8> {
    let info = lz4_flex::frame::FrameInfo::new()
        .block_checksums(checksums)
        .content_checksum(true)
        .block_size(block)
        .block_mode(if linked {
            lz4_flex::frame::BlockMode::Linked
        } else {
            lz4_flex::frame::BlockMode::Independent
        });
    let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// The block sequence of a frame (no header, no end mark, no content checksum) and the
/// content checksum.
fn blocks_of(frame: &[u8]) -> (Vec<u8>, u32) {
    let head: [u8; 6] = frame[..6].try_into().unwrap();
    let h = codec::frame_header_len(&head).unwrap();
    let n = frame.len();
    let sum = u32::from_le_bytes(frame[n - 4..].try_into().unwrap());
    assert_eq!(&frame[n - 8..n - 4], &[0, 0, 0, 0], "the end mark");
    (frame[h..n - 8].to_vec(), sum)
}

#[test]
fn decompress_lz4_stream_decodes_independent_and_linked_blocks_with_and_without_checksums() {
    let r = rig();
    let data = text(700_000, 8);
    let mut n = 0;
    for (checksums, linked) in [(false, false), (true, false), (false, true), (true, true)] {
        let frame = lz4_frame(&data, checksums, linked, lz4_flex::frame::BlockSize::Max64KB);
        let (stream, content) = blocks_of(&frame);
        let t = r.cmp.task_decompress_lz4_stream_alloc_init(
            checksums,
            !linked,
            Some(&r.src(&stream)),
            Some(&r.dst(data.len())),
            Data::NONE,
        );
        t.unwrap().submit().unwrap();
        n += 1;
        r.wait(n);
        let d = r.last();
        assert_eq!(d.1, Ok(()), "checksums {checksums} linked {linked}");
        assert!(d.2 == data, "checksums {checksums} linked {linked}: the bytes");
        assert_eq!(
            (d.3, d.4),
            (crc32fast::hash(&data), content.swap_bytes()),
            "crc, and xxh = the content checksum read big-endian"
        );
    }
}

#[test]
fn decompress_lz4_stream_checks_block_checksums_and_block_dependence() {
    let r = rig();
    let data = text(300_000, 9);
    let frame = lz4_frame(&data, true, false, lz4_flex::frame::BlockSize::Max64KB);
    let (mut stream, _) = blocks_of(&frame);
    // Saying there are no block checksums reads a checksum as the next block's size.
    let t = r.cmp.task_decompress_lz4_stream_alloc_init(
        false,
        true,
        Some(&r.src(&stream)),
        Some(&r.dst(data.len())),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
    r.restart();
    // A flipped bit in the first block fails its checksum.
    stream[10] ^= 1;
    let t = r.cmp.task_decompress_lz4_stream_alloc_init(
        true,
        true,
        Some(&r.src(&stream)),
        Some(&r.dst(data.len())),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(2);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
    r.restart();
    // Linked blocks said to be independent reach back into nothing.
    let (linked, _) = blocks_of(&lz4_frame(&data, false, true, lz4_flex::frame::BlockSize::Max64KB));
    let t = r.cmp.task_decompress_lz4_stream_alloc_init(
        false,
        true,
        Some(&r.src(&linked)),
        Some(&r.dst(data.len())),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(3);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
    r.restart();
    // Too little room.
    let t = r.cmp.task_decompress_lz4_stream_alloc_init(
        false,
        false,
        Some(&r.src(&linked)),
        Some(&r.dst(1000)),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(4);
    assert_eq!(r.last().1, Err(Error::TooBig));
}

#[test]
fn decompress_lz4_reads_whole_frames_and_checks_the_content_checksum() {
    let r = rig();
    let data = text(2 << 20, 10);
    let mut frame = lz4_frame(&data, true, true, lz4_flex::frame::BlockSize::Max1MB);
    let t = r.cmp.task_decompress_lz4_alloc_init(Some(&r.src(&frame)), Some(&r.dst(data.len())), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(1);
    let d = r.last();
    assert_eq!(d.1, Ok(()));
    assert!(d.2 == data);
    assert_eq!((d.3, d.4), (crc32fast::hash(&data), adler(&data)));
    // A wrong content checksum.
    let n = frame.len();
    frame[n - 1] ^= 0x80;
    let t = r.cmp.task_decompress_lz4_alloc_init(Some(&r.src(&frame)), Some(&r.dst(data.len())), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(2);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
    r.restart();
    // Not a frame at all.
    let t = r.cmp.task_decompress_lz4_alloc_init(Some(&r.src(&data[..100])), Some(&r.dst(1000)), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(3);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
}

#[test]
fn decompress_lz4_block_decodes_one_block_into_a_buffer_or_a_list() {
    let r = rig();
    let data = text(100_000, 11);
    let block = lz4_flex::block::compress(&data);
    let t = r.cmp.task_decompress_lz4_block_alloc_init(
        Some(&r.src(&block)),
        Some(&r.dst(data.len())),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(1);
    let d = r.last();
    assert_eq!(d.1, Ok(()));
    assert!(d.2 == data);
    assert_eq!((d.3, d.4), (crc32fast::hash(&data), xxhash_rust::xxh32::xxh32(&data, 0).swap_bytes()));
    // Source and destination as lists.
    let s = [r.src(&block[..10]), r.src(&block[10..])];
    s[0].chain_list(&s[1]).unwrap();
    let dl = [r.dst(30_000), r.dst(80_000)];
    dl[0].chain_list(&dl[1]).unwrap();
    let t = r.cmp.task_decompress_lz4_block_alloc_init(Some(&s[0]), Some(&dl[0]), Data::NONE).unwrap();
    t.submit().unwrap();
    r.wait(2);
    assert_eq!(r.last().1, Ok(()));
    let out: Vec<u8> = dl.iter().flat_map(|b| b.data_to_vec().unwrap()).collect();
    assert!(out == data);
    // Too little room.
    let t = r.cmp.task_decompress_lz4_block_alloc_init(
        Some(&r.src(&block)),
        Some(&r.dst(data.len() - 1)),
        Data::NONE,
    );
    t.unwrap().submit().unwrap();
    r.wait(3);
    assert_eq!(r.last().1, Err(Error::TooBig));
}

#[test]
fn the_output_lands_after_the_destination_data() {
    let r = rig();
    let data = text(10_000, 12);
    let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
    let m = map(&r.dev, vec![b'x'; 20_000], AccessFlags::LOCAL_READ_WRITE);
    let dst = r.inv.buf_get_at(&m, 0, 20_000).unwrap();
    dst.set_data(dst.head().unwrap(), 5).unwrap();
    let t = r.cmp.task_decompress_deflate_alloc_init(Some(&r.src(&z)), Some(&dst), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(1);
    let out = dst.data_to_vec().unwrap();
    assert_eq!(&out[..5], b"xxxxx");
    assert!(out[5..] == data[..]);
}

#[test]
fn try_submit_refuses_what_the_checks_find_and_the_context_stays_running() {
    let r = rig();
    let data = text(1000, 13);
    let src = r.src(&data);
    // No destination.
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&src), None, Data::NONE).unwrap();
    let back = t.try_submit().unwrap_err();
    assert_eq!(back.error, Error::InvalidValue);
    // An empty source.
    let empty = r.inv.buf_get_at(&r.maps.borrow()[0], 0, 10).unwrap();
    let t = back.value;
    t.set_src(Some(&empty));
    t.set_dst(Some(&r.dst(100)));
    let back = t.try_submit().unwrap_err();
    assert_eq!(back.error, Error::InvalidValue);
    // A destination with no room.
    let full = r.inv.buf_get_data_at(&r.maps.borrow()[0], 0, 1000).unwrap();
    let t = back.value;
    t.set_src(Some(&src));
    t.set_dst(Some(&full));
    let back = t.try_submit().unwrap_err();
    assert_eq!(back.error, Error::InvalidValue);
    assert_eq!(r.cmp.as_ctx().state(), CtxState::Running);
    // Fixed, it goes.
    let t = back.value;
    t.set_dst(Some(&r.dst(2000)));
    t.try_submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Ok(()));
}

#[test]
fn maps_the_device_cannot_reach_or_write_are_not_permitted() {
    let r = rig();
    let data = text(1000, 14);
    let other = open_device_with_pci("b1:00.0", None).unwrap();
    let m = map(&other, data.clone(), AccessFlags::LOCAL_READ_WRITE);
    let src = r.inv.buf_get_data_at(&m, 0, data.len()).unwrap();
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&src), Some(&r.dst(2000)), Data::NONE).unwrap();
    assert_eq!(t.try_submit().unwrap_err().error, Error::InvalidValue);
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&src), Some(&r.dst(2000)), Data::NONE).unwrap();
    t.submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Err(Error::NotPermitted));
    r.restart();
    let ro = map(&r.dev, vec![0; 2000], AccessFlags::empty());
    let dst = r.inv.buf_get_at(&ro, 0, 2000).unwrap();
    let t = r.cmp.task_compress_deflate_alloc_init(Some(&r.src(&data)), Some(&dst), Data::NONE).unwrap();
    t.submit().unwrap();
    r.wait(2);
    assert_eq!(r.last().1, Err(Error::NotPermitted));
}

#[test]
fn the_topology_takes_task_types_away_and_sets_the_limits() {
    let topo = Topology::parse(
        "t",
        "device 03:00.0 dpu\ncap compress.compress_deflate 0\ncap compress.max_buf_size 4096\ncap compress.max_buf_list_len 1\n",
    )
    .unwrap();
    let info = &topo.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_is_supported(info, TaskType::CompressDeflate), Err(Error::NotSupported));
    assert_eq!(caps::task_max_buf_size(info, TaskType::CompressDeflate), Err(Error::NotSupported));
    assert_eq!(caps::task_is_supported(info, TaskType::DecompressDeflate), Ok(()));
    assert_eq!(caps::task_max_buf_size(info, TaskType::DecompressDeflate), Ok(4096));
    assert_eq!(caps::task_max_buf_list_len(info, TaskType::DecompressLz4Stream), Ok(1));
    let r = rig_on(info.open().unwrap());
    let data = text(5000, 15);
    // Compress taken away: NOT_SUPPORTED.
    let t =
        r.cmp.task_compress_deflate_alloc_init(Some(&r.src(&data[..100])), Some(&r.dst(1000)), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(1);
    assert_eq!(r.last().1, Err(Error::NotSupported));
    r.restart();
    // Above the size limit: INVALID_VALUE.
    let t = r.cmp.task_decompress_lz4_block_alloc_init(Some(&r.src(&data)), Some(&r.dst(10_000)), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(2);
    assert_eq!(r.last().1, Err(Error::InvalidValue));
    r.restart();
    // A list above the list limit: INVALID_VALUE.
    let s = [r.src(&data[..10]), r.src(&data[10..20])];
    s[0].chain_list(&s[1]).unwrap();
    let t = r.cmp.task_decompress_lz4_block_alloc_init(Some(&s[0]), Some(&r.dst(10_000)), Data::NONE);
    t.unwrap().submit().unwrap();
    r.wait(3);
    assert_eq!(r.last().1, Err(Error::InvalidValue));

    let none = Topology::parse(
        "t",
        "device 03:00.0 dpu\ncap compress.compress_deflate 0\ncap compress.decompress_deflate 0\ncap compress.decompress_lz4 0\ncap compress.decompress_lz4_stream 0\ncap compress.decompress_lz4_block 0\n",
    )
    .unwrap();
    let dev = none.devinfo_list().unwrap()[0].open().unwrap();
    assert_eq!(Compress::create(&dev).err(), Some(Error::NotSupported));
    let typo = Topology::parse("t", "device 03:00.0 dpu\ncap compress.max_buf_sise 2\n").unwrap();
    assert!(caps::task_is_supported(&typo.devinfo_list().unwrap()[0], TaskType::DecompressDeflate).is_err());
}

#[test]
fn stop_with_tasks_queued_flushes_them() {
    let r = rig();
    let data = text(3 << 20, 16);
    for i in 0..3 {
        let t = r.cmp.task_compress_deflate_alloc_init(
            Some(&r.src(&data)),
            Some(&r.dst(data.len())),
            Data::from_u64(i),
        );
        t.unwrap().submit().unwrap();
    }
    r.pe.progress(); // the first task is part-way
    assert_eq!(r.cmp.as_ctx().stop(), Err(Error::InProgress), "tasks in flight: Stopping");
    r.wait(3);
    let seen: Vec<_> = r.seen.borrow().iter().map(|d| (d.0, d.1)).collect();
    assert_eq!(seen, [(0, Err(FLUSH_STATUS)), (1, Err(FLUSH_STATUS)), (2, Err(FLUSH_STATUS))]);
    r.restart();
    // The compressor starts afresh after a task abandoned part-way.
    let small = text(5000, 17);
    let z = r.compress(&small);
    assert_eq!(miniz_oxide::inflate::decompress_to_vec(&z).unwrap(), small);
}

/// `max_num_tasks` bounds the task types' pools together, as DOCA's header says ("sum of num
/// tasks"): a pool may take what the others leave, and resizing a pool counts its new size
/// only.
#[test]
fn the_pools_of_every_task_type_share_max_num_tasks() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let cmp = Compress::create(&dev).unwrap();
    let max = cmp.cap_get_max_num_tasks().unwrap();
    cmp.task_compress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, max - 8).unwrap();
    assert_eq!(
        cmp.task_decompress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, 9).err(),
        Some(Error::InvalidValue)
    );
    cmp.task_decompress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    cmp.task_decompress_lz4_block_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    assert_eq!(
        cmp.task_decompress_lz4_stream_set_conf(|_, _, _| {}, |_, _, _| {}, 1).err(),
        Some(Error::InvalidValue)
    );
    // Smaller again: the room comes back; a pool resized counts once.
    cmp.task_compress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, max - 10).unwrap();
    cmp.task_decompress_lz4_stream_set_conf(|_, _, _| {}, |_, _, _| {}, 2).unwrap();
    assert_eq!(
        cmp.task_decompress_lz4_stream_set_conf(|_, _, _| {}, |_, _, _| {}, 3).err(),
        Some(Error::InvalidValue)
    );
    assert_eq!(
        cmp.task_compress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, max).err(),
        Some(Error::InvalidValue)
    );
}
