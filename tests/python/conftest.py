"""Fixtures of the Python module's tests: the paths CMake gives (tests/python is run by the ctest
test PythonModule, python/CMakeLists.txt) and the CLI built beside the module, whose output every
test compares with."""

import json
import os
import pathlib
import subprocess

import pytest

# CMake sets both; run by hand from a checkout, the source is this file's repository and the CLI
# that of build/ (PYTHONPATH=build/python python3 -m pytest tests/python).
SOURCE_DIR = pathlib.Path(os.environ.get("CLUSTERSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BINARY = pathlib.Path(os.environ.get("CLUSTERSIM_BINARY", SOURCE_DIR / "build" / "bin" / "clustersim"))


class Cli:
    """The clustersim program: its standard output, or its error message, for some arguments."""

    def __init__(self, binary):
        self.binary = binary

    def output(self, *args):
        """Standard output of a run that must succeed (exit code 0)."""
        done = subprocess.run([str(self.binary), *map(str, args)], capture_output=True, text=True)
        assert done.returncode == 0, f"clustersim {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr}"
        return done.stdout

    def json(self, *args):
        return json.loads(self.output(*args))

    def error(self, *args):
        """The message of a run that must fail on bad input (exit code 2): its standard error less
        the "error: " it opens with and the final newline."""
        done = subprocess.run([str(self.binary), *map(str, args)], capture_output=True, text=True)
        assert done.returncode == 2, f"clustersim {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr}"
        assert done.stderr.startswith("error: ") and done.stderr.endswith("\n"), done.stderr
        return done.stderr[len("error: "):-1]


@pytest.fixture(scope="session")
def cli():
    if not BINARY.is_file():
        pytest.fail(f"{BINARY}: no clustersim program; build it (ninja -C build) or set CLUSTERSIM_BINARY")
    return Cli(BINARY)


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


def canonical(document):
    """A JSON document as text with sorted keys: equal texts are equal documents."""
    return json.dumps(document, sort_keys=True)
