"""Pieces that serving studies share and that are not harness: an open-loop load generator
(:mod:`.loadgen`, used by WindVE and Trinity) and a small decoder-only LM (:mod:`.transformer`, the
generator of Chameleon's RALM serving)."""
