"""Every keyword of ``cosimo.check`` takes effect or is refused, and acts as ``cosimo check``'s
option of the same name (issue 34: "every setting of ... a Python call either changes the run
or is refused"; one vocabulary: ``rtol`` / ``atol`` as on the command line).

Each keyword has a walk: Python's report with it must equal the command line's JSON report
with the option (or both refuse / fail), and differ from the report without it (or write a
file only it writes). The test fails when ``check`` gains a keyword without a walk.
"""

import inspect
import json
import re
import warnings

import pytest

import cosimo

from conftest import ROOT, fmu, run_cli

TWO_MASS = ROOT / "fmus" / "two-mass-force-force.json"
TWO_MASS_REFERENCE = ROOT / "tests" / "data" / "examples" / "two-mass-force-force.json.csv"


def _base(tmp_path=None):
    """A case that passes with room to spare on some tolerances and none on others: the
    two-mass example against its reference, given directly."""
    return [TWO_MASS], ["--reference", TWO_MASS_REFERENCE], {"reference": TWO_MASS_REFERENCE}


def _settings_file(tmp_path):
    path = tmp_path / "check.json"
    path.write_text(json.dumps({"tolerance": {"rel": 1e-12, "abs": 1e-12, "range": 1e-12}}))
    return path


def _driven(tmp_path):
    """The oscillator driven by a force input, against a reference made with that input: the
    check passes with the input and fails without it."""
    inputs = tmp_path / "force.csv"
    inputs.write_text("time,F\n0,0\n1,100\n")
    reference = tmp_path / "driven.csv"
    if not reference.exists():
        cosimo.simulate(fmu("Oscillator", 2), input=inputs, stop_time=0.05,
                        output_file=reference)
    return ([fmu("Oscillator", 2)], ["--reference", reference, "--stop-time", "0.05"],
            {"reference": reference, "stop_time": 0.05})


def _slow_gain(tmp_path):
    """The Gain FMU whose every step is busy for 1 s (its parameter `cost`), two steps,
    against a reference of its output."""
    settings = tmp_path / "slow.json"
    settings.write_text(json.dumps({
        "experiment": {"stopTime": 0.002, "stepSize": 0.001},
        "startValues": {"cost": 1.0},
    }))
    reference = tmp_path / "gain.csv"
    reference.write_text("time,y\n0,0\n0.002,0\n")
    return ([fmu("Gain", 2)], ["--reference", reference, "--settings", settings],
            {"reference": reference, "settings": settings})


# keyword -> (case builder, option args (tmp_path -> list), keyword value (tmp_path -> value),
#             expected effect). Effects: "report" (the report differs from the one without
# it), "refused" (UsageError / exit 2, the message naming the keyword), "fails" (a case fails:
# exit 3 or 1), "writes:<glob>" (a file only it writes, in the folder it names).
WALKS = {
    "reference": (_base, None, None, "report"),
    "rtol": (_base, lambda t: ["--rtol", "1e-9"], lambda t: 1e-9, "report"),
    "atol": (_base, lambda t: ["--atol", "1e-2"], lambda t: 1e-2, "report"),
    "range_tol": (_base, lambda t: ["--range-tol", "1e-9"], lambda t: 1e-9, "report"),
    "time_tol": (_base, lambda t: ["--time-tol", "0.05"], lambda t: 0.05, "report"),
    "start_time": (_base, lambda t: ["--start-time", "0.5"], lambda t: 0.5, "report"),
    "stop_time": (_base, lambda t: ["--stop-time", "0.5"], lambda t: 0.5, "report"),
    "step_size": (_base, lambda t: ["--step-size", "0.002"], lambda t: 0.002, "report"),
    "output_interval": (_base, lambda t: ["--output-interval", "0.05"], lambda t: 0.05,
                        "report"),
    "compare_at": (_base, lambda t: ["--compare-at", "all"], lambda t: "all", "report"),
    "settings": (_base, lambda t: ["--settings", _settings_file(t)], _settings_file, "report"),
    "input_file": (_driven, lambda t: ["--input-file", t / "force.csv"],
                   lambda t: t / "force.csv", "report"),
    "isolate": (_base, lambda t: ["--isolate"], lambda t: True, "same-report"),
    # Long enough for the worker process to start (which Python's and the command line's
    # workers do at different speeds), shorter than a step.
    "call_timeout": (_slow_gain, lambda t: ["--call-timeout", "0.5"], lambda t: 0.5, "report"),
    "worker_memory": (_base, lambda t: ["--worker-memory", "150M"], lambda t: "150M",
                      "refused"),
    "plot": (_driven, None, lambda t: t / "plots", "writes:*.png"),
    "results": (_base, None, lambda t: t / "kept", "writes:*.csv"),
    "html": (_driven, None, lambda t: t / "report", "writes:*.svg"),
}

# Keywords that are not options of a walk of their own: what is checked, and the process that
# hosts the FMUs when isolated (found by the module, tested in test_api.py).
NOT_WALKED = {"targets", "worker_program"}


def _keywords():
    """check()'s named keywords and those the compiled half takes from ``**options``, as its
    refusal of an unknown one lists them."""
    named = [p for p in inspect.signature(cosimo.check).parameters if p != "options"]
    with pytest.raises(cosimo.UsageError) as refused:
        cosimo.check(TWO_MASS, reference=TWO_MASS_REFERENCE, no_such_keyword=1)
    taken = str(refused.value).split("check takes: ", 1)[1].split(", ")
    return set(named) | set(taken)


def test_every_keyword_has_a_walk():
    assert sorted(_keywords() - NOT_WALKED) == sorted(WALKS)


def test_an_unknown_keyword_is_refused_with_the_keywords_check_takes():
    with pytest.raises(cosimo.UsageError, match="unknown setting algorithm; check takes: .*rtol"):
        cosimo.check(TWO_MASS, reference=TWO_MASS_REFERENCE, algorithm="jacobi")


def _strip(report):
    """The report without what differs between two runs of the same case: wall-clock times,
    the paths of temporary folders and the process ids of worker processes."""
    report = json.loads(json.dumps(report))
    for case in report["cases"]:
        if case.get("error"):
            case["error"] = re.sub(r"\(pid \d+\)", "(pid)", case["error"])
        case.pop("duration", None)
        case.pop("resultFile", None)
        for phase in case.get("phases", []):
            phase.pop("seconds", None)
        for signal in case.get("signals", []):
            signal.pop("plot", None)
            signal.pop("svg", None)
    return report


def _python(targets, kwargs):
    """(status, stripped report or error text) of cosimo.check."""
    path = targets[0] if len(targets) == 1 else [str(t) for t in targets]
    try:
        report = cosimo.check(path, **kwargs)
    except cosimo.UsageError as e:
        return "refused", str(e)
    except cosimo.Error as e:
        return "fails", str(e)
    return ("ok" if report["passed"] else "fails"), _strip(report)


def _cli(targets, args):
    code, stdout, stderr = run_cli("check", *targets, *args, "--json")
    status = {0: "ok", 2: "refused", 1: "fails", 3: "fails"}.get(code, f"exit {code}")
    return status, (_strip(json.loads(stdout)) if stdout.strip() else stderr)


@pytest.mark.parametrize("keyword", sorted(k for k, w in WALKS.items()
                                           if w[3] in ("report", "refused", "same-report")))
def test_a_keyword_acts_as_its_command_line_option(keyword, tmp_path):
    build, option_args, value, effect = WALKS[keyword]
    targets, base_args, base_kwargs = build(tmp_path)
    if keyword == "reference":
        # Without it, the example has no reference: compare with the reference given
        # against the run refused for the want of one.
        cli = _cli(targets, base_args)
        python = _python(targets, base_kwargs)
        without = _python(targets, {})
        assert python == cli, (python, cli)
        assert python[0] == "ok" and without[0] in ("refused", "fails"), (python, without)
        return
    cli = _cli(targets, base_args + option_args(tmp_path))
    python = _python(targets, {**base_kwargs, keyword: value(tmp_path)})
    without = _python(targets, base_kwargs)
    assert python[0] == cli[0], (python, cli)
    if effect == "report":
        assert python[1] == cli[1], f"{keyword}: Python's report is not the command line's"
        assert python[1] != without[1], f"{keyword}={value(tmp_path)!r} changed nothing"
    elif effect == "same-report":
        # Isolation changes where the FMUs run, not the numbers.
        assert python == without == cli, (python, without)
    elif effect == "refused":
        assert python[0] == "refused" and without[0] == "ok", (python, without)
        assert keyword in python[1], python[1]
        assert "--" not in python[1], f"a Python message names a flag: {python[1]}"


@pytest.mark.parametrize("keyword", sorted(k for k, w in WALKS.items()
                                           if w[3].startswith("writes:")))
def test_a_keyword_writes_what_its_option_writes(keyword, tmp_path):
    build, _, value, effect = WALKS[keyword]
    targets, _, base_kwargs = build(tmp_path)
    folder = value(tmp_path)
    kwargs = {**base_kwargs, keyword: folder}
    # Plots are written for failing signals: the driven oscillator fails without its input.
    _python(targets, kwargs)
    pattern = effect.split(":", 1)[1]
    assert list(folder.rglob(pattern)), f"{keyword}={folder} wrote no {pattern}"


def test_the_old_tolerance_names_still_work_with_a_deprecation_warning():
    targets, _, base = _base()
    with pytest.warns(DeprecationWarning, match="rel_tol is deprecated: use rtol"):
        old = _python(targets, {**base, "rel_tol": 1e-9})
    assert old == _python(targets, {**base, "rtol": 1e-9})
    with pytest.warns(DeprecationWarning, match="abs_tol is deprecated: use atol"):
        old = _python(targets, {**base, "abs_tol": 1e-2})
    assert old == _python(targets, {**base, "atol": 1e-2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cosimo.UsageError, match="rel_tol is the old name of rtol"):
            cosimo.check(TWO_MASS, reference=TWO_MASS_REFERENCE, rtol=1e-3, rel_tol=1e-3)


def test_a_negative_tolerance_is_refused_naming_the_keyword():
    with pytest.raises(cosimo.UsageError, match=r"^rtol must be a finite number >= 0, not -1"):
        cosimo.check(TWO_MASS, reference=TWO_MASS_REFERENCE, rtol=-1.0)
    code, _, stderr = run_cli("check", TWO_MASS, "--reference", TWO_MASS_REFERENCE,
                              "--rtol", "-1")
    assert code == 2 and "--rtol must be a finite number >= 0, not -1" in stderr, stderr
