"""out/results.junit.xml: one testcase per case and column, for CI systems.

A fail carries a <failure> with the diagnostic lines, an xfail or a skip a
<skipped> with its reason; the classname groups the testcases by kernel and
column ("6.12/intree-luid"), one <testsuite> per column. Checked with a
real consumer (Debian's python3-junitparser) by check(), which make test runs.
"""

import xml.etree.ElementTree as ET
from pathlib import Path


def _column(r) -> str:
    return f"{r.kernel}/{r.impl}" if r.kernel else r.impl


def write(path: Path, results: list, name: str) -> None:
    root = ET.Element("testsuites", name=name)
    columns: dict[str, list] = {}
    for r in results:
        columns.setdefault(_column(r), []).append(r)
    for column, mine in columns.items():
        suite = ET.SubElement(root, "testsuite", name=column, tests=str(len(mine)),
                              failures=str(sum(r.status == "fail" for r in mine)),
                              errors="0",
                              skipped=str(sum(r.status in ("skip", "xfail") for r in mine)))
        if mine and mine[0].kernel_version:
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", name="kernel", value=mine[0].kernel_version)
        for r in mine:
            case = ET.SubElement(suite, "testcase", classname=column, name=r.case)
            if r.status == "fail":
                failure = ET.SubElement(case, "failure", message=r.detail or "failed",
                                        type="; ".join(r.requirements))
                failure.text = "\n".join(r.diagnostics)
            elif r.status in ("skip", "xfail"):
                label = "XFAIL (expected deviation, observed exactly): " if r.status == "xfail" else ""
                ET.SubElement(case, "skipped", message=label + (r.detail or "skipped"))
    ET.indent(root)
    path.write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


def check(xml: Path, ktap: Path) -> list[str]:
    """Problems found when junitparser reads xml against ktap's totals; [] if none."""
    from junitparser import Failure, JUnitXml, Skipped  # python3-junitparser
    if not xml.exists():
        return [f"{xml} is missing"]
    try:
        doc = JUnitXml.fromfile(str(xml))
    except Exception as e:  # noqa: BLE001 (any parse error is the finding)
        return [f"{xml}: junitparser cannot read it: {e}"]
    cases = [c for suite in doc for c in suite]
    fails = sum(any(isinstance(x, Failure) for x in c.result) for c in cases)
    skips = sum(any(isinstance(x, Skipped) for x in c.result) for c in cases)
    totals = [line for line in ktap.read_text().splitlines() if line.startswith("# Totals:")]
    if not totals:
        return [f"{ktap} has no totals line"]
    t = {k: int(v) for k, v in (kv.split(":") for kv in totals[-1].removeprefix("# Totals:").split())}
    want = (t["pass"] + t["fail"] + t["xfail"] + t["skip"], t["fail"], t["xfail"] + t["skip"])
    got = (len(cases), fails, skips)
    if got != want:
        return [f"junitparser reads {got[0]} testcases, {got[1]} failures, {got[2]} skipped; "
                f"{ktap} says {want[0]}, {want[1]}, {want[2]}"]
    return []
