"""No global random state anywhere in src/: one seeded Generator per episode."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PATTERN = re.compile(
    r"(^|[^.a-z_])random\.(seed|random|randint|choice|shuffle|uniform|gauss|sample)\("
    r"|np\.random\.(seed|rand|randn|randint|choice|shuffle|uniform|normal|random|permutation)\("
    r"|^\s*import random\b|^\s*from random import"
)


def test_no_global_random_state_in_src():
    offenders = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in SRC.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PATTERN.search(line)
    ]
    assert offenders == []


def test_the_grep_would_catch_an_offender():
    assert PATTERN.search("x = np.random.rand(3)")
    assert PATTERN.search("random.choice(items)")
    assert PATTERN.search("import random")
    assert not PATTERN.search("rng = np.random.default_rng(seed)")
