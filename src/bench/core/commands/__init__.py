"""The command line a study gets from its declaration (``studycli``, ``cliutil``) and the checks every
command makes at its door before work starts (``doors``: bad input becomes ``bench: error: ...``)."""
