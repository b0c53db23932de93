#!/usr/bin/python3
"""Compiles every source file on its own, syntax only, to find missing #includes.

The build compiles a target's files in batches (CMake's unity build) with a shared
precompiled header, so a file that uses something without including it still builds
when a file before it in the batch, or the precompiled header, brings it in. This
check takes the compile commands of a configuration (make lint's), expands each
batch into its files, and runs the batch's command on each file alone with
-fsyntax-only.

usage: scripts/check-includes.py BUILD_DIR PATH_PREFIX [-j JOBS]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

UNITY_INCLUDE = re.compile(r'^#include "(.+)"$')
# Flags that name outputs or dependency files, each followed by its argument.
DROP_WITH_ARG = {"-o", "-MF", "-MT", "-MQ"}
DROP = {"-c", "-MD", "-MMD"}


def sources_of(entry):
    """The files a compile command covers: the batch's members for a unity file."""
    path = entry["file"]
    if not os.path.isabs(path):
        path = os.path.join(entry["directory"], path)
    if not re.search(r"/Unity/unity_[0-9]+_[a-z]+\.[a-z]+$", path):
        return path, [path]
    members = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = UNITY_INCLUDE.match(line.strip())
            if m:
                members.append(m.group(1))
    return path, members


def syntax_command(entry, compiled, source):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in DROP_WITH_ARG:
            skip = True
        elif a in DROP or a.startswith("-O") or a.startswith("-g"):
            pass
        elif a == entry["file"] or a == compiled:
            out.append(source)
        else:
            out.append(a)
    return out + ["-fsyntax-only"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("prefix", help="check files whose path contains this, e.g. src/")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    opt = ap.parse_args()

    with open(os.path.join(opt.build_dir, "compile_commands.json"), encoding="utf-8") as f:
        db = json.load(f)
    work = []
    for entry in db:
        compiled, members = sources_of(entry)
        for src in members:
            if opt.prefix in os.path.relpath(src):
                work.append((entry, syntax_command(entry, compiled, src), src))
    if not work:
        print("check-includes: no files under", opt.prefix, file=sys.stderr)
        return 2

    def run(item):
        entry, cmd, src = item
        p = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        return src, p.returncode, p.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=opt.j) as pool:
        for src, rc, err in pool.map(run, work):
            if rc != 0:
                failed += 1
                print(f"check-includes: {os.path.relpath(src)} does not compile alone:")
                print(err, end="")
    print(f"check-includes: {len(work) - failed} of {len(work)} files compile on their own")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
