#!/usr/bin/env python3
"""Checks every #include between the project's folders against docs/architecture.md's table of
who may include whom (between its "include-directions" markers): a source may include its own
folder's headers and those of the folders its row names. Exit 1 listing each violation, and
each source folder the table lacks. Usage: include_directions.py SOURCE_DIR"""
import pathlib
import re
import sys

SOURCES = ("engine", "kernels", "models", "planner", "simulator", "launcher", "python/src")
SUFFIXES = (".h", ".cc", ".cu", ".cuh")


def read_table(architecture):
    text = architecture.read_text()
    try:
        body = text.split("<!-- include-directions: begin -->")[1].split(
            "<!-- include-directions: end -->")[0]
    except IndexError:
        sys.exit(f"{architecture}: no include-directions markers")
    allowed = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        allowed[cells[0].strip("`")] = {c.strip().strip("`") for c in cells[1].split(",") if c.strip()}
    return allowed


def folder_of(path, folders):
    """The longest folder of the table that `path` (relative to the source dir) lies in."""
    best = None
    for f in folders:
        if (path == f or path.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    return best


def main():
    root = pathlib.Path(sys.argv[1])
    allowed = read_table(root / "docs" / "architecture.md")
    problems = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for top in SOURCES:
        for source in sorted((root / top).rglob("*")):
            if source.suffix not in SUFFIXES or not source.is_file():
                continue
            relative = source.relative_to(root).as_posix()
            mine = folder_of(relative, allowed)
            if mine is None:
                problems.append(f"{relative}: its folder is not in docs/architecture.md's table")
                continue
            for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                match = include.match(line)
                if not match or "/" not in match.group(1):
                    continue  # a header beside the source
                theirs = folder_of(match.group(1), allowed)
                if theirs is None or theirs == mine or theirs in allowed[mine]:
                    continue  # not one of the project's folders (a generated or system path)
                problems.append(f"{relative}:{number}: {mine} includes {match.group(1)} "
                                f"({theirs}), which its row does not allow")
    for p in problems:
        print(p)
    print(f"{len(problems)} include direction problem(s)" if problems else "include directions: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
