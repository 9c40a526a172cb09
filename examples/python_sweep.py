# %% [markdown]
# # Tuning a kernel from Python with tilesim
# Notebook-style (the `# %%` cells open in Jupyter / VS Code). Run it from the repository root:
#     PYTHONPATH=build/python /usr/bin/python3 examples/python_sweep.py
# Plots go to $TILESIM_EXAMPLE_OUT (default: the working directory).

# %%
import json
import os

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402

import tilesim  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
out = os.environ.get("TILESIM_EXAMPLE_OUT", ".")

# %% [markdown]
# ## One candidate
# A config is a file path or a dict with the same keys.

# %%
run = tilesim.run({"op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1,
                   "tile": [1, 8192], "loop_count": 1})
print(f"softmax tile (1, 8192): {run.gen_time_us:.3f} us on {run.hardware}")
run.timeline()
plt.savefig(os.path.join(out, "timeline.png"))
plt.close("all")

# %% [markdown]
# ## A loop-count sweep: the U-curve and its zones

# %%
res = tilesim.sweep(os.path.join(root, "configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json"),
                    jobs=2)
print("recommended:", res.recommended["tile"], "loop", res.recommended["loop_count"])
print(res.why)
df = res.to_dataframe()
print(df[["rank", "loop_count", "gen_time_us", "zone"]].head(8).to_string(index=False))
res.plot()
plt.savefig(os.path.join(out, "u_curve.png"))
plt.close("all")

# %% [markdown]
# ## Two axes: a tile dim and the loop count, as a heat map

# %%
with open(os.path.join(root, "configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json")) as f:
    cfg = json.load(f)
cfg["hardware"] = "ascend910b1"
cfg["candidates"] = {"tiles": [[1, 8, 2, 256], [1, 8, 4, 256], [1, 8, 8, 256]],
                     "loop_counts": [1, 2, 4, 8, 16]}
two = tilesim.sweep(cfg, jobs=2)
two.plot()
plt.savefig(os.path.join(out, "heat_map.png"))
plt.close("all")

# %% [markdown]
# ## Errors are the CLI's, as exceptions

# %%
try:
    tilesim.run({"op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1,
                 "tile": [1, 8192], "tilee": 1})
except tilesim.ConfigError as e:
    print(f"ConfigError at {e.key}: {e}")
