"""The table that orders the test files (tests/durations.json, read by the root
conftest.py) maps JUnit names back to files, and the collection follows it."""

import json
import pathlib
import xml.etree.ElementTree as ET

from helpers import durations

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_junit_names_map_back_to_their_files():
    assert durations.file_of("tests.project.test_durations") == "tests/project/test_durations.py"
    assert durations.file_of("tests.project.test_durations.SomeClass") == "tests/project/test_durations.py"
    assert durations.file_of("notebooks.01_quickstart.ipynb") == "notebooks/01_quickstart.ipynb"
    assert durations.file_of("dtsgd_viz.theory.reference") == "dtsgd_viz/theory/reference.py"
    assert durations.file_of("tests.no_such_file") is None


def test_a_junit_file_sums_each_files_items(tmp_path):
    xml = tmp_path / "run.xml"
    suite = ET.Element("testsuite")
    for name, seconds in [
        ("tests.project.test_durations", 1.25),
        ("tests.project.test_durations", 2.5),
        ("notebooks.01_quickstart.ipynb", 4.0),
        ("tests.gone", 9.0),
    ]:
        ET.SubElement(suite, "testcase", classname=name, name="t", time=str(seconds))
    ET.ElementTree(suite).write(xml)
    assert durations.durations(str(xml)) == {"notebooks/01_quickstart.ipynb": 4, "tests/project/test_durations.py": 4}


def test_the_collection_starts_with_the_longest_files(request):
    table = json.loads((ROOT / "tests" / "durations.json").read_text())
    collected = list(dict.fromkeys(item.nodeid.split("::")[0] for item in request.session.items))
    known = [f for f in collected if f in table]
    assert [table[f] for f in known] == sorted((table[f] for f in known), reverse=True)
