"""The norm panels' axes: the one log tick format (``views.core.log_ticks``, which the
browser explorers read from here too) and the update axis's scale."""

from ..core.log_ticks import log_tick_texts, plain_ticks, use_log_ticks
from .lines import LOG_X_SPAN, log_x, log_y

__all__ = ["log_tick_texts", "plain_ticks", "use_log_ticks", "log_x", "log_y", "LOG_X_SPAN"]
