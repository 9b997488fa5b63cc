"""cosimo: an FMI 2.0 / 3.0 co-simulation master, from Python.

Run one FMU, a system file (``.json``) or an SSP with :func:`simulate` and get the results as
a numpy structured array, in FMPy's conventions; build a system in code with :class:`System`;
read what an FMU declares with :func:`inspect`; compare with references with :func:`check`.

Runs release the GIL; Ctrl-C stops a run and raises :class:`Interrupted` holding the rows so
far; every cosimo error is a :class:`Error` (:class:`UsageError`, :class:`FmuError`,
:class:`NumericsError`, :class:`InternalError`) with the message the command line prints.

Hold the wheel with :class:`Session`: step a system, read and set its values between steps,
save and restore the whole system; ``real_time=1`` paces a run to the wall clock.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _cosimo

__version__ = _cosimo.__version__

__all__ = [
    "simulate",
    "read_result",
    "inspect",
    "check",
    "sweep",
    "System",
    "Session",
    "Snapshot",
    "Error",
    "UsageError",
    "FmuError",
    "NumericsError",
    "InternalError",
    "Interrupted",
    "SETTINGS",
]

#: The keyword settings :func:`simulate` takes besides its named arguments.
SETTINGS = tuple(_cosimo.settings())

PathLike = Union[str, "os.PathLike[str]"]


class Error(Exception):
    """A cosimo error; ``str(error)`` is the message the command line prints.

    ``result`` holds the rows recorded before the failure (a structured array, possibly
    empty) and ``time`` the simulation time of the failure (``None`` before the run started).
    """

    def __init__(self, message: str, result: Optional[np.ndarray] = None,
                 time: Optional[float] = None):
        super().__init__(message)
        self.result = result
        self.time = time


class UsageError(Error):
    """Bad input: a wrong option, variable name or value, a broken file (CLI exit code 2)."""


class FmuError(Error):
    """An FMU failed: an FMI call returned Error or Fatal, a step was discarded, a worker
    process died (CLI exit code 1)."""


class NumericsError(Error):
    """The simulation failed numerically: a corrector that does not converge, a non-finite
    output, a diverging run (CLI exit code 1)."""


class InternalError(Error):
    """A bug in cosimo: please report it."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (KeyboardInterrupt) stopped a run; ``result`` holds the rows so far."""

    def __init__(self, result: np.ndarray):
        super().__init__("the run was interrupted; the rows so far are in .result")
        self.result = result


_ERRORS = {
    "UsageError": UsageError,
    "FmuError": FmuError,
    "NumericsError": NumericsError,
    "InternalError": InternalError,
}


def _text(value: Any) -> str:
    """A start value as the command line writes it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (str, bytes)):
        return value.decode() if isinstance(value, bytes) else value
    if isinstance(value, (list, tuple, np.ndarray)):
        return " ".join(_text(v) for v in np.asarray(value).ravel().tolist())
    raise UsageError(f"start value {value!r}: expected a number, a bool, a string or a list")


def _csv_field(text: str) -> str:
    """A CSV field that reads back as ``text``: quoted (inner quotes doubled) when it holds a
    comma, a quote or a line break, as the ``csv`` crate reads it."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _input_csv(array: np.ndarray) -> str:
    """A structured input array (FMPy's convention: a ``time`` field and one per input) as
    the CSV text of an input file, exactly (floats in their shortest round-trip form). Field
    names and text are quoted where CSV needs it (FMI 2 array elements are named ``u[1,2]``)."""
    names = array.dtype.names
    if not names or names[0] != "time":
        raise UsageError(
            "input: expected a numpy structured array whose first field is 'time' and whose "
            "other fields are named after the inputs (FMPy's convention), or a CSV file"
        )

    def cell(value: Any) -> str:
        if isinstance(value, np.ndarray):
            return " ".join(cell(v) for v in value.ravel())
        if isinstance(value, (bool, np.bool_)):
            return "true" if value else "false"
        if isinstance(value, (float, np.floating)):
            return repr(float(value))
        if isinstance(value, bytes):
            value = value.decode()
        return _csv_field(str(value))

    lines = [",".join(_csv_field(name) for name in names)]
    for row in array:
        lines.append(",".join(cell(row[name]) for name in names))
    return "\n".join(lines) + "\n"


def _result(columns: List[str], time: np.ndarray, values: List[Any]) -> np.ndarray:
    """The recorded columns as a structured array: ``time`` and one field per column."""
    fields: List[tuple] = [("time", np.float64)]
    for name, column in zip(columns, values):
        if isinstance(column, np.ndarray):
            if column.ndim == 2:
                fields.append((name, column.dtype, (column.shape[1],)))
            else:
                fields.append((name, column.dtype))
        else:
            fields.append((name, object))
    result = np.empty(len(time), dtype=fields)
    result["time"] = time
    for name, column in zip(columns, values):
        if isinstance(column, np.ndarray):
            result[name] = column
        else:
            for i, value in enumerate(column):
                result[name][i] = value
    return result


def _worker_program() -> str:
    """The program of worker processes (isolated runs): $COSIMO_WORKER, else this package's
    ``cosimo-worker`` script (next to the interpreter, or on the PATH), else ``cosimo``."""
    program = os.environ.get("COSIMO_WORKER")
    if program:
        return program
    script = Path(sys.executable).parent / "cosimo-worker"
    if script.is_file():
        return str(script)
    return shutil.which("cosimo-worker") or shutil.which("cosimo") or "cosimo"


def _run(request: Dict[str, Any], progress: Optional[Callable[[float, float], Any]],
         observer: Optional[Callable[[Dict[str, Any]], Any]]) -> np.ndarray:
    if progress is not None and not callable(progress):
        raise UsageError(f"progress={progress!r}: expected a callable progress(time, fraction)")
    if observer is not None and not callable(observer):
        raise UsageError(f"observer={observer!r}: expected a callable observer(row)")
    out = _cosimo.simulate(request, progress, observer)
    result = _result(out["columns"], out["time"], out["values"])
    for warning in out["warnings"]:
        import warnings

        warnings.warn(warning, stacklevel=3)
    raised = out["raised"]
    if out["interrupted"]:
        raise Interrupted(result) from raised
    if raised is not None:
        try:
            raised.result = result
        except Exception:  # pragma: no cover - exceptions without a __dict__
            pass
        raise raised
    if out["error"] is not None:
        kind, message, time = out["error"]
        raise _ERRORS.get(kind, Error)(message, result, time)
    return result


def _request(path: Union[PathLike, Sequence[PathLike]], start_values: Optional[Mapping[str, Any]],
             start_time: Optional[float], stop_time: Optional[float], step_size: Optional[float],
             output_interval: Optional[float], output: Optional[Sequence[str]],
             input: Optional[Union[np.ndarray, PathLike]], algorithm: Optional[str],
             settings: Dict[str, Any]) -> Dict[str, Any]:
    """The request dict of :func:`simulate` and :class:`Session`."""
    if start_values is not None and not isinstance(start_values, Mapping):
        raise UsageError(
            f"start_values: expected a dict {{name: value}}, not {type(start_values).__name__}"
        )
    if isinstance(path, (str, os.PathLike)):
        targets = [os.fspath(path)]
    else:
        targets = [os.fspath(p) for p in path]
    request: Dict[str, Any] = {
        "targets": targets,
        "start_values": [f"{name}={_text(value)}" for name, value in (start_values or {}).items()],
        "start_time": start_time,
        "stop_time": stop_time,
        "step_size": step_size,
        "output_interval": output_interval,
        "output": list(output) if output is not None else None,
        "algorithm": algorithm,
    }
    if isinstance(output, str):
        raise UsageError(f"output={output!r}: expected a list of variable names")
    if input is not None:
        if isinstance(input, np.ndarray):
            request["input_text"] = _input_csv(input)
        elif isinstance(input, (str, os.PathLike)):
            request["input_file"] = os.fspath(input)
        else:
            raise UsageError(
                f"input: expected a numpy structured array or the path of a CSV file, not {type(input).__name__}"
            )
    for key, value in settings.items():
        if key in request:  # pragma: no cover - Python refuses duplicates itself
            raise UsageError(f"{key} given twice")
        request[key] = value
    if request.get("output_file") is not None:
        files = request["output_file"]
        if isinstance(files, (str, os.PathLike)):
            files = [files]
        try:
            request["output_file"] = [os.fspath(f) for f in files]
        except TypeError:
            raise UsageError(
                f"output_file={request['output_file']!r}: expected a path or a list of paths"
            ) from None
    if "fmi_version" in request and request["fmi_version"] is not None:
        request["fmi_version"] = str(request["fmi_version"])
    request.setdefault("worker_program", _worker_program())
    return request


def simulate(
    path: Union[PathLike, Sequence[PathLike]],
    start_values: Optional[Mapping[str, Any]] = None,
    start_time: Optional[float] = None,
    stop_time: Optional[float] = None,
    step_size: Optional[float] = None,
    output_interval: Optional[float] = None,
    output: Optional[Sequence[str]] = None,
    input: Optional[Union[np.ndarray, PathLike]] = None,
    algorithm: Optional[str] = None,
    progress: Optional[Callable[[float, float], Any]] = None,
    observer: Optional[Callable[[Dict[str, Any]], Any]] = None,
    **settings: Any,
) -> np.ndarray:
    """Simulate an FMU, a system file (``.json``) or an SSP and return the results.

    Arguments follow FMPy's ``simulate_fmu``:

    - ``path``: a ``.fmu`` file or unpacked folder, a system file, an SSP (``.ssp`` file or
      folder, ``.ssd``), or a list of ``name=path`` components joined with
      ``connections=["a.y=b.u", ...]``.
    - ``start_values``: ``{name: value}``; in systems ``{"component.name": value}``. Arrays as
      lists or numpy arrays.
    - ``start_time``, ``stop_time``, ``step_size`` (the communication step),
      ``output_interval``: default from the system file or the FMU's default experiment.
    - ``output``: the variables to record (default: every output).
    - ``input``: a numpy structured array with a ``time`` field and one field per input
      (FMPy's convention), or the path of a CSV input file.
    - ``algorithm``: ``"jacobi"``, ``"gauss-seidel"``, ``"implicit"``, ``"constraint"`` or
      ``"rim"`` (systems).
    - ``progress``: ``progress(time, fraction)``, called about every 50 ms and at the end.
    - ``observer``: ``observer(row)`` at every output point, ``row`` a dict of ``time`` and
      the recorded values. An exception it raises stops the run and propagates, with the
      rows so far in its ``result`` attribute.
    - ``settings``: the command line's options of ``cosimo run`` with underscores
      (``extrapolation_order=2``, ``adaptive=True``, ``rtol=1e-4``, ``parallel=True``,
      ``isolate=True``, ``tolerance=1e-6``, ...; see :data:`SETTINGS`). An unknown name
      raises :class:`UsageError`. Model Exchange: ``interface="me"`` integrates FMUs that
      have both interfaces with cosimo's solver (``solver="bdf"`` or ``"rk45"``,
      ``solver_rtol``, ``solver_atol``); an FMU with Model Exchange only always is.

    - ``output_file``: a path, or a list of paths, to write the results to as the run goes
      (besides returning them); the extension picks the format: ``.csv``, ``.mat`` (MAT v4 in
      the layout Dymola and OpenModelica write, for scipy, DyMat, MATLAB), ``.arrow`` (an
      Arrow IPC stream: ``pyarrow.ipc.open_stream``) or ``.parquet``. A run that fails keeps
      its rows so far in every file; :func:`read_result` reads them back.

    Returns a numpy structured array: ``time`` and one field per recorded variable (Float
    arrays as sub-arrays, strings and binaries as objects). Raises :class:`Error` (with the
    rows so far in ``result``) or :class:`Interrupted` on Ctrl-C.
    """
    request = _request(path, start_values, start_time, stop_time, step_size, output_interval,
                       output, input, algorithm, settings)
    return _run(request, progress, observer)


def read_result(path: PathLike) -> np.ndarray:
    """Read a result file, as :func:`simulate` returns the results: ``.csv``, ``.mat`` (cosimo's,
    Dymola's or OpenModelica's, with their aliases and parameters), ``.arrow`` (stream or
    file) or ``.parquet``. Arrow and Parquet keep the variables' types; MAT and CSV hold
    numbers, so integers and Booleans come back as float64 (and CSV arrays as sub-arrays,
    MAT arrays as one field per element, ``y[1]``, ``y[2]``, ...)."""
    out, error = _cosimo.read_result(os.fspath(path))
    _warn_or_raise([], error, stacklevel=3)
    return _result(out["columns"], out["time"], out["values"])


def _warn_or_raise(messages: List[str], error: Optional[Tuple[str, str]],
                   stacklevel: int = 2) -> None:
    """Pass the compiled half's warnings on (``stacklevel`` counted from here), then raise its
    error ``(kind, message)`` as the matching exception, if there is one."""
    for warning in messages:
        import warnings

        warnings.warn(warning, stacklevel=stacklevel)
    if error is not None:
        kind, message = error
        raise _ERRORS.get(kind, Error)(message)


def inspect(path: PathLike, ssd: Optional[str] = None) -> Dict[str, Any]:
    """What an FMU declares, as ``cosimo inspect --json`` prints it (``fmiVersion``,
    ``modelName``, capabilities, ``defaultExperiment``, ``variables``, ...), as plain dicts
    and lists; for an SSP its system (components, connections, experiment)."""
    text, messages, error = _cosimo.inspect(os.fspath(path), ssd)
    _warn_or_raise(messages, error, stacklevel=3)
    return json.loads(text)


def check(
    targets: Union[PathLike, Sequence[PathLike]],
    reference: Optional[PathLike] = None,
    input_file: Optional[PathLike] = None,
    settings: Optional[PathLike] = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    range_tol: Optional[float] = None,
    time_tol: Optional[float] = None,
    start_time: Optional[float] = None,
    stop_time: Optional[float] = None,
    step_size: Optional[float] = None,
    output_interval: Optional[float] = None,
    compare_at: Optional[str] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Simulate cases and compare them with their references, as ``cosimo check`` does;
    returns the comparison report (``schemas/check-report.schema.json``) as a dict.

    The keywords are ``cosimo check``'s options: ``rtol`` and ``atol`` (formerly ``rel_tol``
    and ``abs_tol``, which still work with a DeprecationWarning), ``range_tol``, ``time_tol``,
    ``compare_at`` (``"reference"``: at the reference's time points, the default; ``"all"``),
    and in ``options``: ``plot=DIR`` (a PNG per failing signal), ``html=DIR`` (the static
    HTML report, as ``--html DIR``), ``results=DIR``, ``isolate``, ``call_timeout``,
    ``worker_memory``."""
    rtol = _renamed(options, "rel_tol", "rtol", rtol)
    atol = _renamed(options, "abs_tol", "atol", atol)
    return _check(targets, reference, input_file, settings, rtol, atol, range_tol,
                  time_tol, start_time, stop_time, step_size, output_interval, compare_at,
                  options)


def _renamed(options: Dict[str, Any], old: str, new: str, value: Any) -> Any:
    """``value`` of keyword ``new``, or the deprecated ``old`` spelling popped from
    ``options`` with a DeprecationWarning; both given is an error."""
    if old not in options:
        return value
    if value is not None:
        raise UsageError(f"{old} is the old name of {new}: give {new} only")
    import warnings

    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)
    return options.pop(old)


def _check(targets, reference, input_file, settings, rtol, atol, range_tol, time_tol,
           start_time, stop_time, step_size, output_interval, compare_at, options):
    if isinstance(targets, (str, os.PathLike)):
        targets = [targets]
    request = {
        "targets": [os.fspath(t) for t in targets],
        "reference": os.fspath(reference) if reference is not None else None,
        "input_file": os.fspath(input_file) if input_file is not None else None,
        "settings": os.fspath(settings) if settings is not None else None,
        "rtol": rtol,
        "atol": atol,
        "range_tol": range_tol,
        "time_tol": time_tol,
        "start_time": start_time,
        "stop_time": stop_time,
        "step_size": step_size,
        "output_interval": output_interval,
        "compare_at": compare_at,
    }
    for key, value in options.items():
        request[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
    request.setdefault("worker_program", _worker_program())
    text, error, messages = _cosimo.check(request)
    _warn_or_raise(messages, error, stacklevel=4)
    return json.loads(text)


def sweep(
    study: PathLike,
    output_dir: Optional[PathLike] = None,
    workers: Optional[int] = None,
    shard: Optional[Union[str, Tuple[int, int]]] = None,
) -> Any:
    """Make the runs of a study file (``schemas/study.schema.json``) as ``cosimo sweep`` does,
    on ``workers`` threads (default: one per core), and return the summary table: a pandas
    DataFrame when pandas is installed, else a numpy structured array, with the columns
    ``index``, the parameters, the summaries (NaN where a run gave none), ``status`` and
    ``error``, a row per run in index order. With ``output_dir`` the table (CSV, Parquet) and
    the kept results are written there too; ``shard=(i, n)`` or ``"i/n"`` makes only every
    n-th run from run i. A study with a ``check`` adds the columns ``check``,
    ``check_signal`` and ``check_message`` (text) and ``check_deviation`` and ``check_time``
    (numbers). Each run hosts its FMUs in worker processes (a crash, an abort or a hang fails
    that run only) unless the study says ``"isolate": false``. Ctrl-C stops the sweep (looked
    at as runs finish) and raises :class:`Interrupted` with the finished rows in ``.result``."""
    if isinstance(shard, tuple):
        shard = f"{shard[0]}/{shard[1]}"
    # Runs host their FMUs in worker processes unless the study says "isolate": false; this
    # process is Python, so the workers are the program _worker_program finds.
    given = os.environ.get("COSIMO_WORKER")
    if not given:
        os.environ["COSIMO_WORKER"] = _worker_program()
    try:
        out = _cosimo.sweep(
            os.fspath(study),
            os.fspath(output_dir) if output_dir is not None else None,
            0 if workers is None else int(workers),
            shard,
        )
    finally:
        if not given:
            os.environ.pop("COSIMO_WORKER", None)
    _warn_or_raise([], out["error"])
    table = _summary_table(out["columns"], out["rows"])
    if out["raised"] is not None:
        if isinstance(out["raised"], KeyboardInterrupt):
            raise Interrupted(table) from out["raised"]
        raise out["raised"]
    return table


# The text columns of a summary table (all others but ``index`` are numbers).
_SUMMARY_TEXT = ("status", "error", "check", "check_signal", "check_message")
# The columns after the summaries, without and with a check.
_SUMMARY_TAIL = ["status", "error"]
_SUMMARY_CHECKED_TAIL = _SUMMARY_TAIL + ["check", "check_signal", "check_deviation",
                                         "check_time", "check_message"]


def _summary_table(columns: List[str], rows: List[tuple]) -> Any:
    """A sweep's rows as a DataFrame (pandas installed) or a structured array: ``index`` an
    integer, the parameters, summaries and check numbers floats (NaN where a run gave none),
    the status, error and check texts strings (None where empty)."""
    tail = (_SUMMARY_CHECKED_TAIL if columns[-len(_SUMMARY_CHECKED_TAIL):] == _SUMMARY_CHECKED_TAIL
            else _SUMMARY_TAIL)
    # Parameters and summaries by position (a parameter may be named like a text column).
    first_tail = len(columns) - len(tail)
    text = {k for k in range(first_tail, len(columns)) if columns[k] in _SUMMARY_TEXT}
    numeric = [k for k in range(1, len(columns)) if k not in text]
    try:
        import pandas
    except ImportError:
        pandas = None
    if pandas is not None:
        frame = pandas.DataFrame.from_records(rows, columns=columns)
        if hasattr(frame, "isetitem"):  # pandas 1.5 and later: by position
            for k in numeric:
                frame.isetitem(k, frame.iloc[:, k].astype("float64"))
        else:
            names = [columns[k] for k in numeric]
            frame[names] = frame[names].astype("float64")
        return frame
    dtype = [(name, np.int64 if k == 0 else object if k in text else np.float64)
             for k, name in enumerate(columns)]
    table = np.empty(len(rows), dtype=dtype)
    for i, row in enumerate(rows):
        table[i] = tuple(np.nan if cell is None and k in numeric else cell
                         for k, cell in enumerate(row))
    return table


class System:
    """A system built in code: components (FMUs), connections and the experiment, run with
    :meth:`simulate` like a system file (it is one: :meth:`to_json` shows it).

    >>> s = cosimo.System(stop_time=10, step_size=1e-3)
    >>> s.add_component("mass1", "Mass1.fmu", start_values={"m": 1.0})
    >>> s.add_component("mass2", "Mass2.fmu")
    >>> s.connect("mass1.x", "mass2.x_in")
    >>> result = s.simulate(algorithm="implicit")
    """

    def __init__(self, start_time: Optional[float] = None, stop_time: Optional[float] = None,
                 step_size: Optional[float] = None, output_interval: Optional[float] = None,
                 **experiment: Any):
        self.components: List[Dict[str, Any]] = []
        self.connections: List[Dict[str, Any]] = []
        self.experiment: Dict[str, Any] = {}
        for key, value in (("startTime", start_time), ("stopTime", stop_time),
                           ("stepSize", step_size), ("outputInterval", output_interval)):
            if value is not None:
                self.experiment[key] = value
        # Further entries of a system file's "experiment" (algorithm, extrapolationOrder,
        # corrector, stepControl, ...), spelled as in the file.
        self.experiment.update(experiment)

    def add_component(self, name: str, fmu: PathLike,
                      start_values: Optional[Mapping[str, Any]] = None,
                      **options: Any) -> "System":
        """Add an instance of an FMU; ``options`` are further entries of a system file's
        component (``subSteps``, ``isolate``, ``callTimeout``, ``workerGroup``)."""
        component: Dict[str, Any] = {"name": name, "fmu": str(Path(os.fspath(fmu)).resolve())}
        if start_values:
            component["parameters"] = {k: _json_value(v) for k, v in start_values.items()}
        component.update(options)
        self.components.append(component)
        return self

    def connect(self, source: str, target: str, **options: Any) -> "System":
        """Connect ``component.output`` to ``component.input``; ``options`` are further
        entries of a system file's connection (``factor``, ``offset``, ...)."""
        connection: Dict[str, Any] = {"from": source, "to": target}
        connection.update(options)
        self.connections.append(connection)
        return self

    def to_json(self) -> str:
        """The system as a cosimo system file."""
        return json.dumps({"components": self.components, "connections": self.connections,
                           "experiment": self.experiment}, indent=2)

    def simulate(self, **arguments: Any) -> np.ndarray:
        """Run the system: the arguments of :func:`simulate` (they win over the experiment)."""
        with tempfile.TemporaryDirectory(prefix="cosimo-system-") as folder:
            file = Path(folder) / "system.json"
            file.write_text(self.to_json())
            try:
                return simulate(str(file), **arguments)
            except Error as error:
                # The file is gone with the folder: the message names it, so say what it was.
                error.args = (str(error).replace(str(file), "the System"),)
                raise


def _session_call(method: Callable[..., Any], *arguments: Any) -> Any:
    """Call the compiled session, raising its errors as cosimo's exceptions."""
    try:
        return method(*arguments)
    except _cosimo.SessionError as error:
        kind, message, time = error.args
        raise _ERRORS.get(kind, Error)(message, None, time) from None


class Snapshot:
    """A whole system saved by :meth:`Session.save`: every FMU's state and the master's own
    history. Restore it with :meth:`Session.restore` in the session that made it; turn it into
    bytes with :meth:`to_bytes` (every FMU must serialise its state) and back with
    :meth:`from_bytes`, for a session of the same system."""

    def __init__(self, session: Optional["Session"], inner: Any = None, data: Optional[bytes] = None):
        self._session = session
        self._inner = inner
        self._data = data

    @property
    def time(self) -> float:
        """The simulation time the snapshot was taken at."""
        if self._inner is None:
            raise UsageError("a snapshot from bytes knows its time once restored")
        return self._inner.time

    def to_bytes(self) -> bytes:
        """The snapshot as bytes that outlive the session."""
        if self._data is not None:
            return self._data
        if self._session is None:  # pragma: no cover - every in-memory snapshot has one
            raise UsageError("the snapshot has no session")
        return _session_call(self._session._check_open().to_bytes, self._inner)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Snapshot":
        """A snapshot made by :meth:`to_bytes`, to restore in a session of the same system."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise UsageError(f"Snapshot.from_bytes: expected bytes, not {type(data).__name__}")
        return cls(None, None, bytes(data))


class Session:
    """A simulation held open and driven from Python: step it, read and set values between
    steps, save and restore the whole system, and take the rows so far.

    It takes the arguments of :func:`simulate` (``path``, ``start_values``, the times,
    ``output``, ``input``, ``algorithm``, ``observer`` and the settings, ``real_time=``
    included, and ``scenario=`` a scenario file in libcosim's format) and is a context
    manager:

    >>> with cosimo.Session("system.json", stop_time=10) as s:
    ...     while not s.step():          # one macro step; True at the end
    ...         if s.get("mass1.x") > 0.1:
    ...             s.set({"controller.k": 2.0})
    ...     result = s.result()

    The GIL is released while the FMUs run. An FMU error raises :class:`Error`; the session
    then takes only :meth:`restore` (of a snapshot taken before) or :meth:`close`.
    """

    def __init__(
        self,
        path: Union[PathLike, Sequence[PathLike]],
        start_values: Optional[Mapping[str, Any]] = None,
        start_time: Optional[float] = None,
        stop_time: Optional[float] = None,
        step_size: Optional[float] = None,
        output_interval: Optional[float] = None,
        output: Optional[Sequence[str]] = None,
        input: Optional[Union[np.ndarray, PathLike]] = None,
        algorithm: Optional[str] = None,
        observer: Optional[Callable[[Dict[str, Any]], Any]] = None,
        **settings: Any,
    ) -> None:
        if observer is not None and not callable(observer):
            raise UsageError(f"observer={observer!r}: expected a callable observer(row)")
        request = _request(path, start_values, start_time, stop_time, step_size,
                           output_interval, output, input, algorithm, settings)
        self._session: Any = None
        self._session = _session_call(_cosimo.Session, request, observer)
        for warning in self._session.warnings:
            import warnings

            warnings.warn(warning, stacklevel=2)

    def _check_open(self) -> Any:
        if self._session is None:
            raise UsageError("the session is closed")
        return self._session

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - nothing to report to at collection
            pass

    @property
    def time(self) -> float:
        """The current simulation time."""
        return _session_call(lambda: self._check_open().time)

    @property
    def start_time(self) -> float:
        return _session_call(lambda: self._check_open().grid)[0]

    @property
    def stop_time(self) -> float:
        return _session_call(lambda: self._check_open().grid)[1]

    @property
    def step_size(self) -> float:
        return _session_call(lambda: self._check_open().grid)[2]

    def step(self) -> bool:
        """One macro step (as the algorithm proposes it); True when the simulation has ended
        (the stop time, or an FMU asked to terminate)."""
        return _session_call(self._check_open().step)

    def step_until(self, time: float) -> bool:
        """Advance to ``time`` exactly (macro steps shortened to land on it); True when the
        simulation has ended."""
        return _session_call(self._check_open().step_until, float(time))

    def get(self, names: Union[str, Sequence[str]]) -> Any:
        """The current value of a variable named as in results (``"mass1.x"``; one FMU alone:
        ``"x"``), or a dict of several; arrays as lists."""
        if isinstance(names, str):
            return _session_call(self._check_open().get, [names])[0]
        names = list(names)
        values = _session_call(self._check_open().get, names)
        return dict(zip(names, values))

    def set(self, values: Mapping[str, Any]) -> None:
        """Set inputs and tunable parameters, ``{name: value}``, for the next step. Inputs
        driven by a connection or by the input, outputs and fixed parameters are refused."""
        if not isinstance(values, Mapping):
            raise UsageError(f"set(): expected a dict {{name: value}}, not {type(values).__name__}")
        items = [(name, value.tolist() if isinstance(value, np.ndarray) else
                  value.item() if isinstance(value, np.generic) else value)
                 for name, value in values.items()]
        _session_call(self._check_open().set, items)

    def save(self) -> Snapshot:
        """Save the whole system (every FMU must get and set its state)."""
        return Snapshot(self, _session_call(self._check_open().save))

    def restore(self, snapshot: Snapshot) -> None:
        """Back to a snapshot: one of this session's, or one from :meth:`Snapshot.from_bytes`
        of a session of the same system. The rows after it are dropped from :meth:`result`."""
        if not isinstance(snapshot, Snapshot):
            raise UsageError(f"restore(): expected a Snapshot, not {type(snapshot).__name__}")
        session = self._check_open()
        if snapshot._data is not None:
            _session_call(session.restore_bytes, snapshot._data)
        elif snapshot._session is not self:
            raise UsageError("restore(): the snapshot was taken in another session; use "
                             "Snapshot.from_bytes(snapshot.to_bytes()) to move it")
        else:
            _session_call(session.restore, snapshot._inner)

    def result(self) -> np.ndarray:
        """The rows so far, as :func:`simulate` returns them."""
        out = _session_call(self._check_open().result)
        return _result(out["columns"], out["time"], out["values"])

    @property
    def real_time(self) -> Optional[Dict[str, Any]]:
        """With ``real_time=``: the pacing's figures (target, total and rolling factor,
        overruns, worst lateness in s); else None."""
        return _session_call(self._check_open().real_time)

    @property
    def scenario_events(self) -> List[Dict[str, Any]]:
        """With ``scenario=``: the events that took effect so far (time, event_time,
        variable, action, value, location), the scenario's end included."""
        return _session_call(self._check_open().scenario_events)

    def close(self) -> Optional[Dict[str, Any]]:
        """Terminate and free the FMUs; the run's statistics (None if closed already)."""
        if getattr(self, "_session", None) is None:
            return None
        session, self._session = self._session, None
        return _session_call(session.close)


def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
