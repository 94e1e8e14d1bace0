"""The harness every study stands on, in rooms by concern, each importing only the rooms below it:

- ``base``: errors and atomic writes;
- ``machine``: devices, the hardware in words, control groups;
- ``declaring``: a study's declaration, typed parameters, the profile, validation, derived rules;
- ``measuring``: the step skeleton, timing, the quiet-machine check, record sets, provenance, the
  two-stage design;
- ``judging``: claims and their verdicts, the ledger across studies;
- ``presenting``: figures, plotting, tables, the report page;
- ``commands``: the command line and the checks at its door.

Core imports no data, ann, serving or study module; ``tests/test_layers.py`` holds it to that order."""
