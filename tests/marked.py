"""Processes found by a mark in their environment: a test starts a caller with
PSLAB_TEST_MARK=<mark>, and every process the caller starts (its forkserver, the resource
tracker, the run's processes) inherits it, whoever its parent is by then."""
import os


def marked(mark: str) -> list[int]:
    """Pids of live processes whose environment holds PSLAB_TEST_MARK=mark."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"PSLAB_TEST_MARK={mark}".encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found
