"""porep_partition: a circuit shaped like one 32 GiB PoRep partition, built at full size (2^27).

Only its shape is PoRep's: it is NOT a sound PoRep (no SHA-256, no labels, no Merkle paths). It
matches the statistics in docs/architecture.md (Targets): the real partition's fill of the domain (130,278,869
constraints at 2^27), aux about equal to constraints, ~99.7% of aux in some A combination, ~25%
in some B combination, ~99% of aux values bits, the rest words and full-width field elements.

Units over W-bit words (W = 32 from 2^9 up), blocks over all units at once:
  m0, m1      2W message bits with booleanity b·(1 - b) = 0                  (in A and B)
  d_1 .. d_9  bit operations, XOR for odd j, AND for even j, on d_{j-1} (d_0 = m0) and m
              (m1 for odd j, m0 for even): (2a)·m = a + m - d_j, a·m = d_j.
              Each d_j is in C when made and in A when used, never in B (as SHA's XOR/ch/maj bits).
  s, carry    d_9 + m0 = s + 2^W carry in one row (Σ2^i d9_i + Σ2^i m0_i)·1 = Σ2^i s_i + 2^W carry,
              W + 1 bits with booleanity
  w           pack (Σ2^i s_i)·1 = w
  f, f2, f4   (w + seed)·(w + seed) = f, f·f = f2, f2·f2 = f4: f4 is the one aux outside A
Public inputs: seed, and out = f4 of unit 0 (f4_0 · 1 = out).
Per unit: 12W + 6 constraints and 12W + 5 aux, of which 3W + 4 in B and 12W + 1 bits.

Two writers of the same circuit: FastSink (numpy: compact int32/uint16 CSR, and the witness
straight into canonical uint32 limbs, no Python int per value) and CsSink (the generic
ConstraintSystem, object arrays: the reference the tests compare with, small sizes only).
`witness_limbs` writes the same witness without the circuit (the constraint system does not depend on
the seed), for provers that already hold it.
"""
from __future__ import annotations

import numpy as np

from ..field import FR_LIMBS, R, ints_to_limbs
from ..r1cs import CSR, ONE, R1CS, ConstraintSystem
from ..witness_pack import PackedWitness, worth_packing

FILL = 130_278_869 / 2**27          # the real partition's constraints over its domain
OPS = 9                             # d_1 .. d_9
NUM_INPUTS = 3                      # ONE, seed, out


def shape(log_size: int) -> tuple[int, int]:
    """(units U, word width W) filling the PoRep fraction of a 2^log_size domain."""
    target = int((1 << log_size) * FILL)
    for W in (32, 16, 8, 4, 2, 1):
        U = (target - 1) // (12 * W + 6)
        rows = U * (12 * W + 6) + 1 + NUM_INPUTS
        if U >= 1 and (1 << (log_size - 1)) < rows <= 1 << log_size:
            return U, W
    raise ValueError(f"porep_partition needs --log-size >= 5, got {log_size}")


def counts(log_size: int) -> dict:
    U, W = shape(log_size)
    return {"units": U, "width": W, "constraints": U * (12 * W + 6) + 1, "aux": U * (12 * W + 5),
            "inputs": NUM_INPUTS}


# --- the witness (numpy: bits as uint8, words as uint64, the few field values as ints) ---

def _bits(words: np.ndarray, W: int) -> np.ndarray:
    return ((words[:, None] >> np.arange(W, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)


def witness(U: int, W: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    mask = np.uint64((1 << W) - 1)
    m0, m1 = (rng.integers(0, 1 << W, size=U, dtype=np.uint64) for _ in range(2))
    seed_val = int(rng.integers(1, 1 << 62))
    d, prev = [], m0
    for j in range(1, OPS + 1):
        m = m1 if j % 2 else m0
        prev = (prev ^ m) if j % 2 else (prev & m)
        d.append(prev)
    total = d[-1] + m0
    s, carry = total & mask, (total >> np.uint64(W)).astype(np.uint8)
    f = (s.astype(object) + seed_val) ** 2 % R
    f2 = f * f % R
    f4 = f2 * f2 % R
    return {"seed": seed_val, "out": int(f4[0]), "m0": m0, "m1": m1, "d": d, "s": s, "carry": carry,
            "w": s, "f": f, "f2": f2, "f4": f4}


# --- the circuit, written to a sink ---

def _circuit(sink, U: int, W: int, wv: dict) -> None:
    seed = sink.input(wv["seed"])
    out = sink.input(wv["out"])
    m0 = sink.alloc(_bits(wv["m0"], W))
    m1 = sink.alloc(_bits(wv["m1"], W))
    d = [sink.alloc(_bits(x, W)) for x in wv["d"]]
    s = sink.alloc(_bits(wv["s"], W))
    carry = sink.alloc(wv["carry"])
    w = sink.alloc(wv["w"])
    f, f2, f4 = (sink.alloc(wv[k]) for k in ("f", "f2", "f4"))
    pw = [1 << i for i in range(W)]
    k = U * W

    def boolean(x, label):
        x = x.reshape(-1)
        sink.enforce(len(x), [(x, [1])], [(ONE, [1]), (x, [R - 1])], [], label)

    boolean(m0, "partition.bool.m0")
    boolean(m1, "partition.bool.m1")
    a = m0
    for j in range(1, OPS + 1):
        m = (m1 if j % 2 else m0).reshape(-1)
        a, dj = a.reshape(-1), d[j - 1].reshape(-1)
        if j % 2:
            sink.enforce(k, [(a, [2])], [(m, [1])], [(a, [1]), (m, [1]), (dj, [R - 1])], f"partition.xor{j}")
        else:
            sink.enforce(k, [(a, [1])], [(m, [1])], [(dj, [1])], f"partition.and{j}")
        a = d[j - 1]
    sink.enforce(U, [(d[-1], pw), (m0, pw)], [(ONE, [1])], [(s, pw), (carry, [1 << W])], "partition.add")
    boolean(s, "partition.bool.s")
    boolean(carry, "partition.bool.carry")
    sink.enforce(U, [(s, pw)], [(ONE, [1])], [(w, [1])], "partition.pack")
    sink.enforce(U, [(w, [1]), (seed, [1])], [(w, [1]), (seed, [1])], [(f, [1])], "partition.f")
    sink.enforce(U, [(f, [1])], [(f, [1])], [(f2, [1])], "partition.f2")
    sink.enforce(U, [(f2, [1])], [(f2, [1])], [(f4, [1])], "partition.f4")
    sink.enforce(1, [(f4[:1], [1])], [(ONE, [1])], [(out, [1])], "partition.out")


def _side(k: int, side) -> list:
    """[(cols int64[k, t], coeffs[t])] for one side: a scalar column broadcasts over the k rows."""
    out = []
    for cols, coeffs in side:
        c = np.asarray(cols, dtype=np.int64)
        c = np.broadcast_to(c, (k, 1)) if c.ndim == 0 else c.reshape(k, -1)
        if c.shape[1] != len(coeffs):
            raise ValueError(f"{c.shape[1]} columns but {len(coeffs)} coefficients")
        out.append((c, [int(x) % R for x in coeffs]))
    return out


class FastSink:
    """Compact CSR (int32 cols, uint16 coefficient index) and canonical witness limbs, by numpy."""

    def __init__(self, num_aux: int):
        self.inputs = [1]
        self.aux = np.zeros((num_aux, FR_LIMBS), dtype=np.uint32)
        self.n_aux = 0
        self.table: dict[int, int] = {}
        self.blocks = ([], [], [])          # per matrix: (rows k, cols int32[k, t], index uint16[t])
        self.rows = 0
        self.names: list = []

    def input(self, value: int) -> int:
        if self.n_aux:
            raise RuntimeError("inputs come before aux")
        self.inputs.append(int(value) % R)
        return len(self.inputs) - 1

    def alloc(self, values: np.ndarray) -> np.ndarray:
        k = values.size
        dst = self.aux[self.n_aux:self.n_aux + k]
        flat = values.reshape(-1)
        if flat.dtype == object:
            dst[:] = ints_to_limbs(flat % R, FR_LIMBS)
        else:
            x = flat.astype(np.uint64)
            dst[:, 0] = (x & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            dst[:, 1] = (x >> np.uint64(32)).astype(np.uint32)
        cols = NUM_INPUTS + self.n_aux + np.arange(k, dtype=np.int64)
        self.n_aux += k
        return cols.reshape(values.shape)

    def _index(self, coeff: int) -> int:
        i = self.table.setdefault(coeff, len(self.table))
        if i >= 1 << 16:
            raise ValueError("more than 2^16 distinct coefficients")
        return i

    def enforce(self, k: int, a, b, c, label: str) -> None:
        self.names.append((self.rows, label))
        for blocks, side in zip(self.blocks, (a, b, c)):
            terms = _side(k, side)
            cols = (np.concatenate([t[0] for t in terms], axis=1) if terms else np.empty((k, 0), np.int64))
            idx = np.array([self._index(x) for t in terms for x in t[1]], dtype=CSR.INDEX_DTYPE)
            blocks.append((k, cols.astype(np.int32), idx))
        self.rows += k

    def finalize(self):
        if self.n_aux != len(self.aux):
            raise AssertionError(f"allocated {self.n_aux} aux of {len(self.aux)}")
        table = np.empty(len(self.table), dtype=object)
        table[list(self.table.values())] = list(self.table.keys())
        mats = []
        for blocks in self.blocks:
            per_row = np.repeat(np.array([c.shape[1] for _, c, _ in blocks], dtype=np.int64),
                                [k for k, _, _ in blocks])
            indptr = np.zeros(self.rows + 1, dtype=np.int64)
            np.cumsum(per_row, out=indptr[1:])
            del per_row
            cols = np.concatenate([c.reshape(-1) for _, c, _ in blocks])
            index = np.concatenate([np.tile(i, k) for k, _, i in blocks])
            blocks.clear()
            mats.append(CSR(indptr, cols, table=table, index=index))
        r1cs = R1CS(len(self.inputs), self.n_aux, *mats, names=self.names)
        return r1cs, np.array(self.inputs, dtype=object), self.aux


class CsSink:
    """The same circuit through the generic ConstraintSystem (object arrays): the reference."""

    def __init__(self, opts=None):
        self.cs = ConstraintSystem(opts)
        self.n_aux = 0

    def input(self, value: int) -> int:
        return self.cs.alloc_input(value)

    def alloc(self, values: np.ndarray) -> np.ndarray:
        ids = self.cs.alloc_vec(values.reshape(-1).astype(object))
        self.n_aux += len(ids)
        return (NUM_INPUTS - ids - 1).reshape(values.shape)       # global columns

    @staticmethod
    def _ids(cols: np.ndarray) -> np.ndarray:
        return np.where(cols < NUM_INPUTS, cols, -(cols - NUM_INPUTS + 1))

    def enforce(self, k: int, a, b, c, label: str) -> None:
        sides = [[(self._ids(cols[:, j]), cf[j]) for cols, cf in _side(k, side) for j in range(len(cf))]
                 for side in (a, b, c)]
        self.cs.enforce_vec(*sides, k, label=label)

    def finalize(self):
        return self.cs.finalize()


BIT_CHUNK = 1 << 20          # bit values written per step (bounds the temporaries at ~8 MiB)


def _write_bits(dst: np.ndarray, words: np.ndarray, W: int) -> None:
    """dst (uint32[U * W], a strided view of limb word 0) = the W bits of each word, LSB first:
    the order of _bits(words, W).reshape(-1), in chunks of units (no U x W temporary)."""
    step = max(1, BIT_CHUNK // W)
    wb = np.ascontiguousarray(words, dtype="<u8")
    for u0 in range(0, len(wb), step):
        chunk = wb[u0:u0 + step]
        bits = np.unpackbits(chunk.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")[:, :W]
        dst[u0 * W:(u0 + len(chunk)) * W] = bits.reshape(-1)


def _aux_blocks(log_size: int, seed: int):
    """(inputs, n, blocks): the witness as `_circuit` allocates it, block by block, for the writers below. Each block
    is (offset, kind, values): "bits" words whose W bits are W entries each (LSB first), "word" entries below 2^32
    (carry, w), "field" entries as ints below R (f, f2, f4)."""
    U, W = shape(log_size)
    wv = witness(U, W, seed)
    blocks, off = [], 0
    for words in (wv["m0"], wv["m1"], *wv["d"], wv["s"]):
        blocks.append((off, "bits", words))
        off += U * W
    for key, kind in (("carry", "word"), ("w", "word"), ("f", "field"), ("f2", "field"), ("f4", "field")):
        blocks.append((off, kind, wv[key] % R if kind == "field" else wv[key]))
        off += U
    n = counts(log_size)["aux"]
    if off != n:
        raise AssertionError(f"laid out {off} aux of {n}")
    inputs = np.array([1, wv["seed"] % R, wv["out"] % R], dtype=object)
    return inputs, n, W, blocks


def witness_limbs(log_size: int, opts=None, seed: int = 1, alloc=None):
    """(inputs, aux limbs): exactly build(log_size, seed=seed)[1:], without any matrix.

    aux is uint32[num_aux, 8], canonical, allocated by `alloc(shape, dtype)`, which must return a
    zero-filled array (default np.zeros; e.g. a fresh shared-memory block). Bits and words go straight
    into limb word 0; only the 3U field values (f, f2, f4) pass through Python ints."""
    inputs, n, W, blocks = _aux_blocks(log_size, seed)
    aux = (alloc or np.zeros)((n, FR_LIMBS), np.dtype(np.uint32))
    if aux.shape != (n, FR_LIMBS) or aux.dtype != np.uint32:
        raise ValueError(f"alloc gave {aux.shape} {aux.dtype}, expected ({n}, {FR_LIMBS}) uint32")
    lo = aux[:, 0]
    for off, kind, v in blocks:
        if kind == "bits":
            _write_bits(lo[off:off + len(v) * W], v, W)
        elif kind == "word":
            lo[off:off + len(v)] = v                          # below 2^32: word 1 stays 0
        else:
            aux[off:off + len(v)] = ints_to_limbs(v, FR_LIMBS)
    return inputs, aux


def witness_packed(log_size: int, opts=None, seed: int = 1):
    """(inputs, PackedWitness or None): exactly pack(witness_limbs(...)[1]), made from the words without the
    limbs (at 2^27: ~16 MB of packed bits and the 3U + few entries that are not bits, where the limbs are 4 GiB
    written then read). None where pack would give None (worth_packing)."""
    inputs, n, W, blocks = _aux_blocks(log_size, seed)
    bit = np.zeros(n, dtype=np.uint8)                 # one byte an entry (~130 MB at 2^27), packed below
    idx, vals = [], []                                # the entries that are not 0 or 1, and their canonical limbs
    for off, kind, v in blocks:
        if kind == "bits":
            _write_bits(bit[off:off + len(v) * W], v, W)
            continue
        small = (v == 0) | (v == 1)
        bit[off:off + len(v)] = np.where(small, v, 0).astype(np.uint8)
        i = np.flatnonzero(~small)
        idx.append(off + i)
        if kind == "word":                            # below 2^32: limb word 0 alone
            limbs = np.zeros((len(i), FR_LIMBS), dtype=np.uint32)
            limbs[:, 0] = v[i]
            vals.append(limbs)
        else:
            vals.append(ints_to_limbs(v[i], FR_LIMBS))
    idx = np.concatenate(idx).astype(np.int64)
    if not worth_packing(n, len(idx)):
        return inputs, None
    return inputs, PackedWitness(n, np.packbits(bit), idx, np.ascontiguousarray(np.concatenate(vals), dtype=np.uint32))


def build(log_size: int, opts=None, seed: int = 1, reference: bool = False):
    """(R1CS, inputs, aux). aux: canonical limbs uint32[num_aux, 8] (FastSink), or with
    `reference` Fr ints from the generic ConstraintSystem (small sizes)."""
    U, W = shape(log_size)
    sink = CsSink(opts) if reference else FastSink(counts(log_size)["aux"])
    _circuit(sink, U, W, witness(U, W, seed))
    return sink.finalize()


def densities(r1cs: R1CS) -> dict:
    """The partition statistics: fraction of aux in some A / B combination, nonzeros per row."""
    ni, na = r1cs.num_inputs, r1cs.num_aux

    def dense(m):
        seen = np.zeros(r1cs.num_vars, dtype=bool)
        seen[m.cols] = True
        return float(seen[ni:].sum()) / na

    rows = r1cs.num_constraints
    return {"constraints": rows, "aux": na, "a_aux": dense(r1cs.A), "b_aux": dense(r1cs.B),
            "nnz_per_row": {k: m.nnz / rows for k, m in zip("ABC", (r1cs.A, r1cs.B, r1cs.C))}}


def bit_fraction(aux: np.ndarray) -> float:
    """Fraction of aux values in {0, 1} (limbs or ints)."""
    if aux.dtype == object:
        return float(((aux == 0) | (aux == 1)).mean())
    return float(((aux[:, 0] <= 1) & ~aux[:, 1:].any(axis=1)).mean())
