"""``cosimo-worker``: the program of the worker processes of an isolated run started from
Python (``isolate=True``, ``call_timeout=``, a component's ``"isolate"``). The run starts it as
``cosimo-worker worker --channel-fd N``, as the ``cosimo`` executable would be; it hosts FMUs
for the run in this package's library and is not meant to be started by hand."""

import sys


def main() -> int:
    args = sys.argv[1:]
    if len(args) != 3 or args[:2] != ["worker", "--channel-fd"] or not args[2].isdigit():
        print("usage: cosimo-worker worker --channel-fd N (started by cosimo itself for isolated "
              "runs, not by hand)", file=sys.stderr)
        return 2
    from . import _cosimo

    return _cosimo.serve_worker(int(args[2]))


if __name__ == "__main__":
    sys.exit(main())
