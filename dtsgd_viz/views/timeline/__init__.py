"""One update on every device as a timeline of its phases: local steps and collectives, in order."""

from .geometry import Phase, UpdateTimeline, same_collectives, timeline_finding, update_timeline
from .plot import plot_timeline

__all__ = ["Phase", "UpdateTimeline", "plot_timeline", "same_collectives", "timeline_finding", "update_timeline"]
