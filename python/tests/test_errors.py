"""Errors raise the exception of their kind with the command line's message."""

import numpy as np
import pytest

import cosimo

from conftest import ROOT, cli_error, fmu

EXAMPLE = ROOT / "fmus" / "two-mass-force-force.json"


def test_the_hierarchy():
    for kind in (cosimo.UsageError, cosimo.FmuError, cosimo.NumericsError, cosimo.InternalError):
        assert issubclass(kind, cosimo.Error)
    assert issubclass(cosimo.Interrupted, KeyboardInterrupt)


def test_a_missing_file_is_a_usage_error_with_the_cli_message(tmp_path):
    missing = tmp_path / "nothing.fmu"
    with pytest.raises(cosimo.UsageError) as raised:
        cosimo.simulate(missing)
    assert str(raised.value) == cli_error("run", missing)


def test_a_wrong_variable_is_a_usage_error_naming_the_python_argument():
    path = fmu("Oscillator", 3)
    with pytest.raises(cosimo.UsageError) as raised:
        cosimo.simulate(path, start_values={"nonsense": 1})
    cli = cli_error("run", path, "--start-value", "nonsense=1")
    assert cli.startswith("--start-value nonsense: "), cli
    # The command line's message, with the option named as the Python argument.
    assert str(raised.value) == cli.replace("--start-value nonsense", 'start_values["nonsense"]')


def test_a_wrong_setting_of_a_system_names_the_python_argument():
    with pytest.raises(cosimo.UsageError) as raised:
        cosimo.simulate(EXAMPLE, step_size=-1.0)
    cli = cli_error("run", EXAMPLE, "--step-size=-1")
    assert "--step-size" in cli, cli
    assert str(raised.value) == cli.replace("--step-size", "step_size")


def test_messages_name_python_arguments_not_command_line_options():
    with pytest.raises(cosimo.UsageError) as raised:
        cosimo.simulate(EXAMPLE, threads=2)
    message = str(raised.value)
    assert message == (
        "threads sets the worker threads of parallel=True: add parallel=True or drop threads"
    ), message
    with pytest.raises(cosimo.UsageError) as raised:
        cosimo.simulate(fmu("Oscillator", 3), output=["nonsense"])
    assert "--" not in str(raised.value), str(raised.value)
    assert str(raised.value).startswith("output "), str(raised.value)


def test_an_unknown_setting_is_refused_by_name():
    with pytest.raises(cosimo.UsageError, match="unknown setting extrapolation_ordr"):
        cosimo.simulate(EXAMPLE, extrapolation_ordr=2)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"algorithm": "newton"}, "algorithm=\"newton\": expected one of"),
        ({"extrapolation_order": 4}, "extrapolation_order=4"),
        ({"adaptive": "yes"}, "adaptive='yes': expected True or False"),
        ({"worker_memory": "lots"}, "^worker_memory lots: expected a size"),
        ({"fmi_version": 4}, "fmi_version=4"),
    ],
)
def test_bad_values_of_settings_are_refused(settings, message):
    with pytest.raises(cosimo.UsageError, match=message):
        cosimo.simulate(EXAMPLE, **settings)


def test_a_failing_fmu_is_an_fmu_error_with_the_rows_so_far():
    path = fmu("Faulty", 2)
    args = {"start_values": {"failure": 3}, "stop_time": 1.0, "step_size": 0.01}
    with pytest.raises(cosimo.FmuError) as raised:
        cosimo.simulate(path, **args)
    assert str(raised.value) == cli_error(
        "run", path, "--start-value", "failure=3", "--stop-time", "1", "--step-size", "0.01",
        "-o", "/dev/null",
    )
    assert raised.value.time is not None
    rows = raised.value.result
    assert len(rows) > 0 and rows["time"][-1] <= raised.value.time


def test_a_diverging_run_is_a_numerics_error():
    with pytest.raises(cosimo.NumericsError) as raised:
        cosimo.simulate(EXAMPLE, divergence_limit=1e-3)
    assert "1e-3" in str(raised.value) or "0.001" in str(raised.value)
    assert isinstance(raised.value.result, np.ndarray)


def test_inspect_and_check_raise_too(tmp_path):
    with pytest.raises(cosimo.UsageError):
        cosimo.inspect(tmp_path / "nothing.fmu")
    with pytest.raises(cosimo.UsageError, match="unknown setting"):
        cosimo.check(EXAMPLE, nonsense=1)


def test_arguments_of_the_wrong_kind_are_refused():
    with pytest.raises(cosimo.UsageError, match="start_values"):
        cosimo.simulate(EXAMPLE, start_values=[("mass1.x0", 1.0)])
    with pytest.raises(cosimo.UsageError, match="output="):
        cosimo.simulate(EXAMPLE, output="mass1.x")
    with pytest.raises(cosimo.UsageError, match="progress="):
        cosimo.simulate(EXAMPLE, progress=3)
