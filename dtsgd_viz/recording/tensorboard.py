"""A recording in TensorBoard, the tool long runs are usually watched with: per-block
statistics as scalars and each variable's values as histograms, by optimizer update.

Written with TensorBoard's own event writer (``pip install tensorboard``; no TensorFlow
needed), so the events are TensorBoard's format exactly::

    rec.to_tensorboard("logs/run1")           # then: tensorboard --logdir logs
    dtsgd-viz export run.zarr --tensorboard logs/run1

Scalars (step = the update, as ``recording.steps`` counts it):

- ``<variable>/<kind>/<stat>/block <g>``: the L2 norm, mean and max |x| of unique block
  ``g`` (``recording.shard_stats``; ``kind`` is param, velocity or grad);
- ``<variable>/<kind>/norm``: the norm of the whole tensor (from its blocks' norms);
- ``loss`` and ``learning_rate``.

Histograms (full-mode recordings only; stats mode keeps no values): ``<variable>/<kind>``
at most ``max_histograms`` updates, evenly spaced, the last included.

Runs: ``run="nesterov"`` writes into ``logdir/nesterov``, which TensorBoard shows as a run
of that name; ``dtsgd_viz.to_tensorboard({"momentum": a, "nesterov": b}, "logs")`` writes
one run per recording, so their curves overlay. An export never appends to an earlier
one (TensorBoard would show both, two points per update): a folder that already holds
this package's events is refused (``FileExistsError`` naming the file), or, with
``overwrite=True``, its earlier export is replaced. Other tools' event files in the
folder are left as they are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np

STATS = ("norm", "mean", "max_abs")
SUFFIX = ".dtsgd_viz"
HISTOGRAM_BUCKETS = 30


def _tensorboard():
    _quiet_tensorflow()
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError(
            "Writing TensorBoard events needs the tensorboard package: "
            "pip install 'dtsgd_viz[tensorboard]' (or pip install tensorboard)."
        ) from e
    return event_pb2, summary_pb2, EventFileWriter


def _quiet_tensorflow() -> None:
    """tensorboard imports TensorFlow when it is installed: import it first without its C++
    start-up lines (as ``dtsgd_viz.SGD`` does), so an export prints none of them."""
    import importlib.util
    import sys

    if "tensorflow" not in sys.modules and importlib.util.find_spec("tensorflow") is not None:
        from ..dtensor.devices import quiet_tensorflow_import

        quiet_tensorflow_import()


def to_tensorboard(
    recordings: Any,
    logdir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    histograms: bool = True,
    max_histograms: int = 200,
) -> str | dict[str, str]:
    """``dtsgd_viz.to_tensorboard``: one ``Recording`` into ``logdir`` (returns its event
    file), or ``{run name: Recording}`` as one run each under ``logdir`` (returns ``{run
    name: event file}``), so TensorBoard overlays, say, momentum and Nesterov."""
    if isinstance(recordings, dict):
        return write_tensorboard_runs(
            recordings, logdir, overwrite=overwrite, histograms=histograms, max_histograms=max_histograms
        )
    if not (hasattr(recordings, "steps") and hasattr(recordings, "shard_stats")):
        raise TypeError(
            "to_tensorboard takes a Recording or a dict {run name: Recording}. "
            f"Received: {type(recordings).__name__}."
        )
    return write_tensorboard(
        recordings, logdir, overwrite=overwrite, histograms=histograms, max_histograms=max_histograms
    )


def histogram(values: np.ndarray, summary_pb2: ModuleType, buckets: int = HISTOGRAM_BUCKETS) -> Any:
    """A ``HistogramProto`` of ``values`` (``buckets`` equal bins between min and max)."""
    x = np.asarray(values, np.float64).ravel()
    x = x[np.isfinite(x)]
    proto = summary_pb2.HistogramProto()
    if x.size == 0:
        return proto
    lo, hi = float(x.min()), float(x.max())
    counts, edges = np.histogram(x, bins=buckets, range=(lo, hi) if hi > lo else (lo - 0.5, lo + 0.5))
    proto.min, proto.max, proto.num = lo, hi, float(x.size)
    proto.sum, proto.sum_squares = float(x.sum()), float(np.dot(x, x))
    proto.bucket_limit.extend(edges[1:].tolist())
    proto.bucket.extend(counts.astype(float).tolist())
    return proto


def _histogram_rows(n: int, most: int) -> np.ndarray:
    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, most).round().astype(int))


def write_tensorboard(
    recording: Any,
    logdir: str | os.PathLike[str],
    *,
    run: str | None = None,
    overwrite: bool = False,
    histograms: bool = True,
    max_histograms: int = 200,
) -> str:
    """Write ``recording`` as TensorBoard events into ``logdir`` (or ``logdir/run``; made
    if missing); returns the event file's path. See the module docstring for the tags.

    A folder that already holds an export of this package raises ``FileExistsError``
    unless ``overwrite=True``, which deletes that export's event files first."""
    if not isinstance(max_histograms, int) or max_histograms < 1:
        raise ValueError(f"max_histograms must be an int >= 1. Received: {max_histograms!r}.")
    logdir = _run_folder(logdir, run)
    earlier = _exports(logdir)
    if earlier and not overwrite:
        raise FileExistsError(
            f"{logdir} already holds a dtsgd_viz export ({earlier[0]}); writing again would "
            "add a second event file and TensorBoard would show every update twice. Pass "
            "overwrite=True to replace it, or another folder or run name."
        )
    event_pb2, summary_pb2, EventFileWriter = _tensorboard()
    for path in earlier:
        os.remove(path)
    os.makedirs(logdir, exist_ok=True)
    writer = EventFileWriter(logdir, filename_suffix=SUFFIX)
    steps = [int(s) for s in recording.steps]
    per_step: list[list] = [[] for _ in steps]

    def scalar(i, tag, value):
        if np.isfinite(value):
            per_step[i].append(summary_pb2.Summary.Value(tag=tag, simple_value=float(value)))

    for i, v in enumerate(recording.hyperparameters.learning_rate):
        scalar(i, "learning_rate", v)
    loss = recording.loss
    if loss is not None:
        for i, v in enumerate(loss):
            scalar(i, "loss", v)
    for name in recording.variables:
        for kind in recording.kinds:
            firsts = [group[0] for group in recording.geometry(name).replica_groups]
            stats = recording.shard_stats(name, kind)[:, firsts]  # (n, unique blocks, 3)
            for i in range(len(steps)):
                scalar(i, f"{name}/{kind}/norm", _tensor_norm(stats[i, :, 0]))
                for g in range(stats.shape[1]):
                    for s, stat in enumerate(STATS):
                        scalar(i, f"{name}/{kind}/{stat}/block {g}", stats[i, g, s])
    for i, step in enumerate(steps):
        if per_step[i]:
            writer.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=per_step[i])))
    if histograms and recording.mode == "full":
        for i in _histogram_rows(len(steps), max_histograms):
            values = [
                summary_pb2.Summary.Value(
                    tag=f"{name}/{kind}", histo=histogram(recording.global_values(name, kind)[i], summary_pb2)
                )
                for name in recording.variables
                for kind in recording.kinds
            ]
            writer.add_event(event_pb2.Event(step=steps[i], summary=summary_pb2.Summary(value=values)))
    writer.flush()
    path = writer.get_logdir()
    writer.close()
    return _event_file(path)


def write_tensorboard_runs(
    recordings: Mapping[str, Any],
    logdir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    histograms: bool = True,
    max_histograms: int = 200,
) -> dict[str, str]:
    """Write each recording of ``recordings`` (``{run name: Recording}``) as the run of
    that name under ``logdir``, so TensorBoard overlays them; returns ``{run name: event
    file}``. Every run folder is checked before any is written: an earlier export in one
    of them refuses the whole call unless ``overwrite=True``."""
    if not isinstance(recordings, dict) or not recordings:
        raise TypeError(
            "write_tensorboard_runs takes a non-empty dict {run name: Recording}. "
            f"Received: {type(recordings).__name__}" + (" (empty)" if isinstance(recordings, dict) else "") + "."
        )
    for name, r in recordings.items():
        _run_folder(logdir, name)
        if not (hasattr(r, "steps") and hasattr(r, "shard_stats")):
            raise TypeError(f"Run {name!r} is a {type(r).__name__}, not a dtsgd_viz Recording.")
    if not overwrite:
        for name in recordings:
            earlier = _exports(_run_folder(logdir, name))
            if earlier:
                raise FileExistsError(
                    f"Run {name!r} already has a dtsgd_viz export in {logdir} ({earlier[0]}). "
                    "Pass overwrite=True to replace it, or use other run names."
                )
    return {
        name: write_tensorboard(
            r, logdir, run=name, overwrite=overwrite, histograms=histograms, max_histograms=max_histograms
        )
        for name, r in recordings.items()
    }


def _run_folder(logdir, run) -> str:
    logdir = os.fspath(logdir)
    if run is None:
        return logdir
    if not isinstance(run, str) or not run or run in (".", "..") or "/" in run or os.sep in run:
        raise ValueError(f"A run name is a non-empty folder name without '/', such as 'nesterov'. Received: {run!r}.")
    return os.path.join(logdir, run)


def _exports(logdir) -> list[str]:
    """The event files an earlier export of this package wrote in ``logdir``."""
    if not os.path.isdir(logdir):
        return []
    return sorted(os.path.join(logdir, f) for f in os.listdir(logdir) if f.endswith(SUFFIX) and ".tfevents." in f)


def _tensor_norm(block_norms: np.ndarray) -> float:
    """The whole tensor's L2 norm from its unique blocks' norms (each block counted once:
    the unique blocks tile the tensor)."""
    return float(np.sqrt(np.sum(np.asarray(block_norms, np.float64) ** 2)))


def _event_file(logdir) -> str:
    files = sorted(
        (f for f in os.listdir(logdir) if f.endswith(SUFFIX)), key=lambda f: os.path.getmtime(os.path.join(logdir, f))
    )
    return os.path.join(logdir, files[-1])
