"""IVF-PQ recall@1/10/100 and queries/s against nprobe: the experiment that proves the harness chain
(data rule -> index rule -> measurement rule -> figure rule -> report). It is the basis of ESPN's
Figure 5 (recall vs nprobe) and of Chameleon's choice of nprobe (section 6, IVF-PQ, nprobe 32)."""
