"""The API around simulate: inputs as arrays, hooks, Ctrl-C, the GIL, System, inspect, check."""

import _thread
import threading
import time

import numpy as np
import pytest

import cosimo

from conftest import ROOT, assert_same_as_csv, fmu, run_cli

EXAMPLE = ROOT / "fmus" / "two-mass-force-force.json"
INPUTS = ["Float64_continuous_input", "Float64_discrete_input", "Int32_input", "Boolean_input"]


def long_run(**arguments):
    """The two-mass oscillator over a long time: seconds of wall time in a debug build."""
    return cosimo.simulate(EXAMPLE, stop_time=200.0, output_interval=1.0, **arguments)


def test_the_result_is_a_structured_array_with_time_first():
    result = cosimo.simulate(fmu("Oscillator", 3), stop_time=1.0, step_size=0.01)
    assert result.dtype.names[0] == "time"
    assert result["time"][0] == 0.0 and result["time"][-1] == 1.0
    assert len(result) == 101
    assert result["x"].dtype == np.float64


@pytest.mark.parametrize("version", [2, 3])
def test_inputs_as_an_array_equal_inputs_from_a_csv_file(version, tmp_path):
    path = fmu("Feedthrough", version)
    inputs = np.array(
        [(0.0, 0.0, 0.0, 0, False), (0.5, 2.5, 1.0, 3, True), (1.0, 4.0, 4.0, 4, True)],
        dtype=[("time", np.float64)] + [(name, t) for name, t in
                                         zip(INPUTS, (np.float64, np.float64, np.int32, np.bool_))],
    )
    csv = tmp_path / "inputs.csv"
    csv.write_text(
        "time," + ",".join(INPUTS) + "\n0,0,0,0,0\n0.5,2.5,1,3,1\n1,4,4,4,1\n"
    )
    outputs = ["Float64_continuous_output", "Float64_discrete_output", "Int32_output",
               "Boolean_output"]
    from_array = cosimo.simulate(path, stop_time=1.0, step_size=0.1, input=inputs, output=outputs)
    from_file = cosimo.simulate(path, stop_time=1.0, step_size=0.1, input=csv, output=outputs)
    assert from_array.tobytes() == from_file.tobytes()
    # The continuous input is interpolated, the others held: as the CLI does it.
    out = tmp_path / "cli.csv"
    args = ["run", path, "--quiet", "--stop-time", "1", "--step-size", "0.1",
            "--input-file", csv, "-o", out]
    for name in outputs:
        args += ["--output-variable", name]
    code, _, stderr = run_cli(*args)
    assert code == 0, stderr
    assert_same_as_csv(from_array, out)
    assert len(np.unique(from_array["Float64_continuous_output"])) > 3
    assert set(from_array["Float64_discrete_output"]) <= {0.0, 1.0, 4.0}


def test_an_input_array_without_time_is_refused():
    bad = np.zeros(3, dtype=[("u", float)])
    with pytest.raises(cosimo.UsageError, match="'time'"):
        cosimo.simulate(fmu("Feedthrough", 3), input=bad)


def test_the_observer_sees_every_row_and_progress_reaches_the_end():
    rows, times = [], []
    result = cosimo.simulate(
        EXAMPLE, observer=rows.append, progress=lambda t, fraction: times.append((t, fraction))
    )
    assert len(rows) == len(result)
    assert [row["time"] for row in rows] == list(result["time"])
    assert rows[-1]["mass1.x"] == result["mass1.x"][-1]
    assert times and times[-1] == (1.0, 1.0)


def test_an_observer_that_raises_stops_the_run_with_the_rows_so_far():
    def observer(row):
        if row["time"] >= 0.5:
            raise ValueError("enough")

    with pytest.raises(ValueError, match="enough") as raised:
        cosimo.simulate(EXAMPLE, observer=observer)
    rows = raised.value.result
    assert 0 < len(rows) < 101 and rows["time"][-1] >= 0.5


def test_ctrl_c_stops_the_run_and_keeps_the_rows_so_far():
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(cosimo.Interrupted) as raised:
            long_run()
    finally:
        timer.cancel()
    rows = raised.value.result
    assert len(rows) > 0
    assert rows["time"][-1] < 200.0
    assert isinstance(raised.value, KeyboardInterrupt)


def test_the_gil_is_released_during_a_run():
    counts = []
    done = threading.Event()

    def count():
        n = 0
        while not done.is_set():
            n += 1
            time.sleep(0.001)
        counts.append(n)

    thread = threading.Thread(target=count)
    thread.start()
    started = time.perf_counter()
    try:
        long_run()
    finally:
        done.set()
        thread.join()
    elapsed = time.perf_counter() - started
    # A thread that only ran between GIL switches would count a handful; a free one counts
    # about one per millisecond.
    assert elapsed > 0.2, "the run is too short to tell"
    assert counts[0] > 0.2 * elapsed * 1000, (counts, elapsed)


def test_a_system_built_in_code_equals_the_system_file():
    fmus = ROOT / "target" / "fmus"
    system = cosimo.System(start_time=0, stop_time=1, step_size=1e-3, output_interval=1e-2,
                           algorithm="jacobi", extrapolationOrder=0)
    system.add_component("mass1", fmus / "Oscillator-fmi2.fmu",
                         start_values={"m": 1, "c": 1000, "d": 10, "x0": 0.1, "v0": 0})
    system.add_component("spring", fmus / "CouplingSpring-fmi2.fmu",
                         start_values={"c1": 1000, "d1": 10, "c3": 0, "d3": 0})
    system.add_component("mass2", fmus / "Oscillator-fmi3.fmu",
                         start_values={"m": 1, "c": 1000, "d": 10, "x0": 0, "v0": 0})
    for source, target in [("mass1.x", "spring.x1"), ("mass1.v", "spring.v1"),
                           ("mass2.x", "spring.x2"), ("mass2.v", "spring.v2"),
                           ("spring.F1", "mass1.F"), ("spring.F2", "mass2.F")]:
        system.connect(source, target)
    ours = system.simulate()
    file = cosimo.simulate(EXAMPLE)
    assert ours.tobytes() == file.tobytes()
    implicit = system.simulate(algorithm="implicit")
    assert not np.array_equal(implicit["mass1.x"], ours["mass1.x"])


def test_inspect_returns_the_model_description():
    md = cosimo.inspect(fmu("Oscillator", 3))
    assert md["fmiVersion"].startswith("3")
    names = [v["name"] for v in md["variables"]]
    assert "x" in names and "F" in names
    ssp = cosimo.inspect(ROOT / "fmus" / "two-mass-force-force.ssp")
    assert [c["name"] for c in ssp["components"]] == ["mass1", "spring", "mass2"]


def test_check_returns_the_report(tmp_path):
    report = cosimo.check(ROOT / "fmus" / "two-mass-force-force.json",
                          reference=ROOT / "tests" / "data" / "examples" / "two-mass-force-force.json.csv")
    assert report["cases"][0]["status"] == "passed", report
    assert "summary" in report


def test_check_writes_the_html_report_where_html_names(tmp_path):
    case = ROOT / "fmus" / "two-mass-force-force.json"
    reference = ROOT / "tests" / "data" / "examples" / "two-mass-force-force.json.csv"
    report = tmp_path / "report"
    cosimo.check(case, reference=reference, html=report)
    index = (report / "index.html").read_text()
    assert "two-mass-force-force" in index
    # A folder that exists and is not a report is refused, as `cosimo check --html` does.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(cosimo.UsageError):
        cosimo.check(case, reference=reference, html=other)


def test_isolated_runs_use_the_cosimo_executable_and_give_the_same_rows(monkeypatch):
    from conftest import cosimo_bin

    monkeypatch.setenv("COSIMO_WORKER", cosimo_bin())
    isolated = cosimo.simulate(EXAMPLE, isolate=True)
    assert isolated.tobytes() == cosimo.simulate(EXAMPLE).tobytes()


def test_isolated_runs_need_no_cosimo_executable_after_pip_install(monkeypatch):
    # The package's cosimo-worker script (installed next to the venv's python) hosts the FMUs.
    monkeypatch.delenv("COSIMO_WORKER", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    isolated = cosimo.simulate(EXAMPLE, isolate=True, worker_processes=1)
    assert isolated.tobytes() == cosimo.simulate(EXAMPLE).tobytes()


def test_a_worker_that_cannot_start_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setenv("COSIMO_WORKER", str(tmp_path / "no-such-program"))
    with pytest.raises(cosimo.Error, match="no-such-program"):
        cosimo.simulate(EXAMPLE, isolate=True)


def test_fmi_call_logging_reaches_stderr(capfd):
    cosimo.simulate(fmu("Oscillator", 2), stop_time=0.01, step_size=0.01, log_fmi_calls=True)
    assert "fmi2DoStep" in capfd.readouterr().err
