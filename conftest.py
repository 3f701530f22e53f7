"""Repository-wide pytest set-up (the package's doctests live outside tests/)."""

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _doctest_numpy_repr(request):
    """Doctests show numbers as the reference documentation does (``0.9``, not
    ``np.float32(0.9)``)."""
    if type(request.node).__name__ != "DoctestItem":
        yield
        return
    old = np.get_printoptions()
    np.set_printoptions(legacy="1.25")
    try:
        yield
    finally:
        np.set_printoptions(**old)


# notebooks/src/*.py are the tutorials' sources (python notebooks/build.py): importing one
# (--doctest-modules) would run the whole tutorial at collection time.
collect_ignore_glob = ["notebooks/src/*.py"]


def _file_times() -> dict:
    """tests/durations.json: each file's seconds in the last whole run profiled
    (``python tests/helpers/durations.py run.xml`` rewrites it)."""
    import json
    import pathlib

    table = pathlib.Path(__file__).parent / "tests" / "durations.json"
    return json.loads(table.read_text()) if table.exists() else {}


def pytest_collection_modifyitems(config, items):
    """The tutorials (nbval cells) and the browser tests are slow: ``pytest -m "not slow"``
    leaves them out; ``make test`` runs everything.

    Then the files are ordered by their time in the last whole run profiled
    (tests/durations.json), the longest first, each file's items kept in their order:
    with ``--dist loadfile`` each worker takes the next file as it frees up, so both
    start on the long files and the short ones fill in at the end, instead of one long
    file running alone last. A file the table does not name yet counts 8 s for each of
    its slow items."""
    for item in items:
        if type(item).__name__.startswith("IPyNb") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
    files: dict = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    times = _file_times()

    def seconds(f):
        return times.get(f, 8.0 * sum(bool(i.get_closest_marker("slow")) for i in files[f]))

    order = sorted(files, key=lambda f: (-seconds(f), f))
    items[:] = [item for f in order for item in files[f]]
