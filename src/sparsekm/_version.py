"""The package's version, in a leaf module that imports nothing (so that the persistence
layer and the provenance stamp can read it without importing the whole package; the build
reads it too: ``pyproject.toml`` ``[tool.setuptools.dynamic]``)."""

__version__ = "0.1.0"
