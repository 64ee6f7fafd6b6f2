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


def _plain(text) -> str:
    """Text drawn as written: matplotlib reads a pair of '$' as a formula (a saved run's label may hold one)."""
    return str(text).replace("$", r"\$")


DPI = 110       # the charts are laid out and checked at the resolution they are saved at


def _writer(fig, plt):
    def write(f):
        fig.savefig(f, format="png", dpi=DPI)
        plt.close(fig)
    return write


KEY_LANE = "key set-up (host)"


def timeline_lanes(phases: dict, key_setup: dict | None = None) -> list[dict]:
    """The bars of a timeline: one lane per phase and clock (host; device where CUDA events were
    recorded); inside a lane, one row per circuit where the phase has per-circuit sub-records, else
    one row for the phase's calls. Each bar: lane, row, rows, start_s, stop_s, circuit, label.
    key_setup (bench's "key_setup": start_s, stop_s, where, cached, label): the key's set-up between synthesis
    and the proof, its own lane after synthesis's, labelled (made now, loaded from the cache, or made on
    the GPU), so the time it takes is not a gap."""
    lanes, bars = [], []
    for name in PHASES:
        if name == "prep_msm" and key_setup:
            lanes.append(KEY_LANE)
            what = {"device": "keygen on the GPU (resident)",
                    "cache": "key from the cache" if key_setup.get("cached") else "keygen (saved to the cache)"
                    }.get(key_setup["where"], "key")
            bars.append({"lane": len(lanes) - 1, "row": None, "rows": 1, "start_s": key_setup["start_s"],
                         "stop_s": key_setup["stop_s"], "circuit": None, "label": what})
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
    tl = timeline_lanes(report["phases"], report.get("key_setup"))
    lanes, bars = tl["lanes"], tl["bars"]
    fig, ax = plt.subplots(figsize=(12, 0.55 * max(4, len(lanes)) + 1.2))
    cmap = plt.get_cmap("tab10")
    for b in bars:
        y0 = len(lanes) - 1 - b["lane"]
        if lanes[b["lane"]] == KEY_LANE:
            ax.barh(y0, (b["stop_s"] - b["start_s"]) * 1e3, left=b["start_s"] * 1e3, height=0.9,
                    color="tan", edgecolor="0.4", linewidth=0.5)
            ax.annotate(f"{b['label']}: {b['stop_s'] - b['start_s']:.2f} s",
                        ((b["start_s"] + b["stop_s"]) / 2 * 1e3, y0), ha="center", va="center", fontsize=7)
        elif b["row"] is None:           # the whole call: a light band under the circuits
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


# above this many configurations one bar per configuration is unreadable: ablate_png draws effects instead
BARS_MAX_CONFIGS = 16


def _ablate_title(result: dict, what: str) -> str:
    s = result["setup"]
    done = result.get("rounds_done", s["repeat"])
    asked = f" (of {s['repeat']} asked)" if done < s["repeat"] else ""
    return (f"cuzk ablate: {_plain(s['backend'])} {_plain(s['circuit'])} 2^{s['log_size']} x{s['circuits']}, "
            f"{done} interleaved rounds{asked} per configuration; {what}")


def ablate_png(result: dict):
    """`cuzk ablate --png`: bars per configuration for a small set; for a larger one (the registry's full
    size), each optimization's effects as a faceted chart (ablate_effects_png)."""
    if len(result["configurations"]) > BARS_MAX_CONFIGS:
        return ablate_effects_png(result)
    return ablate_bars_png(result)


def ablate_effects_png(result: dict):
    """One row per optimization, one panel per phase (and the whole proof), sharing the rows: the time
    ratio with X over without it, alone on the baseline (blue) and left out of all (orange: X's
    contribution to the full set), with its confidence interval. A marker without whiskers had no
    interval (too few rounds); filled: significant after the correction over the run's tests; a grey
    name: the backend does not read that toggle (its rows are controls)."""
    plt = _plt()
    return _writer(ablate_effects_fig(result, plt), plt)


# the ratio range a panel shows at most; whiskers beyond it are cut at the panel's edge
RATIO_RANGE = (0.1, 10.0)


def ablate_effects_fig(result: dict, plt=None):
    """The figure of ablate_effects_png, laid out, its tick labels thinned until none overlap."""
    plt = plt or _plt()
    areas, opts = result["areas"], result["optimizations"]
    conf = result["setup"]["confidence"]
    rows = len(opts)
    height = 0.24 * rows + 1.6
    fig, axes = plt.subplots(1, len(areas), figsize=(2.1 * len(areas) + 1.2, height), sharey=True, squeeze=False,
                             dpi=DPI)
    kinds = (("alone", "tab:blue", -0.17, "alone on baseline"), ("in_all", "tab:orange", 0.17, "left out of all"))
    for ax, area in zip(axes[0], areas):
        seen = [1.0]
        for key, colour, dy, _ in kinds:
            for i, o in enumerate(opts):
                e = (o.get(key) or {}).get(area)
                if not e:
                    continue
                y = rows - 1 - i + dy
                # every effect is time with X / time without X: "left out of all" is all / all-without-X
                filled = e["verdict"] in ("faster", "slower")
                if e["low"] is not None and e["high"] is not None:
                    ax.plot([e["low"], e["high"]], [y, y], color=colour, linewidth=1)
                    seen += [e["low"], e["high"]]
                ax.plot([e["ratio"]], [y], "o", markersize=3.5, color=colour,
                        markerfacecolor=colour if filled else "white")
                seen.append(e["ratio"])
        lo = max(RATIO_RANGE[0], min(min(seen), 0.9) / 1.05)
        hi = min(RATIO_RANGE[1], max(max(seen), 1.1) * 1.05)
        ax.axvline(1.0, color="0.4", linewidth=0.7)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        _ratio_ticks(ax)
        ax.set_title(area, fontsize=8)
        ax.tick_params(axis="x", labelsize=6)
        ax.grid(axis="x", alpha=0.3, which="both")
    axes[0][0].set_yticks(range(rows))
    axes[0][0].set_yticklabels([_plain(o["name"]) for o in reversed(opts)], fontsize=6)
    for lab, o in zip(axes[0][0].get_yticklabels(), reversed(opts)):
        if o.get("read_by_backend") is False:
            lab.set_color("0.6")
    axes[0][0].set_ylim(-0.7, rows - 0.3)
    fig.supxlabel("time with the optimization / without it (log scale; < 1: it makes the phase faster)", fontsize=7)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=c, marker="o", markersize=4, label=lab) for _, c, _, lab in kinds]
    if any(o.get("read_by_backend") is False for o in opts):
        handles.append(Line2D([], [], color="0.6", linestyle="", marker="$A$",
                              label=f"grey name: not read by the {_plain(result['setup']['backend'])} backend"))
    fig.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(handles))
    corr = result.get("correction")
    what = (f"{conf:.0%} CI; filled: significant after the Benjamini-Hochberg correction over {corr['tests']} tests"
            if corr else f"{conf:.0%} CI; filled: the interval excludes 1")
    fig.suptitle(_ablate_title(result, what), fontsize=8, x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / height))
    _thin_ticks(fig, axes[0])
    return fig


RATIO_TICKS = (0.1, 0.2, 0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 5.0, 10.0)
# which ticks keep their label first where labels would overlap: 1, then the round ratios
TICK_PRIORITY = (1.0, 0.5, 2.0, 0.1, 10.0, 0.2, 5.0, 0.8, 1.25, 0.9, 1.1, 1.5)


def _ratio_ticks(ax) -> None:
    """Plain ratio labels on a log axis (0.9, 1, 1.1), none of the minor ticks' crowded ones."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    lo, hi = ax.get_xlim()
    ticks = [v for v in RATIO_TICKS if lo <= v <= hi]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _thin_ticks(fig, axes, pad_px: float = 3.0) -> None:
    """Drop x tick labels, lowest priority first, until no two in a panel come within pad_px (measured
    by the renderer at the figure's own size; a narrow panel over a wide range keeps 1 and a few)."""
    from matplotlib.ticker import FixedLocator
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in axes:
        boxes = {round(v, 9): lab.get_window_extent(r).padded(pad_px / 2)
                 for v, lab in zip(ax.get_xticks(), ax.get_xticklabels()) if lab.get_text()}
        rank = {v: i for i, v in enumerate(TICK_PRIORITY)}
        keep: list[float] = []
        for v in sorted(boxes, key=lambda v: rank.get(v, len(rank))):
            if not any(boxes[v].overlaps(boxes[k]) for k in keep):
                keep.append(v)
        ax.xaxis.set_major_locator(FixedLocator(sorted(keep)))


def ablate_bars_png(result: dict):
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
        ax.set_xticklabels([_plain(c["label"]) for c in configs], rotation=70, fontsize=6)
        ax.set_title(area, fontsize=9)
        ax.set_ylabel("ms", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(areas):]:
        ax.axis("off")
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(color=v, label=k) for k, v in KIND_COLOURS.items()], loc="upper right", fontsize=7,
               ncol=4, bbox_to_anchor=(1, 0.955))
    s = result["setup"]
    corr = result.get("correction")
    how = (f"after the Benjamini-Hochberg correction over {corr['tests']} tests" if corr
           else f"{s['confidence']:.0%} CI")
    fig.suptitle(_ablate_title(result, f"▲ slower, ▼ faster than baseline ({how})"), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return _writer(fig, plt)
