#!/usr/bin/env python3
"""Grade a kosoku report of a ported example against upstream's results.

    grade.py REPORT UPSTREAM [-i CASE]... [-x CASE]... [--agent NAME] [--label L] [--update] [-v]

REPORT is the report directory kosoku wrote for a lockgate-compat example.
UPSTREAM is ``{"case id": "BEHAVIOR/BEHAVIORCLOSE"}`` recorded from the same
example built with upstream tungstenite / tokio-tungstenite 0.30.0
(``--update`` writes it from such a run). Run it with autobahn/.venv's
Python: the selection comes from kosoku's own case index, through
autobahn/compare.py, whose rules this reuses.

As autobahn/compare.py, exit status 1 when a selected case is missing from
the report or the report holds a case not selected. Unlike it, a case's
outcome need not be OK or INFORMATIONAL: upstream itself is NON-STRICT on
6.4.3 and 6.4.4 (it fails fast on invalid UTF-8 only per frame, not within
a fragment). A case passes when

  * its behavior and close behavior are both OK or INFORMATIONAL, or
  * it is exactly upstream's outcome and neither part is FAILED;

so a ported program may do better than upstream but never worse, and
never FAILED. Cases that do better are listed.

``--update`` rewrites UPSTREAM from REPORT; it refuses (exit 1, file
untouched) when cases are missing or extra, or any is FAILED.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

# autobahn/compare.py, beside this directory's parent (without leaving a
# __pycache__ there).
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "autobahn"))
from compare import (  # noqa: E402
    PASSING,
    describe_failure,
    load_report,
    normalize,
    selected_cases,
    sorted_ids,
)


def passes(outcome: str) -> bool:
    return all(part in PASSING for part in outcome.split("/"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report directory or its index.json")
    parser.add_argument("upstream", type=Path, help="upstream-*.json")
    parser.add_argument("-i", "--include", action="append", default=[], metavar="CASE")
    parser.add_argument("-x", "--exclude", action="append", default=[], metavar="CASE")
    parser.add_argument("--agent", help="agent in the report (default: its only agent)")
    parser.add_argument("--update", action="store_true", help="rewrite UPSTREAM from the report")
    parser.add_argument("-v", "--verbose", action="store_true", help="full expected/received of failures")
    parser.add_argument("--label", default="", help="prefix for the summary line")
    args = parser.parse_args()

    selection = selected_cases(args.include, args.exclude)
    report_dir, agent, raw = load_report(args.report, args.agent)
    actual = normalize(raw)

    problems: list[str] = []
    missing = sorted_ids(selection - actual.keys())
    if missing:
        problems.append(f"{len(missing)} selected case(s) missing from the report (never ran?):")
        problems.extend(f"    {c}" for c in missing)
    extra = sorted_ids(actual.keys() - selection)
    if extra:
        problems.append(f"{len(extra)} case(s) in the report that the selection excludes:")
        problems.extend(f"    {c}: {actual[c]}" for c in extra)
    failed = [c for c in sorted_ids(actual) if "FAILED" in actual[c].split("/")]

    if args.update:
        if failed:
            problems.append(f"{len(failed)} case(s) FAILED:")
            problems.extend(f"    {c}: {actual[c]}" for c in failed)
        if problems:
            print("\n".join(problems))
            print(f"grade.py: report does not qualify; NOT updating {args.upstream}")
            return 1
        ordered = {c: actual[c] for c in sorted(actual)}
        args.upstream.write_text(json.dumps(ordered, indent=2, sort_keys=True) + "\n")
        print(f"grade.py: wrote {len(ordered)} cases to {args.upstream}")
        return 0

    try:
        with args.upstream.open() as f:
            upstream: dict[str, str] = json.load(f)
    except FileNotFoundError:
        upstream = {}
        problems.append(f"{args.upstream} does not exist (record it with --update from an upstream build)")
    if upstream and upstream.keys() != selection:
        problems.append(
            f"{args.upstream.name} lists {len(upstream)} cases, not the selection's {len(selection)}"
        )

    worse = [
        c
        for c in sorted_ids(actual)
        if not passes(actual[c]) and ("FAILED" in actual[c] or actual[c] != upstream.get(c))
    ]
    if worse:
        problems.append(f"{len(worse)} case(s) neither OK/INFORMATIONAL nor as upstream:")
        for c in worse:
            problems.append(f"    {c}: {actual[c]} (upstream: {upstream.get(c, 'not recorded')})")
            problems.extend(describe_failure(report_dir, raw[c], args.verbose))
    better = [c for c in sorted_ids(actual) if c in upstream and actual[c] != upstream[c] and passes(actual[c])]

    counts = Counter(actual.values())
    print(f"agent {agent!r}, {len(actual)} of {len(selection)} selected cases reported:")
    for outcome, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"    {n:4d}  {outcome}")
    if better:
        print(f"{len(better)} case(s) better than upstream:")
        print("\n".join(f"    {c}: {actual[c]} (upstream: {upstream[c]})" for c in better))
    if problems:
        print("\n".join(problems))

    per_behavior = ", ".join(f"{o} {n}" for o, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    verdict = "FAIL" if problems else "PASS"
    print(f"{args.label}{verdict}: {len(actual)}/{len(selection)} cases ({per_behavior})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
