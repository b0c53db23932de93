"""What the Python benchmarks share: a Sluice broker on a scratch data directory, and
the CPU time a process has used."""

import contextlib
import os
import shutil
import subprocess
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of the process, from /proc (resolution: one clock tick)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@contextlib.contextmanager
def sluice_broker(binary, *args):
    """Runs `BINARY serve ARGS` on 127.0.0.1 (port 0) with a scratch data directory;
    yields (process, bootstrap, data directory). The broker is stopped (SIGTERM, then
    SIGKILL after 30 s) and the directory removed on the way out."""
    data = tempfile.mkdtemp(prefix="sluice-bench-")
    proc = subprocess.Popen([binary, "serve", "--data-dir", data, "--listen", "127.0.0.1:0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        bootstrap = None
        deadline = time.monotonic() + 30
        while bootstrap is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("listening kafka "):
                bootstrap = line.split()[2]
        assert bootstrap, "the broker printed no listening line"
        yield proc, bootstrap, data
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)
