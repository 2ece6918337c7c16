#!/usr/bin/env python3
"""Check a kosoku (Autobahn TestSuite) report against the committed expectation.

    compare.py REPORT EXPECTED [-i CASE]... [-x CASE]... [--agent NAME] [--update] [-v]

REPORT is the report directory kosoku wrote (or its ``index.json``). EXPECTED
is a JSON object ``{"case id": "BEHAVIOR/BEHAVIORCLOSE"}`` with sorted keys.
``-i``/``-x`` must be the same include/exclude globs the run used: the set of
cases that should be in the report is computed from kosoku's own case index
(``kosoku.cases.CASES``), so run this with the Python that has kosoku
installed (``autobahn/.venv/bin/python``). kosoku silently leaves out cases
that never ran; those are caught here.

Exit status 1 when, for any case in the selection,
  * it is missing from the report, or the report holds a case not selected,
  * its behavior or close behavior is anything but OK / INFORMATIONAL
    (FAILED, NON-STRICT, UNIMPLEMENTED, ERROR, WRONG CODE, UNCLEAN, ...),
  * it differs from, is missing from, or is not in the expected file.

``--update`` rewrites EXPECTED from the report instead of comparing with it;
it refuses (exit 1, file untouched) when the report itself does not pass the
checks above.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

PASSING = frozenset({"OK", "INFORMATIONAL"})


def case_sort_key(case_id: str) -> list[int]:
    """1.2.10 after 1.2.9: numeric order by component."""
    return [int(part) if part.isdigit() else -1 for part in case_id.split(".")]


def sorted_ids(ids: Any) -> list[str]:
    return sorted(ids, key=case_sort_key)


def expand(patterns: list[str], pool: list[str]) -> set[str]:
    """Expand case ids / ``*`` globs the way kosoku 0.1.0 does.

    A pattern without ``*`` names one case exactly. A pattern with ``*`` is
    turned into a regex by escaping ``.`` and replacing ``*`` with ``.*``,
    anchored at the start only (Autobahn's rule), so ``9.*`` selects 9.1.1,
    and ``1.1*`` also selects 1.10 if it existed.
    """
    out: set[str] = set()
    for pattern in patterns:
        if "*" in pattern:
            rx = re.compile("^" + pattern.replace(".", r"\.").replace("*", ".*"))
            out.update(case_id for case_id in pool if rx.match(case_id))
        elif pattern in pool:
            out.add(pattern)
    return out


def selected_cases(include: list[str], exclude: list[str]) -> set[str]:
    try:
        from kosoku.cases import CASES  # builds kosoku's index of all cases
    except ImportError as err:
        sys.exit(
            f"compare.py: cannot import kosoku ({err}); run it with the autobahn "
            "venv's python (autobahn/.venv/bin/python)"
        )
    all_ids = list(CASES)
    for pattern in include:
        if not expand([pattern], all_ids):
            sys.exit(f"compare.py: include pattern {pattern!r} matches no case")
    selection = expand(include, all_ids) if include else set(all_ids)
    return selection - expand(exclude, sorted_ids(selection))


def load_report(path: Path, agent: str | None) -> tuple[Path, str, dict[str, Any]]:
    index_path = path / "index.json" if path.is_dir() else path
    if not index_path.is_file():
        sys.exit(f"compare.py: no report at {index_path} (did the run write one?)")
    with index_path.open() as f:
        index = json.load(f)
    if not isinstance(index, dict) or not index:
        sys.exit(f"compare.py: {index_path} holds no results")
    if agent is None:
        if len(index) != 1:
            sys.exit(
                f"compare.py: {index_path} has several agents {sorted(index)}; pick one with --agent"
            )
        agent = next(iter(index))
    elif agent not in index:
        sys.exit(f"compare.py: agent {agent!r} not in {index_path} (found {sorted(index)})")
    return index_path.parent, agent, index[agent]


def normalize(cases: dict[str, Any]) -> dict[str, str]:
    return {
        case_id: f"{entry['behavior']}/{entry['behaviorClose']}"
        for case_id, entry in cases.items()
    }


def short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def describe_failure(report_dir: Path, entry: dict[str, Any], verbose: bool) -> list[str]:
    """Details of one failing case, from its per-case JSON file."""
    lines = []
    case_file = report_dir / entry.get("reportfile", "")
    try:
        with case_file.open() as f:
            case = json.load(f)
    except (OSError, ValueError):
        return [f"      (no case file {case_file})"]
    lines.append(f"      result:        {case.get('result')}")
    lines.append(f"      resultClose:   {case.get('resultClose')}")
    lines.append(
        "      close:         local {} / remote {} {!r}, closedByMe={}, droppedByMe={}, wasClean={} ({})".format(
            case.get("localCloseCode"),
            case.get("remoteCloseCode"),
            case.get("remoteCloseReason"),
            case.get("closedByMe"),
            case.get("droppedByMe"),
            case.get("wasClean"),
            case.get("wasNotCleanReason"),
        )
    )
    limit = 100_000 if verbose else 300
    for key, value in (case.get("expected") or {}).items():
        lines.append(f"      expected[{key}]: {short(value, limit)}")
    lines.append(f"      received:      {short(case.get('received'), limit)}")
    lines.append(f"      expectedClose: {short(case.get('expectedClose'), limit)}")
    lines.append(f"      file:          {case_file}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report directory or its index.json")
    parser.add_argument("expected", type=Path, help="expected-*.json")
    parser.add_argument("-i", "--include", action="append", default=[], metavar="CASE")
    parser.add_argument("-x", "--exclude", action="append", default=[], metavar="CASE")
    parser.add_argument("--agent", help="agent in the report (default: its only agent)")
    parser.add_argument("--update", action="store_true", help="rewrite EXPECTED from the report")
    parser.add_argument("-v", "--verbose", action="store_true", help="full expected/received of failures")
    parser.add_argument("--label", default="", help="prefix for the summary line")
    args = parser.parse_args()

    selection = selected_cases(args.include, args.exclude)
    report_dir, agent, raw = load_report(args.report, args.agent)
    actual = normalize(raw)

    problems: list[str] = []

    # Missing cases: kosoku leaves out the cases a client never ran. (Every
    # expected case is in the selection or reported below, so this also
    # covers "expected but not reported".)
    missing = sorted_ids(selection - actual.keys())
    if missing:
        problems.append(f"{len(missing)} selected case(s) missing from the report (never ran?):")
        problems.extend(f"    {c}" for c in missing)
    extra = sorted_ids(actual.keys() - selection)
    if extra:
        problems.append(f"{len(extra)} case(s) in the report that the selection excludes:")
        problems.extend(f"    {c}: {actual[c]}" for c in extra)
    failing = [
        c
        for c in sorted_ids(actual)
        if raw[c]["behavior"] not in PASSING or raw[c]["behaviorClose"] not in PASSING
    ]
    if failing:
        problems.append(f"{len(failing)} case(s) not OK/INFORMATIONAL:")
        for c in failing:
            problems.append(f"    {c}: {actual[c]}")
            problems.extend(describe_failure(report_dir, raw[c], args.verbose))

    if args.update:
        if problems:
            print("\n".join(problems))
            print(f"compare.py: report does not pass; NOT updating {args.expected}")
            return 1
        ordered = {c: actual[c] for c in sorted(actual)}
        args.expected.write_text(json.dumps(ordered, indent=2, sort_keys=True) + "\n")
        print(f"compare.py: wrote {len(ordered)} cases to {args.expected}")
    else:
        try:
            with args.expected.open() as f:
                expected: dict[str, str] = json.load(f)
        except FileNotFoundError:
            expected = {}
            problems.append(
                f"expected file {args.expected} does not exist (create it with --update)"
            )
        not_selected = sorted_ids(expected.keys() - selection)
        if not_selected:
            problems.append(
                f"{len(not_selected)} case(s) in {args.expected.name} outside the selection:"
            )
            problems.extend(f"    {c}" for c in not_selected)
        unexpected = sorted_ids(actual.keys() - expected.keys())
        if unexpected and expected:
            problems.append(f"{len(unexpected)} reported case(s) not in {args.expected.name}:")
            problems.extend(f"    {c}: {actual[c]}" for c in unexpected)
        differ = sorted_ids(c for c in actual.keys() & expected.keys() if actual[c] != expected[c])
        if differ:
            problems.append(f"{len(differ)} case(s) differ from {args.expected.name}:")
            problems.extend(f"    {c}: expected {expected[c]}, got {actual[c]}" for c in differ)
        if len(expected) != len(selection):
            problems.append(
                f"{args.expected.name} lists {len(expected)} cases, the selection has {len(selection)}"
            )

    counts = Counter(actual.values())
    print(f"agent {agent!r}, {len(actual)} of {len(selection)} selected cases reported:")
    for outcome, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"    {n:4d}  {outcome}")
    if problems and not args.update:
        print("\n".join(problems))

    per_behavior = ", ".join(f"{o} {n}" for o, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    verdict = "FAIL" if problems else "PASS"
    print(f"{args.label}{verdict}: {len(actual)}/{len(selection)} cases ({per_behavior})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
