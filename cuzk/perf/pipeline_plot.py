"""The timeline of `cuzk bench --pipeline --timeline`: one host lane per synthesis worker, a lane of
circuits waiting for a prover, then for each GPU its prover thread and its device (CUDA events) per phase;
colour = circuit. With --compare, the sequential run below on the same time scale."""
from __future__ import annotations

from .plots import _plt, _writer


def _rows(bars: list[dict]) -> int:
    """Give overlapping bars of one lane separate rows (first free row); the number of rows."""
    free_at: list[float] = []
    for b in sorted(bars, key=lambda b: b["start_s"]):
        row = next((k for k, t in enumerate(free_at) if t <= b["start_s"]), len(free_at))
        if row == len(free_at):
            free_at.append(0.0)
        free_at[row] = b["stop_s"]
        b["row"] = row
    return max(1, len(free_at))


def pipeline_lanes(run: dict) -> dict:
    """Lanes and bars of one run (a `pipeline` summary): bar = lane, row, rows, start_s, stop_s,
    circuit, kind (synth | waiting | prove | device), label."""
    per = run["per_circuit"]
    workers = sorted({c["worker"] for c in per if c["worker"] is not None})
    lanes = [f"worker {w} (host)" for w in workers] or ["synthesis (host)"]
    bars = []
    for c in per:
        lane = workers.index(c["worker"]) if c["worker"] is not None else 0
        bars.append({"lane": lane, "start_s": c["synth_start_s"], "stop_s": c["synth_stop_s"],
                     "circuit": c["circuit"], "kind": "synth", "label": None})
    wait_lane = len(lanes)
    lanes.append("waiting for prover")
    wait = [{"lane": wait_lane, "start_s": c["synth_stop_s"], "stop_s": c["prove_start_s"],
             "circuit": c["circuit"], "kind": "waiting", "label": None} for c in per]
    bars += wait
    provers = run.get("devices") or [{"lane": 0, "device": None}]
    many = len(provers) > 1
    for d in provers:           # one prover lane and one GPU lane per device (as today with one)
        name = f"device {d['device']}" if d.get("device") is not None else f"lane {d['lane']}"
        mine = [c for c in per if c.get("lane", 0) == d["lane"]]
        lanes.append(f"prover {name} (host)" if many else "prover (host)")
        bars += [{"lane": len(lanes) - 1, "start_s": c["prove_start_s"], "stop_s": c["prove_stop_s"],
                  "circuit": c["circuit"], "kind": "prove", "label": None} for c in mine]
        dev = [{"lane": len(lanes), "start_s": s["start_s"], "stop_s": s["stop_s"], "circuit": c["circuit"],
                "kind": "device", "label": s["phase"]} for c in mine for s in c.get("device_spans", [])]
        if dev:
            lanes.append(f"GPU {name} (CUDA events)" if many else "GPU (CUDA events)")
            bars += dev
    rows = {b_lane: 1 for b_lane in range(len(lanes))}
    rows[wait_lane] = _rows(wait)
    for b in bars:
        b.setdefault("row", 0)
        b["rows"] = rows[b["lane"]]
    return {"lanes": lanes, "bars": bars}


def _title(name: str, s: dict) -> str:
    t = f"{name}: wall {s['wall_s']:.3f} s, {s['proofs_per_s']:.3f} proofs/s, overlap {s['overlap_s']:.3f} s"
    if s.get("lanes", 1) > 1 and s.get("gpu_busy_fraction") is not None:
        t += ", GPU busy " + ", ".join(f"{d['device']}: {d['gpu_busy_fraction']:.0%}" for d in s["devices"]
                                       if d["gpu_busy_fraction"] is not None)
    elif s.get("gpu_idle_s") is not None:
        t += f", GPU busy {s['gpu_busy_s']:.3f} s / idle {s['gpu_idle_s']:.3f} s"
    else:
        t += f", prover busy {s['prover_busy_s']:.3f} s / idle {s['prover_idle_s']:.3f} s"
    if s.get("workers"):
        t += f" ({s['workers']} {s['pool']} worker(s), depth {s['depth']})"
    return t


def pipeline_png(report: dict):
    plt = _plt()
    p = report["pipeline"]
    runs = [("pipelined", p)] + ([("sequential", p["sequential"])] if p.get("sequential") else [])
    laid = [pipeline_lanes(r) for _, r in runs]
    heights = [max(3, len(t["lanes"])) for t in laid]
    fig, axes = plt.subplots(len(runs), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights},
                             figsize=(12, 0.5 * sum(heights) + 1.2 * len(runs)))
    cmap = plt.get_cmap("tab10")
    for ax, (name, run), tl in zip(axes[:, 0], runs, laid):
        lanes = tl["lanes"]
        for b in tl["bars"]:
            h = 0.8 / b["rows"]
            y = len(lanes) - 1 - b["lane"] - 0.4 + h * (b["row"] + 0.5)
            kw = {"color": cmap(b["circuit"] % 10), "edgecolor": "none"}
            if b["kind"] == "waiting":
                kw.update(alpha=0.35, hatch="//")
            elif b["kind"] == "device":
                kw.update(edgecolor="white", linewidth=0.4)
            ax.barh(y, (b["stop_s"] - b["start_s"]) * 1e3, left=b["start_s"] * 1e3, height=h * 0.9, **kw)
            if b["kind"] in ("synth", "prove"):
                ax.text((b["start_s"] + b["stop_s"]) / 2 * 1e3, y, str(b["circuit"]), ha="center", va="center",
                        fontsize=6, color="white")
        ax.set_yticks(range(len(lanes)))
        ax.set_yticklabels(list(reversed(lanes)), fontsize=8)
        ax.set_title(_title(name, run), fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("ms since the run started (GPU bars placed from the first CUDA event); "
                           "colour and number = circuit")
    c = report.get("circuit", {})
    fig.suptitle(f"cuzk bench --pipeline: {c.get('name')} domain {c.get('domain')} x{c.get('circuits')}, "
                 f"backend {report.get('backend')}", fontsize=9)
    fig.tight_layout()
    return _writer(fig, plt)
