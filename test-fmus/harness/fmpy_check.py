"""FMPy, an independent importer, vouches for the project's FMUs.

Usage: python fmpy_check.py FMU...

For every FMU: fmpy.validation.validate_fmu must report no problems, and
fmpy.simulate_fmu(..., fmi_type='CoSimulation') must run without raising and return rows with
finite floating-point values. Prints one line per FMU ("ok ..." or "FAIL ...") and exits with 1
if any FMU failed.
"""

import sys
import traceback


def check(path):
    import numpy as np
    from fmpy import read_model_description, simulate_fmu
    from fmpy.validation import validate_fmu

    problems = validate_fmu(path)
    if problems:
        return "validate_fmu reported %d problem(s): %s" % (len(problems), "; ".join(map(str, problems)))
    md = read_model_description(path)
    if md.coSimulation is None:
        return "no CoSimulation interface in the model description"
    result = simulate_fmu(path, fmi_type="CoSimulation")
    if result is None or len(result) == 0:
        return "simulate_fmu returned no rows"
    for name in result.dtype.names:
        column = result[name]
        if column.dtype.kind == "f" and not np.all(np.isfinite(column)):
            return "simulate_fmu: column %r has non-finite values" % name
    return "ok: FMI %s, %d rows, columns %s" % (md.fmiVersion, len(result), ", ".join(result.dtype.names))


def main(paths):
    if not paths:
        print("usage: fmpy_check.py FMU...", file=sys.stderr)
        return 2
    import fmpy

    print("FMPy %s" % fmpy.__version__)
    failed = 0
    for path in paths:
        try:
            verdict = check(path)
        except Exception:  # report every FMU, not just the first failure
            verdict = "exception:\n" + traceback.format_exc()
        if verdict.startswith("ok"):
            print("ok %s (%s)" % (path, verdict[4:]))
        else:
            failed += 1
            print("FAIL %s: %s" % (path, verdict))
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
