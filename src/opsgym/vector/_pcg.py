"""NumPy's ``PCG64`` and ``SeedSequence``, one stream per lane, stepped for many lanes at once.

The scalar worlds draw from ``np.random.default_rng(seed)`` (PCG64 seeded through a
``SeedSequence``), and the Gym face draws its episode seeds from Gymnasium's
``seeding.np_random(seed)`` (the same construction). A batch of lanes cannot afford one Python
``Generator`` per lane and call (see :mod:`opsgym.vector`), so this module recomputes those
streams with array arithmetic: the SeedSequence hash on ``uint32`` arrays, the 128-bit LCG on
pairs of ``uint64`` arrays (high, low words), and the XSL-RR output. Every number it returns is
the one NumPy's generator returns for that lane, bit for bit (``tests/test_vector_release.py``
checks it against NumPy on many seeds).

Only what the worlds and the Gym face consume is offered: ``random()`` doubles
(``next_double``), the two bounded integers of ``OpsEnv.reset`` (``integers(2**27)`` and
``integers(8)``, neither of which ever rejects a draw), raw draws and the ``uint32`` words
``next_uint32`` cuts them into (for the masked and Lemire rejection samplers of
``permutation`` and ``integers``, replayed in :mod:`opsgym.vector._oversight_starts`).
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64
_M32 = _U64(0xFFFFFFFF)
_S32 = _U64(32)
MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
"""PCG64's 128-bit LCG multiplier (``PCG_DEFAULT_MULTIPLIER_128``)."""

# SeedSequence's hash constants (numpy/random/bit_generator.pyx).
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = np.uint32(0xCA01F9DD), np.uint32(0x4973F715)
_XSHIFT = np.uint32(16)
_POOL = 4


def _hash_consts(init: int, mult: int, n: int) -> list[np.uint32]:
    """The multipliers a SeedSequence hash uses, in order (each is the last times ``mult``)."""
    out, h = [], init
    for _ in range(n):
        h = (h * mult) & 0xFFFFFFFF
        out.append(np.uint32(h))
    return out


# hashmix xors with the constant *before* updating it, then multiplies by the updated one.
_A_CONSTS = _hash_consts(_INIT_A, _MULT_A, _POOL + _POOL * (_POOL - 1))
_A_XORS = [np.uint32(_INIT_A)] + _A_CONSTS[:-1]
_B_CONSTS = _hash_consts(_INIT_B, _MULT_B, 2 * _POOL)
_B_XORS = [np.uint32(_INIT_B)] + _B_CONSTS[:-1]


def _split128(value: int) -> tuple[np.uint64, np.uint64]:
    return _U64(value >> 64), _U64(value & 0xFFFFFFFFFFFFFFFF)


def seed_words(seeds: np.ndarray | list[int]) -> np.ndarray:
    """The four little-endian ``uint32`` entropy words of each seed (``0 <= seed < 2**128``),
    as ``SeedSequence(seed)`` reads them (fewer words are padded with zeros, which its hash
    treats exactly as absent words).
    """
    if isinstance(seeds, np.ndarray) and seeds.dtype.kind in "iu":
        if seeds.size and int(seeds.min()) < 0:
            raise ValueError(f"seeds must be >= 0, got {int(seeds.min())}")
        s = seeds.astype(np.uint64)
        out = np.zeros((_POOL, s.size), np.uint32)
        out[0] = (s & _M32).astype(np.uint32)
        out[1] = (s >> _S32).astype(np.uint32)
        return out
    words = np.zeros((_POOL, len(seeds)), np.uint32)
    for j, seed in enumerate(seeds):
        seed = int(seed)
        if not 0 <= seed < 1 << 128:
            raise ValueError(f"seeds must lie in [0, 2**128), got {seed}")
        for i in range(_POOL):
            words[i, j] = (seed >> (32 * i)) & 0xFFFFFFFF
    return words


def seed_sequence_state(words: np.ndarray) -> np.ndarray:
    """``SeedSequence(seed).generate_state(8, np.uint32)`` for each column of ``words``."""
    consts, xors = iter(_A_CONSTS), iter(_A_XORS)

    def hashmix(value: np.ndarray) -> np.ndarray:
        value = (value ^ next(xors)) * next(consts)
        return value ^ (value >> _XSHIFT)

    with np.errstate(over="ignore"):
        mixer = [hashmix(words[i]) for i in range(_POOL)]
        for src in range(_POOL):
            for dst in range(_POOL):
                if src != dst:
                    mixed = _MIX_L * mixer[dst] - _MIX_R * hashmix(mixer[src])
                    mixer[dst] = mixed ^ (mixed >> _XSHIFT)
        out = np.empty((2 * _POOL, words.shape[1]), np.uint32)
        for i in range(2 * _POOL):
            value = (mixer[i % _POOL] ^ _B_XORS[i]) * _B_CONSTS[i]
            out[i] = value ^ (value >> _XSHIFT)
    return out


def _mulhi64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high 64 bits of the 128-bit product of ``a`` and ``b`` (``uint64`` arrays)."""
    a0, a1 = a & _M32, a >> _S32
    b0, b1 = b & _M32, b >> _S32
    p01, p10 = a0 * b1, a1 * b0
    mid = ((a0 * b0) >> _S32) + (p01 & _M32) + (p10 & _M32)
    return a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)


def _mul128(ah, al, bh, bl):  # noqa: ANN001, ANN202 - arrays in, arrays out
    """``(a * b) mod 2**128`` on (high, low) word pairs."""
    return _mulhi64(al, bl) + al * bh + ah * bl, al * bl


def _add128(ah, al, bh, bl):  # noqa: ANN001, ANN202
    lo = al + bl
    return ah + bh + (lo < al), lo


class JumpTable:
    """``state_k = A_k * state + S_k * inc`` for ``k = 1..steps``: the PCG64 state ``k`` draws
    ahead of a given one, for each lane its own ``k``, without stepping ``k`` times.
    """

    def __init__(self, steps: int):
        a, s = 1, 0
        rows = []
        for _ in range(steps):
            a, s = (a * MULTIPLIER) % (1 << 128), (s * MULTIPLIER + 1) % (1 << 128)
            rows.append((*_split128(a), *_split128(s)))
        self.steps = steps
        self.a_hi, self.a_lo, self.s_hi, self.s_lo = np.array(rows, dtype=np.uint64).T

    def ahead(self, hi, lo, inc_hi, inc_lo, k: np.ndarray):  # noqa: ANN001, ANN201
        """The states ``k`` (``1 <= k <= steps``, one per lane) draws ahead of ``(hi, lo)``."""
        j = k - 1
        with np.errstate(over="ignore"):
            xh, xl = _mul128(hi, lo, self.a_hi[j], self.a_lo[j])
            yh, yl = _mul128(inc_hi, inc_lo, self.s_hi[j], self.s_lo[j])
            return _add128(xh, xl, yh, yl)


def output(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """PCG64's XSL-RR output of states ``(hi, lo)``: the ``uint64`` a draw yields."""
    x = hi ^ lo
    rot = hi >> _U64(58)
    return (x >> rot) | (x << ((_U64(64) - rot) & _U64(63)))


def doubles(raw: np.ndarray) -> np.ndarray:
    """``Generator.random()`` of raw ``uint64`` draws: the top 53 bits over ``2**53``."""
    return (raw >> _U64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def seeded(words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The PCG64 ``(state_hi, state_lo, inc_hi, inc_lo)`` of ``PCG64(SeedSequence(seed))`` for
    each column of ``words`` (see :func:`seed_words`).
    """
    st = seed_sequence_state(words).astype(np.uint64)
    # generate_state(4, uint64) pairs the uint32 words little-endian: [0|1], [2|3], ...
    init_hi, init_lo = st[0] | (st[1] << _S32), st[2] | (st[3] << _S32)
    seq_hi, seq_lo = st[4] | (st[5] << _S32), st[6] | (st[7] << _S32)
    m_hi, m_lo = _split128(MULTIPLIER)
    with np.errstate(over="ignore"):
        inc_hi = (seq_hi << _U64(1)) | (seq_lo >> _U64(63))
        inc_lo = (seq_lo << _U64(1)) | _U64(1)
        # pcg_setseq_128_srandom_r: state = 0; step; state += initstate; step.
        hi, lo = _add128(inc_hi, inc_lo, init_hi, init_lo)
        hi, lo = _mul128(hi, lo, m_hi, m_lo)
        hi, lo = _add128(hi, lo, inc_hi, inc_lo)
    return hi, lo, inc_hi, inc_lo


def step(hi, lo, inc_hi, inc_lo):  # noqa: ANN001, ANN201
    """One LCG step of each lane: the state its next draw is output from."""
    m_hi, m_lo = _split128(MULTIPLIER)
    with np.errstate(over="ignore"):
        hi, lo = _mul128(hi, lo, m_hi, m_lo)
        return _add128(hi, lo, inc_hi, inc_lo)


def outputs_ahead(hi, lo, inc_hi, inc_lo, n: int):  # noqa: ANN001, ANN201
    """The next ``n`` raw ``uint64`` draws of each lane (an ``(n, lanes)`` array) and the
    states after each (two ``(n, lanes)`` arrays), stepping the LCG ``n`` times over all lanes.
    """
    out = np.empty((n, hi.size), np.uint64)
    his, los = np.empty((n, hi.size), np.uint64), np.empty((n, hi.size), np.uint64)
    for j in range(n):
        hi, lo = step(hi, lo, inc_hi, inc_lo)
        his[j], los[j] = hi, lo
        out[j] = output(hi, lo)
    return out, his, los


def draw_ahead(hi, lo, inc_hi, inc_lo, n: int):  # noqa: ANN001, ANN201
    """The next ``n`` doubles of each lane (an ``(n, lanes)`` array) and the states after each
    (two ``(n, lanes)`` arrays), stepping the LCG ``n`` times over all lanes at once.
    """
    raw, his, los = outputs_ahead(hi, lo, inc_hi, inc_lo, n)
    return doubles(raw), his, los


def halves(raw: np.ndarray) -> np.ndarray:
    """The ``uint32`` words ``next_uint32`` gives from raw draws ``(n, lanes)`` (a fresh
    buffer: each draw's low half, then its high half): ``(2 n, lanes)``.
    """
    out = np.empty((2 * raw.shape[0], *raw.shape[1:]), np.uint64)
    out[0::2] = raw & _M32
    out[1::2] = raw >> _S32
    return out


def interval_mask(high: int) -> int:
    """The smallest all-ones bit mask covering ``high`` (``random_interval``'s)."""
    return (1 << int(high).bit_length()) - 1
