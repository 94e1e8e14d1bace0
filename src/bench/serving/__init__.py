"""Pieces that serving studies share and that are not harness: an open-loop load generator
(:mod:`.loadgen`, used by WindVE and Trinity) and random-weight language models from transformers
(:mod:`.lm`: Llama and T5 architectures with a static KV cache, the generator of Chameleon's RALM serving
and the prefill/decode stages of Trinity's roofline)."""
