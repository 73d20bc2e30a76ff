//! Coding matrices (`struct doca_ec_matrix`) over GF(2^8), and the arithmetic every task
//! applies: output block `o` = Σ over input blocks `i` of `coef(i, o)` · input `i`, bytewise
//! in the field.
//!
//! **The field.** GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D), generator 2:
//! the field of Intel's ISA-L (`gf_mul`, `gf_inv`, the erasure-code tables storage stacks
//! build with it) and of the `reed-solomon-erasure` crate whose `galois_8` module does the
//! arithmetic here. DOCA's header does not name the polynomial; 0x11D is the conventional
//! Reed-Solomon choice and the one a software fallback of DOCA EC (ISA-L) would share, so
//! blocks coded here decode with those tools given the same matrix.
//!
//! **The constructions** are the ones `doca_erasure_coding.h` (2.6 to 3.x) writes down, for
//! `k` data blocks and `m` redundancy blocks, `0 <= i < k`, `0 <= j < m`, `+` being the
//! field's addition (XOR):
//!
//! | type | coefficient of data block `i` in redundancy block `j` |
//! |------|--------------------------------------------------------|
//! | [`MatrixType::Cauchy`] | `1 / (x_i + y_j)`, `x_i = i`, `y_j = k + j` (ISA-L's `gf_gen_cauchy1_matrix`, transposed) |
//! | [`MatrixType::Vandermonde`] | `(i + 1)^j` (row `j = 0` is plain parity) |
//!
//! The 2.5 header words the same Cauchy matrix in ISA-L's terms and a different Vandermonde
//! (`2^{i(j-k+1)}`); this library builds the 2.6+ one at every API level.
//!
//! **Raw matrices** (`doca_ec_matrix_create_from_raw`) are `k * m` bytes, data block major:
//! byte `i * m + j` is the coefficient of data block `i` in redundancy block `j` — the layout
//! of the table above, as the header indexes it (`a_i_j`).
//!
//! **Recovery** (`doca_ec_matrix_create_recover`): the missing indices (ascending, at most
//! `m`) name blocks of the whole sequence `data_0 .. data_{k-1}, rdnc_0 .. rdnc_{m-1}`. The
//! available blocks a recover task reads are the first `k` blocks of that sequence that are
//! not missing, in order (what DOCA's erasure_coding_recover sample gathers); its output is
//! one block per missing index, in order (a missing redundancy block is coded again). The
//! recover matrix inverts the `k x k` rows of the generator `[I; A^T]` of the available
//! blocks; a singular one (possible with Vandermonde) is `INVALID_VALUE`.
//!
//! **Update** (`doca_ec_matrix_create_update`): for `n` updated data blocks (ascending
//! indices), the task reads `old_u, new_u` pairs then the `m` old redundancy blocks and writes
//! the `m` new ones: `rdnc_j' = rdnc_j + Σ_u a_{idx_u, j} (old_u + new_u)`.

use std::sync::Arc;

use doca_core::{bail, Error, Result};
use reed_solomon_erasure::galois_8 as gf;

/// `enum doca_ec_matrix_type` (DOCA's values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum MatrixType {
    /// `DOCA_EC_MATRIX_TYPE_CAUCHY` (1): every square sub-matrix invertible.
    Cauchy = 1,
    /// `DOCA_EC_MATRIX_TYPE_VANDERMONDE` (2): some recoveries may be singular.
    Vandermonde = 2,
}

impl MatrixType {
    /// The type of an enum value (`None` for any other number).
    pub fn from_raw(v: u32) -> Option<MatrixType> {
        match v {
            1 => Some(MatrixType::Cauchy),
            2 => Some(MatrixType::Vandermonde),
            _ => None,
        }
    }
}

/// What a matrix was made for, which decides the tasks that take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A coding matrix: `k` inputs, `m` outputs; built by type, or from raw bytes (`None`).
    /// Create and Galois-multiply tasks take it; update and recover matrices are made from it.
    Coding(Option<MatrixType>),
    /// An update matrix: `2n + m` inputs, `m` outputs.
    Update,
    /// A recover matrix: `k` inputs, one output per missing block.
    Recover,
}

struct Inner {
    role: Role,
    data_blocks: usize,
    rdnc_blocks: usize,
    inputs: usize,
    outputs: usize,
    /// `inputs * outputs` coefficients, input major.
    coef: Vec<u8>,
}

/// `struct doca_ec_matrix`: an immutable coefficient matrix, cheap to clone (tasks hold
/// one; destroying the application's handle does not pull it from under a queued task).
#[derive(Clone)]
pub struct Matrix(Arc<Inner>);

impl std::fmt::Debug for Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Matrix({:?}, k={}, m={}, {}x{})",
            self.0.role, self.0.data_blocks, self.0.rdnc_blocks, self.0.inputs, self.0.outputs
        )
    }
}

/// `k` and `m` of a coding matrix: each at least 1, together at most 256 (the field's size:
/// Cauchy needs distinct `x_i`, `y_j`).
fn check_shape(k: usize, m: usize) -> Result<()> {
    if k == 0 || m == 0 {
        bail!(
            Error::InvalidValue,
            "ec: a coding matrix needs at least one data block and one redundancy block (got {k} and {m})"
        );
    }
    if k + m > 256 {
        bail!(Error::InvalidValue, "ec: {k} data + {m} redundancy blocks exceed the 256 elements of GF(2^8)");
    }
    Ok(())
}

/// Indices strictly ascending and below `below`.
fn check_indices(what: &str, idx: &[u32], below: usize) -> Result<()> {
    for (n, &i) in idx.iter().enumerate() {
        if i as usize >= below {
            bail!(Error::InvalidValue, "ec: {what} index {i} is out of range (below {below})");
        }
        if n > 0 && idx[n - 1] >= i {
            bail!(
                Error::InvalidValue,
                "ec: {what} indices must be strictly ascending ({} then {i})",
                idx[n - 1]
            );
        }
    }
    Ok(())
}

impl Matrix {
    fn new(role: Role, k: usize, m: usize, inputs: usize, outputs: usize, coef: Vec<u8>) -> Matrix {
        debug_assert_eq!(coef.len(), inputs * outputs);
        Matrix(Arc::new(Inner { role, data_blocks: k, rdnc_blocks: m, inputs, outputs, coef }))
    }

    /// The coding matrix of `kind` for `k` data and `m` redundancy blocks (the header's
    /// constructions; see the module docs).
    pub fn coding(kind: MatrixType, k: usize, m: usize) -> Result<Matrix> {
        check_shape(k, m)?;
        let mut coef = vec![0u8; k * m];
        for i in 0..k {
            for j in 0..m {
                coef[i * m + j] = match kind {
                    // x_i + y_j never 0: i < k <= k + j.
                    MatrixType::Cauchy => gf::div(1, (i as u8) ^ ((k + j) as u8)),
                    MatrixType::Vandermonde => gf::exp((i + 1) as u8, j),
                };
            }
        }
        Ok(Matrix::new(Role::Coding(Some(kind)), k, m, k, m, coef))
    }

    /// A coding matrix from `k * m` raw coefficients, data block major.
    pub fn from_raw(data: &[u8], k: usize, m: usize) -> Result<Matrix> {
        check_shape(k, m)?;
        if data.len() != k * m {
            bail!(Error::InvalidValue, "ec: a raw {k}x{m} matrix has {} bytes, not {}", k * m, data.len());
        }
        Ok(Matrix::new(Role::Coding(None), k, m, k, m, data.to_vec()))
    }

    /// What the matrix is for.
    pub fn role(&self) -> Role {
        self.0.role
    }

    /// Data blocks of the coding matrix it comes from (`k`).
    pub fn data_block_count(&self) -> usize {
        self.0.data_blocks
    }

    /// Redundancy blocks of the coding matrix it comes from (`m`).
    pub fn rdnc_block_count(&self) -> usize {
        self.0.rdnc_blocks
    }

    /// Blocks a task with this matrix reads.
    pub fn inputs(&self) -> usize {
        self.0.inputs
    }

    /// Blocks a task with this matrix writes.
    pub fn outputs(&self) -> usize {
        self.0.outputs
    }

    /// The coefficient of input block `i` in output block `o`.
    pub fn coef(&self, i: usize, o: usize) -> u8 {
        self.0.coef[i * self.0.outputs + o]
    }

    /// Whether both are the same matrix object.
    pub fn ptr_eq(&self, other: &Matrix) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn coding_only(&self, what: &str) -> Result<()> {
        if !matches!(self.0.role, Role::Coding(_)) {
            bail!(
                Error::InvalidValue,
                "ec: {what} is made from a coding matrix (doca_ec_matrix_create or _from_raw), not a {:?} matrix",
                self.0.role
            );
        }
        Ok(())
    }

    /// Row `t` of the generator `[I; A^T]`: block `t` of the sequence (data then redundancy)
    /// as a combination of the data blocks.
    fn generator(&self, t: usize, c: usize) -> u8 {
        let k = self.0.data_blocks;
        if t < k {
            (t == c) as u8
        } else {
            self.coef(c, t - k)
        }
    }

    /// The recover matrix for the missing blocks `missing` (see the module docs).
    pub fn recover(&self, missing: &[u32]) -> Result<Matrix> {
        self.coding_only("a recover matrix")?;
        let (k, m) = (self.0.data_blocks, self.0.rdnc_blocks);
        if missing.is_empty() || missing.len() > m {
            bail!(
                Error::InvalidValue,
                "ec: {} missing blocks: a {k}+{m} code recovers 1 to {m}",
                missing.len()
            );
        }
        check_indices("a missing block", missing, k + m)?;
        let avail: Vec<usize> = (0..k + m).filter(|t| !missing.contains(&(*t as u32))).take(k).collect();
        let mut s = vec![0u8; k * k];
        for (r, &t) in avail.iter().enumerate() {
            for c in 0..k {
                s[r * k + c] = self.generator(t, c);
            }
        }
        let Some(inv) = invert(&mut s, k) else {
            bail!(
                Error::InvalidValue,
                "ec: the available blocks {avail:?} cannot recover the missing ones (a singular sub-matrix: use Cauchy)"
            );
        };
        let n = missing.len();
        let mut coef = vec![0u8; k * n];
        for (o, &t) in missing.iter().enumerate() {
            for r in 0..k {
                let mut acc = 0u8;
                for c in 0..k {
                    acc ^= gf::mul(self.generator(t as usize, c), inv[c * k + r]);
                }
                coef[r * n + o] = acc;
            }
        }
        Ok(Matrix::new(Role::Recover, k, m, k, n, coef))
    }

    /// The update matrix for the updated data blocks `updated` (see the module docs).
    pub fn update(&self, updated: &[u32]) -> Result<Matrix> {
        self.coding_only("an update matrix")?;
        let (k, m) = (self.0.data_blocks, self.0.rdnc_blocks);
        if updated.is_empty() || updated.len() > k {
            bail!(
                Error::InvalidValue,
                "ec: {} updated blocks: a {k}+{m} code updates 1 to {k}",
                updated.len()
            );
        }
        check_indices("an updated data block", updated, k)?;
        let n = updated.len();
        let inputs = 2 * n + m;
        let mut coef = vec![0u8; inputs * m];
        for (u, &idx) in updated.iter().enumerate() {
            for j in 0..m {
                let a = self.coef(idx as usize, j);
                coef[(2 * u) * m + j] = a;
                coef[(2 * u + 1) * m + j] = a;
            }
        }
        for l in 0..m {
            coef[(2 * n + l) * m + l] = 1;
        }
        Ok(Matrix::new(Role::Update, k, m, inputs, m, coef))
    }

    /// Applies the matrix to whole blocks in memory: `outputs[o]` = Σ `coef(i, o)` ·
    /// `inputs[i]`. Every block the same length; `INVALID_VALUE` otherwise. (What the
    /// tasks do, without a context: the same code, for direct use and as a reference.)
    pub fn apply(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<()> {
        if inputs.len() != self.0.inputs || outputs.len() != self.0.outputs {
            bail!(
                Error::InvalidValue,
                "ec: the matrix takes {} blocks to {}, given {} to {}",
                self.0.inputs,
                self.0.outputs,
                inputs.len(),
                outputs.len()
            );
        }
        let len = inputs.first().map_or(0, |b| b.len());
        if inputs.iter().any(|b| b.len() != len) || outputs.iter().any(|b| b.len() != len) {
            bail!(Error::InvalidValue, "ec: blocks of different lengths");
        }
        for out in outputs.iter_mut() {
            out.fill(0);
        }
        for (i, input) in inputs.iter().enumerate() {
            self.accumulate(i, input, outputs, 0);
        }
        Ok(())
    }

    /// Adds input block `i`'s piece `piece` (at offset `at` of the stripe) into each output.
    pub(crate) fn accumulate(&self, i: usize, piece: &[u8], outputs: &mut [&mut [u8]], at: usize) {
        for (o, out) in outputs.iter_mut().enumerate() {
            let c = self.coef(i, o);
            let out = &mut out[at..at + piece.len()];
            match c {
                0 => {}
                1 => out.iter_mut().zip(piece).for_each(|(d, s)| *d ^= s),
                _ => gf::mul_slice_xor(c, piece, out),
            }
        }
    }
}

/// The inverse of the `n x n` matrix `a` (row major; destroyed), or `None` when singular
/// (Gauss-Jordan elimination in the field).
fn invert(a: &mut [u8], n: usize) -> Option<Vec<u8>> {
    let mut inv = vec![0u8; n * n];
    for d in 0..n {
        inv[d * n + d] = 1;
    }
    for col in 0..n {
        let pivot = (col..n).find(|&r| a[r * n + col] != 0)?;
        if pivot != col {
            for c in 0..n {
                a.swap(pivot * n + c, col * n + c);
                inv.swap(pivot * n + c, col * n + c);
            }
        }
        let p = a[col * n + col];
        if p != 1 {
            for c in 0..n {
                a[col * n + c] = gf::div(a[col * n + c], p);
                inv[col * n + c] = gf::div(inv[col * n + c], p);
            }
        }
        for r in 0..n {
            let f = a[r * n + col];
            if r != col && f != 0 {
                for c in 0..n {
                    a[r * n + c] ^= gf::mul(f, a[col * n + c]);
                    inv[r * n + c] ^= gf::mul(f, inv[col * n + c]);
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GF(2^8) multiplication by shift and add, reducing by 0x11D: an independent reference
    /// for the crate's tables.
    fn slow_mul(mut a: u8, mut b: u8) -> u8 {
        let mut p = 0u8;
        while b != 0 {
            if b & 1 != 0 {
                p ^= a;
            }
            let carry = a & 0x80 != 0;
            a <<= 1;
            if carry {
                a ^= 0x1D;
            }
            b >>= 1;
        }
        p
    }

    fn slow_inv(a: u8) -> u8 {
        (1..=255u8).find(|&x| slow_mul(a, x) == 1).unwrap()
    }

    #[test]
    fn the_field_is_0x11d() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(gf::mul(a, b), slow_mul(a, b), "{a} * {b}");
            }
        }
        // x^8 = x^4 + x^3 + x^2 + 1: 0x80 * 2 = 0x1D.
        assert_eq!(gf::mul(0x80, 2), 0x1D);
    }

    #[test]
    fn cauchy_known_answers() {
        let m = Matrix::coding(MatrixType::Cauchy, 2, 1).unwrap();
        // 1 / (0 + 2) and 1 / (1 + 2) = 1/3.
        assert_eq!((m.coef(0, 0), m.coef(1, 0)), (0x8E, 0xF4));
        let m = Matrix::coding(MatrixType::Cauchy, 4, 2).unwrap();
        for i in 0..4 {
            for j in 0..2 {
                assert_eq!(m.coef(i, j), slow_inv(i as u8 ^ (4 + j) as u8), "a_{i}_{j}");
            }
        }
    }

    #[test]
    fn vandermonde_known_answers() {
        let m = Matrix::coding(MatrixType::Vandermonde, 3, 3).unwrap();
        // rows: data block i, columns j: (i+1)^j; 3^2 = 5 in GF(2^8).
        let want = [[1, 1, 1], [1, 2, 4], [1, 3, 5]];
        for (i, row) in want.iter().enumerate() {
            for (j, &w) in row.iter().enumerate() {
                assert_eq!(m.coef(i, j), w, "a_{i}_{j}");
            }
        }
    }

    #[test]
    fn shapes_and_indices_are_checked() {
        assert_eq!(Matrix::coding(MatrixType::Cauchy, 0, 2).unwrap_err(), Error::InvalidValue);
        assert_eq!(Matrix::coding(MatrixType::Cauchy, 250, 7).unwrap_err(), Error::InvalidValue);
        assert_eq!(Matrix::from_raw(&[1, 2, 3], 2, 2).unwrap_err(), Error::InvalidValue);
        let c = Matrix::coding(MatrixType::Cauchy, 4, 2).unwrap();
        assert_eq!(c.recover(&[]).unwrap_err(), Error::InvalidValue);
        assert_eq!(c.recover(&[0, 1, 2]).unwrap_err(), Error::InvalidValue);
        assert_eq!(c.recover(&[1, 0]).unwrap_err(), Error::InvalidValue);
        assert_eq!(c.recover(&[6]).unwrap_err(), Error::InvalidValue);
        assert_eq!(c.update(&[4]).unwrap_err(), Error::InvalidValue);
        let r = c.recover(&[1]).unwrap();
        assert_eq!(r.recover(&[0]).unwrap_err(), Error::InvalidValue);
        assert_eq!((r.inputs(), r.outputs()), (4, 1));
    }

    #[test]
    fn a_singular_vandermonde_recovery_is_refused() {
        // Raw matrix with two equal columns: losing two data blocks needs both redundancy
        // blocks, which carry the same information.
        let raw = Matrix::from_raw(&[1, 1, 2, 2, 3, 3], 3, 2).unwrap();
        assert_eq!(raw.recover(&[0, 1]).unwrap_err(), Error::InvalidValue);
    }
}
