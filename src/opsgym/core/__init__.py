"""World-agnostic machinery shared by every opsgym environment."""

VERSION = "0.1.0"
"""opsgym's version (``opsgym.__version__``), kept in core so that any layer can state it."""
