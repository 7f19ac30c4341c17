"""Environments: one subpackage each, each defining ``SPEC``."""
