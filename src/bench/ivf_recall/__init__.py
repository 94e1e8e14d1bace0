"""IVF-PQ recall@1/10/100 and queries/s against nprobe: the experiment that proves the harness chain
(data rule -> index rule -> measurement rule -> figure rule -> report). It is the basis of ESPN's
Figure 5 (recall vs nprobe) and of Chameleon's choice of nprobe (section 6, IVF-PQ, nprobe 32).

The worked example of docs/adding-a-study.md: the declaration below is all the CLI, the derived rules
and the contract test read.
"""
from ..core.declaring.study import Steps, Study
from .params import Params

STUDY = Study(name="ivf_recall", cli="ivf-recall", help="IVF-PQ recall and queries/s against nprobe",
              params=Params, steps=Steps(f"{__name__}.steps"), figures=f"{__name__}.figures",
              claims=f"{__name__}.claims",
              title="IVF-PQ recall (the harness's own check)", short="IVF-PQ recall check", order=90, reproduces_paper=False)
