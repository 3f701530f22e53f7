"""Each test file's time in a whole run, for ordering the files (the root ``conftest.py``):

    python -m pytest -n 2 --dist loadfile --junitxml=/tmp/run.xml
    python tests/helpers/durations.py /tmp/run.xml     # rewrites tests/durations.json

The times are seconds summed over a file's items (set-up included), as pytest's JUnit XML
gives them; files the table does not name yet are ordered by their slow items."""

import json
import pathlib
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "durations.json"


def file_of(classname: str) -> str | None:
    """The file a JUnit ``classname`` names (``tests.views.test_x`` or, for a class in it,
    ``tests.views.test_x.TestY``; ``notebooks.01_quickstart.ipynb``), or None."""
    if classname.endswith(".ipynb"):
        stem = classname.removesuffix(".ipynb")
        parts = stem.split(".")
        for cut in range(len(parts), 0, -1):  # a notebook's name may hold dots
            path = "/".join(parts[: cut - 1] + [".".join(parts[cut - 1 :])]) + ".ipynb"
            if (ROOT / path).exists():
                return path
        return None
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (ROOT / path).exists():
            return path
    return None


def durations(xml_path: str) -> dict[str, int]:
    totals: dict[str, float] = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        path = file_of(case.get("classname", ""))
        if path is not None:
            totals[path] = totals.get(path, 0.0) + float(case.get("time", 0.0))
    return {path: round(seconds) for path, seconds in sorted(totals.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    table = durations(sys.argv[1])
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{TABLE.relative_to(ROOT)}: {len(table)} files, {sum(table.values())} s in all")
