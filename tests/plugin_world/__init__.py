"""Flag: turn a feature flag on in a config store that may lose a write and acknowledge it.

A world that is not part of opsgym: the test suite installs it as a plugin, through the
``opsgym.envs`` entry-point group of a distribution it writes to a temporary folder on
``sys.path`` (``tests/conftest.py``), and every face picks it up from its spec alone. It is the
least a world needs: tools, scenarios with a held-out family and ``mixed``, a judge, an encoder,
a scripted oracle and an exploit, imported from ``opsgym.core`` only.

## Tools
``read_flag`` (1 minute, fresh and exact: reveals a lost write), ``enable`` (2 minutes;
acknowledged whether or not the store kept it), ``complete`` (terminal; needs an enable sent).

## Scenarios
``nominal`` (writes stick), ``lost_write`` (the first write lost on half the seeds),
``flaky_store`` (held out: one or two writes lost), ``mixed`` (the seed draws the family).

## Routes
``POST /api/envs/flag/plan`` (``{"lost_writes": n}``): the oracle's calls against a store that
loses ``n`` writes.

## Episode End
``complete`` accepted (outcome ``enabled_verified``: the flag is on and a read after the last
enable said so), or the step budget (``incomplete``).
"""

from opsgym.core.spec import EnvSpec
from tests.plugin_world.world import (
    EXPLOITS,
    JUDGE,
    OUTCOME_REWARDS,
    POLICIES,
    ROUTES,
    SCENARIOS,
    Flag,
    FlagEncoder,
)

SPEC = EnvSpec(
    name="flag",
    gym_id="opsgym_flag/Flag-v0",
    world=Flag,
    judge=JUDGE,
    scenarios=SCENARIOS,
    rewards={"step": -0.01, "invalid": -0.1, "premature": -0.2, "terminal": 1.0},
    outcome_rewards=OUTCOME_REWARDS,
    max_steps=20,
    encoder=FlagEncoder,
    policies=POLICIES,
    safe_outcomes=frozenset({"enabled_verified"}),
    exploits=EXPLOITS,
    brief="You turn a feature flag on in a config store, then confirm it and call complete.",
    manual=__doc__,
    routes=ROUTES,
)
