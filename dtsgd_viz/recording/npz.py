"""The read side of a ``.npz`` recording (``Recording.save`` writes it): its members
checked and decoded into a ``Recording``. A store part's header and arrays go through
the same ``from_arrays`` (``store.py``)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping

import numpy as np

from ..geometry import shard_geometry
from ..specs import LayoutSpec, MeshSpec
from .damage import StrPath, verify_header, verify_members
from .recording import (
    DTYPES,
    FORMAT,
    READS,
    Hyperparameters,
    Part,
    Recording,
    RecordingFileError,
    VariableRecord,
    dtype_list,
)


def read_npz(path: StrPath, on_damage: str = "raise") -> Recording:
    """The recording in the ``.npz`` file ``path``, checked (``RecordingFileError`` for a
    truncated, corrupted or foreign file, or a member whose crc32 is not the one its
    header records, or a header whose own crc32 is not: ``damage.verify_header`` and
    ``verify_members``)."""
    path = os.fspath(path)
    arrays = _read_arrays(path)
    try:
        raw = arrays.pop("meta").tobytes()
        meta = json.loads(raw.decode())
    except (KeyError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordingFileError(
            f"{path}: missing or unreadable header, member 'meta.npy' "
            f"({type(e).__name__}: {e}); expected the recording's JSON "
            "header."
        ) from e
    verify_header(path, raw, meta)
    if isinstance(meta, dict) and meta.get("format") == FORMAT:
        verify_members(path, meta, arrays, on_damage)
    return from_arrays(path, meta, arrays)


def _decode(path, name, key, array, dtype) -> np.ndarray:
    """The stored ``array`` as ``dtype``: bfloat16 comes back from uint16 bit patterns
    (version 2) or from the raw ``|V2`` bytes numpy wrote for it in version 1."""
    if dtype == "bfloat16" and (array.dtype == np.uint16 or (array.dtype.kind == "V" and array.dtype.itemsize == 2)):
        import ml_dtypes  # only now: a TensorFlow dependency, light, numpy-only

        return array.view(ml_dtypes.bfloat16)
    if array.dtype.name != dtype:
        what = "initial value" if key == "initial" else f"{key!r} values"
        raise RecordingFileError(
            f"{path}: the {what} of variable {name!r} are stored as {array.dtype} but the variable's dtype is {dtype}."
        )
    return array


def _read_arrays(path) -> dict[str, np.ndarray]:
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
            if bad is not None:
                raise RecordingFileError(f"{path}: member {bad!r} is corrupted (CRC mismatch).")
            out = {}
            for member in zf.namelist():
                if not member.endswith(".npy"):
                    raise RecordingFileError(f"{path}: unexpected member {member!r}.")
                try:
                    out[member[:-4]] = np.lib.format.read_array(io.BytesIO(zf.read(member)), allow_pickle=False)
                except Exception as e:  # noqa: BLE001 - a damaged .npy header: numpy's
                    # parser raises ValueError, SyntaxError, tokenize.TokenError, ...
                    raise RecordingFileError(
                        f"{path} is not a readable dtsgd_viz recording: member {member!r} is "
                        f"not a readable .npy array ({type(e).__name__}: {e})."
                    ) from e
            return out
    except RecordingFileError:
        raise
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise RecordingFileError(f"{path} is not a readable dtsgd_viz recording (truncated or corrupted?): {e}") from e


def from_arrays(path: StrPath, meta: dict, arrays: Mapping[str, np.ndarray]) -> Recording:
    """The recording a header (``Recording.header``) and its arrays (the ``.npz``
    member names) describe, checked as ``load_recording`` checks a file."""
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise RecordingFileError(f"{path} is not a dtsgd_viz recording (format={meta.get('format')!r}).")
    if meta.get("version") not in READS:
        raise RecordingFileError(
            f"{path} has recording format version {meta.get('version')!r}; this dtsgd_viz "
            f"reads version {' or '.join(map(str, READS))}. Upgrade dtsgd_viz to read it."
        )
    try:
        n = int(meta["n_steps"])
        kinds = tuple(meta["kinds"])
        mode = meta.get("mode", "full")
        if mode not in ("full", "stats"):
            raise RecordingFileError(f"{path}: unknown recording mode {mode!r}.")
        mesh = MeshSpec.from_dict(meta["mesh"])
        part = Part.from_dict(meta["part"]) if "part" in meta else None
        records = []
        for i, v in enumerate(meta["variables"]):
            layout = LayoutSpec.from_dict(v["layout"])
            shape = tuple(v["shape"])
            geom = shard_geometry(shape, layout)
            dtype = v["dtype"]
            if dtype not in DTYPES:
                raise RecordingFileError(
                    f"{path}: variable {v['name']!r} has dtype {dtype!r}; a recording holds {dtype_list()}."
                )
            initial = _decode(path, v["name"], "initial", arrays[f"v{i}.initial"], dtype)
            full = mode == "full"
            blocks = {k: _decode(path, v["name"], k, arrays[f"v{i}.{k}"], dtype) for k in kinds} if full else {}
            stats = {} if full else {k: arrays[f"v{i}.{k}.stats"] for k in kinds}
            held = geom.num_unique if part is None else len(geom.held_groups(part.devices))
            want = (n, held, *geom.local_shape)
            if (
                initial.shape != shape
                or any(b.shape != want for b in blocks.values())
                or any(s.shape != (n, held, 3) for s in stats.values())
            ):
                raise RecordingFileError(f"{path}: arrays of {v['name']!r} do not match its shape.")
            records.append(VariableRecord(v["name"], shape, dtype, layout, initial, blocks, stats))
        steps = arrays["steps"]
        applied = meta.get("applied_momentum")
        wd, ema = meta.get("weight_decay"), meta.get("ema_overwrite_frequency")
        hp = Hyperparameters(
            arrays["learning_rate"],
            float(meta["momentum"]),
            bool(meta["nesterov"]),
            None if applied is None else float(applied),
            None if wd is None else float(wd),
            tuple(meta.get("decayed", ())),
            None if ema is None else int(ema),
        )
        rec = Recording(
            mesh,
            tuple(records),
            kinds,
            steps,
            hp,
            arrays["loss"],
            arrays["nonfinite"],
            arrays["mismatch"],
            arrays["dropped_steps"],
            mode,
            part,
            arrays.get("superseded_steps", np.zeros(0, np.int64)),
            _communication(meta),
            arrays.get("skipped_steps", np.zeros(0, np.int64)),
            arrays.get("skipped_loss_scale", np.zeros(0, np.float64)),
        )
    except RecordingFileError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise RecordingFileError(f"{path}: inconsistent recording ({type(e).__name__}: {e}).") from e
    per_step = (steps, hp.learning_rate, rec.loss_values, rec.nonfinite, rec.mismatch)
    if any(len(a) != n for a in per_step):
        raise RecordingFileError(f"{path}: per-step arrays do not all have {n} steps.")
    if rec.skipped_steps.shape != rec.skipped_loss_scale.shape or rec.skipped_steps.ndim != 1:
        raise RecordingFileError(
            f"{path}: skipped_steps {rec.skipped_steps.shape} and skipped_loss_scale "
            f"{rec.skipped_loss_scale.shape} must be 1-D and of one length (a loss scale "
            "per skipped update)."
        )
    return rec


def _communication(meta):
    """The ``CommunicationReport`` a header holds, or None."""
    if "communication" not in meta:
        return None
    from .communication import CommunicationReport

    return CommunicationReport.from_dict(meta["communication"])
