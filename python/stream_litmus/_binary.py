"""Finding and running the `stream-litmus` binary this package was installed with."""

import os
import shutil
import subprocess
import sys
import sysconfig

EXE = "stream-litmus"


class StreamLitmusError(RuntimeError):
    """The binary could not do what was asked (a missing file, a damaged trace, a bad claim):
    its exit status and what it printed on stderr."""

    def __init__(self, message, status=None, stderr=""):
        super().__init__(message)
        self.status = status
        self.stderr = stderr


def binary():
    """The path of the `stream-litmus` binary: `$STREAM_LITMUS_BIN`, else the one installed
    beside this package's interpreter (the wheel's), else the first on `PATH`."""
    named = os.environ.get("STREAM_LITMUS_BIN")
    if named:
        if not os.path.isfile(named):
            raise StreamLitmusError(f"STREAM_LITMUS_BIN names {named!r}, which is no file")
        return named
    places = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    for d in places:
        p = os.path.join(d, EXE) if d else None
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    found = shutil.which(EXE)
    if found:
        return found
    raise StreamLitmusError(
        f"the {EXE} binary is not installed beside this Python ({', '.join(filter(None, places))}) "
        f"nor on PATH: install the wheel (`pip install stream-litmus`), or name the binary with "
        f"STREAM_LITMUS_BIN"
    )


def run(*args, check=True, timeout=None):
    """Runs `stream-litmus ARGS…`; returns the finished process (stdout and stderr as text).
    With `check`, an exit status of 2 or more (a claim not judged, a usage error) raises
    StreamLitmusError with the binary's own message; status 1 (a claim not as expected) does
    not. The environment is passed on whole."""
    cmd = [binary(), *[os.fspath(a) for a in args]]
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
    )
    if check and done.returncode >= 2:
        raise StreamLitmusError(
            f"{EXE} {' '.join(cmd[1:])} exited with status {done.returncode}:\n"
            f"{done.stderr.strip()}",
            status=done.returncode,
            stderr=done.stderr,
        )
    return done
