"""terazi's version: one place, read by the package metadata (pyproject.toml), the manifests and `--version`."""

__version__ = "0.1.0"
