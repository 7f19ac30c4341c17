"""A turn's tokens when the endpoint reports none: a deterministic estimate, no vocabulary.

A turn's tokens are the model's output (completion tokens, reasoning included): the provider's
``usage.completion_tokens`` when it reports usage (``token_source="provider"``), else
:func:`count_tokens` of the reply (:func:`~opsgym.adapters.toolcalls.parse.reply_text`;
``"estimate"``). The turn's first step is charged them, the others 0, so the episode's total is
the model's. The episode is built (or, before its first step, marked) with that source, so the
record says where the counts came from.
"""

from __future__ import annotations

import math
import re

_PRETOKEN = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)"  # English contractions
    r"|(?:[^\r\n\w]|_)?[^\W\d_]+"  # a word, with one leading space or punctuation mark
    r"|\d{1,3}"  # digits, three at most
    r"| ?(?:[^\s\w]|_)+[\r\n]*"  # punctuation
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"  # newlines and other whitespace
)
CHARS_PER_TOKEN = 6
"""A piece counts one token per this many characters begun (whitespace alone counts one)."""


def count_tokens(text: str) -> int:
    """An estimate of the tokens in ``text``, deterministic and without a vocabulary.

    The text is cut as GPT-4's tokenizer (cl100k) cuts it before its byte-pair merges, by the
    same pattern written for Python's ``re`` (contractions, words with their leading space,
    digits in threes, punctuation runs, whitespace); each piece counts one token per
    :data:`CHARS_PER_TOKEN` characters begun, since long rare words split into several. No
    vocabulary is loaded, so nothing is downloaded and the count is the same everywhere; it is
    an estimate, used only when the endpoint reports no usage (the record's token source says
    ``estimate`` then).
    """
    total = 0
    for piece in _PRETOKEN.findall(text):
        core = piece.strip()
        total += max(1, math.ceil(len(core) / CHARS_PER_TOKEN)) if core else 1
    return total
