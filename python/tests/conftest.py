"""Shared fixtures of the Python module's tests: the repository, the project's FMUs, the
cosimo command line to compare with.

`cargo xtask test` runs this suite with the venv's python after `cargo test`, with
COSIMO_BIN set to the cosimo executable it built; the FMUs are packed by `cargo test`
(fmu_pack) into target/fmus.
"""

import csv
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FMUS = ROOT / "target" / "fmus"


def _log_skip(nodeid: str, longrepr) -> None:
    """Append a skip to the suite's skip log (COSIMO_SKIP_LOG, set by `cargo xtask test`, which
    counts the skips at the end and fails on those it should not have had: see
    tests/common/skip.rs). A missing FMPy is category "fmpy"; pytest's other skips "pytest"."""
    log = os.environ.get("COSIMO_SKIP_LOG")
    if not log:
        return
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    reason = " ".join(str(reason).split())
    category = "fmpy" if "could not import 'fmpy'" in reason else "pytest"
    with open(log, "a") as f:
        f.write(f"{category}\tpython::{nodeid}\t{reason}\n")


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _log_skip(report.nodeid, report.longrepr)


def pytest_collectreport(report):
    if report.skipped:
        _log_skip(report.nodeid, report.longrepr)


def fmu(model: str, version: int) -> Path:
    path = FMUS / f"{model}-fmi{version}.fmu"
    if not path.exists():
        pytest.fail(f"{path} is missing: pack the FMUs first (cargo run -p fmu-pack, or cargo xtask test)")
    return path


def cosimo_bin() -> str:
    candidates = [os.environ.get("COSIMO_BIN")]
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        candidates.append(str(Path(target, "debug", "cosimo")))
    candidates += [str(ROOT / "target" / "debug" / "cosimo"), shutil.which("cosimo")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("no cosimo executable: set COSIMO_BIN (cargo xtask test does)")


def run_cli(*args, cwd=None):
    """Run the cosimo command line; returns (exit code, stdout, stderr)."""
    done = subprocess.run([cosimo_bin(), *map(str, args)], capture_output=True, text=True, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def cli_error(*args) -> str:
    """The message the command line prints for a failing run (without `error: `)."""
    code, _, stderr = run_cli(*args)
    assert code != 0, stderr
    lines = [l for l in stderr.splitlines() if l.startswith("error: ")]
    assert lines, stderr
    return stderr[stderr.index("error: ") + len("error: "):].rstrip("\n")


def read_csv(path: Path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def assert_same_as_csv(result: np.ndarray, path: Path):
    """`result` holds exactly what the CLI wrote to `path`: the same columns and every value
    bit for bit (the CLI writes floats in their shortest round-trip form)."""
    header, rows = read_csv(path)
    assert list(result.dtype.names) == header
    assert len(result) == len(rows), f"{len(result)} rows, the CLI wrote {len(rows)}"
    for j, name in enumerate(header):
        column = result[name]
        texts = [row[j] for row in rows]
        if column.dtype.kind == "f":
            if column.ndim == 2:
                expected = np.array([[float(x) for x in t.split(" ")] for t in texts])
            else:
                expected = np.array([float(t) for t in texts])
            assert expected.shape == column.shape, name
            same = (expected == column) | (np.isnan(expected) & np.isnan(column))
            assert same.all(), f"{name}: first difference at row {np.argmin(same.reshape(len(texts), -1).all(axis=1))}"
        elif column.dtype.kind == "b":
            assert [("1" if v else "0") for v in column] == texts, name
        elif column.dtype.kind in "iu":
            assert [str(int(v)) for v in column] == texts, name
        else:
            mine = [v.hex() if isinstance(v, bytes) else str(v) for v in column]
            assert mine == texts, name
