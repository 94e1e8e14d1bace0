"""The recall chain's figures (found in this package's modules by the registry)."""
from ...core.presenting.figures import Registry

FIGURES = Registry(__name__)
