//! Walking a buffer list (`doca_buf_chain_list`) as a library's task does: the elements in
//! order with a limit on their number, each element's data or free room as a segment of its
//! map, and the three moves a task makes with them — gather the source's data, scatter
//! bytes into the destination's rooms, copy map to map from one list's data into another's
//! rooms. A destination's data lengths grow only once every byte is in place.

use std::fmt;

use doca_core::{bail, Error, Result};

use crate::{Buf, Shape};

/// One element's part of a list walk: its data, or its free room after the data.
#[derive(Clone, Debug)]
pub struct Seg {
    /// The element.
    pub buf: Buf,
    /// Offset of the segment in the element's map.
    pub at: usize,
    /// Bytes of the segment.
    pub len: usize,
}

/// The segments of a list walk ([`data`], [`room`]): one element held in place — a task's
/// usual single buffer, walked without allocating — or several. Reads as a slice.
#[derive(Clone, Debug)]
pub enum Segs {
    /// A buffer in no list (or the last of one).
    One([Seg; 1]),
    /// The elements of a list.
    Many(Vec<Seg>),
}

impl std::ops::Deref for Segs {
    type Target = [Seg];

    fn deref(&self) -> &[Seg] {
        match self {
            Segs::One(one) => one,
            Segs::Many(many) => many,
        }
    }
}

/// The elements of the list headed by `head`, in order. More than `max` is
/// `INVALID_VALUE`, logged with `what` (which list) and `limit` (where `max` comes from).
pub fn elements(head: &Buf, max: u32, what: impl fmt::Display, limit: &str) -> Result<Vec<Buf>> {
    let mut out = Vec::new();
    let mut cur = Some(head.clone());
    while let Some(b) = cur {
        if out.len() as u64 >= u64::from(max) {
            bail!(Error::InvalidValue, "{what}: the list has more than {max} buffers ({limit})");
        }
        cur = b.next_in_list()?;
        out.push(b);
    }
    Ok(out)
}

/// The data of each element of the list (see [`elements`] for `max`, `what`, `limit`).
pub fn data(head: &Buf, max: u32, what: impl fmt::Display, limit: &str) -> Result<Segs> {
    walk(head, max, what, limit, |buf, s| Seg { buf, at: s.data, len: s.data_len })
}

/// The free room after the data of each element of the list (see [`elements`]).
pub fn room(head: &Buf, max: u32, what: impl fmt::Display, limit: &str) -> Result<Segs> {
    walk(head, max, what, limit, |buf, s| Seg { buf, at: s.data_end(), len: s.room() })
}

/// A segment `seg` of each element: a buffer in no list is one segment, held in place (one
/// look at it); a list is walked by [`elements`] (its limit checked there).
fn walk(
    head: &Buf,
    max: u32,
    what: impl fmt::Display,
    limit: &str,
    seg: impl Fn(Buf, Shape) -> Seg,
) -> Result<Segs> {
    let shape = head.shape()?;
    if max > 0 && !shape.in_list {
        return Ok(Segs::One([seg(head.clone(), shape)]));
    }
    let mut segs = Vec::new();
    for b in elements(head, max, what, limit)? {
        let shape = b.shape()?;
        segs.push(seg(b, shape));
    }
    Ok(Segs::Many(segs))
}

/// The bytes of all segments.
pub fn total(segs: &[Seg]) -> usize {
    segs.iter().map(|s| s.len).sum()
}

/// Appends the bytes of `segs` (data segments) to `out`.
pub fn gather(segs: &[Seg], out: &mut Vec<u8>) -> Result<()> {
    for s in segs {
        let at = out.len();
        out.resize(at + s.len, 0);
        s.buf.map().read(s.at, &mut out[at..])?;
    }
    Ok(())
}

/// Writes `bytes` into the rooms `segs` in turn, then grows each element's data length by
/// what it received. More bytes than room is `INVALID_VALUE` (nothing written).
pub fn scatter(segs: &[Seg], bytes: &[u8], what: &str) -> Result<()> {
    let room = total(segs);
    if bytes.len() > room {
        bail!(
            Error::InvalidValue,
            "{what}: {} bytes do not fit the destination's room of {room}",
            bytes.len()
        );
    }
    let mut at = 0;
    for s in segs {
        let n = s.len.min(bytes.len() - at);
        if n > 0 {
            s.buf.map().write(s.at, &bytes[at..at + n])?;
            at += n;
        }
    }
    grow(segs, bytes.len())
}

/// Copies the data segments `src` map to map into the rooms `dst` in turn (no bounce
/// through this process for maps that share memory), then grows the destination's data
/// lengths. More bytes than room is `INVALID_VALUE` (nothing copied). Returns the bytes.
pub fn copy(src: &[Seg], dst: &[Seg], what: &str) -> Result<usize> {
    let (len, room) = (total(src), total(dst));
    if len > room {
        bail!(
            Error::InvalidValue,
            "{what}: the destination has room for {room} bytes, the source holds {len}"
        );
    }
    let mut d = dst.iter().filter(|s| s.len > 0);
    let mut cur: Option<(&Seg, usize)> = None;
    for s in src {
        let mut done = 0;
        while done < s.len {
            let (seg, used) = match cur {
                Some((seg, used)) if used < seg.len => (seg, used),
                _ => match d.next() {
                    Some(seg) => (seg, 0),
                    None => {
                        bail!(Error::InvalidValue, "{what}: the destination's room shrank during the copy")
                    }
                },
            };
            let n = (s.len - done).min(seg.len - used);
            s.buf.map().copy_to_map(s.at + done, n, seg.buf.map(), seg.at + used)?;
            done += n;
            cur = Some((seg, used + n));
        }
    }
    grow(dst, len)?;
    Ok(len)
}

/// Grows the data lengths of the rooms `segs`, in turn, by `len` bytes in all.
fn grow(segs: &[Seg], len: usize) -> Result<()> {
    let mut left = len;
    for s in segs {
        if left == 0 {
            break;
        }
        let n = s.len.min(left);
        s.buf.increase_data_len(n)?;
        left -= n;
    }
    Ok(())
}
