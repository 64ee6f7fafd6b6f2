"""R1CS as CSR matrices over Fr, and a bellman-like ConstraintSystem to build them.

Variables are ordered ONE, inputs, aux (docs/architecture.md, Conventions). While building, input i is the
non-negative id i (ONE is 0) and aux j is the negative id -(j + 1), so aux ids never
move when inputs are added later; `finalize` maps them to global columns.

Two optimizations live here (see opts.py):
  A1: terms go straight into flat, preallocated growable buffers; off, every term is
      kept as its own heap object and joined at the end.
  A2: witness vectors are allocated once at their final length; off, they grow chunk
      by chunk and are concatenated at the end.
Both give bit-identical R1CS and assignments.
"""
from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass, field

import numpy as np

from .field import R, fr_array, ints_to_limbs, FR_LIMBS
from . import plans
from .opts import OptSet, resolve

ONE = 0


class UnsatisfiedError(ValueError):
    """The witness does not satisfy the circuit."""


class CSR:
    """Sparse Fr matrix: row i holds cols[indptr[i]:indptr[i+1]] with their coefficients.

    Two forms of the coefficients: `coeffs` (canonical ints, object[nnz]), or compact: `table`
    (the distinct canonical ints, object[t], t <= 2^16) and `index` (uint16[nnz] into it), for
    circuits too large for an object per nonzero. `coeffs` of a compact matrix is made on demand
    (small sizes only); cols may be int64 or int32."""

    INDEX_DTYPE = np.uint16

    def __init__(self, indptr: np.ndarray, cols: np.ndarray, coeffs: np.ndarray | None = None,
                 table: np.ndarray | None = None, index: np.ndarray | None = None):
        if (coeffs is None) == (table is None or index is None):
            raise ValueError("CSR takes either coeffs or table and index")
        if index is not None and (index.dtype != self.INDEX_DTYPE or len(index) != len(cols)):
            raise ValueError(f"CSR index must be {np.dtype(self.INDEX_DTYPE).name}[nnz]")
        self.indptr, self.cols = indptr, cols
        self._coeffs, self.table, self.index = coeffs, table, index

    @property
    def compact(self) -> bool:
        return self.table is not None

    @property
    def coeffs(self) -> np.ndarray:
        if self._coeffs is None:
            self._coeffs = self.table[self.index]
        return self._coeffs

    @property
    def nnz(self) -> int:
        return len(self.cols)

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    def row_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.rows, dtype=np.int64), np.diff(self.indptr))

    def matvec(self, z: np.ndarray) -> np.ndarray:
        """(M z) mod r, vectorized: one product per nonzero, then a segmented sum."""
        out = np.zeros(self.rows, dtype=object)
        if self.nnz == 0:
            return out
        prod = self.coeffs * z[self.cols]
        starts = self.indptr[:-1]
        nonempty = np.diff(self.indptr) > 0
        out[nonempty] = np.add.reduceat(prod, starts[nonempty])
        return out % R

    def table_limbs(self) -> np.ndarray:
        """Compact form: the table in canonical limbs, uint32[t, 8]."""
        return ints_to_limbs(self.table, FR_LIMBS)

    def limbs(self) -> np.ndarray:
        """The coefficients as they are (canonical) in limbs, uint32[nnz, 8]: computed once and kept
        (the digest and the GPU uploads of the plain form use them; 32 bytes per nonzero)."""
        cached = getattr(self, "_limbs", None)
        if cached is None or len(cached) != self.nnz:
            cached = self.table_limbs()[self.index] if self.compact else ints_to_limbs(self.coeffs, FR_LIMBS)
            cached.flags.writeable = False
            self._limbs = cached
        return cached

    def hash_into(self, h, chunk: int = 1 << 22) -> None:
        """indptr, cols (<i8) and coefficient limbs into hashlib object h; a compact matrix
        streams its limbs in chunks (the same bytes as the plain form)."""
        h.update(self.indptr.astype("<i8").tobytes())
        h.update(self.cols.astype("<i8").tobytes())
        if not self.compact:
            h.update(self.limbs().tobytes())
            return
        tl = self.table_limbs()
        for i in range(0, self.nnz, chunk):
            h.update(tl[self.index[i:i + chunk]].tobytes())

    @classmethod
    def to_compact(cls, m: "CSR") -> "CSR":
        """The same matrix in compact form (raises ValueError over 2^16 distinct coefficients)."""
        if m.compact:
            return m
        table, index = np.unique(m.coeffs % R, return_inverse=True)
        if len(table) > 1 << 16:
            raise ValueError(f"{len(table)} distinct coefficients: too many for the compact form")
        return cls(m.indptr, m.cols, table=table, index=index.astype(cls.INDEX_DTYPE))


@dataclass
class R1CS:
    num_inputs: int          # including ONE
    num_aux: int
    A: CSR
    B: CSR
    C: CSR
    names: list = field(default_factory=list)   # (first_row, label) blocks, for error messages

    @property
    def num_constraints(self) -> int:
        return self.A.rows

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    @property
    def qap_rows(self) -> int:
        """Constraints plus one `input_i * 0 = 0` row per input (bellman)."""
        return self.num_constraints + self.num_inputs

    def label(self, row: int) -> str:
        name = "constraint"
        for start, lab in self.names:
            if start <= row:
                name = lab
            else:
                break
        return name

    def digest(self) -> str:
        if getattr(self, "_digest", None):
            return self._digest
        h = hashlib.sha256()
        h.update(np.array([self.num_inputs, self.num_aux, self.num_constraints], dtype="<i8").tobytes())
        for m in (self.A, self.B, self.C):
            m.hash_into(h)
        self._digest = h.hexdigest()
        return self._digest

    def evaluate(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.A.matvec(z), self.B.matvec(z), self.C.matvec(z)

    def check(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        bad = np.nonzero(((a * b - c) % R) != 0)[0]
        if len(bad):
            i = int(bad[0])
            raise UnsatisfiedError(
                f"witness does not satisfy the circuit: constraint {i} ({self.label(i)}) fails, "
                f"{len(bad)} failing in all")


# --- term storage (A1) ---

class _FlatTerms:
    """A1 on: rows/vars/coeffs in flat buffers that double when full."""

    def __init__(self, capacity: int = 1024):
        cap = max(capacity, 16)
        self.rows = np.empty(cap, dtype=np.int64)
        self.vars = np.empty(cap, dtype=np.int64)
        self.coeffs = np.empty(cap, dtype=object)
        self.n = 0

    def _reserve(self, k: int) -> None:
        need = self.n + k
        if need <= len(self.rows):
            return
        cap = max(need, 2 * len(self.rows))
        for name in ("rows", "vars", "coeffs"):
            old = getattr(self, name)
            new = np.empty(cap, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def add(self, rows, vars_, coeffs) -> None:
        k = len(rows)
        self._reserve(k)
        s = slice(self.n, self.n + k)
        self.rows[s], self.vars[s], self.coeffs[s] = rows, vars_, coeffs
        self.n += k

    def add_one(self, row: int, var: int, coeff: int) -> None:
        self._reserve(1)
        self.rows[self.n], self.vars[self.n], self.coeffs[self.n] = row, var, coeff
        self.n += 1

    def arrays(self):
        return self.rows[: self.n], self.vars[: self.n], self.coeffs[: self.n]


class _ListTerms:
    """A1 off: one heap object per term (or per block of terms), joined at the end."""

    def __init__(self, capacity: int = 0):
        self.items: list = []

    def add(self, rows, vars_, coeffs) -> None:
        self.items.append((np.asarray(rows, dtype=np.int64), np.asarray(vars_, dtype=np.int64),
                           np.asarray(coeffs, dtype=object)))

    def add_one(self, row: int, var: int, coeff: int) -> None:
        self.items.append((np.array([row], dtype=np.int64), np.array([var], dtype=np.int64),
                           np.array([coeff], dtype=object)))

    def arrays(self):
        if not self.items:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, dtype=object)
        r, v, c = zip(*self.items)
        return np.concatenate(r), np.concatenate(v), np.concatenate(c)


# --- witness storage (A2) ---

class _PresizedVec:
    """A2 on: one allocation at the final length (grows only if the hint was short)."""

    def __init__(self, capacity: int):
        self.buf = np.empty(max(capacity, 1), dtype=object)
        self.n = 0

    def extend(self, values: np.ndarray) -> None:
        k = len(values)
        if self.n + k > len(self.buf):
            new = np.empty(max(self.n + k, 2 * len(self.buf)), dtype=object)
            new[: self.n] = self.buf[: self.n]
            self.buf = new
        self.buf[self.n:self.n + k] = values
        self.n += k

    def append(self, v: int) -> None:
        self.extend(np.array([v], dtype=object))

    def array(self) -> np.ndarray:
        return self.buf[: self.n]


class _ChunkedVec:
    """A2 off: grows by appending chunks, concatenated at the end."""

    def __init__(self, capacity: int = 0):
        self.chunks: list = []
        self.n = 0

    def extend(self, values: np.ndarray) -> None:
        self.chunks.append(values)
        self.n += len(values)

    def append(self, v: int) -> None:
        self.extend(np.array([v], dtype=object))

    def array(self) -> np.ndarray:
        if not self.chunks:
            return np.empty(0, dtype=object)
        return np.concatenate(self.chunks)


class LinearCombination:
    """Σ coeff · var for the scalar API. A1 on: parallel flat arrays; off: a tuple per term."""

    __slots__ = ("_flat", "_vars", "_coeffs", "_terms")

    def __init__(self, terms=(), flat: bool = True):
        self._flat = flat
        if flat:
            self._vars = array("q")
            self._coeffs: list = []
        else:
            self._terms: list = []
        for v, c in terms:
            self.add(v, c)

    def add(self, var: int, coeff: int = 1) -> "LinearCombination":
        if self._flat:
            self._vars.append(var)
            self._coeffs.append(coeff % R)
        else:
            self._terms.append((var, coeff % R))
        return self

    def terms(self):
        if self._flat:
            return zip(self._vars, self._coeffs)
        return iter(self._terms)

    def __len__(self) -> int:
        return len(self._vars) if self._flat else len(self._terms)


class ConstraintSystem:
    """Builds an R1CS and its witness. Scalar calls (alloc/enforce) for hand-written circuits,
    block calls (alloc_vec/enforce_vec) for vectorized generators."""

    def __init__(self, opts: OptSet | None = None, aux_hint: int = 0, constraint_hint: int = 0,
                 nnz_hint: int | tuple = 0):
        self.opts = opts if opts is not None else resolve()
        self.plan = plans.synthesis(self.opts)
        terms = _FlatTerms if self.plan.flat_terms else _ListTerms
        vec = _PresizedVec if self.plan.presized_vectors else _ChunkedVec
        hints = nnz_hint if isinstance(nnz_hint, (tuple, list)) else (nnz_hint,) * 3
        self._terms = [terms(h) for h in hints]
        self._inputs = vec(8)
        self._inputs.append(1)           # ONE
        self._aux = vec(aux_hint)
        self.num_constraints = 0
        self._names: list = []

    # variables
    def alloc_input(self, value: int) -> int:
        self._inputs.append(int(value) % R)
        return self._inputs.n - 1

    def alloc(self, value: int) -> int:
        self._aux.append(int(value) % R)
        return -self._aux.n

    def alloc_vec(self, values) -> np.ndarray:
        v = fr_array(values)
        start = self._aux.n
        self._aux.extend(v)
        return -(np.arange(start, start + len(v), dtype=np.int64) + 1)

    def lc(self, *terms) -> LinearCombination:
        return LinearCombination(terms, flat=self.plan.flat_terms)

    def value(self, var: int) -> int:
        if var >= 0:
            return int(self._inputs.array()[var])
        return int(self._aux.array()[-var - 1])

    # constraints
    def _annotate(self, label: str | None) -> None:
        if label and (not self._names or self._names[-1][1] != label):
            self._names.append((self.num_constraints, label))

    def enforce(self, a, b, c, label: str | None = None) -> None:
        """One constraint a · b = c; each side a LinearCombination or iterable of (var, coeff)."""
        self._annotate(label)
        row = self.num_constraints
        for store, lc in zip(self._terms, (a, b, c)):
            terms = lc.terms() if isinstance(lc, LinearCombination) else lc
            for var, coeff in terms:
                store.add_one(row, var, int(coeff) % R)
        self.num_constraints += 1

    def enforce_vec(self, a, b, c, k: int, label: str | None = None) -> None:
        """k constraints at once. Each side is a list of (vars, coeffs) terms where vars is an
        int64[k] array (or a single id, broadcast) and coeffs an Fr int or an array[k]."""
        self._annotate(label)
        rows = np.arange(self.num_constraints, self.num_constraints + k, dtype=np.int64)
        for store, side in zip(self._terms, (a, b, c)):
            for vars_, coeffs in side:
                v = np.broadcast_to(np.asarray(vars_, dtype=np.int64), (k,))
                if isinstance(coeffs, np.ndarray):
                    cf = fr_array(coeffs)
                else:
                    cf = np.empty(k, dtype=object)
                    cf.fill(int(coeffs) % R)
                store.add(rows, v, cf)
        self.num_constraints += k

    def finalize(self) -> tuple[R1CS, np.ndarray, np.ndarray]:
        """(R1CS, input values incl. ONE, aux values)."""
        ni = self._inputs.n
        mats = []
        for store in self._terms:
            rows, vars_, coeffs = store.arrays()
            cols = np.where(vars_ >= 0, vars_, ni - vars_ - 1)
            order = np.argsort(rows, kind="stable")
            indptr = np.zeros(self.num_constraints + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=self.num_constraints), out=indptr[1:])
            mats.append(CSR(indptr, cols[order].astype(np.int64), coeffs[order]))
        r1cs = R1CS(ni, self._aux.n, *mats, names=list(self._names))
        return r1cs, self._inputs.array().copy(), self._aux.array().copy()
