"""The CUDA backend: every proving phase on the GPU, with the proving key resident there.

synthesis     host witness generation, then a/b/c by SpMV on the GPU ('mixed')
prep_msm      0/1/other split of the witness on the GPU, merged over the batch
ntt_msm_h     H scalars by NTTs, then their G1 MSM
batch_addition  the 1-scalar bases summed through the MSM's bucket-sum kernels (M2: a circuit's G1 sums together)
tail_msm      G1 MSMs over the batch's shared tail bases (gathered once; M2: a circuit's three as one multi-MSM)
b_g2          G2 MSM over the tail (A4 moves it to the CPU, a thread pool across circuits)
proof_assembly  on the host (a handful of point operations with random r, s)
PhaseRecord.impl says where each phase ran.
"""
from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ..field import FR_LIMBS
from ..gpu import batch_add as gbatch
from ..gpu import fr as gfr
from ..gpu import h as gh
from ..gpu import msm as gmsm
from ..gpu import msm_many as gmany
from ..gpu import ntt as gntt
from ..gpu import spmv
from ..gpu.prep import prep_msm as gpu_prep
from ..gpu.srs import DeviceKey
from ..groth16 import Proof
from ..phases.proof_assembly import assemble
from ..phases.synthesis import Assignment
from ..phases.tail_msm import msm as cpu_msm
from ..poly import Domain
from ..timing import circuit
from .cpu import CpuBackend


class CudaTimerDevice:
    """PhaseTimer hook: CUDA events on the current stream, read once at the end."""

    def record_event(self):
        ev = cupy.cuda.Event()
        ev.record()
        return ev

    def elapsed_s(self, a, b) -> float:
        b.synchronize()
        return cupy.cuda.get_elapsed_time(a, b) / 1e3

    def peak_bytes(self) -> int:
        return int(cupy.get_default_memory_pool().total_bytes())


class CudaKey:
    """The key's bases on the GPU, uploaded once (or `dev`: already there, from GPU keygen);
    the few fixed points as arkworks points."""

    def __init__(self, pk, dev: DeviceKey | None = None):
        self.pk = pk
        self.domain = Domain(pk.log_n, pk.generator)
        self.dev = dev if dev is not None else DeviceKey(pk)
        self.vk = {k: pk.points[k].to_ark()[0] for k in ("alpha_g1", "beta_g1", "beta_g2", "delta_g1", "delta_g2")}
        self._b_g2_ark = None

    def b_g2_ark(self) -> list:
        if self._b_g2_ark is None:
            # a key made on the GPU has no host copy: download the section once
            pts = self.pk.points.get("b_g2") or self.dev.sections["b_g2"]
            self._b_g2_ark = pts.to_ark()
        return self._b_g2_ark


def _popcount(scalars, sample: int = 256) -> float:
    """Mean set bits of the (canonical) scalars, from a small random sample."""
    n = scalars.shape[0]
    idx = np.random.default_rng(n).integers(0, n, size=min(n, sample))
    vals = gfr.download(scalars[cupy.asarray(idx)])
    return float(np.mean([int(v).bit_count() for v in vals]))


def bucket_sum(opts, group: int) -> str:
    """M1 on: the G1 MSMs sum buckets by affine rounds (gmsm.DEFAULT_BUCKET_SUM); off: XYZZ."""
    return gmsm.DEFAULT_BUCKET_SUM[group] if opts.enabled("M1") else "xyzz"


def kernel_opts(opts) -> frozenset:
    """The MSM kernels' toggles (msm.KERNEL_OPTS) that opts turns on."""
    return frozenset(o for o in gmsm.KERNEL_OPTS if opts.enabled(o))


def msm_kw(opts, group: int) -> dict:
    """The MSM options the registry sets: bucket sums (M1, G1), the window reduction's levels (R1), the
    bucket sums' merges (R2) and the kernels' code (S1, L1)."""
    kw = {"pair_levels": opts.enabled("R1"), "pair_merges": opts.enabled("R2"), "kernel_opts": kernel_opts(opts)}
    if group == 1:
        kw["bucket_sum"] = bucket_sum(opts, 1)
    return kw


def ntt_variant(opts) -> str:
    """N1 on: register-radix NTT passes (r4; with N2, built on fastmul build 6; with N2 and N4, its DIF butterfly
    in two modular ops; and N8: full-domain twiddle tables; N11: DIF differences left < 2p into products; N12 off:
    32-bit exchanges, "w"; N17 off: swz4 bit by bit, "b"); after a "+", the run-time features N13 ("o": odd DIF
    passes' short group at the top) and N15 ("z": stage 0 lazy into the 4-step product; build 6 only); off: radix-2
    (r2).
    CUZK_NTT_VARIANT overrides them."""
    if gntt.VARIANT_ENV:
        return gntt.VARIANT_ENV
    if not opts.enabled("N1"):
        return "r2"
    odd = "o" if opts.enabled("N13") else ""
    if not opts.enabled("N2"):                              # N15 needs build 6's product
        return "r4" + ("+" + odd if odd else "")
    feats = odd + ("z" if opts.enabled("N15") else "")
    feats = "+" + feats if feats else ""
    w = "" if opts.enabled("N12") else "w"
    w = w or ("" if opts.enabled("N17") else "b")          # N17 acts on the 16-byte exchanges (N12) only
    if not opts.enabled("N4"):
        return "r4b6" + w + feats
    return "r4b6d" + ("t" if opts.enabled("N8") else "") + ("s" if opts.enabled("N11") else "") + w + feats


def h_options(opts) -> dict:
    """h_scalars' keyword arguments under these options (N1, N2, N4, F1, N3, H2, N5)."""
    return {"variant": ntt_variant(opts), "fused_tail": opts.enabled("F1"), "pointwise_b6": opts.enabled("N3"),
            "skip_c": opts.enabled("H2"), "tiled_bitrev": opts.enabled("N5")}


def _window(kh, scalars, opts, group: int = 1, parts: int = 1) -> int:
    """D4 off: one window size for every MSM (the one for the largest, H); on: chosen per MSM
    from its size, its scalars' popcount and the group's bucket sums (affine or XYZZ); parts > 1:
    for a multi-MSM (M2) of that many MSMs over these scalars."""
    from ..gpu.msm_plan import choose_window
    if not opts.enabled("D4"):
        return choose_window(len(kh.dev["h"]), affine=bucket_sum(opts, 1) == "affine")
    return choose_window(scalars.shape[0], _popcount(scalars), affine=bucket_sum(opts, group) == "affine",
                         parts=parts)


def _msm(group: int, bases, inf, scalars, kh, opts):
    """An MSM that may be empty (a sparse section can keep none of the tail)."""
    if inf.size == 0:
        return (G2Point if group == 2 else G1Point).identity()
    if group == 2:
        return gmsm.msm_g2(bases, inf, scalars, _window(kh, scalars, opts, 2), **msm_kw(opts, 2))
    return gmsm.msm_g1(bases, inf, scalars, _window(kh, scalars, opts, 1), **msm_kw(opts, 1))


class Concurrent:
    """P1: independent jobs (each queues GPU work and returns host results) on their own non-blocking
    CUDA streams, one thread each, ordered after the work already queued on the caller's stream."""

    def __init__(self, width: int = 4):
        self.width = width
        self.streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(width)]
        self.pool = ThreadPoolExecutor(width, thread_name_prefix="cuzk-p1")

    def run(self, jobs: list) -> list:
        """jobs: callables; returns their results in order."""
        ready = cupy.cuda.Event()
        ready.record()                          # the inputs, queued on the caller's stream

        def one(i, fn):
            s = self.streams[i % self.width]
            s.wait_event(ready)
            with s:
                out = fn()
                s.synchronize()
            return out

        futs = [self.pool.submit(contextvars.copy_context().run, one, i, fn) for i, fn in enumerate(jobs)]
        return [f.result() for f in futs]


class CudaBackend(CpuBackend):
    name = "cuda"
    IMPL = {"synthesis": "mixed", "proof_assembly": "cpu"}
    _concurrent: Concurrent | None = None

    def _jobs(self, jobs: list) -> list:
        """Run jobs one after another, or concurrently under P1."""
        if not self.opts.enabled("P1") or len(jobs) < 2:
            return [fn() for fn in jobs]
        if self._concurrent is None:
            self._concurrent = Concurrent()
        return self._concurrent.run(jobs)

    def phase_impl(self, phase: str) -> str:
        if phase == "b_g2" and self.opts.enabled("A4"):
            return "cpu"
        return self.IMPL.get(phase, "cuda")

    def timer_device(self):
        return CudaTimerDevice()

    def synchronize(self) -> None:
        cupy.cuda.Device().synchronize()

    witness_limbs = True      # assign takes z_limbs: the host conversion made ahead (bench --pipeline workers)

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None, z_packed=None):
        """`z_limbs`: z as canonical limbs (field.ints_to_limbs of fr_array), converted elsewhere;
        `z_packed`: aux as a witness_pack.PackedWitness (then `aux` may be None), expanded on the GPU."""
        n_aux = z_packed.n if z_packed is not None else len(aux)
        if len(inputs) != r1cs.num_inputs or n_aux != r1cs.num_aux:
            raise ValueError(f"witness sizes ({len(inputs)} inputs, {n_aux} aux) do not match the "
                             f"circuit ({r1cs.num_inputs}, {r1cs.num_aux})")
        pinned = self.opts.enabled("B1")
        if z_packed is not None:
            z = gfr.upload_packed(inputs, z_packed)
            abc = spmv.evaluate(spmv.DeviceR1CS.of(r1cs), z, domain.n)
            return Assignment(inputs, None, None, None, None, abc_dev=abc, z_dev=z, aux_packed=z_packed)
        if z_limbs is not None:
            if z_limbs.shape != (len(inputs) + len(aux), FR_LIMBS):
                raise ValueError(f"z_limbs has shape {z_limbs.shape}, expected ({len(inputs) + len(aux)}, {FR_LIMBS})")
            z = gfr.upload_limbs(z_limbs, pinned=pinned)
        elif aux.dtype == np.uint32 and aux.ndim == 2:          # canonical limbs: no ints on the way
            z = gfr.upload_split(inputs, aux)
        else:
            z = gfr.upload(np.concatenate([inputs, aux]), pinned=pinned)
        abc = spmv.evaluate(spmv.DeviceR1CS.of(r1cs), z, domain.n)
        return Assignment(inputs, aux, None, None, None, abc_dev=abc, z_dev=z)

    def assign_zkey(self, zk, values):
        """On the GPU: z uploaded once, A·z and B·z by the SpMV kernel, c = a∘b (gpu/zkey.py)."""
        from ..gpu import zkey as gzkey
        return gzkey.assign(zk, values)

    def load_key(self, pk) -> CudaKey:
        return CudaKey(pk)

    @staticmethod
    def _z(asg: Assignment):
        if asg.z_dev is None:
            asg.z_dev = gfr.upload(asg.z)
        return asg.z_dev

    def _abc(self, asg: Assignment, n: int):
        if asg.abc_dev is not None:
            if asg.abc_spendable and self.opts.enabled("F2"):
                abc, asg.abc_dev = asg.abc_dev, None     # F2: consumed in place, no copy
                return abc
            return asg.abc_dev.copy()            # the H pipeline works in place
        return gfr.upload(np.concatenate([asg.a, asg.b, asg.c])).reshape(3, n, FR_LIMBS)

    def prep_msm(self, kh: CudaKey, assignments):
        zs = cupy.stack([self._z(a) for a in assignments])
        return gpu_prep(zs, kh.pk.num_inputs)

    def ntt_msm_h(self, kh: CudaKey, assignments) -> list:
        hb = kh.dev["h"]
        out = []
        for i, asg in enumerate(assignments):
            with circuit(i, label="h scalars"):          # sub-steps: device time of each in the bench report
                h = gh.h_scalars(self._abc(asg, kh.domain.n), kh.domain, kh.pk.convention, **h_options(self.opts))
                h = cupy.ascontiguousarray(h)
            with circuit(i, label="h msm"):
                out.append(gmsm.msm_g1(hb.limbs, hb.inf, h, _window(kh, h, self.opts), **msm_kw(self.opts, 1)))
        return out

    def batch_addition(self, kh: CudaKey, prep) -> list:
        if self.opts.enabled("M2") and self.opts.enabled("C1"):
            return self._batch_many(kh, prep)
        one = gfr.upload([1])
        out = []
        for i, ones in enumerate(prep.ones):
            work = (("a", ones), ("b_g1", ones), ("b_g2", ones), ("l", prep.aux_part(ones)))

            def job(i, q, idx):
                def fn():
                    with circuit(i, label=q):
                        return self._sum_ones(kh.dev[q], idx, one)
                return fn
            out.append(dict(zip([q for q, _ in work], self._jobs([job(i, q, idx) for q, idx in work]))))
        return out

    def _batch_many(self, kh: CudaKey, prep) -> list:
        """M2 (with C1): a circuit's three G1 batch sums in one gbatch.batch_add_many; the G2 sum alone."""
        out = []
        for i, ones in enumerate(prep.ones):
            g1 = (("a", ones), ("b_g1", ones), ("l", prep.aux_part(ones)))

            def sums(i=i, g1=g1):
                with circuit(i, label="a+b_g1+l"):
                    parts = [(kh.dev[q].limbs, kh.dev[q].inf, self._rows(kh.dev[q], idx)) for q, idx in g1]
                    pts = gbatch.batch_add_many(1, parts, bucket_sum(self.opts, 1), self.opts.enabled("R2"),
                                                kernel_opts(self.opts))
                return dict(zip([q for q, _ in g1], pts))

            def g2(i=i, ones=ones):
                with circuit(i, label="b_g2"):
                    return {"b_g2": self._sum_ones(kh.dev["b_g2"], ones, None)}
            got = {}
            for d in self._jobs([sums, g2]):
                got.update(d)
            out.append({q: got[q] for q in ("a", "b_g1", "b_g2", "l")})
        return out

    @staticmethod
    def _rows(b, idx):
        """The rows of section b that hold the variables idx (a sparse section keeps some of them)."""
        if b.rows is None:
            return idx
        rows = b.rows[idx]
        return rows[rows >= 0]

    def _sum_ones(self, b, idx, one):
        """Σ of section b's points over the variables idx (their scalars are 1)."""
        if self.opts.enabled("C1"):
            return gbatch.batch_add(b.group, b.limbs, b.inf, self._rows(b, idx),
                                    bucket_sum=bucket_sum(self.opts, b.group), pair_merges=self.opts.enabled("R2"),
                                    kernel_opts=kernel_opts(self.opts))
        bases, inf, _ = b.take(idx)
        if inf.size == 0:
            return (G2Point if b.group == 2 else G1Point).identity()
        scal = cupy.broadcast_to(one, (inf.size, FR_LIMBS)).copy()
        if b.group == 2:
            return gmsm.msm_g2(bases, inf, scal, **msm_kw(self.opts, 2))
        return gmsm.msm_g1(bases, inf, scal, **msm_kw(self.opts, 1))

    def tail_msm(self, kh: CudaKey, prep, assignments) -> list:
        if self.opts.enabled("M2"):
            return self._tail_many(kh, prep, assignments)
        t, tl = prep.tail, prep.aux_part(prep.tail)
        gathered = {q: kh.dev[q].take(t) for q in ("a", "b_g1")}
        gathered["l"] = kh.dev["l"].take(tl)
        ni = kh.pk.num_inputs
        out = []
        for i, asg in enumerate(assignments):
            with circuit(i):
                z = self._z(asg)
                zt = z[t]
                zl = z[tl + ni]
                work = []
                for q, s in (("a", zt), ("b_g1", zt), ("l", zl)):
                    bases, inf, keep = gathered[q]
                    s = cupy.ascontiguousarray(s if keep is None else s[keep])
                    work.append((q, bases, inf, s))
                jobs = [lambda b=b, f=f, s=s: _msm(1, b, f, s, kh, self.opts) for _, b, f, s in work]
                out.append(dict(zip([q for q, *_ in work], self._jobs(jobs))))
        return out

    def _tail_many(self, kh: CudaKey, prep, assignments) -> list:
        """M2: a circuit's three G1 tail MSMs as one multi-MSM. The bases of the three are gathered into
        one array once for the batch, and each circuit's scalars by one gather of z."""
        t, tl = prep.tail, prep.aux_part(prep.tail)
        ni = kh.pk.num_inputs
        qs = ("a", "b_g1", "l")
        bases, inf, zidx = [], [], []
        for q, v, shift in (("a", t, 0), ("b_g1", t, 0), ("l", tl, ni)):
            b, f, keep = kh.dev[q].take(v)
            bases.append(b)
            inf.append(f)
            zidx.append((v if keep is None else v[keep]) + shift)   # z's index of each gathered base
        sizes = [len(f) for f in inf]
        bases, inf, zidx = cupy.concatenate(bases), cupy.concatenate(inf), cupy.concatenate(zidx)
        out = []
        for i, asg in enumerate(assignments):
            with circuit(i):
                s = cupy.ascontiguousarray(self._z(asg)[zidx])
                c = _window(kh, s, self.opts, 1, sum(1 for m in sizes if m)) if s.shape[0] else None
                pts = gmany.msm_g1_concat(bases, inf, s, sizes, c, **msm_kw(self.opts, 1))
                out.append(dict(zip(qs, pts)))
        return out

    def b_g2(self, kh: CudaKey, prep, assignments) -> list:
        if self.opts.enabled("A4"):
            idx = cupy.asnumpy(prep.tail)
            arr = np.empty(len(kh.b_g2_ark()), dtype=object)
            arr[:] = kh.b_g2_ark()
            bases = arr[idx].tolist()
            def one(i, a):
                with circuit(i):          # host sub-records: the threads overlap on the timeline
                    return cpu_msm(bases, a.z[idx], G2Point)
            with ThreadPoolExecutor(max(1, len(assignments))) as ex:
                futs = [ex.submit(contextvars.copy_context().run, one, i, a) for i, a in enumerate(assignments)]
                return [f.result() for f in futs]
        bases, inf, keep = kh.dev["b_g2"].take(prep.tail)
        out = []
        for i, a in enumerate(assignments):
            with circuit(i):
                s = self._z(a)[prep.tail]
                s = cupy.ascontiguousarray(s if keep is None else s[keep])
                out.append(_msm(2, bases, inf, s, kh, self.opts))
        return out

    def proof_assembly(self, kh: CudaKey, parts: list, randomness: list) -> list:
        out = []
        for i, (p, (r, s)) in enumerate(zip(parts, randomness)):
            with circuit(i):
                out.append(Proof(*assemble(kh.vk, p, r, s)))
        return out
