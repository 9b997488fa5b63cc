"""Type stubs of cosimo._cosimo, the compiled half of the package (use the functions of
``cosimo`` instead: they build these requests and raise cosimo's exceptions)."""

from typing import Any, Callable, Dict, List, Optional, Tuple

__version__: str

def simulate(
    request: Dict[str, Any],
    progress: Optional[Callable[[float, float], Any]] = None,
    observer: Optional[Callable[[Dict[str, Any]], Any]] = None,
) -> Dict[str, Any]:
    """Run a request with the GIL released. The dict returned holds ``columns`` (names),
    ``time`` (float64 array), ``values`` (one array or list per column), ``error`` (``None``
    or ``(kind, message, time or None)``), ``raised`` (what a hook raised, KeyboardInterrupt
    included, or ``None``), ``interrupted``, ``warnings`` and ``statistics``."""

def inspect(
    path: str, ssd: Optional[str] = None
) -> Tuple[Optional[str], List[str], Optional[Tuple[str, str]]]:
    """``(json, warnings, None)`` or ``(None, warnings, (kind, message))``."""

def check(
    request: Dict[str, Any],
) -> Tuple[Optional[str], Optional[Tuple[str, str]], List[str]]:
    """``(report json, None, warnings)`` or ``(None, (kind, message), warnings)``."""

def sweep(
    study: str,
    output_dir: Optional[str] = None,
    workers: int = 0,
    shard: Optional[str] = None,
) -> Dict[str, Any]:
    """Run a study with the GIL released; the dict holds ``columns``, ``rows`` (tuples),
    ``complete``, ``raised`` (KeyboardInterrupt or ``None``) and ``error`` (``None`` or
    ``(kind, message)``)."""

def read_result(path: str) -> Tuple[Optional[Dict[str, Any]], Optional[Tuple[str, str]]]:
    """``({columns, time, values}, None)`` as ``simulate`` returns them, or ``(None, (kind,
    message))``."""

def settings() -> List[str]:
    """The keyword settings ``cosimo.simulate`` takes besides its named arguments."""

def serve_worker(fd: int) -> int:
    """Serve one worker process of an isolated run on the channel ``fd`` (the
    ``cosimo-worker`` script); the exit code."""

class SessionError(Exception):
    """An error of a session call: ``args`` are ``(kind, message, time or None)``."""

class Snapshot:
    """A saved whole system, valid in the session that made it."""
    @property
    def time(self) -> float: ...

class Session:
    """The steppable simulation of a request (as ``simulate`` takes it), held open."""
    def __init__(
        self, request: Dict[str, Any], observer: Optional[Callable[[Dict[str, Any]], Any]] = None
    ) -> None: ...
    @property
    def time(self) -> float: ...
    @property
    def grid(self) -> Tuple[float, float, float, float]: ...
    @property
    def warnings(self) -> List[str]: ...
    def step(self) -> bool: ...
    def step_until(self, time: float) -> bool: ...
    def get(self, names: List[str]) -> List[Any]: ...
    def set(self, items: List[Tuple[str, Any]]) -> None: ...
    def save(self) -> Snapshot: ...
    def restore(self, snapshot: Snapshot) -> None: ...
    def to_bytes(self, snapshot: Snapshot) -> bytes: ...
    def restore_bytes(self, data: bytes) -> None: ...
    def result(self) -> Dict[str, Any]: ...
    def real_time(self) -> Optional[Dict[str, Any]]: ...
    def close(self) -> Optional[Dict[str, Any]]: ...
