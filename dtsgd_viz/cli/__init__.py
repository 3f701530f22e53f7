"""The ``dtsgd-viz`` command: the demo and its report, launching multi-client runs, the
Voila app."""

from .main import main

__all__ = ["main"]
