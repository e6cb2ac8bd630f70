"""The ``wiki`` command line: a thin typer app over ``wiki`` and ``indexes``."""

__version__ = "0.1.0"
