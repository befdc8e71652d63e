"""acrl's version, recorded in checkpoints and datasets (kept in step with pyproject.toml)."""

__version__ = "0.2.0"
