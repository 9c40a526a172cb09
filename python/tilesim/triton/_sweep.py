"""A traced launch's meta-parameter sweep: each candidate (an autotune config, or powers of two
around each BLOCK-like constexpr) is traced again (the grid from the launch's lambda) and run;
the fastest is the recommendation, named as the meta values to paste with the launch's
file:line."""
import itertools
import math
import os

from .._refusal import Refusal

MAX_CANDIDATES = 64
SPAN = 4  # powers of two each way around a BLOCK-like meta-parameter's value


def _blocklike(name, value):
    return (isinstance(value, int) and not isinstance(value, bool) and value >= 1 and
            value & (value - 1) == 0 and any(k in name.upper() for k in ("BLOCK", "SUB", "TILE")))


def default_space(launch):
    """{name: [values]}: the autotune configs' values, else powers of two around each
    BLOCK-like constexpr (value / 2^SPAN .. value * 2^SPAN)."""
    if launch.space and launch.space.get("configs"):
        return None
    names = [n for n, v in launch.meta.items() if _blocklike(n, v)]
    span = SPAN
    while span > 0 and (2 * span + 1) ** len(names) > MAX_CANDIDATES:
        span -= 1
    return {n: [v for v in (launch.meta[n] << k if k >= 0 else launch.meta[n] >> -k
                            for k in range(-span, span + 1)) if v >= 1] for n in names}


class Candidate:
    def __init__(self, meta, time=None, reason=None, grid=None):
        self.meta, self.time, self.reason, self.grid = meta, time, reason, grid


class TritonSweep:
    """The candidates (meta values, kernel time or the reason they did not run), ranked."""

    def __init__(self, launch, candidates):
        self.launch, self.candidates = launch, candidates
        ran = sorted((c for c in candidates if c.time is not None), key=lambda c: c.time)
        self.ranked = ran
        self.recommended = ran[0] if ran else None
        self.as_written = next((c for c in candidates if c.meta == {
            k: launch.meta.get(k) for k in c.meta}), None)

    @property
    def recommendation(self):
        la = self.launch
        at = f"{os.path.basename(la.where[0])}:{la.where[1]}"
        if self.recommended is None:
            return f"tilesim: no candidate of {la.name} ran ({self._why_none()})"
        best = self.recommended
        lines = [f"tilesim recommends for {la.name} ({len(self.ranked)} of "
                 f"{len(self.candidates)} candidates ran on {la.hardware}): {_shown(best.meta)}, "
                 f"grid {best.grid}: {best.time:.3f} us kernel_time_us"]
        base = self.as_written
        if base is not None and base.time is not None and base is not best:
            lines.append(f"  as written ({_shown(base.meta)}, grid {base.grid}): "
                         f"{base.time:.3f} us, {100 * (base.time - best.time) / base.time:.1f}% "
                         "more")
        if base is best or (base is not None and base.meta == best.meta):
            lines.append("  the launch as written is the recommended candidate: change nothing")
        else:
            where = self.launch.space["where"] if self.launch.space else la.where
            lines.append(f"  {os.path.basename(where[0])}:{where[1]}: "
                         f"{', '.join(f'{k}={v}' for k, v in best.meta.items())}"
                         f" (the launch at {at})")
        for c in self.ranked[1:4]:
            lines.append(f"  then {_shown(c.meta)}, grid {c.grid}: {c.time:.3f} us")
        refused = [c for c in self.candidates if c.time is None]
        if refused:
            lines.append(f"  not run ({len(refused)}): " + "; ".join(
                f"{_shown(c.meta)}: {c.reason}" for c in refused[:3]))
        lines += [f"  note: {n}" for n in la.notes]
        return "\n".join(lines)

    def _why_none(self):
        """Why the first candidates did not run, each by its meta values."""
        shown = "; ".join(f"{_shown(c.meta)}: {c.reason}" for c in self.candidates[:3])
        more = len(self.candidates) - 3
        return shown + (f"; and {more} more" if more > 0 else "")

    @property
    def brief(self):
        """The recommendation in one line (trace-triton --sweep's summary)."""
        la, best, base = self.launch, self.recommended, self.as_written
        if best is None:
            return f"no candidate of the {len(self.candidates)} ran ({self._why_none()})"
        where = self.launch.space["where"] if self.launch.space else la.where
        said = (f"recommended {_shown(best.meta)} (grid {best.grid}, {best.time:.3f} us of "
                f"{len(self.ranked)} candidates that ran of {len(self.candidates)})")
        if base is not None and base.time is not None and base.meta != best.meta:
            said += (f", as written {_shown(base.meta)} {base.time:.3f} us: paste at "
                     f"{os.path.basename(where[0])}:{where[1]}")
        elif base is not None and base.meta == best.meta:
            said += ": the launch as written"
        return said

    def __str__(self):
        return self.recommendation


def _shown(meta):
    return ", ".join(f"{k}={v}" for k, v in meta.items())


def _short(error, limit=200):
    """What a refusal or a run's error says, without the file:line and the advice."""
    text = f"{error.call}: {error.what}" if isinstance(error, Refusal) else \
        str(error).removeprefix("<dict>: ")
    return text if len(text) <= limit else text[:limit] + "..."


def sweep(launch, space=None):
    from .. import api
    space = space if space is not None else default_space(launch)
    if space is None:
        metas = [dict(c) for c in launch.space["configs"]]
    else:
        if not space:
            space = {}
        names = list(space)
        metas = [dict(zip(names, vals)) for vals in itertools.product(*space.values())]
        if not metas:
            metas = [{}]
    if len(metas) > MAX_CANDIDATES:
        raise Refusal("a meta-parameter sweep", f"{len(metas)} candidates, more than "
                      f"{MAX_CANDIDATES}", "give a smaller space ({name: [values]})",
                      launch.where)
    candidates = []
    for meta in metas:
        try:
            la = launch.retrace(**meta)
        except Refusal as e:
            candidates.append(Candidate(meta, reason=_short(e)))
            continue
        try:
            r = api.run(la.config)
            candidates.append(Candidate(meta, r.kernel_time_us, grid=la.grid))
        except (ValueError, RuntimeError) as e:
            candidates.append(Candidate(meta, reason=_short(e), grid=la.grid))
    return TritonSweep(launch, candidates)


_ = math
