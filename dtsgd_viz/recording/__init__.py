"""Recordings as plain data (numpy and zarr only, never TensorFlow): the ``Recording``
value, its npz file, the zarr store a run streams to, merging client parts, one
``load_recording`` for every format, and memory plans."""

from .communication import Collective, CommunicationPlan, CommunicationReport, PlanEntry, communication_plan
from .damage import NoChecksumsWarning, RecordingDamagedWarning
from .load import load_recording
from .memory import MemoryPlan, memory_plan
from .merge import MergeError, merge_recordings
from .recording import KINDS, Hyperparameters, Part, Recording, RecordingFileError, VariableRecord, check_kinds

__all__ = [
    "Collective",
    "CommunicationPlan",
    "CommunicationReport",
    "PlanEntry",
    "communication_plan",
    "KINDS",
    "Hyperparameters",
    "MemoryPlan",
    "MergeError",
    "NoChecksumsWarning",
    "Part",
    "Recording",
    "RecordingDamagedWarning",
    "RecordingFileError",
    "VariableRecord",
    "check_kinds",
    "load_recording",
    "memory_plan",
    "merge_recordings",
]
