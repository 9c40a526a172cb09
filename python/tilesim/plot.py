"""matplotlib views of tilesim results: a sweep's curve with zones or its (tile dim, loop count)
heat map, drawn from the data the CLI's --svg and --svg-map draw, and a run's per-core timeline
(PyPTO swimlane style)."""
import math


def _kind(event):
    """A task's colour key: its PSG (program subgraph) when the trace names one."""
    return str(event.get("args", {}).get("psg", event.get("name", "")))


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(8, 4.5))
    return ax


def _varying_tile_dim(ok):
    """The tile dim with the most distinct values (None when no dim varies)."""
    if not ok:
        return None
    best, best_n = None, 1
    for d in range(len(ok[0]["tile"])):
        n = len({c["tile"][d] for c in ok})
        if n > best_n:
            best, best_n = d, n
    return best


def sweep_plot_kind(data):
    """"map" when a tile dim and the loop count (or grid) both vary, else "curve"."""
    ok = [c for c in data["candidates"] if c["status"] == "ok"]
    second = "grid" if any("grid" in c for c in ok) else "loop_count"
    if _varying_tile_dim(ok) is not None and len({c.get(second) for c in ok}) > 1:
        return "map"
    return "curve"


def sweep_plot(plot, kind, ax=None):
    """Draws what ``tilesim sweep --svg`` (kind "curve") or ``--svg-map`` ("map") draws, from the
    same plot data (the core's ``plot_data``): the sweep's objective, its zones and the
    recommended candidate."""
    ax = _axes(ax)
    if kind == "map":
        return _heat_map(plot, ax)
    return _curve(plot, ax)


def _curve(plot, ax):
    title = plot["title"] + (f"\n{plot['subtitle']}" if plot["subtitle"] else "")
    ax.set_title(title, fontsize="medium")
    if not plot["series"]:
        return ax
    seen = set()
    for band in plot["bands"]:
        label = band["label"] if band["label"] not in seen else None
        seen.add(band["label"])
        ax.axvspan(band["x0"], band["x1"], color=band["color"], alpha=0.35, lw=0, label=label,
                   zorder=0)
    for series in plot["series"]:
        pts = sorted(series["points"], key=lambda q: q["x"])
        xs, ys = [q["x"] for q in pts], [q["y"] for q in pts]
        if series["line"]:
            ax.plot(xs, ys, color=series["color"], lw=1.2, alpha=series["opacity"], zorder=1)
        if series["radius"] > 0:
            ax.scatter(xs, ys, s=series["radius"] ** 2 * 3.0,
                       c=[q["fill"] or series["color"] for q in pts], edgecolor=series["color"],
                       alpha=series["opacity"], label=series["name"] or None, zorder=2)
        for q in pts:
            if q["label"]:
                ax.annotate(q["label"], (q["x"], q["y"]), textcoords="offset points",
                            xytext=(0, 6), ha="center", fontsize="x-small")
    mark = plot["mark"]
    if mark is not None:
        ax.scatter([mark["x"]], [mark["y"]], marker="*", s=220, color="gold", edgecolor="black",
                   zorder=3, label=mark["label"])
    if plot["log_x"]:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(plot["x_label"])
    ax.set_ylabel(plot["y_label"])
    ax.legend(fontsize="small")
    return ax


def _heat_map(plot, ax):
    import numpy as np

    grid = np.array([[math.nan if v is None else v for v in row] for row in plot["values"]],
                    dtype=float)
    mesh = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
    ax.figure.colorbar(mesh, ax=ax, label=f"{plot['value_label']} (the fastest candidate there)")
    ax.set_xticks(range(len(plot["xs"])), plot["xs"], rotation=90, fontsize="small")
    ax.set_yticks(range(len(plot["ys"])), plot["ys"], fontsize="small")
    ax.set_xlabel(plot["x_label"])
    ax.set_ylabel(plot["y_label"])
    if plot["mark"] is not None:
        row, col = plot["mark"]
        ax.scatter([col], [row], marker="*", s=260, color="gold", edgecolor="black",
                   label=plot["mark_label"])
        ax.legend(fontsize="small", loc="upper right")
    ax.set_title(plot["title"], fontsize="medium")
    return ax


def timeline(trace, ax=None, title=""):
    """Per-core lanes from a Chrome trace: one row per core (thread), a bar per task."""
    ax = _axes(ax)
    names = {}
    for e in trace:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e.get("pid"), e.get("tid"))] = e["args"]["name"]
    lanes = {}
    for e in trace:
        if e.get("ph") == "X":
            lanes.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    keys = sorted(lanes, key=lambda k: (k[0], k[1]))
    kinds = sorted({_kind(e) for k in keys for e in lanes[k]})
    cmap = __import__("matplotlib").colormaps["tab20"]
    colour = {k: cmap(i % 20) for i, k in enumerate(kinds)}
    for row, key in enumerate(keys):
        bars = [(e["ts"], e.get("dur", 0)) for e in lanes[key]]
        ax.broken_barh(bars, (row - 0.4, 0.8),
                       facecolors=[colour[_kind(e)] for e in lanes[key]])
    ax.set_yticks(range(len(keys)), [names.get(k, f"{k[0]}/{k[1]}") for k in keys],
                  fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    ax.set_title(title)
    return ax
