"""The files a transfer moves, generated deterministically (same kind, size and seed:
the same bytes), as the four kinds USN's WAN-accelerator tests moved:

- `hdf`: structured scientific data, like the HDF5 files of a supernova simulation:
  float32 fields on 64^3 grids, each a noisy, rippled explosion inside a shock front of
  random radius and a uniform ambient medium outside. The mean shock radius (0.63 of
  the grid) is chosen so the whole file gzips to about 0.68 of its size, as USN's HDF
  files did (0.6831); no two grids are alike, so the file has no repeated chunks.
- `random`: uniformly random bytes (gzip makes them slightly larger).
- `duplicated`: one 4-byte random pattern over and over: gzip compresses it 1,025:1,
  the limit of deflate and the 1,030:1 USN reported for its duplicated file (a pattern
  of 16 bytes gives 514:1, of 64 bytes 342:1).
- `gzip`: `hdf` data gzip-compressed, as a site would ship it already compressed.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

KINDS = ("hdf", "random", "duplicated", "gzip")
GRID = 64
SHOCK_RADIUS = 0.63
"""Mean radius of the shock front, in grid widths: sets the share of noisy values, and
so the whole file's gzip ratio (about 0.68 at 0.63)."""
DUPLICATED_PATTERN_BYTES = 4
_WRITE_BYTES = 16 << 20


def write(kind: str, path: Path, size_bytes: int, seed: int = 1) -> Path:
    """`size_bytes` of `kind` at `path`."""
    if kind not in KINDS:
        raise ValueError(f"unknown payload {kind!r}: one of {', '.join(KINDS)}")
    rng = np.random.default_rng(seed)
    with path.open("wb") as out:
        left = size_bytes
        for piece in _pieces(kind, rng):
            out.write(piece[:left])
            left -= min(left, len(piece))
            if left == 0:
                break
    return path


def _pieces(kind: str, rng: np.random.Generator) -> Iterator[bytes]:
    if kind == "hdf":
        while True:
            yield _grid(rng)
    elif kind == "random":
        while True:
            yield rng.bytes(_WRITE_BYTES)
    elif kind == "duplicated":
        piece = rng.bytes(DUPLICATED_PATTERN_BYTES) * (_WRITE_BYTES // DUPLICATED_PATTERN_BYTES)
        while True:
            yield piece
    else:
        packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: the gzip container
        while True:
            packed = packer.compress(b"".join(_grid(rng) for _ in range(8)))
            if packed:
                yield packed


@functools.cache
def _radius() -> np.ndarray:
    """Each grid point's distance from the centre, in grid widths (made on first use, not
    when the module loads: the CLI imports it)."""
    x = (np.arange(GRID, dtype=np.float32) + 0.5) / GRID - 0.5
    return np.sqrt(x[:, None, None] ** 2 + x[None, :, None] ** 2 + x[None, None, :] ** 2)


def _grid(rng: np.random.Generator) -> bytes:
    r = _radius()
    shock = SHOCK_RADIUS * (1 + 0.1 * rng.standard_normal())
    field = np.exp(-r) * (1 + 0.2 * np.sin(20 * r + rng.uniform(0, 2 * np.pi)))
    field *= 1 + 1e-2 * rng.standard_normal(r.shape)
    return np.where(shock > r, field, 1e-3).astype(np.float32).tobytes()
