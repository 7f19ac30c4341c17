"""Python's own float arithmetic, lane by lane, where NumPy's differs from it.

The scalar worlds compute in Python floats: ``round(x, n)`` is correctly rounded (NumPy's
``np.round`` scales by a power of ten first and so differs near halves), and a step's reward is
``sum()`` of its components (plain left to right before Python 3.12, compensated from 3.12 on).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

COMPENSATED_SUM = sys.version_info >= (3, 12)
"""Whether this Python's ``sum()`` of floats is Neumaier-compensated (3.12 and later)."""


def round_steps(low: float, high: float, ndigits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(edges, values)`` such that :func:`rounded` is Python's ``round(x, ndigits)`` for
    every float ``x`` in ``[low, high]``: each edge is the least float ``round`` sends to the
    next value, found with Python's ``round`` itself.
    """
    scale = 10**ndigits
    first, last = int(np.floor(low * scale)) - 1, int(np.ceil(high * scale)) + 1
    values = np.array([k / scale for k in range(first, last + 1)])
    edges = []
    for k in range(first, last):
        upper = (k + 1) / scale
        x = (k + 0.5) / scale
        while round(x, ndigits) == upper:
            x = float(np.nextafter(x, -np.inf))
        while round(x, ndigits) != upper:
            x = float(np.nextafter(x, np.inf))
        edges.append(x)
    return np.array(edges), values


def rounded(steps: tuple[np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    """``round(x, ndigits)`` of each ``x`` by the ``steps`` of :func:`round_steps`."""
    edges, values = steps
    return values[np.searchsorted(edges, x, side="right")]


def python_sum(columns: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
    """``sum([c0, c1, ...])`` of Python floats, lane by lane. A component a lane lacks is a
    zero, which leaves Python's sum as it was (the first component never lacks).
    """
    total = columns[0].copy()
    if not COMPENSATED_SUM:
        for column in columns[1:]:
            total += column
        return total
    comp = np.zeros_like(total)
    for x in columns[1:]:
        t = total + x
        comp += np.where(np.abs(total) >= np.abs(x), (total - t) + x, (x - t) + total)
        total = t
    return np.where((comp != 0) & np.isfinite(comp), total + comp, total)


_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves


def _two_product(a: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """``(p, e)`` with ``p = fl(a * b)`` and ``a * b = p + e`` exactly (Dekker)."""
    p = a * b
    ca = _SPLITTER * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLITTER * b
    bh = cb - (cb - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def py_round(x: np.ndarray, ndigits: int) -> np.ndarray:
    """Python's ``round(x, ndigits)`` of each float ``x`` (``0 <= ndigits <= 22``), whatever
    its range: the exact product ``x * 10**ndigits`` rounded half to even to an integer ``k``
    (Python's decimal rounding of ``x``), then ``k / 10**ndigits`` (correctly rounded, as the
    float Python parses from that decimal).

    The product is ``p + e`` exactly; ``p``'s fraction less a half is exact and, unless zero,
    larger than ``e``, so it alone decides the side; at zero ``e`` does, and a true tie goes
    to the even neighbour.
    """
    scale = float(10**ndigits)
    p, e = _two_product(np.asarray(x, dtype=float), scale)
    k = np.floor(p)
    d = (p - k) - 0.5
    up = np.where(d != 0, d > 0, (e > 0) | ((e == 0) & (np.fmod(k, 2) != 0)))
    return np.asarray((k + up) / scale)
