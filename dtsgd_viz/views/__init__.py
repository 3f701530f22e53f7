"""Views: functions that take recordings or layout specs and return a matplotlib
``Figure`` (never print, never ``plt.show()``). Geometry is computed by pure
functions first; drawing is a thin layer on top."""
