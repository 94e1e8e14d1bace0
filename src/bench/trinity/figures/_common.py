"""What several of Trinity's figures share: the note that the paper has no measured values, and one marker
per scheduling or batching policy."""

NO_PAPER = "The paper reports no measured values (no evaluation section), so none is drawn."
POLICY_MARKERS = "osD^vP*X"
