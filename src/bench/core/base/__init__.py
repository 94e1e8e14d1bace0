"""What every other room of core stands on: the harness's error types (``errors``: bad input is a
``BenchError`` that ``bench`` prints as ``bench: error: ...``) and atomic writes (``atomic``: an output
appears whole or not at all). Imports nothing of the harness."""
