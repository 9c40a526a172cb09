"""matplotlib views of tilesim results: a sweep's U-curve with zones or its (tile dim, loop count)
heat map, and a run's per-core timeline (PyPTO swimlane style)."""
import math

# One colour per zone (tools/analyses/zones.hpp names them).
ZONE_COLORS = {
    "too_fragmented": "tab:orange",
    "sweet_spot": "tab:green",
    "too_coarse": "tab:red",
    "slower": "tab:gray",
}


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


def sweep_plot(data, ax=None):
    ok = [c for c in data["candidates"] if c["status"] == "ok"]
    ax = _axes(ax)
    sweep = data["sweep"]
    title = f"{sweep['op']} {sweep['shape']} {sweep['dtype']} on {sweep['hardware']}"
    if not ok:
        ax.set_title(title + ": no candidate passed the pre-check")
        return ax
    second = "grid" if any("grid" in c for c in ok) else "loop_count"
    dim = _varying_tile_dim(ok)
    if dim is not None and len({c.get(second) for c in ok}) > 1:
        return _heat_map(ok, dim, second, data, ax, title)
    return _u_curve(ok, data, ax, title)


def _u_curve(ok, data, ax, title):
    series = {}
    for c in ok:
        series.setdefault(c["series"], []).append(c)
    for members in series.values():
        members.sort(key=lambda c: c["axis_value"])
        ax.plot([c["axis_value"] for c in members], [c["gen_time_us"] for c in members],
                color="0.7", lw=1, zorder=1)
    for zone in sorted({c["zone"] or "none" for c in ok}):
        pts = [c for c in ok if (c["zone"] or "none") == zone]
        ax.scatter([c["axis_value"] for c in pts], [c["gen_time_us"] for c in pts], s=18,
                   color=ZONE_COLORS.get(zone, "tab:blue"), label=zone.replace("_", " "),
                   zorder=2)
    rec = data.get("recommended")
    best = next((c for c in ok if rec and c["index"] == rec["index"]), None)
    if best is not None:
        ax.scatter([best["axis_value"]], [best["gen_time_us"]], marker="*", s=220,
                   color="gold", edgecolor="black", zorder=3,
                   label=f"best {best['gen_time_us']:.3f} us")
    if max(c["axis_value"] for c in ok) > 8 * max(min(c["axis_value"] for c in ok), 1e-12):
        ax.set_xscale("log", base=2)
    ax.set_xlabel(data["sweep"]["axis"])
    ax.set_ylabel("gen_time_us")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return ax


def _heat_map(ok, dim, second, data, ax, title):
    import numpy as np

    xs = sorted({c["tile"][dim] for c in ok})
    ys = sorted({c[second] for c in ok})
    grid = np.full((len(ys), len(xs)), math.nan)
    for c in ok:  # the fastest over the other dims
        i, j = ys.index(c[second]), xs.index(c["tile"][dim])
        if math.isnan(grid[i, j]) or c["gen_time_us"] < grid[i, j]:
            grid[i, j] = c["gen_time_us"]
    mesh = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
    ax.figure.colorbar(mesh, ax=ax, label="gen_time_us (fastest over the other dims)")
    ax.set_xticks(range(len(xs)), [str(x) for x in xs], rotation=90, fontsize="small")
    ax.set_yticks(range(len(ys)), [str(y) for y in ys], fontsize="small")
    ax.set_xlabel(f"tile[{dim}]")
    ax.set_ylabel(second)
    rec = data.get("recommended")
    best = next((c for c in ok if rec and c["index"] == rec["index"]), None)
    if best is not None:
        ax.scatter([xs.index(best["tile"][dim])], [ys.index(best[second])], marker="*", s=260,
                   color="gold", edgecolor="black", label=f"best {best['gen_time_us']:.3f} us")
        ax.legend(fontsize="small", loc="upper right")
    ax.set_title(title)
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
