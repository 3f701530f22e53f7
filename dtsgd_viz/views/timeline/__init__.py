"""One update on every device, as a timeline: the local gradient, the step's collectives
(bytes per device, groups), the velocity and the parameter update, in that order."""

from .geometry import Phase, UpdateTimeline, same_collectives, timeline_finding, update_timeline
from .plot import plot_timeline

__all__ = ["Phase", "UpdateTimeline", "plot_timeline", "same_collectives", "timeline_finding", "update_timeline"]
