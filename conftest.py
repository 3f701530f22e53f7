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


def pytest_collection_modifyitems(config, items):
    """The tutorials (nbval cells) and the browser tests are slow: ``pytest -m "not slow"``
    leaves them out; ``make test`` runs everything.

    Then the files are ordered by their share of slow items, the most first (the tutorials,
    browser and multi-process files), each file's items kept in their order: with
    ``--dist loadfile`` both workers start on the long files, and the short ones fill in at
    the end instead of one long file running alone last."""
    for item in items:
        if type(item).__name__.startswith("IPyNb") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
    files: dict = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    share = {f: sum(bool(i.get_closest_marker("slow")) for i in its) / len(its) for f, its in files.items()}
    order = sorted(files, key=lambda f: (-share[f], -len(files[f]) * share[f], f))
    items[:] = [item for f in order for item in files[f]]
