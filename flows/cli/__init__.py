"""The ``swedeck`` command line, one module per command group: parse, then import the heavy parts inside each command."""

from flows.cli.swedeck import app, main

__all__ = ["app", "main"]
