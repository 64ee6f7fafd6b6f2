"""PNG charts (matplotlib, Agg): the per-run timeline of `cuzk bench --timeline` and the
phase bars of `cuzk ablate --png`. Each function returns a writer for cli.write_all."""
from __future__ import annotations

from ..timing import PHASES


def _plt():
    try:
        import matplotlib
    except ImportError as e:
        raise RuntimeError("PNG charts need matplotlib (pip install 'cuzk[perf]')") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _writer(fig, plt):
    def write(f):
        fig.savefig(f, format="png", dpi=110)
        plt.close(fig)
    return write


def timeline_lanes(phases: dict) -> list[dict]:
    """The bars of a timeline: one lane per phase and clock (host; device where CUDA events were
    recorded); inside a lane, one row per circuit where the phase has per-circuit sub-records, else
    one row for the phase's calls. Each bar: lane, row, rows, start_s, stop_s, circuit, label."""
    lanes, bars = [], []
    for name in PHASES:
        rec = phases.get(name)
        if not rec:
            continue
        for clock in ("host", "device"):
            k0, k1 = ("start_s", "stop_s") if clock == "host" else ("device_start_s", "device_stop_s")
            spans = [s for s in rec.get("spans", []) if s.get(k0) is not None]
            if not spans:
                continue
            subs = [s for s in rec.get("circuits", []) if s.get(k0) is not None]
            lane = len(lanes)
            lanes.append(f"{name} ({clock})")
            rows = max([s["circuit"] for s in subs], default=0) + 1
            for s in spans:
                bars.append({"lane": lane, "row": None, "rows": rows, "start_s": s[k0], "stop_s": s[k1],
                             "circuit": None, "label": name})
            for s in subs:
                bars.append({"lane": lane, "row": s["circuit"], "rows": rows, "start_s": s[k0], "stop_s": s[k1],
                             "circuit": s["circuit"], "label": s.get("label")})
    return {"lanes": lanes, "bars": bars}


def timeline_png(report: dict):
    """Each phase per circuit on one time axis, host and device lanes, so overlaps and gaps show.
    (A pipelined run's timeline, worker, prover and device lanes, is pipeline_plot.pipeline_png.)"""
    plt = _plt()
    tl = timeline_lanes(report["phases"])
    lanes, bars = tl["lanes"], tl["bars"]
    fig, ax = plt.subplots(figsize=(12, 0.55 * max(4, len(lanes)) + 1.2))
    cmap = plt.get_cmap("tab10")
    for b in bars:
        y0 = len(lanes) - 1 - b["lane"]
        if b["row"] is None:           # the whole call: a light band under the circuits
            ax.barh(y0, (b["stop_s"] - b["start_s"]) * 1e3, left=b["start_s"] * 1e3, height=0.9,
                    color="0.85", edgecolor="0.5", linewidth=0.5)
        else:
            h = 0.8 / b["rows"]
            y = y0 - 0.4 + h * (b["row"] + 0.5)
            hatch = "//" if b["label"] == "assign" else None
            ax.barh(y, (b["stop_s"] - b["start_s"]) * 1e3, left=b["start_s"] * 1e3, height=h * 0.9,
                    color=cmap(b["circuit"] % 10), hatch=hatch, edgecolor="none")
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(list(reversed(lanes)), fontsize=8)
    ax.set_xlabel("ms since the run started (device bars placed from the first CUDA event)")
    c = report.get("circuit", {})
    ax.set_title(f"cuzk bench timeline: {c.get('name')} domain {c.get('domain')} x{c.get('circuits')}, "
                 f"backend {report.get('backend')}; colour = circuit", fontsize=9)
    n = max((b["circuit"] for b in bars if b["circuit"] is not None), default=-1) + 1
    if n:
        from matplotlib.patches import Patch
        ax.legend(handles=[Patch(color=cmap(i % 10), label=f"circuit {i}") for i in range(min(n, 10))],
                  fontsize=7, loc="lower right", ncol=min(n, 5))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _writer(fig, plt)


KIND_COLOURS = {"baseline": "0.55", "single": "tab:blue", "leave-one-out": "tab:orange", "all": "tab:green"}


def ablate_png(result: dict):
    """Phase bars per configuration: one panel per phase (its own scale), median time per
    configuration, whiskers from the sample quartiles; slower/faster than baseline marked."""
    plt = _plt()
    areas = result["areas"]
    configs = result["configurations"]
    cols = 4
    rows = (len(areas) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, area in zip(axes.flat, areas):
        meds, lo, hi, colours, marks = [], [], [], [], []
        for c in configs:
            st = c["areas"][area]
            meds.append(st["median_s"] * 1e3)
            lo.append((st["median_s"] - st["q1_s"]) * 1e3)
            hi.append((st["q3_s"] - st["median_s"]) * 1e3)
            colours.append(KIND_COLOURS[c["kind"]])
            eff = c["areas"][area].get("vs_baseline")
            marks.append({"slower": "▲", "faster": "▼"}.get(eff["verdict"], "") if eff else "")
        x = range(len(configs))
        ax.bar(x, meds, yerr=[lo, hi], color=colours, capsize=2, error_kw={"elinewidth": 0.7})
        for xi, m, v in zip(x, meds, marks):
            if v:
                ax.annotate(v, (xi, m), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(list(x))
        ax.set_xticklabels([c["label"] for c in configs], rotation=70, fontsize=6)
        ax.set_title(area, fontsize=9)
        ax.set_ylabel("ms", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(areas):]:
        ax.axis("off")
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(color=v, label=k) for k, v in KIND_COLOURS.items()], loc="upper right", fontsize=7,
               ncol=4, bbox_to_anchor=(1, 0.955))
    s = result["setup"]
    done = result.get("rounds_done", s["repeat"])
    asked = f" (of {s['repeat']} asked)" if done < s["repeat"] else ""
    fig.suptitle(f"cuzk ablate: {s['backend']} {s['circuit']} 2^{s['log_size']} x{s['circuits']}, "
                 f"{done} interleaved rounds{asked} per configuration (▲ slower, ▼ faster than baseline, "
                 f"{s['confidence']:.0%} CI)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return _writer(fig, plt)
