"""train_gpu.py's instruments: CPU seconds of the process tree, the step
timers (CUDA events on the training stream, or the host clock on the CPU)
and the quantiles it reports. Only the standard library; torch is passed in.
"""
import os
import resource
import statistics
import time


# --- CPU accounting ------------------------------------------------------------------
_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid):
    """(ppid, CPU seconds: utime + stime + cutime + cstime) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None  # gone meanwhile
    f = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": field 3 (state) is f[0]
    return int(f[1]), sum(int(x) for x in f[11:15]) / _TICK


def tree_cpu_seconds():
    """CPU seconds (user + system) so far of this process, its reaped
    children, and its live descendants.

    RUSAGE_CHILDREN alone is not enough: it counts only children that have
    exited and been waited for, and the DataLoader's persistent workers live
    through the whole window. So live descendants are read from /proc. The
    sum stays consistent across a window: a child live at the start and
    reaped before the end moves from the /proc part to RUSAGE_CHILDREN with
    its whole total, so the difference is still what it used in the window.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    parent_of, cpu = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _proc_stat(int(name))
            if st is not None:
                parent_of[int(name)], cpu[int(name)] = st
    me, descendants = os.getpid(), set()
    frontier = [me]
    while frontier:  # breadth first down the process tree
        p = frontier.pop()
        kids = [c for c, pp in parent_of.items() if pp == p and c not in descendants]
        descendants.update(kids)
        frontier += kids
    return total + sum(cpu[c] for c in descendants)


def self_cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process: ringfeed's included
    return own.ru_utime + own.ru_stime


# --- timing of the steps' device work --------------------------------------------------
class CudaTimer:
    """CUDA events on the training stream around each step's work. Events
    are timestamped by the GPU when the stream reaches them, so the host
    never waits for them inside the loop; they are read after the window's
    closing synchronize."""

    def __init__(self, torch):
        self.torch, self.marks = torch, []

    def _event(self):
        e = self.torch.cuda.Event(enable_timing=True)
        e.record()  # on the current stream: the one the step's kernels run on
        return e

    def origin(self):  # right after the synchronize that opens the window: the GPU is idle
        self.first = self._event()

    def start(self):
        self.marks.append([self._event(), None])

    def end(self):
        self.marks[-1][1] = self._event()

    def resolve(self):
        """Per step: (busy seconds, idle seconds before it on the stream)."""
        out, prev = [], self.first
        for s, e in self.marks:
            out.append((s.elapsed_time(e) / 1e3, prev.elapsed_time(s) / 1e3))
            prev = e
        return out


class HostTimer:
    """The same on the CPU, where the step computes synchronously: the host clock."""

    def __init__(self):
        self.marks = []

    def origin(self):
        self.first = time.perf_counter()

    def start(self):
        self.marks.append([time.perf_counter(), None])

    def end(self):
        self.marks[-1][1] = time.perf_counter()

    def resolve(self):
        out, prev = [], self.first
        for s, e in self.marks:
            out.append((e - s, s - prev))
            prev = e
        return out


def quantiles_ms(xs):
    s = sorted(xs)
    return {"median": 1e3 * statistics.median(s), "p95": 1e3 * s[min(len(s) - 1, int(0.95 * len(s)))],
            "max": 1e3 * s[-1]}
