//! One DMA memcpy task from allocation to completion, as DOCA's `dma_local_copy` and
//! `pe_polling` samples do it: two maps on a device, a buffer over each, a task, progress
//! until its callback ran. `cargo run -p doca-dma --example memcpy`

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Data, Error, Pe};
use doca_dma::{Dma, MemcpyTask};
use doca_mmap::{AccessFlags, Mmap};

fn main() -> Result<(), Error> {
    // ANCHOR: setup
    let dev = open_device_with_pci("b1:00.0", None)?;
    let pe = Pe::create()?;
    let dma = Dma::create(&dev)?;
    pe.connect_ctx(&dma.as_ctx())?;
    // What the callbacks saw: the status and the destination's data length.
    type Seen = Option<(Result<(), Error>, usize)>;
    let done: Rc<RefCell<Seen>> = Rc::default();
    let (ok, err) = (done.clone(), done.clone());
    let seen = |t: &MemcpyTask| (t.status(), t.dst().map_or(0, |d| d.data_len().unwrap_or(0)));
    dma.task_memcpy_set_conf(
        move |t: MemcpyTask, _, _| *ok.borrow_mut() = Some(seen(&t)),
        move |t: MemcpyTask, _, _| *err.borrow_mut() = Some(seen(&t)),
        4,
    )?;
    dma.as_ctx().start()?;
    // ANCHOR_END: setup

    // ANCHOR: buffers
    let map = |bytes: Vec<u8>| -> Result<Mmap, Error> {
        let m = Mmap::create()?;
        m.set_memrange(bytes)?;
        m.set_permissions(AccessFlags::LOCAL_READ_WRITE)?;
        m.add_dev(&dev)?; // the DMA engine reaches only maps added to its device
        m.start()?;
        Ok(m)
    };
    let text = b"copied by the emulated DMA engine";
    let (src_map, dst_map) = (map(text.to_vec())?, map(vec![0; 64])?);
    let inv = Inventory::create(2)?;
    inv.start()?;
    let src = inv.buf_get_data_at(&src_map, 0, text.len())?; // data: the whole text
    let (dst_base, _) = dst_map.memrange()?;
    let dst = inv.buf_get_by_addr(&dst_map, dst_base, 64)?; // room for 64, data length 0
                                                            // ANCHOR_END: buffers

    // ANCHOR: submit
    let task = dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE)?;
    task.submit()?; // returns at once: the copy is the engine's work
    while done.borrow().is_none() {
        pe.progress(); // the copy runs here, and then the callback
    }
    let (status, dst_len) = done.borrow_mut().take().expect("a callback ran");
    status?;
    assert_eq!(dst_len, text.len(), "the destination ends with the source's length");
    let copied = dst.data_bytes()?;
    assert_eq!(&copied[..], text);
    println!("{}", String::from_utf8_lossy(&copied));
    // ANCHOR_END: submit
    Ok(())
}
