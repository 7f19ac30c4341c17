"""World-agnostic machinery shared by every opsgym environment."""
