import sys

from .cli import main

if __name__ == "__main__":  # not when a process started by a forkserver or spawn imports it
    sys.exit(main())
