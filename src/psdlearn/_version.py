"""The version of psdlearn: set here only, read by the build and ``psdlearn.__version__``."""

__version__ = "0.1.0"
