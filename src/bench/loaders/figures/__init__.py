"""Figures of the loaders study (Moving Stuff Around): Figure 1, Tables 1-3 drawn as figures (with
Markdown tables beside them), and the beyond-the-paper figures; found in this package's modules by the
registry, drawn from records only. The paper's values are drawn in their own marker and colour, in their
own panel when at another scale."""
from ...core.presenting.figures import Registry

FIGURES = Registry(__name__)
