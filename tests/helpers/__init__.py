"""What the tests share: builders of sharded values and models (``builders``), synthetic
recordings, parts and stores (``parts``, ``synthetic_store``), the spectral radius of the
rules (``theory_reference``), the browser set-up (``browser``), the multi-client script."""
