"""Result files from Python: simulate(output_file=[...]) writes CSV, MAT, Arrow and Parquet as the
run goes; read_result reads each back as simulate returned the results, and scipy, DyMat and
pyarrow read the same numbers bit for bit; a MAT file in another tool's layout (written here with
scipy) is read with its aliases and parameters; a killed run leaves readable CSV, MAT and Arrow
files."""

import signal
import subprocess
import time

import numpy as np
import pytest
import scipy.io

import cosimo

from conftest import cosimo_bin, fmu

FORMATS = ("csv", "mat", "arrow", "parquet")
INPUTS = [("Float64_continuous_input", np.float64), ("Float32_continuous_input", np.float32),
          ("Int8_input", np.int8), ("UInt64_input", np.uint64), ("Boolean_input", np.bool_),
          ("String_input", object)]


def feedthrough(tmp_path, name="r"):
    """The Feedthrough FMU (FMI 3: every type) driven by inputs whose interpolated Floats are no
    short decimals, written to every format; the result and the files."""
    inputs = np.array(
        [(0.0, 0.1, 0.5, -7, 2**40, True, "a"), (0.3, 1 / 3, 1e-3, 100, 3, False, "b c"),
         (2.0, -1e-300, 2.5, -128, 0, True, "d,e")],
        dtype=[("time", np.float64)] + INPUTS,
    )
    files = [tmp_path / f"{name}.{f}" for f in FORMATS]
    with pytest.warns(UserWarning, match="MAT files hold numbers only: String_output, Binary_output"):
        result = cosimo.simulate(fmu("Feedthrough", 3), input=inputs, step_size=0.05,
                                 output_file=files)
    return result, files


def bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)


def scalar_numbers(result):
    """The numeric scalar fields and the Float array fields of a result."""
    scalars = [n for n in result.dtype.names[1:]
               if result[n].dtype.kind in "fiub" and result[n].ndim == 1]
    arrays = [n for n in result.dtype.names[1:] if result[n].ndim == 2]
    return scalars, arrays


def test_read_result_gives_back_what_simulate_returned_in_every_format(tmp_path):
    result, files = feedthrough(tmp_path)
    scalars, arrays = scalar_numbers(result)
    assert "Int8_output" in scalars and "Float64_array_output" in arrays
    csv, mat, arrow, parquet = (cosimo.read_result(f) for f in files)
    # Arrow and Parquet keep the types: the same array as simulate's.
    for back in (arrow, parquet):
        assert back.dtype == result.dtype
        for name in result.dtype.names:
            if result[name].dtype.kind == "f":
                assert (bits(back[name]) == bits(result[name])).all(), name
            else:
                assert list(back[name]) == list(result[name]), name
    # CSV and MAT hold numbers: the same values as float64.
    for back in (csv, mat):
        np.testing.assert_array_equal(bits(back["time"]), bits(result["time"]))
        for name in scalars:
            assert (bits(back[name]) == bits(result[name].astype(np.float64))).all(), name
    assert (bits(csv["Float64_array_output"]) == bits(result["Float64_array_output"])).all()
    for k in range(6):
        element = f"Float64_array_output[{k + 1}]"
        assert (bits(mat[element]) == bits(result["Float64_array_output"][:, k])).all(), element
    assert list(csv["String_output"]) == list(result["String_output"])
    assert "String_output" not in mat.dtype.names
    assert result["String_output"][-1] != result["String_output"][0]


def test_scipy_and_dymat_read_the_mat_file_bit_for_bit(tmp_path):
    result, files = feedthrough(tmp_path)
    mat = scipy.io.loadmat(files[1], chars_as_strings=False)
    assert ["".join(row).rstrip() for row in mat["Aclass"]] == ["Atrajectory", "1.1", "", "binTrans"]
    names = ["".join(column).rstrip() for column in mat["name"].T]
    info = mat["dataInfo"]
    assert info.shape == (4, len(names)) and names[0] == "time"
    data = {1: mat["data_1"], 2: mat["data_2"]}
    assert (bits(data[2][0]) == bits(result["time"])).all()
    scalars, _ = scalar_numbers(result)
    for name in scalars:
        block, row = info[0, names.index(name)], info[1, names.index(name)]
        values = np.sign(row) * data[block][abs(row) - 1]
        assert (bits(values) == bits(result[name].astype(np.float64))).all(), name
    descriptions = ["".join(column).rstrip() for column in mat["description"].T]
    assert descriptions[0] == "time [s]"

    DyMat = pytest.importorskip("DyMat")
    dymat = DyMat.DyMatFile(str(files[1]))
    for name in scalars:
        assert (bits(dymat.data(name)) == bits(result[name].astype(np.float64))).all(), name
    assert (bits(dymat.abscissa(2, valuesOnly=True)) == bits(result["time"])).all()


def test_pyarrow_reads_the_stream_and_the_parquet_file_with_types_and_metadata(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.ipc
    import pyarrow.parquet

    result, files = feedthrough(tmp_path)
    stream = pa.ipc.open_stream(files[2]).read_all()
    parquet = pyarrow.parquet.read_table(files[3])
    for table in (stream, parquet):
        assert table.column_names == list(result.dtype.names)
        assert table.schema.field("Int8_output").type == pa.int8()
        assert table.schema.field("UInt64_output").type == pa.uint64()
        assert table.schema.field("Boolean_output").type == pa.bool_()
        assert table.schema.field("Float32_continuous_output").type == pa.float32()
        meta = table.schema.field("Float64_continuous_output").metadata
        assert meta[b"causality"] == b"output" and meta[b"fmi_type"] == b"Float64"
        for name in result.dtype.names:
            column = table.column(name).to_numpy(zero_copy_only=False)
            if result[name].ndim == 2:
                column = np.stack(column)
            if result[name].dtype.kind == "f":
                assert (bits(column) == bits(result[name])).all(), name
            else:
                assert list(column) == list(result[name]), name


def test_a_mat_file_in_another_tools_layout_is_read_with_aliases_and_parameters(tmp_path):
    """A dsres file as OpenModelica lays it out (binTrans, Int32 dataInfo, aliases and negated
    aliases, parameters in data_1 at the start and stop time, a repeated time at an event),
    written by scipy."""
    names = ["time", "x", "der(x)", "y_alias", "minus_x", "k", "minus_k"]
    described = ["Simulation time [s]", "position [m]", "", "alias of der(x)", "", "gain", ""]
    info = np.array([[0, 1, 0, -1], [2, 2, 0, 0], [2, 3, 0, 0], [2, 3, 0, 0], [2, -2, 0, 0],
                     [1, 2, 0, 0], [1, -2, 0, 0]], dtype=np.int32).T

    def chars(strings):
        width = max(len(s) for s in strings)
        return np.ascontiguousarray(np.array([list(s.ljust(width)) for s in strings]).T)

    t = np.array([0.0, 0.5, 0.5, 1.0])
    x = np.array([1.0, 0.75, 0.5, 0.25])
    path = tmp_path / "other.mat"
    scipy.io.savemat(path, {
        "Aclass": np.array(["Atrajectory", "1.1        ", "           ", "binTrans   "]),
        "name": chars(names),
        "description": chars(described),
        "dataInfo": info,
        "data_1": np.array([[0.0, 1.0], [3.0, 3.0]]),
        "data_2": np.vstack([t, x, -2 * x]),
    }, format="4")
    back = cosimo.read_result(path)
    assert back.dtype.names == ("time", *names[1:])
    np.testing.assert_array_equal(back["time"], t)
    np.testing.assert_array_equal(back["x"], x)
    np.testing.assert_array_equal(back["y_alias"], -2 * x)
    np.testing.assert_array_equal(back["minus_x"], -x)
    np.testing.assert_array_equal(back["k"], [3.0] * 4)
    np.testing.assert_array_equal(back["minus_k"], [-3.0] * 4)
    # The command line plots it too.
    plot = tmp_path / "x.png"
    done = subprocess.run([cosimo_bin(), "plot", str(path), "--variable", "minus_x", "-o", str(plot)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert plot.stat().st_size > 1000


def test_a_killed_run_leaves_files_that_scipy_and_pyarrow_read(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.ipc

    files = [tmp_path / f"k.{f}" for f in ("csv", "mat", "arrow")]
    args = [cosimo_bin(), "run", str(fmu("Gain", 2)), "--start-value", "cost=0.005",
            "--start-value", "u=0.3", "--start-value", "k=3", "--stop-time", "100",
            "--step-size", "0.01", "--progress", "none"]
    for f in files:
        args += ["--output", str(f)]
    process = subprocess.Popen(args, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not files[0].exists() or len(files[0].read_text().splitlines()) < 40:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "no rows after a minute"
        time.sleep(0.02)
    time.sleep(0.15)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    mat = scipy.io.loadmat(files[1])
    stream = pa.ipc.open_stream(files[2]).read_all()
    mat_time, arrow_time = mat["data_2"][0], stream.column("time").to_numpy()
    assert len(mat_time) >= 39 and len(arrow_time) >= 39
    common = min(len(mat_time), len(arrow_time))
    np.testing.assert_array_equal(mat_time[:common], arrow_time[:common])
    for f in files:
        assert (cosimo.read_result(f)["y"] == 0.3 * 3).all(), f


def test_bad_output_files_are_refused_by_name(tmp_path):
    with pytest.raises(cosimo.UsageError, match=r"r\.txt: has the extension \.txt, which names no result format"):
        cosimo.simulate(fmu("Dahlquist", 2), output_file=tmp_path / "r.txt")
    with pytest.raises(cosimo.UsageError, match="output_file=3: expected a path or a list of paths"):
        cosimo.simulate(fmu("Dahlquist", 2), output_file=3)
    with pytest.raises(cosimo.UsageError, match="a Session writes no result files"):
        cosimo.Session(fmu("Dahlquist", 2), output_file=tmp_path / "r.csv")
    cut = tmp_path / "cut.arrow"
    cosimo.simulate(fmu("Dahlquist", 2), output_file=cut)
    cut.write_bytes(cut.read_bytes()[:-50])
    with pytest.raises(cosimo.UsageError, match="the Arrow stream ends inside a message"):
        cosimo.read_result(cut)
