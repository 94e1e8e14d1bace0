"""The command line a study gets from its declaration (``studycli``, ``cliutil``), ``bench study NAME``: one
study's rules, then its rows in the ledger and report joined over what exists (``onestudy``), and the checks
every command makes at its door before work starts (``doors``: bad input becomes ``bench: error: ...``)."""
