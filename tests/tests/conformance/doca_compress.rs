//! `doca_compress.h`: the compress context, its capabilities and pool limits, each task
//! type's documented behaviour (output after the destination's data, checksums of the
//! uncompressed bytes), and our statuses for what DOCA leaves undocumented (corrupt input
//! `INVALID_VALUE`, an output that does not fit `TOO_BIG`).

use std::cell::RefCell;
use std::io::Write as _;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_compress::caps::{self, TaskType};
use doca_compress::{Compress, FLUSH_STATUS};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};

use crate::support::{started_inventory, until};

/// Completions: (status, destination data, crc, adler or xxh).
type Seen = Rc<RefCell<Vec<(Result<(), Error>, Vec<u8>, u32, u32)>>>;

struct Rig {
    pe: Pe,
    cmp: Compress,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
    maps: RefCell<Vec<Mmap>>,
}

macro_rules! rec {
    ($seen:expr, $second:ident) => {{
        let seen = $seen.clone();
        move |t, _: Data, _: Data| {
            let d = t.dst().map_or(Vec::new(), |b: Buf| b.data_to_vec().unwrap());
            seen.borrow_mut().push((t.status(), d, t.crc_cs(), t.$second()));
        }
    }};
}

fn rig() -> Rig {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let cmp = Compress::create(&dev).unwrap();
    pe.connect_ctx(&cmp.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    cmp.task_compress_deflate_set_conf(rec!(seen, adler_cs), rec!(seen, adler_cs), 4).unwrap();
    cmp.task_decompress_deflate_set_conf(rec!(seen, adler_cs), rec!(seen, adler_cs), 4).unwrap();
    cmp.task_decompress_lz4_set_conf(rec!(seen, adler_cs), rec!(seen, adler_cs), 2).unwrap();
    cmp.task_decompress_lz4_stream_set_conf(rec!(seen, xxh_cs), rec!(seen, xxh_cs), 2).unwrap();
    cmp.task_decompress_lz4_block_set_conf(rec!(seen, xxh_cs), rec!(seen, xxh_cs), 2).unwrap();
    cmp.as_ctx().start().unwrap();
    Rig { pe, cmp, dev, inv: started_inventory(32), seen, maps: RefCell::default() }
}

impl Rig {
    fn buf(&self, data: &[u8], room: usize) -> Buf {
        let mut mem = data.to_vec();
        mem.resize(data.len() + room, 0);
        let m = Mmap::create().unwrap();
        m.set_memrange(mem).unwrap();
        m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
        m.add_dev(&self.dev).unwrap();
        m.start().unwrap();
        let b = self.inv.buf_get_at(&m, 0, data.len() + room).unwrap();
        b.set_data(b.head().unwrap(), data.len()).unwrap();
        self.maps.borrow_mut().push(m);
        b
    }

    fn wait(&self, n: usize) {
        until(&self.pe, || self.seen.borrow().len() >= n);
    }

    fn idle_then_start(&self) {
        until(&self.pe, || self.cmp.as_ctx().state() == CtxState::Idle);
        self.cmp.as_ctx().start().unwrap();
    }
}

fn text(n: usize) -> Vec<u8> {
    (0..n).map(|i| b"the quick brown fox jumps over the lazy dog "[i % 44] ^ ((i / 4096) as u8 & 3)).collect()
}

#[test]
fn doca_compress_create_not_supported_without_any_task_type_and_destroy_bad_state_while_running() {
    let t = Topology::parse(
        "t",
        "device 03:00.0 dpu\ncap compress.compress_deflate 0\ncap compress.decompress_deflate 0\ncap compress.decompress_lz4 0\ncap compress.decompress_lz4_stream 0\ncap compress.decompress_lz4_block 0\n",
    )
    .unwrap();
    assert_eq!(
        Compress::create(&t.devinfo_list().unwrap()[0].open().unwrap()).err(),
        Some(Error::NotSupported)
    );
    let r = rig();
    let cmp = match r.cmp.destroy() {
        Err(refused) => {
            assert_eq!(refused.error, Error::BadState);
            refused.value
        }
        Ok(()) => panic!("destroy of a running context must be BAD_STATE"),
    };
    cmp.as_ctx().stop().unwrap();
    assert!(cmp.destroy().is_ok());
}

#[test]
fn doca_compress_cap_task_is_supported_on_host_and_dpu_and_limits_are_there() {
    for pci in ["03:00.0", "b1:00.0"] {
        let dev = open_device_with_pci(pci, None).unwrap();
        for t in TaskType::ALL {
            assert_eq!(caps::task_is_supported(dev.as_devinfo(), t), Ok(()), "{pci} {t:?}");
            assert_eq!(caps::task_max_buf_size(dev.as_devinfo(), t), Ok(128 << 20));
            assert_eq!(caps::task_max_buf_list_len(dev.as_devinfo(), t), Ok(16));
        }
        assert_eq!(Compress::create(&dev).unwrap().cap_get_max_num_tasks(), Ok(16384));
    }
}

#[test]
fn doca_compress_task_set_conf_invalid_above_the_max_and_bad_state_while_running() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let cmp = Compress::create(&dev).unwrap();
    assert_eq!(
        cmp.task_compress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, 16385),
        Err(Error::InvalidValue)
    );
    let r = rig();
    assert_eq!(r.cmp.task_decompress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::BadState));
}

#[test]
fn doca_compress_task_alloc_init_bad_state_when_idle_and_no_memory_when_the_pool_is_out() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let cmp = Compress::create(&dev).unwrap();
    cmp.task_compress_deflate_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    assert_eq!(cmp.task_compress_deflate_alloc_init(None, None, Data::NONE).err(), Some(Error::BadState));
    let r = rig();
    let held: Vec<_> =
        (0..4).map(|_| r.cmp.task_compress_deflate_alloc_init(None, None, Data::NONE).unwrap()).collect();
    assert_eq!(r.cmp.task_compress_deflate_alloc_init(None, None, Data::NONE).err(), Some(Error::NoMemory));
    drop(held);
}

#[test]
fn doca_compress_task_compress_deflate_appends_after_the_data_and_reports_crc_and_adler() {
    let r = rig();
    let data = text(70_000);
    let dst = r.buf(b"head", 70_000);
    r.cmp
        .task_compress_deflate_alloc_init(Some(&r.buf(&data, 0)), Some(&dst), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    r.wait(1);
    let (st, out, crc, adler) = r.seen.borrow()[0].clone();
    assert_eq!(st, Ok(()));
    assert_eq!(&out[..4], b"head");
    assert_eq!(miniz_oxide::inflate::decompress_to_vec(&out[4..]).unwrap(), data);
    assert_eq!((crc, adler), (crc32fast::hash(&data), adler2::adler32_slice(&data)));
}

#[test]
fn doca_compress_task_decompress_deflate_corrupt_input_is_invalid_value_and_no_room_too_big() {
    let r = rig();
    let data = text(20_000);
    let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
    r.cmp
        .task_decompress_deflate_alloc_init(
            Some(&r.buf(&z[..z.len() - 3], 0)),
            Some(&r.buf(b"", 30_000)),
            Data::NONE,
        )
        .unwrap()
        .submit()
        .unwrap();
    r.cmp
        .task_decompress_deflate_alloc_init(Some(&r.buf(&z, 0)), Some(&r.buf(b"", 30_000)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    r.wait(2);
    let st: Vec<_> = r.seen.borrow().iter().map(|s| s.0).collect();
    assert_eq!(st, [Err(Error::InvalidValue), Err(FLUSH_STATUS)], "truncated, then flushed");
    r.idle_then_start();
    r.cmp
        .task_decompress_deflate_alloc_init(Some(&r.buf(&z, 0)), Some(&r.buf(b"", 19_999)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    r.wait(3);
    assert_eq!(r.seen.borrow()[2].0, Err(Error::TooBig));
}

#[test]
fn doca_compress_task_decompress_lz4_stream_xxh_is_the_frames_content_checksum() {
    let r = rig();
    let data = text(200_000);
    let info = lz4_flex::frame::FrameInfo::new().content_checksum(true).block_checksums(true);
    let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
    enc.write_all(&data).unwrap();
    let frame = enc.finish().unwrap();
    let n = frame.len();
    let content = u32::from_le_bytes(frame[n - 4..].try_into().unwrap());
    let t = r
        .cmp
        .task_decompress_lz4_stream_alloc_init(
            true,
            true,
            Some(&r.buf(&frame[7..n - 8], 0)),
            Some(&r.buf(b"", data.len())),
            Data::NONE,
        )
        .unwrap();
    assert!(t.has_block_checksum() && t.are_blocks_independent());
    t.submit().unwrap();
    r.wait(1);
    // Shorter than a frame's magic number: refused at validation, the context still Running.
    let short = r
        .cmp
        .task_decompress_lz4_alloc_init(Some(&r.buf(&frame[..3], 0)), Some(&r.buf(b"", 16)), Data::NONE)
        .unwrap();
    assert_eq!(short.try_submit().unwrap_err().error, Error::InvalidValue, "3 bytes: no LZ4 frame");
    assert_eq!(r.cmp.as_ctx().state(), CtxState::Running);
    // The 2.5/2.6 task takes the whole frame.
    r.cmp
        .task_decompress_lz4_alloc_init(Some(&r.buf(&frame, 0)), Some(&r.buf(b"", data.len())), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    r.wait(2);
    let seen = r.seen.borrow();
    assert_eq!((seen[0].0, seen[0].3), (Ok(()), content.swap_bytes()), "the stored checksum read big-endian");
    assert!(seen[0].1 == data && seen[1].1 == data);
    assert_eq!(seen[1].3, adler2::adler32_slice(&data));
}

#[test]
fn doca_compress_task_decompress_lz4_block_one_block_and_too_small_is_too_big() {
    let r = rig();
    let data = text(10_000);
    let block = lz4_flex::block::compress(&data);
    r.cmp
        .task_decompress_lz4_block_alloc_init(Some(&r.buf(&block, 0)), Some(&r.buf(b"", 10_000)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    r.wait(1);
    assert_eq!(r.seen.borrow()[0].3, xxhash_rust::xxh32::xxh32(&data, 0).swap_bytes());
    r.cmp
        .task_decompress_lz4_block_alloc_init(Some(&r.buf(&block, 0)), Some(&r.buf(b"", 9_999)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    r.wait(2);
    assert_eq!(r.seen.borrow()[1].0, Err(Error::TooBig));
}
