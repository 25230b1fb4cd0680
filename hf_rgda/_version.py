"""The package version, in a module of its own so that modules inside the package never import the package root."""

__version__ = "0.1.0"
