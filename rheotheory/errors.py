"""Errors raised for bad input. Each carries one line that says what is wrong."""

from __future__ import annotations

__all__ = ["RheoError", "LawError", "InstanceError", "TreeError", "VerifierError"]


class RheoError(ValueError):
    """Base class: invalid input to rheotheory (the CLI prints it as one line and exits 2)."""


class LawError(RheoError):
    """A probability law is malformed (negative, NaN/inf, not normalised, wrong length)."""


class InstanceError(RheoError):
    """An LM pair / instance file is malformed (missing prefixes, mismatched vocabularies...)."""


class TreeError(RheoError):
    """Impossible tree parameters (top-k, depth, budget, head, shape)."""


class VerifierError(RheoError):
    """A verifier was given a candidate set it is not defined for."""
