"""Per-collective times of one profiled run of a step (for ``communication``).

A profiler trace (``ProfilerSession`` -> the ``trace_viewer@`` JSON) has one
``CollectiveReduceV2``/``CollectiveAllToAllV2``/... event per device and collective,
its ``long_name`` ``tf.StatefulPartitionedCall/<node>:<op>``: matched to the lowered
node a decoded collective runs as. On virtual CPU devices these are host-thread times,
mostly waiting for the slowest member of the group (0.3-3 ms even for 4 bytes): they
show order and skew, not bandwidth. Pieces of a fused all-reduce share one time.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._restore import quiet_stderr, run_restoring

_COLLECTIVE_OPS = {
    "CollectiveReduceV2",
    "CollectiveReduceV3",
    "CollectiveGatherV2",
    "CollectiveAllToAllV2",
    "CollectiveAllToAllV3",
    "CollectiveReduceScatterV2",
    "CollectiveBcastSendV2",
    "CollectiveBcastRecvV2",
}


def collective_times(
    fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], variables: Sequence[Any]
) -> dict[str, float]:
    """``{lowered node: mean microseconds per run on one device}`` from one profiled run of
    ``fn(*args, **kwargs)`` (``variables`` restored after it), over this client's devices."""
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

    logdir = tempfile.mkdtemp(prefix="dtsgd_viz_comm_")
    try:
        with quiet_stderr():
            run_restoring(fn, args, kwargs, variables, profile_dir=logdir)
            paths = [os.path.join(d, f) for d, _, files in os.walk(logdir) for f in files if f.endswith(".xplane.pb")]
            data, ok = _pywrap_profiler_plugin.xspace_to_tools_data(paths, "trace_viewer@", {})
        if not ok:
            return {}
        return _times(json.loads(data))
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def _times(trace) -> dict[str, float]:
    frames = trace.get("stackFrames", {})
    busy = collections.defaultdict(float)
    count = collections.Counter()
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") != "X" or ev.get("name") not in _COLLECTIVE_OPS:
            continue
        long_name = (
            frames.get(str(ev.get("sf")), {}).get("name")
            or ev.get("args", {}).get("long_name")
            or ev.get("args", {}).get("name", "")
        )
        if "/" not in long_name:
            continue
        node = long_name.split(":")[0].split("/", 1)[-1]
        busy[node] += ev.get("dur", 0)
        count[node] += 1
    return {node: busy[node] / count[node] for node in busy}
