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
