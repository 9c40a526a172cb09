"""A PyPTO kernel as a model port writes it (ports/decoder_norm.py: torch wrapper, dynamic token
count, valid_shape tail, pass options), traced through the call the model makes and swept.

    python3 examples/pypto/trace_a_port.py
    tilesim trace-pypto examples/pypto/ports/decoder_norm.py --call "decode_step(200)" --json p.json

The port needs no torch here: tilesim's torch stand-in serves its `import torch`, and the call's
tensors fix the dynamic token count (200 tokens: four blocks of 48 and a tail of 8). Which tile
of rows should the norm take?
"""
import os

import tilesim.pypto as pypto

PORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ports", "decoder_norm.py")

if __name__ == "__main__":
    kernel = pypto.trace_file(PORT, call="decode_step(200)")
    print(kernel)
    res = kernel.sweep(tiles=[[r, 4096] for r in (1, 2, 4, 8)], loop_counts=None)
    print(res.table(top=4))
    print(res.recommendation)
