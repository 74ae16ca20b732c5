#!/usr/bin/env python3
"""strata's visible boundary: which headers are public, and who may reach its internals.

    check_public_headers.py ROOT --public H... --detail H... --report H... [--also-found H...]

* Every header under include/strata/ outside detail/ must be in the --public list, and every
  one under detail/ in the --detail list (and the reverse): a new public header fails this until
  tests/meson.build lists it on purpose. (--also-found pretends a file exists: the should-fail
  twin of this test shows that an unlisted public header is caught.)
* tools/report/'s headers must be the --report list.
* tools/, examples/, benchmarks/ and the simulator (include/strata/sim/) use the public headers
  only: none of their files includes "strata/detail/..." or names strata::detail.
"""
import argparse
import pathlib
import re
import sys


def listed_files(root: pathlib.Path, base: pathlib.Path, pattern: str) -> set[str]:
    return {p.relative_to(base).as_posix() for p in root.rglob(pattern)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--public", nargs="*", default=[])
    ap.add_argument("--detail", nargs="*", default=[])
    ap.add_argument("--report", nargs="*", default=[])
    ap.add_argument("--also-found", nargs="*", default=[])
    args = ap.parse_args()
    root = pathlib.Path(args.root)
    include = root / "include"
    problems: list[str] = []

    found = listed_files(include / "strata", include, "*.hpp") | listed_files(include / "strata", include, "*.h")
    found |= set(args.also_found)
    found_detail = {h for h in found if h.startswith("strata/detail/")}
    found_public = found - found_detail
    public, detail = set(args.public), set(args.detail)
    # implementation.hpp is what STRATA_IMPLEMENTATION compiles: listed with the implementation.
    detail_listed = {h for h in detail if h.startswith("strata/detail/")}
    public_found = found_public - (detail - detail_listed)
    if public_found != public:
        if public_found - public:
            problems.append("public headers not listed in tests/meson.build public_headers (add them on "
                            "purpose, or move them under include/strata/detail/): "
                            + ", ".join(sorted(public_found - public)))
        if public - public_found:
            problems.append("public_headers lists headers that do not exist: " + ", ".join(sorted(public - public_found)))
    if found_detail != detail_listed:
        problems.append("detail headers out of date in tests/meson.build: not listed %s, not found %s"
                        % (sorted(found_detail - detail_listed), sorted(detail_listed - found_detail)))

    report = listed_files(root / "tools" / "report", root / "tools", "*.hpp")
    if report != set(args.report):
        problems.append("report_headers out of date in tests/meson.build: not listed %s, not found %s"
                        % (sorted(report - set(args.report)), sorted(set(args.report) - report)))

    reaches_detail = re.compile(r'#\s*include\s*[<"]strata/detail/|\bstrata::(v1::)?detail::')
    clients = [root / "tools", root / "examples", root / "benchmarks", include / "strata" / "sim",
               include / "strata" / "sim.hpp"]
    for client in clients:
        files = [client] if client.is_file() else [p for p in client.rglob("*") if p.suffix in (".hpp", ".cpp", ".h", ".c")]
        for f in files:
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                if reaches_detail.search(line):
                    problems.append(f"{f.relative_to(root)}:{n}: reaches strata's internals: {line.strip()}")

    for p in problems:
        print("check_public_headers: " + p, file=sys.stderr)
    if not problems:
        print(f"{len(public)} public headers, {len(detail)} internal, {len(args.report)} of strata-report; "
              "tools, examples, benchmarks and the simulator use the public ones only")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
