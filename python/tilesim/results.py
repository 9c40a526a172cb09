"""Results: the CLI's --json content with attributes, as dicts, as pandas frames, as plots."""
import copy
import io
import json

from ._jobs import write_text


class JsonResult:
    """A command's result: ``to_dict()`` is the CLI's ``--json``; its keys are attributes."""

    def __init__(self, data):
        self._data = data

    def to_dict(self):
        return copy.deepcopy(self._data)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no {name!r} "
                                 f"(keys: {', '.join(sorted(self._data))})") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._data))

    def __repr__(self):
        keys = ", ".join(sorted(self._data))
        return f"<tilesim.{type(self).__name__} {keys}>"


class Result(JsonResult):
    """One simulated run (tilesim.run, tilesim.replay). ``trace`` is its Chrome trace events
    (what ``--trace`` writes)."""

    def __init__(self, data, trace, inputs=()):
        super().__init__(data)
        self.trace = trace
        self._inputs = list(inputs)  # the files the run read: write_trace never replaces one

    def write_trace(self, path):
        """Writes the Chrome trace (what ``--trace FILE`` writes; open it in Perfetto), as the
        CLI writes it: atomically, never over a file this process read as an input
        (ConfigError)."""
        write_text(path, json.dumps(self.trace), "the trace", self._inputs)

    def timeline(self, ax=None):
        """Per-core lanes of the run's tasks, like PyPTO's swimlane (a matplotlib Axes)."""
        from .plot import timeline

        return timeline(self.trace, ax=ax, title=self._title())

    def _title(self):
        c = self._data.get("candidate", {})
        if c:
            return f"{c.get('op')} {c.get('shape')} tile {c.get('tile')} on {self._data.get('hardware')}"
        return f"{self._data.get('graph', '')} on {self._data.get('hardware', '')}"


class SweepResult:
    """A ranked sweep (tilesim.sweep). ``to_dict()`` is ``tilesim sweep --json``; ``to_csv()``,
    ``to_svg()`` and ``table()`` are the CLI's other outputs, byte for byte."""

    def __init__(self, outcome):
        self._outcome = outcome
        self._data = None

    def to_dict(self):
        return copy.deepcopy(self._dict())

    def _dict(self):
        if self._data is None:
            self._data = json.loads(self.to_json())
        return self._data

    def to_json(self):
        """The --json text (indented as the CLI writes it)."""
        return self._outcome.json()

    def to_csv(self):
        return self._outcome.csv()

    def to_svg_map(self):
        """``tilesim sweep --svg-map``: the heat map over two swept axes (a ConfigError when
        the sweep varies along one)."""
        return self._outcome.svg_map()

    def to_svg(self):
        return self._outcome.svg()

    def table(self, top=25, wide=False):
        return self._outcome.table(int(top), bool(wide))

    def to_dataframe(self):
        """pandas: one row per candidate (ranked, then rejected), one column per tile dim
        (tile_0, tile_1, ...), op / shape / dtype / hardware columns and every figure of the
        CSV."""
        import pandas as pd

        # Only an empty cell is missing (a rejected candidate's figures); "NA" is text.
        return pd.read_csv(io.StringIO(self.to_csv()), keep_default_na=False, na_values=[""])

    @property
    def candidates(self):
        return self._dict()["candidates"]

    @property
    def recommended(self):
        """The fastest candidate's entry (as in to_dict()["candidates"]), or None."""
        rec = self._dict().get("recommended")
        if not rec:
            return None
        return next((c for c in self.candidates if c["index"] == rec["index"]), None)

    @property
    def why(self):
        rec = self._dict().get("recommended")
        return rec.get("why") if rec else None

    @property
    def counts(self):
        return self._dict()["counts"]

    @property
    def sweep(self):
        return self._dict()["sweep"]

    def plot(self, ax=None):
        """The sweep as matplotlib draws it, from the data ``to_svg()`` draws: the sweep's
        objective along the swept axis with each point's zone and the recommendation starred, or,
        when the loop count (or grid) and a tile dim both vary, ``to_svg_map()``'s heat map."""
        from .plot import sweep_plot, sweep_plot_kind

        kind = sweep_plot_kind(self._dict())
        return sweep_plot(json.loads(self._outcome.plot_data(kind)), kind, ax=ax)

    def __repr__(self):
        c = self.counts
        return (f"<tilesim.SweepResult {c['candidates']} candidates, {c['evaluated']} evaluated; "
                f"{self.why}>")
