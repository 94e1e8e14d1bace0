"""Dataset layer: file formats, registered sources, verified downloads, subsets with matching ground
truth, synthetic generators, and prepared datasets the studies load."""
