"""The package's version, importable from every layer without importing anything else."""

__version__ = "0.1.0"
