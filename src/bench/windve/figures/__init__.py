"""WindVE's figures, drawn from the ``profile`` and ``serving`` records only (found in this package's
modules by the registry): Tables I-III (:mod:`.concurrency`), Figures 4-6 (:mod:`.profiles`), Figure 2's
stand-in, our bursty open-loop trace (:mod:`.load_curve`; the paper's curve has no values), and beyond
the paper the open-loop load, CPU utilisation and deployment cost, and the service checks
(:mod:`.service`). The accelerator is whatever the records say ran (:mod:`..analysis`): the CUDA GPU,
measured, labelled by its name; or the emulated accelerator, every series of it labelled so and the
captions saying EMULATED (:mod:`.labels`). The paper's values are drawn in the paper style beside ours,
in their own panel when the scale differs."""
from ...core.presenting.figures import Registry

FIGURES = Registry(__name__)
