"""cosimo.sweep gives the command line's summary table (cosimo sweep) for the example study."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest

import cosimo

from conftest import ROOT, read_csv, run_cli

STUDY = ROOT / "fmus" / "two-mass-study.json"
# The text columns of a summary table (the others are numbers).
TEXT = ("status", "error", "check", "check_signal", "check_message")


def as_array(table):
    """The table as a structured array (a DataFrame when pandas is installed)."""
    if isinstance(table, np.ndarray):
        return table
    return table.to_records(index=False)


def assert_same_table(table, path):
    """`table` holds what `cosimo sweep` wrote to `path`, every number bit for bit."""
    header, rows = read_csv(path)
    table = as_array(table)
    assert list(table.dtype.names) == header
    assert len(table) == len(rows)
    for j, name in enumerate(header):
        texts = [row[j] for row in rows]
        column = table[name]
        if name in TEXT:
            assert [c or "" for c in column] == texts, name
        else:
            expected = np.array([float(t) if t else np.nan for t in texts])
            same = (expected == column.astype(float)) | (np.isnan(expected) & np.isnan(column.astype(float)))
            assert same.all(), name


def test_the_table_is_the_command_lines_for_any_workers(tmp_path):
    code, _, stderr = run_cli("sweep", STUDY, "-o", tmp_path / "cli", "--workers", "2", "-q")
    assert code == 0, stderr
    one = cosimo.sweep(STUDY, workers=1)
    assert_same_table(one, tmp_path / "cli" / "summary.csv")
    two = cosimo.sweep(STUDY, output_dir=tmp_path / "py", workers=2)
    assert_same_table(two, tmp_path / "cli" / "summary.csv")
    # The files written are the command line's, byte for byte.
    for name in ("summary.csv", "summary.parquet"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_a_shard_holds_every_nth_run():
    table = as_array(cosimo.sweep(STUDY, shard=(1, 3)))
    assert list(table["index"]) == list(range(1, 60, 3))
    assert list(as_array(cosimo.sweep(STUDY, shard="1/3"))["index"]) == list(table["index"])


def test_a_failed_run_is_a_row(tmp_path):
    study = tmp_path / "faulty.json"
    fmu = ROOT / "target" / "fmus" / "Faulty-fmi2.fmu"
    study.write_text(
        '{"system": "%s", "grid": [{"name": "failure", "values": [0, 2]}],'
        ' "keep": {"summaries": [{"variable": "x", "statistics": ["final"]}]}}' % fmu
    )
    table = as_array(cosimo.sweep(study, workers=1))
    assert list(table["status"]) == ["ok", "failed"]
    assert np.isnan(table["final(x)"][1])
    assert "simulated failure" in table["error"][1]


def test_a_bad_study_raises_the_command_lines_message(tmp_path):
    study = tmp_path / "bad.json"
    study.write_text('{"system": "nowhere.fmu"}')
    code, _, stderr = run_cli("sweep", study, "-o", tmp_path / "out")
    assert code == 2
    with pytest.raises(cosimo.UsageError) as raised:
        cosimo.sweep(study)
    assert str(raised.value) in stderr
    with pytest.raises(cosimo.UsageError, match="shard"):
        cosimo.sweep(STUDY, shard="3/3")


def test_a_study_with_a_check_keeps_its_text_columns(tmp_path):
    fmu = ROOT / "target" / "fmus" / "Faulty-fmi2.fmu"
    code, _, stderr = run_cli("run", fmu, "-o", tmp_path / "reference.csv", "-q")
    assert code == 0, stderr
    study = tmp_path / "checked.json"
    study.write_text(json.dumps({
        "system": str(fmu),
        "grid": [{"name": "failure", "values": [0, 2, 0]}],
        "keep": {"summaries": [{"variable": "x", "statistics": ["final"]}]},
        "check": {"reference": "reference.csv"},
    }))
    code, _, stderr = run_cli("sweep", study, "-o", tmp_path / "cli", "-q")
    assert code == 3, stderr  # run 1 failed: its check is an error
    table = cosimo.sweep(study, output_dir=tmp_path / "py", workers=2)
    assert_same_table(table, tmp_path / "cli" / "summary.csv")
    table = as_array(table)
    assert list(table.dtype.names) == [
        "index", "failure", "final(x)", "status", "error",
        "check", "check_signal", "check_deviation", "check_time", "check_message"]
    assert list(table["status"]) == ["ok", "failed", "ok"]
    assert list(table["check"]) == ["pass", "error", "pass"]
    assert "not compared" in table["check_message"][1]
    assert table["check_deviation"].dtype == np.float64
    assert np.isnan(table["check_deviation"][1])
    assert table["check_deviation"][0] == 0.0
    for name in ("summary.csv", "summary.parquet"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def complete_lines(path):
    """The lines of `path` that end with a line break (a row cut short by a kill does not)."""
    text = path.read_text()
    return text[: text.rfind("\n") + 1].splitlines()


def test_a_killed_sweep_keeps_its_finished_rows_and_resumes(tmp_path):
    """With an output folder, every row is on disk as its run finishes (as `cosimo sweep`
    writes it): a Python sweep killed half-way keeps the finished runs, each as the
    uninterrupted sweep has it, and `cosimo sweep --resume` completes the same table."""
    code, _, stderr = run_cli("sweep", STUDY, "--output-dir", tmp_path / "cli", "--workers", "1", "-q")
    assert code == 0, stderr
    whole = complete_lines(tmp_path / "cli" / "summary.csv")
    out = tmp_path / "py"
    script = f"import cosimo; cosimo.sweep({str(STUDY)!r}, output_dir={str(out)!r}, workers=1)"
    child = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    summary = out / "summary.csv"
    deadline = time.monotonic() + 120
    try:
        while len(complete_lines(summary) if summary.exists() else []) < 1 + 3:
            assert child.poll() is None, f"the sweep ended before it was killed: {child.stderr.read()}"
            assert time.monotonic() < deadline, "no rows after 120 s"
            time.sleep(0.005)
    finally:
        child.kill()
        child.wait()
    kept = complete_lines(summary)
    assert kept[0] == whole[0]
    assert 3 <= len(kept) - 1 < len(whole) - 1, "killed half-way"
    by_index = {line.split(",", 1)[0]: line for line in whole[1:]}
    for line in kept[1:]:
        assert line == by_index[line.split(",", 1)[0]], line
    assert json.loads((out / "sweep.json").read_text())["complete"] is False
    code, _, stderr = run_cli("sweep", STUDY, "--resume", out, "-q")
    assert code == 0, stderr
    assert summary.read_bytes() == (tmp_path / "cli" / "summary.csv").read_bytes()


def test_a_worker_process_does_not_import_numpy():
    """Each isolated run starts a `cosimo-worker`: it loads the library alone, not the package
    and numpy, whose import costs more than a run of the example study."""
    script = ("import sys, cosimo_worker; library = cosimo_worker._library(); "
              "print(library.__name__, 'numpy' in sys.modules, 'cosimo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cosimo._cosimo", "False", "False"]
