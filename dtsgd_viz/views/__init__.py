"""Views: functions that take recordings or layout specs and return a matplotlib
``Figure`` (they never print and never call pyplot's show). Geometry is computed by pure
functions first; drawing is a thin layer on top."""
