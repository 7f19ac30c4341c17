"""Evaluation: policies x scenarios x seeds, stored, with honest statistics (``opsgym eval``)."""

from opsgym.evaluation.harness import EvaluationResult, evaluate

__all__ = ["EvaluationResult", "evaluate"]
