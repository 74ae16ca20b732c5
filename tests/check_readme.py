#!/usr/bin/env python3
"""The README's usage example must be examples/quickstart.cpp, which the build compiles and the
suite runs, so the README never shows code that does not build.

usage: check_readme.py README.md examples/quickstart.cpp
"""
import sys


def main():
    readme, example = sys.argv[1], sys.argv[2]
    text = open(readme, encoding="utf-8").read()
    code = open(example, encoding="utf-8").read()
    blocks = [b.split("\n", 1)[1] for b in text.split("```cpp")[1:]]
    blocks = [b[: b.index("```")] for b in blocks]
    if code not in blocks:
        print(f"{readme}'s C++ usage example differs from {example}; copy one into the other",
              file=sys.stderr)
        return 1
    lines = code.count("\n")
    print(f"README usage example matches {example} ({lines} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
