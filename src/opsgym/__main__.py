"""``python -m opsgym``: the ``opsgym`` command."""

from opsgym.cli import app

app(prog_name="opsgym")
