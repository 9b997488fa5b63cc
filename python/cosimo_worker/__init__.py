"""``cosimo-worker``: the program of the worker processes of an isolated run started from
Python (``isolate=True``, ``call_timeout=``, a component's ``"isolate"``, a sweep's runs). The
run starts it as ``cosimo-worker worker --channel-fd N``, as the ``cosimo`` executable would be;
it hosts FMUs for the run in the ``cosimo`` package's library and is not meant to be started by
hand.

It loads that library (``cosimo._cosimo``) alone, not the ``cosimo`` package, which imports
numpy: a worker is started for every isolated run, and numpy's import would cost more than
many runs take."""

import importlib.machinery
import importlib.util
import os
import sys


def _library():
    """``cosimo._cosimo``, loaded from the ``cosimo`` package's folder without running the
    package's ``__init__``."""
    found = importlib.util.find_spec("cosimo")
    folders = list(found.submodule_search_locations or []) if found else []
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_cosimo" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("cosimo._cosimo", path)
                spec = importlib.util.spec_from_file_location("cosimo._cosimo", path, loader=loader)
                module = importlib.util.module_from_spec(spec)
                loader.exec_module(module)
                return module
    # Not laid out as installed (a source tree, a zip): the package's own import.
    from cosimo import _cosimo

    return _cosimo


def main() -> int:
    args = sys.argv[1:]
    if len(args) != 3 or args[:2] != ["worker", "--channel-fd"] or not args[2].isdigit():
        print("usage: cosimo-worker worker --channel-fd N (started by cosimo itself for isolated "
              "runs, not by hand)", file=sys.stderr)
        return 2
    return _library().serve_worker(int(args[2]))


if __name__ == "__main__":
    sys.exit(main())
